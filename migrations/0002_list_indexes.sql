-- Indexes for the list queries of the CLI, the dashboard and the scheduler, so that none of them
-- scans a whole table once the database holds months of sweeps.

-- ListSweeps(state), newest first.
CREATE INDEX sweeps_by_state ON sweeps (state, id);
-- ListSweeps(tag).
CREATE INDEX sweep_tags_by_tag ON sweep_tags (tag, sweep_id);
-- ListRuns(sweep, state) and CountRunsByState(sweep).
CREATE INDEX runs_by_sweep_state ON runs (sweep_id, state, id);
-- The scheduler's queue: ListRuns(state = queued) in FIFO order across sweeps.
CREATE INDEX runs_by_state ON runs (state, id);
-- Foreign keys on child tables, so that cascades and per-run listings are lookups.
CREATE INDEX variants_by_sweep ON variants (sweep_id, idx);
CREATE INDEX runs_by_variant ON runs (variant_id);
CREATE INDEX attempts_by_run ON attempts (run_id, number);
CREATE INDEX metrics_by_run ON metrics (run_id);
-- ListEvents(sweep) and ListEvents(sweep, run) after a cursor.
CREATE INDEX events_by_sweep ON events (sweep_id, id);
CREATE INDEX events_by_run ON events (run_id, id);

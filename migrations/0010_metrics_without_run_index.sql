-- Issue 28: every single-point batch rewrote three hot pages into the write-ahead log (the run's
-- tail of `metrics`, of `metrics_by_run` and of `metric_batches`). Every read of `metrics` goes
-- by attempt (its primary key); the run index served only cascades from deleting a run, and no
-- run is ever deleted. So it goes: one page fewer per point on the store writer's hot path.
DROP INDEX metrics_by_run;

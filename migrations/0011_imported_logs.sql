-- Records as data (issue 39): sweeps imported from record logs (`ablate import`). Their runs ran
-- elsewhere: each is one log, stored succeeded with one attempt of worker 'imported' and the
-- log's curve as that attempt's points. `imported_hardware` is what the importer said the logs
-- ran on ('' = not said: their times are then never compared like for like with this cluster's).
ALTER TABLE sweeps ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sweeps ADD COLUMN imported_hardware TEXT NOT NULL DEFAULT '';

-- The log each imported run was read from.
CREATE TABLE imported_logs (
  run_id          INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  file_name       TEXT NOT NULL,
  log_sha256      TEXT NOT NULL,
  logged_hardware TEXT NOT NULL DEFAULT '',
  script_hash     TEXT NOT NULL DEFAULT '',
  total_steps     INTEGER NOT NULL CHECK (total_steps >= 1),
  timed_from_step INTEGER NOT NULL DEFAULT 0
);

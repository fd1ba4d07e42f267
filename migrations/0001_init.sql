-- The coordinator's initial schema (DESIGN §5). Ids are INTEGER PRIMARY KEY (rowid aliases);
-- times are milliseconds since the Unix epoch; states are the lower-case names of
-- server/core/model.h. Optional numbers are NULL when unknown.

CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_ms INTEGER NOT NULL
);

CREATE TABLE sweeps (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL,
  state           TEXT NOT NULL
                  CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  spec_yaml       TEXT NOT NULL,
  baseline_preset TEXT NOT NULL DEFAULT '',
  scale           TEXT NOT NULL DEFAULT 'full',
  dataset         TEXT NOT NULL DEFAULT '',
  target_val_loss REAL NOT NULL,
  seeds           INTEGER NOT NULL CHECK (seeds >= 1),
  gpus_per_run    INTEGER NOT NULL CHECK (gpus_per_run >= 0),  -- 0 = one CPU slot
  priority        INTEGER NOT NULL DEFAULT 0,
  max_concurrent  INTEGER NOT NULL DEFAULT 0 CHECK (max_concurrent >= 0),
  max_attempts    INTEGER NOT NULL CHECK (max_attempts >= 1),
  created_ms      INTEGER NOT NULL,
  finished_ms     INTEGER NOT NULL DEFAULT 0
);

-- One row per tag, so that "sweeps tagged X" is an index lookup rather than a text scan.
CREATE TABLE sweep_tags (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  tag      TEXT NOT NULL,
  PRIMARY KEY (sweep_id, tag)
) WITHOUT ROWID;

CREATE TABLE variants (
  id          INTEGER PRIMARY KEY,
  sweep_id    INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  idx         INTEGER NOT NULL,
  name        TEXT NOT NULL,
  config_json TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  diff_json   TEXT NOT NULL DEFAULT '{}',
  UNIQUE (sweep_id, idx),
  UNIQUE (sweep_id, name)
);

-- current_attempt_id has no foreign key: attempts reference runs, and the cycle would make
-- every insert order awkward. The store keeps it consistent (0 = none).
CREATE TABLE runs (
  id                 INTEGER PRIMARY KEY,
  sweep_id           INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  variant_id         INTEGER NOT NULL REFERENCES variants (id) ON DELETE CASCADE,
  seed               INTEGER NOT NULL,
  state              TEXT NOT NULL CHECK (state IN
                       ('queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled')),
  attempts_used      INTEGER NOT NULL DEFAULT 0,
  current_attempt_id INTEGER NOT NULL DEFAULT 0,
  worker_id          TEXT NOT NULL DEFAULT '',
  error              TEXT NOT NULL DEFAULT '',
  -- RunSummary
  final_val_loss     REAL,
  time_to_target_ms  REAL,
  target_step        INTEGER,
  reached_target     INTEGER NOT NULL DEFAULT 0,
  steps              INTEGER NOT NULL DEFAULT 0,
  mean_step_ms       REAL,
  train_time_ms      REAL,
  created_ms         INTEGER NOT NULL,
  started_ms         INTEGER NOT NULL DEFAULT 0,
  finished_ms        INTEGER NOT NULL DEFAULT 0,
  UNIQUE (variant_id, seed)
);

CREATE TABLE attempts (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  number        INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  worker_id     TEXT NOT NULL,
  state         TEXT NOT NULL CHECK (state IN
                  ('assigned', 'running', 'succeeded', 'failed', 'lost', 'cancelled')),
  exit_code     INTEGER NOT NULL DEFAULT 0,
  error         TEXT NOT NULL DEFAULT '',
  stderr_tail   TEXT NOT NULL DEFAULT '',
  started_ms    INTEGER NOT NULL,
  finished_ms   INTEGER NOT NULL DEFAULT 0,
  UNIQUE (run_id, number)
);

-- One row per run x attempt x step. Clustered by (attempt_id, step): a curve is one range scan.
CREATE TABLE metrics (
  attempt_id    INTEGER NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  step          INTEGER NOT NULL,
  run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  train_loss    REAL,
  val_loss      REAL,
  lr            REAL,
  step_ms       REAL,
  train_time_ms REAL,
  tokens        INTEGER,
  PRIMARY KEY (attempt_id, step)
) WITHOUT ROWID;

-- Metric batches already committed, so that a worker's resent batch is recognised and ignored.
CREATE TABLE metric_batches (
  attempt_id   INTEGER NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  seq          INTEGER NOT NULL,
  points       INTEGER NOT NULL,
  committed_ms INTEGER NOT NULL,
  PRIMARY KEY (attempt_id, seq)
) WITHOUT ROWID;

-- GPUs and datasets are JSON arrays: they are read and written whole with the worker.
CREATE TABLE workers (
  id                TEXT PRIMARY KEY,
  host              TEXT NOT NULL DEFAULT '',
  gpus_json         TEXT NOT NULL DEFAULT '[]',
  cpu_slots         INTEGER NOT NULL DEFAULT 0,
  trainer_version   TEXT NOT NULL DEFAULT '',
  datasets_json     TEXT NOT NULL DEFAULT '[]',
  connected         INTEGER NOT NULL DEFAULT 0,
  last_heartbeat_ms INTEGER NOT NULL DEFAULT 0,
  registered_ms     INTEGER NOT NULL
) WITHOUT ROWID;

-- AUTOINCREMENT: event ids never go backwards, so "events after id N" is a safe cursor.
CREATE TABLE events (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  sweep_id INTEGER REFERENCES sweeps (id) ON DELETE CASCADE,
  run_id   INTEGER REFERENCES runs (id) ON DELETE CASCADE,
  time_ms  INTEGER NOT NULL,
  kind     TEXT NOT NULL,
  message  TEXT NOT NULL
);

-- The published speedrun record history (DESIGN §6.3), e.g. ("r20", "2025-01-16", 179520 ms).
CREATE TABLE records (
  id             TEXT PRIMARY KEY,
  date           TEXT NOT NULL,
  record_time_ms REAL NOT NULL,
  steps          INTEGER,
  description    TEXT NOT NULL DEFAULT '',
  source         TEXT NOT NULL DEFAULT '',
  preset         TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

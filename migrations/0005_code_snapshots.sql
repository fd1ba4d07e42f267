-- Code snapshots of script runs (issue 14): the exact files a script run ran, stored once per
-- content hash (lowercase hex SHA-256, common/code_snapshot.h). Variants name the hash in
-- their config (config_json: $.script.snapshot); workers fetch a snapshot by hash.
CREATE TABLE code_snapshots (
  hash       TEXT PRIMARY KEY,
  bytes      INTEGER NOT NULL CHECK (bytes >= 0),
  files      INTEGER NOT NULL CHECK (files >= 1),
  created_ms INTEGER NOT NULL
);

-- One row per file; the content is the file's bytes as they were read at submit.
CREATE TABLE code_snapshot_files (
  hash       TEXT NOT NULL REFERENCES code_snapshots (hash) ON DELETE CASCADE,
  path       TEXT NOT NULL,
  executable INTEGER NOT NULL DEFAULT 0,
  content    BLOB NOT NULL,
  PRIMARY KEY (hash, path)
);

-- Script baselines that reproduce a row of the records table ($.script.record), found without
-- scanning every variant's config.
CREATE INDEX variants_script_record
  ON variants (json_extract(config_json, '$.script.record'))
  WHERE json_extract(config_json, '$.script.record') IS NOT NULL;

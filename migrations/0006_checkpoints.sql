-- Checkpoints (issue 17): a sweep may ask for periodic checkpoints (`checkpoint_every:`, ms of
-- wall time; 0 = none), and an attempt whose trainer resumed from an earlier attempt's
-- checkpoint records the checkpoint's steps done (NULL: it started at step 0, or no point of it
-- has arrived yet). A run's curve is then the earlier attempts' points up to that step, then
-- this attempt's (server/store/store_metrics.cc).
ALTER TABLE sweeps ADD COLUMN checkpoint_every_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN resumed_from_step INTEGER;

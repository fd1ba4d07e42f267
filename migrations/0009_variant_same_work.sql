-- Issue 23: a script ablation may declare that it does the baseline's work per step
-- (`same_work: true`); the confound check then tests its ms/step against the baseline's. 0 for
-- every variant before this (and for knob variants, whose step work follows from their knobs).
ALTER TABLE variants ADD COLUMN same_work INTEGER NOT NULL DEFAULT 0 CHECK (same_work IN (0, 1));

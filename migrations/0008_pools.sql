-- Pools (issue 15): a sweep may name the pool whose workers run it ('' = any worker outside a
-- pool, as before), and an attempt run by a worker inside a Slurm allocation records the Slurm
-- job id (0 otherwise) and, for runs started as `srun` steps, the step id ('' otherwise).
ALTER TABLE sweeps ADD COLUMN pool TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN slurm_job_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN slurm_step_id TEXT NOT NULL DEFAULT '';

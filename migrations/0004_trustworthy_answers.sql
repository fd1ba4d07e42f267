-- Answers that can be trusted (DESIGN §7): the blocked, shuffled dispatch order and sequential
-- seeds.
--   sweeps.order_seed      seeds the shuffle of each block (server/core/run_order.h)
--   sweeps.seeds_min       0 = fixed seeds; else seeds run from seeds_min up to sweeps.seeds, one
--                          block at a time, while a variant's verdict is not settled
--   runs.dispatch_order    the run's rank in its sweep's dispatch order; runs stored before this
--                          migration keep 0 and so their submission (FIFO) order
ALTER TABLE sweeps ADD COLUMN order_seed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sweeps ADD COLUMN seeds_min INTEGER NOT NULL DEFAULT 0 CHECK (seeds_min >= 0);
ALTER TABLE runs ADD COLUMN dispatch_order INTEGER NOT NULL DEFAULT 0;

# A stand-in for a speedrun record, FROM (from.py) and TO (to.py) of the README's decomposition;
# tests/e2e/decompose_e2e_test.cc runs it too): no model, no data; it prints modded-nanogpt's
# log lines for a run reaching val loss 3.28 after `steps` steps at `ms` per step, at once (the
# times are made up). The noise, about 1% in ms/step and 2% in steps, is drawn from ABLATE_SEED
# and this file's bytes, so each variant draws its own, and every rerun the same.
import os
import random
import zlib

with open(__file__, "rb") as f:
    rng = random.Random(int(os.environ.get("ABLATE_SEED", "0")) * 7919 + zlib.crc32(f.read()))
# (a) how long a step takes
ms = 80.0
#
#
#
#
#
#
#
# (b) how many steps the run needs, set in two places
base_steps = 150  # ablate-change: fewer-steps
#
#
#
#
#
#
#
# (c) a label nobody reads
label = "to"
#
#
#
#
#
#
#
# (b) again
steps = base_steps  # ablate-change: fewer-steps
#
#
#
#
#
#
#
# (d) a warmup: on its own it changes nothing
warmup = True
#
#
#
#
#
#
#
# (e) a schedule: on its own it changes nothing
schedule = True
#
#
#
#
#
#
#
if warmup and schedule:
    steps -= 40  # the two help only together
ms *= 1.0 + 0.01 * rng.gauss(0, 1)
steps = max(10, round(steps * (1.0 + 0.02 * rng.gauss(0, 1))))
total, start, target = steps + 5, 5.0, 3.28
print(f"step:0/{total} val_loss:{start:.4f} train_time:0ms step_avg:nanms", flush=True)
for step in range(1, total + 1):
    t, loss = round(step * ms), max(target, start - (start - target) * step / steps)
    print(f"step:{step}/{total} val_loss:{loss:.4f} train_time:{t}ms step_avg:{t / step:.2f}ms",
          flush=True)

# A stand-in for a speedrun script (issue 23's sequential-seeds test): no model and no data, it
# prints modded-nanogpt's log lines for a run that reaches val loss 3.28 at step --steps-to-target
# at --ms-per-step, with a little seed noise (ABLATE_SEED) in the step time, at once (the printed
# training times are made up; nothing waits).
#   step:0/N val_loss:X train_time:0ms step_avg:nanms
#   step:K/N train_loss:X train_time:Tms step_avg:Ams
#   step:K/N val_loss:X train_time:Tms step_avg:Ams
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--steps-to-target", type=int, required=True)
parser.add_argument("--ms-per-step", type=float, default=100.0)
parser.add_argument("--val-every", type=int, default=5)
args = parser.parse_args()

seed = int(os.environ.get("ABLATE_SEED", "0"))
ms = args.ms_per_step * (1.0 + 0.002 * ((seed * 7 + 3) % 5 - 2))
steps = args.steps_to_target + 2 * args.val_every
start, target = 5.0, 3.28


def val_loss(step):
    return start - (start - target) * step / args.steps_to_target


print(f"step:0/{steps} val_loss:{start:.4f} train_time:0ms step_avg:nanms", flush=True)
for step in range(1, steps + 1):
    t = round(step * ms)
    avg = t / step
    print(f"step:{step}/{steps} train_loss:{val_loss(step) + 0.05:.4f} train_time:{t}ms "
          f"step_avg:{avg:.2f}ms", flush=True)
    if step % args.val_every == 0 or step == steps:
        print(f"step:{step}/{steps} val_loss:{val_loss(step):.4f} train_time:{t}ms "
              f"step_avg:{avg:.2f}ms", flush=True)

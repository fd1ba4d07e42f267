# train_gpt.py with one idea: a wider model (an ablation of examples/my-idea/my-idea.yaml).
# trains a tiny next-byte model with PyTorch on the CPU, on text it brings itself (its own source,
# so the sweep needs no dataset), and prints the records' log lines, which ablate reads:
#   step:0/N val_loss:X train_time:0ms step_avg:nanms
#   step:K/N train_loss:X train_time:Tms step_avg:Ams
# Under torchrun (WORLD_SIZE > 1) the ranks join a gloo process group and average gradients;
# rank 0 prints. Flags: --lr, --steps; env: MY_FLAG (a width multiplier), ABLATE_SEED.
import argparse
import os
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--steps", type=int, default=24)
parser.add_argument("--val-every", type=int, default=8)
args = parser.parse_args()

world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
if world > 1:
    dist.init_process_group("gloo")
torch.manual_seed(int(os.environ.get("ABLATE_SEED", "0")) * 1000 + rank)
torch.set_num_threads(1)

with open(__file__, "rb") as f:
    data = torch.tensor(list(f.read() * 8), dtype=torch.long)
train, val = data[: len(data) * 9 // 10], data[len(data) * 9 // 10 :]
width = 48 * int(os.environ.get("MY_FLAG", "1"))
model = torch.nn.Sequential(torch.nn.Embedding(256, width), torch.nn.Linear(width, 256))
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
B, T = 16, 32


def loss_on(tokens, starts):
    x = torch.stack([tokens[s : s + T] for s in starts])
    y = torch.stack([tokens[s + 1 : s + T + 1] for s in starts])
    return torch.nn.functional.cross_entropy(model(x).view(-1, 256), y.view(-1))


def evaluate():
    with torch.no_grad():
        return loss_on(val, range(0, len(val) - T - 1, T)).item()


train_ms = 0.0
for step in range(args.steps + 1):
    if rank == 0 and (step % args.val_every == 0 or step == args.steps):
        avg = f"{train_ms / step:.2f}ms" if step > 0 else "nanms"
        print(f"step:{step}/{args.steps} val_loss:{evaluate():.4f} "
              f"train_time:{train_ms:.0f}ms step_avg:{avg}", flush=True)
    if step == args.steps:
        break
    t0 = time.perf_counter()
    g = torch.Generator().manual_seed(step * world + rank)
    loss = loss_on(train, torch.randint(0, len(train) - T - 1, (B,), generator=g).tolist())
    opt.zero_grad()
    loss.backward()
    if world > 1:
        for p in model.parameters():
            dist.all_reduce(p.grad)  # gloo sums
            p.grad /= world
    opt.step()
    train_ms += (time.perf_counter() - t0) * 1000
    if rank == 0:
        print(f"step:{step + 1}/{args.steps} train_loss:{loss.item():.4f} "
              f"train_time:{train_ms:.0f}ms step_avg:{train_ms / (step + 1):.2f}ms", flush=True)
if world > 1:
    dist.destroy_process_group()

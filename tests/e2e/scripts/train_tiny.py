# A tiny training script written for ablate's tests (issue 14), in the shape of modded-nanogpt's
# train_gpt.py: reads llm.c token shards from data/<dataset>/ (the sweep's data_link), trains a
# small next-token model with PyTorch on the CPU, and prints the records' log lines:
#   step:0/N val_loss:X train_time:0ms step_avg:nanms
#   step:K/N train_loss:X train_time:Tms step_avg:Ams
# Under torchrun (WORLD_SIZE > 1) it joins a gloo process group, averages gradients, and only
# rank 0 prints. Flags: --lr, --steps; env: MY_FLAG (a width multiplier), ABLATE_SEED.
import argparse
import glob
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

VOCAB = 512  # token ids are folded into a small vocabulary: a tiny model that still learns

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--val-every", type=int, default=4)
parser.add_argument("--data", default="data/debian-text")
parser.add_argument("--sleep-ms", type=int, default=0, help="pause per step (kill tests)")
args = parser.parse_args()

world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
if world > 1:
    dist.init_process_group("gloo")
torch.manual_seed(int(os.environ.get("ABLATE_SEED", "0")) * 1000 + rank)
torch.set_num_threads(1)


def load(pattern):
    files = sorted(glob.glob(os.path.join(args.data, pattern)))
    if not files:
        sys.exit(f"no shard matches {args.data}/{pattern}")
    header = np.fromfile(files[0], dtype=np.int32, count=256)
    assert header[0] == 20240520, f"{files[0]}: bad magic"
    tokens = np.fromfile(files[0], dtype=np.uint16, offset=256 * 4)[: int(header[2])]
    return torch.from_numpy(tokens.astype(np.int64) % VOCAB)


train, val = load("*train*.bin"), load("*val*.bin")
width = 32 * int(os.environ.get("MY_FLAG", "1"))
model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, width), torch.nn.Linear(width, VOCAB))
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
B, T = 8, 32


def batch(tokens, step):
    g = torch.Generator().manual_seed(step * world + rank)
    starts = torch.randint(0, len(tokens) - T - 1, (B,), generator=g)
    x = torch.stack([tokens[s : s + T] for s in starts])
    y = torch.stack([tokens[s + 1 : s + T + 1] for s in starts])
    return x, y


def loss_of(x, y):
    return torch.nn.functional.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))


def evaluate():
    with torch.no_grad():
        x, y = val[: 16 * T].view(16, T), val[1 : 16 * T + 1].view(16, T)
        loss = loss_of(x, y)
    return loss.item()


train_ms = 0.0
for step in range(args.steps + 1):
    if step % args.val_every == 0 or step == args.steps:
        if rank == 0:
            avg = f"{train_ms / step:.2f}ms" if step > 0 else "nanms"
            print(f"step:{step}/{args.steps} val_loss:{evaluate():.4f} "
                  f"train_time:{train_ms:.0f}ms step_avg:{avg}", flush=True)
    if step == args.steps:
        break
    t0 = time.perf_counter()
    x, y = batch(train, step)
    loss = loss_of(x, y)
    opt.zero_grad()
    loss.backward()
    if world > 1:
        for p in model.parameters():
            dist.all_reduce(p.grad)  # gloo sums (AVG is NCCL-only in torch 1.13)
            p.grad /= world
    opt.step()
    time.sleep(args.sleep_ms / 1000)
    train_ms += (time.perf_counter() - t0) * 1000
    if rank == 0:
        print(f"step:{step + 1}/{args.steps} train_loss:{loss.item():.4f} "
              f"train_time:{train_ms:.0f}ms step_avg:{train_ms / (step + 1):.2f}ms", flush=True)
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
print(f"rank {rank} of {world} done", file=sys.stderr)

# The script sweep of `scripts/gpu_session.sh product`: a small PyTorch training script that the
# worker launches with torchrun on the GPU, as a researcher's own train_gpt.py would run. It
# trains a two-layer causal transformer on bytes of its own source (the run folder holds nothing
# else) and prints the records' log lines, which ablate reads:
#   step:0/N val_loss:X train_time:0ms step_avg:nanms
#   step:K/N train_loss:X train_time:Tms step_avg:Ams
# --device cuda (the phase's GPU mode) fails unless CUDA is there: a GPU sweep that quietly ran
# on the CPU would prove nothing. --device cpu is the rehearsal's. Under torchrun with several
# ranks they join a process group (nccl on CUDA, gloo on the CPU) and average gradients; rank 0
# prints. train_time counts only the training steps, after a CUDA synchronisation.
import argparse
import os
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--device", choices=["cuda", "cpu"], required=True)
parser.add_argument("--lr", type=float, default=3e-3)
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--val-every", type=int, default=20)
args = parser.parse_args()

world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
if args.device == "cuda":
    if not torch.cuda.is_available():
        raise SystemExit("train_cuda.py: --device cuda, but torch %s sees no CUDA device "
                         "(CUDA_VISIBLE_DEVICES=%r)" % (torch.__version__,
                                                        os.environ.get("CUDA_VISIBLE_DEVICES")))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    if rank == 0:
        print("train_cuda.py: torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda,
                                                      torch.cuda.get_device_name(device)),
              flush=True)
else:
    device = torch.device("cpu")
    torch.set_num_threads(1)
if world > 1:
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
torch.manual_seed(int(os.environ.get("ABLATE_SEED", "0")) * 1000 + rank)

with open(__file__, "rb") as f:
    data = torch.tensor(list(f.read() * 16), dtype=torch.long, device=device)
train, val = data[: len(data) * 9 // 10], data[len(data) * 9 // 10:]
# The rehearsal's CPU shares two cores with everything else: a smaller model there.
B, T, C = (32, 128, 128) if device.type == "cuda" else (8, 32, 32)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(256, C)
        self.pos = torch.nn.Parameter(torch.zeros(T, C))
        layer = torch.nn.TransformerEncoderLayer(C, 4, 4 * C, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, 2)
        self.head = torch.nn.Linear(C, 256)
        self.register_buffer("mask", torch.triu(torch.full((T, T), float("-inf")), 1))

    def forward(self, x):
        h = self.blocks(self.embed(x) + self.pos, mask=self.mask)
        return self.head(h)


model = Model().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=args.lr)


def batch(tokens, starts):
    x = torch.stack([tokens[s:s + T] for s in starts])
    y = torch.stack([tokens[s + 1:s + T + 1] for s in starts])
    return x, y


def loss_on(x, y):
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        logits = model(x)
    return torch.nn.functional.cross_entropy(logits.float().view(-1, 256), y.view(-1))


def evaluate():
    with torch.no_grad():
        starts = list(range(0, len(val) - T - 1, T))[:64]
        return loss_on(*batch(val, starts)).item()


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize(device)


train_ms = 0.0
for step in range(args.steps + 1):
    if rank == 0 and (step % args.val_every == 0 or step == args.steps):
        avg = f"{train_ms / step:.2f}ms" if step > 0 else "nanms"
        print(f"step:{step}/{args.steps} val_loss:{evaluate():.4f} "
              f"train_time:{train_ms:.0f}ms step_avg:{avg}", flush=True)
    if step == args.steps:
        break
    g = torch.Generator().manual_seed(step * world + rank)
    starts = torch.randint(0, len(train) - T - 1, (B,), generator=g).tolist()
    x, y = batch(train, starts)
    sync()
    t0 = time.perf_counter()
    loss = loss_on(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if world > 1:
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
    opt.step()
    sync()
    train_ms += (time.perf_counter() - t0) * 1000
    if rank == 0:
        print(f"step:{step + 1}/{args.steps} train_loss:{loss.item():.4f} "
              f"train_time:{train_ms:.0f}ms step_avg:{train_ms / (step + 1):.2f}ms", flush=True)
if world > 1:
    dist.destroy_process_group()

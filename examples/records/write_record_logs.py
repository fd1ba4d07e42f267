#!/usr/bin/env python3
"""Writes training logs in the format of modded-nanogpt's records/ folder, for trying
`ablate import` and `ablate verify-record` without a clone of the records, and for ablate's tests.

Each log is what a record's run leaves: the training script, nvidia-smi's table, then the step
lines. The numbers are made up (a smooth loss curve ending at the final val loss asked for, steps
timed at the ms/step asked for, with noise from the seed); the shapes are the records' own, era by
era:
  2024  (--era 2024): the file opens with a line of '='; train lines carry train_loss; step_avg is
        "nanms" early; train_time counts compile time until step 10, then starts over.
  2025  (--era 2025): the script first; train lines without train_loss; the same reset at step 10.
  2026  (--era 2026): warmup before timing (no reset, step 0 at 0ms, step_avg 0.03ms), free text
        lines between the step lines, extra fields on val lines, peak memory at the end.
--seconds prints train_time in seconds (track 3), --decimals 6 val losses with 6 decimals.
--defect writes a broken log: truncated, out-of-order, nan-val, no-final-val, two-runs.

Usage: write_record_logs.py OUT_DIR --runs 3 [--final-loss 3.2785] [--loss-sd 0.0015]
         [--steps 1750] [--ms-per-step 101.3] [--ms-sd 0.2] [--era 2026] [--seed 0]
         [--gpus 8] [--gpu-name "NVIDIA H100 80GB HBM3"] [--script TEXT]
Prints the paths it wrote, one per line.
"""
import argparse
import math
import os
import random
import re

SEP = "=" * 100


def nvidia_smi(gpus, name):
    lines = [
        "Sun Dec  6 12:00:00 2026",
        "+-----------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 580.159             Driver Version: 580.159        CUDA Version: 13.0        |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "|=========================================+========================+======================|",
    ]
    for i in range(gpus):
        lines.append(f"|   {i}  {name:<28}  On  |   00000000:{0x61 + i:02X}:00.0 Off |                    0 |")
        lines.append("+-----------------------------------------+------------------------+----------------------+")
    return lines


def loss_at(step, steps, final):
    """A smooth curve from 10.83 at step 0 to `final` at `steps`."""
    x = step / steps
    return final + (10.8258 - final) * math.exp(-6.0 * x) * (1.0 - x) ** 0.5


def one_log(a, rng):
    final = a.final_loss + rng.gauss(0.0, a.loss_sd)
    ms = a.ms_per_step + rng.gauss(0.0, a.ms_sd)
    fmt = "%." + str(a.decimals) + "f"
    out = []
    script = a.script if a.script.endswith("\n") else a.script + "\n"
    if a.era == "2024":
        out.append(SEP)
    out += script.rstrip("\n").split("\n")
    out.append(SEP)
    out += nvidia_smi(a.gpus, a.gpu_name)
    out.append(SEP)
    reset = a.era in ("2024", "2025")
    compile_ms = 74000.0 + 500 * rng.random()
    if a.era == "2026":
        out.append("Compiling model and warming up kernels (~7 minutes on first execution)")
        out.append("Resetting Model")

    def t(step):
        """train_time printed at `step` (ms), the 2024/2025 reset at step 10 included."""
        if reset and step <= 10:
            return (285.0 if step == 0 else compile_ms + ms * step)
        base = 10 if reset else 0
        return ms * (step - base)

    def time_field(step):
        v = t(step)
        return ("train_time:%.3fs" % (v / 1000.0)) if a.seconds else ("train_time:%dms" % round(v))

    def avg(step):
        if step == 0:
            return "step_avg:nanms" if reset else "step_avg:0.03ms"
        if reset and step <= 12:
            return "step_avg:nanms"
        return "step_avg:%.2fms" % (t(step) / (step - (10 if reset else 0)))

    val_every = max(1, a.steps // 14)
    for step in range(0, a.steps + 1):
        if step > 0:
            line = f"step:{step}/{a.steps}"
            if a.era == "2024":
                line += " train_loss:" + "%.4f" % (loss_at(step, a.steps, final) + 0.05)
            out.append(f"{line} {time_field(step)} {avg(step)}")
        if step % val_every == 0 or step == a.steps:
            v = final if step == a.steps else loss_at(step, a.steps, final)
            extra = " val_avg_loss:" + fmt % (v + 0.001) if a.era == "2026" else ""
            out.append(f"step:{step}/{a.steps} val_loss:{fmt % v}{extra} {time_field(step)} {avg(step)}")
            if a.era == "2026" and step == a.steps // 2:
                out.append("Sampling steps [100, 200] for warmup")
    if a.era != "2024":
        out.append("peak memory allocated: 31563 MiB reserved: 33012 MiB")
    if a.defect == "truncated":
        out = out[: len(out) - 3] + [out[len(out) - 3][:17]]  # a cut last line
    elif a.defect == "no-final-val":
        out = [l for l in out if not l.startswith(f"step:{a.steps}/{a.steps} val_loss:")]
    elif a.defect == "nan-val":
        i = next(i for i, l in enumerate(out) if l.startswith("step:") and "val_loss:" in l and i > 40)
        out[i] = re.sub(r"val_loss:[0-9.]+", "val_loss:nan", out[i], count=1)
    elif a.defect == "out-of-order":
        i = next(i for i, l in enumerate(out) if l.startswith(f"step:{a.steps // 2 + 3}/"))
        out[i], out[i + 1] = out[i + 1], out[i]
    elif a.defect == "two-runs":
        first = next(i for i, l in enumerate(out) if l.startswith("step:0/"))
        out += out[first:]
    return "\n".join(out) + "\n", final, ms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--final-loss", type=float, default=3.2785)
    p.add_argument("--loss-sd", type=float, default=0.0015)
    p.add_argument("--steps", type=int, default=1750)
    p.add_argument("--ms-per-step", type=float, default=101.3)
    p.add_argument("--ms-sd", type=float, default=0.2)
    p.add_argument("--era", choices=["2024", "2025", "2026"], default="2026")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--gpu-name", default="NVIDIA H100 80GB HBM3")
    p.add_argument("--script", default="import os\nimport torch\n# the record's train_gpt.py\n")
    p.add_argument("--seconds", action="store_true")
    p.add_argument("--decimals", type=int, default=4)
    p.add_argument("--defect", choices=["truncated", "out-of-order", "nan-val", "no-final-val",
                                        "two-runs"])
    a = p.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out_dir, exist_ok=True)
    for run in range(a.runs):
        text, _, _ = one_log(a, rng)
        path = os.path.join(a.out_dir, "%s-%d.txt" % (a.era, a.seed * 1000 + run))
        with open(path, "w") as f:
            f.write(text)
        print(path)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The PyTorch side of the step-time comparison (bench/trainer_gpu/NOTES.md).

One training step of a canonical ablate config on one GPU, as PyTorch runs it: the model of
tests/reference/ablate_ref.py (itself written from trainer/MODEL.md), with its dense attention
replaced by flex_attention under a block mask of the same rules (causal, documents, windows),
the forward and loss compiled with torch.compile under bf16 autocast, Adam (fused) and Muon with
Newton-Schulz in bf16 as the records run it. Same schedule point and window sizes as
trainer_gpu_bench (the midpoint of the run), synthetic tokens with a BOS every ~500 tokens.

  trainer_gpu_bench --preset r20-sub3min --scale full --dump-config r20.json
  python3 torch_step_bench.py --config r20.json [--steps 5] [--warmup 2] [--peak-tflops 989]

Prints one line per timed step (each waited for), then the same number of steps back to back
with one wait at the end, like trainer_gpu_bench's pipelined line, and a summary line starting
"torch:" with the back-to-back ms/step (the figure to compare), the waited median, tokens/s and
MFU (6 FLOPs per weight per token over block matrices and head; attention not counted, so the
MFU is a lower bound; compare ms/step first). --attention dense --device cpu --no-compile runs
the same code on a tiny config without a GPU (a smoke test of the script, not a measurement).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import ablate_ref as R  # noqa: E402  (exits 77 when torch is missing)
import torch  # noqa: E402


def flex_attend(masks):
    """An attention for ablate_ref.forward: layer i under masks[i] (a BlockMask) with
    flex_attention, or ablate_ref's dense attention where masks[i] is None."""

    def attend(cfg, P, i, u, idx, step, state):
        if masks[i] is None:
            return R.attention(cfg, P, i, u, idx, step, state)
        from torch.nn.attention.flex_attention import flex_attention
        B, T, d = u.shape
        q, k, v, scale = R.attention_inputs(cfg, P, i, u, idx, state)
        dtype = q.dtype
        y = flex_attention(q.transpose(1, 2), k.transpose(1, 2).to(dtype),
                           v.transpose(1, 2).to(dtype), block_mask=masks[i], scale=scale)
        return y.transpose(1, 2).reshape(B, T, d) @ P[f"blocks.{i}.attn.proj.weight"].T
    return attend


def forward(cfg, P, idx, masks, rope_cs, step):
    """ablate_ref.forward with each layer's attention mask passed in (masks[i]: a BlockMask, or
    None for ablate_ref's dense attention) and the RoPE table precomputed on the device."""
    return R.forward(cfg, P, idx, step, attend=flex_attend(masks), rope_table=rope_cs)


def block_masks(cfg, idx, step):
    """[layer i's BlockMask or None] for inputs idx (B, T), one mask per distinct window."""
    from torch.nn.attention.flex_attention import create_block_mask
    B, T = idx.shape
    doc = torch.cumsum((idx == cfg["bos_token"]).int(), dim=1)
    blk = cfg["window.block_tokens"]
    by_window = {}
    masks = [None] * cfg["n_layer"]
    for i in range(cfg["n_layer"]):
        if not R.is_attention_layer(cfg, i):
            continue
        n = R.layer_window_blocks(cfg, step, i) if cfg["attn_window"] == "sliding" else None
        if n not in by_window:
            def mask_mod(b, h, q, kv, n=n):
                keep = kv <= q
                if cfg["doc_masking"]:
                    keep = keep & (doc[b, q] == doc[b, kv])
                if n is not None:
                    keep = keep & (q // blk - kv // blk < n)
                return keep
            try:  # compiled mask evaluation: the dense (T, T) evaluation is 4G entries at 64K
                by_window[n] = create_block_mask(mask_mod, B, None, T, T, device=idx.device,
                                                 _compile=True)
            except TypeError:
                by_window[n] = create_block_mask(mask_mod, B, None, T, T, device=idx.device)
        masks[i] = by_window[n]
    return masks


def ns_bf16(g, steps, coeffs):
    """ablate_ref.newton_schulz with the iterate in bf16, as the records run it."""
    a, b, c = coeffs
    x = (g / (g.norm() + R.NS_EPS)).bfloat16()
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    for _ in range(steps):
        A = x @ x.T
        x = a * x + (b * A + c * (A @ A)) @ x
    return (x.T if transposed else x).float()


def synthetic_tokens(cfg, accum, B, T, device, gen):
    vocab = R.embed_vocab(cfg)  # real token ids: the embedding's rows, not the padded head
    toks = torch.randint(0, vocab, (accum, B, T + 1), generator=gen)
    toks[toks == cfg["bos_token"]] = 0
    starts = torch.rand(accum, B, T + 1, generator=gen) < 1.0 / 500  # ~500-token documents
    toks[starts] = cfg["bos_token"]
    toks[:, :, 0] = cfg["bos_token"]
    return toks.to(device)


def weight_flops(cfg, tokens):
    """6 FLOPs per weight per token over the block matrices and the head (embeddings are
    gathers; attention's own FLOPs not counted)."""
    total = 0
    for name, shape, group in R.param_specs(cfg):
        if group == "muon" or name == "lm_head.weight" or (
                name == "embed.weight" and cfg["tie_embeddings"]):
            total += math.prod(shape)
    return 6 * total * tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="canonical config JSON")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--attention", choices=["flex", "dense"], default="flex")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    args = ap.parse_args()

    cfg = json.load(open(args.config))
    cfg = cfg.get("config", cfg)  # also accepts a start event
    R.check_config(cfg)
    dev = torch.device(args.device)
    T = cfg["seq_len"]
    B = cfg["device_batch_tokens"] // T
    accum = cfg["batch_tokens"] // (B * T)
    step = cfg["num_iterations"] // 2  # the schedule's midpoint, as trainer_gpu_bench
    gen = torch.Generator().manual_seed(0)
    P = {k: v.to(dev).requires_grad_(True) for k, v in R.random_params(cfg, gen).items()}
    adam, muon = R.make_optimizers(cfg, P)
    if dev.type == "cuda":
        groups = [{"params": g["params"], "base_lr": g["base_lr"], "lr": g["lr"]}
                  for g in adam.param_groups]
        adam = torch.optim.Adam(groups, betas=(cfg["adam.beta1"], cfg["adam.beta2"]),
                                eps=cfg["adam.eps"], fused=True)
    compile_ = (lambda f: f) if args.no_compile else torch.compile
    R.newton_schulz = compile_(ns_bf16)
    tokens = synthetic_tokens(cfg, accum, B, T, dev, gen)

    rope_cs = tuple(t.to(dev) for t in R.rope_angles(cfg, T, torch.float32))

    def loss_of(P, idx, tgt, masks):
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            logits = forward(cfg, P, idx, masks, rope_cs, step)
        return R.loss_fn(logits.float(), tgt)

    loss_of = compile_(loss_of)

    def train_step(wait):
        """One step; with wait, the host waits for it and reads its loss back (a float),
        else it returns once queued (the loss stays a device tensor)."""
        for p in P.values():
            p.grad = None
        total = torch.zeros((), device=dev)
        for m in range(accum):
            idx, tgt = tokens[m, :, :-1], tokens[m, :, 1:]
            masks = (block_masks(cfg, idx, step) if args.attention == "flex"
                     else [None] * cfg["n_layer"])
            loss = loss_of(P, idx, tgt, masks) / accum
            loss.backward()
            total += loss.detach()
        mult = R.lr_multiplier(cfg, step)
        for group in adam.param_groups:
            group["lr"] = group["base_lr"] * mult
        adam.step()
        muon.step(cfg["muon.lr"] * mult, R.muon_momentum(cfg, step))
        if not wait:
            return total
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return total.item()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for s in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        loss = train_step(wait=True)
        ms = (time.perf_counter() - t0) * 1e3
        kind = "warm-up" if s < args.warmup else "timed"
        print(f"step {s + 1} ({kind}): {ms:.1f} ms, loss {loss:.4f}", flush=True)
        if s >= args.warmup:
            times.append(ms)
    # Steps back to back, the host waiting only at the end, as the record's loop runs them (and
    # as trainer_gpu_bench's pipelined line times ablate's): the figure to compare.
    sync()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        last = train_step(wait=False)
    sync()
    back_to_back = (time.perf_counter() - t0) * 1e3 / args.steps
    print(f"{args.steps} steps back to back: {back_to_back:.1f} ms/step, last loss "
          f"{last.item():.4f}", flush=True)
    waited = statistics.median(times)
    ms = back_to_back
    tok = cfg["batch_tokens"]
    flops = weight_flops(cfg, tok)
    mfu = flops / (ms / 1e3) / (args.peak_tflops * 1e12)
    peak_gb = torch.cuda.max_memory_allocated() / 1e9 if dev.type == "cuda" else 0.0
    print(f"torch: {torch.__version__} {args.attention} compile={not args.no_compile} "
          f"B={B} T={T} accum={accum}: {ms:.1f} ms/step ({len(times)} steps back to back; "
          f"{waited:.1f} ms median with each step waited for), "
          f"{tok / (ms / 1e3):,.0f} tokens/s, weight FLOPs {flops:.3e}/step, "
          f"MFU {100 * mfu:.1f}% of {args.peak_tflops:g} TFLOP/s, peak memory {peak_gb:.1f} GB")


if __name__ == "__main__":
    main()

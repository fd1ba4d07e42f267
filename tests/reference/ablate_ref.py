#!/usr/bin/python3
"""Independent PyTorch reference of the ablate GPT (trainer/MODEL.md), for parity tests.

Written from trainer/MODEL.md and shared/reference/{modded-nanogpt,record-presets}.md only, never
from the C++ trainer, so that agreement between the two means something. Gradients come from
torch autograd; the attention mask is a dense boolean matrix built from the MODEL.md rules.

Subcommands (run with Debian's /usr/bin/python3, which has python3-torch):
  make-state --config C.json --B B --T T --steps S --seed N --out DIR   a random parity state
  run --state DIR --out DIR [--train] [--dtype float32|float64]          logits, grads, losses
  compare A B [--rtol 1e-4] [--loss-tol 1e-3] [--atol 1e-8]             exit 1 on mismatch
  configs --out DIR                                                      small parity configs
  parity --cpp BIN --work DIR [--only NAME ...]                          all of the above vs BIN
  noise-study --work DIR [--only NAME ...]          error rates of the bf16 configs' loss check
"""

import argparse
import json
import math
import os
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("SKIP: torch is not importable by this python (apt-get install python3-torch; use "
          "/usr/bin/python3)", file=sys.stderr)
    sys.exit(77)  # ctest SKIP_RETURN_CODE

torch.set_num_threads(1)

RMS_EPS = 1.1920929e-07  # float32 machine epsilon, F.rms_norm's default in the records
NS_EPS = 1e-7

# Every knob of trainer/config/knob_table.cc with its default (the r8 recipe). A config must name
# exactly these keys: a missing or unknown knob is an error, never a silent default.
KNOB_DEFAULTS = {
    "n_layer": 12, "model_dim": 768, "n_head": 6, "head_dim": 128, "vocab_size": 50304,
    "embed_vocab_size": 0, "bos_token": 50256, "mlp_ratio": 4, "seq_len": 1024,
    "tie_embeddings": False, "embed_norm": True, "zero_init_lm_head": True,
    "zero_init_proj": True, "linear_init": "torch_default", "mlp_act": "relu2", "qk_norm": True,
    "attn_scale": 0.0, "logit_softcap": 0.0, "softcap_kind": "tanh", "value_residual": False,
    "embed_shortcut": False, "unet_skips": False, "value_embeds": 0, "merged_qkv": False,
    "rope": "full", "rope_base": 10000.0, "attn_window": "full", "window.block_tokens": 128,
    "window.start_tokens": 128.0, "window.end_tokens": 1856.0, "window.rounding": "floor",
    "long_short_windows": False, "doc_masking": False, "skip_attn_layers": [],
    "muon.lr": 0.02, "muon.momentum": 0.95, "muon.nesterov": True, "muon.ns_steps": 5,
    "muon.ns_coeffs": [3.4445, -4.775, 2.0315], "muon.scale_rule": "sqrt_max1_ratio",
    "muon.momentum_warmup_start": 0.85, "muon.momentum_warmup_end": 0.95,
    "muon.momentum_warmup_steps": 0, "muon.momentum_form": "sum", "adam.embed_lr": 0.3, "adam.head_lr": 0.002,
    "adam.scalar_lr": 0.02, "adam.beta1": 0.9, "adam.beta2": 0.95, "adam.eps": 1e-08,
    "num_iterations": 4578, "warmup_iters": 0, "warmdown_iters": 1308, "cooldown_frac": 0.0,
    "lr_floor": 0.0, "batch_tokens": 524288, "device_batch_tokens": 65536,
    "val_tokens": 10485760, "val_every": 125, "target_val_loss": 3.28, "untimed_steps": 10,
    "seed": 0, "param_dtype.embed": "fp32", "param_dtype.head": "fp32",
    "param_dtype.scalar": "fp32", "activation_dtype": "fp32",
}


class ConfigError(ValueError):
    pass


# ----------------------------------------------------------------------------- config

def check_config(cfg):
    """Raises ConfigError unless cfg is a canonical config this reference can run."""
    missing = sorted(set(KNOB_DEFAULTS) - set(cfg))
    unknown = sorted(set(cfg) - set(KNOB_DEFAULTS))
    if missing or unknown:
        raise ConfigError(f"config is not canonical: missing knobs {missing}, unknown {unknown}")
    for k, default in KNOB_DEFAULTS.items():
        v = cfg[k]
        ok = (isinstance(v, bool) if isinstance(default, bool) else
              isinstance(v, (int, float)) and not isinstance(v, bool)
              if isinstance(default, (int, float)) else isinstance(v, type(default)))
        if not ok:
            raise ConfigError(f"knob {k}: {v!r} has the wrong type")
    if cfg["n_head"] * cfg["head_dim"] != cfg["model_dim"]:
        raise ConfigError("model_dim must equal n_head * head_dim")
    L, ve = cfg["n_layer"], cfg["value_embeds"]
    if ve and ve != L and 2 * ve > L:
        raise ConfigError("value_embeds must be 0, n_layer or at most n_layer/2")
    if ve and cfg["value_residual"]:
        raise ConfigError("value_residual and value_embeds are exclusive")
    if cfg["unet_skips"] and L % 2:
        raise ConfigError("unet_skips needs an even n_layer")
    if cfg["long_short_windows"] and L % 2:
        raise ConfigError("long_short_windows: MODEL.md mirrors the pattern; needs an even n_layer")
    if cfg["tie_embeddings"] and cfg["embed_vocab_size"] not in (0, cfg["vocab_size"]):
        raise ConfigError("tie_embeddings needs embed_vocab_size 0 or vocab_size")
    return cfg


def load_config(path):
    with open(path) as f:
        return check_config(json.load(f))


def embed_vocab(cfg):
    return cfg["embed_vocab_size"] or cfg["vocab_size"]


def is_attention_layer(cfg, i):
    return i not in cfg["skip_attn_layers"]


def ve_table(cfg, i):
    """The value-embedding table of layer i, or None (MODEL.md: first k and last k layers)."""
    k, L = cfg["value_embeds"], cfg["n_layer"]
    if k == 0:
        return None
    if k == L:
        return i
    if i < k:
        return i
    if i >= L - k:
        return i - (L - k)
    return None


# ----------------------------------------------------------------------------- parameters

def param_specs(cfg):
    """[(name, shape, group)] with group in muon, embed, head, scalar (MODEL.md table)."""
    L, d = cfg["n_layer"], cfg["model_dim"]
    r = cfg["mlp_ratio"]
    tied = cfg["tie_embeddings"]
    specs = [("embed.weight", (embed_vocab(cfg), d), "head" if tied else "embed")]
    if not tied:
        specs.append(("lm_head.weight", (cfg["vocab_size"], d), "head"))
    for k in range(cfg["value_embeds"]):
        specs.append((f"value_embeds.{k}.weight", (embed_vocab(cfg), d), "embed"))
    if cfg["unet_skips"]:
        specs.append(("skip_weights", (L // 2,), "scalar"))
    for i in range(L):
        p = f"blocks.{i}."
        if cfg["embed_shortcut"]:
            specs.append((p + "lambdas", (2,), "scalar"))
        if is_attention_layer(cfg, i):
            if cfg["merged_qkv"]:
                specs.append((p + "attn.qkv.weight", (3, d, d), "muon"))
            else:
                specs += [(p + f"attn.{w}.weight", (d, d), "muon") for w in "qkv"]
            specs.append((p + "attn.proj.weight", (d, d), "muon"))
            if cfg["value_residual"]:
                specs.append((p + "attn.value_lambda", (1,), "scalar"))
            if cfg["value_embeds"] > 0:
                specs.append((p + "attn.ve_lambdas", (2,), "scalar"))
        specs.append((p + "mlp.fc.weight", (r * d, d), "muon"))
        specs.append((p + "mlp.proj.weight", (d, r * d), "muon"))
    return specs


def stored_bf16(cfg, group):
    """Whether a group's parameters are stored in bf16 (MODEL.md "Parameter storage")."""
    return cfg["param_dtype." + group] == "bf16" if group != "muon" else False


def bf16_round(t):
    return t.to(torch.bfloat16).to(t.dtype)


def scalar_init(name):
    if name.endswith("lambdas") and "ve_" not in name:
        return [1.0, 0.0]
    if name.endswith("value_lambda"):
        return [0.5]
    if name.endswith("ve_lambdas"):
        return [0.5, 0.5]
    return None  # skip_weights: ones


def random_params(cfg, gen):
    """Every parameter random and non-zero, so that no gradient is trivially zero."""
    params = {}
    for name, shape, group in param_specs(cfg):
        if group == "scalar":
            base = scalar_init(name)
            base = torch.ones(shape) if base is None else torch.tensor(base)
            params[name] = base + 0.2 * torch.randn(shape, generator=gen)
        elif group in ("embed", "head") and name != "lm_head.weight":
            params[name] = 0.5 * torch.randn(shape, generator=gen)
        else:
            params[name] = torch.randn(shape, generator=gen) * (0.5 / math.sqrt(shape[-1]))
    return params


# ----------------------------------------------------------------------------- schedules

def lr_multiplier(cfg, s):
    """LR multiplier of step s (MODEL.md "Optimizers and schedule")."""
    n, warm = cfg["num_iterations"], cfg["warmup_iters"]
    if s < warm:
        w = (s + 1) / warm
    elif cfg["cooldown_frac"] > 0:
        w = min((1 - s / n) / cfg["cooldown_frac"], 1.0)
    elif s < n - cfg["warmdown_iters"]:
        w = 1.0
    else:
        w = (n - s) / cfg["warmdown_iters"]
    return w + (1 - w) * cfg["lr_floor"]


def muon_momentum(cfg, s):
    steps = cfg["muon.momentum_warmup_steps"]
    if steps <= 0:
        return cfg["muon.momentum"]
    frac = min(s / steps, 1.0)
    return (1 - frac) * cfg["muon.momentum_warmup_start"] + frac * cfg["muon.momentum_warmup_end"]


def long_window_blocks(cfg, step):
    """n_long = max(1, R(((1 - x)·start + x·end) / block)), x = step / num_iterations."""
    x = step / cfg["num_iterations"]
    size = (1 - x) * cfg["window.start_tokens"] + x * cfg["window.end_tokens"]
    blocks = size / cfg["window.block_tokens"]
    rounded = math.floor(blocks) if cfg["window.rounding"] == "floor" else math.ceil(blocks)
    return max(1, int(rounded))


def layer_is_long(cfg, i):
    """Encoder layer i < L/2 is long iff i % 4 == 0; decoder L/2 + j mirrors encoder L/2-1-j."""
    half = cfg["n_layer"] // 2
    if i < half:
        return i % 4 == 0
    return layer_is_long(cfg, half - 1 - (i - half))


def layer_window_blocks(cfg, step, i):
    n_long = long_window_blocks(cfg, step)
    if not cfg["long_short_windows"] or layer_is_long(cfg, i):
        return n_long
    return max(1, n_long // 2)  # short = long // 2; 0 means the diagonal block only


def attention_mask(cfg, idx, step, layer):
    """Dense (B, T, T) bool mask, [b, t, s] = key s visible to query t."""
    B, T = idx.shape
    t = torch.arange(T)
    mask = (t[None, :] <= t[:, None]).expand(B, T, T).clone()  # s <= t
    if cfg["doc_masking"]:
        doc = torch.cumsum((idx == cfg["bos_token"]).long(), dim=1)  # BOS opens its document
        mask &= doc[:, :, None] == doc[:, None, :]
    if cfg["attn_window"] == "sliding":
        n = layer_window_blocks(cfg, step, layer)
        block = t // cfg["window.block_tokens"]
        mask &= (block[None, :] >= block[:, None] - n + 1)[None]
    return mask


# ----------------------------------------------------------------------------- model

def rms_norm(x):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + RMS_EPS)


class _RoundBf16(torch.autograd.Function):
    """Rounds to bf16 (round to nearest even) in the forward; the gradient passes unchanged."""

    @staticmethod
    def forward(ctx, x):
        return x.to(torch.bfloat16).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


class Stream:
    """The dtype of x0, the residual stream, the U-Net skips and the head input
    (`activation_dtype`, MODEL.md "Activation dtype"). With bf16 every value the records keep in a
    bf16 tensor is rounded where PyTorch rounds it: a product of a 0-dim fp32 weight and a bf16
    tensor rounds the weight to bf16 and the product to bf16; the sum of two bf16 tensors is
    rounded; a block's output (the records' bf16 GEMM output) is rounded before it is added.
    Values stay in tensors of the run's dtype, so gradients are not rounded (straight through).
    genuine=True holds the stream in real torch.bfloat16 tensors instead and lets torch round
    (forward only: its gradients would be bf16); the self-test checks both give the same bits."""

    def __init__(self, cfg, genuine=False):
        self.bf16 = cfg["activation_dtype"] == "bf16"
        self.genuine = genuine and self.bf16

    def store(self, t):
        """A tensor the stream keeps (x0, the head input)."""
        if self.genuine:
            return t.to(torch.bfloat16)
        return _RoundBf16.apply(t) if self.bf16 else t

    def scale(self, w, t):
        """w · t for a scalar weight w (a 0-dim tensor) and a stream tensor t."""
        if self.genuine or not self.bf16:
            return w * t
        return self.store(self.store(w) * t)

    def add(self, a, b):
        """a + b for a stream tensor a and a stream tensor or block output b."""
        if self.genuine:
            return a + b.to(torch.bfloat16)
        return self.store(a + self.store(b)) if self.bf16 else a + b

    def compute(self, t):
        """A stream tensor as the input of a block's fp32 computation."""
        return t.float() if self.genuine else t


def rope_angles(cfg, T, dtype):
    h = cfg["head_dim"]
    half = h // 2
    if cfg["rope"] == "full":
        theta = cfg["rope_base"] ** (-2.0 * torch.arange(half, dtype=torch.float64) / h)
    else:
        q = h // 4
        theta = torch.zeros(half, dtype=torch.float64)
        expo = torch.arange(q, dtype=torch.float64) / (q - 1) if q > 1 else torch.zeros(1)
        theta[:q] = (1.0 / 1024) ** expo
    ang = torch.arange(T, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)  # (T, h/2)


def rope(x, cos, sin):
    """x (B, T, H, h): pairs (j, j + h/2); y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c + x2 * s, -x1 * s + x2 * c], dim=-1)


def attention_inputs(cfg, P, i, u, idx, state):
    """Layer i's q, k, v (B, T, H, h) after the value mixes, qk-norm and RoPE, and the score
    scale: everything of the attention before the scores."""
    B, T, d = u.shape
    H, h = cfg["n_head"], cfg["head_dim"]
    p = f"blocks.{i}.attn."
    if cfg["merged_qkv"]:
        wq, wk, wv = P[p + "qkv.weight"].unbind(0)
    else:
        wq, wk, wv = P[p + "q.weight"], P[p + "k.weight"], P[p + "v.weight"]
    q = (u @ wq.T).view(B, T, H, h)
    k = (u @ wk.T).view(B, T, H, h)
    v = (u @ wv.T).view(B, T, H, h)
    if cfg["value_residual"]:
        if state["v1"] is None:
            state["v1"] = v
        lam = P[p + "value_lambda"]
        v = (1 - lam) * v + lam * state["v1"]
    if cfg["value_embeds"] > 0:
        lam = P[p + "ve_lambdas"]
        table = ve_table(cfg, i)
        if table is not None:
            ve = P[f"value_embeds.{table}.weight"][idx].view(B, T, H, h)
            v = lam[0] * v + lam[1] * ve
        else:
            v = lam[0] * v
    if cfg["qk_norm"]:
        q, k = rms_norm(q), rms_norm(k)
    q, k = rope(q, *state["rope"]), rope(k, *state["rope"])
    scale = cfg["attn_scale"] if cfg["attn_scale"] > 0 else 1.0 / math.sqrt(h)
    return q, k, v, scale


def attention(cfg, P, i, u, idx, step, state):
    """Layer i's attention output (B, T, d), with dense masked scores."""
    B, T, d = u.shape
    q, k, v, scale = attention_inputs(cfg, P, i, u, idx, state)
    scores = scale * torch.einsum("bthe,bshe->bhts", q, k)
    mask = attention_mask(cfg, idx, step, i)
    scores = scores.masked_fill(~mask[:, None], float("-inf"))
    y = torch.einsum("bhts,bshe->bthe", torch.softmax(scores, dim=-1), v).reshape(B, T, d)
    return y @ P[f"blocks.{i}.attn.proj.weight"].T


def mlp(cfg, P, i, u):
    z = u @ P[f"blocks.{i}.mlp.fc.weight"].T
    z = F.relu(z).square() if cfg["mlp_act"] == "relu2" else F.gelu(z, approximate="tanh")
    return z @ P[f"blocks.{i}.mlp.proj.weight"].T


def softcap(cfg, z):
    c = cfg["logit_softcap"]
    if c == 0:
        return z
    if cfg["softcap_kind"] == "tanh":
        return c * torch.tanh(z / c)
    return c * torch.sigmoid(z / (c / 4))


def forward(cfg, P, idx, step, attend=attention, rope_table=None, stream=None):
    """Logits (B, T, V) after the softcap, for inputs idx (B, T) at training step `step`.
    attend: a layer's attention, with attention's signature (the step-time bench passes
    flex_attention); rope_table: rope_angles precomputed (else made here); stream: the Stream
    (else Stream(cfg))."""
    L = cfg["n_layer"]
    S = stream or Stream(cfg)
    x = P["embed.weight"][idx]
    if cfg["embed_norm"]:
        x = rms_norm(x)
    x = x0 = S.store(x)
    if rope_table is None:
        rope_table = rope_angles(cfg, idx.shape[1], P["embed.weight"].dtype)
    state = {"v1": None, "rope": rope_table}
    skips = []
    for i in range(L):
        if cfg["unet_skips"] and i >= L // 2:
            x = S.add(x, S.scale(P["skip_weights"][i - L // 2], skips.pop()))
        if cfg["embed_shortcut"]:
            lam = P[f"blocks.{i}.lambdas"]
            x = S.add(S.scale(lam[0], x), S.scale(lam[1], x0))
        if is_attention_layer(cfg, i):
            x = S.add(x, attend(cfg, P, i, rms_norm(S.compute(x)), idx, step, state))
        x = S.add(x, mlp(cfg, P, i, rms_norm(S.compute(x))))
        if cfg["unet_skips"] and i < L // 2:
            skips.append(x)
    head = P["embed.weight"] if cfg["tie_embeddings"] else P["lm_head.weight"]
    return softcap(cfg, S.compute(S.store(rms_norm(S.compute(x)))) @ head.T)


def loss_fn(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# ----------------------------------------------------------------------------- optimizers

def newton_schulz(g, steps, coeffs):
    """Approximately orthogonalises a 2-D g (MODEL.md Muon)."""
    a, b, c = coeffs
    x = g / (g.norm() + NS_EPS)
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    for _ in range(steps):
        A = x @ x.T
        x = a * x + (b * A + c * (A @ A)) @ x
    return x.T if transposed else x


class Muon:
    """Momentum + Newton–Schulz per matrix; merged qkv is three (d, d) matrices."""

    def __init__(self, cfg, params):
        self.cfg = cfg
        self.params = params  # [(name, tensor)]
        self.bufs = {name: torch.zeros_like(p) for name, p in params}

    def _scale(self, rows, cols):
        if self.cfg["muon.scale_rule"] == "sqrt_max_dim":
            return math.sqrt(max(rows, cols))
        return math.sqrt(max(1.0, rows / cols))

    @torch.no_grad()
    def step(self, lr, momentum):
        c = self.cfg
        for name, p in self.params:
            buf = self.bufs[name]
            if c["muon.momentum_form"] == "lerp":  # r15+: buf.lerp_(g, 1-μ); g.lerp_(buf, μ)
                buf.lerp_(p.grad, 1 - momentum)
                g = p.grad.lerp(buf, momentum) if c["muon.nesterov"] else buf.clone()
            else:  # r8-r11: buf = μ·buf + g; g + μ·buf
                buf.mul_(momentum).add_(p.grad)
                g = p.grad + momentum * buf if c["muon.nesterov"] else buf.clone()
            mats = g.unbind(0) if g.dim() == 3 else [g]
            outs = [newton_schulz(m, c["muon.ns_steps"], c["muon.ns_coeffs"]) for m in mats]
            update = torch.stack(outs) if g.dim() == 3 else outs[0]
            p.sub_(lr * self._scale(g.shape[-2], g.shape[-1]) * update)


class Bf16Adam:
    """Adam for parameters stored in bf16 (MODEL.md "Parameter storage"): the gradient is read
    rounded to bf16, m, v and the parameter are rounded to bf16 when stored; fp32 arithmetic, as
    torch's fused Adam does for bf16 parameters."""

    def __init__(self, cfg, params, base_lr):
        self.params, self.base_lr, self.t = params, base_lr, 0
        self.b1, self.b2, self.eps = cfg["adam.beta1"], cfg["adam.beta2"], cfg["adam.eps"]
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self, mult):
        self.t += 1
        bc1, bc2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for p, m, v in zip(self.params, self.m, self.v):
            g = bf16_round(p.grad)
            m.copy_(bf16_round(self.b1 * m + (1 - self.b1) * g))
            v.copy_(bf16_round(self.b2 * v + (1 - self.b2) * g * g))
            denom = v.sqrt() / math.sqrt(bc2) + self.eps
            p.copy_(bf16_round(p - (self.base_lr * mult / bc1) * m / denom))


class Optimizers:
    """torch Adam for the fp32 Adam groups, Bf16Adam for those stored in bf16, and Muon."""

    def __init__(self, cfg, P):
        groups = {"embed": [], "head": [], "scalar": [], "muon": []}
        for name, _, group in param_specs(cfg):
            groups[group].append((name, P[name]))
        base_lr = {"embed": cfg["adam.embed_lr"], "head": cfg["adam.head_lr"],
                   "scalar": cfg["adam.scalar_lr"]}
        adam_groups, self.bf16 = [], []
        for g in ("embed", "head", "scalar"):
            params = [p for _, p in groups[g]]
            if not params:
                continue
            if stored_bf16(cfg, g):
                self.bf16.append(Bf16Adam(cfg, params, base_lr[g]))
            else:
                adam_groups.append({"params": params, "base_lr": base_lr[g], "lr": base_lr[g]})
        self.adam = torch.optim.Adam(adam_groups, betas=(cfg["adam.beta1"], cfg["adam.beta2"]),
                                     eps=cfg["adam.eps"], weight_decay=0.0,
                                     foreach=False) if adam_groups else None
        self.muon = Muon(cfg, groups["muon"])

    def step(self, cfg, s):
        mult = lr_multiplier(cfg, s)
        if self.adam is not None:
            for group in self.adam.param_groups:
                group["lr"] = group["base_lr"] * mult
            self.adam.step()
        for b in self.bf16:
            b.step(mult)
        self.muon.step(cfg["muon.lr"] * mult, muon_momentum(cfg, s))


def make_optimizers(cfg, P):
    """(torch Adam over every Adam group in fp32, Muon): the step-time bench's optimizers."""
    groups = {"embed": [], "head": [], "scalar": [], "muon": []}
    for name, _, group in param_specs(cfg):
        groups[group].append((name, P[name]))
    base_lr = {"embed": cfg["adam.embed_lr"], "head": cfg["adam.head_lr"],
               "scalar": cfg["adam.scalar_lr"]}
    adam_groups = [{"params": [p for _, p in groups[g]], "base_lr": base_lr[g], "lr": base_lr[g]}
                   for g in ("embed", "head", "scalar") if groups[g]]
    adam = torch.optim.Adam(adam_groups, betas=(cfg["adam.beta1"], cfg["adam.beta2"]),
                            eps=cfg["adam.eps"], weight_decay=0.0, foreach=False)
    return adam, Muon(cfg, groups["muon"])


def nudge_ulp(cfg, P, gen):
    """Moves every parameter not stored in bf16 by one float32 ulp, up or down at random: a
    rounding-level difference such as another summation order makes (bf16-stored values would
    round straight back)."""
    groups = {n: g for n, _, g in param_specs(cfg)}
    with torch.no_grad():
        for name, p in P.items():
            if not stored_bf16(cfg, groups[name]):
                sign = torch.randint(0, 2, p.shape, generator=gen).to(p.dtype) * 2 - 1
                p.mul_(1 + sign * 2.0 ** -23)


def train(cfg, P, tokens, steps, record_step0=None, nudge=None):
    """`steps` optimizer steps on tokens (steps, B, T+1); returns the loss of each step. With a
    generator as `nudge`, nudge_ulp before every step (a noise run, see loss_noise)."""
    opt = Optimizers(cfg, P)
    losses = []
    for s in range(steps):
        if nudge is not None:
            nudge_ulp(cfg, P, nudge)
        for p in P.values():
            p.grad = None
        logits = forward(cfg, P, tokens[s, :, :-1], s)
        loss = loss_fn(logits, tokens[s, :, 1:])
        loss.backward()
        losses.append(loss.item())
        if s == 0 and record_step0 is not None:
            record_step0(logits, loss)
        opt.step(cfg, s)
    return losses


# ----------------------------------------------------------------------------- parity state io

def write_f32(path, tensor):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tensor.detach().to(torch.float32).contiguous().numpy().tofile(path)


def read_array(path, shape, dtype):
    import numpy as np
    a = np.fromfile(path, dtype=dtype)
    want = math.prod(shape)
    if a.size != want:
        raise ValueError(f"{path}: {a.size} values, expected {want} for shape {list(shape)}")
    return torch.from_numpy(a.reshape(shape).copy())


def make_state(cfg, B, T, steps, seed, out, config_text=None):
    """Writes a parity state (MODEL.md "Parity state"); config_text is copied verbatim."""
    gen = torch.Generator().manual_seed(seed)
    vocab = min(cfg["vocab_size"], embed_vocab(cfg))
    tokens = torch.randint(0, vocab, (steps, B, T + 1), generator=gen, dtype=torch.int32)
    bos = torch.rand((steps, B, T + 1), generator=gen) < 0.08  # documents of ~12 tokens
    tokens[bos] = cfg["bos_token"]
    params = random_params(cfg, gen)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        f.write(config_text or json.dumps(cfg, sort_keys=True, separators=(",", ":")))
    manifest = {"B": B, "T": T, "steps": steps,
                "params": [{"name": n, "shape": list(s)} for n, s, _ in param_specs(cfg)]}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    tokens.numpy().tofile(os.path.join(out, "tokens.i32"))
    for name, p in params.items():
        write_f32(os.path.join(out, "params", name + ".f32"), p)


def load_state(state_dir, dtype):
    cfg = load_config(os.path.join(state_dir, "config.json"))
    with open(os.path.join(state_dir, "manifest.json")) as f:
        man = json.load(f)
    B, T, steps = man["B"], man["T"], man["steps"]
    import numpy as np
    tokens = read_array(os.path.join(state_dir, "tokens.i32"), (steps, B, T + 1), np.int32).long()
    want = {n: tuple(s) for n, s, _ in param_specs(cfg)}
    groups = {n: g for n, _, g in param_specs(cfg)}
    got = {p["name"]: tuple(p["shape"]) for p in man["params"]}
    if want != got:
        raise ValueError(f"manifest params differ from the config's: {sorted(set(want) ^ set(got))}")
    P = {}
    for name, shape in want.items():
        t = read_array(os.path.join(state_dir, "params", name + ".f32"), shape, np.float32)
        if stored_bf16(cfg, groups[name]):
            t = bf16_round(t)  # stored in bf16: only bf16 values exist
        P[name] = t.to(dtype).requires_grad_(True)
    return cfg, P, tokens, steps


def run_state(state_dir, out, do_train, dtype=torch.float32):
    cfg, P, tokens, steps = load_state(state_dir, dtype)
    saved = {}

    def record(logits, loss):
        write_f32(os.path.join(out, "logits.f32"), logits)
        for name, p in P.items():
            write_f32(os.path.join(out, "grads", name + ".f32"), p.grad)
        saved["loss"] = loss.item()

    os.makedirs(out, exist_ok=True)
    if do_train:
        losses = train(cfg, P, tokens, steps, record)
    else:
        logits = forward(cfg, P, tokens[0, :, :-1], 0)
        loss = loss_fn(logits, tokens[0, :, 1:])
        loss.backward()
        record(logits, loss)
        losses = []
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump({"loss": saved["loss"], "losses": losses}, f)
    return saved["loss"], losses


# ----------------------------------------------------------------------------- compare

def rel_error(a, b, atol):
    return float((a - b).norm() / max(float(b.norm()), atol))


def compare(dir_a, dir_b, rtol, loss_tol, atol, noise=None):
    """Returns (ok, report lines). B is the reference (the denominator of relative errors);
    noise: loss curves of noise runs of B (loss_checks)."""
    import numpy as np
    lines, ok = [], True

    def check(label, err, tol):
        nonlocal ok
        bad = not (err <= tol)  # NaN fails
        ok = ok and not bad
        lines.append(f"{'FAIL' if bad else 'ok  '} {label:44s} {err:.3e} (tol {tol:.1e})")

    with open(os.path.join(dir_a, "result.json")) as fa, \
            open(os.path.join(dir_b, "result.json")) as fb:
        res_a, res_b = json.load(fa), json.load(fb)
    la = torch.from_numpy(np.fromfile(os.path.join(dir_a, "logits.f32"), dtype=np.float32))
    lb = torch.from_numpy(np.fromfile(os.path.join(dir_b, "logits.f32"), dtype=np.float32))
    if la.shape != lb.shape:
        check(f"logits size {la.numel()} vs {lb.numel()}", float("inf"), rtol)
    else:
        check("logits", rel_error(la.double(), lb.double(), atol), rtol)
    names_a = sorted(os.listdir(os.path.join(dir_a, "grads")))
    names_b = sorted(os.listdir(os.path.join(dir_b, "grads")))
    for name in sorted(set(names_a) | set(names_b)):
        if name not in names_a or name not in names_b:
            check(f"grad {name} missing in {'A' if name not in names_a else 'B'}", float("inf"), rtol)
            continue
        ga = np.fromfile(os.path.join(dir_a, "grads", name), dtype=np.float32)
        gb = np.fromfile(os.path.join(dir_b, "grads", name), dtype=np.float32)
        if ga.shape != gb.shape:
            check(f"grad {name} size {ga.size} vs {gb.size}", float("inf"), rtol)
            continue
        check(f"grad {name[:-4]}", rel_error(torch.from_numpy(ga).double(),
                                             torch.from_numpy(gb).double(), atol), rtol)
    check("loss", abs(res_a["loss"] - res_b["loss"]), loss_tol)
    if len(res_a["losses"]) != len(res_b["losses"]):
        check(f"losses: {len(res_a['losses'])} vs {len(res_b['losses'])} steps", float("inf"),
              loss_tol)
    else:
        for label, err, tol in loss_checks(res_a["losses"], res_b["losses"], loss_tol, noise):
            check(label, err, tol)
    return ok, lines


# A bf16 stream makes a run's losses chaotic at the rounding level: one value on the other side
# of a bf16 rounding boundary moves the loss of 64 tokens by up to ~4e-3 within a few steps, and
# any two correct implementations differ by such values. So with a bf16 stream the losses after
# step 0 are checked against NOISE_RUNS runs of the reference itself, each nudged by nudge_ulp
# before every step: each step's loss must be within NOISE_FACTOR times the largest deviation
# from the reference any of them reached after step 0 (loss_tol where that is less).
# `ablate_ref.py noise-study` measures how often a correct run fails this and how often a small
# error in the training passes it (trainer/MODEL.md, "Precision per preset", the parity
# paragraph).
NOISE_RUNS = 12
NOISE_FACTOR = 1.5


def chaotic(cfg):
    return cfg["activation_dtype"] == "bf16"


def loss_noise(state_dir, runs, seed=0, cfg_override=None):
    """The loss curves of `runs` float32 reference runs of the state, run k nudged by nudge_ulp
    with generator seed + k before every step; cfg_override (a dict) changes knobs (noise-study's
    injected errors)."""
    curves = []
    for k in range(runs):
        cfg, P, tokens, steps = load_state(state_dir, torch.float32)
        if cfg_override:
            cfg = {**cfg, **cfg_override}
        curves.append(train(cfg, P, tokens, steps, nudge=torch.Generator().manual_seed(seed + k)))
    return curves


def loss_checks(losses, ref, loss_tol, noise=None):
    """(label, error, tolerance) of each step's loss against the reference's `ref`: within
    loss_tol, or, with noise curves (loss_noise), steps after 0 within the noise tolerance."""
    tol = loss_tol
    if noise:
        reach = max(abs(a - b) for curve in noise for a, b in zip(curve[1:], ref[1:]))
        tol = max(loss_tol, NOISE_FACTOR * reach)
    out = []
    for s, (a, b) in enumerate(zip(losses, ref)):
        label = f"loss at step {s} ({a:.6f} vs {b:.6f})"
        if s > 0 and noise:
            label += f" {len(noise)} noise runs"
        out.append((label, abs(a - b), loss_tol if s == 0 else tol))
    return out


# ----------------------------------------------------------------------------- configs

BASE_OVERRIDES = {
    "n_layer": 4, "model_dim": 32, "n_head": 2, "head_dim": 16, "vocab_size": 64,
    "bos_token": 63, "seq_len": 32, "device_batch_tokens": 64, "batch_tokens": 64,
    "num_iterations": 20, "warmdown_iters": 6, "val_tokens": 64, "val_every": 0,
}
SLIDING = {"attn_window": "sliding", "window.block_tokens": 8, "window.start_tokens": 8.0,
           "window.end_tokens": 32.0}

VARIANTS = {
    "base": {},
    "tie_embeddings": {"tie_embeddings": True},
    "embed_norm_off": {"embed_norm": False},
    "gelu": {"mlp_act": "gelu"},
    "qk_norm_off": {"qk_norm": False},
    "attn_scale": {"attn_scale": 0.12},
    "softcap_tanh15": {"logit_softcap": 15.0, "softcap_kind": "tanh"},
    "softcap_sigmoid30": {"logit_softcap": 30.0, "softcap_kind": "sigmoid"},
    "value_residual": {"value_residual": True},
    "embed_shortcut": {"embed_shortcut": True},
    "unet_skips": {"unet_skips": True},
    "value_embeds": {"value_embeds": 2},
    "merged_qkv": {"merged_qkv": True},
    "rope_half_truncated": {"rope": "half_truncated"},
    "sliding_window": SLIDING,
    "long_short_windows": {**SLIDING, "long_short_windows": True, "window.start_tokens": 0.0,
                           "window.rounding": "ceil"},
    "doc_masking": {"doc_masking": True},
    "skip_attn_layers": {"skip_attn_layers": [1]},
    "muon_sqrt_max_dim": {"muon.scale_rule": "sqrt_max_dim", "muon.lr": 0.002},
    "nesterov_off": {"muon.nesterov": False},
    "momentum_warmup": {"muon.momentum_warmup_steps": 10},
    "momentum_lerp": {"muon.momentum_form": "lerp", "muon.momentum_warmup_steps": 10},
    "momentum_lerp_plain": {"muon.momentum_form": "lerp", "muon.nesterov": False,
                            "muon.momentum_warmup_steps": 10},
    "cooldown_floor": {"cooldown_frac": 0.4, "lr_floor": 0.1},
    "warmup": {"warmup_iters": 3},
    "uniform_half": {"linear_init": "uniform_half"},
    "bf16_embed_scalars": {"embed_shortcut": True, "unet_skips": True, "value_embeds": 2,
                           "param_dtype.embed": "bf16", "param_dtype.scalar": "bf16"},
    "bf16_head": {"param_dtype.head": "bf16"},
    "bf16_tied": {"tie_embeddings": True, "param_dtype.head": "bf16"},
    "bf16_stream": {"activation_dtype": "bf16", "embed_shortcut": True, "unet_skips": True,
                    "embed_norm": False},
    "r11_like_bf16": {"value_residual": True, "embed_shortcut": True, "unet_skips": True,
                      "logit_softcap": 30.0, "muon.momentum_warmup_steps": 10,
                      "muon.lr": 0.04, "adam.embed_lr": 0.6, "adam.head_lr": 0.008,
                      "adam.scalar_lr": 0.04, "param_dtype.embed": "bf16",
                      "param_dtype.scalar": "bf16", "activation_dtype": "bf16"},
    "r18_like_bf16": {
        **SLIDING, "value_embeds": 2, "rope": "half_truncated", "doc_masking": True,
        "skip_attn_layers": [2], "embed_shortcut": True, "unet_skips": True,
        "logit_softcap": 15.0, "softcap_kind": "tanh", "muon.lr": 0.05,
        "muon.momentum_warmup_steps": 6, "muon.momentum_form": "lerp", "adam.beta1": 0.8,
        "cooldown_frac": 0.4, "param_dtype.embed": "bf16", "activation_dtype": "bf16"},
    "r9_like": {"value_residual": True, "embed_shortcut": True, "logit_softcap": 30.0,
                "muon.momentum_warmup_steps": 10},
    "all_on": {  # the r20 recipe at this scale
        **SLIDING, "long_short_windows": True, "window.start_tokens": 0.0,
        "window.rounding": "ceil", "embed_norm": True, "qk_norm": True, "attn_scale": 0.12,
        "logit_softcap": 30.0, "softcap_kind": "sigmoid", "embed_shortcut": True,
        "unet_skips": True, "value_embeds": 2, "merged_qkv": True, "rope": "half_truncated",
        "doc_masking": True, "skip_attn_layers": [2], "linear_init": "uniform_half",
        "muon.lr": 0.05, "muon.momentum_warmup_steps": 6, "muon.momentum_form": "lerp",
        "adam.embed_lr": 0.6,
        "adam.head_lr": 0.008, "adam.scalar_lr": 0.04, "adam.beta1": 0.8, "adam.eps": 1e-10,
        "cooldown_frac": 0.4, "lr_floor": 0.1, "param_dtype.embed": "bf16"},
}

VARIANTS["r20_like_bf16"] = {**VARIANTS["all_on"], "activation_dtype": "bf16"}


def canonical(overrides):
    cfg = dict(KNOB_DEFAULTS)
    for k, v in {**BASE_OVERRIDES, **overrides}.items():
        if k not in cfg:
            raise ConfigError(f"unknown knob {k}")
        cfg[k] = float(v) if isinstance(KNOB_DEFAULTS[k], float) else v
    return check_config(dict(sorted(cfg.items())))


def write_configs(out):
    os.makedirs(out, exist_ok=True)
    for name, overrides in VARIANTS.items():
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(canonical(overrides), f, sort_keys=True, separators=(",", ":"))
    return sorted(VARIANTS)


# ----------------------------------------------------------------------------- parity driver

def parity(cpp, work, only, steps, rtol, loss_tol, atol, dtype):
    names = only or sorted(VARIANTS)
    failed = []
    for name in names:
        cfg = canonical(VARIANTS[name])
        T = cfg["seq_len"]
        B = cfg["device_batch_tokens"] // T
        d = os.path.join(work, name)
        make_state(cfg, B, T, steps, 1234, os.path.join(d, "state"))
        run_state(os.path.join(d, "state"), os.path.join(d, "ref"), True, dtype)
        cmd = [cpp, "run", "--state", os.path.join(d, "state"), "--out", os.path.join(d, "cpp"),
               "--train"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"FAIL {name}: {' '.join(cmd)} exited {proc.returncode}\n{proc.stderr}")
            failed.append(name)
            continue
        noise = loss_noise(os.path.join(d, "state"), NOISE_RUNS) if chaotic(cfg) else None
        ok, lines = compare(os.path.join(d, "cpp"), os.path.join(d, "ref"), rtol, loss_tol, atol,
                            noise)
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
        if not ok:
            print("\n".join("    " + line for line in lines))
            failed.append(name)
    print(f"{len(names) - len(failed)}/{len(names)} configs match" +
          (f"; failed: {', '.join(failed)}" if failed else ""))
    return not failed


# ----------------------------------------------------------------------------- noise study

# Small errors in the training that the noise criterion should see: knob changes that a wrong
# learning rate, schedule or optimizer constant in a trainer would make.
INJECTED_ERRORS = {
    "muon.lr +1%": lambda c: {"muon.lr": c["muon.lr"] * 1.01},
    "muon.lr +3%": lambda c: {"muon.lr": c["muon.lr"] * 1.03},
    "adam.embed_lr +10%": lambda c: {"adam.embed_lr": c["adam.embed_lr"] * 1.1},
    "adam.head_lr +10%": lambda c: {"adam.head_lr": c["adam.head_lr"] * 1.1},
    "adam.scalar_lr +25%": lambda c: {"adam.scalar_lr": c["adam.scalar_lr"] * 1.25},
    "adam.beta1 +0.05": lambda c: {"adam.beta1": c["adam.beta1"] + 0.05},
    "schedules one step longer": lambda c: {"num_iterations": c["num_iterations"] + 1},
}


def noise_study(work, names, steps, members, trials, errors_runs, loss_tol):
    """For each config: `members` noise runs; how often a held-out one fails the criterion against
    NOISE_RUNS others (false failures), and how often runs with each INJECTED_ERRORS pass it."""
    import random
    rng = random.Random(0)

    def fails(curve, ref, noise):
        return any(not (err <= tol) for _, err, tol in loss_checks(curve, ref, loss_tol, noise))

    for name in names:
        cfg = canonical(VARIANTS[name])
        T = cfg["seq_len"]
        d = os.path.join(work, name)
        make_state(cfg, cfg["device_batch_tokens"] // T, T, steps, 1234, os.path.join(d, "state"))
        _, ref = run_state(os.path.join(d, "state"), os.path.join(d, "ref"), True)
        runs = loss_noise(os.path.join(d, "state"), members, seed=1000)
        false_fail = 0
        for h in range(members):
            others = runs[:h] + runs[h + 1:]
            for _ in range(trials):
                false_fail += fails(runs[h], ref, rng.sample(others, NOISE_RUNS))
        flat = sum(fails(curve, ref, None) for curve in runs)
        print(f"{name}: correct runs failing {false_fail}/{members * trials} "
              f"({members} noise runs, each held out against {trials} draws of {NOISE_RUNS}); "
              f"every step within {loss_tol:g}: {flat}/{members}")
        for label, override in INJECTED_ERRORS.items():
            bad = loss_noise(os.path.join(d, "state"), errors_runs, seed=5000,
                             cfg_override=override(cfg))
            seen = sum(fails(curve, ref, runs[:NOISE_RUNS]) for curve in bad)
            flat = sum(fails(curve, ref, None) for curve in bad)
            print(f"    {label:26s} detected {seen}/{errors_runs}; "
                  f"every step within {loss_tol:g}: {flat}/{errors_runs}")
        sys.stdout.flush()


# ----------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ms = sub.add_parser("make-state")
    ms.add_argument("--config", required=True)
    ms.add_argument("--B", type=int, required=True)
    ms.add_argument("--T", type=int, required=True)
    ms.add_argument("--steps", type=int, default=1)
    ms.add_argument("--seed", type=int, default=0)
    ms.add_argument("--out", required=True)
    rn = sub.add_parser("run")
    rn.add_argument("--state", required=True)
    rn.add_argument("--out", required=True)
    rn.add_argument("--train", action="store_true")
    rn.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    cp = sub.add_parser("compare")
    cp.add_argument("a")
    cp.add_argument("b", help="the reference (denominator of relative errors)")
    cp.add_argument("--rtol", type=float, default=1e-4)
    cp.add_argument("--loss-tol", type=float, default=1e-3)
    cp.add_argument("--atol", type=float, default=1e-8,
                    help="floor of the reference norm, for tensors that are exactly zero")
    cf = sub.add_parser("configs")
    cf.add_argument("--out", required=True)
    pa = sub.add_parser("parity")
    pa.add_argument("--cpp", required=True, help="binary with `run --state D --out D --train`")
    pa.add_argument("--work", required=True)
    pa.add_argument("--only", nargs="*")
    pa.add_argument("--steps", type=int, default=20)
    pa.add_argument("--rtol", type=float, default=1e-4)
    pa.add_argument("--loss-tol", type=float, default=1e-3)
    pa.add_argument("--atol", type=float, default=1e-8)
    pa.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ns = sub.add_parser("noise-study", help="error rates of the bf16 loss criterion")
    ns.add_argument("--work", required=True)
    ns.add_argument("--only", nargs="*")
    ns.add_argument("--steps", type=int, default=20)
    ns.add_argument("--members", type=int, default=40)
    ns.add_argument("--trials", type=int, default=50)
    ns.add_argument("--error-runs", type=int, default=10)
    ns.add_argument("--loss-tol", type=float, default=1e-3)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "make-state":
            with open(a.config) as f:
                text = f.read()
            make_state(check_config(json.loads(text)), a.B, a.T, a.steps, a.seed, a.out, text)
        elif a.cmd == "run":
            loss, losses = run_state(a.state, a.out, a.train, getattr(torch, a.dtype))
            print(json.dumps({"loss": loss, "losses": losses}))
        elif a.cmd == "compare":
            ok, lines = compare(a.a, a.b, a.rtol, a.loss_tol, a.atol)
            print("\n".join(lines))
            print("MATCH" if ok else "MISMATCH")
            return 0 if ok else 1
        elif a.cmd == "configs":
            print("\n".join(write_configs(a.out)))
        elif a.cmd == "noise-study":
            noise_study(a.work, a.only or [n for n in sorted(VARIANTS)
                                           if chaotic(canonical(VARIANTS[n]))],
                        a.steps, a.members, a.trials, a.error_runs, a.loss_tol)
        elif a.cmd == "parity":
            return 0 if parity(a.cpp, a.work, a.only, a.steps, a.rtol, a.loss_tol, a.atol,
                               getattr(torch, a.dtype)) else 1
    except (ConfigError, ValueError, OSError) as e:
        print(f"ablate_ref: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())

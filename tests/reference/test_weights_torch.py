#!/usr/bin/python3
"""Weights between ablate and PyTorch (python3-torch): for configs that use each record's names
(r8-r11 transformer.h.*, r18 blocks.* with value_embeds.embed.k, r20 qkv_w and, as r18,
value_embeds.embed.k) and bf16 storage,
  torch -> ablate: a state_dict with the record's names, saved as safetensors by torch code,
                   loaded by ablate (trainer_parity --weights): same logits as the reference;
  ablate -> torch: ablate saves (trainer_parity --save-weights), torch loads: the record's names,
                   shapes and dtypes, and the reference's logits from them equal ablate's;
                   the file loads strictly (load_state_dict(strict=True)) into a module tree
                   built with the records' own attribute names (record_module), so a name that
                   both directions get wrong the same way still fails.
Usage: test_weights_torch.py TRAINER_PARITY_BIN WORK_DIR. Exits 77 without torch."""

import os
import shutil
import subprocess
import sys
import unittest

try:
    import torch
except ImportError:
    print("SKIP: torch is not importable by this python (apt-get install python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ablate_ref as ref  # noqa: E402
import safetensors_io  # noqa: E402

torch.set_num_threads(1)
BIN, WORK = None, None


def record_name(cfg, name):
    """The record's state_dict name of ablate parameter `name` (trainer/README.md table)."""
    style = ("r20" if cfg["merged_qkv"] else
             "r18" if cfg["value_embeds"] or cfg["skip_attn_layers"] or cfg["doc_masking"] else
             "r8")
    if name == "embed.weight":
        return "transformer.wte.weight" if style == "r8" else "embed.weight"
    if name.startswith("value_embeds.") and style in ("r18", "r20"):
        return "value_embeds.embed." + name[len("value_embeds."):]
    if not name.startswith("blocks."):
        return name
    _, i, rest = name.split(".", 2)
    rest = {"attn.q.weight": "attn.c_q.weight", "attn.k.weight": "attn.c_k.weight",
            "attn.v.weight": "attn.c_v.weight", "attn.proj.weight": "attn.c_proj.weight",
            "attn.qkv.weight": "attn.qkv_w", "attn.value_lambda": "attn.lamb",
            "attn.ve_lambdas": "attn.lambdas", "mlp.fc.weight": "mlp.c_fc.weight",
            "mlp.proj.weight": "mlp.c_proj.weight"}.get(rest, rest)
    return (f"transformer.h.{i}." if style == "r8" else f"blocks.{i}.") + rest


def record_state_dict(cfg, P):
    """ablate-named fp32 params -> the record's state_dict (names, shapes, dtypes)."""
    sd = {}
    for name, shape, group in ref.param_specs(cfg):
        t = P[name].detach().clone()
        if name.endswith("attn.value_lambda"):
            t = t.reshape(())  # nn.Parameter(torch.tensor(0.5))
        sd[record_name(cfg, name)] = t.to(torch.bfloat16) if ref.stored_bf16(cfg, group) else t
    return sd


def record_module(cfg):
    """An uninitialised module tree with the attribute names of the records' GPT (r8-r11:
    transformer.wte/h, attn.c_q.., attn.lamb; r17-r18: embed, value_embeds = ValueEmbedding with
    .embed = ModuleList, blocks, attn.lambdas; r20: as r18 with attn.qkv_w), written from the
    records' train_gpt.py rather than from record_name, so strict loading checks the names."""
    nn = torch.nn
    L, d, r = cfg["n_layer"], cfg["model_dim"], cfg["mlp_ratio"]
    style = ("r20" if cfg["merged_qkv"] else
             "r18" if cfg["value_embeds"] or cfg["skip_attn_layers"] or cfg["doc_masking"] else
             "r8")

    def weight(*shape):
        m = nn.Module()
        m.weight = nn.Parameter(torch.empty(*shape))
        return m

    def block(i):
        b = nn.Module()
        if ref.is_attention_layer(cfg, i):
            a = nn.Module()
            if style == "r20":
                a.qkv_w = nn.Parameter(torch.empty(3, d, d))
            else:
                a.c_q, a.c_k, a.c_v = weight(d, d), weight(d, d), weight(d, d)
            a.c_proj = weight(d, d)
            if cfg["value_residual"]:
                a.lamb = nn.Parameter(torch.empty(()))
            if cfg["value_embeds"]:
                a.lambdas = nn.Parameter(torch.empty(2))
            b.attn = a
        b.mlp = nn.Module()
        b.mlp.c_fc, b.mlp.c_proj = weight(r * d, d), weight(d, r * d)
        if cfg["embed_shortcut"]:
            b.lambdas = nn.Parameter(torch.empty(2))
        return b

    gpt = nn.Module()
    ve = ref.embed_vocab(cfg)
    if style == "r8":
        gpt.transformer = nn.ModuleDict({"wte": weight(ve, d),
                                         "h": nn.ModuleList(block(i) for i in range(L))})
    else:
        gpt.embed = weight(ve, d)
        if cfg["value_embeds"]:
            gpt.value_embeds = nn.Module()  # class ValueEmbedding: self.embed = nn.ModuleList
            gpt.value_embeds.embed = nn.ModuleList(weight(ve, d)
                                                   for _ in range(cfg["value_embeds"]))
        gpt.blocks = nn.ModuleList(block(i) for i in range(L))
    if cfg["unet_skips"]:
        gpt.skip_weights = nn.Parameter(torch.empty(L // 2))
    if not cfg["tie_embeddings"]:
        gpt.lm_head = weight(cfg["vocab_size"], d)
    return gpt


CONFIGS = {
    "r8_names": {},
    "r9_names": ref.VARIANTS["r9_like"],
    "r11_names_bf16": {"embed_shortcut": True, "unet_skips": True, "value_residual": True,
                       "param_dtype.embed": "bf16", "param_dtype.scalar": "bf16"},
    "r18_names": {"value_embeds": 2, "skip_attn_layers": [1], "doc_masking": True,
                  "embed_shortcut": True, "unet_skips": True, "param_dtype.embed": "bf16"},
    "r20_names": ref.VARIANTS["all_on"],
}


class WeightsRoundTrip(unittest.TestCase):
    def run_cpp(self, *args):
        p = subprocess.run([BIN, "run", *args], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)

    def check(self, name, overrides):
        cfg = ref.canonical(overrides)
        d = os.path.join(WORK, name)
        shutil.rmtree(d, ignore_errors=True)
        T = cfg["seq_len"]
        ref.make_state(cfg, cfg["device_batch_tokens"] // T, T, 1, 99, os.path.join(d, "state"))
        ref.run_state(os.path.join(d, "state"), os.path.join(d, "ref"), False)
        cfg, P, tokens, _ = ref.load_state(os.path.join(d, "state"), torch.float32)

        # torch -> ablate
        w = os.path.join(d, "from_torch.safetensors")
        safetensors_io.save_file(record_state_dict(cfg, P), w, {"format": "pt"})
        self.run_cpp("--state", os.path.join(d, "state"), "--weights", w,
                     "--out", os.path.join(d, "cpp_from_torch"))
        ok, lines = ref.compare(os.path.join(d, "cpp_from_torch"), os.path.join(d, "ref"),
                                1e-4, 1e-3, 1e-8)
        self.assertTrue(ok, "\n".join(lines))

        # ablate -> torch
        w2 = os.path.join(d, "from_ablate.safetensors")
        self.run_cpp("--state", os.path.join(d, "state"), "--save-weights", w2,
                     "--out", os.path.join(d, "cpp"))
        loaded, meta = safetensors_io.load_file(w2)
        want = record_state_dict(cfg, P)
        self.assertEqual(sorted(loaded), sorted(want))
        record_module(cfg).load_state_dict(loaded, strict=True)  # names and shapes
        for k, t in want.items():
            self.assertEqual(loaded[k].dtype, t.dtype, k)
            self.assertEqual(tuple(loaded[k].shape), tuple(t.shape), k)
            self.assertTrue(torch.equal(loaded[k], t), k)
        inverse = {record_name(cfg, n): n for n, _, _ in ref.param_specs(cfg)}
        P2 = {inverse[k]: v.float().reshape(P[inverse[k]].shape) for k, v in loaded.items()}
        logits = ref.forward(cfg, P2, tokens[0, :, :-1], 0)
        import numpy as np
        cpp = torch.from_numpy(np.fromfile(os.path.join(d, "cpp", "logits.f32"), np.float32))
        err = ref.rel_error(logits.reshape(-1).double(), cpp.double(), 1e-8)
        self.assertLess(err, 1e-4, name)

    def test_every_naming(self):
        for name, overrides in CONFIGS.items():
            with self.subTest(name):
                self.check(name, overrides)


if __name__ == "__main__":
    BIN, WORK = sys.argv[1], sys.argv[2]
    os.makedirs(WORK, exist_ok=True)
    unittest.main(argv=sys.argv[:1], verbosity=2)

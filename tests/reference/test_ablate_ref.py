#!/usr/bin/python3
"""Self-tests of the PyTorch reference (tests/reference/ablate_ref.py) that need no C++ side:
Newton–Schulz output, window schedules and masks against record-presets.md's worked examples,
LR and momentum schedules at the records' key steps, autograd against finite differences in
float64 for every parity config, the bf16 stream's rounding against genuine torch.bfloat16
tensors, and the make-state / run / compare command line.

Run with Debian's /usr/bin/python3 (python3-torch). Exits 77 (ctest SKIP_RETURN_CODE) when
torch is missing.
"""

import copy
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    print("SKIP: torch is not importable by this python (apt-get install python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ablate_ref as ref  # noqa: E402

torch.set_num_threads(1)
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ablate_ref.py")


def record_cfg(**overrides):
    cfg = dict(ref.KNOB_DEFAULTS)
    cfg.update(overrides)
    return cfg


R18 = record_cfg(num_iterations=1390, cooldown_frac=0.4, attn_window="sliding",
                 **{"window.start_tokens": 128.0, "window.end_tokens": 1856.0})
R20 = record_cfg(num_iterations=1393, cooldown_frac=0.4, lr_floor=0.1, attn_window="sliding",
                 long_short_windows=True, **{"window.start_tokens": 0.0,
                                             "window.end_tokens": 1728.0,
                                             "window.rounding": "ceil"})


class NewtonSchulzTest(unittest.TestCase):
    def test_singular_values_in_band(self):
        gen = torch.Generator().manual_seed(0)
        for rows, cols in [(32, 32), (64, 32), (32, 128)]:
            g = torch.randn(rows, cols, generator=gen)
            x = ref.newton_schulz(g, 5, ref.KNOB_DEFAULTS["muon.ns_coeffs"])
            self.assertEqual(x.shape, g.shape)
            s = torch.linalg.svdvals(x)
            # README: NS5 lands singular values in about [0.68, 1.13].
            self.assertGreater(s.min().item(), 0.6, (rows, cols))
            self.assertLess(s.max().item(), 1.2, (rows, cols))

    def test_singular_vectors_kept(self):
        g = torch.randn(16, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        x = ref.newton_schulz(g, 5, ref.KNOB_DEFAULTS["muon.ns_coeffs"])
        u, _, vh = torch.linalg.svd(g)
        inner = torch.diag(u.T @ x @ vh.T)  # x = U S' Vᵀ with S' > 0
        self.assertTrue(bool((inner > 0.5).all()))


class WindowTest(unittest.TestCase):
    def test_r20_long_blocks(self):
        self.assertEqual(ref.long_window_blocks(R20, 0), 1)
        self.assertEqual(ref.long_window_blocks(R20, 103), 1)
        self.assertEqual(ref.long_window_blocks(R20, 104), 2)
        self.assertEqual(ref.long_window_blocks(R20, 1392), 14)

    def test_r18_blocks(self):
        self.assertEqual(ref.long_window_blocks(R18, 0), 1)
        self.assertEqual(ref.long_window_blocks(R18, 1389), 14)

    def test_r20_layer_pattern(self):
        pattern = "".join("L" if ref.layer_is_long(R20, i) else "S" for i in range(12))
        self.assertEqual(pattern, "LSSSLSSLSSSL")

    def test_r20_short_is_diagonal_block_early(self):
        self.assertEqual(ref.layer_window_blocks(R20, 0, 1), 1)  # long//2 = 0 -> diagonal only
        self.assertEqual(ref.layer_window_blocks(R20, 1392, 1), 7)
        self.assertEqual(ref.layer_window_blocks(R20, 1392, 0), 14)

    def test_mask_rules_by_hand(self):
        cfg = record_cfg(attn_window="sliding", doc_masking=True, bos_token=9,
                         num_iterations=10, **{"window.block_tokens": 4,
                                               "window.start_tokens": 8.0,
                                               "window.end_tokens": 8.0})
        idx = torch.tensor([[1, 2, 3, 4, 5, 9, 6, 7, 8, 1, 2, 3]])
        m = ref.attention_mask(cfg, idx, 0, 0)[0]
        for t in range(12):
            for s in range(12):
                doc_t = sum(1 for j in range(t + 1) if idx[0, j] == 9)
                doc_s = sum(1 for j in range(s + 1) if idx[0, j] == 9)
                want = s <= t and doc_s == doc_t and s // 4 >= t // 4 - 2 + 1
                self.assertEqual(bool(m[t, s]), want, (t, s))
        self.assertTrue(bool(m[5, 5]) and not bool(m[5, 4]))  # BOS opens the new document
        self.assertFalse(bool(m[11, 3]))  # three blocks back, outside n = 2

    def test_full_causal_without_window(self):
        m = ref.attention_mask(record_cfg(), torch.zeros(1, 6, dtype=torch.long), 0, 0)[0]
        self.assertTrue(torch.equal(m, torch.tril(torch.ones(6, 6, dtype=torch.bool))))


class ScheduleTest(unittest.TestCase):
    def test_r9_trapezoid(self):
        cfg = record_cfg(num_iterations=3200, warmdown_iters=914)
        self.assertEqual(ref.lr_multiplier(cfg, 0), 1.0)
        self.assertEqual(ref.lr_multiplier(cfg, 2285), 1.0)
        self.assertAlmostEqual(ref.lr_multiplier(cfg, 2286), 1.0)
        self.assertAlmostEqual(ref.lr_multiplier(cfg, 2743), 457 / 914)
        self.assertAlmostEqual(ref.lr_multiplier(cfg, 3199), 1 / 914)

    def test_warmup(self):
        cfg = record_cfg(num_iterations=100, warmup_iters=10, warmdown_iters=0)
        self.assertAlmostEqual(ref.lr_multiplier(cfg, 0), 0.1)
        self.assertAlmostEqual(ref.lr_multiplier(cfg, 9), 1.0)

    def test_r18_cooldown(self):
        self.assertEqual(ref.lr_multiplier(R18, 0), 1.0)
        self.assertAlmostEqual(ref.lr_multiplier(R18, 834), 1.0)
        self.assertAlmostEqual(ref.lr_multiplier(R18, 1112), (1 - 1112 / 1390) / 0.4)
        self.assertAlmostEqual(ref.lr_multiplier(R18, 1389), (1 / 1390) / 0.4)  # ~0.0018

    def test_r20_floor(self):
        w = (1 / 1393) / 0.4
        self.assertAlmostEqual(ref.lr_multiplier(R20, 1392), w + (1 - w) * 0.1)
        self.assertGreater(ref.lr_multiplier(R20, 1392), 0.1)

    def test_momentum_warmup(self):
        cfg = record_cfg(**{"muon.momentum_warmup_steps": 500})
        self.assertAlmostEqual(ref.muon_momentum(cfg, 0), 0.85)
        self.assertAlmostEqual(ref.muon_momentum(cfg, 250), 0.90)
        self.assertAlmostEqual(ref.muon_momentum(cfg, 900), 0.95)
        self.assertEqual(ref.muon_momentum(record_cfg(), 0), 0.95)


class MomentumFormTest(unittest.TestCase):
    """sum (r8-r11) and lerp (r15+) buffers differ by the factor 1-μ, which Newton-Schulz's
    normalisation removes while μ is constant; while μ warms up the factor changes per step."""

    def run_form(self, form, momenta):
        cfg = record_cfg(**{"muon.momentum_form": form})
        gen = torch.Generator().manual_seed(7)
        p = torch.randn(8, 12, generator=gen)
        muon = ref.Muon(cfg, [("w", p)])
        for mu in momenta:
            p.grad = torch.randn(8, 12, generator=gen)
            muon.step(0.02, mu)
        return p

    def test_equal_at_constant_momentum(self):
        a, b = self.run_form("sum", [0.95] * 5), self.run_form("lerp", [0.95] * 5)
        self.assertTrue(torch.allclose(a, b, atol=1e-5), (a - b).abs().max())

    def test_differ_while_momentum_warms_up(self):
        warm = [0.85, 0.87, 0.89, 0.91, 0.93]
        a, b = self.run_form("sum", warm), self.run_form("lerp", warm)
        self.assertGreater(float((a - b).abs().max()), 1e-3)


def tiny(cfg):
    """The parity config made smaller still, so finite differences stay quick."""
    cfg = copy.deepcopy(cfg)
    cfg.update({"model_dim": 16, "head_dim": 8, "seq_len": 16, "vocab_size": 24, "bos_token": 23,
                "mlp_ratio": 2})
    if cfg["attn_window"] == "sliding":
        cfg.update({"window.block_tokens": 4, "window.end_tokens": 16.0})
    return ref.check_config(cfg)


class GradientTest(unittest.TestCase):
    def check_config_grads(self, name, cfg, entries=3):
        gen = torch.Generator().manual_seed(7)
        params = {k: v.double().requires_grad_(True) for k, v in ref.random_params(cfg, gen).items()}
        tokens = torch.randint(0, cfg["vocab_size"], (2, cfg["seq_len"] + 1), generator=gen)
        tokens[torch.rand(tokens.shape, generator=gen) < 0.15] = cfg["bos_token"]
        step = cfg["num_iterations"] // 2

        def loss():
            return ref.loss_fn(ref.forward(cfg, params, tokens[:, :-1], step), tokens[:, 1:])

        loss().backward()
        h = 1e-6
        with torch.no_grad():
            for pname, p in params.items():
                flat, grad = p.view(-1), p.grad.view(-1)
                picks = torch.randint(0, flat.numel(), (entries,), generator=gen)
                for j in picks.tolist():
                    keep = flat[j].item()
                    flat[j] = keep + h
                    up = loss().item()
                    flat[j] = keep - h
                    down = loss().item()
                    flat[j] = keep
                    fd = (up - down) / (2 * h)
                    self.assertLess(abs(fd - grad[j].item()), 1e-6 + 1e-5 * abs(fd),
                                    f"{name}: {pname}[{j}] autograd {grad[j].item()} fd {fd}")

    def test_every_parity_config(self):
        # A bf16 stream is piecewise constant between bf16 values, so finite differences see its
        # steps; its graph is checked with an fp32 stream here and its rounding in Bf16StreamTest.
        for name, overrides in sorted(ref.VARIANTS.items()):
            with self.subTest(config=name):
                cfg = tiny(ref.canonical({**overrides, "activation_dtype": "fp32"}))
                self.check_config_grads(name, cfg)


class Bf16StreamTest(unittest.TestCase):
    """activation_dtype bf16: the rounded fp32 tensors hold exactly what torch's bf16 tensors
    hold in the records' arrangement, and gradients pass the roundings unchanged."""

    BF16_VARIANTS = sorted(n for n, o in ref.VARIANTS.items() if o.get("activation_dtype") == "bf16")

    def test_parity_configs_cover_the_bf16_records(self):
        self.assertGreaterEqual(set(self.BF16_VARIANTS),
                                {"r11_like_bf16", "r18_like_bf16", "r20_like_bf16"})

    def test_rounding_is_torch_bf16_tensors(self):
        for name in self.BF16_VARIANTS:
            with self.subTest(config=name):
                cfg = ref.canonical(ref.VARIANTS[name])
                gen = torch.Generator().manual_seed(3)
                P = ref.random_params(cfg, gen)
                idx = torch.randint(0, cfg["vocab_size"], (2, cfg["seq_len"]), generator=gen)
                step = cfg["num_iterations"] // 2
                with torch.no_grad():
                    emulated = ref.forward(cfg, P, idx, step)
                    genuine = ref.forward(cfg, P, idx, step, stream=ref.Stream(cfg, genuine=True))
                    fp32 = ref.forward(cfg, P, idx, step,
                                       stream=ref.Stream({"activation_dtype": "fp32"}))
                self.assertTrue(torch.equal(emulated, genuine), name)
                self.assertFalse(torch.equal(emulated, fp32), name)

    def test_gradients_pass_straight_through(self):
        x = torch.tensor([1.0 + 2.0**-10, 3.0], requires_grad=True)
        y = ref._RoundBf16.apply(x)
        self.assertEqual(y.tolist(), [1.0, 3.0])
        (y * torch.tensor([2.0, 5.0])).sum().backward()
        self.assertEqual(x.grad.tolist(), [2.0, 5.0])


class ConfigTest(unittest.TestCase):
    def test_configs_are_canonical_and_distinct(self):
        with tempfile.TemporaryDirectory() as d:
            names = ref.write_configs(d)
            seen = set()
            for n in names:
                with open(os.path.join(d, n + ".json")) as f:
                    cfg = json.load(f)
                self.assertEqual(set(cfg), set(ref.KNOB_DEFAULTS), n)
                ref.check_config(cfg)
                seen.add(json.dumps(cfg, sort_keys=True))
            self.assertEqual(len(seen), len(names))

    def test_missing_knob_fails_loudly(self):
        cfg = ref.canonical({})
        del cfg["qk_norm"]
        with self.assertRaisesRegex(ref.ConfigError, "qk_norm"):
            ref.check_config(cfg)
        cfg = ref.canonical({})
        cfg["qk_nrom"] = True
        with self.assertRaisesRegex(ref.ConfigError, "qk_nrom"):
            ref.check_config(cfg)


class CommandLineTest(unittest.TestCase):
    def cli(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_make_state_run_compare(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(self.cli("configs", "--out", d + "/cfg").returncode, 0)
            r = self.cli("make-state", "--config", d + "/cfg/all_on.json", "--B", "2", "--T",
                         "32", "--steps", "3", "--seed", "5", "--out", d + "/state")
            self.assertEqual(r.returncode, 0, r.stderr)
            for out in ("a", "b"):
                r = self.cli("run", "--state", d + "/state", "--out", f"{d}/{out}", "--train")
                self.assertEqual(r.returncode, 0, r.stderr)
            with open(d + "/a/result.json") as f:
                res = json.load(f)
            self.assertEqual(len(res["losses"]), 3)
            self.assertEqual(res["losses"][0], res["loss"])
            self.assertTrue(os.path.exists(d + "/a/grads/blocks.0.attn.qkv.weight.f32"))
            self.assertEqual(os.path.getsize(d + "/a/logits.f32"), 2 * 32 * 64 * 4)
            r = self.cli("compare", d + "/a", d + "/b")
            self.assertEqual(r.returncode, 0, r.stdout)
            # A perturbed gradient is reported by name.
            path = d + "/a/grads/embed.weight.f32"
            g = torch.from_numpy(__import__("numpy").fromfile(path, dtype="float32"))
            (g * 1.01).numpy().tofile(path)
            r = self.cli("compare", d + "/a", d + "/b")
            self.assertEqual(r.returncode, 1)
            self.assertIn("FAIL grad embed.weight", r.stdout)

    def test_no_trivially_zero_gradient(self):
        cfg = ref.canonical(ref.VARIANTS["all_on"])
        gen = torch.Generator().manual_seed(3)
        params = {k: v.requires_grad_(True) for k, v in ref.random_params(cfg, gen).items()}
        tokens = torch.randint(0, 63, (2, 33), generator=gen)
        ref.loss_fn(ref.forward(cfg, params, tokens[:, :-1], 5), tokens[:, 1:]).backward()
        for name, p in params.items():
            self.assertGreater(p.grad.norm().item(), 0, name)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Records as data (issue 39), as a user runs it: logs in the records' format written by
examples/records/write_record_logs.py, `ablate verify-record` checked against scipy, and
`ablate import` into a real coordinator (its SQLite file read back directly).

Usage: records_test.py (env ABLATE_BIN, ABLATE_COORDINATOR_BIN, ABLATE_SOURCE_DIR)
"""
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from scipy import stats

ABLATE = os.environ["ABLATE_BIN"]
WRITER = os.path.join(os.environ["ABLATE_SOURCE_DIR"], "examples", "records", "write_record_logs.py")


def write_logs(out_dir, **flags):
    args = [sys.executable, WRITER, out_dir]
    for k, v in flags.items():
        args += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()


def lines_of(path):
    with open(path) as f:
        return f.read().split("\n")


def final_of(path):
    """(final val loss, its train_time in ms), read here with a regex, not by ablate."""
    last = None
    for line in lines_of(path):
        m = re.match(r"step:(\d+)/(\d+) val_loss:(\S+) .*train_time:([0-9.]+)(ms|s) ", line)
        if m and m.group(1) == m.group(2):
            last = (float(m.group(3)), float(m.group(4)) * (1 if m.group(5) == "ms" else 1000))
    return last


def ablate(*args, env=None):
    return subprocess.run([ABLATE] + list(args), capture_output=True, text=True, env=env,
                          timeout=120)


class VerifyRecordTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.new = write_logs(d + "/new", runs=5, final_loss=3.2768, loss_sd=0.0012,
                             ms_per_step=100.6, ms_sd=0.25, seed=11, era="2026")
        cls.old = write_logs(d + "/old", runs=4, final_loss=3.2785, loss_sd=0.0015,
                             ms_per_step=101.3, ms_sd=0.25, seed=12, era="2025",
                             script="import os\n# the previous record\n")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def verify(self, *args):
        r = ablate("verify-record", "--json", *args)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        return r.returncode, json.loads(r.stdout)

    def test_statistics_match_scipy(self):
        code, rep = self.verify(*self.new, "--previous", *self.old)
        losses = [final_of(p)[0] for p in self.new]
        new_t = [final_of(p)[1] for p in self.new]
        old_t = [final_of(p)[1] for p in self.old]
        one = stats.ttest_1samp(losses, 3.28, alternative="less")
        self.assertEqual(rep["loss"]["n"], 5)
        self.assertAlmostEqual(rep["loss"]["mean"], sum(losses) / 5, places=12)
        self.assertAlmostEqual(rep["loss"]["test"]["t"], one.statistic, places=9)
        self.assertAlmostEqual(rep["loss"]["test"]["p_value"], one.pvalue, places=9)
        welch = stats.ttest_ind(new_t, old_t, equal_var=False)
        prev = rep["previous"]
        self.assertAlmostEqual(prev["welch"]["t"], welch.statistic, places=9)
        self.assertAlmostEqual(prev["welch"]["p_value"], welch.pvalue, places=9)
        diff = sum(new_t) / 5 - sum(old_t) / 4
        self.assertAlmostEqual(prev["difference_ms"], diff, places=6)
        se = math.sqrt(stats.tvar(new_t) / 5 + stats.tvar(old_t) / 4)
        df = prev["welch"]["df"]
        half = stats.t.ppf(0.975, df) * se
        self.assertAlmostEqual(prev["ci_low_ms"], diff - half, places=6)
        self.assertAlmostEqual(prev["ci_high_ms"], diff + half, places=6)
        t = rep["train_time_ms"]
        self.assertAlmostEqual(t["mean"], sum(new_t) / 5, places=6)
        self.assertAlmostEqual(t["stddev"], stats.tstd(new_t), places=6)
        self.assertEqual(t["min"], min(new_t))
        self.assertEqual(t["max"], max(new_t))
        # The rule as the speedrun states it, decided here from scipy's numbers.
        want = one.pvalue < 0.01 and diff < 0
        self.assertEqual(rep["passes"], want, rep["reasons"])
        self.assertEqual(code, 0 if want else 1)
        self.assertTrue(want, "the logs were written to pass; a failure here is in the writer")

    def test_a_mean_above_the_target_fails(self):
        d = self.tmp.name + "/high"
        logs = write_logs(d, runs=4, final_loss=3.2810, loss_sd=0.0005, seed=3)
        code, rep = self.verify(*logs)
        self.assertEqual(code, 1)
        self.assertFalse(rep["loss"]["passes"])
        self.assertTrue(any("not below 3.2800" in r for r in rep["reasons"]), rep["reasons"])
        text = ablate("verify-record", *logs)
        self.assertEqual(text.returncode, 1)
        self.assertIn("verdict: FAILS the record rule", text.stdout)

    def test_other_hardware_or_scripts_or_steps_fail(self):
        d = self.tmp.name
        a100 = write_logs(d + "/a100", runs=3, final_loss=3.2785, ms_per_step=150, seed=5,
                          gpu_name="NVIDIA A100-SXM4-80GB")
        code, rep = self.verify(*self.new, "--previous", *a100)
        self.assertEqual(code, 1)
        self.assertFalse(rep["previous"]["same_hardware"])
        self.assertTrue(any("same hardware" in r for r in rep["reasons"]), rep["reasons"])
        mixed = self.new[:3] + self.old[:2]
        code, rep = self.verify(*mixed)
        self.assertEqual(code, 1)
        self.assertFalse(rep["same_script"])
        self.assertTrue(any("2 different scripts" in r for r in rep["reasons"]), rep["reasons"])
        short = write_logs(d + "/short", runs=2, steps=1700, seed=11)
        code, rep = self.verify(*self.new, *short)
        self.assertFalse(rep["same_steps"])
        self.assertEqual(rep["steps"], [1750, 1700])

    def test_every_era_and_seconds_are_read(self):
        d = self.tmp.name
        for era in ("2024", "2025", "2026"):
            logs = write_logs(d + "/era" + era, runs=3, era=era, seed=21, final_loss=3.2760,
                              loss_sd=0.0005)
            code, rep = self.verify(*logs)
            self.assertEqual(code, 0, rep["reasons"])
            for log, got in zip(logs, rep["logs"]):
                loss, ms = final_of(log)
                self.assertEqual(got["final_val_loss"], loss)
                self.assertAlmostEqual(got["train_time_ms"], ms, places=6)
                timed = 1750 - (10 if era in ("2024", "2025") else 0)
                self.assertAlmostEqual(got["mean_step_ms"], ms / timed, places=9)
        sec = write_logs(d + "/sec", runs=2, seconds=True, decimals=6, seed=4)
        code, rep = self.verify(*sec)
        self.assertAlmostEqual(rep["logs"][0]["train_time_ms"], final_of(sec[0])[1], places=6)

    def test_bad_logs_are_named_by_file_and_line(self):
        d = self.tmp.name
        want = {"truncated": "is not a key:value field", "out-of-order": "steps out of order",
                "nan-val": "val_loss 'nan' is not a finite number",
                "no-final-val": "a truncated log?", "two-runs": "a second run in the same file"}
        for defect, phrase in want.items():
            (log,) = write_logs(d + "/bad-" + defect, runs=1, defect=defect, seed=9)
            r = ablate("verify-record", *self.new, log)
            self.assertEqual(r.returncode, 3, defect)
            self.assertRegex(r.stderr, re.escape(log) + r":\d+: ")
            self.assertIn(phrase, r.stderr)
        with open(d + "/notalog.txt", "w") as f:
            f.write("hello\n")
        r = ablate("verify-record", d + "/notalog.txt")
        self.assertEqual(r.returncode, 3)
        self.assertIn("notalog.txt: not a modded-nanogpt record log", r.stderr)


class Coordinator:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.log = open(os.path.join(data_dir, "coordinator.log"), "w")
        port_file = os.path.join(data_dir, "port")
        self.proc = subprocess.Popen(
            [os.environ["ABLATE_COORDINATOR_BIN"], "--listen", "127.0.0.1:0", "--data-dir",
             data_dir, "--port-file", port_file, "--http", "off"],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(1000):
            if os.path.exists(port_file) and lines_of(port_file)[0].strip():
                break
            time.sleep(0.02)
        self.env = dict(os.environ, ABLATE_SERVER="127.0.0.1:" + lines_of(port_file)[0].strip())
        self.env.pop("ABLATE_TOKEN", None)
        self.env.pop("ABLATE_TOKEN_FILE", None)

    def db(self):
        return sqlite3.connect(os.path.join(self.data_dir, "ablate.db"))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


class ImportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        os.makedirs(cls.tmp.name + "/data")
        cls.c = Coordinator(cls.tmp.name + "/data")

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        cls.tmp.cleanup()

    def run_ablate(self, *args):
        return ablate(*args, env=self.c.env)

    def sweep_count(self):
        with self.c.db() as db:
            return db.execute("SELECT COUNT(*) FROM sweeps").fetchone()[0]

    def test_import_stores_every_point_and_marks_the_runs(self):
        d = self.tmp.name + "/2025-01-16_Sub3Min"
        logs = write_logs(d, runs=3, era="2024", seed=31)
        r = self.run_ablate("import", *logs, "--name", "r20")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hardware not said", r.stdout)
        self.assertIn("2025-01-16_Sub3Min", r.stdout, "the folder names the variant")
        r = self.run_ablate("--json", "import", *logs, "--name", "r20b", "--hardware",
                            "8x NVIDIA H100 80GB HBM3", "--variant", "r20")
        self.assertEqual(r.returncode, 0, r.stderr)
        resp = json.loads(r.stdout)
        sweep = resp["sweep"]
        self.assertTrue(sweep["imported"])
        self.assertEqual(sweep["imported_hardware"], "8x NVIDIA H100 80GB HBM3")
        self.assertEqual(sweep["state"], "SWEEP_SUCCEEDED")
        self.assertEqual(len(resp["runs"]), 3)
        with self.c.db() as db:
            for log, run in zip(logs, resp["runs"]):
                loss, ms = final_of(log)
                self.assertEqual(run["variant_name"], "r20")
                self.assertEqual(run["worker_id"], "imported")
                self.assertEqual(run["imported"]["file_name"], log)
                self.assertEqual(run["imported"]["logged_hardware"], "8x NVIDIA H100 80GB HBM3")
                self.assertEqual(run["imported"]["timed_from_step"], "10")
                self.assertEqual(run["summary"]["final_val_loss"], loss)
                self.assertEqual(run["summary"]["train_time_ms"], ms)
                steps = {int(m.group(1)) for m in
                         (re.match(r"step:(\d+)/", l) for l in lines_of(log)) if m}
                (n, vals) = db.execute(
                    "SELECT COUNT(*), COUNT(val_loss) FROM metrics WHERE run_id = ?",
                    (int(run["id"]),)).fetchone()
                self.assertEqual(n, len(steps), "one point per step of the log")
                self.assertEqual(vals, sum(1 for l in lines_of(log) if "val_loss:" in l))
                (script,) = db.execute(
                    "SELECT content FROM code_snapshot_files WHERE hash = ?",
                    (run["imported"]["script_hash"],)).fetchone()
                script = script if isinstance(script, str) else script.decode()
                self.assertTrue("\n".join(lines_of(log)).startswith("=" * 100 + "\n" + script))
        # The runs table says where they ran.
        r = self.run_ablate("runs", "--sweep", sweep["id"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("imported", r.stdout)
        # Export and compare say where they ran.
        r = self.run_ablate("export", sweep["id"], "--format", "jsonl")
        self.assertEqual(r.returncode, 0, r.stderr)
        exported = [json.loads(l) for l in r.stdout.splitlines()]
        self.assertEqual([e["imported"]["file_name"] for e in exported], logs)
        r = self.run_ablate("compare", sweep["id"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("imported (imported: 8x NVIDIA H100 80GB HBM3): 3 runs", r.stdout)
        # verify-record against the imported sweep gives what it gives against the files.
        new = write_logs(self.tmp.name + "/new", runs=4, final_loss=3.2765, loss_sd=0.0008,
                         ms_per_step=100.0, seed=32)
        by_sweep = self.run_ablate("verify-record", "--json", *new, "--previous-sweep",
                                   sweep["id"] + "/r20")
        by_files = self.run_ablate("verify-record", "--json", *new, "--previous", *logs)
        self.assertEqual(by_sweep.returncode, by_files.returncode, by_sweep.stderr)
        a, b = json.loads(by_sweep.stdout)["previous"], json.loads(by_files.stdout)["previous"]
        self.assertAlmostEqual(a["welch"]["p_value"], b["welch"]["p_value"], places=12)
        self.assertEqual(a["same_hardware"], b["same_hardware"])

    def test_decompose_starts_from_record_logs(self):
        """Two records' logs, as files or imported, give the same decomposition as their
        scripts."""
        examples = os.path.join(os.environ["ABLATE_SOURCE_DIR"], "examples", "decompose")
        logs = []
        for name in ("from", "to"):
            with open(os.path.join(examples, name + ".py")) as f:
                (log,) = write_logs(self.tmp.name + "/dec-" + name, runs=1, script=f.read())
            logs.append(log)
        base = os.path.join(examples, "base.yaml")
        by_logs = self.run_ablate("decompose", *logs, "--spec", base, "--dry-run")
        by_scripts = self.run_ablate("decompose", os.path.join(examples, "from.py"),
                                     os.path.join(examples, "to.py"), "--spec", base, "--dry-run")
        self.assertEqual(by_logs.returncode, 0, by_logs.stderr)
        self.assertIn("FROM -> TO: 5 changes", by_logs.stdout)
        table = lambda out: out.split("\n\n")[0]
        self.assertEqual(table(by_logs.stdout), table(by_scripts.stdout))
        (bad,) = write_logs(self.tmp.name + "/dec-bad", runs=1, defect="two-runs")
        r = self.run_ablate("decompose", bad, logs[1], "--spec", base, "--dry-run")
        self.assertEqual(r.returncode, 3)
        self.assertIn("a second run in the same file", r.stderr)
        # The same from the records once imported: the scripts come back from their snapshots.
        r = self.run_ablate("--json", "import", logs[0], "--variant", "old")
        self.assertEqual(r.returncode, 0, r.stderr)
        old = json.loads(r.stdout)["sweep"]["id"]
        r = self.run_ablate("--json", "import", logs[1], "--variant", "new")
        self.assertEqual(r.returncode, 0, r.stderr)
        new = json.loads(r.stdout)["sweep"]["id"]
        by_sweeps = self.run_ablate("decompose", "sweep:%s/old" % old, "sweep:" + new,
                                    "--spec", base, "--dry-run")
        self.assertEqual(by_sweeps.returncode, 0, by_sweeps.stderr)
        self.assertEqual(table(by_sweeps.stdout), table(by_scripts.stdout))
        # Wrong references are named, with an exit status that says which.
        for ref, code, phrase in (("sweep:%s/nope" % old, 4, "has no variant 'nope' (it has old)"),
                                  ("sweep:999999", 4, "sweep 999999"),
                                  ("sweep:x1", 3, "is not sweep:ID or sweep:ID/VARIANT")):
            r = self.run_ablate("decompose", ref, "sweep:" + new, "--spec", base, "--dry-run")
            self.assertEqual(r.returncode, code, r.stderr)
            self.assertIn(phrase, r.stderr)

    def test_a_bad_log_stores_nothing_unless_skip_bad(self):
        d = self.tmp.name
        good = write_logs(d + "/good", runs=2, seed=41)
        (bad,) = write_logs(d + "/badrun", runs=1, seed=42, defect="nan-val")
        before = self.sweep_count()
        r = self.run_ablate("import", *good, bad)
        self.assertEqual(r.returncode, 3)
        self.assertIn("1 of 3 logs cannot be imported, so none was stored", r.stderr)
        self.assertRegex(r.stderr, re.escape(bad) + r":\d+: val_loss 'nan'")
        self.assertEqual(self.sweep_count(), before)
        r = self.run_ablate("import", *good, bad, "--skip-bad")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("left out (--skip-bad)", r.stdout)
        self.assertEqual(self.sweep_count(), before + 1)
        r = self.run_ablate("import", good[0], good[0])
        self.assertEqual(r.returncode, 3)
        self.assertIn("the same bytes as another log", r.stderr)
        r = self.run_ablate("import", good[0], "--variant", "no spaces")
        self.assertEqual(r.returncode, 3)
        self.assertIn("is not 1 to 64 of [A-Za-z0-9._-]", r.stderr)
        r = self.run_ablate("import", "--dry-run", *good)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dry run, nothing stored", r.stdout)
        self.assertEqual(self.sweep_count(), before + 1)


if __name__ == "__main__":
    unittest.main()

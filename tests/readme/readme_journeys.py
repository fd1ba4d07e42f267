#!/usr/bin/env python3
"""Runs the README's journeys (issues 23, 40): every ```sh block of README.md and of the guide's
pages (docs/*.md, in the order README.md's guide table lists them) that a user is told to run, in
that order, as written, in a fresh working folder whose `build` is this build tree and
whose `examples` are the source tree's, with HOME a fresh folder (so `ablate up` starts on a fresh
data dir under ~/.local/share/ablate).

What the README marks, in an HTML comment on the line before a block:
  <!-- journey: skip "REASON" -->          the block is not run here (cluster commands, package
                                           installs, downloads); the reason is printed
  <!-- journey: expect "TEXT" 'TEXT' -->   run it, and its output must hold each TEXT
  <!-- journey: file PATH -->              (a yaml block) must equal the source tree's PATH
An unmarked ```sh block is run. Each command line (with its `\\` continuations) must exit 0.
`build/cli/ablate up` (without --demo) runs in the background, from its block to the end, as a
user leaves it running in another terminal; the journey waits until it serves. So does a command
line ending in ` &` (a second coordinator, say): when it names `--listen HOST:PORT`, the journey
waits until that port accepts. Both get SIGINT at the end, as Ctrl-C would.

Usage: readme_journeys.py SOURCE_DIR BUILD_DIR [--python PYTHON]
"""
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^<!--\s*journey:\s*(skip|expect|file)\s*(.*?)\s*-->\s*$")
COMMAND_TIMEOUT_S = 900


def blocks(readme_text):
    """(language, first line number, lines, marker or None) for each fenced block."""
    lines = readme_text.split("\n")
    out, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        before = lines[start - 2] if start >= 2 else ""
        m = MARK.match(before)
        out.append((fence.group(1), start + 1, body, (m.group(1), m.group(2)) if m else None))
        i += 1
    return out


def guide(source):
    """README.md, then the docs pages in the order the README's guide table lists them. Every
    docs/*.md must be listed there: a page a reader cannot reach is a page nobody checks."""
    with open(os.path.join(source, "README.md")) as f:
        readme = f.read()
    listed = re.findall(r"^\|\s*\[[^\]]+\]\((docs/[\w.-]+\.md)\)", readme, re.M)
    docs = os.path.join(source, "docs")
    present = sorted(f"docs/{n}" for n in os.listdir(docs) if n.endswith(".md")) \
        if os.path.isdir(docs) else []
    unlisted = [p for p in present if p not in listed]
    missing = [p for p in listed if p not in present]
    if unlisted or missing or len(set(listed)) != len(listed):
        raise ValueError(f"README.md's guide table: pages not listed {unlisted}, listed but "
                         f"missing {missing}, listed twice "
                         f"{sorted({p for p in listed if listed.count(p) > 1})}")
    return ["README.md"] + listed


def commands(body):
    """The command lines of a shell block: continuations joined, comment-only lines dropped."""
    out, current = [], ""
    for line in body:
        current += line
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        if current.strip() and not current.strip().startswith("#"):
            out.append(current.strip())
        current = ""
    return out


def is_up(command):
    words = shlex.split(command, comments=True)
    return words[:2] == ["build/cli/ablate", "up"] and "--demo" not in words


class Journey:
    def __init__(self, source, build, python):
        self.source, self.build = source, build
        self.root = tempfile.mkdtemp(prefix="readme-journey-")
        self.cwd = os.path.join(self.root, "work")
        self.home = os.path.join(self.root, "home")
        os.makedirs(self.cwd)
        os.makedirs(self.home)
        os.symlink(build, os.path.join(self.cwd, "build"))
        os.symlink(os.path.join(source, "examples"), os.path.join(self.cwd, "examples"))
        os.symlink(os.path.join(source, "scripts"), os.path.join(self.cwd, "scripts"))
        self.env = dict(os.environ, HOME=self.home)
        self.env.pop("ABLATE_SERVER", None)
        if python:  # the interpreter with torch first on PATH, as on a Debian machine
            self.env["PATH"] = os.path.dirname(python) + ":" + self.env.get("PATH", "")
        self.up = None
        self.background = []  # (command, process, log path) of the ` &` lines
        self.failures = []

    def fail(self, where, what):
        self.failures.append(f"{where}: {what}")
        print(f"FAIL {where}: {what}", flush=True)

    def start_up(self, command, where):
        log = open(os.path.join(self.root, "up.log"), "w")
        # exec: the signal below reaches `ablate up` itself, not a shell around it.
        self.up = subprocess.Popen("exec " + command, shell=True, cwd=self.cwd, env=self.env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        server = os.path.join(self.home, ".local/share/ablate/server")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.up.poll() is None:
            if os.path.exists(server):
                print(f"  (in the background) {command}", flush=True)
                return
            time.sleep(0.1)
        self.fail(where, f"`{command}` did not start serving: " + self.up_log())

    def start_background(self, command, where):
        command = command[:-1].rstrip()
        log_path = os.path.join(self.root, f"background-{len(self.background)}.log")
        log = open(log_path, "w")
        proc = subprocess.Popen("exec " + command, shell=True, cwd=self.cwd, env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.background.append((command, proc, log_path))
        print(f"  (in the background) {command}", flush=True)
        words = shlex.split(command, comments=True)
        if "--listen" not in words[:-1]:
            return
        host, _, port = words[words.index("--listen") + 1].rpartition(":")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection((host, int(port)), 1).close()
                return
            except OSError:
                time.sleep(0.1)
        with open(log_path) as f:
            self.fail(where, f"`{command}` did not listen on {host}:{port}: " + f.read()[-3000:])

    def up_log(self):
        with open(os.path.join(self.root, "up.log")) as f:
            return f.read()[-3000:]

    def run_block(self, body, where, expect):
        output = ""
        for command in commands(body):
            if is_up(command):
                self.start_up(command, where)
                continue
            if command.endswith("&") and not command.endswith("&&"):
                self.start_background(command, where)
                continue
            print(f"  $ {command}", flush=True)
            started = time.monotonic()
            try:
                r = subprocess.run(["/bin/bash", "-c", command], cwd=self.cwd, env=self.env,
                                   capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.fail(where, f"`{command}` ran over {COMMAND_TIMEOUT_S} s")
                return
            output += r.stdout + r.stderr
            print(f"    exit {r.returncode} after {time.monotonic() - started:.1f} s", flush=True)
            if r.returncode != 0:
                self.fail(where, f"`{command}` exited {r.returncode}:\n{r.stdout[-2000:]}"
                                 f"\n{r.stderr[-2000:]}")
                return
        for text in expect:
            if text not in output:
                self.fail(where, f"the output does not show {text!r}:\n{output[-3000:]}")

    def stop(self):
        for command, proc, log_path in reversed(self.background):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    self.fail("background", f"`{command}` did not stop within 30 s of Ctrl-C")
        if self.up and self.up.poll() is None:
            os.killpg(self.up.pid, signal.SIGINT)  # Ctrl-C, as the README says
            try:
                self.up.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.up.pid, signal.SIGKILL)
                self.fail("ablate up", "did not stop within 30 s of Ctrl-C (SIGINT)")
            if self.up.returncode not in (0, None):
                self.fail("ablate up", f"exited {self.up.returncode}: " + self.up_log())


def main():
    args = sys.argv[1:]
    python = None
    if "--python" in args:
        at = args.index("--python")
        python = args[at + 1]
        del args[at:at + 2]
    source, build = (os.path.abspath(a) for a in args)
    try:
        pages = guide(source)
    except ValueError as e:
        print(f"FAIL {e}")
        return 1
    journey = Journey(source, build, python)
    ran = skipped = 0
    try:
        for page, language, line, body, mark in (
                (page, *b) for page in pages
                for b in blocks(open(os.path.join(source, page)).read())):
            where = f"{page}:{line}"
            kind, arg = mark if mark else ("", "")
            if kind == "file":
                with open(os.path.join(source, arg)) as f:
                    if f.read().rstrip("\n") != "\n".join(body).rstrip("\n"):
                        journey.fail(where, f"the block differs from {arg}")
                continue
            if language != "sh":
                continue
            if kind == "skip":
                if not arg.strip('"').strip():
                    journey.fail(where, "a skipped block needs its reason")
                print(f"SKIP {where}: {arg}", flush=True)
                skipped += 1
                continue
            print(f"RUN  {where}", flush=True)
            expect = [a or b for a, b in re.findall(r'"([^"]*)"|\'([^\']*)\'', arg)]
            journey.run_block(body, where, expect if kind == "expect" else [])
            ran += 1
    finally:
        journey.stop()
    print(f"{ran} blocks run, {skipped} skipped, {len(journey.failures)} failures")
    return 1 if journey.failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks that the map of rooms in docs/architecture.md (the table between <!-- rooms: begin --> and
<!-- rooms: end -->, top of the house first) is true of the source tree:

  1. every folder holding code belongs to a room of the map (a folder under a room that has
     rooms of its own, such as server/ or common/, must be listed itself);
  2. a room includes only rooms below it in the table, never one above it;
  3. there are no include cycles between rooms;
  4. nothing under worker/ or cli/ includes server/ (what they share lives in common/).

Includes are the quoted ones (#include "server/store/store.h") that name a file of the tree. Tests
and benchmarks (tests/, bench/) are checks, not rooms: they may include anything.
Usage: check_rooms.py SOURCE_ROOT. Exit 0 when all hold; else 1, naming every offending include.
check_rooms.py --self-test: runs the checks on small made-up trees, one per rule, and fails unless
each finds what it must (and a clean tree passes).
"""
import os
import re
import sys

CODE = re.compile(r"\.(h|hpp|cc|cpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
NOT_ROOMS = ("tests/", "bench/", "build", "web/", "examples/", "migrations/", "deploy/", "scripts/")


def read_map(readme):
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"<!-- rooms: begin -->(.*?)<!-- rooms: end -->", text, re.S)
    if not m:
        sys.exit("check_rooms: docs/architecture.md has no <!-- rooms: begin --> ... <!-- rooms: end -->")
    rooms = re.findall(r"^\|\s*`([^`]+/)`\s*\|", m.group(1), re.M)
    if len(rooms) < 2 or len(set(rooms)) != len(rooms):
        sys.exit(f"check_rooms: the map (docs/architecture.md) lists no rooms, or one twice: {rooms}")
    return rooms  # top first


MAP = "docs/architecture.md"


def room_of(path, rooms):
    """The longest listed room that holds `path`; None when none does."""
    best = None
    for r in rooms:
        if path.startswith(r) and (best is None or len(r) > len(best)):
            best = r
    return best


def code_files(root):
    for top in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, top)) or top.startswith("."):
            continue
        if (top + "/").startswith(NOT_ROOMS):
            continue
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d != "node_modules" and not d.startswith(".")]
            for name in sorted(filenames):
                if CODE.search(name):
                    yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")


def find_cycle(edges):
    """One cycle of the room graph as a list of rooms, or None."""
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if state.get(nxt) is None:
                found = visit(nxt, stack)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if state.get(node) is None:
            found = visit(node, [])
            if found:
                return found
    return None


def check(root):
    rooms = read_map(os.path.join(root, MAP))
    rank = {r: i for i, r in enumerate(rooms)}  # smaller = higher in the house
    parents = {r for r in rooms if any(o != r and o.startswith(r) for o in rooms)}
    problems = {"unmapped": set(), "upward": [], "server": []}
    edges = {}
    for path in code_files(root):
        src = room_of(path, rooms)
        folder = path.rsplit("/", 1)[0] + "/"
        if src is None or (src in parents and folder != src):
            problems["unmapped"].add(folder)
            continue
        for lineno, line in enumerate(open(os.path.join(root, path), encoding="utf-8",
                                           errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m or not os.path.isfile(os.path.join(root, m.group(1))):
                continue
            inc = m.group(1)
            dst = room_of(inc, rooms)
            where = f"{path}:{lineno}: #include \"{inc}\""
            if src.split("/")[0] in ("worker", "cli") and inc.startswith("server/"):
                problems["server"].append(where)
            if dst is None or dst == src:
                continue
            edges.setdefault(src, set()).add(dst)
            if rank[dst] < rank[src]:
                problems["upward"].append(f"{where} ({src} includes {dst}, a room above it)")
    failed = False
    if problems["unmapped"]:
        failed = True
        print("Folders with code that the map (docs/architecture.md) does not list (add them to the table):")
        for f in sorted(problems["unmapped"]):
            print("  " + f)
    if problems["upward"]:
        failed = True
        print("Includes of a room above the includer (the map's order, top first: "
              + " ".join(rooms) + "):")
        for p in problems["upward"]:
            print("  " + p)
    cycle = find_cycle(edges)
    if cycle:
        failed = True
        print("An include cycle between rooms: " + " -> ".join(cycle))
    if problems["server"]:
        failed = True
        print("Files under worker/ or cli/ that include server/ (move what they share to common/):")
        for p in problems["server"]:
            print("  " + p)
    if not failed:
        print(f"rooms map holds: {len(rooms)} rooms, "
              f"{sum(len(v) for v in edges.values())} include edges between them, no cycle")
    return 1 if failed else 0


def self_test():
    import contextlib
    import io
    import tempfile

    table = ("<!-- rooms: begin -->\n| room | owns |\n|-|-|\n| `cli/` | a |\n| `server/` | b |\n"
             "| `server/a/` | c |\n| `server/b/` | d |\n| `common/` | e |\n<!-- rooms: end -->\n")
    cases = {
        "clean": ({"server/a/x.h": "server/b/y.h", "server/b/y.h": "common/z.h",
                   "cli/c.cc": "common/z.h", "common/z.h": None}, None),
        "upward": ({"common/z.h": "server/b/y.h", "server/b/y.h": None}, "a room above it"),
        "same room": ({"server/b/y.h": "server/b/w.h", "server/b/w.h": None}, None),
        "server": ({"cli/c.cc": "server/b/y.h", "server/b/y.h": None}, "include server/"),
        "unmapped": ({"server/new/n.h": None}, "does not list"),
    }
    failures = []
    for name, (files, expect) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "docs"), exist_ok=True)
            open(os.path.join(root, MAP), "w").write(table)
            for path, inc in files.items():
                os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
                with open(os.path.join(root, path), "w") as f:
                    f.write(f'#include "{inc}"\n' if inc else "// leaf\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = check(root)
            if (expect is None) != (rc == 0) or (expect and expect not in out.getvalue()):
                failures.append(f"{name}: rc {rc}, output:\n{out.getvalue()}")
    # A real cycle needs two rooms including each other, which rule 2 also reports; check the
    # cycle finder on its own.
    if find_cycle({"a/": {"b/"}, "b/": {"a/"}}) != ["a/", "b/", "a/"]:
        failures.append("find_cycle missed a/ -> b/ -> a/")
    for f in failures:
        print("self-test failed: " + f)
    print("self-test: " + ("FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_rooms.py SOURCE_ROOT | --self-test")
    sys.exit(self_test() if sys.argv[1] == "--self-test" else check(sys.argv[1]))

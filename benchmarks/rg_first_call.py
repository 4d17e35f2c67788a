"""The first glob/grep of a fresh process: rg's version asked, or remembered.

    .venv/bin/python benchmarks/rg_first_call.py [--rounds 9] [--tree PATH]

Each round starts fresh interpreters (a server just spawned) that import the search
engine, find rg and run one glob and one grep on a small tree, timing those two calls
(the import is the same for all and left out). Variants, interleaved, order rotated:
- "asked": an empty state folder, so `rg --version` runs (what every start paid before
  `search.rg_versions`);
- "remembered": the state folder of an earlier run, so the version is read from it;
- floor: the same glob and grep as raw rg subprocesses from the same interpreter.
Medians of wall time; Markdown out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from machine import describe

CHILD = r"""
import json, subprocess, sys, time
from local_tools.search.engine import get_engine
from local_tools.search.glob_match import PathGlob
from local_tools.search.results import glob_files, grep_lines
from local_tools.search.ripgrep import WALK_FLAGS, find_rg
from local_tools.search.scope import Query, scope_in
root, mode = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if mode == "floor":
    rg = sys.argv[3]
    subprocess.run([rg, "--files", "--null", *WALK_FLAGS, "--glob", "**/*.py"], cwd=root,
                   capture_output=True)
    t1 = time.perf_counter()
    subprocess.run([rg, "--line-number", "--heading", "--null", *WALK_FLAGS, "def test_"],
                   cwd=root, capture_output=True)
else:
    scope = scope_in(root)
    glob_files(get_engine(), scope, PathGlob("**/*.py"))
    t1 = time.perf_counter()
    grep_lines(get_engine(), scope, Query("def test_"))
t2 = time.perf_counter()
print(json.dumps([(t1 - t0) * 1000, (t2 - t1) * 1000]))
"""


def child(root: Path, mode: str, state: Path, rg: str) -> list[float]:
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), mode, rg],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    times: list[float] = json.loads(out)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--tree", type=Path, help="default: the everyday tree of corpus.py")
    opts = parser.parse_args()
    from corpus import default_cache, everyday_root
    from local_tools.search.ripgrep import find_rg

    root = opts.tree or everyday_root(default_cache())
    if root is None:
        raise SystemExit("no everyday tree: run benchmarks/corpus.py, or pass --tree")
    found = find_rg()
    if found is None:
        raise SystemExit("no usable rg")
    work = Path(tempfile.mkdtemp(prefix="lt-bench-rgfirst-"))
    warm = work / "warm"
    try:
        child(root, "remembered", warm, found.path)  # fills `warm`; warms the page cache
        samples: dict[str, list[list[float]]] = {"asked": [], "remembered": [], "floor": []}
        order = list(samples)
        for r in range(opts.rounds):
            for name in order[r % 3 :] + order[: r % 3]:
                cold = work / f"cold-{r}"
                state = cold if name == "asked" else warm
                samples[name].append(child(root, name, state, found.path))
                shutil.rmtree(cold, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("# First glob and grep of a fresh process")
    print()
    print(f"- machine: {describe()}")
    print(f"- rg {found.version_text} ({found.path}); tree {root}")
    print(f"- {opts.rounds} rounds, interleaved, medians (wall ms)")
    print()
    print("| variant | first glob ms | then grep ms |")
    print("|---|--:|--:|")
    for name, runs in samples.items():
        glob = statistics.median(t[0] for t in runs)
        grep = statistics.median(t[1] for t in runs)
        label = {"asked": "tool, `rg --version` asked (before)", "floor": "raw rg (floor)"}
        print(
            f"| {label.get(name, 'tool, version remembered (after)')} | {glob:.1f} | {grep:.1f} |"
        )


if __name__ == "__main__":
    main()

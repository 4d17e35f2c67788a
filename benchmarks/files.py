"""File tools against plain Python: edit on a 100k-line file, read_file deep in a 1 GB file.

Each measurement runs in a fresh subprocess so its peak RSS is its own; variants are
interleaved round by round and the table shows medians. Baselines:
- edit: `str.replace` on the text read into memory, written back (what a careless
  tool would do, without any of the checks);
- read: `itertools.islice` over the open file to the same line.

    python benchmarks/files.py [--rounds 5] [--gb 1.0] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from machine import describe

LINES_100K = 100_000

# Each snippet runs in its own interpreter: prepare, measure, print JSON.
SNIPPETS = {
    "edit exact (tool)": """
from local_tools import Toolbox
tb = Toolbox(WS, state_dir=STATE, audit=False)
t = now()
env = tb.run("edit", {"path": "big.py", "old_string": "    value_25000 = 25000\\n",
                      "new_string": "    value_25000 = -1\\n"})
elapsed = now() - t
assert env["success"], env
""",
    "edit tolerant (tool)": """
from local_tools import Toolbox
tb = Toolbox(WS, state_dir=STATE, audit=False)
t = now()
env = tb.run("edit", {"path": "big.py", "old_string": "value_25000 = 25000   \\n",
                      "new_string": "value_25000 = -1\\n"})
elapsed = now() - t
assert env["success"] and env["output"]["strategy"] != "exact", env
""",
    "edit baseline (str.replace)": """
t = now()
path = WS + "/big.py"
text = open(path, encoding="utf-8").read()
text = text.replace("    value_25000 = 25000\\n", "    value_25000 = -1\\n", 1)
open(path, "w", encoding="utf-8").write(text)
elapsed = now() - t
""",
    "read_file deep offset (tool)": """
from local_tools import Toolbox
tb = Toolbox(BIGDIR, state_dir=STATE, audit=False)
t = now()
env = tb.run("read_file", {"path": "huge.log", "offset": DEEP, "limit": 10})
elapsed = now() - t
assert env["success"] and env["output"]["content"].startswith(f"row {DEEP - 1:09d}"), env
""",
    "read baseline (islice)": """
from itertools import islice
t = now()
with open(BIGDIR + "/huge.log", "rb") as f:
    lines = list(islice(f, DEEP - 1, DEEP - 1 + 10))
elapsed = now() - t
assert lines[0].startswith(f"row {DEEP - 1:09d}".encode())
""",
}

PRELUDE = """
import json, resource, sys, time
now = time.perf_counter
WS, STATE, BIGDIR, DEEP = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import local_tools  # same imports for every variant, so RSS deltas compare
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""
POSTLUDE = """
rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"s": elapsed, "rss_mb": rss_after / 1024,
                  "rss_delta_mb": (rss_after - rss_before) / 1024}))
"""


def make_source(path: Path) -> None:
    lines = []
    for i in range(LINES_100K // 2):
        lines.append(f"def function_{i}():\n    value_{i} = {i}\n")
    path.write_text("".join(lines)[:-1] + "\n", encoding="utf-8")


def make_huge(path: Path, gigabytes: float) -> int:
    """A log of fixed-width rows; returns its line count."""
    row = 64
    count = int(gigabytes * 2**30) // row
    if path.exists() and path.stat().st_size == count * row:
        return count
    with path.open("wb") as f:
        for start in range(0, count, 100_000):
            f.write(
                b"".join(
                    f"row {i:09d} {'x' * (row - 15)}\n".encode()
                    for i in range(start, min(start + 100_000, count))
                )
            )
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "lt-bench-files"))
    opts = parser.parse_args()

    cache = Path(opts.cache)
    bigdir = cache / "big"
    bigdir.mkdir(parents=True, exist_ok=True)
    total = make_huge(bigdir / "huge.log", opts.gb)
    deep = total - 1000
    work = Path(tempfile.mkdtemp(prefix="lt-bench-files-"))
    state = work / "state"
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in SNIPPETS}
    for _ in range(opts.rounds):
        for name, body in SNIPPETS.items():
            ws = work / "ws"
            ws.mkdir(exist_ok=True)
            make_source(ws / "big.py")  # fresh file each time: edits change it
            code = PRELUDE + body + POSTLUDE
            proc = subprocess.run(
                [sys.executable, "-c", code, str(ws), str(state), str(bigdir), str(deep)],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed:\n{proc.stderr}")
            samples[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))

    size_gb = (bigdir / "huge.log").stat().st_size / 2**30
    print(f"# File tools vs plain Python — {describe()}")
    print(
        f"# {opts.rounds} rounds; edit on a {LINES_100K}-line file; read at line {deep:,} "
        f"of a {size_gb:.2f} GB file ({total:,} lines)"
    )
    print(f"{'variant':<30} {'median s':>10} {'peak RSS MB':>12} {'RSS growth MB':>14}")
    medians: dict[str, float] = {}
    for name, runs in samples.items():
        medians[name] = statistics.median(r["s"] for r in runs)
        rss = statistics.median(r["rss_mb"] for r in runs)
        grow = statistics.median(r["rss_delta_mb"] for r in runs)
        print(f"{name:<30} {medians[name]:>10.4f} {rss:>12.1f} {grow:>14.1f}")
    exact, tolerant = medians["edit exact (tool)"], medians["edit tolerant (tool)"]
    deep_read = medians["read_file deep offset (tool)"] / medians["read baseline (islice)"]
    print(
        f"tolerant / exact edit: {tolerant / exact:.2f}x (target < 10x); "
        f"exact edit / str.replace: {exact / medians['edit baseline (str.replace)']:.2f}x; "
        f"deep read / islice: {deep_read:.2f}x"
    )


if __name__ == "__main__":
    main()

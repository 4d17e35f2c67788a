"""A benchmark run against an older source tree and this one, interleaved, in one run.

    .venv/bin/python benchmarks/before_after.py --before DIR [--times 3] -- exec.py --rounds 1

DIR holds the older `src/` (e.g. `git archive HEAD src | tar -x -C DIR`). The benchmark
script (a file in benchmarks/, this tree's version for both) runs `--times` times with
`PYTHONPATH=DIR/src` and as many times with this tree, alternately, so both see the
same machine; each run prints its Markdown tables. Rows are matched by their text
cells; each number is the median over the runs of each side, printed before → after.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def _shape(cell: str) -> str:
    """The cell with its numbers blanked: what matches it across runs."""
    return _NUMBER.sub("#", cell)


def _tables(text: str) -> dict[tuple[str, ...], list[str]]:
    """Each table row by its header and the shape of its cells; the cells as printed."""
    rows: dict[tuple[str, ...], list[str]] = {}
    header: tuple[str, ...] = ()
    for line in text.splitlines():
        if not line.startswith("|"):
            header = ()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = tuple(cells)
            continue
        if set("".join(cells)) <= set("-:"):
            continue
        rows[(*header, *map(_shape, cells))] = cells
    return rows


def _median_cells(runs: list[list[str]]) -> list[str]:
    """Per cell: as printed when every run printed the same, else each number's median
    (with as many decimals as the runs printed)."""
    out = []
    for column in zip(*runs, strict=True):
        if len(set(column)) == 1:
            out.append(column[0])
            continue
        numbers = [_NUMBER.findall(c) for c in column]
        medians = iter(
            f"{statistics.median(float(v) for v in values):{_format(values)}}"
            for values in zip(*numbers, strict=True)
        )
        out.append(_NUMBER.sub(lambda _, m=medians: next(m), column[0]))
    return out


def _format(values: tuple[str, ...]) -> str:
    sign = "+" if any(v.startswith("+") for v in values) else ""
    return f"{sign}.{max(len(v.partition('.')[2]) for v in values)}f"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, type=Path)
    parser.add_argument("--times", type=int, default=3)
    parser.add_argument("script", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    script = [a for a in opts.script if a != "--"]
    before_src = (opts.before / "src").resolve()
    sides = {"before": before_src, "after": HERE.parent / "src"}
    runs: dict[str, list[dict[tuple[str, ...], list[str]]]] = {s: [] for s in sides}
    for n in range(opts.times):
        order = list(sides) if n % 2 == 0 else list(reversed(sides))
        for side in order:
            env = {**os.environ, "PYTHONPATH": str(sides[side])}
            done = subprocess.run(
                [sys.executable, str(HERE / script[0]), *script[1:]],
                capture_output=True, text=True, env=env, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"{side}: {done.stderr[-3000:]}")
            if n == 0 and side == "after":
                print("\n".join(line for line in done.stdout.splitlines()[:3]))
            runs[side].append(_tables(done.stdout))
    print(f"\n{script[0]} {' '.join(script[1:])}: before = {before_src}, after = this tree; "
          f"{opts.times} runs each, alternated; medians, before → after\n")  # fmt: skip
    last: tuple[str, ...] = ()
    for key in runs["after"][0]:
        if not all(key in r for side in runs.values() for r in side):
            continue
        before = _median_cells([r[key] for r in runs["before"]])
        after = _median_cells([r[key] for r in runs["after"]])
        header = key[: len(before)]
        if header != last:
            print(f"\n| {' | '.join(header)} |\n|{'---|' * len(header)}")
            last = header
        cells = [a if a == b else f"{b} → {a}" for b, a in zip(before, after, strict=True)]
        print(f"| {' | '.join(cells)} |")


if __name__ == "__main__":
    main()

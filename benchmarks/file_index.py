"""FileIndex (the `GET /files?q=` autocomplete) on a generated 100k-file tree.

    python benchmarks/file_index.py [--files 100000] [--rounds 5] [--reps 40]

The tree (nested folders, code-like names, a .gitignore, a node_modules that is skipped)
is generated once under the temp folder and reused. Figures:
- cold: a fresh FileIndex's first search, which lists the tree (page cache warm),
  split into the walk (`list_files`, rg or the Python fallback) and building the index;
- warm: every query `reps` times per round, queries interleaved, p50/p99 in ms, with the
  listing fresh (no refresh running);
- warm, re-indexing: the same on an index with ttl 0 while a file at the root appears and
  disappears every 200 ms, so the background thread walks and rebuilds back to back (the
  worst case: the build competes with the searches for the GIL);
- rules 1-2 of the ranking (substring in the name, then in the path) by `str.find` over
  the joined blobs, and by a Python loop over per-path casefolded strings (the design
  choice; FileIndex also merges matching folders' files for rule 2, not shown here).
Output is Markdown.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from local_tools.search.engine import get_engine
from local_tools.search.file_index import FileIndex
from local_tools.search.file_ranking import Snapshot, _substring
from local_tools.search.listing import list_files
from machine import describe

DEFAULT_TREE = os.path.join(tempfile.gettempdir(), "lt-bench-file-index")
QUERIES = [
    "a",  # 1-3 characters: the most matches, the first keystrokes
    "e",
    "x",
    "ut",
    "te",
    "idx",
    "src",
    "btn",
    "user/serv",  # across folders
    "authcontrol",  # fuzzy: few substring matches
    "index.ts",
    "zqxj",  # nothing: every pass scans everything
]

WORDS = (
    "user auth config button modal index utils api client server router store hooks "
    "service model view controller handler parser types schema table list item card form "
    "input select query cache session token login profile settings admin dashboard chart "
    "graph node edge event stream queue worker job task report export import upload "
    "download image video audio player theme style layout header footer sidebar menu nav "
    "search filter sort page grid row column cell editor preview render format date time"
).split()
EXTS = ["ts", "tsx", "js", "py", "go", "md", "json", "css", "test.ts", "spec.tsx", "rs", "yaml"]
TOPS = ["src", "packages", "tests", "docs", "scripts", "assets", "tools", "lib", "app", "config"]


def _name(rng: random.Random) -> str:
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    style = rng.randrange(4)
    stem = (f"{a}_{b}", f"{a}{b.capitalize()}", f"{a}-{b}", f"{a.capitalize()}{b.capitalize()}")[
        style
    ]
    return f"{stem}.{rng.choice(EXTS)}"


def build_tree(root: Path, count: int) -> Path:
    marker = root / ".complete"
    if marker.exists():
        return root
    rng = random.Random(7)
    dirs = [root / top for top in TOPS]
    while len(dirs) < count // 14:
        parent = rng.choice(dirs)
        if len(parent.relative_to(root).parts) < 8:
            word = rng.choice(WORDS)
            dirs.append(parent / (word if rng.random() < 0.6 else f"{word}-{rng.choice(WORDS)}"))
    made: set[Path] = set()
    while len(made) < count:
        made.add(rng.choice(dirs) / _name(rng))
    for folder in {p.parent for p in made}:
        folder.mkdir(parents=True, exist_ok=True)
    for path in made:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    skipped = root / "node_modules"  # listed by nobody: pruned by the walk
    for i in range(2000):
        folder = skipped / f"pkg{i % 200}" / "dist"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"index{i}.js").touch()
    (root / ".gitignore").write_text("*.log\ncoverage/\n")
    (root / "coverage").mkdir(exist_ok=True)
    (root / "coverage" / "lcov.info").touch()
    marker.touch()
    return root


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def time_calls(fn: Callable[[], object], reps: int, cpu: list[float] | None = None) -> list[float]:
    """Wall ms of each call; with `cpu`, this thread's CPU ms of each call too."""
    out = []
    for _ in range(reps):
        c = time.thread_time()
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
        if cpu is not None:
            cpu.append((time.thread_time() - c) * 1e3)
    return out


def list_scan(lower: list[str], blower: list[str], q: str, limit: int) -> list[int]:
    """Rules 1-2 as a Python loop over per-path strings (the alternative to the blobs)."""
    found = []
    for i, name in enumerate(blower):
        if q in name:
            found.append(i)
            if len(found) >= limit:
                return found
    seen = set(found)
    for i, path in enumerate(lower):
        if q in path and i not in seen:
            found.append(i)
            if len(found) >= limit:
                break
    return found


def blob_scan(snap: Snapshot, q: str, limit: int) -> list[int]:
    """Rules 1-2 by `str.find` over the path and name blobs (no folder merge)."""
    found = _substring(snap.bblob, snap.bstarts, q, limit, ())
    if len(found) < limit:
        found += _substring(snap.blob, snap.starts, q, limit - len(found), set(found))
    return found


def toggling(path: Path, stop: threading.Event) -> None:
    """Create and delete a file now and then, so that every refresh re-indexes."""
    while not stop.wait(0.2):
        if path.exists():
            path.unlink()
        else:
            path.touch()
    path.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument(
        "--tree", default=os.path.join(tempfile.gettempdir(), "lt-bench-file-index")
    )
    opts = parser.parse_args()
    root = build_tree(Path(opts.tree) / str(opts.files), opts.files)

    walk, build, cold = [], [], []
    listed: list[str] = []
    for _ in range(opts.rounds):
        t = time.perf_counter()
        listed = [p for block in list_files(root) for p in block]
        walk.append(time.perf_counter() - t)
        t = time.perf_counter()
        Snapshot(list(listed), listed_at=0.0)
        build.append(time.perf_counter() - t)
        with FileIndex(root, first_wait=600, ttl=3600) as ix:
            t = time.perf_counter()
            ix.search("")
            cold.append(time.perf_counter() - t)
    tracemalloc.start()
    kept = Snapshot(list(listed), listed_at=0.0)
    memory = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    del kept

    fresh: dict[str, list[float]] = {q: [] for q in QUERIES}
    fresh_cpu: dict[str, list[float]] = {q: [] for q in QUERIES}
    busy: dict[str, list[float]] = {q: [] for q in QUERIES}
    results: dict[str, int] = {}
    stop = threading.Event()
    toggler = threading.Thread(target=toggling, args=(root / "_bench_toggle.txt", stop))
    with (
        FileIndex(root, first_wait=600, ttl=3600, min_refresh=3600) as ix,
        FileIndex(root, first_wait=600, ttl=0, min_refresh=0) as churn,
    ):
        ix.search("")
        churn.search("")
        for q in QUERIES:
            results[q] = len(ix.search(q))
        gc.collect()
        toggler.start()
        try:
            for r in range(opts.rounds):
                order = QUERIES[r % len(QUERIES) :] + QUERIES[: r % len(QUERIES)]
                for q in order:
                    fresh[q] += time_calls(lambda q=q: ix.search(q), opts.reps, fresh_cpu[q])
                    busy[q] += time_calls(lambda q=q: churn.search(q), opts.reps)
        finally:
            stop.set()
            toggler.join()
        snap = ix._snapshot
        assert snap is not None

    lower = [("/" + p).casefold() for p in snap.paths]
    blower = [line[line.rfind("/") :] for line in lower]
    scan_blob: dict[str, list[float]] = {q: [] for q in QUERIES}
    scan_list: dict[str, list[float]] = {q: [] for q in QUERIES}
    reps = max(1, opts.reps // 4)
    for q in QUERIES:
        assert blob_scan(snap, q, 50) == list_scan(lower, blower, q, 50), q
        for _ in range(opts.rounds):
            scan_blob[q] += time_calls(lambda q=q: blob_scan(snap, q, 50), reps)
            scan_list[q] += time_calls(lambda q=q: list_scan(lower, blower, q, 50), reps)

    def ms(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1e3:.0f} ms"

    print(f"FileIndex on {len(listed):,} files — {describe()}")
    print(f"engine: {get_engine().describe()}; tree: {root}")
    print(f"{opts.rounds} rounds × {opts.reps} calls per query; cold figures are medians\n")
    print("| cold: first search | walk (list_files) | index build | total | index memory |")
    print("|---|--:|--:|--:|--:|")
    print(f"| median | {ms(walk)} | {ms(build)} | {ms(cold)} | {memory:.0f} MB |\n")
    print("Times in ms; CPU is the searching thread's own (time.thread_time), without the")
    print("waits a shared machine adds to wall times.\n")
    print(
        "| query | results | p50 | p99 | p99 CPU | re-indexing p50 | re-indexing p99 "
        "| rules 1-2 by str.find p50 | by a loop p50 |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    all_fresh, all_cpu, all_busy = [], [], []
    for q in QUERIES:
        all_fresh += fresh[q]
        all_cpu += fresh_cpu[q]
        all_busy += busy[q]
        print(
            f"| `{q}` | {results[q]} | {pct(fresh[q], 0.5):.3f} | {pct(fresh[q], 0.99):.3f} "
            f"| {pct(fresh_cpu[q], 0.99):.3f} "
            f"| {pct(busy[q], 0.5):.3f} | {pct(busy[q], 0.99):.3f} "
            f"| {pct(scan_blob[q], 0.5):.3f} | {pct(scan_list[q], 0.5):.3f} |"
        )
    print(
        f"| **all** | | {pct(all_fresh, 0.5):.3f} | {pct(all_fresh, 0.99):.3f} "
        f"| {pct(all_cpu, 0.99):.3f} | {pct(all_busy, 0.5):.3f} | {pct(all_busy, 0.99):.3f} | | |"
    )


if __name__ == "__main__":
    main()

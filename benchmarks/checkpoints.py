"""Checkpoints (issue #24): what recording a call's changes adds to the call, and on disk.

    .venv/bin/python benchmarks/checkpoints.py [--quick] [--small N] [--large N] [--edits N]

The same calls through `Toolbox.run`, side by side, interleaved call by call (the order
rotates), with the sandbox as configured by default and language servers off (a .py
edit would otherwise wait for diagnostics, the same in every variant):
- `off`: `[checkpoints] enabled = false`, the baseline;
- `on`: the defaults (enabled, inotify watcher);
- `on, no watcher`: `watch = false`, commands only (edits snapshot named paths, no
  watcher involved): what the watcher saves.
Calls: `edit` of one line of a 20-line file; `exec_cmd true` (a built-in read-only
command: never checkpointed, the control); `exec_cmd :` (a no-op the built-in rules do
not know as read-only, allowed by a rule here: checkpointed, changes nothing); `exec_cmd
echo N > cp_bench_out.txt` (changes one file). Trees of 2,000 and 100,000 20-line .py
files in d*/s*/ folders, one copy per variant so no variant sees another's writes,
generated once under $TMPDIR/lt-bench-checkpoints/trees and reused; the state folders
are fresh each run. The first call of each kind is reported on its own (the first
command of `on` snapshots the whole tree) and left out of the median and p90.

Storage: on the large tree's `on` state, after the timed calls, N edits of one file (the
runner collects every 200 checkpoints in the background, as it does for everyone);
then `retention.collect` with the default keep_days and max_size_mb, timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from local_tools.checkpoints.gitstore import GitError
from local_tools.checkpoints.retention import collect, repo_size
from local_tools.checkpoints.store import Checkpoints
from local_tools.core.config_engines import CheckpointsConfig
from local_tools.security.sandbox import sandbox_engine
from local_tools.toolbox import Toolbox
from machine import describe

BASE = Path(tempfile.gettempdir()) / "lt-bench-checkpoints"
TARGET = "d0000/s0/f0.py"  # the file every edit changes
OUT = "cp_bench_out.txt"  # the file the changing command writes
EDIT_GOAL_MS = 10.0  # added per edit, both trees
COMMAND_GOAL_MS = 50.0  # added per checkpointed command, large tree, warm

OFF, ON, NO_WATCH = "off", "on", "on, no watcher"
VARIANTS: dict[str, dict[str, Any]] = {
    OFF: {"enabled": False},
    ON: {},
    NO_WATCH: {"watch": False},
}
COMMON: dict[str, Any] = {
    "lsp": {"enabled": False},
    "permissions": {"execute:command": {":": "allow", f"echo * > {OUT}": "allow"}},
}


def file_text(n: int) -> str:
    """Distinct content per file, so a full snapshot hashes and stores every one."""
    return "".join(f"v{i} = {n * 20 + i}\n" for i in range(20))


def make_tree(path: Path, files: int) -> None:
    """d0000/s0/f0.py ...: 10 files a subfolder, 10 subfolders a folder; reused when
    a previous run finished writing it."""
    marker = path.with_name(path.name + ".ok")
    if marker.exists() and marker.read_text() == str(files):
        return
    if path.exists():
        shutil.rmtree(path)
    for n in range(files):
        folder = path / f"d{n // 100:04d}" / f"s{n // 10 % 10}"
        if n % 10 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{n}.py").write_text(file_text(n), encoding="utf-8")
    marker.write_text(str(files))


@dataclass
class Runner:
    """One variant on its own copy of one tree."""

    variant: str
    ws: Path
    tb: Toolbox
    value: int = 7  # TARGET's line `v7 = value`, as the last edit left it
    counter: int = 0
    failures: list[str] = field(default_factory=list)

    def call(self, tool: str, args: dict[str, Any]) -> float:
        start = time.perf_counter()
        env = self.tb.run(tool, args)
        ms = (time.perf_counter() - start) * 1000
        out = env.get("output") or {}
        if not env["success"] or out.get("exit_code", 0) != 0:
            raise SystemExit(f"{self.variant}: {tool} {args} failed: {env}")
        if "checkpoint_note" in out:  # a snapshot failed: the figure would mean nothing
            raise SystemExit(f"{self.variant}: {tool}: {out['checkpoint_note']}")
        return ms

    def edit(self) -> float:
        self.counter += 1
        new = 1_000_000 + self.counter
        ms = self.call(
            "edit",
            {"path": TARGET, "old_string": f"v7 = {self.value}\n", "new_string": f"v7 = {new}\n"},
        )
        self.value = new
        return ms

    def store(self) -> Checkpoints | None:
        store = self.tb.runner.resources.peek("checkpoints")
        return store if isinstance(store, Checkpoints) else None


CALLS: dict[str, tuple[tuple[str, ...], Callable[[Runner], float]]] = {
    "exec_cmd true (not checkpointed)": (
        (OFF, ON, NO_WATCH),
        lambda r: r.call("exec_cmd", {"command": "true"}),
    ),
    "exec_cmd : (checkpointed no-op)": (
        (OFF, ON, NO_WATCH),
        lambda r: r.call("exec_cmd", {"command": ":"}),
    ),
    "exec_cmd echo N > file (one file)": (
        (OFF, ON, NO_WATCH),
        lambda r: r.call("exec_cmd", {"command": f"echo {time.time_ns()} > {OUT}"}),
    ),
    "edit one line": ((OFF, ON), Runner.edit),
}


@dataclass
class Row:
    tree: str
    call: str
    variant: str
    first: float
    samples: list[float]


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def open_runners(label: str, files: int, state: Path) -> dict[str, Runner]:
    runners: dict[str, Runner] = {}
    for variant, conf in VARIANTS.items():
        ws = BASE / "trees" / f"{label}-{variant.replace(', ', '-').replace(' ', '-')}"
        make_tree(ws, files)
        (ws / TARGET).write_text(file_text(0), encoding="utf-8")  # as generated
        (ws / OUT).unlink(missing_ok=True)
        config = {**COMMON, "checkpoints": conf}
        sd = state / ws.name
        sd.mkdir(parents=True)
        runners[variant] = Runner(variant, ws, Toolbox(ws, config, state_dir=sd))
    return runners


def measure(label: str, runners: dict[str, Runner], calls: int) -> list[Row]:
    rows: list[Row] = []
    for name, (variants, fn) in CALLS.items():
        samples: dict[str, list[float]] = {v: [] for v in variants}
        print(f"{label}: {name}", file=sys.stderr, flush=True)  # progress: cold calls are slow
        for i in range(calls + 1):
            k = i % len(variants)
            for v in variants[k:] + variants[:k]:
                samples[v].append(fn(runners[v]))
        for v in variants:
            rows.append(Row(label, name, v, samples[v][0], samples[v][1:]))
    return rows


def check_recorded(runners: dict[str, Runner], calls: int) -> str:
    """The `on` variants must have recorded each changing call (echo and edit)."""
    notes = []
    for v in (ON, NO_WATCH):
        store = runners[v].store()
        count = store.history.count() if store is not None else 0
        want = (calls + 1) * (2 if v == ON else 1)
        if count != want:
            raise SystemExit(f"{v}: {count} checkpoints recorded, {want} expected")
        notes.append(f"{v}: {count} checkpoints")
    store = runners[ON].store()
    trees = getattr(store, "_trees", {}) if store is not None else {}
    watchers = [getattr(t, "_watcher", None) for t in trees.values()]
    healthy = bool(watchers) and all(w is not None and w.healthy for w in watchers)
    notes.append("watcher healthy" if healthy else "WATCHER NOT RUNNING: `on` ran without")
    return ", ".join(notes)


def du_kb(path: Path) -> int:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def wait_for_background_collect() -> None:
    for t in threading.enumerate():
        if t.name == "checkpoints-gc":
            t.join()


def storage(runner: Runner, edits: int) -> list[str]:
    store = runner.store()
    assert store is not None
    folder = store.folder
    wait_for_background_collect()
    lines = [
        "| when | du of checkpoints/ | apparent size | checkpoints kept |",
        "|---|--:|--:|--:|",
    ]

    def line(when: str) -> None:
        kept = store.history.count()
        lines.append(f"| {when} | {du_kb(folder) / 1024:.1f} MB | "
                     f"{repo_size(store) / 2**20:.1f} MB | {kept} |")  # fmt: skip

    line("after the timed calls")
    first_id = store.history.count()
    start = time.perf_counter()
    for _ in range(edits):
        runner.edit()
    spent = time.perf_counter() - start
    wait_for_background_collect()
    last_id = first_id + edits
    runs = last_id // 200 - first_id // 200  # hook.COLLECT_EVERY
    line(f"after {edits} edits of one file ({spent:.1f} s, {spent / edits * 1000:.1f} ms "
         f"an edit; the runner collected {runs}x in the background)")  # fmt: skip
    lines.insert(0, missing_blobs(store))
    defaults = CheckpointsConfig()
    start = time.perf_counter()
    try:
        result = collect(store, keep_days=defaults.keep_days, max_size_mb=defaults.max_size_mb)
    except GitError as exc:  # a finding to print, not a reason to lose the tables
        line(f"retention.collect FAILED after {time.perf_counter() - start:.2f} s: {exc}")
    else:
        spent = time.perf_counter() - start
        line(f"after retention.collect: {spent:.2f} s, {result.dropped} dropped")
    return lines


def missing_blobs(store: Checkpoints) -> str:
    """Whether every blob the history names is still in the repository (a collection
    racing a snapshot could prune one)."""
    blobs = sorted(store.history.blobs())
    out = store.repo.run(["cat-file", "--batch-check"], stdin=("\n".join(blobs) + "\n").encode())
    missing = sum(1 for ln in out.decode().splitlines() if ln.endswith(" missing"))
    state = "MISSING: those checkpoints cannot be restored" if missing else "all present"
    return f"blobs the history needs: {len(blobs)}, {missing} {state}\n"


def goal(row: Row, added: float, large: bool) -> str:
    if row.variant != ON:
        return ""
    if row.call.startswith("edit"):
        limit = EDIT_GOAL_MS
    elif large and "not checkpointed" not in row.call:
        limit = COMMAND_GOAL_MS
    else:
        return ""
    return f"≤ {limit:.0f} ms " + ("met" if added <= limit else "MISSED")


def print_table(rows: list[Row], large_label: str) -> None:
    print("| tree | call | variant | first call | median | p90 | added, median | "
          "added, p90 | goal (added, median) |")  # fmt: skip
    print("|---|---|---|--:|--:|--:|--:|--:|---|")
    base = {(r.tree, r.call): r for r in rows if r.variant == OFF}
    for r in rows:
        med, high = statistics.median(r.samples), p90(r.samples)
        added = added_p90 = ""
        mark = ""
        if r.variant != OFF:
            b = base[(r.tree, r.call)]
            delta = med - statistics.median(b.samples)
            added = f"{delta:+.1f} ms"
            added_p90 = f"{high - p90(b.samples):+.1f} ms"
            mark = goal(r, delta, r.tree == large_label)
        first = f"{r.first / 1000:.1f} s" if r.first >= 1000 else f"{r.first:.1f} ms"
        print(f"| {r.tree} | {r.call} | {r.variant} | {first} | {med:.1f} ms | "
              f"{high:.1f} ms | {added} | {added_p90} | {mark} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer calls and edits")
    parser.add_argument("--small", type=int, help="calls per kind, 2,000 files (50)")
    parser.add_argument("--large", type=int, help="calls per kind, 100,000 files (20)")
    parser.add_argument("--edits", type=int, help="edits before collecting (1000)")
    opts = parser.parse_args()
    small = opts.small or (10 if opts.quick else 50)
    large = opts.large or (5 if opts.quick else 20)
    edits = opts.edits or (200 if opts.quick else 1000)
    trees = [("2,000 files", "t2k", 2_000, small), ("100,000 files", "t100k", 100_000, large)]
    state = BASE / "state"
    shutil.rmtree(state, ignore_errors=True)
    load = os.getloadavg()[0]
    engine = sandbox_engine()
    started = time.perf_counter()
    print(f"# Checkpoints: added time per call and storage — {describe()}")
    print(f"# sandbox: {engine.name}; load average at start {load:.2f}; "
          f"calls per kind: {small} (2,000 files), {large} (100,000 files), after one "
          f"first call", flush=True)  # fmt: skip
    for label, short, files, calls in trees:
        runners = open_runners(short, files, state)
        try:
            rows = measure(label, runners, calls)
            # Printed now: the storage step below can take minutes (or fail).
            print(f"\n# {label}: {check_recorded(runners, calls)}\n")
            print_table(rows, trees[-1][0])
            sys.stdout.flush()
            if files == trees[-1][2]:
                print(f"\nstorage, {label}, `on`:\n")
                print("\n".join(storage(runners[ON], edits)))
        finally:
            for r in runners.values():
                r.tb.close()
    shutil.rmtree(state, ignore_errors=True)
    print(f"\nrun took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

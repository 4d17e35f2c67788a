"""exec_cmd against the raw primitive, `subprocess.run(capture_output=True)`.

Every variant runs interleaved in one process, several rounds; the table gives the
median wall time per command and what exec_cmd adds on top of the primitive running
the same argv (`bash -c CMD`, and `bwrap ... bash -c CMD` for the sandbox). The
exec_cmd figures include everything a caller pays: argument validation, parsing the
command for approval, the policy check, the environment, the process's cgroup, the
reader thread, the envelope and the audit write.

Two workspaces: an empty folder, and an everyday project (a git repository with
its sample hooks, 150 folders of 8 files, a few `.env` files): what exec_cmd does
per command grows with the tree (the protected `.git` paths are snapshotted before
and checked after each command; under the sandbox the `.env` files are found and
hidden), the primitive's cost does not. "added" is the median over rounds of each
round's difference, so a round slowed by other work on the machine counts once.

Peak RSS is measured in a fresh interpreter per variant for 200 MB of output:
exec_cmd keeps head + tail in memory and spills the rest to a file;
subprocess.run holds all of it.

    python benchmarks/exec.py [--calls 40] [--rounds 5] [--phases]

`--phases` prints instead where exec_cmd's time goes for `true` on the everyday tree
(sandbox off and on, checkpoints on and off): perf_counter_ns around each step, in ms
per command, beside the whole call and `subprocess.run`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from local_tools import Toolbox
from local_tools.security.sandbox import sandbox_argv, sandbox_engine
from machine import describe

ONE_MB = "head -c 1000000 /dev/zero | tr '\\0' x"
COMMANDS = {"true": "true", "1 MB out": ONE_MB}
BIG = "head -c 200000000 /dev/zero | tr '\\0' x"

RSS_EXEC = """
import resource, sys
from local_tools import Toolbox
tb = Toolbox(sys.argv[1], {"permissions": {"execute:command": "allow"},
                           "sandbox": {"mode": "off"}}, audit=False)
env = tb.run("exec_cmd", {"command": sys.argv[2], "timeout": 120})
assert env["success"], env
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
RSS_RAW = """
import resource, subprocess, sys
subprocess.run(["bash", "-c", sys.argv[2]], capture_output=True, check=True)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _everyday_tree(ws: Path) -> None:
    """A small project: a git repository (its sample hooks are protected paths),
    150 folders of 8 source files, and a `.env` in every 30th folder."""
    git = shutil.which("git")
    if git:
        subprocess.run([git, "init", "-q", str(ws)], check=True)
    for i in range(150):
        folder = ws / f"pkg{i // 15}" / f"mod{i}"
        folder.mkdir(parents=True)
        for j in range(8):
            (folder / f"file{j}.py").write_text(f"VALUE = {i * 8 + j}\n")
        if i % 30 == 0:
            (folder / ".env").write_text("TOKEN=not-a-real-secret\n")


def _timed(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1000


async def _timed_async(fn: Callable[[], Awaitable[Any]], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await fn()
    return (time.perf_counter() - start) / calls * 1000


def _added(values: list[float], base: list[float]) -> float:
    """The median of each round's difference (both ran in the same round)."""
    return statistics.median(v - b for v, b in zip(values, base, strict=True))


def _peak_rss_mb(script: str, workspace: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", script, str(workspace), BIG],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1]) / 1024


# Steps of one exec_cmd call (module, attribute, label); a method as "Class.name".
PHASES = (
    ("local_tools.tools.exec_cmd", "analyze", "parse the command"),
    ("local_tools.tools.exec_cmd", "_working_dir", "resolve cwd"),
    ("local_tools.tools.exec_cmd", "outside_paths", "paths outside the roots"),
    ("local_tools.tools.exec_cmd", "_prepare", "argv, environment, sandbox"),
    ("local_tools.shell.command_reach", "protected_for", "find protected paths"),
    ("local_tools.security.trusted_paths", "TrustedPaths.begin", "guard: snapshot before"),
    ("local_tools.security.trusted_paths", "TrustedPaths.end", "guard: check after"),
    ("local_tools.shell.manager", "ProcessManager.start", "spawn (cgroup included)"),
    ("local_tools.shell.tree_kill", "ProcessTree.adopt", "move into its cgroup"),
    ("local_tools.checkpoints.hook", "begin", "checkpoint before"),
    ("local_tools.checkpoints.hook", "end", "checkpoint after"),
)


def _instrument() -> dict[str, list[int]]:
    """Wrap each step with a timer; {label: [total ns, calls]}."""
    import functools
    import importlib

    spent: dict[str, list[int]] = {}
    for module, name, label in PHASES:
        owner: Any = importlib.import_module(module)
        *classes, attr = name.split(".")
        for cls in classes:
            owner = getattr(owner, cls)
        real = getattr(owner, attr)
        totals = spent.setdefault(label, [0, 0])

        def timed(*a: Any, _real: Any = real, _t: list[int] = totals, **k: Any) -> Any:
            began = time.perf_counter_ns()
            try:
                return _real(*a, **k)
            finally:
                _t[0] += time.perf_counter_ns() - began
                _t[1] += 1

        setattr(owner, attr, functools.wraps(real)(timed))
        if module == "local_tools.shell.command_reach":  # imported by name elsewhere
            import local_tools.tools.exec_cmd as exec_module

            exec_module.protected_for = getattr(owner, attr)
    return spent


def phases(calls: int) -> None:
    spent = _instrument()
    engine = sandbox_engine()
    bash = shutil.which("bash") or "/bin/sh"
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        _everyday_tree(tree)
        # As a user's project is: older than the few seconds in which a change cannot be
        # told from the next (what the protected paths' scan keeps is then used).
        time.sleep(3.5)
        loop = asyncio.new_event_loop()
        columns: dict[str, dict[str, float]] = {}
        for sandbox in ("off", "workspace-write") if engine.name != "off" else ("off",):
            for checkpoints in (True, False):
                config = {
                    "permissions": {"execute:command": "allow"},
                    "sandbox": {"mode": sandbox},
                    "checkpoints": {"enabled": checkpoints},
                }
                box = Toolbox(tree, config, state_dir=Path(tmp) / f"s-{sandbox}-{checkpoints}")
                for _ in range(3):  # first calls: not timed
                    loop.run_until_complete(box.arun("exec_cmd", {"command": "true"}))
                for totals in spent.values():
                    totals[:] = [0, 0]
                whole = loop.run_until_complete(
                    _timed_async(lambda b=box: b.arun("exec_cmd", {"command": "true"}), calls)
                )
                raw = _timed(lambda: subprocess.run([bash, "-c", "true"], capture_output=True),
                             calls)  # fmt: skip
                name = f"sandbox {sandbox}, checkpoints {'on' if checkpoints else 'off'}"
                column = {"exec_cmd (whole call)": whole, "subprocess.run": raw}
                column |= {label: ns / calls / 1e6 for label, (ns, _) in spent.items()}
                columns[name] = column
                box.close()
        loop.close()
    print(f"Where exec_cmd `true` spends its time, everyday tree — {describe()}")
    print(f"{calls} commands per column, ms per command (steps nest: the guard's steps "
          "include finding protected paths, spawning includes the cgroup)\n")  # fmt: skip
    print("| step | " + " | ".join(columns) + " |")
    print("|---|" + "--:|" * len(columns))
    for label in next(iter(columns.values())):
        print(f"| {label} | " + " | ".join(f"{c[label]:.2f}" for c in columns.values()) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--phases", action="store_true", help="where exec_cmd's time goes")
    opts = parser.parse_args()
    if opts.phases:
        phases(opts.calls * opts.rounds)
        return
    bash = shutil.which("bash") or "/bin/sh"
    engine = sandbox_engine()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        tree = Path(tmp) / "tree"
        tree.mkdir()
        _everyday_tree(tree)
        sandbox_tmp = Path(tmp) / "sbtmp"
        sandbox_tmp.mkdir()
        allow = {"execute:command": "allow"}
        boxes = {
            (where, sandboxed): Toolbox(
                path,
                {"permissions": allow, **({} if sandboxed else {"sandbox": {"mode": "off"}})},
                state_dir=Path(tmp) / f"state-{where}",
            )
            for where, path in (("empty", ws), ("tree", tree))
            for sandboxed in (False, True)
        }
        loop = asyncio.new_event_loop()
        for box in boxes.values():  # first calls open stores and list the tree: not timed
            for command in COMMANDS.values():
                loop.run_until_complete(box.arun("exec_cmd", {"command": command}))
        results: dict[tuple[str, str], list[float]] = {}

        def run_round() -> None:
            for (where, label), command in (
                ((w, label), c) for w in ("empty", "tree") for label, c in COMMANDS.items()
            ):
                plain, boxed = boxes[(where, False)], boxes[(where, True)]
                root = ws if where == "empty" else tree
                argv = [bash, "-c", command]
                variants: dict[str, Callable[[], float]] = {
                    "subprocess.run": lambda a=argv: _timed(
                        lambda: subprocess.run(a, capture_output=True), opts.calls
                    ),
                    "exec_cmd": lambda c=command, p=plain: loop.run_until_complete(
                        _timed_async(lambda: p.arun("exec_cmd", {"command": c}), opts.calls)
                    ),
                }
                if engine.name != "off":
                    wrapped = sandbox_argv(
                        argv, mode="workspace-write", network=False, cwd=root,
                        writable=[root], tmp_dir=sandbox_tmp,
                    )  # fmt: skip
                    variants[f"subprocess.run + {engine.name}"] = lambda a=wrapped: _timed(
                        lambda: subprocess.run(a, capture_output=True), opts.calls
                    )
                    variants[f"exec_cmd + {engine.name}"] = lambda c=command, b=boxed: (
                        loop.run_until_complete(
                            _timed_async(lambda: b.arun("exec_cmd", {"command": c}), opts.calls)
                        )
                    )
                for name, fn in variants.items():
                    results.setdefault((f"{label}, {where}", name), []).append(fn())

        for _ in range(opts.rounds):
            run_round()
        rss_exec = _peak_rss_mb(RSS_EXEC, ws)  # the empty workspace: output is the point
        rss_raw = _peak_rss_mb(RSS_RAW, ws)
        for box in boxes.values():
            box.close()
        loop.close()

    print(f"exec_cmd vs subprocess.run — {describe()}")
    print(f"sandbox engine: {engine.name} ({engine.detail})")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{opts.rounds} rounds x {opts.calls} commands, median ms per command; "
          f"load average {load:.1f} at the end\n")  # fmt: skip
    print("| command, workspace | variant | ms | added over its primitive |")
    print("|---|---|--:|--:|")
    for (label, name), values in results.items():
        median = statistics.median(values)
        base_name = "subprocess.run" + (name[len("exec_cmd") :] if name != "exec_cmd" else "")
        added = ""
        if name.startswith("exec_cmd"):
            added = f"{_added(values, results[(label, base_name)]):+.2f} ms"
        elif name != "subprocess.run":
            added = f"{_added(values, results[(label, 'subprocess.run')]):+.2f} ms (sandbox)"
        print(f"| {label} | {name} | {median:.2f} | {added} |")
    print(f"\npeak RSS, 200 MB of output: exec_cmd {rss_exec:.0f} MB, "
          f"subprocess.run {rss_raw:.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()

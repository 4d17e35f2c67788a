"""exec_cmd against the raw primitive, `subprocess.run(capture_output=True)`.

Every variant runs interleaved in one process, several rounds; the table gives the
median wall time per command and what exec_cmd adds on top of the primitive running
the same argv (`bash -c CMD`, and `bwrap ... bash -c CMD` for the sandbox). The
exec_cmd figures include everything a caller pays: argument validation, parsing the
command for approval, the policy check, the environment, the process's cgroup, the
reader thread, the envelope and the audit write.

Peak RSS is measured in a fresh interpreter per variant for 200 MB of output:
exec_cmd keeps head + tail in memory and spills the rest to a file;
subprocess.run holds all of it.

    python benchmarks/exec.py [--calls 40] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
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


def _peak_rss_mb(script: str, workspace: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", script, str(workspace), BIG],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    bash = shutil.which("bash") or "/bin/sh"
    engine = sandbox_engine()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        sandbox_tmp = Path(tmp) / "sbtmp"
        sandbox_tmp.mkdir()
        allow = {"execute:command": "allow"}
        plain = Toolbox(ws, {"permissions": allow, "sandbox": {"mode": "off"}}, state_dir=tmp)
        boxed = Toolbox(ws, {"permissions": allow}, state_dir=tmp)
        loop = asyncio.new_event_loop()
        results: dict[tuple[str, str], list[float]] = {}

        def run_round() -> None:
            for label, command in COMMANDS.items():
                argv = [bash, "-c", command]
                variants: dict[str, Callable[[], float]] = {
                    "subprocess.run": lambda a=argv: _timed(
                        lambda: subprocess.run(a, capture_output=True), opts.calls
                    ),
                    "exec_cmd": lambda c=command: loop.run_until_complete(
                        _timed_async(lambda: plain.arun("exec_cmd", {"command": c}), opts.calls)
                    ),
                }
                if engine.name != "off":
                    wrapped = sandbox_argv(
                        argv, mode="workspace-write", network=False, cwd=ws,
                        writable=[ws], tmp_dir=sandbox_tmp,
                    )  # fmt: skip
                    variants[f"subprocess.run + {engine.name}"] = lambda a=wrapped: _timed(
                        lambda: subprocess.run(a, capture_output=True), opts.calls
                    )
                    variants[f"exec_cmd + {engine.name}"] = lambda c=command: (
                        loop.run_until_complete(
                            _timed_async(lambda: boxed.arun("exec_cmd", {"command": c}), opts.calls)
                        )
                    )
                for name, fn in variants.items():
                    results.setdefault((label, name), []).append(fn())

        for _ in range(opts.rounds):
            run_round()
        rss_exec = _peak_rss_mb(RSS_EXEC, ws)
        rss_raw = _peak_rss_mb(RSS_RAW, ws)
        plain.close()
        boxed.close()
        loop.close()

    print(f"exec_cmd vs subprocess.run — {describe()}")
    print(f"sandbox engine: {engine.name} ({engine.detail})")
    print(f"{opts.rounds} rounds x {opts.calls} commands, median ms per command\n")
    print("| command | variant | ms | added over its primitive |")
    print("|---|---|--:|--:|")
    for (label, name), values in results.items():
        median = statistics.median(values)
        base_name = "subprocess.run" + (name[len("exec_cmd") :] if name != "exec_cmd" else "")
        added = ""
        if name.startswith("exec_cmd"):
            base = statistics.median(results[(label, base_name)])
            added = f"{median - base:+.2f} ms"
        elif name != "subprocess.run":
            base = statistics.median(results[(label, "subprocess.run")])
            added = f"{median - base:+.2f} ms (sandbox)"
        print(f"| {label} | {name} | {median:.2f} | {added} |")
    print(f"\npeak RSS, 200 MB of output: exec_cmd {rss_exec:.0f} MB, "
          f"subprocess.run {rss_raw:.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()

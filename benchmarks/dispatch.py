"""Per-call overhead of the runner against a raw function call.

Runs every variant interleaved in one process, several rounds, and reports the
median time per call and the overhead over the raw call. The trivial tool echoes
its argument, so everything above the raw call is the runner: argument validation,
permission check, envelope, audit write (batched into SQLite), timing.

    python benchmarks/dispatch.py [--calls 20000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from local_tools import Args, Toolbox, ToolContext, tool
from machine import describe


class EchoArgs(Args):
    text: str


def echo_impl(text: str) -> dict[str, Any]:
    return {"text": text}


@tool("echo_sync", args=EchoArgs, permission="read:file", blocking=False)
def echo_sync(args: EchoArgs, ctx: ToolContext) -> dict[str, Any]:
    """Trivial sync tool."""
    return echo_impl(args.text)


@tool("echo_async", args=EchoArgs, permission="read:file")
async def echo_async(args: EchoArgs, ctx: ToolContext) -> dict[str, Any]:
    """Trivial async tool."""
    return echo_impl(args.text)


@tool("echo_thread", args=EchoArgs, permission="read:file")
def echo_thread(args: EchoArgs, ctx: ToolContext) -> dict[str, Any]:
    """Trivial sync tool that runs in a worker thread (the default for sync tools)."""
    return echo_impl(args.text)


def per_call_us(fn: Callable[[int], None], calls: int) -> float:
    start = time.perf_counter()
    fn(calls)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="lt-bench-"))
    (tmp / "ws").mkdir()
    tools = [echo_sync, echo_async, echo_thread]
    audited = Toolbox(tmp / "ws", state_dir=tmp / "state", tools=tools, plugins=False)
    quiet = Toolbox(tmp / "ws", state_dir=tmp / "state2", tools=tools, plugins=False, audit=False)
    loop = asyncio.new_event_loop()
    args = {"text": "hi"}

    def raw(n: int) -> None:
        for _ in range(n):
            echo_impl(**args)

    # Every audited round ends with a flush inside the timing, so the SQLite writes
    # the calls caused are paid for in the round that caused them.
    def arun(tb: Toolbox, name: str) -> Callable[[int], None]:
        async def many(n: int) -> None:
            for _ in range(n):
                await tb.arun(name, args)

        def timed(n: int) -> None:
            loop.run_until_complete(many(n))
            if tb.audit is not None:
                tb.audit.flush()

        return timed

    def run(tb: Toolbox, name: str) -> Callable[[int], None]:
        def many(n: int) -> None:
            for _ in range(n):
                tb.run(name, args)
            if tb.audit is not None:
                tb.audit.flush()

        return many

    variants: dict[str, tuple[Callable[[int], None], int]] = {
        "raw function call": (raw, opts.calls),
        "arun, async tool": (arun(audited, "echo_async"), opts.calls),
        "arun, sync inline tool": (arun(audited, "echo_sync"), opts.calls),
        "arun, async tool, no audit": (arun(quiet, "echo_async"), opts.calls),
        "run (sync facade), async tool": (run(audited, "echo_async"), opts.calls),
        "arun, sync tool in thread": (arun(audited, "echo_thread"), opts.calls // 10),
    }
    for fn, n in variants.values():  # warm up: imports, caches, SQLite pages
        fn(max(n // 20, 10))
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(opts.rounds):
        for name, (fn, n) in variants.items():  # interleaved, so drift hits all alike
            samples[name].append(per_call_us(fn, n))
    audited.close()
    quiet.close()

    base = statistics.median(samples["raw function call"])
    print(f"# Runner dispatch overhead — {describe()}")
    print(f"# {opts.rounds} rounds, {opts.calls} calls each (thread variant: {opts.calls // 10})")
    print(f"{'variant':<32} {'median µs/call':>15} {'overhead µs':>12} {'min..max':>16}")
    for name, values in samples.items():
        med = statistics.median(values)
        spread = f"{min(values):.2f}..{max(values):.2f}"
        print(f"{name:<32} {med:>15.2f} {med - base:>12.2f} {spread:>16}")


if __name__ == "__main__":
    main()

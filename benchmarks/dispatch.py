"""Per-call overhead of the runner against a raw function call; batch against sequential calls.

Runs every variant interleaved in one process, several rounds, and reports the
median time per call and the overhead over the raw call. The trivial tool echoes
its argument, so everything above the raw call is the runner: argument validation,
permission check, envelope, audit write (batched into SQLite), timing.

Then read_file of a small file through the whole runner (audited): inline, as a small
regular file on a local disk now runs, against the same tool through the worker-thread
hop every sync tool took before (a copy of the tool without its `quick` check), with a
plain open-and-read of the file as the floor.

Then 25 read_file calls made as one `batch` against the same 25 calls awaited one
after another, side by side (each through the whole runner, audited).

    python benchmarks/dispatch.py [--calls 20000] [--rounds 7] [--batches 20]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from local_tools import Args, Toolbox, ToolContext, tool
from local_tools.tools.read_file import read_file
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
    parser.add_argument("--batches", type=int, default=20, help="batches of 25 per sample")
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
    print()
    read_inline_vs_worker(tmp, loop, opts.rounds, opts.calls // 4)
    print()
    batch_vs_sequential(tmp, loop, opts.rounds, opts.batches)


def read_inline_vs_worker(
    tmp: Path, loop: asyncio.AbstractEventLoop, rounds: int, calls: int
) -> None:
    """read_file of a 30-line file: inline (quick) vs the worker hop vs open+read."""
    ws = tmp / "read-ws"
    ws.mkdir()
    small = ws / "small.txt"
    small.write_text("".join(f"line {i}: some text of a small file\n" for i in range(30)))
    # The same tool without its `quick` check (a field-wise copy leaves it out): every
    # call takes the worker-thread hop, as every read did before.
    hop = dataclasses.replace(read_file, name="read_file_hop", aliases=())
    assert getattr(hop, "quick", None) is None
    tb = Toolbox(ws, state_dir=tmp / "read-state", tools=[hop], plugins=False)
    args = {"path": "small.txt", "limit": 20}

    def floor(n: int) -> None:
        for _ in range(n):
            with open(small, "rb") as f:
                f.read().decode().splitlines()[:20]

    def through(name: str) -> Callable[[int], None]:
        async def many(n: int) -> None:
            for _ in range(n):
                assert (await tb.arun(name, args, transport="http"))["success"]

        def timed(n: int) -> None:
            loop.run_until_complete(many(n))
            assert tb.audit is not None
            tb.audit.flush()

        return timed

    variants = {
        "open + read + split (floor)": floor,
        "arun read_file, inline": through("read_file"),
        "arun read_file, worker hop": through("read_file_hop"),
    }
    for fn in variants.values():
        fn(max(calls // 20, 10))
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            samples[name].append(per_call_us(fn, calls))
    tb.close()
    hop_med = statistics.median(samples["arun read_file, worker hop"])
    print("# read_file of a 30-line file (20 lines read), audited, transport http")
    print(f"# {rounds} rounds, {calls} calls each, interleaved")
    print(f"{'variant':<32} {'median µs/call':>15} {'vs worker hop':>14} {'min..max':>16}")
    for name, values in samples.items():
        med = statistics.median(values)
        spread = f"{min(values):.2f}..{max(values):.2f}"
        print(f"{name:<32} {med:>15.2f} {med / hop_med:>13.2f}× {spread:>16}")


BATCH = 25  # the most one batch takes


def batch_vs_sequential(
    tmp: Path, loop: asyncio.AbstractEventLoop, rounds: int, repeats: int
) -> None:
    """25 read_file calls as one batch vs awaited one after another, interleaved."""
    ws = tmp / "batch-ws"
    ws.mkdir()
    for n in range(BATCH):
        (ws / f"f{n}.txt").write_text("".join(f"line {i} of file {n}\n" for i in range(200)))
    tb = Toolbox(ws, state_dir=tmp / "batch-state", plugins=False)
    calls = [{"tool": "read_file", "args": {"path": f"f{n}.txt"}} for n in range(BATCH)]

    async def sequential() -> None:
        for call in calls:
            assert (await tb.arun(call["tool"], call["args"]))["success"]

    async def batched() -> None:
        out = (await tb.arun("batch", {"tool_calls": calls}))["output"]
        assert out["succeeded"] == BATCH

    variants = {f"{BATCH} calls, one after another": sequential, f"one batch of {BATCH}": batched}

    def ms_per_group(make: Callable[[], Any]) -> float:
        start = time.perf_counter()
        for _ in range(repeats):
            loop.run_until_complete(make())
        assert tb.audit is not None
        tb.audit.flush()  # the audit writes the calls caused, paid for here
        return (time.perf_counter() - start) / repeats * 1e3

    for make in variants.values():  # warm up: page cache, worker threads
        loop.run_until_complete(make())
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, make in variants.items():
            samples[name].append(ms_per_group(make))
    tb.close()

    base = statistics.median(samples[f"{BATCH} calls, one after another"])
    print(f"# batch vs sequential: {BATCH} read_file calls of a 200-line file, audited")
    print(f"# {rounds} rounds, {repeats} groups of {BATCH} calls each; {os.cpu_count()} CPUs")
    print(f"{'variant':<32} {'median ms/25':>15} {'speed-up':>14} {'min..max':>16}")
    for name, values in samples.items():
        med = statistics.median(values)
        spread = f"{min(values):.2f}..{max(values):.2f}"
        print(f"{name:<32} {med:>15.2f} {base / med:>13.2f}× {spread:>16}")


if __name__ == "__main__":
    main()

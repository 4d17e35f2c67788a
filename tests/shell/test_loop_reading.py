"""A foreground command read on the caller's event loop (no reader thread): the same
outcomes as the thread — output, exit codes, leftovers killed, pipes closed early —
and `detach()` hands a command still running to a thread."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from local_tools.shell.process import RunningCommand
from local_tools.shell.tree_kill import MARKER_VARIABLE

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the loop reads through a pidfd (Linux)"
)


def _start(tmp_path: Path, command: str, loop: asyncio.AbstractEventLoop) -> RunningCommand:
    return RunningCommand(
        command,
        ["/bin/sh", "-c", command],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        spill_dir=tmp_path / "spill",
        name="loop",
        hold=True,
        loop=loop,
    )


def _readers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "local-tools-loop"]


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER_VARIABLE) == marker and proc.status() != "zombie":
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_output_and_exit_code_without_a_thread(tmp_path: Path) -> None:
    async def main() -> tuple[RunningCommand, list[str]]:
        cmd = _start(tmp_path, "echo out; echo err >&2; exit 3", asyncio.get_running_loop())
        readers = _readers()
        assert await cmd.wait_async(10)
        return cmd, readers

    cmd, readers = asyncio.run(main())
    assert readers == []
    assert cmd.exit_code == 3
    assert cmd.stdout.read_new().data == b"out\n"
    assert cmd.stderr.read_new().data == b"err\n"
    assert cmd.duration_ms is not None and cmd.duration_ms > 0
    assert not cmd.running


def test_a_lot_of_output_is_all_read(tmp_path: Path) -> None:
    async def main() -> RunningCommand:
        cmd = _start(tmp_path, "head -c 3000000 /dev/zero", asyncio.get_running_loop())
        assert await cmd.wait_async(30)
        return cmd

    cmd = asyncio.run(main())
    assert cmd.exit_code == 0
    assert cmd.stdout.total_bytes == 3_000_000


def test_orphan_holding_the_pipe_is_killed_after_the_drain(tmp_path: Path) -> None:
    async def main() -> RunningCommand:
        cmd = _start(tmp_path, "setsid sleep 100 & echo done", asyncio.get_running_loop())
        assert await cmd.wait_async(10), "the command ends when its shell exits"
        return cmd

    started = time.monotonic()
    cmd = asyncio.run(main())
    assert time.monotonic() - started < 5
    assert cmd.exit_code == 0
    assert cmd.leftovers_killed
    assert cmd.stdout.read_new().data == b"done\n"
    time.sleep(0.2)
    assert _marked(cmd.tree.marker) == []


def test_pipes_closed_before_the_shell_exits(tmp_path: Path) -> None:
    async def main() -> RunningCommand:
        cmd = _start(
            tmp_path, "echo early; exec >&- 2>&-; sleep 0.3; exit 4", asyncio.get_running_loop()
        )
        assert await cmd.wait_async(10)
        return cmd

    cmd = asyncio.run(main())
    assert cmd.exit_code == 4
    assert cmd.stdout.read_new().data == b"early\n"
    assert not cmd.leftovers_killed


def test_kill_on_the_loop_ends_the_tree(tmp_path: Path) -> None:
    async def main() -> RunningCommand:
        cmd = _start(tmp_path, "setsid sleep 100 & sleep 100", asyncio.get_running_loop())
        assert not await cmd.wait_async(0.3)
        cmd.kill("timeout")
        assert await cmd.wait_async(10)
        return cmd

    cmd = asyncio.run(main())
    assert cmd.killed_by == "timeout"
    assert cmd.exit_code == 137
    time.sleep(0.2)
    assert _marked(cmd.tree.marker) == []


def test_detach_hands_a_running_command_to_a_thread(tmp_path: Path) -> None:
    async def main() -> RunningCommand:
        cmd = _start(tmp_path, "echo one; sleep 0.5; echo two", asyncio.get_running_loop())
        assert not await cmd.wait_async(0.2)
        cmd.detach()
        assert _readers() == ["local-tools-loop"]
        return cmd

    cmd = asyncio.run(main())  # the loop is gone: only the thread reads now
    assert cmd.wait(10)
    assert cmd.exit_code == 0
    assert cmd.stdout.read_new().data == b"one\ntwo\n"


def test_detach_after_the_end_starts_nothing(tmp_path: Path) -> None:
    async def main() -> RunningCommand:
        cmd = _start(tmp_path, "true", asyncio.get_running_loop())
        assert await cmd.wait_async(10)
        cmd.detach()
        assert _readers() == []
        return cmd

    assert asyncio.run(main()).exit_code == 0


def test_a_blocking_wait_on_the_reading_loop_does_not_stall_the_command(tmp_path: Path) -> None:
    # E.g. a Toolbox closed from its own event loop: kill(), then wait() there.
    async def main() -> tuple[RunningCommand, bool, float]:
        cmd = _start(tmp_path, "sleep 100", asyncio.get_running_loop())
        cmd.kill("shutdown")
        started = time.monotonic()
        ended = cmd.wait(10)
        return cmd, ended, time.monotonic() - started

    cmd, ended, waited = asyncio.run(main())
    assert ended
    assert waited < 5
    assert cmd.killed_by == "shutdown"

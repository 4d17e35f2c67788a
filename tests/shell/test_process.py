"""RunningCommand and ProcessManager with real subprocesses: exit, hang-proofing, tree kill."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from local_tools.core.errors import ExecutionError, NotFound
from local_tools.shell.capture import SPILL_FILE_LIMIT
from local_tools.shell.manager import ProcessManager
from local_tools.shell.process import RunningCommand
from local_tools.shell.tree_kill import MARKER_VARIABLE

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")


def _run(tmp_path: Path, command: str, *, stdin: bool = False) -> RunningCommand:
    return RunningCommand(
        command,
        ["/bin/sh", "-c", command],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        spill_dir=tmp_path / "spill",
        name="t",
        stdin=stdin,
        hold=True,
    )


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER_VARIABLE) == marker and proc.status() != "zombie":
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_output_and_exit_code(tmp_path: Path) -> None:
    cmd = _run(tmp_path, "echo out; echo err >&2; exit 3")
    assert cmd.wait(10)
    assert cmd.exit_code == 3
    assert cmd.stdout.read_new().data == b"out\n"
    assert cmd.stderr.read_new().data == b"err\n"
    assert cmd.duration_ms is not None and cmd.duration_ms > 0


def test_stdin_closed_gives_eof_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    cmd = _run(tmp_path, "read x; echo got=$?")
    assert cmd.wait(10)
    assert time.monotonic() - started < 5
    assert cmd.stdout.read_new().data == b"got=1\n"


def test_orphan_holding_the_pipe_does_not_hang_and_is_killed(tmp_path: Path) -> None:
    # The classic hang: the shell exits, a setsid grandchild keeps stdout open.
    started = time.monotonic()
    cmd = _run(tmp_path, "setsid sleep 100 & sleep 100 & echo done")
    assert cmd.wait(10), "the command should end when its shell exits"
    assert time.monotonic() - started < 5
    assert cmd.exit_code == 0
    assert cmd.leftovers_killed
    assert cmd.stdout.read_new().data == b"done\n"
    time.sleep(0.2)
    assert _marked(cmd.tree.marker) == []


def test_detached_daemon_with_closed_pipes_is_killed_too(tmp_path: Path) -> None:
    cmd = _run(tmp_path, "setsid sh -c 'sleep 100' >/dev/null 2>&1 < /dev/null & echo ok")
    assert cmd.wait(10)
    time.sleep(0.2)
    assert _marked(cmd.tree.marker) == []


def test_kill_ends_the_whole_tree(tmp_path: Path) -> None:
    cmd = _run(tmp_path, "setsid sleep 100 & (sleep 100 &) ; sleep 100")
    time.sleep(0.5)
    assert len(_marked(cmd.tree.marker)) >= 3
    cmd.kill("kill")
    assert cmd.wait(10)
    assert cmd.killed_by == "kill"
    assert cmd.exit_code == 137
    time.sleep(0.2)
    assert _marked(cmd.tree.marker) == []


def test_wait_async_and_timeout(tmp_path: Path) -> None:
    async def main() -> tuple[bool, bool]:
        slow = _run(tmp_path, "sleep 5")
        quick = _run(tmp_path, "true")
        done_slow = await slow.wait_async(0.2)
        done_quick = await quick.wait_async(10)
        slow.kill("timeout")
        await slow.wait_async(5)
        return done_slow, done_quick

    assert asyncio.run(main()) == (False, True)


def test_huge_output_keeps_memory_bounded(tmp_path: Path) -> None:
    # 200 MB through the pipe: our RSS must not grow with it.
    before = psutil.Process().memory_info().rss
    cmd = _run(tmp_path, "head -c 200000000 /dev/zero | tr '\\0' 'x'; echo; echo END")
    assert cmd.wait(60)
    grown = psutil.Process().memory_info().rss - before
    assert grown < 50 * 1024 * 1024, f"RSS grew by {grown / 1e6:.0f} MB"
    assert cmd.stdout.total_bytes == 200_000_005
    assert cmd.stdout.last(5) == b"\nEND\n"
    assert cmd.stdout.spill_path is not None
    # The disk is bounded too: the saved output stops at the spill file limit, saying so.
    assert cmd.stdout.spill_path.stat().st_size == SPILL_FILE_LIMIT
    assert "stops at its first 64 MB" in (cmd.stdout.spill_error or "")


def test_input_to_a_background_process(tmp_path: Path) -> None:
    cmd = _run(tmp_path, 'while read line; do echo "got $line"; done', stdin=True)
    cmd.write_input(b"a\nb\n", 5)
    deadline = time.monotonic() + 5
    while cmd.stdout.total_bytes < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cmd.stdout.read_new().data == b"got a\ngot b\n"
    cmd.close_input()
    assert cmd.wait(5)
    assert cmd.exit_code == 0


def test_manager_limits_owners_and_close(tmp_path: Path) -> None:
    manager = ProcessManager(tmp_path / "spill", max_live=2)
    env = {"PATH": os.environ["PATH"]}

    def start(command: str, owner: str = "alice") -> str:
        proc = manager.start(
            command, ["/bin/sh", "-c", command], owner=owner, cwd=tmp_path, env=env,
            background=True, stdin=False,
        )  # fmt: skip
        return proc.process_id

    first = start("sleep 100")
    start("sleep 100", owner="bob")
    with pytest.raises(ExecutionError, match="limit is 2"):
        start("sleep 100")
    with pytest.raises(NotFound):
        manager.get(first, "bob")  # another user's process does not exist for them
    assert manager.get(first, "alice").command.running
    markers = [p.command.tree.marker for p in manager.list("alice") + manager.list("bob")]
    manager.close()
    time.sleep(0.2)
    assert all(_marked(m) == [] for m in markers)
    with pytest.raises(ExecutionError, match="closing"):
        start("true")


def test_manager_keeps_only_the_newest_finished(tmp_path: Path) -> None:
    manager = ProcessManager(tmp_path / "spill", max_live=50)
    env = {"PATH": os.environ["PATH"]}
    ids = []
    for _ in range(35):
        proc = manager.start(
            "true", ["/bin/true"], owner="u", cwd=tmp_path, env=env, background=True,
            stdin=False,
        )  # fmt: skip
        proc.command.wait(5)
        ids.append(proc.process_id)
    kept = [p.process_id for p in manager.list("u")]
    assert len(kept) <= 31
    assert ids[-1] in kept
    assert ids[0] not in kept
    manager.close()


def test_kill_without_process_groups_or_cgroups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows has neither: the tree is found through psutil and the marker alone."""
    import local_tools.shell.tree_kill as tree_kill

    monkeypatch.setattr(tree_kill, "_IS_WINDOWS", True)
    monkeypatch.setattr(tree_kill, "_parent", None)
    cmd = _run(tmp_path, "setsid sleep 100 & sleep 100 & sleep 100")
    time.sleep(0.5)
    assert cmd.tree.cgroup is None
    assert len(_marked(cmd.tree.marker)) >= 3
    cmd.kill("kill")
    assert cmd.wait(10)
    time.sleep(0.2)
    assert _marked(cmd.tree.marker) == []


def test_a_command_that_cannot_start_is_an_execution_error(tmp_path: Path) -> None:
    manager = ProcessManager(tmp_path / "spill")
    with pytest.raises(ExecutionError, match="Could not start"):
        manager.start(
            "x", [str(tmp_path / "no-such-shell"), "-c", "true"], owner="u", cwd=tmp_path,
            env={}, background=False, stdin=False,
        )  # fmt: skip
    manager.close()

"""Sync tools a call of which cannot block for long run inline, everything else in a worker.

The runner skips the worker-thread hop only when the tool's `quick` check says so and
the tool changes no files; read_file says so for a small regular file on the
workspace's own local filesystem, never for a FIFO, a large file, a symlink leading
out of the workspace or a missing file.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Args, Toolbox, ToolContext, tool
from local_tools.security.jail_mounts import all_local, parse_mountinfo, quick_stat
from local_tools.tools.read_file import QUICK_BYTES, ReadFileArgs, read_file

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="mount table and openat2")


class NoteArgs(Args):
    quick: bool = True


def _note(args: NoteArgs, ctx: ToolContext) -> dict[str, Any]:
    """The thread the call ran on."""
    return {"thread": threading.get_ident()}


def _decide(args: NoteArgs, ctx: ToolContext) -> bool:
    return args.quick


def _raises(args: NoteArgs, ctx: ToolContext) -> bool:
    raise OSError("cannot tell")


note = tool("note_thread", args=NoteArgs, permission="read:file", toolset="test")(_note)
object.__setattr__(note, "quick", _decide)
broken = tool("note_broken", args=NoteArgs, permission="read:file", toolset="test")(_note)
object.__setattr__(broken, "quick", _raises)
changing = tool(
    "note_changing",
    args=NoteArgs,
    permission="read:file",
    toolset="test",
    changes=lambda args, ctx: ("x.txt",),
)(_note)
object.__setattr__(changing, "quick", _decide)


def _thread_of(tb: Toolbox, name: str, **args: Any) -> int:
    async def call() -> int:
        return int(ok(await tb.arun(name, args))["thread"])

    return asyncio.run(call())


def test_a_quick_call_runs_on_the_callers_thread(make_toolbox: Any) -> None:
    tb = make_toolbox(tools=[note, broken, changing], plugins=False)
    here = threading.get_ident()
    assert _thread_of(tb, "note_thread") == here
    assert _thread_of(tb, "note_thread", quick=False) != here


def test_a_failing_check_or_a_tool_that_changes_files_keeps_the_worker(
    make_toolbox: Any,
) -> None:
    tb = make_toolbox(tools=[note, broken, changing], plugins=False)
    here = threading.get_ident()
    assert _thread_of(tb, "note_broken") != here
    assert _thread_of(tb, "note_changing") != here


def test_a_quick_call_is_still_authorized_and_audited(make_toolbox: Any) -> None:
    tb = make_toolbox(
        {"permissions": {"read:file": "deny"}}, tools=[note, broken, changing], plugins=False
    )
    err(tb.run("note_thread", {}), "PERMISSION_DENIED")
    assert tb.audit is not None
    [row] = tb.audit.query(tool="note_thread")
    assert row.error_code == "PERMISSION_DENIED"


def _ctx(tb: Toolbox) -> Any:
    """A real ToolContext, as read_file sees it (taken from a call)."""
    seen: list[Any] = []

    def grab(args: NoteArgs, ctx: ToolContext) -> dict[str, Any]:
        """Keep the context."""
        seen.append(ctx)
        return {}

    name = f"grab_{id(tb)}"
    tb.registry.add(tool(name, args=NoteArgs, toolset="test")(grab), source="test")
    ok(tb.run(name, {}))
    return seen[0]


def _quick(ctx: ToolContext, path: str) -> bool:
    check = read_file.__dict__["quick"]  # set by tools/read_file.py
    return bool(check(ReadFileArgs(path=path), ctx))


@linux_only
def test_read_file_is_quick_only_for_a_small_regular_local_file(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    tb = make_toolbox()
    if tb.jail.engine != "openat2" or not quick_stat(workspace, "openat2", "."):
        pytest.skip("openat2 unavailable or the workspace is not on a local disk")
    (workspace / "small.txt").write_text("hello\n")
    (workspace / "big.txt").write_bytes(b"x\n" * (QUICK_BYTES // 2 + 1))
    (workspace / "doc.pdf").write_bytes(b"%PDF-1.4\n")
    os.mkfifo(workspace / "pipe")
    (tmp_path / "outside.txt").write_text("out\n")
    (workspace / "out-link").symlink_to(tmp_path / "outside.txt")
    (workspace / "in-link").symlink_to("small.txt")
    ctx = _ctx(tb)
    assert _quick(ctx, "small.txt")
    assert _quick(ctx, str(workspace / "small.txt"))
    assert _quick(ctx, "in-link")
    assert not _quick(ctx, "big.txt")
    assert not _quick(ctx, "doc.pdf")
    assert not _quick(ctx, "pipe")
    assert not _quick(ctx, "missing.txt")
    assert not _quick(ctx, "out-link")
    assert not _quick(ctx, "../outside.txt")
    assert not _quick(ctx, str(tmp_path / "outside.txt"))
    assert not _quick(ctx, ".")


@linux_only
def test_reads_give_the_same_answers_inline_or_not(make_toolbox: Any, workspace: Path) -> None:
    tb = make_toolbox()
    (workspace / "small.txt").write_text("one\ntwo\n")
    (workspace / "big.txt").write_text("line\n" * 20000)
    os.mkfifo(workspace / "pipe")
    assert ok(tb.run("read_file", {"path": "small.txt"}))["content"] == "one\ntwo\n"
    assert ok(tb.run("read_file", {"path": "big.txt", "limit": 2}))["total_lines"] == 20000
    err(tb.run("read_file", {"path": "pipe"}), "INVALID_INPUT")


def test_the_mount_table_decides_what_is_local() -> None:
    text = (
        "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "30 22 0:40 / /home/u/nfs rw - nfs4 srv:/x rw\n"
        r"31 22 8:2 / /mnt/my\040disk rw - xfs /dev/sdb rw"
        "\n"
        "32 22 0:41 / /media/fuse rw - fuse.sshfs me@h: rw\n"
    )
    mounts = parse_mountinfo(text)
    assert ("/mnt/my disk", "xfs") in mounts
    assert all_local(["/srv/ws", "/mnt/my disk/p"], mounts)
    assert not all_local(["/home/u"], mounts)  # an NFS mount inside it
    assert not all_local(["/home/u/nfs/p"], mounts)  # on NFS
    assert not all_local(["/media/fuse"], mounts)
    assert all_local(["/home/uu"], mounts)  # a sibling of the NFS mount point
    assert not all_local(["/srv"], [])  # no table: not local

"""write_file: create, overwrite, append, atomicity, errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox


def test_creates_file_and_parents(tb: Toolbox, workspace: Path) -> None:
    out = ok(tb.run("write_file", {"path": "a/b/c.txt", "content": "hi\n"}))
    assert out == {"path": "a/b/c.txt", "bytes_written": 3, "created": True}
    assert (workspace / "a/b/c.txt").read_text() == "hi\n"


def test_existing_file_needs_overwrite(tb: Toolbox, workspace: Path) -> None:
    (workspace / "f.txt").write_text("old")
    msg = err(tb.run("write_file", {"path": "f.txt", "content": "new"}), "ALREADY_EXISTS")
    assert "overwrite=true" in msg
    assert (workspace / "f.txt").read_text() == "old"
    out = ok(tb.run("write_file", {"path": "f.txt", "content": "new", "overwrite": True}))
    assert out["created"] is False and (workspace / "f.txt").read_text() == "new"


def test_append(tb: Toolbox, workspace: Path) -> None:
    assert ok(tb.run("write_file", {"path": "log", "content": "1\n", "append": True}))["created"]
    ok(tb.run("write_file", {"path": "log", "content": "2\n", "append": True}))
    assert (workspace / "log").read_text() == "1\n2\n"


def test_unicode_and_encoding(tb: Toolbox, workspace: Path) -> None:
    out = ok(tb.run("write_file", {"path": "u.txt", "content": "héllo 🌍"}))
    assert out["bytes_written"] == len("héllo 🌍".encode())
    ok(tb.run("write_file", {"path": "l.txt", "content": "café", "encoding": "latin-1"}))
    assert (workspace / "l.txt").read_bytes() == "café".encode("latin-1")
    msg = err(
        tb.run("write_file", {"path": "x.txt", "content": "🌍", "encoding": "ascii"}),
        "INVALID_INPUT",
    )
    assert "ascii" in msg
    assert not (workspace / "x.txt").exists()


def test_empty_content(tb: Toolbox, workspace: Path) -> None:
    ok(tb.run("write_file", {"path": "empty", "content": ""}))
    assert (workspace / "empty").read_bytes() == b""


def test_crlf_content_written_verbatim(tb: Toolbox, workspace: Path) -> None:
    ok(tb.run("write_file", {"path": "w.txt", "content": "a\r\nb\r\n"}))
    assert (workspace / "w.txt").read_bytes() == b"a\r\nb\r\n"


def test_symlink_is_replaced_not_followed(tb: Toolbox, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (workspace / "inside.txt").write_text("target")
    (workspace / "link").symlink_to("inside.txt")
    ok(tb.run("write_file", {"path": "link", "content": "new", "overwrite": True}))
    assert not (workspace / "link").is_symlink()
    assert (workspace / "inside.txt").read_text() == "target"
    (workspace / "evil").symlink_to(outside)
    err(
        tb.run("write_file", {"path": "evil", "content": "x", "overwrite": True}),
        "PERMISSION_DENIED",
    )
    assert outside.read_text() == "keep"


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/escape-local-tools.txt", "a/../../x"])
def test_outside_denied(tb: Toolbox, workspace: Path, path: str) -> None:
    err(tb.run("write_file", {"path": path, "content": "x"}), "PERMISSION_DENIED")
    assert not (workspace.parent / "escape.txt").exists()
    assert not (workspace.parent / "x").exists()
    assert not Path("/tmp/escape-local-tools.txt").exists()


def test_permission_rule(make_toolbox: Any, workspace: Path) -> None:
    tb = make_toolbox({"permissions": {"write:file": {"*": "allow", "*.lock": "deny"}}})
    err(tb.run("write_file", {"path": "poetry.lock", "content": "x"}), "PERMISSION_DENIED")
    assert not (workspace / "poetry.lock").exists()
    ok(tb.run("write_file", {"path": "ok.txt", "content": "x"}))


def test_invalid_input(tb: Toolbox) -> None:
    assert "'content'" in err(tb.run("write_file", {"path": "a"}), "INVALID_INPUT")
    err(tb.run("write_file", {"path": "a\0b", "content": "x"}), "INVALID_INPUT")


def test_directory_target(tb: Toolbox, workspace: Path) -> None:
    (workspace / "d").mkdir()
    msg = err(
        tb.run("write_file", {"path": "d", "content": "x", "overwrite": True}), "INVALID_INPUT"
    )
    assert "directory" in msg
    assert (workspace / "d").is_dir()


WRITER = """
import sys
from local_tools import Toolbox
tb = Toolbox(sys.argv[1], state_dir=sys.argv[2], audit=False)
print("ready", flush=True)
tb.run("write_file", {"path": "data.bin", "content": "N" * 150_000_000, "overwrite": True})
print("done", flush=True)
"""


def test_kill_9_mid_write_leaves_old_or_new(workspace: Path, tmp_path: Path) -> None:
    """SIGKILL a writer at several points; the file is always whole, old or new."""
    target = workspace / "data.bin"
    mid_write_kills = 0
    for delay in (0.05, 0.15, 0.25, 0.35, 0.45, 0.6, 0.8):
        target.write_text("OLD CONTENT")
        with subprocess.Popen(
            [sys.executable, "-c", WRITER, str(workspace), str(tmp_path / "state")],
            stdout=subprocess.PIPE,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        data = target.read_bytes()
        assert data in (b"OLD CONTENT", b"N" * 150_000_000), f"partial file: {len(data)} bytes"
        leftovers = [p for p in workspace.iterdir() if p.name != "data.bin"]
        assert all(p.name.startswith(".lt-tmp-") for p in leftovers), leftovers
        if leftovers:  # the temp file was there: this kill landed mid-write
            mid_write_kills += 1
            for p in leftovers:
                p.unlink()
    assert mid_write_kills >= 1, "no kill landed during the write; the test proved nothing"

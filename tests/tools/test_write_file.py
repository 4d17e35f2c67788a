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
    assert out == {
        "path": "a/b/c.txt",
        "bytes_written": 3,
        "created": True,
        "line_endings": "lf",
        "bom": False,
    }
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


# -- line endings, BOM, bytes written ---------------------------------------------------

BOM = b"\xef\xbb\xbf"


def test_overwrite_keeps_crlf_for_plain_lf_content(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"old\r\nfile\r\n")
    out = ok(tb.run("write_file", {"path": "w.txt", "content": "a\nb\n", "overwrite": True}))
    assert (workspace / "w.txt").read_bytes() == b"a\r\nb\r\n"
    assert out["line_endings"] == "crlf" and out["bom"] is False
    assert out["bytes_written"] == 6 == (workspace / "w.txt").stat().st_size


def test_content_with_crlf_is_written_as_given(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"old\r\n")
    content = "a\r\nb\nc\r\n"  # says CRLF itself, even if mixed: kept verbatim
    out = ok(tb.run("write_file", {"path": "w.txt", "content": content, "overwrite": True}))
    assert (workspace / "w.txt").read_bytes() == content.encode()
    assert out["line_endings"] == "crlf" and out["bytes_written"] == len(content)
    (workspace / "lf.txt").write_bytes(b"old\nfile\n")  # an LF file: CRLF content stays CRLF
    ok(tb.run("write_file", {"path": "lf.txt", "content": "x\r\n", "overwrite": True}))
    assert (workspace / "lf.txt").read_bytes() == b"x\r\n"


def test_lf_file_stays_lf(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\ntwo\r\nthree\n")  # mostly LF
    out = ok(tb.run("write_file", {"path": "w.txt", "content": "a\nb\n", "overwrite": True}))
    assert (workspace / "w.txt").read_bytes() == b"a\nb\n" and out["line_endings"] == "lf"


def test_new_file_written_as_given(tb: Toolbox, workspace: Path) -> None:
    out = ok(tb.run("write_file", {"path": "n.txt", "content": "a\nb"}))
    assert (workspace / "n.txt").read_bytes() == b"a\nb" and out["line_endings"] == "lf"


def test_single_line_over_crlf_file(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"x\r\ny\r\n")
    out = ok(tb.run("write_file", {"path": "w.txt", "content": "solo", "overwrite": True}))
    assert (workspace / "w.txt").read_bytes() == b"solo"
    assert out["line_endings"] == "crlf"  # the file's convention, nothing to convert


def test_binary_old_file_is_not_a_line_ending_hint(tb: Toolbox, workspace: Path) -> None:
    (workspace / "b.bin").write_bytes(b"\0\1\r\n\r\n\r\n")
    ok(tb.run("write_file", {"path": "b.bin", "content": "a\nb\n", "overwrite": True}))
    assert (workspace / "b.bin").read_bytes() == b"a\nb\n"


def test_overwrite_keeps_utf8_bom(tb: Toolbox, workspace: Path) -> None:
    (workspace / "bom.txt").write_bytes(BOM + b"old\r\n")
    out = ok(tb.run("write_file", {"path": "bom.txt", "content": "né\n", "overwrite": True}))
    assert (workspace / "bom.txt").read_bytes() == BOM + "né\r\n".encode()
    assert out["bom"] is True and out["line_endings"] == "crlf"
    assert out["bytes_written"] == (workspace / "bom.txt").stat().st_size == 3 + 5
    # Content that starts with its own BOM gets exactly one.
    ok(tb.run("write_file", {"path": "bom.txt", "content": "\ufeffx", "overwrite": True}))
    assert (workspace / "bom.txt").read_bytes() == BOM + b"x"


def test_no_bom_added_to_files_without_one(tb: Toolbox, workspace: Path) -> None:
    (workspace / "plain.txt").write_bytes(b"old")
    out = ok(tb.run("write_file", {"path": "plain.txt", "content": "new", "overwrite": True}))
    assert (workspace / "plain.txt").read_bytes() == b"new" and out["bom"] is False
    # Another encoding is written as asked: no UTF-8 BOM forced into it.
    (workspace / "bom.txt").write_bytes(BOM + b"old")
    ok(tb.run("write_file", {"path": "bom.txt", "content": "é", "encoding": "latin-1",
                             "overwrite": True}))  # fmt: skip
    assert (workspace / "bom.txt").read_bytes() == "é".encode("latin-1")


def test_append_matches_crlf_and_counts_appended_bytes(tb: Toolbox, workspace: Path) -> None:
    (workspace / "log.txt").write_bytes(BOM + b"one\r\n")
    out = ok(tb.run("write_file", {"path": "log.txt", "content": "two\nthree\n", "append": True}))
    assert (workspace / "log.txt").read_bytes() == BOM + b"one\r\ntwo\r\nthree\r\n"
    assert out["bytes_written"] == len(b"two\r\nthree\r\n")
    assert out["line_endings"] == "crlf" and out["bom"] is True  # the file's, none added
    (workspace / "lf.log").write_bytes(b"one\n")
    ok(tb.run("write_file", {"path": "lf.log", "content": "two\n", "append": True}))
    assert (workspace / "lf.log").read_bytes() == b"one\ntwo\n"


def test_utf16_file_is_not_misread(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w16.txt").write_bytes("a\r\nb\r\n".encode("utf-16"))
    out = ok(tb.run("write_file", {"path": "w16.txt", "content": "x\ny\n", "encoding": "utf-16",
                                   "overwrite": True}))  # fmt: skip
    assert (workspace / "w16.txt").read_bytes() == "x\ny\n".encode("utf-16")
    assert out["bytes_written"] == len("x\ny\n".encode("utf-16")) and out["bom"] is True


def test_system_directories_refused(
    make_toolbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from local_tools.security import roots

    top = Path(os.path.realpath(tmp_path)) / "top"
    system = top / "sysdir"
    system.mkdir(parents=True)
    # A stand-in system directory inside a writable root, so a failure writes nowhere real.
    monkeypatch.setattr(roots, "POSIX_SYSTEM_DIRS", (*roots.POSIX_SYSTEM_DIRS, str(system)))
    tb = make_toolbox({"workspace": {"writable_roots": [str(top)]}})
    msg = err(tb.run("write_file", {"path": str(system / "x.conf"), "content": "x"}),
              "PERMISSION_DENIED")  # fmt: skip
    assert "system directory" in msg
    ok(tb.run("write_file", {"path": str(top / "fine.txt"), "content": "x"}))
    assert list(system.iterdir()) == []

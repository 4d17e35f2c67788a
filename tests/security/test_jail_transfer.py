"""Jail.rename and Jail.copy against every resolution engine, on real files: the
rules (overwrite, kinds, roots, into-itself, system directories) and symlinks moved
and copied as links, never followed. All-or-nothing behaviour and moves across file
systems are in test_jail_transfer_atomic.py."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

import pytest

from local_tools.core.errors import (
    AlreadyExists,
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from local_tools.security.jail import Jail
from security.transfer_fixtures import posix, temps, tree

# --------------------------------------------------------------------------- move


def test_move_file_and_create_parents(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    assert jail.rename("a.txt", "new/dir/b.txt") == "file"
    assert not (ws / "a.txt").exists()
    assert (ws / "new" / "dir" / "b.txt").read_bytes() == b"a"


def test_move_directory_keeps_everything(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    before = tree(ws / "src")
    assert jail.rename("src", "moved") == "directory"
    assert not (ws / "src").exists()
    assert tree(ws / "moved") == before


@posix
def test_move_symlink_moves_the_link(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    assert jail.rename("src/out_link", "link2") == "symlink"
    assert os.readlink(ws / "link2") == str(base / "outside")
    assert jail.rename("src/dangling", "dangling2") == "symlink"
    assert os.readlink(ws / "dangling2") == str(base / "outside" / "missing")
    assert tree(base / "outside") == {"secret.txt": ("file", b"OUTSIDE-SECRET")}


def test_move_without_overwrite_never_replaces(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    (ws / "b.txt").write_bytes(b"b")
    with pytest.raises(AlreadyExists, match="overwrite=true"):
        jail.rename("a.txt", "b.txt")
    assert (ws / "a.txt").read_bytes() == b"a" and (ws / "b.txt").read_bytes() == b"b"
    with pytest.raises(AlreadyExists, match="existing directory"):
        jail.rename("a.txt", "src")
    assert (ws / "a.txt").exists() and not (ws / "src" / "a.txt").exists()
    os.symlink("nowhere", ws / "dangling_here")
    with pytest.raises(AlreadyExists):
        jail.rename("a.txt", "dangling_here")
    assert os.readlink(ws / "dangling_here") == "nowhere"


def test_move_overwrite_rules(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    (ws / "b.txt").write_bytes(b"b")
    assert jail.rename("a.txt", "b.txt", overwrite=True) == "file"
    assert (ws / "b.txt").read_bytes() == b"a" and not (ws / "a.txt").exists()
    with pytest.raises(InvalidInput, match="a file cannot replace it"):
        jail.rename("b.txt", "src", overwrite=True)
    with pytest.raises(InvalidInput, match="a directory cannot replace it"):
        jail.rename("src", "b.txt", overwrite=True)
    (ws / "full").mkdir()
    (ws / "full" / "x").write_bytes(b"x")
    with pytest.raises(InvalidInput, match="not empty"):
        jail.rename("src", "full", overwrite=True)
    (ws / "empty").mkdir()
    assert jail.rename("src", "empty", overwrite=True) == "directory"
    assert (ws / "empty" / "one.txt").read_bytes() == b"one"
    assert (ws / "b.txt").exists() and (ws / "full" / "x").exists()


@posix
def test_overwrite_refuses_a_link_pointing_outside(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    os.symlink(base / "outside" / "secret.txt", ws / "evil")
    for call in (jail.rename, jail.copy):
        with pytest.raises(PermissionDenied):
            call("a.txt", "evil", overwrite=True)
    assert os.readlink(ws / "evil") == str(base / "outside" / "secret.txt")
    assert (base / "outside" / "secret.txt").read_bytes() == b"OUTSIDE-SECRET"
    os.symlink("src/one.txt", ws / "inner")  # a link inside is replaced, not followed
    assert jail.rename("a.txt", "inner", overwrite=True) == "file"
    assert not (ws / "inner").is_symlink() and (ws / "src" / "one.txt").read_bytes() == b"one"


def test_move_into_itself_same_path_and_roots(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    with pytest.raises(InvalidInput, match="into itself"):
        jail.rename("src", "src/sub/inner")
    with pytest.raises(InvalidInput, match="same path"):
        jail.rename("src", "src")
    with pytest.raises(InvalidInput, match="same path"):
        jail.rename("a.txt", "src/../a.txt")
    for root in (".", str(ws), "src/.."):
        with pytest.raises(PermissionDenied, match="cannot be moved"):
            jail.rename(root, "elsewhere")
    with pytest.raises(PermissionDenied, match="cannot be replaced"):
        jail.rename("a.txt", ".", overwrite=True)
    assert (ws / "src" / "one.txt").exists() and (ws / "a.txt").exists()


def test_move_errors_name_the_path(jail: Jail, base: Path) -> None:
    with pytest.raises(NotFound, match="'nope'"):
        jail.rename("nope", "x")
    with pytest.raises(NotFound, match="'nope'"):
        jail.rename("nope/deeper", "x")
    with pytest.raises(NotFound):
        jail.rename("a.txt", "a.txt/inside")  # a file is not a folder
    with pytest.raises(PermissionDenied, match="outside the workspace"):
        jail.rename("a.txt", "../outside/a.txt")
    with pytest.raises(PermissionDenied, match="outside the workspace"):
        jail.rename("../outside/secret.txt", "stolen.txt")
    with pytest.raises(PermissionDenied):
        jail.rename("src/out_link/secret.txt", "stolen.txt")
    assert not (base / "outside" / "a.txt").exists() and not (base / "ws" / "stolen.txt").exists()


def test_move_hard_link_onto_itself_drops_the_source_name(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    os.link(ws / "a.txt", ws / "hard.txt")
    with pytest.raises(AlreadyExists):
        jail.rename("a.txt", "hard.txt")
    assert jail.rename("a.txt", "hard.txt", overwrite=True) == "file"
    assert not (ws / "a.txt").exists() and (ws / "hard.txt").read_bytes() == b"a"


# --------------------------------------------------------------------------- copy


def test_copy_file_keeps_source_and_mode(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    os.chmod(ws / "a.txt", 0o750)
    assert jail.copy("a.txt", "deep/er/b.txt") == ("file", 1)
    assert (ws / "a.txt").read_bytes() == b"a" and (ws / "deep/er/b.txt").read_bytes() == b"a"
    if os.name == "posix":
        assert stat.S_IMODE((ws / "deep/er/b.txt").stat().st_mode) == 0o750
    assert (ws / "deep/er/b.txt").stat().st_ino != (ws / "a.txt").stat().st_ino


@posix
def test_copy_directory_recursive_links_as_links(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    before = tree(ws / "src")
    done = jail.copy("src", "copy")
    assert done.kind == "directory" and done.files == 6  # 3 files + 3 links
    assert tree(ws / "copy") == before == tree(ws / "src")
    assert (ws / "copy" / "out_link").is_symlink()
    assert (ws / "copy" / "sub" / "rel_link").read_bytes() == b"one"  # relative: inside copy
    assert not (ws / "copy" / "out_link" / "secret.txt").resolve().is_relative_to(ws)
    assert temps(ws) == []


@posix
def test_copy_symlink_pointing_outside_copies_the_text(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    assert jail.copy("src/out_link", "l2") == ("symlink", 1)
    assert os.readlink(ws / "l2") == str(base / "outside")
    assert jail.copy("src/dangling", "d2") == ("symlink", 1)
    assert os.readlink(ws / "d2") == str(base / "outside" / "missing")
    # Reading through the copy is still jailed.
    with pytest.raises(PermissionDenied):
        jail.open_read("l2/secret.txt")
    assert not [p for p in ws.rglob("*") if p.is_file() and not p.is_symlink()
                and p.read_bytes() == b"OUTSIDE-SECRET"]  # fmt: skip


@posix
def test_copy_keeps_directory_modes_even_read_only(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    os.chmod(ws / "src" / "sub", 0o555)
    try:
        jail.copy("src", "copy")
        assert stat.S_IMODE((ws / "copy" / "sub").stat().st_mode) == 0o555
        assert (ws / "copy" / "sub" / "two.txt").read_bytes() == b"two"
    finally:
        os.chmod(ws / "src" / "sub", 0o755)
        if (ws / "copy" / "sub").exists():
            os.chmod(ws / "copy" / "sub", 0o755)


def test_copy_overwrite_rules(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    (ws / "b.txt").write_bytes(b"b")
    with pytest.raises(AlreadyExists):
        jail.copy("a.txt", "b.txt")
    assert (ws / "b.txt").read_bytes() == b"b"
    assert jail.copy("a.txt", "b.txt", overwrite=True).kind == "file"
    assert (ws / "b.txt").read_bytes() == b"a"
    with pytest.raises(InvalidInput, match="a file cannot replace it"):
        jail.copy("a.txt", "src", overwrite=True)
    with pytest.raises(InvalidInput, match="not empty"):
        jail.copy("src/sub", "src", overwrite=True)
    (ws / "empty").mkdir()
    assert jail.copy("src/sub", "empty", overwrite=True).kind == "directory"
    assert (ws / "empty" / "two.txt").read_bytes() == b"two"
    with pytest.raises(InvalidInput, match="into itself"):
        jail.copy("src", "src/sub/again")
    with pytest.raises(InvalidInput, match="into itself"):
        jail.copy(".", "backup")
    with pytest.raises(InvalidInput, match="same path"):
        jail.copy("a.txt", "./a.txt")
    assert temps(ws) == []


def test_copy_empty_dir_hidden_and_unicode(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    (ws / "vide").mkdir()
    assert jail.copy("vide", "vide2") == ("directory", 0)
    assert (ws / "vide2").is_dir() and list((ws / "vide2").iterdir()) == []
    name = "données/日本語 ✓.txt"
    jail.write_atomic(name, "ü".encode())
    assert jail.copy("données", "コピー").files == 1
    assert (ws / "コピー" / "日本語 ✓.txt").read_bytes() == "ü".encode()
    assert jail.copy("src/.hidden", ".hidden2").kind == "file"
    assert (ws / ".hidden2").read_bytes() == b"h"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_fifo_refused_without_hanging(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    os.mkfifo(ws / "src" / "sub" / "pipe")
    with pytest.raises(InvalidInput, match="special file"):
        jail.copy("src/sub/pipe", "pipe2")
    with pytest.raises(InvalidInput, match="special file"):
        jail.rename("src/sub/pipe", "pipe2")
    with pytest.raises(InvalidInput, match="src/sub/pipe"):
        jail.copy("src", "copy")  # refused before anything is written
    assert not (ws / "copy").exists() and not (ws / "pipe2").exists() and temps(ws) == []


def test_large_file_copy_is_exact(jail: Jail, base: Path) -> None:
    ws = base / "ws"
    block = hashlib.sha256(b"seed").digest() * 4096  # 128 KiB, not all one byte
    with open(ws / "big.bin", "wb") as f:
        for i in range(200):  # 25 MiB plus a tail that is not a whole chunk
            f.write(bytes([i]) + block)
    jail.copy("big.bin", "big2.bin")

    def digest(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    assert digest(ws / "big2.bin") == digest(ws / "big.bin")
    assert (ws / "big2.bin").stat().st_size == 200 * (1 + len(block))


# --------------------------------------------------------------------------- roots


def test_roots_read_only_and_writable(base: Path, engine: str) -> None:
    ws = base / "ws"
    ro, wr = base / "ro", base / "wr"
    ro.mkdir()
    wr.mkdir()
    (ro / "doc.txt").write_bytes(b"doc")
    j = Jail(ws, extra_roots=[ro], writable_roots=[wr], engine=engine)  # type: ignore[arg-type]
    assert j.copy(str(ro / "doc.txt"), "doc.txt").kind == "file"  # reading is fine
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.rename(str(ro / "doc.txt"), "moved.txt")  # the source would change
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.copy("a.txt", str(ro / "a.txt"))
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.rename("a.txt", str(ro / "a.txt"))
    assert j.rename("src", str(wr / "src")) == "directory"  # across roots
    assert (wr / "src" / "sub" / "two.txt").read_bytes() == b"two"
    assert j.copy(str(wr / "src"), "src_again").files == 6
    for root in (str(wr), str(ro)):
        with pytest.raises(PermissionDenied, match="cannot be moved"):
            j.rename(root, "root-moved")
    assert sorted(p.name for p in ro.iterdir()) == ["doc.txt"]


def test_nested_root_is_never_moved_away(base: Path, engine: str) -> None:
    ws = base / "ws"
    vendor = ws / "lib" / "vendor"
    vendor.mkdir(parents=True)
    (vendor / "v.txt").write_bytes(b"v")
    j = Jail(ws, extra_roots=[vendor], engine=engine)  # type: ignore[arg-type]
    with pytest.raises(PermissionDenied, match="contains the read-only root"):
        j.rename("lib", "lib2")
    with pytest.raises(PermissionDenied):
        j.rename("lib/vendor", "vendor2")
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.copy("a.txt", "lib/vendor/a.txt")
    assert j.copy("lib", "lib2").files == 1  # a copy leaves the root where it is
    assert (vendor / "v.txt").read_bytes() == b"v"


@pytest.mark.skipif(os.name != "posix", reason="POSIX system dirs")
def test_system_dirs_never_destinations(tmp_path: Path, engine: str) -> None:
    ws = Path(os.path.realpath(tmp_path))
    (ws / "f.txt").write_bytes(b"f")
    j = Jail("/", writable_roots=["/"], engine=engine)  # type: ignore[arg-type]
    for dst in ("/etc/lt-transfer-test/x", "/usr/lt-transfer-test", "/var/lib/lt-transfer-x"):
        for call in (j.copy, j.rename):
            with pytest.raises(PermissionDenied, match="system directory"):
                call(str(ws / "f.txt"), dst)
    assert (ws / "f.txt").exists() and not os.path.exists("/etc/lt-transfer-test")


# --------------------------------------------------------------------------- hygiene


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_no_descriptor_leaks(jail: Jail, base: Path) -> None:
    def count() -> int:
        return len(os.listdir("/proc/self/fd"))

    def exercise() -> None:
        jail.copy("src", "c")
        jail.rename("c", "d")
        with pytest.raises(AlreadyExists):
            jail.copy("d", "src")
        with pytest.raises(InvalidInput):
            jail.copy("d", "d/e")
        jail.delete("d", recursive=True)

    exercise()
    before = count()
    for _ in range(10):
        exercise()
    assert count() == before

"""The workspace jail: attack paths that must be refused, and the normal paths that
must keep working, against every resolution engine on real files and symlinks."""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from local_tools.core.errors import (
    AlreadyExists,
    InvalidInput,
    NotFound,
    PermissionDenied,
    StorageError,
    ToolError,
)
from local_tools.security.jail import TEMP_PREFIX, DirEntryInfo, Jail, openat2_available
from security.transfer_fixtures import tree as snapshot  # everything under a folder

ENGINES = [
    pytest.param(
        "openat2",
        marks=pytest.mark.skipif(not openat2_available(), reason="openat2 unavailable"),
    ),
    "walk",
    "path",
]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


@dataclass
class Tree:
    base: Path  # holds ws, outside, ws-evil: everything a test may touch
    ws: Path
    outside: Path
    evil: Path


def _link(path: Path, target: str | Path) -> None:
    os.symlink(str(target), path)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    base = Path(os.path.realpath(tmp_path)) / "j"
    ws, outside, evil = base / "ws", base / "outside", base / "ws-evil"
    for d in (ws / "sub" / "deeper", outside, evil):
        d.mkdir(parents=True)
    (ws / "inside.txt").write_bytes(b"inside")
    (ws / "sub" / "deeper" / "file.txt").write_bytes(b"deep")
    (ws / ".hidden").write_bytes(b"h")
    (outside / "secret.txt").write_bytes(b"OUTSIDE-SECRET")
    (evil / "secret.txt").write_bytes(b"EVIL-SECRET")
    links: dict[str, str | Path] = {
        "link_out_file": outside / "secret.txt",
        "link_out_file_rel": "../outside/secret.txt",
        "link_out_dir": outside,
        "link_out_dir_rel": "../outside",
        "chain_a": "chain_b",
        "chain_b": "chain_c",
        "chain_c": "../outside/secret.txt",
        "chain_dir_a": "chain_dir_b",
        "chain_dir_b": outside,
        "dangling_out": outside / "new.txt",
        "dangling_out_rel": "../outside/new.txt",
        "dangling_out_dir": outside / "newdir",
        "link_parent": "..",
        "link_dot": ".",
        "link_abs_dotdot": f"{ws}/../outside/secret.txt",
        "link_evil": evil,
        "link_evil_rel": "../ws-evil",
        "link_root_fs": "/",
        "link_proc_root": "/proc/self/root",
        "link_proc_cwd": "/proc/self/cwd",
        "link_proc_fd": "/proc/self/fd/0",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "link_in_file": "inside.txt",
        "link_in_dir": "sub",
        "link_in_abs": ws / "inside.txt",
        "link_in_abs_dir": ws / "sub",
        "link_in_chain": "link_in_dir/deeper",
        "dangling_in": "sub/not-yet.txt",
        "sub/link_up": "../..",
        "sub/deeplink": "../../outside",
    }
    for name, target in links.items():
        _link(ws / name, target)
    return Tree(base, ws, outside, evil)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def jail(tree: Tree, engine: str) -> Jail:
    return Jail(tree.ws, engine=engine)  # type: ignore[arg-type]


def read(jail: Jail, path: str) -> bytes:
    with jail.open_read(path) as f:
        return f.read()


# --------------------------------------------------------------------------- attacks


@dataclass(frozen=True)
class Attack:
    path: str
    error: type[ToolError] = PermissionDenied
    # The final component is a symlink: delete and lstat act on the link itself
    # (legitimately), so they are not part of the attack.
    final_link: bool = False
    # Targets outside tmp_path: only non-mutating operations are tried, so even a
    # broken jail cannot write there.
    read_only: bool = False


ATTACKS: dict[str, Attack] = {
    # relative '..'
    "dotdot": Attack(".."),
    "dotdot-slash": Attack("../"),
    "dotdot-file": Attack("../outside/secret.txt"),
    "dotdot-etc": Attack("../../../../../../../../etc/passwd", read_only=True),
    "missing-dotdot-dotdot": Attack("a/../../outside/secret.txt"),
    "sub-dotdot-dotdot": Attack("sub/../../outside/secret.txt"),
    "deep-dotdot": Attack("sub/deeper/../../../outside/secret.txt"),
    "dot-dotdot": Attack("./../outside/secret.txt"),
    "double-slashes": Attack("sub//..//..//outside//secret.txt"),
    "dots-mixed": Attack("sub/./.././../outside/secret.txt"),
    "sibling-prefix-rel": Attack("../ws-evil/secret.txt"),
    "back-into-sibling": Attack("../ws/../ws-evil/secret.txt"),
    # absolute
    "abs-etc-passwd": Attack("/etc/passwd", read_only=True),
    "abs-fs-root": Attack("/", read_only=True),
    "abs-double-slash": Attack("//etc/passwd", read_only=True),
    "abs-outside": Attack("{base}/outside/secret.txt"),
    "abs-sibling-prefix": Attack("{base}/ws-evil/secret.txt"),
    "abs-sibling-dir": Attack("{base}/ws-evil"),
    "abs-ws-dotdot-sibling": Attack("{base}/ws/../ws-evil/secret.txt"),
    "abs-ws-dotdot-outside": Attack("{base}/ws/../outside/secret.txt"),
    "abs-sub-dotdot": Attack("{base}/ws/sub/../../outside/secret.txt"),
    "abs-parent-of-ws": Attack("{base}"),
    "abs-through-bad-link": Attack("{base}/ws/link_out_dir/secret.txt"),
    # symlinks
    "link-file-abs": Attack("link_out_file", final_link=True),
    "link-file-rel": Attack("link_out_file_rel", final_link=True),
    "link-dir-abs": Attack("link_out_dir/secret.txt"),
    "link-dir-rel": Attack("link_out_dir_rel/secret.txt"),
    "link-dir-itself": Attack("link_out_dir", final_link=True),
    "chain-file": Attack("chain_a", final_link=True),
    "chain-dir": Attack("chain_dir_a/secret.txt"),
    "dangling-abs": Attack("dangling_out", final_link=True),
    "dangling-rel": Attack("dangling_out_rel", final_link=True),
    "dangling-dir": Attack("dangling_out_dir/x.txt"),
    "link-in-parent-up": Attack("sub/link_up/outside/secret.txt"),
    "link-in-parent-out": Attack("sub/deeplink/secret.txt"),
    "link-to-parent": Attack("link_parent/outside/secret.txt"),
    "link-dot-then-dotdot": Attack("link_dot/../outside/secret.txt"),
    "abs-link-dotdot": Attack("link_abs_dotdot", final_link=True),
    "link-sibling-abs": Attack("link_evil/secret.txt"),
    "link-sibling-rel": Attack("link_evil_rel/secret.txt"),
    "link-fs-root": Attack("link_root_fs/etc/passwd", read_only=True),
    "inner-link-then-climb": Attack("link_in_dir/../../outside/secret.txt"),
    "inner-link-deep-climb": Attack("link_in_dir/deeper/../../../outside/secret.txt"),
    # /proc magic links
    "proc-root": Attack("/proc/self/root/etc/passwd", read_only=True),
    "proc-cwd": Attack("/proc/self/cwd", read_only=True),
    "link-proc-root": Attack("link_proc_root/etc/passwd", read_only=True),
    "link-proc-cwd": Attack("link_proc_cwd", final_link=True, read_only=True),
    "link-proc-fd": Attack("link_proc_fd", final_link=True, read_only=True),
    # loops
    "loop": Attack("loop_a", InvalidInput, final_link=True),
    "loop-parent": Attack("loop_a/x", InvalidInput),
    # malformed input
    "null-end": Attack("inside.txt\x00", InvalidInput),
    "null-only": Attack("\x00", InvalidInput),
    "null-dotdot": Attack("../\x00/etc/passwd", InvalidInput),
    "too-long": Attack("x" * 5000, InvalidInput),
    "too-long-many-parts": Attack("a/" * 2100 + "x", InvalidInput),
    "too-long-dotdots": Attack("../" * 2000 + "etc/passwd", InvalidInput),
    "long-component": Attack("n" * 256, InvalidInput),
    "long-inner-component": Attack("sub/" + "n" * 300 + "/x", InvalidInput),
    "tilde": Attack("~", InvalidInput),
    "tilde-ssh": Attack("~/.ssh/id_rsa", InvalidInput),
    "empty": Attack("", InvalidInput),
    "lone-surrogate": Attack("\ud800", InvalidInput),
}


def _ops(attack: Attack) -> dict[str, Callable[[Jail, str], object]]:
    ops: dict[str, Callable[[Jail, str], object]] = {
        "open_read": lambda j, p: j.open_read(p).close(),
        "stat": lambda j, p: j.stat(p),
        "resolve": lambda j, p: j.resolve(p),
        "resolve_write": lambda j, p: j.resolve(p, write=True),
        "scandir": lambda j, p: j.scandir(p),
    }
    if not attack.final_link:
        ops["lstat"] = lambda j, p: j.stat(p, follow_symlinks=False)
        # Copying from it would bring outside content in (a final link itself is
        # legitimately copied as a link).
        ops["copy_from"] = lambda j, p: j.copy(p, "copied-by-attack")
    if not attack.read_only:
        # overwrite=True: a final link is then checked like a write, not just "exists".
        ops["copy_to"] = lambda j, p: j.copy("inside.txt", p, overwrite=True)
        ops["move_to"] = lambda j, p: j.rename("inside.txt", p, overwrite=True)
        if not attack.final_link:
            ops["move_from"] = lambda j, p: j.rename(p, "moved-by-attack")
    if not attack.read_only:
        ops |= {
            "write_atomic": lambda j, p: j.write_atomic(p, b"pwned"),
            "write_exclusive": lambda j, p: j.write_atomic(p, b"pwned", exclusive=True),
            "append": lambda j, p: j.append(p, b"pwned"),
            "mkdir": lambda j, p: j.mkdir(p),
        }
        if not attack.final_link:
            ops["delete"] = lambda j, p: j.delete(p)
            ops["delete_recursive"] = lambda j, p: j.delete(p, recursive=True)
    return ops


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_is_refused(tree: Tree, jail: Jail, name: str) -> None:
    attack = ATTACKS[name]
    if "proc" in name and not sys.platform.startswith("linux"):
        pytest.skip("needs /proc")
    path = attack.path.replace("{base}", str(tree.base))
    before = snapshot(tree.base)
    for op, call in _ops(attack).items():
        with pytest.raises(ToolError) as info:
            call(jail, path)
        assert type(info.value) is attack.error, (op, info.value)
        assert info.value.message and "Traceback" not in info.value.message
    # Nothing changed anywhere: no outside file, no temp file, no directory.
    assert snapshot(tree.base) == before
    assert not (tree.outside / "new.txt").exists()


def test_there_are_at_least_forty_attacks() -> None:
    assert len(ATTACKS) >= 40


def test_refusal_messages_tell_what_to_do(jail: Jail, tree: Tree) -> None:
    with pytest.raises(PermissionDenied) as info:
        read(jail, "../x")
    msg = info.value.message
    assert "'../x'" in msg and str(tree.ws) in msg and "inside the workspace" in msg
    with pytest.raises(PermissionDenied, match="symlink 'link_out_dir'"):
        read(jail, "link_out_dir/secret.txt")
    with pytest.raises(InvalidInput, match="null byte"):
        read(jail, "a\x00b")


@linux_only
def test_magic_links_refused_even_inside_an_allowed_proc_root(tree: Tree, engine: str) -> None:
    j = Jail(tree.ws, extra_roots=["/proc/self"], engine=engine)  # type: ignore[arg-type]
    proc = f"/proc/{os.getpid()}"
    assert b"Name:" in read(j, f"{proc}/status")  # the root itself works
    for path in (f"{proc}/root/etc/passwd", f"{proc}/cwd", f"{proc}/exe", f"{proc}/fd/0"):
        with pytest.raises(PermissionDenied, match="/proc link"):
            read(j, path)


# --------------------------------------------------------------------------- reading


def test_read_write_roundtrip(jail: Jail, tree: Tree) -> None:
    assert read(jail, "inside.txt") == b"inside"
    assert jail.write_atomic("new.txt", b"hello") is True
    assert (tree.ws / "new.txt").read_bytes() == b"hello"
    assert jail.write_atomic("new.txt", b"again") is False
    assert read(jail, str(tree.ws / "new.txt")) == b"again"


def test_unicode_names(jail: Jail, tree: Tree) -> None:
    name = "données/日本語 ✓ é.txt"
    assert jail.write_atomic(name, "ü".encode()) is True
    assert (tree.ws / "données" / "日本語 ✓ é.txt").read_bytes() == "ü".encode()
    assert [e.name for e in jail.scandir("données")] == ["日本語 ✓ é.txt"]
    assert jail.display(jail.resolve(name)) == name


@pytest.mark.parametrize(
    "name", ["%2e%2e", "..%2f..%2fetc%2fpasswd", "..\\..\\x", "...", " lead", "a:b", "~x"]
)
def test_encoded_and_odd_names_stay_literal(jail: Jail, tree: Tree, name: str) -> None:
    if sys.platform == "win32":
        pytest.skip("POSIX names")
    jail.write_atomic(name, b"literal")
    assert (tree.ws / name).read_bytes() == b"literal"
    assert jail.resolve(name) == tree.ws / name
    assert snapshot(tree.outside) == {"secret.txt": ("file", b"OUTSIDE-SECRET")}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("link_in_file", "inside.txt"),
        ("link_in_dir/deeper/file.txt", "sub/deeper/file.txt"),
        ("link_in_abs", "inside.txt"),
        ("link_in_abs_dir/deeper/file.txt", "sub/deeper/file.txt"),
        ("link_in_chain/file.txt", "sub/deeper/file.txt"),
        ("sub/../inside.txt", "inside.txt"),
        ("sub/deeper/../../inside.txt", "inside.txt"),
        ("link_in_dir/../inside.txt", "inside.txt"),
        ("link_dot/link_dot/inside.txt", "inside.txt"),
        ("./sub/./deeper//file.txt", "sub/deeper/file.txt"),
    ],
)
def test_symlinks_and_dotdot_inside_work(jail: Jail, tree: Tree, path: str, expected: str) -> None:
    assert jail.resolve(path) == tree.ws / expected
    assert read(jail, path) == (tree.ws / expected).read_bytes()


def test_absolute_paths_inside_the_workspace(jail: Jail, tree: Tree) -> None:
    assert jail.resolve(str(tree.ws)) == tree.ws
    assert jail.resolve(str(tree.ws / "sub" / ".." / "inside.txt")) == tree.ws / "inside.txt"
    assert read(jail, str(tree.ws / "inside.txt")) == b"inside"


def test_absolute_path_through_a_symlinked_ancestor(tree: Tree, engine: str) -> None:
    alias = tree.base / "alias"
    _link(alias, tree.ws)  # like /var -> /private/var on macOS
    j = Jail(tree.ws, engine=engine)  # type: ignore[arg-type]
    assert j.resolve(str(alias / "inside.txt")) == tree.ws / "inside.txt"
    with pytest.raises(PermissionDenied):
        read(j, str(alias / "link_out_file"))


def test_resolve_missing_paths(jail: Jail, tree: Tree) -> None:
    assert jail.resolve(".") == tree.ws
    assert jail.resolve("new/dir/f.txt") == tree.ws / "new" / "dir" / "f.txt"
    assert jail.resolve("link_in_dir/new.txt") == tree.ws / "sub" / "new.txt"
    assert jail.resolve("dangling_in") == tree.ws / "sub" / "not-yet.txt"
    assert not (tree.ws / "new").exists()
    with pytest.raises(NotFound, match="'missing' is missing"):
        jail.resolve("missing/../inside.txt")


def test_display(jail: Jail, tree: Tree) -> None:
    assert jail.display(tree.ws) == "."
    assert jail.display(tree.ws / "sub" / "deeper") == "sub/deeper"
    assert jail.display(tree.outside) == str(tree.outside)
    assert jail.display(tree.evil / "x") == str(tree.evil / "x")  # not a prefix match


@pytest.mark.parametrize(
    ("path", "real"),
    [
        ("inside.txt", "inside.txt"),
        ("link_in_file", "inside.txt"),
        ("link_in_chain/file.txt", "sub/deeper/file.txt"),
        ("sub/../inside.txt", "inside.txt"),
    ],
)
def test_open_read_resolved_names_the_file_it_opened(
    jail: Jail, tree: Tree, path: str, real: str
) -> None:
    handle, where = jail.open_read_resolved(path)
    with handle:
        assert handle.read() == (tree.ws / real).read_bytes()
    assert where == tree.ws / real == jail.resolve(path)


def test_open_read_resolved_refuses_what_open_read_refuses(jail: Jail) -> None:
    for bad in ("link_out_file", "../outside/secret.txt", "sub", "loop_a", "nope.txt"):
        with pytest.raises(ToolError):
            jail.open_read_resolved(bad)


def test_open_read_errors(jail: Jail, tree: Tree) -> None:
    with pytest.raises(InvalidInput, match="is a directory; use list_dir"):
        read(jail, "sub")
    with pytest.raises(InvalidInput, match="is a directory"):
        read(jail, ".")
    with pytest.raises(NotFound, match="does not exist"):
        read(jail, "nope.txt")
    with pytest.raises(NotFound, match="does not exist"):
        read(jail, "nope/deeper.txt")
    with pytest.raises(NotFound, match="does not exist"):
        read(jail, "inside.txt/child")
    with pytest.raises(NotFound):
        read(jail, "dangling_in")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_open_read_fifo_refused_without_hanging(jail: Jail, tree: Tree) -> None:
    os.mkfifo(tree.ws / "pipe")
    with pytest.raises(InvalidInput, match="special file"):
        read(jail, "pipe")
    with pytest.raises(InvalidInput, match="special file"):
        jail.append("pipe", b"x")


def test_stat(jail: Jail, tree: Tree) -> None:
    assert stat.S_ISREG(jail.stat("link_in_file").st_mode)
    assert stat.S_ISLNK(jail.stat("link_in_file", follow_symlinks=False).st_mode)
    assert stat.S_ISDIR(jail.stat(".").st_mode)
    # The link itself lives inside, wherever it points.
    assert stat.S_ISLNK(jail.stat("link_out_file", follow_symlinks=False).st_mode)
    with pytest.raises(NotFound):
        jail.stat("nope")


def test_scandir(jail: Jail, tree: Tree) -> None:
    entries = {e.name: e for e in jail.scandir(".")}
    assert entries["inside.txt"] == DirEntryInfo(
        "inside.txt", "file", 6, entries["inside.txt"].mtime, False
    )
    assert entries["sub"].kind == "directory" and entries["sub"].size == 0
    assert entries[".hidden"].is_hidden
    # A symlink is reported as one, even when it points outside; never followed.
    assert entries["link_out_dir"].kind == "symlink"
    assert entries["dangling_out"].kind == "symlink"
    assert [e.name for e in jail.scandir("link_in_dir")] == ["deeper", "deeplink", "link_up"]
    assert [e.name for e in jail.scandir("sub/deeper")] == ["file.txt"]
    with pytest.raises(InvalidInput, match="use read_file"):
        jail.scandir("inside.txt")
    with pytest.raises(NotFound):
        jail.scandir("nope")


# --------------------------------------------------------------------------- writing


def test_write_creates_parents_or_says_how(jail: Jail, tree: Tree) -> None:
    assert jail.write_atomic("a/b/c.txt", b"x") is True
    assert (tree.ws / "a" / "b" / "c.txt").read_bytes() == b"x"
    with pytest.raises(NotFound, match="make_parents=true"):
        jail.write_atomic("p/q/r.txt", b"x", make_parents=False)
    assert not (tree.ws / "p").exists()


def test_write_replaces_a_symlink_never_its_target(jail: Jail, tree: Tree) -> None:
    assert jail.write_atomic("link_in_file", b"replaced") is False
    assert not (tree.ws / "link_in_file").is_symlink()
    assert (tree.ws / "link_in_file").read_bytes() == b"replaced"
    assert (tree.ws / "inside.txt").read_bytes() == b"inside"
    jail.write_atomic("dangling_in", b"d")
    assert not (tree.ws / "dangling_in").is_symlink()
    assert not (tree.ws / "sub" / "not-yet.txt").exists()


def test_write_keeps_permission_bits(jail: Jail, tree: Tree) -> None:
    target = tree.ws / "inside.txt"
    os.chmod(target, 0o640)
    jail.write_atomic("inside.txt", b"new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    os.chmod(target, 0o755)
    jail.write_atomic("inside.txt", b"newer")
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_write_refuses_directories_and_leaves_no_temp(jail: Jail, tree: Tree) -> None:
    for path in ("sub", ".", "sub/deeper/.."):
        with pytest.raises(InvalidInput, match="is a directory"):
            jail.write_atomic(path, b"x")
    with pytest.raises(NotFound):
        jail.write_atomic("inside.txt/x", b"x")
    leftovers = [p for p in tree.ws.rglob("*") if p.name.startswith(TEMP_PREFIX)]
    assert leftovers == []


def test_write_rejects_non_bytes(jail: Jail) -> None:
    with pytest.raises(InvalidInput, match="bytes"):
        jail.write_atomic("x.txt", "text")  # type: ignore[arg-type]


def test_exclusive_write(jail: Jail, tree: Tree) -> None:
    assert jail.write_atomic("ex.txt", b"one", exclusive=True) is True
    with pytest.raises(AlreadyExists, match="already exists"):
        jail.write_atomic("ex.txt", b"two", exclusive=True)
    assert (tree.ws / "ex.txt").read_bytes() == b"one"
    # A dangling link is an existing name: not replaced, not followed.
    with pytest.raises(AlreadyExists):
        jail.write_atomic("dangling_in", b"x", exclusive=True)
    assert (tree.ws / "dangling_in").is_symlink()
    assert not (tree.ws / "sub" / "not-yet.txt").exists()


def test_exclusive_write_race_has_one_winner(jail: Jail, tree: Tree) -> None:
    results: dict[int, str] = {}
    start = threading.Barrier(12)

    def writer(i: int) -> None:
        start.wait()
        try:
            jail.write_atomic("race.txt", f"writer-{i}".encode(), exclusive=True)
            results[i] = "won"
        except AlreadyExists:
            results[i] = "lost"

    for _round in range(10):
        (tree.ws / "race.txt").unlink(missing_ok=True)
        results.clear()
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, r in results.items() if r == "won"]
        assert len(results) == 12 and len(winners) == 1, results
        assert (tree.ws / "race.txt").read_bytes() == f"writer-{winners[0]}".encode()
    assert not [p for p in tree.ws.iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_append(jail: Jail, tree: Tree) -> None:
    assert jail.append("logs/a.log", b"1\n") is True
    assert jail.append("logs/a.log", b"2\n") is False
    assert (tree.ws / "logs" / "a.log").read_bytes() == b"1\n2\n"
    # Through an inside symlink the target grows; the link stays a link.
    assert jail.append("link_in_file", b"+") is False
    assert (tree.ws / "inside.txt").read_bytes() == b"inside+"
    assert (tree.ws / "link_in_file").is_symlink()
    with pytest.raises(NotFound, match="make_parents=true"):
        jail.append("nope/x.log", b"1", make_parents=False)
    with pytest.raises(InvalidInput, match="directory"):
        jail.append("sub", b"1")


def test_mkdir(jail: Jail, tree: Tree) -> None:
    assert jail.mkdir("m/n/o") is True
    assert (tree.ws / "m" / "n" / "o").is_dir()
    assert jail.mkdir("m/n/o") is False
    assert jail.mkdir("link_in_dir") is False
    assert jail.mkdir(".") is False
    with pytest.raises(AlreadyExists, match="not a directory"):
        jail.mkdir("inside.txt")
    with pytest.raises(NotFound, match="parents=true"):
        jail.mkdir("x/y", parents=False)
    assert jail.mkdir("dangling_in") is True  # creates the link's inside target
    assert (tree.ws / "sub" / "not-yet.txt").is_dir()


def test_delete(jail: Jail, tree: Tree) -> None:
    assert jail.delete("inside.txt") == "file"
    assert jail.delete("link_out_dir") == "symlink"  # the link, not the target
    assert (tree.outside / "secret.txt").read_bytes() == b"OUTSIDE-SECRET"
    (tree.ws / "empty").mkdir()
    assert jail.delete("empty") == "directory"
    with pytest.raises(InvalidInput, match="recursive=true"):
        jail.delete("sub")
    with pytest.raises(NotFound):
        jail.delete("nope")
    for root_spelling in (".", "sub/..", str(tree.ws), "sub/deeper/../..", "link_in_dir/.."):
        with pytest.raises(PermissionDenied, match="cannot be deleted"):
            jail.delete(root_spelling, recursive=True)
    assert tree.ws.is_dir()


def test_delete_through_dotdot_uses_the_real_name(jail: Jail, tree: Tree) -> None:
    (tree.ws / "sub" / "deeper" / "file.txt").unlink()
    assert jail.delete("sub/deeper/..", recursive=True) == "directory"
    assert not (tree.ws / "sub").exists()


def test_hard_links_are_never_written_through(jail: Jail, tree: Tree) -> None:
    os.link(tree.outside / "secret.txt", tree.ws / "hard")
    with pytest.raises(PermissionDenied, match="hard links"):
        jail.append("hard", b"pwned")
    assert jail.write_atomic("hard", b"mine") is False  # replaces the name only
    assert (tree.ws / "hard").read_bytes() == b"mine"
    assert (tree.outside / "secret.txt").read_bytes() == b"OUTSIDE-SECRET"


def test_recursive_delete_never_follows_symlinks(jail: Jail, tree: Tree) -> None:
    victim = tree.ws / "victim"
    (victim / "a" / "b").mkdir(parents=True)
    (victim / "a" / "b" / "f").write_bytes(b"f")
    _link(victim / "out_dir", tree.outside)
    _link(victim / "a" / "out_file", tree.outside / "secret.txt")
    _link(victim / "a" / "b" / "up", "../../..")
    before = snapshot(tree.outside)
    assert jail.delete("victim", recursive=True) == "directory"
    assert not victim.exists()
    assert snapshot(tree.outside) == before
    assert (tree.ws / "inside.txt").exists() and (tree.ws / "sub" / "deeper").is_dir()


# --------------------------------------------------------------------------- roots


def test_extra_roots_are_read_only(tree: Tree, engine: str) -> None:
    ro = tree.base / "ro"
    ro.mkdir()
    (ro / "doc.txt").write_bytes(b"doc")
    j = Jail(tree.ws, extra_roots=[ro], engine=engine)  # type: ignore[arg-type]
    assert read(j, str(ro / "doc.txt")) == b"doc"
    assert j.display(ro / "doc.txt") == str(ro / "doc.txt")
    assert [e.name for e in j.scandir(str(ro))] == ["doc.txt"]
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.write_atomic(str(ro / "doc.txt"), b"x")
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.resolve(str(ro / "new.txt"), write=True)
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.delete(str(ro / "doc.txt"))
    with pytest.raises(PermissionDenied, match="cannot be deleted"):
        j.delete(str(ro), recursive=True)
    with pytest.raises(PermissionDenied, match="outside the workspace"):
        read(j, "../ro/doc.txt")  # relative paths stay in the workspace
    assert not j.is_writable(ro / "doc.txt") and j.is_writable(tree.ws / "x")
    assert (ro / "doc.txt").read_bytes() == b"doc"


def test_writable_roots(tree: Tree, engine: str) -> None:
    wr = tree.base / "wr"
    wr.mkdir()
    j = Jail(tree.ws, writable_roots=[wr], engine=engine)  # type: ignore[arg-type]
    assert j.write_atomic(str(wr / "out.txt"), b"ok") is True
    assert (wr / "out.txt").read_bytes() == b"ok"
    with pytest.raises(PermissionDenied):
        j.write_atomic(str(tree.outside / "x"), b"x")


def test_listed_both_ways_is_read_only(tree: Tree) -> None:
    both = tree.base / "both"
    both.mkdir()
    j = Jail(tree.ws, extra_roots=[both], writable_roots=[both])
    assert not j.is_writable(both / "x")


def test_nested_read_only_root_inside_workspace(tree: Tree, engine: str) -> None:
    vendor = tree.ws / "lib" / "vendor"
    vendor.mkdir(parents=True)
    (vendor / "v.txt").write_bytes(b"v")
    j = Jail(tree.ws, extra_roots=[vendor], engine=engine)  # type: ignore[arg-type]
    _link(tree.ws / "to_vendor", "lib/vendor")
    assert read(j, "lib/vendor/v.txt") == b"v"
    for path in ("lib/vendor/v.txt", "lib/vendor/new.txt", "to_vendor/new.txt"):
        with pytest.raises(PermissionDenied, match="read-only root"):
            j.write_atomic(path, b"x")
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.write_atomic("to_vendor", b"x")  # replacing a link whose target is read-only
    with pytest.raises(PermissionDenied):
        j.delete("lib", recursive=True)
    with pytest.raises(PermissionDenied, match="cannot be deleted"):
        j.delete("lib/vendor", recursive=True)
    assert (vendor / "v.txt").read_bytes() == b"v"


def test_absolute_link_into_an_extra_root(tree: Tree, engine: str) -> None:
    docs = tree.base / "docs"
    docs.mkdir()
    (docs / "d.txt").write_bytes(b"d")
    _link(tree.ws / "docs", docs)
    j = Jail(tree.ws, extra_roots=[docs], engine=engine)  # type: ignore[arg-type]
    assert read(j, "docs/d.txt") == b"d"
    assert j.resolve("docs/d.txt") == docs / "d.txt"
    with pytest.raises(PermissionDenied, match="read-only root"):
        j.write_atomic("docs/d.txt", b"x")
    # Without the extra root the same link is an escape.
    with pytest.raises(PermissionDenied, match="points outside"):
        read(Jail(tree.ws, engine=engine), "docs/d.txt")  # type: ignore[arg-type]


def test_constructor_validates_roots(tree: Tree) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        Jail(tree.base / "missing")
    with pytest.raises(InvalidInput, match="not a directory"):
        Jail(tree.ws / "inside.txt")
    with pytest.raises(InvalidInput, match="does not exist"):
        Jail(tree.ws, extra_roots=[tree.base / "missing"])
    with pytest.raises(InvalidInput, match="engine"):
        Jail(tree.ws, engine="magic")  # type: ignore[arg-type]
    j = Jail(tree.ws / "link_in_dir")  # a root given through a symlink is realpath'ed
    assert j.root == tree.ws / "sub"


def test_workspace_recreated_or_replaced(tree: Tree, engine: str) -> None:
    ws2 = tree.base / "ws2"
    ws2.mkdir()
    j = Jail(ws2, engine=engine)  # type: ignore[arg-type]
    j.write_atomic("a.txt", b"a")
    (ws2 / "a.txt").unlink()
    ws2.rmdir()
    ws2.mkdir()  # same path, new directory: still the workspace
    assert j.write_atomic("b.txt", b"b") is True
    (ws2 / "b.txt").unlink()
    ws2.rmdir()
    _link(ws2, tree.outside)  # the workspace itself swapped for a symlink
    with pytest.raises(StorageError, match="no longer exists as a directory"):
        read(j, "secret.txt")


# --------------------------------------------------------------------------- system dirs


@pytest.mark.skipif(os.name != "posix", reason="POSIX system dirs")
def test_system_dirs_never_writable(engine: str) -> None:
    j = Jail("/", writable_roots=["/"], engine=engine)  # type: ignore[arg-type]
    readable = "/etc/hostname" if os.path.isfile("/etc/hostname") else "/etc/passwd"
    with j.open_read(readable) as f:
        assert f.read() == Path(readable).read_bytes()
    # Each refusal is checked before anything is created: the parents are missing
    # and make_parents=False, so a broken check fails with NotFound, writing nothing.
    for path in ("/etc/lt-jail-test-missing/x", "/usr/lt-jail-test-missing/x",
                 "/var/lib/lt-jail-test-missing/x", "/bin/lt-jail-test-missing/x"):  # fmt: skip
        with pytest.raises(PermissionDenied, match="system directory"):
            j.write_atomic(path, b"x", make_parents=False)
        with pytest.raises(PermissionDenied, match="system directory"):
            j.resolve(path, write=True)
    with pytest.raises(PermissionDenied, match="system directory"):
        j.mkdir("/etc/lt-jail-test-missing/x", parents=False)
    with pytest.raises(PermissionDenied, match="system directory"):
        j.delete("/etc/lt-jail-test-missing")
    with pytest.raises(PermissionDenied, match="cannot be deleted"):
        j.delete("/", recursive=True)
    assert not j.is_writable(Path("/etc/x")) and not j.is_writable(Path("/usr/bin/x"))
    assert j.is_writable(Path("/home/someone/x"))


@pytest.mark.skipif(os.name != "posix", reason="POSIX system dirs")
def test_root_chosen_inside_a_system_dir_is_writable() -> None:
    # The user picked it explicitly (e.g. a checkout under /usr/local/src).
    j = Jail("/usr/share")
    assert j.is_writable(Path(os.path.realpath("/usr/share")) / "x")
    assert not Jail("/usr").is_writable(Path("/usr/x"))


# --------------------------------------------------------------------------- hygiene


def test_every_failure_is_a_tool_error(jail: Jail, tree: Tree) -> None:
    calls: list[Callable[[], object]] = [
        lambda: jail.open_read(123),  # type: ignore[arg-type]
        lambda: jail.open_read(None),  # type: ignore[arg-type]
        lambda: jail.scandir("inside.txt/x"),
        lambda: jail.mkdir("inside.txt/x"),
        lambda: jail.delete("inside.txt/x"),
        lambda: jail.append("inside.txt/x", b"x"),
        lambda: jail.stat("sub/deeper/file.txt/x"),
    ]
    for call in calls:
        with pytest.raises(ToolError):
            call()


@linux_only
def test_no_descriptor_leaks(jail: Jail, tree: Tree) -> None:
    def count() -> int:
        return len(os.listdir("/proc/self/fd"))

    def exercise() -> None:
        jail.write_atomic("leak/a.txt", b"a")
        jail.append("leak/a.txt", b"b")
        with jail.open_read("link_in_chain/file.txt") as f:
            f.read()
        jail.scandir("link_in_dir")
        jail.stat("sub")
        jail.mkdir("leak/d/e")
        jail.delete("leak", recursive=True)
        for bad in ("link_out_dir/secret.txt", "../x", "loop_a"):
            with pytest.raises(ToolError):
                read(jail, bad)

    exercise()  # warm caches (ctypes, openat2 probe)
    before = count()
    for _ in range(20):
        exercise()
    assert count() == before

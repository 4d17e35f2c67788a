"""FileIndex: the file list behind `GET /files?q=`, on real trees with the real engines."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from local_tools.search import file_index
from local_tools.search.engine import ENGINE_ENV
from local_tools.search.file_index import FileIndex
from local_tools.search.ripgrep import find_rg

HAS_RG = find_rg() is not None


@pytest.fixture(params=["rg", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg" and not HAS_RG:
        pytest.skip("no ripgrep on this machine")
    monkeypatch.setenv(ENGINE_ENV, request.param)
    return str(request.param)


@pytest.fixture
def index_of() -> Iterator[Callable[..., FileIndex]]:
    made: list[FileIndex] = []

    def make(root: Path, **kwargs: object) -> FileIndex:
        ix = FileIndex(root, **kwargs)  # type: ignore[arg-type]
        made.append(ix)
        return ix

    yield make
    for ix in made:
        ix.close()


def touch(root: Path, *paths: str) -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")


def eventually(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# -- ranking -------------------------------------------------------------------------


def test_basename_matches_before_directory_matches(workspace: Path, index_of, engine) -> None:
    touch(
        workspace,
        "router/a.py",  # folder match, short path
        "src/deep/nested/router.go",  # file name match, long path
        "lib/router.py",  # file name match, short path
        "x/routers/b.py",  # folder match
    )
    assert index_of(workspace).search("router") == [
        "lib/router.py",
        "src/deep/nested/router.go",
        "router/a.py",
        "x/routers/b.py",
    ]


def test_shorter_paths_first_then_by_path(workspace: Path, index_of, engine) -> None:
    touch(workspace, "b/cfg.ts", "a/cfg.ts", "cfg.ts", "aa/cfg.ts", "a/cfg.tsx")
    assert index_of(workspace).search("cfg") == [
        "cfg.ts",
        "a/cfg.ts",
        "b/cfg.ts",
        "a/cfg.tsx",
        "aa/cfg.ts",
    ]


def test_case_insensitive_both_ways(workspace: Path, index_of, engine) -> None:
    touch(workspace, "Docs/README.md", "src/ReadMe.txt", "Straße.txt")
    ix = index_of(workspace)
    assert ix.search("readme") == ["Docs/README.md", "src/ReadMe.txt"]
    assert ix.search("READme") == ["Docs/README.md", "src/ReadMe.txt"]
    assert ix.search("docs/") == ["Docs/README.md"]
    assert ix.search("STRASSE") == ["Straße.txt"]  # casefold: ß is ss


def test_both_separators_work(workspace: Path, index_of, engine) -> None:
    touch(workspace, "src/app/main.py", "src/main.py", "app/src.py")
    ix = index_of(workspace)
    assert ix.search("app/main") == ["src/app/main.py"]
    assert ix.search("app\\main") == ["src/app/main.py"]
    assert ix.search("src\\app\\") == ["src/app/main.py"]


def test_leading_slash_anchors_a_name_start(workspace: Path, index_of, engine) -> None:
    touch(workspace, "README.md", "docs/reader.py", "thread.py")
    ix = index_of(workspace)
    assert ix.search("/read", limit=2) == ["README.md", "docs/reader.py"]
    assert ix.search("/read") == ["README.md", "docs/reader.py", "thread.py"]  # then fuzzy
    assert ix.search("read") == ["README.md", "thread.py", "docs/reader.py"]


def test_fuzzy_fallback_after_substring_matches(workspace: Path, index_of, engine) -> None:
    touch(
        workspace,
        "src/fidx.py",  # substring
        "src/file_index.py",  # fuzzy in the name, 6 characters between
        "f/i/d/x.py",  # fuzzy across folders only
        "find_x.py",  # fuzzy in the name, 2 characters between
        "nothing.py",
    )
    ix = index_of(workspace)
    assert ix.search("fidx") == ["src/fidx.py", "find_x.py", "src/file_index.py", "f/i/d/x.py"]
    # the fuzzy pass only fills up to `limit`
    assert ix.search("fidx", limit=1) == ["src/fidx.py"]
    assert ix.search("fidx", limit=2) == ["src/fidx.py", "find_x.py"]


def test_fuzzy_ignores_spaces_and_needs_order(workspace: Path, index_of, engine) -> None:
    touch(workspace, "src/file_index.py", "xedni.py")
    ix = index_of(workspace)
    assert ix.search("file index") == ["src/file_index.py"]
    assert ix.search("xdf") == []  # characters present, not in this order


def test_empty_query_lists_shortest_first_and_limit(workspace: Path, index_of, engine) -> None:
    touch(workspace, *(f"d{i:02}/f.txt" for i in range(60)), "top.txt")
    ix = index_of(workspace)
    everything = ix.search("")
    assert len(everything) == 50
    assert everything[:3] == ["top.txt", "d00/f.txt", "d01/f.txt"]
    assert len(ix.search("", limit=7)) == 7
    assert len(ix.search("f.txt", limit=55)) == 55
    assert len(ix.search("f.txt", limit=500)) == 60
    assert ix.search("f", limit=0) == [] and ix.search("f", limit=-3) == []
    assert ix.search("  top.txt  ") == ["top.txt"]  # surrounding blanks dropped


def test_order_is_deterministic(workspace: Path, index_of, engine) -> None:
    touch(workspace, *(f"{a}/{b}/{a}{b}.py" for a in "pqrs" for b in "xyz"))
    first = index_of(workspace).search("p")
    assert first == index_of(workspace).search("p")
    assert first == index_of(workspace).search("P")


# -- what is listed ------------------------------------------------------------------


def test_files_only(workspace: Path, index_of, engine) -> None:
    touch(workspace, "models/user.py")
    (workspace / "models" / "empty_dir").mkdir()
    (workspace / "emptydir").mkdir()
    ix = index_of(workspace)
    assert ix.search("models") == ["models/user.py"]
    assert ix.search("empty") == []


def test_gitignore_and_default_folders_are_skipped(workspace: Path, index_of, engine) -> None:
    touch(
        workspace,
        "keep.js",
        "app/keep.js",
        "secret.log",
        "gen/out.js",
        "node_modules/pkg/index.js",
        "app/node_modules/pkg/index.js",
        ".next/server.js",
        "dist/bundle.js",
        "build/bundle.js",
        "vendor/lib.js",
        ".git/config.js",
        ".github/ci.js",  # hidden, not ignored: kept
    )
    (workspace / ".gitignore").write_text("*.log\n/gen/\n")
    ix = index_of(workspace)
    assert sorted(ix.search("js", limit=100)) == [".github/ci.js", "app/keep.js", "keep.js"]
    assert ix.search("log") == []
    assert ix.search("") == ["keep.js", ".gitignore", "app/keep.js", ".github/ci.js"]


def test_exclude_dirs_can_be_chosen(workspace: Path, index_of, engine) -> None:
    touch(workspace, "build/a.txt", "tmp/b.txt", "c.txt")
    ix = index_of(workspace, exclude_dirs=("tmp",))
    assert sorted(ix.search("txt")) == ["build/a.txt", "c.txt"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_symlinks_are_not_listed_inside_or_out(tmp_path: Path, workspace: Path, index_of, engine):
    outside = tmp_path / "outside"
    touch(outside, "secret.txt", "dir/secret2.txt")
    touch(workspace, "real/ok.txt")
    (workspace / "link_dir").symlink_to(outside / "dir")
    (workspace / "link_file.txt").symlink_to(outside / "secret.txt")
    (workspace / "inner_link.txt").symlink_to(workspace / "real" / "ok.txt")
    ix = index_of(workspace)
    assert ix.search("") == ["real/ok.txt"]
    assert ix.search("secret") == []


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_root_given_through_a_symlink(tmp_path: Path, workspace: Path, index_of, engine) -> None:
    touch(workspace, "a/b.txt")
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert index_of(alias).search("b") == ["a/b.txt"]


def test_missing_or_bad_root_is_empty(tmp_path: Path, index_of, engine) -> None:
    assert index_of(tmp_path / "nope").search("") == []
    (tmp_path / "file.txt").write_text("x")
    ix = index_of(tmp_path / "file.txt")
    assert ix.search("file") == []
    assert ix.note == "workspace root not found"


def test_any_query_is_safe(workspace: Path, index_of, engine) -> None:
    touch(workspace, "a[1].py", "b(.*).py", "c\\d.txt" if os.name != "nt" else "cd.txt")
    ix = index_of(workspace)
    assert ix.search("[1]") == ["a[1].py"]
    assert ix.search("(.*)") == ["b(.*).py"]
    for q in ["", " ", "\n", "\0", "a\nb", "*" * 5000, "é" * 300, "\\\\\\", "./", "[", "^$"]:
        assert isinstance(ix.search(q), list)
    assert ix.search(None) == []  # type: ignore[arg-type]
    assert ix.search(42) == []  # type: ignore[arg-type]


def test_file_cap_keeps_some_and_says_so(workspace: Path, index_of, engine) -> None:
    touch(workspace, *(f"f{i}.txt" for i in range(30)))
    ix = index_of(workspace, max_files=10)
    assert len(ix.search("", limit=100)) == 10
    assert ix.note == "only the first 10 files found are searched"


# -- freshness -----------------------------------------------------------------------


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Counts the walks FileIndex starts."""
    started: list[float] = []
    real = file_index.list_files

    def counting(*args, **kwargs):
        started.append(time.monotonic())
        yield from real(*args, **kwargs)

    monkeypatch.setattr(file_index, "list_files", counting)
    return started


def test_lists_once_and_reuses(workspace: Path, index_of, walks) -> None:
    touch(workspace, "a/x.py", "y.py")
    ix = index_of(workspace, ttl=3600)
    assert walks == []  # lazily, on the first search
    for q in ["", "x", "y", "a/", "zz"]:
        ix.search(q)
    assert len(walks) == 1


def test_new_file_appears_after_ttl(workspace: Path, index_of, engine) -> None:
    touch(workspace, "a/b/c/old.txt")
    ix = index_of(workspace, ttl=0.3, min_refresh=3600)
    assert ix.search("txt") == ["a/b/c/old.txt"]
    touch(workspace, "a/b/c/new.txt")  # deep: no watched folder changes
    assert eventually(lambda: ix.search("new") == ["a/b/c/new.txt"])


def test_new_file_appears_after_top_level_change(workspace: Path, index_of, engine) -> None:
    touch(workspace, "src/old.py", "docs/x/y.md")
    ix = index_of(workspace, ttl=3600, min_refresh=0)
    assert ix.search("py") == ["src/old.py"]
    touch(workspace, "src/new.py")  # src's mtime changes
    assert eventually(lambda: ix.search("new") == ["src/new.py"])
    touch(workspace, "root.py")  # the root's mtime changes
    assert eventually(lambda: ix.search("root") == ["root.py"])
    touch(workspace, "fresh/dir/z.py")  # a new top-level folder: the root changes
    assert eventually(lambda: ix.search("z.py") == ["fresh/dir/z.py"])


def test_deleted_file_disappears(workspace: Path, index_of, engine) -> None:
    touch(workspace, "src/gone.py", "src/stays.py")
    ix = index_of(workspace, ttl=3600, min_refresh=0)
    assert ix.search(".py") == ["src/gone.py", "src/stays.py"]
    (workspace / "src" / "gone.py").unlink()
    assert eventually(lambda: ix.search(".py") == ["src/stays.py"])


def test_nothing_changed_no_walk_before_ttl(workspace: Path, index_of, walks) -> None:
    touch(workspace, "src/a.py")
    ix = index_of(workspace, ttl=3600, min_refresh=0)
    for _ in range(50):
        ix.search("a")
    (workspace / "src" / "a.py").write_text("changed content")  # no folder mtime change
    for _ in range(50):
        ix.search("a")
    assert len(walks) == 1


def test_search_never_waits_for_a_refresh(
    workspace: Path, index_of, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(workspace, "a.py")
    real = file_index.list_files
    release = threading.Event()
    second_started = threading.Event()
    calls = []

    def slow_second(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            second_started.set()
            release.wait(30)
        yield from real(*args, **kwargs)

    monkeypatch.setattr(file_index, "list_files", slow_second)
    ix = index_of(workspace, ttl=0, min_refresh=0)
    assert ix.search("") == ["a.py"]
    touch(workspace, "b.py")
    assert ix.search("") == ["a.py"]  # stale: asks for a refresh, answers at once
    assert second_started.wait(10)
    for _ in range(20):  # the walk is blocked, searches still answer (old listing)
        assert ix.search("") == ["a.py"]
    assert not release.is_set()
    release.set()
    assert eventually(lambda: ix.search("") == ["a.py", "b.py"])


def test_slow_first_listing_answers_with_what_is_known(
    workspace: Path, index_of, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def slow(*args, **kwargs):
        yield ["early.txt"]
        release.wait(30)
        yield ["late.txt"]

    monkeypatch.setattr(file_index, "list_files", slow)
    ix = index_of(workspace, first_wait=0.2, ttl=3600)
    assert ix.search("txt") == ["early.txt"]
    assert ix.note == "listing still running, files so far: 1"
    release.set()
    assert eventually(lambda: ix.search("txt") == ["late.txt", "early.txt"])
    assert ix.note is None


def test_close_stops_the_refresher(workspace: Path, index_of) -> None:
    touch(workspace, "a.py")
    ix = index_of(workspace, ttl=0, min_refresh=0)
    assert ix.search("a") == ["a.py"]
    thread = ix._thread
    assert thread is not None
    ix.close()
    assert not thread.is_alive()
    touch(workspace, "b.py")
    assert ix.search("") == ["a.py"]  # the last listing, no longer refreshed
    ix.close()  # twice is fine
    closed = index_of(workspace)
    closed.close()
    assert closed.search("a") == []  # closed before any listing: nothing, at once


def test_close_stops_a_running_walk(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen_check = threading.Event()

    def endless(root, *, exclude_dirs, check):
        seen_check.set()
        while True:
            check()  # raises once closed
            time.sleep(0.01)
            yield []

    monkeypatch.setattr(file_index, "list_files", endless)
    ix = FileIndex(workspace, first_wait=0.05)
    assert ix.search("x") == []
    assert seen_check.wait(10)
    thread = ix._thread
    ix.close()
    assert thread is not None and not thread.is_alive()


def test_threads_search_while_it_refreshes(workspace: Path, index_of, engine) -> None:
    touch(workspace, *(f"pkg{i}/mod{j}.py" for i in range(10) for j in range(20)))
    ix = index_of(workspace, ttl=0, min_refresh=0)
    errors: list[BaseException] = []
    stop = threading.Event()

    def searcher(q: str) -> None:
        try:
            while not stop.is_set():
                found = ix.search(q, limit=30)
                assert isinstance(found, list) and len(found) <= 30
                assert all(isinstance(p, str) and ".py" in p for p in found)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(q,)) for q in ["", "m", "pkg1/", "md"]]
    for t in threads:
        t.start()
    for n in range(15):  # the tree changes under them
        touch(workspace, f"pkg{n % 10}/added{n}.py")
        time.sleep(0.02)
    assert eventually(lambda: len(ix.search("added", limit=100)) == 15)
    stop.set()
    for t in threads:
        t.join(30)
    assert errors == []


# -- the ranking rules, checked against a plain reading of them ------------------------


def _subsequence_end(q: str, line: str) -> int | None:
    """Where the leftmost in-order match of q's characters ends in line, or None."""
    pos = 0
    for c in q:
        pos = line.find(c, pos)
        if pos < 0:
            return None
        pos += 1
    return pos


def _gap(q: str, line: str, end: int) -> int:
    """Extra characters in the tightest window holding q in order that ends at `end`."""
    j = end - 1
    for c in reversed(q[:-1]):
        j = line.rfind(c, 0, j)
    return end - j - len(q)


def reference_search(paths: list[str], query: str, limit: int) -> list[str]:
    q = query.replace("\\", "/").strip().casefold()
    order = sorted(paths, key=lambda p: (len(p), p))
    if not q:
        return order[:limit]
    full = {p: "/" + p.casefold() for p in order}
    name = {p: full[p][full[p].rfind("/") :] for p in order}
    out = [p for p in order if q in name[p]]
    out += [p for p in order if q in full[p] and p not in out]
    out = out[:limit]
    fq = q.replace(" ", "")
    if len(fq) < 2:
        return out
    for where in (name, full):
        if len(out) >= limit:
            break
        scored = []
        for p in order:
            end = _subsequence_end(fq, where[p])
            if p not in out and end is not None:
                scored.append((_gap(fq, where[p], end), order.index(p), p))
        out += [p for *_, p in sorted(scored)[: limit - len(out)]]
    return out


def test_ranking_matches_the_rules_on_a_random_tree(workspace: Path, index_of, engine) -> None:
    import random

    rng = random.Random(1234)
    alphabet = "abcAB_-"

    def part() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))

    paths = set()
    while len(paths) < 300:
        folders = [part() for _ in range(rng.randint(0, 3))]
        paths.add("/".join([*folders, part() + rng.choice([".py", ".md", ""])]))
    # a folder and a file may not share a name
    paths = {p for p in paths if not any(q.startswith(p + "/") for q in paths)}
    touch(workspace, *paths)
    ix = index_of(workspace)
    assert sorted(ix.search("", limit=1000)) == sorted(paths)
    queries = ["a", "B", "ab", "a/b", "ba", "abc", "a_b", "-a", "/a", "b/", "aaa", "cab", "a b"]
    queries += [
        "".join(rng.choice(alphabet + "/") for _ in range(rng.randint(1, 6))) for _ in range(60)
    ]
    for q in queries:
        for limit in (1, 7, 50, 400):
            assert ix.search(q, limit) == reference_search(sorted(paths), q, limit), (q, limit)


def test_a_failing_walk_answers_empty_and_is_retried_after_ttl(
    workspace: Path, index_of, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    touch(workspace, "a.py")
    calls = []
    real = file_index.list_files

    def broken(*args, **kwargs):
        calls.append(1)
        raise RuntimeError("rg exploded")
        yield []

    monkeypatch.setattr(file_index, "list_files", broken)
    ix = index_of(workspace, ttl=3600)
    assert ix.search("a") == []
    assert ix.search("a") == []  # not walked again on every search
    assert calls == [1]
    assert ix.note == "listing failed; see the log"
    assert "rg exploded" in caplog.text
    monkeypatch.setattr(file_index, "list_files", real)
    ix.ttl = 0
    assert eventually(lambda: ix.search("a") == ["a.py"])
    assert ix.note is None

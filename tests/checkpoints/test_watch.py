"""TreeWatcher on real trees: which changes it reports, and when it gives up (None)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from local_tools.checkpoints.watch import TreeWatcher

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux only")


def _tree(root: Path) -> Path:
    for d in ("src/pkg", "docs", "build/out", ".git/objects"):
        (root / d).mkdir(parents=True)
    (root / "src/pkg/mod.py").write_text("x = 1\n")
    (root / "README").write_text("hi\n")
    (root / ".git/index").write_bytes(b"idx")
    return root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return _tree(tmp_path / "ws")


@pytest.fixture
def start(root: Path) -> Iterator[Callable[..., TreeWatcher]]:
    made: list[TreeWatcher] = []

    def start(skip_dir: Callable[[str], bool] | None = None) -> TreeWatcher:
        w = TreeWatcher.start(root, skip_dir=skip_dir)
        assert w is not None
        made.append(w)
        return w

    yield start
    for w in made:
        w.close()


def test_nothing_changed_is_an_empty_set(start: Callable[..., TreeWatcher]) -> None:
    w = start()
    assert w.drain() == set()
    assert w.drain() == set()
    assert w.healthy


def test_written_created_deleted_chmodded_renamed(
    root: Path, start: Callable[..., TreeWatcher]
) -> None:
    w = start()
    (root / "src/pkg/mod.py").write_text("x = 2\n")
    assert w.drain() == {"src/pkg/mod.py"}
    (root / "docs/new.md").write_text("new\n")
    assert w.drain() == {"docs/new.md"}
    (root / "README").unlink()
    assert w.drain() == {"README"}
    (root / "docs/new.md").chmod(0o755)
    assert w.drain() == {"docs/new.md"}
    (root / "docs/new.md").rename(root / "src/moved.md")
    assert w.drain() == {"docs/new.md", "src/moved.md"}
    assert w.healthy


def test_a_new_nested_directory_is_reported_then_watched(
    root: Path, start: Callable[..., TreeWatcher]
) -> None:
    w = start()
    # Files made right after mkdir, before the watcher hears of the directory: the new
    # directory's own path stands for them (the caller adds it recursively).
    subprocess.run(["sh", "-c", "mkdir -p n/m && echo x > n/m/f"], cwd=root, check=True)
    assert w.drain() == {"n"}
    (root / "n/m/f").write_text("y\n")
    (root / "n/m/g").write_text("z\n")
    assert w.drain() == {"n/m/f", "n/m/g"}
    (root / "n/m/k").mkdir()
    (root / "n/m/k/h").write_text("h\n")
    assert w.drain() == {"n/m/k"}
    (root / "n/m/k/h").write_text("h2\n")
    assert w.drain() == {"n/m/k/h"}
    assert w.healthy


def test_a_directory_moved_in_is_reported_and_watched(
    root: Path, tmp_path: Path, start: Callable[..., TreeWatcher]
) -> None:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    w = start()
    outside.rename(root / "came")
    assert w.drain() == {"came"}
    (root / "came/deep/f").write_text("f\n")
    assert w.drain() == {"came/deep/f"}


def test_git_folders_never_show_up(root: Path, start: Callable[..., TreeWatcher]) -> None:
    w = start()
    (root / ".git/index").write_bytes(b"idx2")
    (root / ".git/objects/ab").mkdir()
    (root / ".git/objects/ab/cd").write_bytes(b"obj")
    (root / "src/.git").mkdir()  # a nested repository made after the start
    (root / "src/.git/HEAD").write_text("ref\n")
    (root / "docs/.git").write_text("gitdir: elsewhere\n")  # a worktree's .git file
    assert w.drain() == set()


def test_skipped_directories_contents_never_show_up(
    root: Path, start: Callable[..., TreeWatcher]
) -> None:
    skipped = {"build", "src/node_modules"}
    w = start(skip_dir=skipped.__contains__)
    (root / "build/out/a.o").write_bytes(b"o")
    (root / "build/b.o").write_bytes(b"o")
    assert w.drain() == set()
    (root / "src/node_modules").mkdir()  # its own name shows up, not what goes in it
    assert w.drain() == {"src/node_modules"}
    (root / "src/node_modules/lib").mkdir()
    (root / "src/node_modules/lib/i.js").write_text("1\n")
    assert w.drain() == set()
    assert w.healthy


def test_symlinked_directories_are_not_followed(
    root: Path, tmp_path: Path, start: Callable[..., TreeWatcher]
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (root / "early").symlink_to(target)
    w = start()
    (root / "late").symlink_to(target)
    assert w.drain() == {"late"}
    (target / "f").write_text("f\n")
    assert w.drain() == set()


def test_a_deleted_directory_is_reported_and_the_watcher_stays_healthy(
    root: Path, start: Callable[..., TreeWatcher]
) -> None:
    w = start()
    shutil.rmtree(root / "src")
    assert w.drain() == {"src", "src/pkg", "src/pkg/mod.py"}
    assert w.healthy
    (root / "src").mkdir()
    (root / "src/again").write_text("1\n")
    assert w.drain() == {"src"}
    (root / "src/again").write_text("2\n")
    assert w.drain() == {"src/again"}


def test_a_renamed_directory_loses_the_watcher(
    root: Path, start: Callable[..., TreeWatcher]
) -> None:
    w = start()
    (root / "src/pkg").rename(root / "src/pkg2")
    assert w.drain() is None
    assert not w.healthy
    (root / "docs/x").write_text("x\n")
    assert w.drain() is None


@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_the_root_deleted_or_moved_loses_the_watcher(
    root: Path, start: Callable[..., TreeWatcher], how: str
) -> None:
    w = start()
    if how == "deleted":
        shutil.rmtree(root)
    else:
        root.rename(root.with_name("ws2"))
    assert not w.healthy
    assert w.drain() is None


def test_a_queue_overflow_loses_the_watcher(root: Path, start: Callable[..., TreeWatcher]) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    w = start()
    # Writes alternating between two files: the kernel merges only an event identical to
    # the last one queued, so each write is one more IN_MODIFY (and fast, unlike creating
    # that many files).
    a = os.open(root / "docs/a", os.O_CREAT | os.O_WRONLY)
    b = os.open(root / "docs/b", os.O_CREAT | os.O_WRONLY)
    try:
        for _ in range(limit // 2 + 100):
            os.write(a, b"a")
            os.write(b, b"b")
    finally:
        os.close(a)
        os.close(b)
    assert not w.healthy
    assert w.drain() is None


def test_many_writes_to_one_file_are_merged_not_an_overflow(
    root: Path, start: Callable[..., TreeWatcher]
) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    w = start()
    with (root / "README").open("ab", buffering=0) as f:
        for _ in range(limit + 100):
            f.write(b"x")
    assert w.drain() == {"README"}


def test_more_directories_than_max_watches(root: Path) -> None:
    # root, src, src/pkg, docs, build, build/out: six (.git is never watched)
    assert TreeWatcher.start(root, max_watches=5) is None
    w = TreeWatcher.start(root, max_watches=6)
    assert w is not None
    try:
        assert w.drain() == set()
        (root / "docs/more").mkdir()  # the seventh, after the start
        assert w.drain() is None
    finally:
        w.close()


def test_close_is_idempotent(start: Callable[..., TreeWatcher]) -> None:
    w = start()
    w.close()
    w.close()
    assert not w.healthy
    assert w.drain() is None


def test_draining_while_another_thread_writes_loses_nothing(
    root: Path, start: Callable[..., TreeWatcher]
) -> None:
    w = start()
    written: list[str] = []
    seen: set[str] = set()
    failed: list[str] = []
    stop = threading.Event()

    def write() -> None:
        for i in range(1500):
            rel = f"docs/f{i}" if i % 3 else f"src/pkg/d{i // 30}/f{i}"
            (root / rel).parent.mkdir(exist_ok=True)
            (root / rel).write_text(str(i))
            written.append(rel)

    def drain() -> None:
        while not stop.is_set():
            got = w.drain()
            if got is None:
                failed.append("drain returned None")
                return
            seen.update(got)

    drainer = threading.Thread(target=drain)
    writer = threading.Thread(target=write)
    drainer.start()
    writer.start()
    writer.join()
    stop.set()
    drainer.join()
    final = w.drain()
    assert final is not None
    assert not failed
    seen |= final

    def covered(rel: str) -> bool:  # itself, or a new directory above it
        parts = rel.split("/")
        return any("/".join(parts[:n]) in seen for n in range(1, len(parts) + 1))

    assert [rel for rel in written if not covered(rel)] == []
    assert os.path.exists(root / written[-1])

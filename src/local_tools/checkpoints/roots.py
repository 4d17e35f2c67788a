"""Snapshots of a whole root, for commands: git's index, narrowed by an inotify watcher.

`RootTrees.snapshot()` brings the root's shadow index up to date with the files and
writes a tree. Without a watcher (or when it lost track) git finds what changed: `git
ls-files -o -m -d` (stat cache: only changed files are read), then `git add` of just
those. With a healthy watcher (Linux) only the paths it saw change are added, and a
tree where nothing changed costs no git at all. `.gitignore` is honoured; files over
`max_bytes` are left out (and named). Callers hold the repository's lock.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from local_tools.checkpoints.entries import ABSENT, Entry
from local_tools.checkpoints.gitstore import EMPTY_TREE, ShadowRepo
from local_tools.checkpoints.watch import TreeWatcher

__all__ = ["RootTrees", "TreeSnapshot", "diff_trees"]

log = logging.getLogger(__name__)

MAX_DIRTY = 2_000  # more paths than this from the watcher: let git look for itself
GITLINK = 0o160000  # a nested repository: git records only its commit; not ours to keep


@dataclass
class TreeSnapshot:
    tree: str
    skipped: dict[str, str] = field(default_factory=dict)


class RootTrees:
    def __init__(self, repo: ShadowRepo, root: Path, *, max_bytes: int, watch: bool) -> None:
        self.repo = repo
        self.root = root
        self.max_bytes = max_bytes
        self.index = repo.index_path(root)
        self._use_watcher = watch
        self._watcher: TreeWatcher | None = None
        self._tree: str | None = None  # the last tree written, while the watcher vouches

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    def snapshot(self) -> TreeSnapshot:
        dirty = self._watcher.drain() if self._watcher is not None else None
        if dirty is None:
            self._restart_watcher()
            self._tree = None
            return self._write(self._changed_by_git())
        if not dirty and self._tree is not None:
            return TreeSnapshot(self._tree)
        if len(dirty) > MAX_DIRTY:
            return self._write(self._changed_by_git())
        return self._write(self._existing_or_indexed(dirty))

    # ------------------------------------------------------------------ steps

    def _restart_watcher(self) -> None:
        """Started before git looks, so nothing changed meanwhile goes unseen."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self._use_watcher:
            try:
                ignored = self._ignored_dirs()
                self._watcher = TreeWatcher.start(
                    self.root, skip_dir=ignored.__contains__ if ignored else None
                )
            except Exception:  # a snapshot without one is slower, not wrong
                log.exception("watching %s for checkpoints failed", self.root)
                self._watcher = None

    def _ignored_dirs(self) -> set[str] | None:
        out = self._git(
            ["ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory"], ok=(0, 1)
        )
        dirs = {p.rstrip("/") for p in _split(out) if p.endswith("/")}
        return dirs or None

    def _changed_by_git(self) -> list[str]:
        """Paths whose file differs from the index (new, modified, deleted)."""
        out = self._git(["ls-files", "-z", "-o", "-m", "-d", "--exclude-standard"])
        return [p for p in dict.fromkeys(_split(out)) if not p.endswith("/")]

    def _existing_or_indexed(self, dirty: set[str]) -> list[str]:
        """The watcher's paths git would accept: those that exist, and gone ones the index
        still has (a file made and removed between two snapshots is neither)."""
        paths = [p for p in sorted(dirty) if not _is_git_internal(p)]
        gone = [p for p in paths if not os.path.lexists(self.root / p)]
        if gone:
            known = set(
                _split(self._git(["ls-files", "-z", "--", *(f":(literal){p}" for p in gone)]))
            )
            keep = {p for p in gone if p in known or any(k.startswith(p + "/") for k in known)}
            paths = [p for p in paths if p not in gone or p in keep]
        return paths

    def _write(self, paths: list[str]) -> TreeSnapshot:
        skipped = self._too_large(paths)
        specs = [f":(literal){p}" for p in paths if p not in skipped]
        if specs:
            excluded = [f":(exclude,literal){p}" for p in skipped]
            self._git(
                ["add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"],
                stdin="\0".join(specs + excluded).encode(),
                ok=(0, 1),  # 1: an ignored path was named, or a file vanished meanwhile
            )
        if not specs and self._tree is not None:
            return TreeSnapshot(self._tree, skipped)
        tree = self._git(["write-tree"]).decode().strip() or EMPTY_TREE
        self._tree = tree if self._watcher is not None and self._watcher.healthy else None
        return TreeSnapshot(tree, skipped)

    def _too_large(self, paths: list[str]) -> dict[str, str]:
        skipped: dict[str, str] = {}
        for rel in paths:
            try:
                st = os.lstat(self.root / rel)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.max_bytes:
                skipped[rel] = f"over [checkpoints] max_file_mb ({st.st_size / 2**20:.1f} MB)"
        if skipped:
            # Out of the index too, so the tree keeps no stale copy of a file now too big.
            self._git(
                ["rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                 "--pathspec-file-nul"],
                stdin="\0".join(f":(literal){p}" for p in skipped).encode(),
            )  # fmt: skip
        return skipped

    def _git(
        self, args: list[str], *, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)
    ) -> bytes:
        return self.repo.run(args, work_tree=self.root, index=self.index, stdin=stdin, ok_codes=ok)


def diff_trees(repo: ShadowRepo, before: str, after: str) -> dict[str, tuple[Entry, Entry]]:
    """Paths that differ between two trees: (before, after) entries."""
    if before == after:
        return {}
    out = repo.run(["diff-tree", "-r", "-z", "--no-renames", before, after])
    fields = _split(out)
    changes: dict[str, tuple[Entry, Entry]] = {}
    for i in range(0, len(fields) - 1, 2):
        meta, path = fields[i], fields[i + 1]
        old_mode, new_mode, old_sha, new_sha, _status = meta.lstrip(":").split(" ")
        a, b = int(old_mode, 8), int(new_mode, 8)
        if GITLINK in (a, b):
            continue
        changes[path] = (
            Entry(a, old_sha) if a else ABSENT,
            Entry(b, new_sha) if b else ABSENT,
        )
    return changes


def _split(out: bytes) -> list[str]:
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _is_git_internal(rel: str) -> bool:
    return rel == ".git" or rel.startswith(".git/") or "/.git/" in rel or rel.endswith("/.git")

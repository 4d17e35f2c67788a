"""Snapshots of a whole root, for commands: git's index, narrowed by an inotify watcher.

`RootTrees.snapshot()` brings the root's shadow index up to date with the files and
writes a tree. Without a watcher (or when it lost track) git finds what changed: `git
ls-files -o -m -d` (stat cache: only changed files are read), then `git add` of just
those. With a healthy watcher (Linux) only the paths it saw change are added, and a
tree where nothing changed costs no git at all. `.gitignore` is honoured; files over
`max_bytes` and names that are not UTF-8 are left out (and named); the state folder
(when it lies inside the root, e.g. a workspace of ~) is never looked at: the store
would otherwise keep copies of itself. Callers hold the repository's lock.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from local_tools.checkpoints.entries import ABSENT, NOT_UTF8, Entry, is_utf8, shown
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
    def __init__(
        self,
        repo: ShadowRepo,
        root: Path,
        *,
        max_bytes: int,
        watch: bool,
        exclude: Sequence[Path] = (),
    ) -> None:
        self.repo = repo
        self.root = root
        self.max_bytes = max_bytes
        self.index = repo.index_path(root)
        # Root-relative folders never snapshot (the state folder, when inside the root).
        self.excluded = tuple(p.relative_to(root).as_posix() for p in exclude if root in p.parents)
        self._exclude_specs = [b":(exclude,literal)" + os.fsencode(e) for e in self.excluded]
        self._ex = [os.fsdecode(s) for s in self._exclude_specs]  # as arguments
        self._use_watcher = watch
        self._watcher: TreeWatcher | None = None
        self._tree: str | None = None  # the last tree written, while the watcher vouches
        # Files left out as too large (this process saw them so): one that shrinks is not
        # new, though the tree never had it; an undo must not take it for created.
        self.too_large: set[str] = set()

    def keeps(self, rel: str) -> bool:
        """Whether rel is outside every excluded folder."""
        return not any(rel == e or rel.startswith(e + "/") for e in self.excluded)

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    def snapshot(self) -> TreeSnapshot:
        dirty = self._watcher.drain() if self._watcher is not None else None
        if dirty is not None and any(_is_ignore_file(p) for p in dirty):
            # What git ignores changed: the folders the watcher skips may now count.
            dirty = None
        if dirty is None:
            self._restart_watcher()
            self._tree = None
            self._forget_excluded()
            paths = self._changed_by_git()
        elif not dirty and self._tree is not None:
            return TreeSnapshot(self._tree)
        elif len(dirty) > MAX_DIRTY:
            paths = self._changed_by_git()
        else:
            paths = self._existing_or_indexed(dirty)
        try:
            return self._write(paths)
        except BaseException:
            # The watcher's paths are drained: only a full scan can find them again.
            self.close()
            self._tree = None
            raise

    # ------------------------------------------------------------------ steps

    def _restart_watcher(self) -> None:
        """Started before git looks, so nothing changed meanwhile goes unseen."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self._use_watcher:
            try:
                skip = self._ignored_dirs() | set(self.excluded)
                self._watcher = TreeWatcher.start(
                    self.root, skip_dir=skip.__contains__ if skip else None
                )
            except Exception:  # a snapshot without one is slower, not wrong
                log.exception("watching %s for checkpoints failed", self.root)
                self._watcher = None

    def _ignored_dirs(self) -> set[str]:
        out = self._git(
            ["ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory", "--", *self._ex],
            ok=(0, 1),
        )
        return {p.rstrip("/") for p in _split(out) if p.endswith("/")}

    def _changed_by_git(self) -> list[str]:
        """Paths whose file differs from the index (new, modified, deleted)."""
        out = self._git(["ls-files", "-z", "-o", "-m", "-d", "--exclude-standard", "--", *self._ex])
        return [p for p in dict.fromkeys(_split(out)) if not p.endswith("/")]

    def _forget_excluded(self) -> None:
        """Drop what an index made before the exclusion holds of the state folder."""
        if not self.excluded:
            return
        specs = [f":(literal){e}" for e in self.excluded]
        if _split(self._git(["ls-files", "-z", "--", *specs])):
            self._git(["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *specs])

    def _existing_or_indexed(self, dirty: set[str]) -> list[str]:
        """The watcher's paths git would accept: those that exist, and gone ones the index
        still has (a file made and removed between two snapshots is neither)."""
        paths = [p for p in sorted(dirty) if not _is_git_internal(p) and self.keeps(p)]
        gone = [p for p in paths if not os.path.lexists(self.root / p)]
        if gone:
            known = set(
                _split(self._git(["ls-files", "-z", "--", *(f":(literal){p}" for p in gone)]))
            )
            keep = {p for p in gone if p in known or any(k.startswith(p + "/") for k in known)}
            paths = [p for p in paths if p not in gone or p in keep]
        return paths

    def _write(self, paths: list[str]) -> TreeSnapshot:
        paths = [p for p in paths if self.keeps(p)]
        # SQLite keeps names as text: one that is not UTF-8 cannot be recorded.
        bad = [p for p in paths if not is_utf8(p)]
        paths = self._past_links([p for p in paths if is_utf8(p)])
        large = self._too_large(paths)
        left_out = bad + list(large)
        if left_out:
            # Out of the index too, so the tree keeps no stale copy of what is not kept.
            self._git(
                ["rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                 "--pathspec-file-nul"],
                stdin=_specs(b":(literal)", left_out),
            )  # fmt: skip
        skipped = {shown(p): NOT_UTF8 for p in bad} | large
        specs = [p for p in paths if p not in large]
        if specs:
            # Thousands of literal pathspecs cost git quadratic time (minutes for a first
            # snapshot of 100k files): past MAX_DIRTY, the whole root less what is not kept.
            named = b"." if len(specs) > MAX_DIRTY else _specs(b":(literal)", specs)
            parts = [named, _specs(b":(exclude,literal)", left_out)]
            self._git(
                ["add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"],
                stdin=b"\0".join(p for p in [*parts, *self._exclude_specs] if p),
                ok=(0, 1),  # 1: an ignored path was named, or a file vanished meanwhile
            )
        if not specs and not left_out and self._tree is not None:
            return TreeSnapshot(self._tree, skipped)
        tree = self._git(["write-tree"]).decode().strip() or EMPTY_TREE
        self._tree = tree if self._watcher is not None and self._watcher.healthy else None
        return TreeSnapshot(tree, skipped)

    def _past_links(self, paths: list[str]) -> list[str]:
        """Each path below a folder that is now a symlink (or a file) becomes that entry:
        git refuses a pathspec "beyond a symbolic link", and the index's entries under
        it go first, so the link can take their place."""
        kinds: dict[str, str] = {}
        out: dict[str, None] = {}
        replaced: dict[str, None] = {}
        for rel in paths:
            top = self._not_a_folder_above(rel, kinds)
            if top is not None:
                replaced[top] = None
            out[top if top is not None else rel] = None
        if replaced:
            self._git(
                ["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                 "--pathspec-file-nul"],
                stdin=_specs(b":(literal)", replaced),
            )  # fmt: skip
        return list(out)

    def _not_a_folder_above(self, rel: str, kinds: dict[str, str]) -> str | None:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            above = "/".join(parts[:i])
            kind = kinds.get(above)
            if kind is None:
                try:
                    mode = os.lstat(self.root / above).st_mode
                    kind = "dir" if stat.S_ISDIR(mode) else "other"
                except OSError:
                    kind = "gone"
                kinds[above] = kind
            if kind == "gone":
                return None  # a deleted folder: git removes what was under it
            if kind == "other":
                return above
        return None

    def _too_large(self, paths: list[str]) -> dict[str, str]:
        skipped: dict[str, str] = {}
        for rel in paths:
            try:
                st = os.lstat(self.root / rel)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.max_bytes:
                skipped[rel] = f"over [checkpoints] max_file_mb ({st.st_size / 2**20:.1f} MB)"
                self.too_large.add(rel)
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


def _specs(magic: bytes, paths: Iterable[str]) -> bytes:
    return b"\0".join(magic + os.fsencode(p) for p in paths)


def _is_ignore_file(rel: str) -> bool:
    return rel == ".gitignore" or rel.endswith("/.gitignore")


def _split(out: bytes) -> list[str]:
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _is_git_internal(rel: str) -> bool:
    return rel == ".git" or rel.startswith(".git/") or "/.git/" in rel or rel.endswith("/.git")

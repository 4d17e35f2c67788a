"""A workspace's checkpoints: snapshots around a call, and the history they make.

`begin` records the state of what a call can change (the paths a file tool names, or
every writable root for a command) and `end` the state after it; what differs becomes
one checkpoint. Both run in a worker thread; neither ever fails the call: a snapshot
that cannot be made leaves a note instead (the call still runs). The state folder is
never recorded, even inside a root (a workspace of ~).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from local_tools.checkpoints.entries import (
    ABSENT,
    DIR,
    NOT_UTF8,
    Entry,
    PathSnapshot,
    is_utf8,
    read_paths,
    shown,
)
from local_tools.checkpoints.gitstore import ShadowRepo
from local_tools.checkpoints.history import Change, History
from local_tools.checkpoints.roots import RootTrees, diff_trees
from local_tools.core.errors import ToolError
from local_tools.core.state import workspace_state_dir
from local_tools.security.jail import Jail

__all__ = ["ROOTS", "Checkpoints", "Pending", "checkpoint_folder", "in_git_folder"]

log = logging.getLogger(__name__)

ROOTS = "roots"  # what a command can change: every writable root
WAS_IGNORED = "was ignored before the call; not kept"
WAS_TOO_LARGE = "was over max_file_mb before the call (its old content was never kept)"


def checkpoint_folder(state_dir: Path, workspace: Path) -> Path:
    return workspace_state_dir(state_dir, workspace) / "checkpoints"


@dataclass
class Pending:
    """The state before a call, until `end` compares it with the state after."""

    call_id: str
    tool: str
    user_id: str
    session: str | None
    owner: str
    summary: str
    paths: dict[Path, list[str]] = field(default_factory=dict)  # root -> rels
    before_paths: dict[Path, PathSnapshot] = field(default_factory=dict)
    before_trees: dict[Path, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    # The filesystem's clock (a ctime) when the call started: a file "new" to the tree
    # that changed before it was there already (ignored until the call changed that).
    started_ns: int = 0


class Checkpoints:
    """One per toolbox and workspace (`ctx.resource("checkpoints")`)."""

    def __init__(
        self,
        folder: Path,
        jail: Jail,
        *,
        max_bytes: int,
        watch: bool = True,
        state_dir: Path | None = None,
    ) -> None:
        self.folder = folder
        self.jail = jail
        self.max_bytes = max_bytes
        self.watch = watch
        # Never snapshot: the store itself and the rest of the state (audit log,
        # approvals). The layout `checkpoint_folder` makes names the state dir.
        if state_dir is None and folder.parent.parent.name == "workspaces":
            state_dir = folder.parents[2]
        found = [folder] if state_dir is None else [folder, state_dir]
        self.excluded = [Path(os.path.realpath(p)) for p in found]
        self.repo = ShadowRepo(folder)
        self.history = History(folder / "history.db")
        self._trees: dict[Path, RootTrees] = {}
        self._lock = threading.Lock()

    @property
    def writable_roots(self) -> list[Path]:
        return [root for root, writable in self.jail.roots if writable]

    def close(self) -> None:
        with self._lock:
            trees, self._trees = list(self._trees.values()), {}
        for t in trees:
            t.close()
        self.history.close()

    # ------------------------------------------------------------------ recording

    def begin(
        self,
        scope: Sequence[str] | str,
        *,
        call_id: str,
        tool: str,
        user_id: str,
        session: str | None,
        owner: str,
        summary: str = "",
    ) -> Pending:
        pending = Pending(call_id, tool, user_id, session, owner, summary[:200])
        self.repo.ensure()
        if scope == ROOTS:
            with self.repo.locked():
                for root in self.writable_roots:
                    tree = self._root_trees(root).snapshot()
                    pending.before_trees[root] = tree.tree
                    _note_skipped(pending, root, tree.skipped)
                pending.started_ns = self._clock_ns()
            return pending
        for path in scope:
            for root, rel in self.locate(path):
                if in_git_folder(rel):
                    continue  # never the user's repository: not kept, never restored
                rels = pending.paths.setdefault(root, [])
                if not any(rel == r or rel.startswith(r + "/") or not r for r in rels):
                    rels.append(rel)
        for root, rels in pending.paths.items():
            snap = self._read_paths(root, rels)
            pending.before_paths[root] = snap
            _note_skipped(pending, root, snap.skipped)
        return pending

    def end(self, pending: Pending) -> int | None:
        """Record what changed since `begin`; the new checkpoint's id, None if nothing."""
        changes: list[Change] = []
        if pending.before_trees:
            with self.repo.locked():
                for root, before in pending.before_trees.items():
                    trees = self._root_trees(root)
                    tree = trees.snapshot()
                    _note_skipped(pending, root, tree.skipped)
                    diff = diff_trees(self.repo, before, tree.tree)
                    # Only a changed .gitignore brings in files the call did not make.
                    unignored = any(_is_ignore_file(rel) for rel in diff)
                    for rel, (a, b) in diff.items():
                        if not trees.keeps(rel):
                            continue  # the state folder, in a tree an older version wrote
                        why = _not_kept(pending, root, rel, a, unignored)
                        if not why and not a.exists and rel in trees.too_large:
                            why = WAS_TOO_LARGE
                            trees.too_large.discard(rel)
                        if why:
                            _note_skipped(pending, root, {shown(rel): why})
                        else:
                            changes.append(Change(str(root), rel, a, b))
        for root, rels in pending.paths.items():
            after = self._read_paths(root, rels)
            _note_skipped(pending, root, after.skipped)  # e.g. a file the call made too big
            changes += _compare(str(root), pending.before_paths[root], after)
        if not changes:
            return None
        return self.history.add(
            call_id=pending.call_id,
            tool=pending.tool,
            user_id=pending.user_id,
            session=pending.session,
            owner=pending.owner,
            summary=pending.summary,
            skipped=pending.skipped,
            changes=changes,
        )

    def _clock_ns(self) -> int:
        """Now, by the clock the kernel stamps ctimes with (coarser than time.time)."""
        marker = self.folder / "clock"
        try:
            marker.touch()
            os.utime(marker)
            return os.stat(marker).st_ctime_ns
        except OSError:
            return 0  # no comparison: changes are recorded as before

    def _read_paths(self, root: Path, rels: list[str]) -> PathSnapshot:
        return read_paths(
            self.repo, root, rels, max_bytes=self.max_bytes, exclude=self._excluded_in(root)
        )

    def _excluded_in(self, root: Path) -> list[str]:
        return [p.relative_to(root).as_posix() for p in self.excluded if root in p.parents]

    # ------------------------------------------------------------------ paths

    def locate(self, path: str) -> list[tuple[Path, str]]:
        """(writable root, relative path) for what `path` names: the entry itself (a
        link is not followed) and, when it is a link, what it points to."""
        found: list[Path] = []
        with contextlib.suppress(ToolError, OSError, ValueError):
            found.append(self.jail.resolve(path))
        name = PurePath(path).name
        if name not in ("", ".", ".."):
            with contextlib.suppress(ToolError, OSError, ValueError):
                found.append(self.jail.resolve(str(PurePath(path).parent)) / name)
        out: list[tuple[Path, str]] = []
        for real in dict.fromkeys(found):
            if any(real == ex or ex in real.parents for ex in self.excluded):
                continue  # the state folder is never recorded
            for root in self.writable_roots:
                if real == root or root in real.parents:
                    rel = real.relative_to(root).as_posix()
                    out.append((root, "" if rel == "." else rel))
                    break
        return out

    def root_of(self, root: str) -> Path | None:
        for r in self.writable_roots:
            if str(r) == root:
                return r
        return None

    def _root_trees(self, root: Path) -> RootTrees:
        with self._lock:
            trees = self._trees.get(root)
            if trees is None:
                trees = RootTrees(
                    self.repo,
                    root,
                    max_bytes=self.max_bytes,
                    watch=self.watch,
                    exclude=self.excluded,
                )
                self._trees[root] = trees
            return trees


def in_git_folder(rel: str) -> bool:
    """Whether a root-relative path is a `.git` (file or folder) or inside one."""
    return ".git" in rel.split("/")


def _not_kept(pending: Pending, root: Path, rel: str, before: Entry, unignored: bool) -> str:
    """Why a change of a command's tree is not recorded, or ""."""
    if not is_utf8(rel):
        return NOT_UTF8
    # Not for every new file: one moved in with its folder (`mv a b`) keeps its ctime.
    if before.exists or not unignored or not pending.started_ns:
        return ""
    try:
        ctime = os.lstat(root / rel).st_ctime_ns
    except OSError:
        return ""
    # Unchanged since before the call, yet not in the tree before it: it was ignored
    # (the call un-ignored it). Recorded as made by the call, an undo would delete it.
    return WAS_IGNORED if ctime < pending.started_ns else ""


def _is_ignore_file(rel: str) -> bool:
    return rel == ".gitignore" or rel.endswith("/.gitignore")


def _compare(root: str, before: PathSnapshot, after: PathSnapshot) -> list[Change]:
    changes: list[Change] = []
    for rel in sorted(set(before.entries) | set(after.entries)):
        a = before.entries.get(rel) or _absent_if_covered(before, rel)
        b = after.entries.get(rel) or _absent_if_covered(after, rel)
        if a is None or b is None or a == b:
            continue  # unknown on one side (skipped), or unchanged
        if _still_a_folder(a, b, after, rel) or _still_a_folder(b, a, before, rel):
            continue  # an empty folder that got (or lost) content: its files are the change
        changes.append(Change(root, rel, a, b))
    return changes


def _still_a_folder(a: Entry, b: Entry, other: PathSnapshot, rel: str) -> bool:
    return a.mode == DIR and not b.exists and any(p.startswith(rel + "/") for p in other.entries)


def _absent_if_covered(snap: PathSnapshot, rel: str) -> Entry | None:
    if rel in snap.skipped:
        return None
    for top in snap.covered:
        if not top or rel == top or rel.startswith(top + "/"):
            return ABSENT
    return None


def _note_skipped(pending: Pending, root: Path, skipped: dict[str, str]) -> None:
    for rel, why in skipped.items():
        pending.skipped[os.path.join(str(root), rel)] = why

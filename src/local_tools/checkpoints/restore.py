"""Putting files back to how they were before a call.

Restoring to before checkpoint N undoes N and every later call of the same session
(or of everyone, `owner=None`), path by path: each path goes back to its entry before
the first of those calls that changed it. A path whose file is no longer what the last
recorded call left (someone changed it since, or another session's call did) is a
conflict, refused unless forced. Every write goes through the jail (never outside a
writable root) and is atomic: a file is its old content or its new one, never half.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from local_tools.checkpoints import pinned
from local_tools.checkpoints.diffs import blob_sizes
from local_tools.checkpoints.entries import ABSENT, DIR, EXEC, LINK, Entry
from local_tools.checkpoints.gitstore import blob_id
from local_tools.checkpoints.history import Change, Checkpoint, PathChange
from local_tools.checkpoints.store import Checkpoints, in_git_folder
from local_tools.core.errors import NotFound, ToolError

__all__ = [
    "Plan",
    "Step",
    "apply_plan",
    "current_entry",
    "find",
    "plan_restore",
    "select_changes",
]

WRITERS = 4  # files written at once by a restore
BATCH_BYTES = 32 << 20  # blob bytes read into memory at once by a restore
THROUGH_LINK = "a folder above it is now a symlink (never written through)"
CHANGED_DURING = "changed during the restore (left as it is)"


@dataclass(frozen=True)
class Step:
    root: Path
    rel: str
    target: Entry  # what the path becomes
    current: Entry  # what it is now
    expected: Entry  # what the last recorded call left
    conflict: str | None = None

    @property
    def path(self) -> Path:
        return self.root / self.rel

    @property
    def action(self) -> str:
        if self.target == self.current:
            return "unchanged"
        if not self.target.exists:
            return "delete"
        if not self.current.exists:
            return "create"
        return "replace"


@dataclass(frozen=True)
class Plan:
    checkpoint: Checkpoint
    undone: list[int]  # the checkpoints taken back, oldest first
    steps: list[Step]

    @property
    def conflicts(self) -> list[Step]:
        return [s for s in self.steps if s.conflict]

    @property
    def writes(self) -> list[Step]:
        return [s for s in self.steps if s.action in ("create", "replace")]

    @property
    def deletes(self) -> list[Step]:
        return [s for s in self.steps if s.action == "delete"]


def find(cps: Checkpoints, cid: int, owner: str | None, user: str | None = None) -> Checkpoint:
    cp = cps.history.get(cid, user=user)
    if cp is None or (owner is not None and cp.owner != owner):
        where = " in this session" if owner is not None else ""
        raise NotFound(f"There is no checkpoint {cid}{where}. checkpoint_list shows them.")
    return cp


def plan_restore(
    cps: Checkpoints,
    cid: int,
    *,
    owner: str | None,
    paths: list[str] | None = None,
    user: str | None = None,
) -> Plan:
    """What restoring to before checkpoint `cid` would do, for all paths or `paths`
    (undoing the checkpoints of `owner`, or of any session of `user`, or everyone's)."""
    cp = find(cps, cid, owner, user)
    calls = cps.history.since(cid, owner=owner, user=user)
    undone = {c.id for c in calls}
    wanted = _wanted(cps, paths)
    firsts: dict[tuple[str, str], Entry] = {}
    for call in calls:
        for change in call.changes:
            firsts.setdefault((change.root, change.path), change.before)
    changed = {(root, rel) for root, rel in firsts}
    story: dict[tuple[str, str], list[PathChange]] = {}
    for pc in cps.history.changes_since(cid):
        if (pc.root, pc.path) in firsts:
            story.setdefault((pc.root, pc.path), []).append(pc)
    steps: list[Step] = []
    for (root_text, rel), target in sorted(firsts.items()):
        root = cps.root_of(root_text)
        if root is None or (wanted is not None and not _selected(root, rel, wanted)):
            continue
        if in_git_folder(rel):
            continue  # recorded by an older version: the user's repository is not ours
        told = story[(root_text, rel)]  # at least the change we just read
        expected = told[-1].after
        current = current_entry(root / rel)
        conflict = None
        if _through_link(root, rel):
            conflict = THROUGH_LINK
        elif (gap := _gap(told, undone)) is not None:
            conflict = gap
        elif current not in (expected, target) and not _made_a_folder(
            current, expected, root_text, rel, changed
        ):
            conflict = f"changed since checkpoint {told[-1].checkpoint} (now {current.kind})"
        steps.append(Step(root, rel, target, current, expected, conflict))
    if wanted is not None and not steps:
        raise NotFound(
            "None of the given paths was changed by that checkpoint or a later one. "
            "checkpoint_diff shows what it changed."
        )
    return Plan(cp, sorted(undone), steps)


def _gap(told: list[PathChange], undone: set[int]) -> str | None:
    """Why a path's story since the checkpoint is not only the calls undone, one after
    the other: another session's call changed it in between (its change would be wiped),
    or each call found it other than the previous one left it (someone edited it)."""
    for pc in told:
        if pc.checkpoint not in undone:
            return f"changed since by checkpoint {pc.checkpoint} (another session's call)"
    for prev, pc in itertools.pairwise(told):
        if pc.before != prev.after:
            return (
                "changed outside local-tools between checkpoints "
                f"{prev.checkpoint} and {pc.checkpoint}"
            )
    return None


def apply_plan(cps: Checkpoints, plan: Plan, *, force: bool) -> tuple[list[Step], dict[str, str]]:
    """Carry out the plan: (steps done, {path: why not} for the rest)."""
    done: list[Step] = []
    failed: dict[str, str] = {}
    todo: list[Step] = []
    for s in plan.steps:
        if s.action == "unchanged" or (s.conflict and not force):
            continue
        if s.conflict == THROUGH_LINK:  # force or not: never written through a link
            failed[str(s.path)] = s.conflict
            continue
        todo.append(s)
    sizes = blob_sizes(cps.repo, [s.target.sha for s in todo if _has_blob(s)])

    def run(step: Step, blobs: dict[str, bytes]) -> None:
        try:
            _apply(cps, step, blobs)
        except ToolError as exc:
            failed[str(step.path)] = exc.message
        except OSError as exc:
            failed[str(step.path)] = exc.strerror or str(exc)
        else:
            done.append(step)

    # Deletions deepest first (a folder's files before it), then creations shallowest
    # first, one depth at a time: no path of a batch is inside another of it.
    deletes = sorted((s for s in todo if not s.target.exists), key=lambda s: -s.rel.count("/"))
    for step in deletes:
        run(step, {})
    _prune_emptied(cps, deletes)
    by_depth: dict[int, list[Step]] = {}
    for step in todo:
        if step.target.exists:
            by_depth.setdefault(step.rel.count("/"), []).append(step)
    # Each atomic write waits on two fsyncs: a few in flight at once make a restore of
    # many files several times faster (the jail retries a parent made meanwhile). The
    # contents are read a batch at a time: a restore of many large files stays bounded.
    with ThreadPoolExecutor(WRITERS, thread_name_prefix="restore") as pool:
        for depth in sorted(by_depth):
            for batch in _batches(by_depth[depth], sizes):
                blobs = cps.repo.read_blobs(s.target.sha for s in batch if _has_blob(s))
                list(pool.map(run, batch, [blobs] * len(batch)))
    return done, failed


def _has_blob(step: Step) -> bool:
    return step.target.exists and step.target.mode != DIR


def _batches(steps: list[Step], sizes: dict[str, int]) -> list[list[Step]]:
    """Steps in runs whose contents together stay under BATCH_BYTES (a larger file alone)."""
    out: list[list[Step]] = []
    batch: list[Step] = []
    total = 0
    for step in steps:
        n = sizes.get(step.target.sha, 0) if _has_blob(step) else 0
        if batch and total + n > BATCH_BYTES:
            out.append(batch)
            batch, total = [], 0
        batch.append(step)
        total += n
    if batch:
        out.append(batch)
    return out


def _made_a_folder(
    current: Entry, expected: Entry, root: str, rel: str, changed: set[tuple[str, str]]
) -> bool:
    """A path the calls turned into a folder by creating files in it (a link replaced by
    a folder): git records the files, never the folder, so the folder is no conflict."""
    if current.mode != DIR or expected.exists:
        return False
    prefix = rel + "/"
    return any(r == root and p.startswith(prefix) for r, p in changed)


def _prune_emptied(cps: Checkpoints, deletes: list[Step]) -> None:
    """Folders the restore emptied go too, as git's checkout does: the calls being undone
    made them (a folder that held files before is refilled by the writes that follow).
    Only real, empty folders; never a root."""
    seen: set[Path] = set()
    for step in deletes:
        folder = step.path.parent
        while folder != step.root and step.root in folder.parents and folder not in seen:
            seen.add(folder)
            try:
                st = os.lstat(folder)
                if not stat.S_ISDIR(st.st_mode) or os.listdir(folder):
                    break
                cps.jail.delete(str(folder), recursive=False)
            except (OSError, ToolError):
                break
            folder = folder.parent


def _apply(cps: Checkpoints, step: Step, blobs: dict[str, bytes]) -> None:
    target = step.target
    # The plan may be minutes old (the person answered its asks): a folder above made a
    # symlink since, or the file changed, and this step must not touch it. (A folder
    # the plan saw may be gone: this restore's deletions emptied and pruned it.)
    if _through_link(step.root, step.rel):
        raise ToolError(f"{CHANGED_DURING}: {THROUGH_LINK}")
    now = current_entry(step.path)
    if now != step.current and not (step.current.mode == DIR and not now.exists):
        raise ToolError(f"{CHANGED_DURING}: now {now.kind}")
    if not pinned.supported():
        _apply_through_jail(cps, step, blobs)
        return
    if target.exists and now.mode == LINK:
        # As the jail does: a link is replaced only when it points somewhere writable.
        cps.jail.resolve(str(step.path), write=True)
    try:
        parent = pinned.pinned_parent(step.root, step.rel, make=target.exists)
    except FileNotFoundError:
        if not target.exists:
            return  # its folder is gone already: nothing left to delete
        raise
    with contextlib.closing(parent):
        name = step.rel.rsplit("/", 1)[-1]
        if not target.exists:
            pinned.remove(parent, name)
        elif target.mode == DIR:
            pinned.make_folder(parent, name)
        elif target.mode == LINK:
            pinned.write_link(parent, name, os.fsdecode(blobs[target.sha]))
        else:
            mode = 0o755 if target.mode == EXEC else 0o644
            pinned.write_file(parent, name, blobs[target.sha], mode, str(step.path))


def _apply_through_jail(cps: Checkpoints, step: Step, blobs: dict[str, bytes]) -> None:
    """Where folders cannot be opened one by one (Windows): the jail, after the check."""
    jail, path, target = cps.jail, str(step.path), step.target
    if not target.exists:
        jail.delete(path, recursive=False)
    elif target.mode == DIR:
        if os.path.lexists(step.path) and not _is_folder(step.path):
            jail.delete(path)
        jail.mkdir(path)
    else:
        # What is there now, not what the plan saw: the deletions before may have
        # emptied (and pruned) a folder that stands where the file or link goes.
        if _is_folder(step.path):
            jail.delete(path)  # only an empty one: a folder with files is refused
        if target.mode == LINK:
            jail.symlink(path, os.fsdecode(blobs[target.sha]))
        else:
            mode = 0o755 if target.mode == EXEC else 0o644
            jail.write_atomic(path, blobs[target.sha], mode=mode)


def _through_link(root: Path, rel: str) -> bool:
    """Whether a folder between the root and the path is a symlink now: what is read
    through it is not the path the checkpoint recorded."""
    folder = root
    for part in rel.split("/")[:-1]:
        folder = folder / part
        try:
            if stat.S_ISLNK(os.lstat(folder).st_mode):
                return True
        except OSError:
            return False  # missing: nothing below it either
    return False


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def current_entry(path: Path) -> Entry:
    """What `path` is now, hashed as git would (nothing is stored)."""
    try:
        st = os.lstat(path)
    except OSError:
        return ABSENT
    if stat.S_ISLNK(st.st_mode):
        return Entry(LINK, blob_id(os.fsencode(os.readlink(path))))
    if stat.S_ISDIR(st.st_mode):
        return Entry(DIR)
    if not stat.S_ISREG(st.st_mode):
        return Entry(-1)  # a FIFO or device: never what a checkpoint recorded
    h = hashlib.sha1(b"blob %d\0" % st.st_size, usedforsecurity=False)
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return Entry(-1)
    return Entry(EXEC if st.st_mode & 0o111 else 0o100644, h.hexdigest())


def select_changes(
    cps: Checkpoints, changes: list[Change], paths: list[str] | None
) -> list[Change]:
    """The changes under `paths` (all when None); NotFound when paths match none."""
    wanted = _wanted(cps, paths)
    if wanted is None:
        return changes
    picked = [c for c in changes if _selected(Path(c.root), c.path, wanted)]
    if not picked:
        raise NotFound("That checkpoint changed none of the given paths.")
    return picked


def _wanted(cps: Checkpoints, paths: list[str] | None) -> list[tuple[Path, str]] | None:
    if paths is None:
        return None
    out: list[tuple[Path, str]] = []
    for p in paths:
        out += cps.locate(p)
    return out


def _selected(root: Path, rel: str, wanted: list[tuple[Path, str]]) -> bool:
    return any(r == root and (not w or rel == w or rel.startswith(w + "/")) for r, w in wanted)

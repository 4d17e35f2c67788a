"""What a checkpoint changed, as text a model or a person reads: diffs and line counts."""

from __future__ import annotations

from collections.abc import Sequence

from local_tools.checkpoints.entries import DIR, LINK, Entry
from local_tools.checkpoints.history import Change, Checkpoint
from local_tools.checkpoints.store import Checkpoints
from local_tools.editing.diff import unified_diff

__all__ = ["change_diff", "checkpoint_diffs", "count_lines"]

MAX_DIFF_BYTES = 2 << 20  # a side larger than this is described, not diffed


def checkpoint_diffs(cps: Checkpoints, cp: Checkpoint, changes: Sequence[Change]) -> list[str]:
    """One diff text per change (git's style: `--- a/path`, `+++ b/path`)."""
    blobs = cps.repo.read_blobs(_shas(changes))
    return [change_diff(c, blobs) for c in changes]


def count_lines(cps: Checkpoints, checkpoints: Sequence[Checkpoint]) -> list[Checkpoint]:
    """Fill in lines added/removed where not counted yet (remembered once counted)."""
    missing = [(cp, c) for cp in checkpoints for c in cp.changes if c.added is None]
    if not missing:
        return list(checkpoints)
    blobs = cps.repo.read_blobs(_shas([c for _, c in missing]))
    counted: dict[tuple[int, str, str], tuple[int, int]] = {}
    for cp, c in missing:
        counted[(cp.id, c.root, c.path)] = _count(change_diff(c, blobs))
    cps.history.set_counts((k[0], k[1], k[2], a, r) for k, (a, r) in counted.items())
    out: list[Checkpoint] = []
    for cp in checkpoints:
        changes = [
            Change(c.root, c.path, c.before, c.after, *counted[(cp.id, c.root, c.path)])
            if (cp.id, c.root, c.path) in counted
            else c
            for c in cp.changes
        ]
        out.append(
            Checkpoint(cp.id, cp.call_id, cp.tool, cp.user_id, cp.session, cp.owner, cp.ts,
                       cp.summary, cp.skipped, changes)
        )  # fmt: skip
    return out


def change_diff(change: Change, blobs: dict[str, bytes]) -> str:
    path = change.path
    a, b = change.before, change.after
    if LINK in (a.mode, b.mode) or DIR in (a.mode, b.mode):
        return f"--- a/{path}\n+++ b/{path}\n{_describe(a, blobs)} -> {_describe(b, blobs)}\n"
    old, new = _text(a, blobs), _text(b, blobs)
    if old is None or new is None:
        size = f"{_size(a, blobs)} -> {_size(b, blobs)} bytes"
        return f"--- a/{path}\n+++ b/{path}\nBinary file {change.action} ({size})\n"
    text = unified_diff(old, new, path)
    if not text:  # same content, another mode
        return f"--- a/{path}\n+++ b/{path}\nmode {a.mode:o} -> {b.mode:o}\n"
    if not a.exists:
        text = text.replace(f"--- a/{path}\n", "--- /dev/null\n", 1)
    if not b.exists:
        text = text.replace(f"+++ b/{path}\n", "+++ /dev/null\n", 1)
    return text


def _count(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines()[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _text(entry: Entry, blobs: dict[str, bytes]) -> str | None:
    if not entry.exists:
        return ""
    data = blobs.get(entry.sha, b"")
    if len(data) > MAX_DIFF_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _describe(entry: Entry, blobs: dict[str, bytes]) -> str:
    if entry.mode == LINK:
        return "symlink to " + blobs.get(entry.sha, b"?").decode("utf-8", "replace")
    if entry.mode == DIR:
        return "empty folder"
    return entry.kind


def _size(entry: Entry, blobs: dict[str, bytes]) -> int:
    return len(blobs.get(entry.sha, b"")) if entry.exists else 0


def _shas(changes: Sequence[Change]) -> list[str]:
    return [e.sha for c in changes for e in (c.before, c.after) if e.exists and e.mode != DIR]

"""What a checkpoint changed, as text a model or a person reads: diffs and line counts.

Sizes come first (`git cat-file --batch-check`): a blob over MAX_DIFF_BYTES is never read
to be diffed or counted (it is described, its lines left uncounted), and the rest are read
a batch at a time, so a listing of many large changes stays small in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from local_tools.checkpoints.entries import DIR, LINK, Entry
from local_tools.checkpoints.gitstore import ShadowRepo
from local_tools.checkpoints.history import Change, Checkpoint
from local_tools.checkpoints.store import Checkpoints
from local_tools.editing.diff import unified_diff

__all__ = ["blob_sizes", "change_diff", "checkpoint_diffs", "count_lines"]

MAX_DIFF_BYTES = 2 << 20  # a side larger than this is described, not diffed
BATCH_BYTES = 32 << 20  # blob bytes held at once while diffing or counting
UNCOUNTED = -1  # stored as the count of a binary or large change: never counted again


def blob_sizes(repo: ShadowRepo, shas: Iterable[str]) -> dict[str, int]:
    """The size of each blob there is (a missing one is left out), nothing read."""
    wanted = list(dict.fromkeys(s for s in shas if s))
    if not wanted:
        return {}
    out = repo.run(["cat-file", "--batch-check"], stdin="".join(f"{s}\n" for s in wanted).encode())
    sizes: dict[str, int] = {}
    for line in out.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] != "missing" and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def checkpoint_diffs(cps: Checkpoints, cp: Checkpoint, changes: Sequence[Change]) -> list[str]:
    """One diff text per change (git's style: `--- a/path`, `+++ b/path`)."""
    out: list[str] = []
    for batch, blobs, sizes in _loaded(cps, changes):
        out += [change_diff(c, blobs, sizes) for c in batch]
    return out


def count_lines(cps: Checkpoints, checkpoints: Sequence[Checkpoint]) -> list[Checkpoint]:
    """Fill in lines added/removed where not counted yet (remembered once counted)."""
    missing = [(cp, c) for cp in checkpoints for c in cp.changes if c.added is None]
    if not missing:
        return list(checkpoints)
    counted: dict[tuple[int, str, str], tuple[int, int]] = {}
    keys = iter([(cp.id, c.root, c.path) for cp, c in missing])  # _loaded keeps the order
    for batch, blobs, sizes in _loaded(cps, [c for _, c in missing]):
        for c in batch:
            counted[next(keys)] = _count(c, blobs, sizes)
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


def change_diff(
    change: Change, blobs: dict[str, bytes], sizes: dict[str, int] | None = None
) -> str:
    """A blob of `change` not in `blobs` is a large one (its size from `sizes`)."""
    path = change.path
    a, b = change.before, change.after
    if LINK in (a.mode, b.mode) or DIR in (a.mode, b.mode):
        return f"--- a/{path}\n+++ b/{path}\n{_describe(a, blobs)} -> {_describe(b, blobs)}\n"
    old, new = _text(a, blobs), _text(b, blobs)
    if old is None or new is None:
        size = f"{_size(a, blobs, sizes)} -> {_size(b, blobs, sizes)} bytes"
        large = any(e.exists and e.sha not in blobs for e in (a, b))
        what = "Large file" if large else "Binary file"
        return f"--- a/{path}\n+++ b/{path}\n{what} {change.action} ({size})\n"
    text = unified_diff(old, new, path)
    if not text:  # same content, another mode
        return f"--- a/{path}\n+++ b/{path}\nmode {a.mode:o} -> {b.mode:o}\n"
    if not a.exists:
        text = text.replace(f"--- a/{path}\n", "--- /dev/null\n", 1)
    if not b.exists:
        text = text.replace(f"+++ b/{path}\n", "+++ /dev/null\n", 1)
    return text


def _loaded(
    cps: Checkpoints, changes: Sequence[Change]
) -> Iterator[tuple[list[Change], dict[str, bytes], dict[str, int]]]:
    """The changes in runs, each with the contents of its small blobs (the large ones
    and any missing one are not read)."""
    sizes = blob_sizes(cps.repo, _shas(changes))
    batch: list[Change] = []
    total = 0
    for c in changes:
        n = sum(sizes.get(s, 0) for s in _small(c, sizes))
        if batch and total + n > BATCH_BYTES:
            yield batch, _read(cps, batch, sizes), sizes
            batch, total = [], 0
        batch.append(c)
        total += n
    if batch:
        yield batch, _read(cps, batch, sizes), sizes


def _read(cps: Checkpoints, batch: list[Change], sizes: dict[str, int]) -> dict[str, bytes]:
    return cps.repo.read_blobs(s for c in batch for s in _small(c, sizes))


def _small(change: Change, sizes: dict[str, int]) -> list[str]:
    return [s for s in _shas([change]) if sizes.get(s, MAX_DIFF_BYTES + 1) <= MAX_DIFF_BYTES]


def _count(change: Change, blobs: dict[str, bytes], sizes: dict[str, int]) -> tuple[int, int]:
    a, b = change.before, change.after
    if not (LINK in (a.mode, b.mode) or DIR in (a.mode, b.mode)) and (
        _text(a, blobs) is None or _text(b, blobs) is None
    ):
        return UNCOUNTED, UNCOUNTED  # binary or large: shown as such, not as 0 lines
    added = removed = 0
    for line in change_diff(change, blobs, sizes).splitlines()[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _text(entry: Entry, blobs: dict[str, bytes]) -> str | None:
    if not entry.exists:
        return ""
    data = blobs.get(entry.sha)
    if data is None or len(data) > MAX_DIFF_BYTES or b"\0" in data[:8192]:
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


def _size(entry: Entry, blobs: dict[str, bytes], sizes: dict[str, int] | None) -> int | str:
    if not entry.exists:
        return 0
    if entry.sha in blobs:
        return len(blobs[entry.sha])
    return (sizes or {}).get(entry.sha, "?")


def _shas(changes: Sequence[Change]) -> list[str]:
    return [e.sha for c in changes for e in (c.before, c.after) if e.exists and e.mode != DIR]

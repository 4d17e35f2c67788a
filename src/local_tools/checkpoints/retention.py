"""Keeping the shadow repository bounded: old checkpoints dropped, their objects collected.

git's own garbage collection keeps what a ref reaches, and our history lives in SQLite
and in index files git's gc does not read; so before collecting, one commit is made
whose tree names every blob a checkpoint still needs and every root's current tree
(`refs/keep`). Runs under the repository's lock: snapshots wait, none is half-collected.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from local_tools.checkpoints.store import Checkpoints

__all__ = ["Collected", "collect", "collect_if_due", "repo_size"]

log = logging.getLogger(__name__)

DAY = 86_400.0
MAX_ROUNDS = 4  # size-driven drops: a quarter of what is left each round
PRUNE_AFTER = "1.hour.ago"  # unreachable objects younger than this are kept


@dataclass(frozen=True)
class Collected:
    dropped: int
    size_before: int
    size_after: int


def collect_if_due(store: Checkpoints, keep_days: float, max_size_mb: float) -> None:
    try:
        collect(store, keep_days=keep_days, max_size_mb=max_size_mb)
    except Exception:  # a failed collection leaves everything as it was
        log.exception("collecting old checkpoints failed")


def collect(store: Checkpoints, *, keep_days: float, max_size_mb: float) -> Collected:
    store.repo.ensure()
    with store.repo.locked():
        before = repo_size(store)
        dropped = store.history.forget_before(time.time() - keep_days * DAY)
        _gc(store)
        size = repo_size(store)
        rounds = 0
        while size > max_size_mb * 2**20 and store.history.count() and rounds < MAX_ROUNDS:
            dropped += store.history.forget_oldest(0.25)
            _gc(store)
            size = repo_size(store)
            rounds += 1
        return Collected(dropped, before, size)


def repo_size(store: Checkpoints) -> int:
    total = 0
    for folder, _dirs, files in os.walk(store.folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def _gc(store: Checkpoints) -> None:
    repo = store.repo
    lines = [f"100644 blob {sha}\tb{sha}" for sha in sorted(store.history.blobs())]
    for index in sorted(store.folder.glob("index-*")):
        if index.name.endswith(".lock"):
            continue
        tree = repo.run(["write-tree"], index=index).decode().strip()
        lines.append(f"040000 tree {tree}\t{index.name}")
    if lines:
        keep = repo.run(["mktree", "--missing"], stdin=("\n".join(lines) + "\n").encode())
        commit = repo.run(["commit-tree", keep.decode().strip(), "-m", "checkpoints kept"])
        repo.run(["update-ref", "refs/keep", commit.decode().strip()])
    else:  # nothing to keep (mktree refuses an empty list): the old keep goes too
        repo.run(["update-ref", "-d", "refs/keep"])
    # Not `now`: a call in flight has written its "before" blobs (begin takes no lock)
    # but no history row or ref names them yet; an hour outlives any such call.
    repo.run(["gc", "--quiet", f"--prune={PRUNE_AFTER}"])

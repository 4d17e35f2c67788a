"""The workspace's file list for `@` mention autocomplete (`GET /files?q=` of the HTTP server).

The openlink extension asks on every keystroke after `@`, so a search is a few string
scans over a listing kept in memory, never a walk of the tree.

Listing: `search.listing.list_files` — ripgrep's `--files` walk (or the pure-Python walk
that agrees with it): ignore files honoured, `.git` and the folders openlink skips
(`node_modules`, `.next`, `dist`, `build`, `vendor`) left out, symlinks neither followed
nor listed, so every path is a regular file inside the workspace. At most `max_files`
paths are kept (a `note` says so).

Freshness (stale-while-revalidate): the first search lists the tree, waiting at most
`first_wait` seconds (then it answers from the files listed so far). Afterwards a
search never waits for a walk: it answers from the listing it has and, when that is
older than `ttl` or when the mtime of the root or of a top-level folder changed (a file
added, removed or renamed there), asks the one background thread to list again; the
new listing replaces the old one when complete (one that finds the same files keeps
the old index and its caches). Changes deeper down show up within `ttl`.

Ranking: `search.file_ranking` (rules and how they stay fast).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from local_tools.core.errors import NotFound
from local_tools.search.file_ranking import (
    FUZZY_CANDIDATES,
    MAX_QUERY,
    Snapshot,
    normalize,
    same_files,
)
from local_tools.search.listing import DEFAULT_EXCLUDED_DIRS, list_files

__all__ = ["FUZZY_CANDIDATES", "MAX_QUERY", "FileIndex"]  # the limits re-exported

log = logging.getLogger("local_tools.file_index")

MAX_WATCHED = 512  # top-level folders whose mtime is checked on each search


class _Stopped(Exception):
    """Raised through the walk to stop it (closed, or past the listing timeout)."""


def _top_folders(base: str, excluded: frozenset[str]) -> tuple[str, ...]:
    """The root and its top-level folders (not excluded, not symlinks), the watched set."""
    names = []
    try:
        with os.scandir(base) as it:
            for entry in it:
                try:
                    if entry.name not in excluded and entry.is_dir(follow_symlinks=False):
                        names.append(entry.name)
                except OSError:
                    continue
    except OSError:
        return ()
    names.sort()
    return (base, *(os.path.join(base, name) for name in names[:MAX_WATCHED]))


def _signature(watched: tuple[str, ...]) -> tuple[int, ...] | None:
    if not watched:
        return None
    out = []
    for path in watched:
        try:
            out.append(os.stat(path, follow_symlinks=False).st_mtime_ns)
        except OSError:
            out.append(-1)
    return tuple(out)


class FileIndex:
    """The files of `root` for quick-open style search; thread-safe, never raises from search.

    - `ttl`: a listing older than this is refreshed in the background on the next search;
    - `first_wait`: how long the first search waits for the first listing;
    - `min_refresh`: a changed root or top-level folder mtime refreshes a listing at
      least this old (so a busy tree is not walked back to back);
    - `list_timeout`: a walk running longer is stopped, what it found is kept;
    - `max_files`: paths kept at most;
    - `exclude_dirs`: folder names skipped at any depth (`.git` always is).
    """

    def __init__(
        self,
        root: Path | str,
        *,
        ttl: float = 5.0,
        first_wait: float = 3.0,
        min_refresh: float = 1.0,
        list_timeout: float = 120.0,
        max_files: int = 500_000,
        exclude_dirs: Iterable[str] = DEFAULT_EXCLUDED_DIRS,
    ) -> None:
        self.root = Path(root)
        self.ttl = ttl
        self.first_wait = first_wait
        self.min_refresh = min_refresh
        self.list_timeout = list_timeout
        self.max_files = max_files
        self.exclude_dirs = tuple(exclude_dirs)
        self._excluded = frozenset((*self.exclude_dirs, ".git"))
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._snapshot: Snapshot | None = None
        self._first = threading.Event()
        self._partial: list[str] = []  # what the running walk found so far
        self._wanted = False  # a refresh was asked for
        self._busy = False  # a walk is running or asked for
        self._closed = False
        self._thread: threading.Thread | None = None

    # -- public -------------------------------------------------------------------

    def search(self, query: str, limit: int = 50) -> list[str]:
        """Workspace-relative POSIX paths of files matching `query`, best first, at most
        `limit`; [] for a missing or unreadable root, never raises."""
        try:
            limit = int(limit)
            if limit <= 0 or not isinstance(query, str):
                return []
            q = normalize(query)
            return self._current().search(q, limit)
        except Exception:
            log.exception("file index search failed for %s", self.root)
            return []

    def close(self) -> None:
        """Stop the background thread (and a walk in progress); later searches answer
        from the last listing, which is not refreshed any more."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    @property
    def note(self) -> str | None:
        """Why the listing is incomplete (file cap, timeout, missing root), if it is."""
        snap = self._snapshot
        return None if snap is None else snap.note

    def __enter__(self) -> FileIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- freshness ----------------------------------------------------------------

    def _current(self) -> Snapshot:
        snap = self._snapshot
        if snap is None and not self._closed:
            self._request()
            if not self._first.wait(self.first_wait):
                self._install_partial()
            snap = self._snapshot
        if snap is None:
            return Snapshot([], listed_at=time.monotonic())
        if not self._busy and self._stale(snap):
            self._request()
        return snap

    def _stale(self, snap: Snapshot) -> bool:
        age = time.monotonic() - snap.listed_at
        if age >= self.ttl:
            return True
        return age >= self.min_refresh and _signature(snap.watched) != snap.signature

    def _request(self) -> None:
        with self._wake:
            if self._closed or self._busy:
                return
            self._busy = self._wanted = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"file-index {self.root}", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def _install_partial(self) -> None:
        found = list(self._partial)  # the walk appends as it goes; the copy is atomic
        note = f"listing still running, files so far: {len(found)}"
        partial = Snapshot(found, listed_at=time.monotonic(), complete=False, note=note)
        with self._lock:
            if self._snapshot is None:
                self._snapshot = partial

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._wanted and not self._closed:
                    self._wake.wait()
                if self._closed:
                    self._busy = False
                    self._first.set()
                    return
                self._wanted = False
            snap, failed = None, False
            try:
                snap = self._list()
            except Exception:
                log.exception("listing %s failed", self.root)
                failed = True
            with self._lock:
                if snap is not None:
                    self._snapshot = snap
                elif failed:  # keep what there is, try again after ttl
                    now, old = time.monotonic(), self._snapshot
                    note = "listing failed; see the log"
                    if old is None:
                        self._snapshot = Snapshot([], listed_at=now, note=note)
                    else:
                        self._snapshot = old.restamped(now, note)
                self._busy = False
            self._first.set()

    def _list(self) -> Snapshot | None:
        started = time.monotonic()
        deadline = started + self.list_timeout
        try:
            base = os.path.realpath(self.root)
        except (OSError, ValueError):
            return Snapshot([], listed_at=started, note="workspace root not found")
        watched = _top_folders(base, self._excluded)
        signature = _signature(watched)
        found: list[str] = []
        self._partial = found
        note = None

        def check() -> None:
            if self._closed or time.monotonic() > deadline:
                raise _Stopped

        try:
            for block in list_files(base, exclude_dirs=self.exclude_dirs, check=check):
                found += block
                if len(found) >= self.max_files:
                    del found[self.max_files :]
                    note = f"only the first {self.max_files} files found are searched"
                    break
        except _Stopped:
            if self._closed:
                return None
            note = f"listing stopped after {self.list_timeout:g} s: {len(found)} files"
        except (NotFound, OSError):
            return Snapshot(
                [],
                listed_at=started,
                watched=watched,
                signature=signature,
                note="workspace root not found",
            )
        finally:
            self._partial = []
        old = self._snapshot
        if old is not None and old.complete and same_files(found, old.paths):
            # Nothing changed (the usual refresh): keep the index and its caches.
            kept = old.restamped(started, note)
            kept.watched, kept.signature = watched, signature
            return kept
        return Snapshot(found, listed_at=started, watched=watched, signature=signature, note=note)

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
new listing replaces the old one when complete. Changes deeper down show up within
`ttl`.

Ranking, case-insensitive (casefold), `\\` read as `/`, deterministic:
1. the file name contains the query — shorter paths first, then by path;
2. the path contains it (a folder name, or across `/`) — same order;
3. only when fewer than `limit` so far, fuzzy: the query's characters in order (spaces
   dropped), in the file name first, then anywhere in the path — fewest characters
   between them first, then shorter paths; at most `FUZZY_CANDIDATES` per kind are
   ranked, the shortest paths that match.
A `/` at the query's start matches the start of a name ("/read" finds `README.md` and
`docs/reader.py`, not `thread.py`). An empty query lists the shortest paths.

How: paths are kept sorted by (length, path); each is lowered once into two blobs,
"\\n/" + path and "\\n/" + file name per line, and `str.find` (rules 1–2) or a regex of
negated classes anchored on "\\n" (rule 3, linear time) runs over them in C; a hit's line
comes from `bisect` on the line starts. Sorted order lets rules 1–2 stop at `limit`.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate
from pathlib import Path

from local_tools.core.errors import NotFound
from local_tools.search.listing import DEFAULT_EXCLUDED_DIRS, list_files

__all__ = ["FUZZY_CANDIDATES", "MAX_QUERY", "FileIndex"]

log = logging.getLogger("local_tools.file_index")

MAX_QUERY = 1000  # characters of a query looked at (the route allows 200)
FUZZY_CANDIDATES = 2000  # fuzzy matches ranked per kind (file name, path), shortest paths
MAX_WATCHED = 512  # top-level folders whose mtime is checked on each search


class _Stopped(Exception):
    """Raised through the walk to stop it (closed, or past the listing timeout)."""


def _lines(paths: list[str]) -> list[str]:
    """'/' + the casefolded path, one per path, newline-free."""
    joined = "\n/".join(paths)
    if joined.count("\n") == len(paths) - 1:
        return ("/" + joined).casefold().split("\n")
    return ["/" + p.casefold().replace("\n", "\0") for p in paths]  # a name with a newline


def _blob(lines: list[str]) -> tuple[str, list[int]]:
    """ "\\n" + the lines joined by "\\n", and where each line starts (plus one past the end)."""
    starts = list(accumulate((len(line) + 1 for line in lines), initial=1))
    return "\n" + "\n".join(lines), starts


class _Snapshot:
    """One complete (or, on a slow first listing, partial) listing; never changed."""

    __slots__ = (
        "bblob",
        "blob",
        "bstarts",
        "complete",
        "listed_at",
        "note",
        "paths",
        "signature",
        "starts",
        "watched",
    )

    def __init__(
        self,
        paths: list[str],
        *,
        listed_at: float,
        watched: tuple[str, ...] = (),
        signature: tuple[int, ...] | None = None,
        complete: bool = True,
        note: str | None = None,
    ) -> None:
        paths.sort(key=lambda p: (len(p), p))
        self.paths = paths
        lines = _lines(paths)
        self.blob, self.starts = _blob(lines)
        self.bblob, self.bstarts = _blob([line[line.rfind("/") :] for line in lines])
        self.listed_at = listed_at
        self.watched = watched
        self.signature = signature
        self.complete = complete
        self.note = note

    def restamped(self, listed_at: float, note: str | None) -> _Snapshot:
        other = object.__new__(_Snapshot)
        for name in _Snapshot.__slots__:
            setattr(other, name, getattr(self, name))
        other.listed_at, other.note = listed_at, note
        return other

    def search(self, q: str, limit: int) -> list[str]:
        if not q:
            return self.paths[:limit]
        found = _substring(self.bblob, self.bstarts, q, limit, ())
        if len(found) < limit:
            found += _substring(self.blob, self.starts, q, limit - len(found), set(found))
        fq = q.replace(" ", "")
        if len(found) < limit and len(fq) > 1:
            pattern = _fuzzy_regex(fq)
            for blob, starts in ((self.bblob, self.bstarts), (self.blob, self.starts)):
                if len(found) >= limit:
                    break
                found += _fuzzy(blob, starts, pattern, fq, limit - len(found), set(found))
        paths = self.paths
        return [paths[i] for i in found]


def _substring(blob: str, starts: list[int], q: str, want: int, skip: Iterable[int]) -> list[int]:
    """The first `want` lines containing `q`, in order, leaving out `skip`."""
    out: list[int] = []
    find = blob.find
    pos = 0
    while len(out) < want:
        hit = find(q, pos)
        if hit < 0:
            break
        i = bisect_right(starts, hit) - 1
        if i not in skip:
            out.append(i)
        pos = starts[i + 1]
    return out


def _fuzzy_regex(q: str) -> re.Pattern[str]:
    # "\n" then, for each character c, [^c\n]*c: the leftmost occurrence of each in
    # turn, so a line is matched in linear time whatever the query.
    parts = ["\n"]
    for c in q:
        e = re.escape(c)
        parts.append(f"[^{e}\\n]*{e}")
    return re.compile("".join(parts))


def _fuzzy(
    blob: str, starts: list[int], pattern: re.Pattern[str], q: str, want: int, skip: set[int]
) -> list[int]:
    """The best `want` lines holding the characters of `q` in order, leaving out `skip`."""
    scored: list[tuple[int, int]] = []
    rfind = blob.rfind
    search = pattern.search
    head = q[:-1][::-1]
    pos = 0
    while len(scored) < FUZZY_CANDIDATES:
        m = search(blob, pos)
        if m is None:
            break
        i = bisect_right(starts, m.start())
        if i not in skip:
            # The tightest window ending where the match ends: its extra characters.
            first, end = starts[i], m.end()
            j = end - 1
            for c in head:
                j = rfind(c, first, j)
            scored.append((end - j - len(q), i))
        pos = starts[i + 1] - 1
    scored.sort()
    return [i for _, i in scored[:want]]


def _normalize(query: str) -> str:
    q = query[:MAX_QUERY].replace("\\", "/").strip()
    if q.startswith("./"):
        q = q[1:]
    return q.casefold().replace("\n", "").replace("\0", "")


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
        self._snapshot: _Snapshot | None = None
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
            q = _normalize(query)
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

    def _current(self) -> _Snapshot:
        snap = self._snapshot
        if snap is None and not self._closed:
            self._request()
            if not self._first.wait(self.first_wait):
                self._install_partial()
            snap = self._snapshot
        if snap is None:
            return _Snapshot([], listed_at=time.monotonic())
        if not self._busy and self._stale(snap):
            self._request()
        return snap

    def _stale(self, snap: _Snapshot) -> bool:
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
        partial = _Snapshot(found, listed_at=time.monotonic(), complete=False, note=note)
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
            snap = None
            try:
                snap = self._list()
            except Exception:
                log.exception("listing %s failed", self.root)
            with self._lock:
                if snap is not None:
                    self._snapshot = snap
                elif self._snapshot is not None:  # keep the old one, try again after ttl
                    self._snapshot = self._snapshot.restamped(time.monotonic(), "listing failed")
                self._busy = False
            self._first.set()

    def _list(self) -> _Snapshot | None:
        started = time.monotonic()
        deadline = started + self.list_timeout
        try:
            base = os.path.realpath(self.root)
        except (OSError, ValueError):
            return _Snapshot([], listed_at=started, note="workspace root not found")
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
            return _Snapshot(
                [],
                listed_at=started,
                watched=watched,
                signature=signature,
                note="workspace root not found",
            )
        finally:
            self._partial = []
        return _Snapshot(found, listed_at=started, watched=watched, signature=signature, note=note)

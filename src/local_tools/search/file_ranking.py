"""Searching one listing of the workspace's files (the `FileIndex`'s snapshots).

Ranking, case-insensitive (casefold), `\\` read as `/`, deterministic:
1. the file name contains the query — shorter paths first, then by path;
2. the path contains it (a folder name, or across `/`) — same order;
3. only when fewer than `limit` so far, fuzzy: the query's characters in order (spaces
   dropped; queries of 2 to `MAX_FUZZY` characters), (a) in the file name, then (b)
   anywhere in the path — fewest extra characters in the tightest window that ends where
   the leftmost match ends, then shorter paths; of each kind, the `FUZZY_CANDIDATES`
   shortest matching paths are ranked.
A `/` at the query's start matches the start of a name ("/read" finds `README.md` and
`docs/reader.py` before the fuzzy `thread.py`). An empty query lists the shortest paths.

How (100k files: tens of µs for short queries, ~15 ms at worst; benchmarks/file_index.py):
paths are kept sorted by (length, path), so rules 1–2 stop at `limit`, and casefolded
once into blobs of lines ("\\n" + "/" + path, "/" + file name, "/" + folder) that `str.find`
scans in C, a hit's line found by `bisect` on the line starts. Rule 2 for a query without
`/` merges the files of the folders whose path holds it. Rule 3a checks only the names
that hold all the query's characters (per-character bitmaps of the names, big ints built
on first use and kept with the listing) with a regex of negated classes (linear time).
Rule 3b matches each folder once — how many of the query's first characters it holds in
order — and checks the file names of its files for the rest.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import accumulate, islice

__all__ = ["FUZZY_CANDIDATES", "MAX_QUERY", "Snapshot", "normalize", "same_files"]

MAX_QUERY = 1000  # characters of a query looked at (the route allows 200)
FUZZY_CANDIDATES = 500  # fuzzy matches ranked per kind (file name, path), shortest paths
MAX_FUZZY = 64  # longer queries (spaces aside) get substring matches only
MAX_CACHED_CHARS = 256  # characters whose file-name bitmap a listing keeps
MERGED_FOLDERS = 64  # rule 2 merges the files of at most this many folders, else scans


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


_DIGITS = bytes.maketrans(b"\0\1", b"01")


def _bits_of(flags: bytes) -> int:
    """The int whose bit i is flags[i] (each byte 0 or 1)."""
    return int(flags.translate(_DIGITS)[::-1], 2) if flags else 0


def _ascending(bits: int) -> Iterator[int]:
    """The indices of the set bits of `bits`, lowest first."""
    digits = bin(bits)[:1:-1]  # lowest bit first, without "0b"
    find = digits.find
    i = find("1")
    while i >= 0:
        yield i
        i = find("1", i + 1)


class Snapshot:
    """One complete (or, on a slow first listing, partial) listing; never changed but
    for a cache of which file names hold which character (filled by searches)."""

    __slots__ = (
        "bblob",
        "blob",
        "bstarts",
        "char_bits",
        "complete",
        "dir_files",
        "dir_of",
        "dirblob",
        "dstarts",
        "listed_at",
        "names",
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
        cuts = [line.rfind("/") for line in lines]
        self.names = [line[cut:] for line, cut in zip(lines, cuts, strict=True)]  # "/" + file name
        self.bblob, self.bstarts = _blob(self.names)
        dirs: dict[str, int] = {}  # "/" + folder ("" at the root) -> its number
        self.dir_of = [
            dirs.setdefault(line[:cut], len(dirs)) for line, cut in zip(lines, cuts, strict=True)
        ]
        self.dirblob, self.dstarts = _blob(list(dirs))
        self.dir_files: list[list[int]] = [[] for _ in dirs]
        for i, d in enumerate(self.dir_of):
            self.dir_files[d].append(i)
        self.char_bits: dict[str, int] = {}
        self.listed_at = listed_at
        self.watched = watched
        self.signature = signature
        self.complete = complete
        self.note = note

    def restamped(self, listed_at: float, note: str | None) -> Snapshot:
        other = object.__new__(Snapshot)
        for name in Snapshot.__slots__:
            setattr(other, name, getattr(self, name))
        other.listed_at, other.note = listed_at, note
        return other

    def search(self, q: str, limit: int) -> list[str]:
        if not q:
            return self.paths[:limit]
        found = _substring(self.bblob, self.bstarts, q, limit, ())
        if len(found) < limit:
            found += self._in_paths(q, limit - len(found), set(found))
        fq = q.replace(" ", "")
        if len(found) < limit and 1 < len(fq) <= MAX_FUZZY:
            found += self._fuzzy_names(fq, limit - len(found), set(found))
            if len(found) < limit:
                found += self._fuzzy_paths(fq, limit - len(found), set(found))
        paths = self.paths
        return [paths[i] for i in found]

    def _in_paths(self, q: str, want: int, skip: set[int]) -> list[int]:
        """Rule 2, after rule 1 found every name match (`skip`). Without a '/', the query
        is in the path but not the name only when it is in the folder: the files of the
        few folders holding it are merged, not the whole listing scanned."""
        if "/" not in q:
            folders = _substring(self.dirblob, self.dstarts, q, MERGED_FOLDERS + 1, ())
            if len(folders) <= MERGED_FOLDERS:
                lists = [self.dir_files[d] for d in folders]
                merged = heapq.merge(*lists) if len(lists) > 1 else iter(lists[0] if lists else ())
                return list(islice((i for i in merged if i not in skip), want))
        return _substring(self.blob, self.starts, q, want, skip)

    def _names_with(self, chars: Iterable[str]) -> int:
        """Bit i set when file name i holds every one of `chars`."""
        bits = (1 << len(self.paths)) - 1
        cache = self.char_bits
        for c in set(chars):
            one = cache.get(c)
            if one is None:
                one = _bits_of(bytes([c in name for name in self.names])) if c in self.bblob else 0
                if len(cache) < MAX_CACHED_CHARS:
                    cache[c] = one
            bits &= one
            if not bits:
                break
        return bits

    def _fuzzy_names(self, q: str, want: int, skip: set[int]) -> list[int]:
        """Rule 3a: the file name holds the characters of `q` in order."""
        pattern = _fuzzy_regex(q)
        bblob, bstarts = self.bblob, self.bstarts
        matched = []
        for i in _ascending(self._names_with(q)):
            if i not in skip and pattern.match(bblob, bstarts[i] - 1):
                matched.append(i)
                if len(matched) >= FUZZY_CANDIDATES:
                    break
        return self._best(bblob, bstarts, pattern, q, matched, want)

    def _fuzzy_paths(self, q: str, want: int, skip: set[int]) -> list[int]:
        """Rule 3b: the path holds them, some in the folders, the rest in the file name.

        The folders are matched once each, not once per file: `held[d]` is how many of
        the query's first characters folder d holds in order (greedily, which is how far
        any match can get), and a file in it matches when its name holds the rest. Files
        whose folder holds none are left out: their matches are rule 3a's.
        """
        held = [m.lastindex or 0 for m in _held_regex(q).finditer(self.dirblob)]
        if not any(held):
            return []
        held_by_file = bytes(map(held.__getitem__, self.dir_of))
        candidates = 0
        for k in set(held) - {0}:
            names = self._names_with(q[k:])  # all names when k == len(q)
            if names:
                candidates |= names & _bits_of(held_by_file.translate(_ONLY[k]))
        rests: dict[int, re.Pattern[str]] = {}
        bblob, bstarts = self.bblob, self.bstarts
        matched = []
        for i in _ascending(candidates):
            if i in skip:
                continue
            k = held_by_file[i]
            if k < len(q):
                rest = rests.get(k)
                if rest is None:
                    rest = rests[k] = _fuzzy_regex(q[k:])
                if not rest.match(bblob, bstarts[i] - 1):
                    continue
            matched.append(i)
            if len(matched) >= FUZZY_CANDIDATES:
                break
        return self._best(self.blob, self.starts, _fuzzy_regex(q), q, matched, want)

    @staticmethod
    def _best(
        blob: str, starts: list[int], pattern: re.Pattern[str], q: str, lines: list[int], want: int
    ) -> list[int]:
        """The `want` lines with the fewest extra characters in the tightest window that
        ends where the leftmost match ends; ties in line order."""
        scored = []
        rfind = blob.rfind
        head = q[:-1][::-1]
        for i in lines:
            first = starts[i]
            m = pattern.match(blob, first - 1)
            if m is None:  # cannot happen: every line given matches
                continue
            end = m.end()
            j = end - 1
            for c in head:
                j = rfind(c, first, j)
            scored.append((end - j - len(q), i))
        scored.sort()
        return [i for _, i in scored[:want]]


# _ONLY[k] maps byte k to b"\1" and every other byte to b"\0".
_ONLY = [bytes(int(b == k) for b in range(256)) for k in range(MAX_FUZZY + 1)]


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


def _held_regex(q: str) -> re.Pattern[str]:
    # One match per line; group n takes part when the line holds q[:n] in order, and
    # groups close in order, so `lastindex` is how many it holds (None for none).
    parts = ["\n"]
    for n, c in enumerate(q, 1):
        e = re.escape(c)
        group = f"([^{e}\\n]*{e})?"
        parts.append(group if n == 1 else f"(?({n - 1}){group})")
    return re.compile("".join(parts))


def normalize(query: str) -> str:
    q = query[:MAX_QUERY].replace("\\", "/").strip()
    if q.startswith("./"):
        q = q[1:]
    return q.casefold().replace("\n", "").replace("\0", "")


def same_files(found: list[str], paths: list[str]) -> bool:
    return len(found) == len(paths) and set(found) == set(paths)

"""How a grep query is run in pure Python: its regex, and the literals that avoid it.

`compile_query` translates the Rust pattern (`regex_translate`) and works out what
`text_search` uses to skip work: the literals every match holds (the longest, the
others, one safe under Unicode case folding), a literal at a fixed offset from the
match start (the anchor), chains of literals in match order for finding candidate
lines in C, a bytes twin of the regex for ASCII text, and for ignore-case a
lowercased twin to run on lowercased ASCII text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from local_tools.core.errors import InvalidInput
from local_tools.search.regex_translate import RegexSyntaxError, UnsupportedRegex, translate
from local_tools.search.scope import Query

try:  # the parser behind `re`, for the literal prefilter
    import re._parser as _sre_parse  # type: ignore[import-not-found]
    from re._constants import LITERAL as _LITERAL  # type: ignore[import-not-found]
except ImportError:  # Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]
    from sre_constants import LITERAL as _LITERAL  # type: ignore[no-redef]

__all__ = ["Compiled", "compile_query"]

# Under re.IGNORECASE these ASCII letters also match non-ASCII ones (KELVIN SIGN,
# LONG S, dotted and dotless I), which an ASCII-lowercased text would not show.
_FOLD_UNSAFE = re.compile(r"[^\x20-\x7e]|[iksIKS]")


@dataclass(frozen=True)
class Compiled:
    """A query ready to run: the regex, and the literals every match contains."""

    regex: re.Pattern[str]
    folded: bool = False  # ignore case: the literals are lowercase ASCII
    literal_bytes: bytes | None = None  # UTF-8 (when folded: right for ASCII bytes only)
    safe_bytes: bytes | None = None  # folded: a literal right for non-ASCII bytes too
    anchor: str | None = None  # a literal at a fixed offset from every match's start
    anchor_offset: int = 0
    others: tuple[bytes, ...] = ()  # more literals every match holds (like literal_bytes)
    # Finds, in the (lowercased) bytes, the literal and those after it on its line:
    # the lines worth giving to the regex, found in C.
    line_filter: re.Pattern[bytes] | None = None
    safe_filter: re.Pattern[bytes] | None = None  # the same for safe_bytes
    ascii_regex: re.Pattern[bytes] | None = None  # the regex, for ASCII-only text
    # Every match starts with a literal: `re` then skips to each candidate in C, so
    # whole texts are searched at once (`_all_lines`).
    literal_start: bool = False
    # Ignore case: the regex lowercased, for lowercased ASCII text (`_lowered`).
    folded_regex: re.Pattern[bytes] | None = None

    def needle_for(self, ascii_only: bool) -> tuple[bytes | None, tuple[bytes, ...]]:
        """Literals every match in these (UTF-8) bytes contains; lowercase when folded.

        `ascii_only`: the bytes are ASCII (only asked when folded).
        """
        if not self.folded or ascii_only:
            return self.literal_bytes, self.others
        return self.safe_bytes, ()

    def filter_for(self, ascii_only: bool) -> re.Pattern[bytes] | None:
        return self.line_filter if not self.folded or ascii_only else self.safe_filter


def compile_query(query: Query) -> Compiled:
    """The query's Rust regex as a Python one; InvalidInput when it cannot be."""
    try:
        source = translate(query.pattern)
    except UnsupportedRegex as exc:
        raise InvalidInput(f"Invalid regex {query.pattern!r}: {exc}.") from None
    except RegexSyntaxError as exc:
        raise InvalidInput(
            f"Invalid regex {query.pattern!r}: {exc}. The pattern uses Rust regex syntax "
            "(like ripgrep); escape special characters such as ( [ { . * + ? with a "
            "backslash to match them literally."
        ) from None
    flags = re.MULTILINE | (re.IGNORECASE if query.ignore_case else 0)
    try:
        regex = re.compile(source, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise InvalidInput(f"Invalid regex {query.pattern!r}: {exc}.") from None
    runs = _literal_runs(source, flags)
    if query.ignore_case:
        ascii_runs = [
            (r.lower(), w if k == 0 else None)
            for run, w in runs
            for k, r in enumerate(re.split(r"[^\x20-\x7e]", run))
        ]
        pieces = [r.lower() for run, _ in runs for r in _FOLD_UNSAFE.split(run) if r]
        safe = _longest(pieces)
    else:
        ascii_runs, pieces, safe = runs, [], None
    literal = _longest([run for run, _ in ascii_runs])
    anchored = [(run, w) for run, w in ascii_runs if w is not None and len(run) >= 3]
    anchor = max(anchored, key=lambda rw: len(rw[0])) if anchored else (None, 0)
    usable = [run for run, _ in ascii_runs if run and "\ufffd" not in run]
    # Other literals of 3+ characters, not inside the chosen one: a file lacking any
    # of them holds no match ("class \w+error" needs "error" too).
    others = {run for run in usable if len(run) >= 3 and literal is not None and run not in literal}
    # The literals come in match order, each match on one line: a line holding the
    # chosen literal but not the ones after it there is skipped without Python.
    after = usable[usable.index(literal) :] if literal in usable else []
    line_filter = _chained(after)
    # For non-ASCII text the pieces safe under case folding, from the first long one.
    long_piece = next((k for k, piece in enumerate(pieces) if len(piece) >= 3), None)
    safe_filter = _chained(pieces[long_piece:] if long_piece is not None else [safe or ""])
    return Compiled(
        regex,
        folded=query.ignore_case,
        literal_bytes=None if literal is None else literal.encode("utf-8"),
        safe_bytes=None if safe is None else safe.encode("ascii"),
        anchor=anchor[0],
        anchor_offset=anchor[1] or 0,
        others=tuple(sorted(run.encode("utf-8") for run in others)),
        line_filter=line_filter,
        literal_start=bool(runs) and runs[0][1] == 0,
        folded_regex=_folded_twin(source, flags) if query.ignore_case else None,
        safe_filter=safe_filter if safe is not None else None,
        ascii_regex=_ascii_twin(source, flags),
    )


_SAFE_ESCAPES = frozenset("wWdDsSbBAZntrfv")
_SAFE_GROUP = re.compile(r"\(\?(?:[:=!]|[ims]+:)")


def _chained(literals: list[str]) -> re.Pattern[bytes] | None:
    """The literals in this order on one line (a match holds them so).

    After the first, only literals of 3+ characters: each link backtracks over the
    rest of the line, and short ones (a space, a bracket) hardly narrow anything.
    """
    kept = [text for k, text in enumerate(literals) if text and (k == 0 or len(text) >= 3)]
    source = b"[^\n]*".join(re.escape(text.encode("utf-8")) for text in kept)
    return re.compile(source) if source else None


def _lowered(source: str) -> str | None:
    """The regex with its letters lowercased, to run case-sensitively on lowercased ASCII.

    Under IGNORECASE a literal letter matches either case; in lowercased text only
    its lowercase form is left, and `\\w`, `\\d`, `\\s`, `\\b`, `.` do not care. None
    when that reasoning may not hold: a class or escape naming letters (`[A-Z]`,
    `\\x41`), flags that switch case-folding off, anything unusual.
    """
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            nxt = source[i + 1 : i + 2]
            if not nxt or (nxt.isalnum() and nxt not in _SAFE_ESCAPES):
                return None
            out.append(source[i : i + 2])
            i += 2
        elif c == "[":
            end = i + 1 + (source[i + 1 : i + 2] == "^")
            end += source[end : end + 1] == "]"  # a leading "]" is a literal
            while end < n and source[end] != "]":
                end += 2 if source[end] == "\\" else 1
            if end >= n or not _caseless_class(source[i + 1 : end]):
                return None
            out.append(source[i : end + 1])
            i = end + 1
        elif c == "(" and source[i + 1 : i + 2] == "?":
            m = _SAFE_GROUP.match(source, i)
            if m is None:
                return None
            out.append(m.group())
            i = m.end()
        else:
            out.append(c.lower() if c.isascii() else c)
            i += 1
    return "".join(out)


_CLASS_ESCAPES = frozenset("wWdDsSn")  # sets that hold both cases of a letter or none


def _caseless_class(body: str) -> bool:
    """Whether a class (its text between the brackets) matches both cases of every
    letter or neither: no letter in it, and no range reaching into A-Z or a-z
    (`[?-_]` holds A-Z, so under IGNORECASE a-z too)."""
    items: list[str | None] = []  # single characters; None for a class escape
    i = 1 if body.startswith("^") else 0
    while i < len(body):
        if body[i] == "\\":
            nxt = body[i + 1 : i + 2]
            if nxt in _CLASS_ESCAPES:
                items.append(None)
            elif not nxt or nxt.isalnum():
                return False  # \x41, \t and the like
            else:
                items.append(nxt)
            i += 2
        else:
            items.append(body[i])
            i += 1
    for k, item in enumerate(items):
        if item is None:
            continue
        if item.isalpha():
            return False
        if item == "-" and 0 < k < len(items) - 1:  # a range between its neighbours
            low, high = items[k - 1], items[k + 1]
            if low is None or high is None:
                return False
            if ord(low) <= ord("z") and ord(high) >= ord("A"):
                return False
    return True


def _folded_twin(source: str, flags: int) -> re.Pattern[bytes] | None:
    lowered = _lowered(source)
    if lowered is None or not lowered.isascii():
        return None
    try:
        return re.compile(lowered.encode("ascii"), flags & ~re.IGNORECASE)
    except (re.error, OverflowError, RecursionError):
        return None


def _ascii_twin(source: str, flags: int) -> re.Pattern[bytes] | None:
    """The regex compiled for bytes, which finds the same matches in ASCII-only text.

    On ASCII text `\\w`, `\\d`, `\\b` and ASCII case folding agree with the str
    regex; a pattern that names non-ASCII characters (which could fold to ASCII
    ones, like KELVIN SIGN) has no twin. Searching bytes skips decoding whole lines.
    """
    if not source.isascii() or re.search(r"\\[uUN]", source):
        return None
    try:
        return re.compile(source.encode("ascii"), flags)
    except (re.error, OverflowError, RecursionError):
        return None


def _literal_runs(source: str, flags: int) -> list[tuple[str, int | None]]:
    """Runs of plain characters at the top level of the pattern: every match has each.

    With each, the width of what precedes it when that is fixed (else None): a match
    then starts exactly that many characters before the run.
    """
    try:
        tree = _sre_parse.parse(source, flags)
        runs: list[tuple[str, int | None]] = []
        current: list[str] = []
        width: int | None = 0
        run_width: int | None = 0
        for item in tree.data:
            op, av = item
            if op is _LITERAL:
                if not current:
                    run_width = width
                current.append(chr(av))
            elif current:
                runs.append(("".join(current), run_width))
                current = []
            if width is not None:
                lo, hi = _sre_parse.SubPattern(tree.state, [item]).getwidth()
                width = width + lo if lo == hi else None
        if current:
            runs.append(("".join(current), run_width))
        return runs
    except Exception:  # only an optimisation
        return []


def _longest(runs: list[str]) -> str | None:
    runs = [run for run in runs if run and "\ufffd" not in run]
    return max(runs, key=len) if runs else None

"""Replace old_string by new_string in a file's text: exactly, or tolerantly but safely.

A model's old_string is often the right text with invisible slips (CRLF vs LF,
trailing spaces, shifted indentation, double-escaped JSON, extra blank lines).
Other agents' fuzzy chains "fix" that by accepting a block whose first and last
lines look alike, and then silently rewrite the wrong place. Here every tolerant
match is a contiguous block with old_string's line count (surrounding blank lines
aside) whose every line equals old_string's line after a named normalisation, and
it is applied only when it is the single such place. Otherwise nothing changes and
the error says why and what to do.

Strategies, tried in this order; the first that finds anything decides:

exact
    old_string occurs verbatim. One occurrence is replaced; several are a CONFLICT
    unless replace_all (then every non-overlapping occurrence, left to right).
line_endings
    Equal once '\\r\\n' and '\\n' are treated alike (old_string may start or end
    mid-line, like an exact match). A final line break old_string has and the
    file's last line lacks is the same slip; the file stays without it.
trailing_whitespace
    Whole lines equal after stripping trailing whitespace.
indentation
    Whole lines equal after stripping indentation, and old_string's indentation is
    off from the file's in one consistent way: a fixed whitespace string added or
    dropped, or tabs and spaces mixed up at one tab width. new_string is
    re-indented by the same delta, so tabs stay tabs and nothing loses its
    relative indentation.
escapes
    old_string has literal \\n \\t \\r \\" \\' \\` \\$ \\\\ sequences (double-escaped
    JSON): both strings are unescaped and the strategies above retried.
blank_lines
    old_string's leading/trailing blank lines are not in the file: they are dropped
    (and as many from new_string) and the strategies above retried.
create
    old_string is empty and so is the file: the file becomes new_string.

Each level tolerates what the levels before it do, so a CRLF file with a
re-indented old_string matches at "indentation". The strategy reported for a
match under escapes or blank_lines is that name, whatever level then matched.
Lines of new_string identical to lines of old_string (the ones the model did not
change) keep the file's exact text under the whitespace strategies, so an edit
next to a Markdown hard break or a smart-tab alignment leaves those alone.

Ambiguity: at every strategy, more than one place is a CONFLICT naming the lines
(overlapping occurrences count); nothing is ever picked silently. With
replace_all=True every place the deciding strategy finds is replaced
(non-overlapping, left to right), each one a window that passed the full
line-by-line check on its own and is re-indented by its own delta; places only a
later (looser) strategy would find are left alone, as an exact replace_all leaves
near-misses alone.

Line endings: the file's endings win. new_string's line breaks are rewritten to the
ending of the text they replace (the majority of its line breaks, ties going to
the file's majority; a replacement inside one line takes that line's ending). The
one exception is an exact match where both strings contain '\\r\\n': the model is
writing raw endings on purpose and new_string is taken as given.

new_string is always literal: nothing in it ($&, \\1, \\g<0> ...) is interpreted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher

from local_tools.core.errors import Conflict, InvalidInput
from local_tools.editing.closest import not_found
from local_tools.editing.strategies import (
    LEVEL_NAMES,
    LINE_ENDINGS,
    Query,
    Window,
    find_windows,
    has_escapes,
    join_lines,
    make_query,
    split_lines,
    strip_blank_lines,
    unescape,
)

__all__ = ["STRATEGIES", "Replacement", "replace"]

STRATEGIES = (
    "exact",
    "line_endings",
    "trailing_whitespace",
    "indentation",
    "escapes",
    "blank_lines",
    "create",
)

_HOW = {
    "exact": "",
    "line_endings": "ignoring line endings (CRLF vs LF)",
    "trailing_whitespace": "ignoring trailing whitespace",
    "indentation": "ignoring indentation",
    "escapes": 'after turning its literal escape sequences (\\n, \\t, \\", ...) into characters',
    "blank_lines": "ignoring its leading/trailing blank lines",
}

_MAX_LISTED = 10


@dataclass(frozen=True)
class Replacement:
    content: str  # the whole new text
    strategy: str  # one of STRATEGIES
    replacements: int  # how many places changed
    first_line: int  # 1-based line of the first change in the ORIGINAL content


def replace(content: str, old: str, new: str, *, replace_all: bool = False) -> Replacement:
    """Replace `old` by `new` in `content` (see the module docstring for the rules).

    Raises InvalidInput (nothing to do), Conflict (ambiguous) or NotFound (with the
    closest block of the file and a diff against it).
    """
    if old == new:
        raise InvalidInput(
            "old_string and new_string are identical, so the edit would change nothing. "
            "Put the text you want in new_string."
        )
    if old == "":
        if content == "":
            return Replacement(new, "create", 1, 1)
        raise InvalidInput(
            "old_string is empty but the file is not; give the text to replace, or use "
            "write_file with overwrite=true to replace the whole file."
        )
    result = _exact(content, old, new, replace_all, "exact") or _tolerant(
        content, old, new, replace_all
    )
    if result is None:
        raise not_found(content, old)
    if result.content == content:
        raise InvalidInput(
            f"The edit would not change the file: old_string matched ({result.strategy}) "
            "and new_string is identical to the text it replaces once the file's own line "
            "endings are kept. Line endings and invisible whitespace are not changed by "
            "edit; rewrite the file with write_file if that is what you want."
        )
    return result


def _exact(content: str, old: str, new: str, replace_all: bool, name: str) -> Replacement | None:
    pos = content.find(old)
    if pos == -1:
        return None
    first_line = content.count("\n", 0, pos) + 1
    # Raw '\r\n' in both strings is deliberate; otherwise the file's endings win.
    keep = "\n" not in new or ("\r\n" in old and "\r\n" in new)
    # pos + 1, not pos + len(old): overlapping occurrences are ambiguous too.
    if content.find(old, pos + 1) == -1:
        text = new if keep else _with_eol(new, _region_eol(content, pos, pos + len(old)))
        # The only occurrence is the first one: str.replace is one allocation, not three.
        return Replacement(content.replace(old, text, 1), name, 1, first_line)
    if not replace_all:
        raise _ambiguous_exact(content, old, pos, name)
    count = content.count(old)
    crlf = content.count("\r\n")
    lf = content.count("\n") - crlf
    if keep or not (crlf and lf):
        # One ending for the whole file: str.replace does it at C speed.
        eol = "\r\n" if crlf else "\n" if lf else None
        text = new if keep else _with_eol(new, eol)
        return Replacement(content.replace(old, text), name, count, first_line)
    # Mixed endings: each occurrence takes its own surroundings' ending.
    pieces: list[tuple[int, int, str]] = []
    while pos != -1:
        end = pos + len(old)
        pieces.append((pos, end, _with_eol(new, _region_eol(content, pos, end))))
        pos = content.find(old, end)
    return Replacement(_splice(content, pieces), name, len(pieces), first_line)


def _variants(old: str, new: str) -> Iterator[tuple[str | None, Query, str, str | None]]:
    """(strategy name or None for the level's, query, new text, text to try exactly)."""
    yield None, make_query(old), new, None
    unescaped = unescape(old) if has_escapes(old) else old
    new_unescaped = unescape(new)
    if unescaped != old:
        yield "escapes", make_query(unescaped), new_unescaped, unescaped
    stripped = strip_blank_lines(old, new)
    if stripped is not None:
        yield "blank_lines", stripped[0], stripped[1], None
    if unescaped != old:
        both = strip_blank_lines(unescaped, new_unescaped)
        if both is not None:
            yield "escapes", both[0], both[1], None


def _tolerant(content: str, old: str, new: str, replace_all: bool) -> Replacement | None:
    for name, query, new_text, exact_old in _variants(old, new):
        if exact_old is not None:
            exact = _exact(content, exact_old, new_text, replace_all, name or "exact")
            if exact is not None:
                return exact
        found = find_windows(content, query, exhaustive=replace_all)
        if not found.windows:
            continue
        level = min(w.level for w in found.windows)
        chosen = [w for w in found.windows if w.level == level]
        strategy = name or LEVEL_NAMES[level]
        if len(chosen) > 1 and not replace_all:
            raise _ambiguous_windows(chosen, strategy, more=found.cut == level)
        chosen = _non_overlapping(chosen)
        plan = _Plan.make(query, new_text)
        pieces = [(w.start, w.end, plan.render(content, w)) for w in chosen]
        return Replacement(_splice(content, pieces), strategy, len(pieces), chosen[0].line + 1)
    return None


def _non_overlapping(windows: list[Window]) -> list[Window]:
    kept: list[Window] = []
    for window in windows:
        if not kept or window.start >= kept[-1].end:
            kept.append(window)
    return kept


@dataclass(frozen=True)
class _Plan:
    """new_string prepared once for every window it replaces."""

    text: str
    lines: list[str]
    trail: bool
    # (new_string line, old_string line) pairs the model left unchanged: those keep
    # the file's exact text (trailing spaces such as a Markdown hard break, smart-tab
    # alignment), since old_string only matched them up to whitespace.
    unchanged: list[tuple[int, int]]

    @classmethod
    def make(cls, query: Query, new: str) -> _Plan:
        lines, trail = split_lines(new)
        matcher = SequenceMatcher(None, query.lines, lines, autojunk=False)
        unchanged = [
            (j + k, i + k) for i, j, size in matcher.get_matching_blocks() for k in range(size)
        ]
        return cls(new, lines, trail, unchanged)

    def render(self, content: str, window: Window) -> str:
        eol = _region_eol(content, window.start, window.end)
        if window.level == LINE_ENDINGS:
            # Lines matched verbatim (fragments included): only the endings change.
            text = _with_eol(self.text, eol)
        else:
            reindent = window.reindent
            lines = [reindent(line) for line in self.lines] if reindent else list(self.lines)
            if self.unchanged:
                file_lines, _ = split_lines(content[window.start : window.end])
                for j, i in self.unchanged:
                    lines[j] = file_lines[i]
            fallback = "\r\n" if "\r\n" in self.text else "\n"
            text = join_lines(lines, self.trail, eol or fallback)
        if window.drop_eol:
            # The file had no final newline where old_string assumed one; keep it so.
            text = text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")
        return text


def _splice(content: str, pieces: list[tuple[int, int, str]]) -> str:
    if len(pieces) == 1:
        start, end, text = pieces[0]
        region = content[start:end]
        if region and content.find(region) == start:
            # Our region is the first occurrence: str.replace avoids copying twice.
            return content.replace(region, text, 1)
    out: list[str] = []
    done = 0
    for start, end, text in pieces:
        out.append(content[done:start])
        out.append(text)
        done = end
    out.append(content[done:])
    return "".join(out)


def _with_eol(text: str, eol: str | None) -> str:
    if eol is None or "\n" not in text:
        return text
    text = text.replace("\r\n", "\n")
    return text if eol == "\n" else text.replace("\n", "\r\n")


def _region_eol(content: str, start: int, end: int) -> str | None:
    """The line ending new text replacing content[start:end] should use (None: no lines)."""
    crlf = content.count("\r\n", start, end)
    lf = content.count("\n", start, end) - crlf
    if crlf != lf:
        return "\r\n" if crlf > lf else "\n"
    if crlf:  # a tie: the file's majority decides
        crlf = content.count("\r\n")
        return "\r\n" if crlf > content.count("\n") - crlf else "\n"
    # Within one line: that line's own ending (or the previous line's, on the last line).
    newline = content.find("\n", end)
    if newline == -1:
        newline = content.rfind("\n", 0, start)
    if newline == -1:
        return None
    return "\r\n" if newline and content[newline - 1] == "\r" else "\n"


def _listing(items: list[str], total: int) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = total - min(len(items), _MAX_LISTED)
    return f"{shown} and {more} more" if more > 0 else shown


def _advice() -> str:
    return (
        "Nothing was changed. Add more surrounding lines to old_string so that it matches "
        "only the place you mean, or pass replace_all=true to change every one of them."
    )


def _ambiguous_exact(content: str, old: str, pos: int, name: str) -> Conflict:
    lines: list[int] = []
    line = content.count("\n", 0, pos) + 1
    counted = pos
    while pos != -1 and len(lines) <= _MAX_LISTED:
        line += content.count("\n", counted, pos)
        counted = pos
        lines.append(line)
        pos = content.find(old, pos + 1)
    total = max(len(lines), content.count(old))
    listed = _listing([str(n) for n in lines], total)
    how = _HOW[name]
    intro = (
        f"old_string occurs {total} times in the file"
        if name == "exact"
        else f"old_string does not match the file exactly; {how}, it occurs {total} times"
    )
    return Conflict(
        f"{intro} (starting on lines {listed}). {_advice()}",
        details={"strategy": name, "matches": total, "lines": lines[:_MAX_LISTED]},
    )


def _ambiguous_windows(windows: list[Window], strategy: str, *, more: bool) -> Conflict:
    spans = [
        str(w.line + 1) if w.count == 1 else f"{w.line + 1}-{w.line + w.count}" for w in windows
    ]
    # `more`: the search stopped once the ambiguity was certain.
    places = f"at least {len(windows)}" if more else str(len(windows))
    return Conflict(
        f"old_string does not match the file exactly; {_HOW[strategy]}, it matches "
        f"{places} places (lines {_listing(spans, len(windows))}). {_advice()}",
        details={
            "strategy": strategy,
            "matches": len(windows),
            "lines": [w.line + 1 for w in windows[:_MAX_LISTED]],
        },
    )

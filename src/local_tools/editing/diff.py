"""Unified diffs of text edits, for showing a model (or a person) what changed.

Line endings are normalised for display: a CRLF file diffs like an LF one instead
of every line carrying a stray '\\r'. A missing final newline is marked the way
git marks it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from difflib import SequenceMatcher

__all__ = ["display_lines", "format_hunks", "unified_diff"]

_NO_EOL = "\\ No newline at end of file"


def display_lines(text: str) -> list[str]:
    """`text` split into lines without their terminators ('\\r\\n' or '\\n')."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _span(start: int, length: int) -> str:
    # Same convention as GNU diff: an empty range names the line before it.
    if length == 1:
        return str(start)
    if length == 0:
        return f"{start - 1},0"
    return f"{start},{length}"


def format_hunks(
    a: Sequence[str],
    b: Sequence[str],
    *,
    context: int = 3,
    a_start: int = 1,
    b_start: int = 1,
    a_eol: Sequence[bool] | None = None,
    b_eol: Sequence[bool] | None = None,
) -> list[str]:
    """Hunks ('@@ ... @@' and ' '/'-'/'+' lines) turning lines `a` into lines `b`.

    `a_start`/`b_start` are the 1-based numbers of the first line of each side, so a
    slice of a file diffs with the file's real line numbers. `a_eol`/`b_eol`, when
    given, say which lines end with a newline: "x" and "x\n" then differ, and a line
    without one is followed by git's "No newline at end of file" marker.
    """
    ka: Sequence[Hashable] = a if a_eol is None else list(zip(a, a_eol, strict=True))
    kb: Sequence[Hashable] = b if b_eol is None else list(zip(b, b_eol, strict=True))
    out: list[str] = []
    for group in SequenceMatcher(None, ka, kb).get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_span(i1 + a_start, i2 - i1)} +{_span(j1 + b_start, j2 - j1)} @@")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                _emit(out, " ", a[x1:x2], None if a_eol is None else a_eol[x1:x2])
            else:
                _emit(out, "-", a[x1:x2], None if a_eol is None else a_eol[x1:x2])
                _emit(out, "+", b[y1:y2], None if b_eol is None else b_eol[y1:y2])
    return out


def _emit(out: list[str], mark: str, lines: Sequence[str], eols: Sequence[bool] | None) -> None:
    for i, line in enumerate(lines):
        out.append(mark + line)
        if eols is not None and not eols[i]:
            out.append(_NO_EOL)


def unified_diff(old: str, new: str, path: str, *, context: int = 3) -> str:
    """A unified diff from `old` to `new` labelled with `path`; "" when they are equal."""
    if old == new:
        return ""
    a, b = display_lines(old), display_lines(new)
    # Only the last line can lack a newline; it is part of that line's identity.
    a_eol = [True] * len(a)
    b_eol = [True] * len(b)
    if a and not old.endswith("\n"):
        a_eol[-1] = False
    if b and not new.endswith("\n"):
        b_eol[-1] = False
    head = f"--- a/{path}\n+++ b/{path}\n"
    if a == b and a_eol == b_eol:
        # Only '\r's changed; the normalised display would show nothing.
        return head + "(only line endings differ)\n"
    # An edit is local: diff only the changed middle (plus context), so a one-line
    # change in a 100k-line file costs a linear scan, not a SequenceMatcher over it all.
    limit = min(len(a), len(b))
    prefix = 0
    while prefix < limit and a[prefix] == b[prefix] and a_eol[prefix] == b_eol[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and a[-1 - suffix] == b[-1 - suffix]
        and a_eol[-1 - suffix] == b_eol[-1 - suffix]
    ):
        suffix += 1
    lo = max(0, prefix - context)
    keep = max(0, suffix - context)
    a_hi, b_hi = len(a) - keep, len(b) - keep
    hunks = format_hunks(
        a[lo:a_hi],
        b[lo:b_hi],
        context=context,
        a_start=lo + 1,
        b_start=lo + 1,
        a_eol=a_eol[lo:a_hi],
        b_eol=b_eol[lo:b_hi],
    )
    return head + "".join(line + "\n" for line in hunks)

"""When old_string is not in the file: show the block it most resembles, and how it differs.

A model that gets NOT_FOUND usually misremembered a line or two. Showing it the
nearest block with its line numbers and a short diff lets it fix old_string in one
step instead of re-reading the whole file.

Finding the block stays fast on big files: every line is scored cheaply (is it one
of old_string's lines? failing that, which of old_string's rarer words does it
hold?), windows of old_string's height are ranked by their summed score, and only
the best few are compared with difflib.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import accumulate

from local_tools.core.errors import NotFound
from local_tools.editing.diff import display_lines, format_hunks
from local_tools.editing.strategies import is_blank, split_lines

__all__ = ["Block", "closest_block", "not_found"]

_WORD = re.compile(r"\w+")
_CANDIDATES = 24  # windows compared with difflib
_COMPARE_LINES = 1200  # about how many lines the candidates may total
_CHAR_LIMIT = 300  # above this, compare lines instead of characters (cubic on repeats)
_MIN_SIMILARITY = 0.3  # below this a "closest block" is noise, not a hint
_MAX_DIFF_LINES = 20
_MAX_NOTES = 3

_TRIED = (
    "(also tried ignoring line endings, trailing whitespace, indentation, literal "
    "escape sequences such as \\n, and leading/trailing blank lines)"
)


@dataclass(frozen=True)
class Block:
    first: int  # 1-based line number of the block's first line
    lines: list[str]  # the block's lines, without terminators
    similarity: float  # 0..1, difflib ratio against old_string's lines

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1


def closest_block(content: str, old_lines: list[str]) -> Block | None:
    """The run of file lines (old_lines' height, ±1) most like `old_lines`, or None."""
    file_lines = display_lines(content)
    height = min(len(old_lines), len(file_lines))
    wanted = {line.strip() for line in old_lines} - {""}
    if not height or not wanted:
        return None
    stripped = [line.strip() for line in file_lines]
    scores = [1.0 if line in wanted else 0.0 for line in stripped]
    sums = _window_sums(scores, height)
    if max(sums) < len(wanted) / 2:
        # Most lines were misremembered: rank by shared words, rare words counting most.
        scores = _add_word_scores(scores, file_lines, "\n".join(old_lines))
        sums = _window_sums(scores, height)
    if max(sums) <= 0:
        return None
    # Comparing a tall block is costly: fewer candidates the taller old_string is.
    wanted_count = max(3, min(_CANDIDATES, _COMPARE_LINES // height))
    starts = heapq.nlargest(wanted_count, range(len(sums)), key=sums.__getitem__)
    # The block may be a line longer or shorter than old_string (a line added or lost).
    shapes = {
        (start, size)
        for start in starts
        for size in (height - 1, height, height + 1)
        if size >= 1 and start + size <= len(file_lines)
    }
    target = [line.strip() for line in old_lines]
    best, best_score = (-1, 0), -1.0
    for start, size in sorted(shapes):  # ascending, so ties go to the earlier block
        score = _score(target, stripped[start : start + size], best_score)
        if score > best_score:
            best, best_score = (start, size), score
    lines = file_lines[best[0] : best[0] + best[1]]
    return Block(best[0] + 1, lines, _similarity(old_lines, lines))


def _window_sums(scores: list[float], height: int) -> list[float]:
    prefix = list(accumulate(scores, initial=0.0))
    return [b - a for a, b in zip(prefix, prefix[height:], strict=False)]


def _add_word_scores(scores: list[float], file_lines: list[str], old: str) -> list[float]:
    words = set(_WORD.findall(old))
    if not words:
        return scores
    shared = [words.intersection(_WORD.findall(line)) for line in file_lines]
    frequency: Counter[str] = Counter()
    for found in shared:
        frequency.update(found)
    weight = {word: 1.0 / count for word, count in frequency.items()}
    return [
        score + sum(weight[w] for w in found) if found else score
        for score, found in zip(scores, shared, strict=True)
    ]


def _score(target: list[str], candidate: list[str], beat: float) -> float:
    """Share of old_string's lines found intact (in order), plus character similarity.

    Intact lines count on their own so that "line 20 / line 21 changed / line 22"
    beats "line 10 / line 11 / line 12", which is closer character by character
    but shares no line; the character part ranks blocks where every line changed.
    Returns less than `beat` as soon as cheap bounds show it cannot beat it.
    """
    # autojunk: on tall blocks, lines like "}" repeated everywhere would make it quadratic.
    blocks = SequenceMatcher(None, target, candidate).get_matching_blocks()
    intact = sum(block.size for block in blocks) / len(target)
    return intact + _similarity(target, candidate, beat - intact)


def _similarity(a: list[str], b: list[str], beat: float = -1.0) -> float:
    """0..1: difflib's character ratio; for long blocks, the mean over aligned lines.

    -1 early when cheap upper bounds show it cannot exceed `beat`.
    """
    left, right = "\n".join(a), "\n".join(b)
    if len(left) + len(right) <= 2 * _CHAR_LIMIT:
        matcher = SequenceMatcher(None, left, right, autojunk=False)
        if matcher.real_quick_ratio() <= beat or matcher.quick_ratio() <= beat:
            return -1.0
        return matcher.ratio()
    # Whole-text matching is quadratic in the worst case; line pairs are short.
    total = sum(SequenceMatcher(None, x, y).ratio() for x, y in zip(a, b, strict=False))
    return total / max(len(a), len(b))


def not_found(content: str, old: str) -> NotFound:
    """The NOT_FOUND error for `old`, showing the closest block of `content`."""
    lines, _ = split_lines(old)
    while lines and is_blank(lines[0]):
        lines.pop(0)
    while lines and is_blank(lines[-1]):
        lines.pop()
    if not content:
        return NotFound(
            "The file is empty, so old_string cannot match anything in it. To give it "
            'content, use old_string="" with the whole text as new_string.'
        )
    if not lines:
        return NotFound(
            "old_string is only whitespace/blank lines and does not occur in the file. "
            "Include the non-blank lines around the place you want to change."
        )
    block = closest_block(content, lines)
    if block is None or block.similarity < _MIN_SIMILARITY:
        return NotFound(
            f"old_string was not found in the file {_TRIED}, and no part of the file "
            "resembles it. Check that this is the right file, then read it again and "
            "copy the exact text you want to replace into old_string."
        )
    diff = format_hunks(lines, block.lines, a_start=1, b_start=block.first)
    if len(diff) > _MAX_DIFF_LINES:
        diff = [*diff[:_MAX_DIFF_LINES], f"... ({len(diff) - _MAX_DIFF_LINES} more diff lines)"]
    notes = _invisible_differences(lines, block)
    span = (
        f"line {block.first}" if block.last == block.first else f"lines {block.first}-{block.last}"
    )
    message = (
        f"old_string was not found in the file {_TRIED}. The closest block is {span} "
        f"({_percent(block.similarity)}% similar); how old_string (-) differs from "
        f"the file (+):\n--- old_string\n+++ file {span}\n" + "\n".join(diff) + "\n"
    )
    if notes:
        message += "Invisible differences:\n" + "\n".join(notes) + "\n"
    message += (
        f"Read the file again (around line {block.first}) and copy the exact current text "
        "into old_string; it must match the file character for character."
    )
    return NotFound(
        message,
        details={
            "closest_first_line": block.first,
            "closest_last_line": block.last,
            "similarity": round(block.similarity, 2),
        },
    )


def _percent(similarity: float) -> int:
    # Never "100% similar" for text that did not match.
    return min(99, int(similarity * 100))


def _invisible_differences(old_lines: list[str], block: Block) -> list[str]:
    """Line pairs that differ only in whitespace, shown with repr() so tabs etc. show."""
    notes: list[str] = []
    for number, (mine, theirs) in enumerate(zip(old_lines, block.lines, strict=False), block.first):
        if mine != theirs and mine.split() == theirs.split():
            notes.append(f"line {number}: the file has {theirs!r}, old_string has {mine!r}")
            if len(notes) == _MAX_NOTES:
                break
    return notes

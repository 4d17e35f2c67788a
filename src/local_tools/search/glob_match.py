"""Globs with ripgrep's syntax (its `globset` crate), compiled to Python regexes.

One translation serves every glob the search tools meet — `.gitignore` lines, glob's
`pattern`, grep's `include` — so the pure-Python engine selects exactly the paths
ripgrep would. The syntax, as globset parses it with `literal_separator` and
`backslash_escape` (what ripgrep uses for ignore files and `--glob`):

- `*` any run of characters except `/`; `?` one character except `/`;
- `**` as a whole path component: `**/x` (x at any depth), `a/**` (everything inside
  a), `a/**/b` (zero or more folders between); elsewhere `**` is just `*`;
- `[abc]`, `[a-z]`, `[!a-z]` / `[^a-z]` (a class may match `/`, as in globset);
- `{a,b}` alternatives (not nested); `\\x` a literal x.

Like globset, matching is on the UTF-8 bytes of a `/`-separated path: `?` matches one
byte, so it does not match a whole non-ASCII character.

`PathGlob` is a user pattern with ripgrep's `--glob` meaning (gitignore style): a
pattern without `/` matches a file name at any depth, one with `/` is anchored to the
search folder, a leading `!` excludes, and several patterns can be given separated
by top-level commas, the last matching one deciding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from local_tools.search.glob_dfa import (
    ANY,
    EVERYTHING,
    RMIDDLE,
    RPREFIX,
    RSUFFIX,
    STAR,
    GlobAutomaton,
)

__all__ = [
    "REGEX_MAX_PATH",
    "CompiledGlob",
    "GlobError",
    "PathGlob",
    "compile_glob",
    "glob_automaton",
    "glob_regex",
    "split_top_level",
]


class GlobError(ValueError):
    """A glob ripgrep would refuse too."""


_ANY, _STAR, _RPREFIX, _RSUFFIX, _RMIDDLE = ANY, STAR, RPREFIX, RSUFFIX, RMIDDLE


def _escape_bytes(text: str) -> str:
    """A literal as regex source over bytes: ASCII escaped, other bytes as \\xHH."""
    out = []
    for b in text.encode("utf-8", "surrogateescape"):
        if b < 0x80:
            ch = chr(b)
            out.append(ch if ch.isalnum() or ch == "_" else "\\" + ch)
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


class _Parser:
    def __init__(self, glob: str, allow_unclosed_class: bool) -> None:
        self.glob = glob
        self.chars = list(glob)
        self.i = 0
        self.allow_unclosed_class = allow_unclosed_class
        self.found_unclosed = False
        # stack[0] is the main sequence; deeper entries are alternation branches.
        self.stack: list[list[object]] = [[]]
        self.cur: str | None = None
        self.prev: str | None = None

    def error(self, what: str) -> GlobError:
        return GlobError(f"invalid glob {self.glob!r}: {what}")

    def bump(self) -> str | None:
        self.prev = self.cur
        self.cur = self.chars[self.i] if self.i < len(self.chars) else None
        if self.cur is not None:
            self.i += 1
        return self.cur

    def peek(self) -> str | None:
        return self.chars[self.i] if self.i < len(self.chars) else None

    def push(self, token: object) -> None:
        self.stack[-1].append(token)

    def parse(self) -> list[object]:
        while (c := self.bump()) is not None:
            if c == "?":
                self.push(_ANY)
            elif c == "*":
                self.parse_star()
            elif c == "[" and not self.found_unclosed:
                self.parse_class()
            elif c == "{":
                if len(self.stack) > 1:
                    raise self.error("nested alternate groups are not allowed")
                self.stack.append([])
            elif c == "}":
                if len(self.stack) < 2:
                    raise self.error("unopened alternate group; missing '{'")
                branches = self.stack[1:]
                del self.stack[1:]
                self.push(("alt", branches))
            elif c == "," and len(self.stack) > 1:
                self.stack.append([])
            elif c == "\\":
                nxt = self.bump()
                if nxt is None:
                    raise self.error("dangling '\\'")
                self.push(("lit", nxt))
            else:
                self.push(("lit", c))
        if len(self.stack) > 1:
            raise self.error("unclosed alternate group; missing '}'")
        return self.stack[0]

    def parse_star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.push(_STAR)
            return
        self.bump()
        if not self.stack[-1]:
            if self.peek() not in (None, "/"):
                self.push(_STAR)
                self.push(_STAR)
            else:
                self.push(_RPREFIX)
                self.bump()
            return
        if prev != "/" and (len(self.stack) <= 1 or prev not in (",", "{")):
            self.push(_STAR)
            self.push(_STAR)
            return
        nxt = self.peek()
        if nxt is None:
            self.bump()
            is_suffix = True
        elif nxt in (",", "}") and len(self.stack) >= 2:
            is_suffix = True
        elif nxt == "/":
            self.bump()
            is_suffix = False
        else:
            self.push(_STAR)
            self.push(_STAR)
            return
        last = self.stack[-1].pop()
        if last in (_RPREFIX, _RSUFFIX):
            self.push(last)
        else:
            self.push(_RSUFFIX if is_suffix else _RMIDDLE)

    def parse_class(self) -> None:
        saved = (self.i, self.cur, self.prev)
        ranges: list[tuple[str, str]] = []
        negated = False
        if self.peek() in ("!", "^"):
            self.bump()
            negated = True
        first, in_range = True, False
        while True:
            c = self.bump()
            if c is None:
                if not self.allow_unclosed_class:
                    raise self.error("unclosed character class; missing ']'")
                self.i, self.cur, self.prev = saved
                self.found_unclosed = True
                self.push(("lit", "["))
                return
            if c == "]" and not first:
                break
            if c == "-" and not first:
                if in_range:
                    self._extend(ranges, "-")
                    in_range = False
                else:
                    in_range = True
            else:
                if in_range:
                    self._extend(ranges, c)
                else:
                    ranges.append((c, c))
                in_range = False
            first = False
        if in_range:
            ranges.append(("-", "-"))
        self.push(("class", negated, ranges))

    def _extend(self, ranges: list[tuple[str, str]], end: str) -> None:
        start = ranges[-1][0]
        if end < start:
            raise self.error(f"invalid range; '{start}' > '{end}'")
        ranges[-1] = (start, end)


def _tokens_regex(tokens: Sequence[object]) -> str:
    out = []
    for tok in tokens:
        if tok == _ANY:
            out.append("[^/]")
        elif tok == _STAR:
            out.append("[^/]*")
        elif tok == _RPREFIX:
            out.append("(?:/?|.*/)")
        elif tok == _RSUFFIX:
            out.append("/.*")
        elif tok == _RMIDDLE:
            out.append("(?:/|/.*/)")
        elif isinstance(tok, tuple) and tok[0] == "lit":
            out.append(_escape_bytes(tok[1]))
        elif isinstance(tok, tuple) and tok[0] == "class":
            _, negated, ranges = tok
            body = "".join(
                _escape_bytes(a) if a == b else f"{_escape_bytes(a)}-{_escape_bytes(b)}"
                for a, b in ranges
            )
            out.append(f"[{'^' if negated else ''}{body}]")
        elif isinstance(tok, tuple) and tok[0] == "alt":
            parts = [p for p in (_tokens_regex(branch) for branch in tok[1]) if p]
            if parts:
                out.append("(?:" + "|".join(parts) + ")")
    return "".join(out)


# A glob's regex is used only when it cannot backtrack for long on a path of at most
# REGEX_MAX_PATH bytes (~REGEX_MAX_PATH**2 steps, under a millisecond measured): with no
# `**` and at most two `*` within each path component (a `*` stops at '/', so components
# are matched one at a time), or with one `**` and at most two `*` in all, or with at most
# two unbounded wildcards in all. Anything else goes through the automaton (glob_dfa),
# whose cost is linear in the path whatever the pattern: `*a*a*a*b` costs n**4 steps in
# a backtracking regex, `**/*a*/*a*a` 15 ms on one 256-byte path.
_REGEX_MAX_WILD = 2
_REGEX_MAX_STARS = 2
REGEX_MAX_PATH = 256


@dataclass(frozen=True)
class CompiledGlob:
    tokens: list[object]
    regex: str  # regex source for a bytes pattern, used with fullmatch
    regex_safe: bool  # the regex may be used on paths up to REGEX_MAX_PATH bytes


def compile_glob(glob: str, *, allow_unclosed_class: bool = False) -> CompiledGlob:
    tokens = _Parser(glob, allow_unclosed_class).parse()
    if tokens == [_RPREFIX]:
        return CompiledGlob([EVERYTHING], ".*", True)
    return CompiledGlob(tokens, _tokens_regex(tokens), _regex_safe(tokens))


def glob_regex(glob: str, *, allow_unclosed_class: bool = False) -> str:
    """Regex source (for a bytes pattern, used with fullmatch) equivalent to the glob."""
    return compile_glob(glob, allow_unclosed_class=allow_unclosed_class).regex


def glob_automaton(globs: Sequence[tuple[Sequence[object], int]]) -> GlobAutomaton:
    """One linear-time matcher for (tokens, rank) pairs; the lowest matching rank wins."""
    return GlobAutomaton(globs, _tokens_regex)


def _regex_safe(tokens: Sequence[object]) -> bool:
    wildcards = _wildcards(tokens)
    if wildcards <= _REGEX_MAX_WILD:
        return True
    stars = _stars_per_component(tokens)
    recursive = len(stars) - 1 - sum(tok == ("lit", "/") for tok in tokens)
    if recursive == 0:
        return max(stars) <= _REGEX_MAX_STARS
    return recursive == 1 and wildcards - 1 <= _REGEX_MAX_STARS


def _wildcards(tokens: Sequence[object]) -> int:
    """Unbounded wildcards, and alternations: `{a,aa}{a,aa}...` backtracks like stars."""
    count = 0
    for tok in tokens:
        if tok in (_STAR, _RPREFIX, _RSUFFIX, _RMIDDLE):
            count += 1
        elif isinstance(tok, tuple) and tok[0] == "alt":
            count += 1 + sum(_wildcards(branch) for branch in tok[1])
    return count


def _stars_per_component(tokens: Sequence[object]) -> list[int]:
    """`*` counts between separators ('/' and `**`); an alternation counts all of its
    branches' wildcards (a `**` in one counts as a star: too many, on purpose)."""
    counts = [0]
    for tok in tokens:
        if tok in (_RPREFIX, _RSUFFIX, _RMIDDLE) or tok == ("lit", "/"):
            counts.append(0)
        elif tok == _STAR:
            counts[-1] += 1
        elif isinstance(tok, tuple) and tok[0] == "alt":
            counts[-1] += 1 + sum(_wildcards(branch) for branch in tok[1])
    return counts


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside braces, classes and escapes (`*.{ts,tsx}` stays whole)."""
    parts, buf, depth, in_class, i = [], [], 0, False, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            buf.append(text[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]" or (bool(buf) and buf[-1] == "[")
        elif c == "[":
            in_class = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == sep and depth == 0:
            parts.append("".join(buf))
            buf = []
            i += 1
            continue
        buf.append(c)
        i += 1
    parts.append("".join(buf))
    return parts


# -- user patterns ------------------------------------------------------------------


@dataclass(frozen=True)
class _Glob:
    negated: bool
    match: re.Pattern[bytes]
    text_match: re.Pattern[str]  # the same regex on str: the same answers for ASCII paths
    last_segment: str | None  # for ripgrep's file-name prefilter, when it is safe
    name_only: bool  # "**/<name>": the file-name glob alone decides
    regex_safe: bool  # see compile_glob
    automaton: GlobAutomaton  # linear time, for what the regex may not take
    literals: tuple[str, ...] = ()  # ASCII runs every match holds (a cheap prefilter)

    def fullmatch(self, data: bytes) -> bool:
        if self.regex_safe and len(data) <= REGEX_MAX_PATH:
            return self.match.fullmatch(data) is not None
        return self.automaton.match(data) is not None


def _compile_one(raw: str) -> _Glob:
    text = raw.strip()
    negated = text.startswith("!")
    if negated:
        text = text[1:]
    while text.startswith("./"):
        text = text[2:]
    if not text:
        raise GlobError(f"empty glob in {raw!r}")
    if any(part == ".." for part in text.split("/")):
        raise GlobError(f"glob {raw!r} contains '..'; patterns match paths inside `path` only")
    anchored = text.startswith("/")
    if anchored:
        text = text[1:]
    folder = text.endswith("/")  # a folder: the files inside it
    text = text.rstrip("/")
    if not text:
        raise GlobError(f"glob {raw!r} names no file")
    if not anchored and "/" not in text and not (text.startswith("**/") or text == "**"):
        text = "**/" + text
    if folder:
        text += "/**"
    if text.endswith("/**"):
        text += "/*"
    compiled = compile_glob(text)
    regex = compiled.regex
    segment = text.rsplit("/", 1)[-1]
    safe = (
        "**" not in segment
        and segment not in ("", "*")
        and ":" not in segment
        and "{" not in text[: len(text) - len(segment)]  # braces spanning a '/'
        and "}" not in text[: len(text) - len(segment)]
    )
    name_only = safe and text == "**/" + segment
    return _Glob(
        negated,
        re.compile(regex.encode("ascii")),
        re.compile(regex),
        segment if safe else None,
        name_only,
        compiled.regex_safe,
        glob_automaton([(compiled.tokens, 0)]),
        _literal_runs(compiled.tokens),
    )


def _literal_runs(tokens: Sequence[object]) -> tuple[str, ...]:
    """The runs of top-level literal characters, longest first: every match holds each.

    ASCII only: an ASCII character is the same one in the decoded path whatever the
    bytes around it (UTF-8 or surrogate-escaped), so `run in path` never misses.
    """
    runs, run = [], ""
    for tok in [*tokens, None]:
        if isinstance(tok, tuple) and tok[0] == "lit" and str(tok[1]).isascii():
            run += str(tok[1])
        else:
            if len(run) > 1:
                runs.append(run)
            run = ""
    return tuple(sorted(runs, key=len, reverse=True))


class PathGlob:
    """A user pattern (glob's `pattern`, grep's `include`), matched like `rg --glob`.

    `matches(path)` takes a path relative to the search folder, with '/' separators.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        parts = split_top_level(pattern)
        self._globs = [_compile_one(p) for p in parts if p.strip()]
        if not self._globs:
            raise GlobError("the pattern is empty")
        self._has_positive = any(not g.negated for g in self._globs)

    def matches(self, path: str) -> bool:
        data = path.encode("utf-8", "surrogateescape")
        for g in reversed(self._globs):
            if g.fullmatch(data):
                return not g.negated
        return not self._has_positive

    def select(self, paths: list[str], skip: int = 0) -> list[str]:
        """The paths that match, each matched without its first `skip` characters.

        For thousands of paths at once: with one glob and ASCII paths (the common case)
        the regex runs on the str directly, with no per-path encoding or Python call.
        """
        glob = self._globs[0]
        if (
            len(self._globs) == 1
            and glob.regex_safe
            and max(map(len, paths), default=0) <= REGEX_MAX_PATH + skip
            and all(map(str.isascii, paths))
        ):
            match = glob.text_match.fullmatch
            if glob.negated:
                return [p for p in paths if not match(p, skip)]
            return [p for p in paths if match(p, skip)] if skip else list(filter(match, paths))
        if len(self._globs) == 1 and not glob.negated:
            # The automaton costs a Python call per path (~6 µs): a substring test in C
            # first leaves it only the paths that can match ("**/tests/**/*.py": 40%).
            for run in glob.literals:
                paths = [p for p in paths if run in p]
        return [p for p in paths if self.matches(p[skip:])]

    @property
    def names_exact(self) -> bool:
        """Whether `name_globs` select exactly the matching files (no check needed after)."""
        return self.name_globs is not None and all(g.name_only for g in self._globs)

    @property
    def name_globs(self) -> list[str] | None:
        """Globs on the file name alone that every match satisfies (ripgrep `--type-add`).

        None when no such prefilter is safe (an exclusion, `**` in the last part, ...).
        """
        names = []
        for g in self._globs:
            if g.negated or g.last_segment is None:
                return None
            names.append(g.last_segment)
        return names

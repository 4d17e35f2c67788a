"""Rust regex syntax (what ripgrep takes) translated to Python `re`, for the fallback.

The fallback searches a whole file at once with `re.MULTILINE`, so the translation
also keeps every match inside one line, as ripgrep's line-by-line semantics do:

- `\\s`, `\\W`, `\\D` and negated classes exclude `\\n`; a class that could match
  `\\n` is guarded with `(?!\\n)`; `.` never matches `\\n` (the `s` flag is dropped).
- `^`/`$` are line anchors, and `\\A` is a line start, as in ripgrep.
- `(?i)`, `(?-u)` (ASCII classes) and `(?x)` keep their meaning; a flag group applies
  to the rest of its group, across `|`. `m`, `s`, `R` and `U` change nothing about
  which lines match and are dropped.
- `(?<name>…)` and `(?P<name>…)` become plain groups; `\\x{…}`, `\\u{…}` code points,
  POSIX classes (`[[:alpha:]]`), `\\<`, `\\>` and `\\b{start}`-style boundaries are
  translated; a quantifier on a quantifier (`a**`) is grouped.

Refused like ripgrep refuses them: look-around, backreferences, unknown escapes,
malformed repetitions (`{,3}`, `a{x}`), literal `\\n` and `\\r`. Refused because
Python `re` has no equivalent (use ripgrep): Unicode classes `\\p{…}`, nested
classes and class set operations (`&&`, `--`, `~~`); and `\\z`, whose meaning in
ripgrep itself changes with the version and the file's line endings.

Known small differences that remain: Unicode `\\w`, `\\d`, `\\s` and case folding
follow Python's tables, not Rust's; invalid UTF-8 is searched as U+FFFD.
"""

from __future__ import annotations

import re

__all__ = ["RegexSyntaxError", "UnsupportedRegex", "translate"]


class RegexSyntaxError(ValueError):
    """The pattern is not a valid Rust regex (ripgrep would refuse it too)."""


class UnsupportedRegex(RegexSyntaxError):
    """Valid for ripgrep, but the pure-Python fallback cannot run it."""


_CLASS_ESCAPES = {"d": r"\d", "w": r"\w", "s": r"\s", "D": r"\D", "W": r"\W", "S": r"\S"}
_OUTSIDE = {"d": r"\d", "w": r"\w", "S": r"\S", "s": r"[^\S\n]", "W": r"[^\w\n]", "D": r"[^\d\n]"}
_SIMPLE = {"t": "\\t", "f": "\\f", "v": "\\v", "a": "\\a"}
_SIMPLE_CODES = {"t": 9, "f": 12, "v": 11, "a": 7}
_ZERO_WIDTH = {"b": r"\b", "B": r"\B", "A": "^", "<": r"\b(?=\w)", ">": r"\b(?<=\w)"}
_HALF = {
    "start": r"\b(?=\w)",
    "end": r"\b(?<=\w)",
    "start-half": r"(?<!\w)",
    "end-half": r"(?!\w)",
}
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_NEWLINE_POSIX = {"ascii", "cntrl", "space"}


def translate(pattern: str) -> str:
    """Python `re` source (use with re.MULTILINE) matching the lines ripgrep would."""
    return _Parser(pattern).parse()


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.names: set[str] = set()

    # -- helpers

    def error(self, what: str) -> RegexSyntaxError:
        return RegexSyntaxError(f"regex parse error at position {self.i}: {what}")

    def unsupported(self, what: str) -> UnsupportedRegex:
        return UnsupportedRegex(
            f"{what} is not supported by the pure-Python search fallback (ripgrep is not "
            "installed); rewrite the pattern without it"
        )

    def peek(self, n: int = 0) -> str | None:
        j = self.i + n
        return self.p[j] if j < len(self.p) else None

    def skip_verbose(self, x: bool) -> None:
        while x and self.i < len(self.p):
            c = self.p[self.i]
            if c.isspace():
                self.i += 1
            elif c == "#":
                end = self.p.find("\n", self.i)
                self.i = len(self.p) if end < 0 else end + 1
            else:
                return

    # -- structure

    def parse(self) -> str:
        out = self.alternation(x=False, ascii=False)
        if self.i < len(self.p):  # a stray ')'
            raise self.error("unopened group")
        return out

    def alternation(self, x: bool, ascii: bool) -> str:
        """Branches up to a ')' (not consumed) or the end; flag groups open scopes."""
        out: list[str] = []
        wraps: list[str] = []  # flag scopes opened in this group, still open
        # The current branch: [text, kind]; kind "atom", "done" (quantified) or "scope".
        items: list[list[str]] = []
        while True:
            self.skip_verbose(x)
            c = self.peek()
            if c is None or c == ")":
                break
            if c == "|":
                self.i += 1
                out.append(_join(items) + ")" * len(wraps) + "|" + "".join(wraps))
                items = []
            elif c in "*+?{":
                self.quantify(items, x)
            elif c == "(" and re.match(r"\(\?[imsuxUR-]*\)", self.p[self.i :]):
                prefix, x, ascii = self.flag_group(x, ascii)
                if prefix is not None:
                    wraps.append(prefix)
                    items.append([prefix, "scope"])
            else:
                items.append([self.atom(x, ascii), "atom"])
        out.append(_join(items) + ")" * len(wraps))
        return "".join(out)

    def quantify(self, items: list[list[str]], x: bool) -> None:
        if not items or items[-1][1] == "scope":
            raise self.error("repetition operator missing expression")
        c = self.p[self.i]
        if c == "{":
            q = self.counted(x)
        else:
            self.i += 1
            q = c
        if self.peek() == "?":
            self.i += 1
            q += "?"
        item = items[-1]
        if item[1] == "done" or not _plain(item[0]):
            item[0] = f"(?:{item[0]})"  # a**, ^* and the like: Python wants a group
        item[0] += q
        item[1] = "done"

    def counted(self, x: bool) -> str:
        end = self.p.find("}", self.i)
        if end < 0:
            raise self.error("unclosed counted repetition")
        body = self.p[self.i + 1 : end]
        if x:
            body = "".join(body.split())
        m = re.fullmatch(r"(\d+)(,(\d*))?", body)
        if m is None:
            raise self.error("repetition quantifier expects a valid decimal")
        low = int(m.group(1))
        if m.group(3) and int(m.group(3)) < low:
            raise self.error("invalid repetition count range, the start must be <= the end")
        self.i = end + 1
        return "{" + body + "}"

    def flags(self, text: str, ascii: bool, x: bool) -> tuple[str, bool, bool]:
        """Python flag text ("i", "-i", "a", ...) for Rust flags; new x and ascii states."""
        if not text or text.endswith("-") or text.count("-") > 1:
            raise self.error("invalid flags")
        on: set[str] = set()
        off: set[str] = set()
        negate = False
        for f in text:
            if f == "-":
                negate = True
                continue
            target = off if negate else on
            if f in on or f in off:
                raise self.error("duplicate flag")
            target.add(f)
        py_on, py_off = "", ""
        if "i" in on:
            py_on += "i"
        if "i" in off:
            py_off += "i"
        if "u" in off:
            py_on += "a"
            ascii = True
        if "u" in on and ascii:
            raise self.unsupported("turning Unicode back on inside (?-u)")
        if "x" in on:
            x = True
        if "x" in off:
            x = False
        py = py_on + ("-" + py_off if py_off else "")
        return py, x, ascii

    def flag_group(self, x: bool, ascii: bool) -> tuple[str | None, bool, bool]:
        end = self.p.index(")", self.i)
        text = self.p[self.i + 2 : end]
        if not text:
            raise self.error("repetition operator missing expression")
        py, x, ascii = self.flags(text, ascii, x)
        self.i = end + 1
        return (f"(?{py}:" if py else None), x, ascii

    def group(self, x: bool, ascii: bool) -> str:
        self.i += 1  # '('
        prefix = "("
        if self.peek() == "?":
            rest = self.p[self.i + 1 :]
            m = re.match(r"P?<([^>]*)>", rest)
            if rest.startswith(("=", "!", "<=", "<!")):
                raise self.error("look-around (look-ahead, look-behind) is not supported")
            if m is not None:
                name = m.group(1)
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\[\]]*", name):
                    raise self.error("invalid capture group name")
                if name in self.names:
                    raise self.error("duplicate capture group name")
                self.names.add(name)
                self.i += 1 + m.end()
            else:
                m = re.match(r"([imsuxUR-]*):", rest)
                if m is None:
                    raise self.error("unrecognized flag")
                prefix = "(?:"
                if m.group(1):
                    py, x, ascii = self.flags(m.group(1), ascii, x)
                    prefix = f"(?{py}:" if py else "(?:"
                self.i += 1 + m.end()
        inner = self.alternation(x, ascii)
        if self.peek() != ")":
            raise self.error("unclosed group")
        self.i += 1
        return prefix + inner + ")"

    # -- atoms

    def atom(self, x: bool, ascii: bool) -> str:
        c = self.p[self.i]
        if c == "(":
            return self.group(x, ascii)
        if c == "[":
            return self.char_class(x)
        if c == "\\":
            return self.escape()
        self.i += 1
        if c in ".^$":
            return c
        if c == "\n":
            raise RegexSyntaxError('the literal "\\n" is not allowed in a regex')
        if c == "\r":
            raise RegexSyntaxError('the literal "\\r" is not allowed in a regex')
        return re.escape(c)

    def escape(self) -> str:
        start = self.i
        self.i += 1
        c = self.peek()
        if c is None:
            raise self.error("incomplete escape sequence, reached end of pattern prematurely")
        self.i += 1
        if c in _OUTSIDE:
            return _OUTSIDE[c]
        if c == "b" and self.peek() == "{":
            end = self.p.find("}", self.i)
            kind = self.p[self.i + 1 : end] if end > 0 else ""
            if kind not in _HALF:
                raise self.error("unrecognized word boundary assertion")
            self.i = end + 1
            return _HALF[kind]
        if c in _ZERO_WIDTH:
            return _ZERO_WIDTH[c]
        if c == "z":
            # ripgrep's own \z differs between versions and line endings.
            raise self.unsupported("\\z (end of text; use $ for the end of a line)")
        cp = self.codepoint(c, start)
        if cp is not None:
            return self.literal_codepoint(cp)
        return self.common_escape(c)

    def common_escape(self, c: str) -> str:
        """Escapes shared by classes and the outside: \\t, \\n (refused), punctuation."""
        if c in _SIMPLE:
            return _SIMPLE[c]
        if c == "n":
            raise RegexSyntaxError('the literal "\\n" is not allowed in a regex')
        if c == "r":
            raise RegexSyntaxError('the literal "\\r" is not allowed in a regex')
        if c in "pP":
            raise self.unsupported(f"the Unicode class \\{c}")
        if c.isdigit():
            raise self.error("backreferences are not supported")
        if c.isascii() and c.isalpha():
            raise self.error("unrecognized escape sequence")
        return re.escape(c)

    def codepoint(self, c: str, start: int) -> int | None:
        if c not in "xuU":
            return None
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            digits = self.p[self.i + 1 : end] if end > 0 else ""
            self.i = end + 1 if end > 0 else self.i
        else:
            width = {"x": 2, "u": 4, "U": 8}[c]
            digits = self.p[self.i : self.i + width]
            if len(digits) != width:
                digits = ""
            self.i += len(digits)
        if not re.fullmatch(r"[0-9A-Fa-f]{1,8}", digits or ""):
            self.i = start
            raise self.error("invalid hexadecimal digit or escape")
        cp = int(digits, 16)
        if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
            raise self.error("invalid Unicode scalar value")
        return cp

    def literal_codepoint(self, cp: int) -> str:
        if cp == 0x0A:
            raise RegexSyntaxError('the literal "\\n" is not allowed in a regex')
        if cp == 0x0D:
            raise RegexSyntaxError('the literal "\\r" is not allowed in a regex')
        return re.escape(chr(cp))

    # -- classes

    def char_class(self, x: bool) -> str:
        self.i += 1  # '['
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        members: list[str] = []
        newline = False  # could a member match "\n"?
        first = True
        while True:
            if x:
                while (c := self.peek()) is not None and c.isspace():
                    self.i += 1
            c = self.peek()
            if c is None:
                raise self.error("unclosed character class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[":
                if self.p.startswith("[:", self.i):
                    end = self.p.find(":]", self.i + 2)
                    name = self.p[self.i + 2 : end] if end > 0 else ""
                    inverted = name.startswith("^")
                    key = name[1:] if inverted else name
                    if key in _POSIX:
                        self.i = end + 2
                        if inverted:
                            whole = not members and self.peek() == "]"
                            if not whole:
                                raise self.unsupported("a negated POSIX class inside a class")
                            negated = not negated
                        members.append(_POSIX[key])
                        newline |= key in _NEWLINE_POSIX and not inverted
                        newline |= inverted
                        continue
                raise self.unsupported("a nested character class")
            if self.p.startswith(("&&", "--", "~~"), self.i):
                raise self.unsupported(f"the class set operation {self.p[self.i : self.i + 2]!r}")
            low, low_text, low_nl = self.class_item()
            if self.peek() == "-" and self.peek(1) not in ("]", None):
                self.i += 1
                high, high_text, _ = self.class_item()
                if low is None or high is None:
                    raise self.error("invalid range boundary, must be a literal")
                if high < low:
                    raise self.error("invalid character class range, the start must be <= the end")
                members.append(f"{low_text}-{high_text}")
                newline |= low <= 10 <= high
            else:
                members.append(low_text)
                newline |= low_nl
        body = "".join(members)
        if negated:
            return f"[^{body}\\n]"
        if newline:
            return f"(?:(?!\\n)[{body}])"
        return f"[{body}]"

    def class_item(self) -> tuple[int | None, str, bool]:
        """(code point or None for a class escape, Python text, may match newline)."""
        c = self.p[self.i]
        if c != "\\":
            self.i += 1
            if c == "\n":
                return 10, "\\n", True
            return ord(c), _class_literal(c), False
        start = self.i
        self.i += 1
        e = self.peek()
        if e is None:
            raise self.error("incomplete escape sequence, reached end of pattern prematurely")
        self.i += 1
        if e in _CLASS_ESCAPES:
            return None, _CLASS_ESCAPES[e], e in "sWD"
        if e == "n":
            return 10, "\\n", True
        if e == "r":
            return 13, "\\r", False
        if e == "b":
            raise self.unsupported("\\b inside a class")
        if e in _SIMPLE_CODES:
            return _SIMPLE_CODES[e], _SIMPLE[e], False
        cp = self.codepoint(e, start)
        if cp is not None:
            return cp, _class_literal(chr(cp)), cp == 10
        text = self.common_escape(e)
        return (ord(e) if len(text) <= 2 else None), text, False


def _join(items: list[list[str]]) -> str:
    return "".join(text for text, _ in items)


def _plain(text: str) -> bool:
    """A single character, escaped or not, that Python lets a quantifier follow."""
    if len(text) == 1:
        return text not in "^$"
    return len(text) == 2 and text[0] == "\\" and text[1] not in "bBAZz"


def _class_literal(c: str) -> str:
    if c.isalnum() and c.isascii():
        return c
    if c.isascii():
        return "\\" + c if c.isprintable() else f"\\x{ord(c):02x}"
    return c

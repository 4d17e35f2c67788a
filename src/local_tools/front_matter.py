"""The front matter of a SKILL.md, read by a small parser for what skills use.

``key: value`` lines, quoted values (with YAML's escapes), ``|`` and ``>`` blocks and
plain values over several lines; other keys (lists, mappings) are kept as None. Not a
YAML library: a skill's header needs a name and a description, not the whole language.
"""

from __future__ import annotations

import re

__all__ = ["FrontMatterError", "parse_front_matter"]


class FrontMatterError(ValueError):
    """SKILL.md's front matter cannot be read; the message names the line."""


_KEY = re.compile(r"""(?P<q>["']?)(?P<key>[A-Za-z_][\w.-]*)(?P=q)[ \t]*:(?P<value>.*)$""")
_BLOCK = re.compile(r"([|>])([+-]?)([1-9]?)([+-]?)[ \t]*(?:#.*)?$")
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
            "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}  # fmt: skip
_HEX = {"x": 2, "u": 4, "U": 8}


def parse_front_matter(text: str) -> tuple[dict[str, str | None], str]:
    """(fields, body) of a SKILL.md; no front matter gives ({}, text).

    A field's value is its text, or None when it is not text (a list, a mapping).
    Raises FrontMatterError naming the line (counted in the file) when it is broken.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return {}, text.strip("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        raise FrontMatterError("the front matter opened by '---' on line 1 is never closed")
    fields = _Fields(lines[1:end], first_line=2).parse()
    return fields, "\n".join(lines[end + 1 :]).strip("\n").rstrip()


class _Fields:
    def __init__(self, lines: list[str], first_line: int) -> None:
        self.lines = lines
        self.first = first_line
        self.i = 0

    def error(self, message: str, index: int | None = None) -> FrontMatterError:
        line = self.first + (self.i if index is None else index)
        return FrontMatterError(f"front matter line {line}: {message}")

    def parse(self) -> dict[str, str | None]:
        fields: dict[str, str | None] = {}
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip() or line.lstrip().startswith("#"):
                self.i += 1
                continue
            if line[0] in " \t":
                raise self.error("unexpected indentation")
            m = _KEY.match(line)
            if m is None:
                raise self.error(f"expected 'key: value', got {line.strip()[:60]!r}")
            self.i += 1
            fields[m["key"]] = self.value(m["value"].strip())
        return fields

    def _indented(self) -> list[str]:
        """The following lines that belong to the current key (indented, or blank)."""
        start = self.i
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and line[0] not in " \t":
                break
            self.i += 1
        block = self.lines[start : self.i]
        while block and not block[-1].strip():  # trailing blanks belong to nobody
            block.pop()
            self.i -= 1
        return block

    def value(self, raw: str) -> str | None:
        if raw == "" or raw.startswith("#"):
            # A nested mapping or list (indented, or `- item` lines), or nothing.
            nested = self._indented()
            while self.i < len(self.lines) and self.lines[self.i].startswith("- "):
                self.i += 1
                nested += self._indented() or [""]
            return None if nested else ""
        if raw[0] in "|>":
            return self.block(raw)
        if raw[0] in "\"'":
            return self.quoted(raw)
        if raw[0] in "[{":
            self._indented()  # a flow list or mapping, perhaps over several lines
            return None
        if raw[0] in "&*!":
            raise self.error("anchors, aliases and tags are not supported", self.i - 1)
        parts = [_uncomment(raw)]
        for line in self._indented():  # a plain value continued on indented lines
            if not line.lstrip().startswith("#"):
                parts.append(_uncomment(line.strip()) if line.strip() else "\n")
        value = _join_folded(parts)
        return "" if value in ("~", "null") else value

    def block(self, header: str) -> str:
        m = _BLOCK.match(header)
        if m is None:
            raise self.error(f"bad block scalar header {header!r}", self.i - 1)
        style, chomp, width = m[1], m[2] or m[4], m[3]
        content = self._indented()
        # Keeping the block's end (`+`) needs the blank lines after it too.
        trailing = 0
        while self.i + trailing < len(self.lines) and not self.lines[self.i + trailing].strip():
            trailing += 1
        first = next((line for line in content if line.strip()), "")
        indent = int(width) if width else len(first) - len(first.lstrip(" "))
        if first and indent == 0:
            raise self.error("a block's lines must be indented with spaces", self.i - len(content))
        body = []
        for n, line in enumerate(content):
            if line.strip() and len(line) - len(line.lstrip(" ")) < indent:
                at = self.i - len(content) + n
                raise self.error("a line less indented than the block's first", at)
            body.append(line[indent:] if line.strip() else "")
        text = "\n".join(body) if style == "|" else _fold_block(body)
        if chomp == "-":
            return text.rstrip("\n")
        stripped = text.rstrip("\n")
        if not stripped:
            return "\n" * (len(body) + trailing) if chomp == "+" else ""
        if chomp == "+":
            return stripped + "\n" * (len(text) - len(stripped) + 1 + trailing)
        return stripped + "\n"

    def quoted(self, raw: str) -> str:
        quote = raw[0]
        start = self.i - 1
        rest = raw[1:]
        out: list[str] = []
        while True:
            try:
                closed, consumed = _scan_quoted(rest, quote, out)
            except FrontMatterError as exc:
                raise self.error(str(exc), self.i - 1) from None
            if closed:
                tail = rest[consumed:].strip()
                if tail and not tail.startswith("#"):
                    raise self.error(f"text after the closing quote: {tail[:40]!r}", self.i - 1)
                return "".join(out)
            if self.i >= len(self.lines):
                raise self.error(f"the {quote} quote is never closed", start)
            # A line break inside quotes folds: a space, or newlines for blank lines.
            if out and out[-1] == "\\\n":
                out.pop()
            else:
                while out and out[-1] in (" ", "\t"):
                    out.pop()
                blanks = 0
                while self.i < len(self.lines) - 1 and not self.lines[self.i].strip():
                    blanks += 1
                    self.i += 1
                out.append("\n" * blanks if blanks else " ")
            rest = self.lines[self.i].lstrip(" \t")
            self.i += 1


def _scan_quoted(text: str, quote: str, out: list[str]) -> tuple[bool, int]:
    """Append `text`'s characters to `out` up to the closing quote.

    (True, index after the quote) or (False, len) when the line ends first.
    """
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'" and c == "'":
            if text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return True, i + 1
        if quote == '"' and c == '"':
            return True, i + 1
        if quote == '"' and c == "\\":
            if i + 1 == len(text):
                out.append("\\\n")  # an escaped line break: joined without a space
                return False, len(text)
            e = text[i + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                i += 2
                continue
            if e in _HEX:
                digits = text[i + 2 : i + 2 + _HEX[e]]
                if len(digits) == _HEX[e] and all(d in "0123456789abcdefABCDEF" for d in digits):
                    out.append(chr(int(digits, 16)))
                    i += 2 + _HEX[e]
                    continue
            raise FrontMatterError(f"bad escape '\\{e}' in a double-quoted value")
        out.append(c)
        i += 1
    return False, len(text)


def _uncomment(text: str) -> str:
    """A plain value without its ` # comment`."""
    m = re.search(r"[ \t]#", text)
    return (text[: m.start()] if m else text).rstrip()


def _join_folded(parts: list[str]) -> str:
    """Plain lines joined as YAML folds them: a space, a newline per blank line."""
    out = ""
    for part in parts:
        if part == "\n":
            out += "\n"
        elif not out or out.endswith("\n"):
            out += part
        else:
            out += " " + part
    return out.strip()


def _fold_block(lines: list[str]) -> str:
    """A `>` block's lines folded: breaks between plain lines become spaces, blank lines
    become newlines, and lines indented further keep their breaks."""
    out = ""
    blanks = 0
    prev_more = False
    started = False
    for line in lines:
        if not line:
            blanks += 1
            continue
        more = line[0] in " \t"
        if not started:
            out = "\n" * blanks + line
            started = True
        elif blanks:
            out += "\n" * (blanks + (1 if (prev_more or more) else 0)) + line
        else:
            out += ("\n" if (prev_more or more) else " ") + line
        blanks = 0
        prev_more = more
    return out

"""Whether tree-sitter-bash split a command line where bash splits it.

The rules judge the words the parser reads; bash runs the words it reads. They part
where the parser skips characters as blanks that bash keeps in a word: `\\r`, `\\v`,
`\\f` (`ls\\r# ; touch PWN` is one `ls` to the parser, `ls\\r#` then `touch PWN` to
bash), a backslash before `\\r\\n`, or a line continuation inside a word (`ca\\<LF>t`
is `cat` to bash, `ca` and `t` to the parser). So a command is understood only when
its text is rebuilt from the parser's tokens with nothing between them but what bash
itself separates words with: spaces, tabs, newlines and line continuations beside a
blank. Control characters outside quotes are refused as well, even where both agree:
they are never needed there, and a reader of the approval text cannot see them.
Quoted text, comments and here-document bodies are data, where any character is fine;
each here-document must end on the line bash ends it on.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["dropped_dash", "separator_mismatch"]

# Text bash passes through as data: quoted strings, comments, here-document bodies
_DATA_LEAVES = frozenset(
    {"raw_string", "ansi_c_string", "string_content", "comment", "heredoc_body", "heredoc_content"}
)
# Nodes whose own text between their children is quoted data (`"$(a)<CR>b"`)
_QUOTED = frozenset({"string", "translated_string"})
_BLANKS = re.compile(rb"(?:[ \t\n]|\\\n)*")
# tree-sitter-bash drops a lone `-` right before a here-document (`python3 - <<EOF`);
# the walker puts it back (`dropped_dash`), so that gap is a word, not a mismatch.
_DASH = re.compile(rb"[ \t]+-[ \t]+")
_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
_NAMES = {b"\r": "a carriage return (\\r)", b"\x0b": "a vertical tab (\\v)"}
_NAMES[b"\x0c"] = "a form feed (\\f)"


def separator_mismatch(root: Node, data: bytes) -> str | None:
    """Why bash may read `data` as other words than the tree `root` holds; None if not."""
    why = _gap(data, 0, root.start_byte) or _gap(data, root.end_byte, len(data))
    stack = [root]
    while stack and why is None:
        node = stack.pop()
        kind = node.type
        if kind == "heredoc_redirect":
            why = _heredoc_end(node, data)
        if why is not None or kind in _DATA_LEAVES:
            continue
        kids = node.children
        if not kids:
            why = _control(data[node.start_byte : node.end_byte])
            continue
        if kind not in _QUOTED:
            edges = [node.start_byte]
            for kid in kids:
                edges += [kid.start_byte, kid.end_byte]
            edges.append(node.end_byte)
            for start, end in zip(edges[::2], edges[1::2], strict=True):
                if kind == "redirected_statement" and dropped_dash(node, data) == (start, end):
                    continue
                why = why or _gap(data, start, end)
        stack.extend(kids)
    return why


def dropped_dash(node: Node, data: bytes) -> tuple[int, int] | None:
    """Where a redirected statement's `-` argument is that the parser left out, if any."""
    kids = node.children
    if node.type != "redirected_statement" or len(kids) < 2:
        return None
    body, first = kids[0], kids[1]
    if body.type != "command" or first.type != "heredoc_redirect":
        return None
    if _DASH.fullmatch(data[body.end_byte : first.start_byte]) is None:
        return None
    return body.end_byte, first.start_byte


def _gap(data: bytes, start: int, end: int) -> str | None:
    """Why the text between two tokens is not only a separator bash also splits at."""
    if end <= start:
        return None
    text = data[start:end]
    if _BLANKS.fullmatch(text) is None:
        blanks = _BLANKS.match(text)
        at = blanks.end() if blanks is not None else 0
        escaped = text[at : at + 1] == b"\\"
        bad = text[at + escaped : at + escaped + 1] or b"\\"
        name = _NAMES.get(bad, f"the character {bad.decode('utf-8', 'replace')!r}")
        name = f"a backslash before {name}" if escaped else name
        return (
            f"{name} outside quotes: bash reads it as part of a word, the parser as a "
            "space, so the words checked would not be the words run"
        )
    if b"\\\n" in text and not text.replace(b"\\\n", b""):
        return (
            "a line continuation (backslash, newline) inside a word: bash joins the two "
            "parts into one word, the parser does not"
        )
    return None


def _control(token: bytes) -> str | None:
    m = _CONTROL.search(token)
    if m is None:
        return None
    name = _NAMES.get(m.group(), f"the control character {m.group().decode()!r}")
    return f"{name} outside quotes: quote it, or write it as an $'...' escape"


def _heredoc_end(node: Node, data: bytes) -> str | None:
    """Why bash may end this here-document on another line than the parser does."""
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    end = next((c for c in node.children if c.type == "heredoc_end"), None)
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if start is None or end is None:
        return None  # unterminated: a syntax error says so
    strip = any(c.type == "<<-" for c in node.children)
    delimiter = _delimiter(data[start.start_byte : start.end_byte])
    line_start = data.rfind(b"\n", 0, end.start_byte) + 1
    last = data[line_start : end.end_byte]
    lines = data[body.start_byte : line_start].split(b"\n")[:-1] if body is not None else []
    after = data[end.end_byte : end.end_byte + 1]
    if strip:
        last, lines = last.lstrip(b"\t"), [ln.lstrip(b"\t") for ln in lines]
    if last != delimiter or after not in (b"", b"\n") or delimiter in lines:
        return (
            "a here-document may end on another line for bash than for the parser "
            f"(its delimiter is {delimiter.decode('utf-8', 'replace')!r})"
        )
    return None


def _delimiter(word: bytes) -> bytes:
    """The here-document delimiter bash compares lines with: the word, quotes removed."""
    out = bytearray()
    i, quote = 0, 0
    while i < len(word):
        c = word[i]
        if quote:
            if c == quote:
                quote = 0
            elif quote == 0x22 and c == 0x5C and word[i + 1 : i + 2] in (b'"', b"\\", b"$", b"`"):
                i += 1
                out.append(word[i])
            else:
                out.append(c)
        elif c in (0x27, 0x22):
            quote = c
        elif c == 0x5C and i + 1 < len(word):
            i += 1
            out.append(word[i])
        else:
            out.append(c)
        i += 1
    return bytes(out)

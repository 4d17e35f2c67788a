"""Positions between us and a language server.

We speak 1-based lines and columns counted in characters (what read_file shows and a
model counts); LSP speaks 0-based lines and UTF-16 code units (its default encoding,
the one every server supports).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["from_lsp", "path_of", "to_lsp", "uri_of", "utf16_to_chars"]


def _line(text: str, index: int) -> str:
    lines = text.split("\n")
    return lines[index].rstrip("\r") if 0 <= index < len(lines) else ""


def utf16_to_chars(line: str, units: int) -> int:
    """The character index at `units` UTF-16 code units into `line` (clamped)."""
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def _chars_to_utf16(line: str, chars: int) -> int:
    return sum(2 if ord(c) > 0xFFFF else 1 for c in line[:chars])


def to_lsp(text: str, line: int, column: int) -> dict[str, int]:
    """1-based (line, column in characters) → an LSP Position."""
    row = max(line - 1, 0)
    return {"line": row, "character": _chars_to_utf16(_line(text, row), max(column - 1, 0))}


def from_lsp(text: str | None, position: dict[str, object]) -> tuple[int, int]:
    """An LSP Position → 1-based (line, column in characters); without the text the
    UTF-16 count is taken as characters (exact for every line without astral chars)."""
    row = position.get("line")
    units = position.get("character")
    row = row if isinstance(row, int) and row >= 0 else 0
    units = units if isinstance(units, int) and units >= 0 else 0
    if text is None:
        return row + 1, units + 1
    return row + 1, utf16_to_chars(_line(text, row), units) + 1


def uri_of(path: Path) -> str:
    return path.as_uri()


def path_of(uri: str) -> Path | None:
    """The local path of a file: URI; None for any other scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))

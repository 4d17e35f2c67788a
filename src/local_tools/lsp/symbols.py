"""Symbols as the server lists them, and a position from a name path.

A name path is a symbol's name with the names of what contains it, outermost first:
`Point.norm` (or `Point/norm`). It matches every symbol whose path ends with those
names; a path equal to the whole name path wins over deeper ones (`origin` is the
module's function, not `Shape.origin`). Several matches left are ambiguous: the caller
lists them.

Servers answer textDocument/documentSymbol with a tree (DocumentSymbol, with the
name's own range) or a flat list (SymbolInformation, whose range may cover the whole
declaration: the name is then looked for from its start).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from local_tools.lsp.positions import from_lsp, to_lsp

__all__ = [
    "SYMBOL_KINDS",
    "Symbol",
    "document_symbols",
    "kind_name",
    "match_name_path",
    "split_name_path",
    "workspace_symbol_uris",
]

SYMBOL_KINDS = {
    1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method",
    7: "property", 8: "field", 9: "constructor", 10: "enum", 11: "interface",
    12: "function", 13: "variable", 14: "constant", 15: "string", 16: "number",
    17: "boolean", 18: "array", 19: "object", 20: "key", 21: "null", 22: "enum member",
    23: "struct", 24: "event", 25: "operator", 26: "type parameter",
}  # fmt: skip

_MAX_SYMBOLS = 20_000  # a generated file's outline must not hold the call up
_SEPARATORS = re.compile(r"[./]|::")


def kind_name(kind: Any) -> str:
    return SYMBOL_KINDS.get(kind, "symbol") if isinstance(kind, int) else "symbol"


@dataclass(frozen=True)
class Symbol:
    path: tuple[str, ...]  # name path, outermost first
    kind: str
    uri: str
    start: dict[str, Any]  # LSP position of its name
    depth: int  # 0 at the top of the document

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def name_path(self) -> str:
        return ".".join(self.path)

    def line_column(self, text: str | None) -> tuple[int, int]:
        return from_lsp(text, self.start)


def split_name_path(symbol: str) -> tuple[str, ...]:
    """`Point.norm`, `Point/norm`, `Point::norm` → ("Point", "norm"); "()" after a name
    is ignored (`Point.norm()`)."""
    parts = [p.strip().removesuffix("()") for p in _SEPARATORS.split(symbol.strip())]
    return tuple(p for p in parts if p)


def document_symbols(result: Any, uri: str, text: str | None) -> list[Symbol]:
    """The symbols of one document, in document order (outline order for a tree)."""
    if not isinstance(result, list):
        return []
    out: list[Symbol] = []
    if any(isinstance(item, dict) and "location" in item for item in result):
        for item in result:
            if isinstance(item, dict) and len(out) < _MAX_SYMBOLS:
                symbol = _from_information(item, uri, text)
                if symbol is not None:
                    out.append(symbol)
        out.sort(key=lambda s: (s.start["line"], s.start["character"]))
        return out
    stack: list[tuple[Any, tuple[str, ...]]] = [(item, ()) for item in reversed(_in_order(result))]
    while stack and len(out) < _MAX_SYMBOLS:
        item, parents = stack.pop()
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        path = (*parents, item["name"])
        start = _start(item.get("selectionRange")) or _start(item.get("range"))
        if start is None:
            continue
        out.append(Symbol(path, kind_name(item.get("kind")), uri, start, len(parents)))
        children = item.get("children")
        if isinstance(children, list):
            stack.extend((child, path) for child in reversed(_in_order(children)))
    return out


def _in_order(items: list[Any]) -> list[Any]:
    """Siblings in document order (tsserver lists them by kind)."""

    def key(item: Any) -> tuple[int, int]:
        start = _start(item.get("range")) if isinstance(item, dict) else None
        return (start["line"], start["character"]) if start else (0, 0)

    return sorted(items, key=key)


def _from_information(item: dict[str, Any], uri: str, text: str | None) -> Symbol | None:
    name = item.get("name")
    location = item.get("location")
    if not isinstance(name, str) or not isinstance(location, dict):
        return None
    rng = location.get("range")
    start = _start(rng)
    if start is None:
        return None
    container = item.get("containerName")
    parents = split_name_path(container) if isinstance(container, str) else ()
    end = _start({"start": rng.get("end")}) if isinstance(rng, dict) else None
    start = _name_start(text, start, end, name)
    where = location.get("uri")
    return Symbol(
        (*parents, name), kind_name(item.get("kind")),
        where if isinstance(where, str) else uri, start, len(parents),
    )  # fmt: skip


def _start(rng: Any) -> dict[str, Any] | None:
    start = rng.get("start") if isinstance(rng, dict) else None
    if not isinstance(start, dict):
        return None
    line, character = start.get("line"), start.get("character")
    if not isinstance(line, int) or not isinstance(character, int):
        return None
    return {"line": line, "character": character}


def _name_start(
    text: str | None, start: dict[str, Any], end: dict[str, Any] | None, name: str
) -> dict[str, Any]:
    """Where `name` first appears within a declaration's range (its start if nowhere)."""
    if text is None or not name:
        return start
    lines = text.split("\n")
    first_col = from_lsp(text, start)[1]
    last = min(end["line"] if end else start["line"], start["line"] + 5, len(lines) - 1)
    for row in range(start["line"], last + 1):
        line = lines[row].rstrip("\r")
        found = line.find(name, first_col - 1 if row == start["line"] else 0)
        if found >= 0:
            return to_lsp(text, row + 1, found + 1)
    return start


def match_name_path(symbols: list[Symbol], parts: tuple[str, ...]) -> list[Symbol]:
    """The symbols `parts` names: whole-path matches if any, else every suffix match."""
    if not parts:
        return []
    n = len(parts)
    found = [s for s in symbols if len(s.path) >= n and s.path[-n:] == parts]
    exact = [s for s in found if len(s.path) == n]
    chosen = exact or found
    unique: dict[tuple[str, int, int], Symbol] = {}
    for symbol in chosen:  # one declaration listed twice (servers do) is one place
        unique.setdefault((symbol.uri, symbol.start["line"], symbol.start["character"]), symbol)
    return list(unique.values())


def workspace_symbol_uris(result: Any, name: str) -> list[str]:
    """The files holding a symbol called exactly `name`, per workspace/symbol, in order."""
    uris: dict[str, None] = {}
    if not isinstance(result, list):
        return []
    for item in result:
        called = item.get("name") if isinstance(item, dict) else None
        # Some servers qualify the name ("pkg.Point.norm") or add "()".
        if not isinstance(called, str) or split_name_path(called)[-1:] != (name,):
            continue
        location = item.get("location")
        uri = location.get("uri") if isinstance(location, dict) else None
        if isinstance(uri, str):
            uris.setdefault(uri, None)
    return list(uris)

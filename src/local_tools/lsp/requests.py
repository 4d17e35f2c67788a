"""What the lsp tool is asked: its operations, and which arguments each takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from local_tools.core.errors import InvalidInput

__all__ = [
    "CAPABILITY", "METHOD", "OPERATIONS", "POSITIONAL", "LspRequest", "bounded", "validate",
]  # fmt: skip

OPERATIONS = (
    "definition", "references", "hover", "document_symbols", "workspace_symbols",
    "implementation", "incoming_calls", "outgoing_calls", "diagnostics", "rename",
)  # fmt: skip
POSITIONAL = frozenset(OPERATIONS) - {"document_symbols", "workspace_symbols", "diagnostics"}
MAX_RESULTS = 100  # locations or symbols in one answer
MAX_NAME = 500  # symbol, query, new_name


# The server capability and method each operation needs.
CAPABILITY = {
    "definition": "definitionProvider", "references": "referencesProvider",
    "hover": "hoverProvider", "implementation": "implementationProvider",
    "document_symbols": "documentSymbolProvider",
    "workspace_symbols": "workspaceSymbolProvider", "incoming_calls": "callHierarchyProvider",
    "outgoing_calls": "callHierarchyProvider", "rename": "renameProvider",
}  # fmt: skip
METHOD = {
    "definition": "textDocument/definition", "references": "textDocument/references",
    "implementation": "textDocument/implementation",
}  # fmt: skip


@dataclass(frozen=True)
class LspRequest:
    operation: str
    path: str | None = None
    line: int | None = None
    column: int | None = None
    symbol: str | None = None
    query: str | None = None
    new_name: str | None = None
    apply: bool = False


def validate(req: LspRequest) -> None:
    """INVALID_INPUT for arguments the operation does not take or misses."""
    op = req.operation
    for name in ("symbol", "query", "new_name"):
        if len(getattr(req, name) or "") > MAX_NAME:
            raise InvalidInput(f"{name} is over {MAX_NAME} characters.")
    if op not in OPERATIONS:
        raise InvalidInput(f"Unknown operation {op!r}; one of: {', '.join(OPERATIONS)}.")
    has_position = req.line is not None or req.column is not None
    if op in POSITIONAL:
        if has_position and req.symbol:
            raise InvalidInput(f"{op}: give line and column, or symbol, not both.")
        if not has_position and not req.symbol:
            raise InvalidInput(
                f"{op} needs a place: path with line and column (1-based), or symbol "
                "(a name path like 'Point.norm', found in path or else the workspace)."
            )
        if has_position and (req.line is None or req.column is None or not req.path):
            raise InvalidInput(f"{op}: a position needs path, line and column together.")
    elif has_position or req.symbol:
        raise InvalidInput(f"{op} takes no line, column or symbol.")
    if op == "document_symbols" and not req.path:
        raise InvalidInput("document_symbols needs path (the file to outline).")
    if op == "workspace_symbols" and not (req.query or "").strip():
        raise InvalidInput("workspace_symbols needs query (a name or part of one).")
    if op != "workspace_symbols" and req.query is not None:
        raise InvalidInput("query is for workspace_symbols only.")
    if op == "rename" and not (req.new_name or "").strip():
        raise InvalidInput("rename needs new_name.")
    if op != "rename" and (req.new_name is not None or req.apply):
        raise InvalidInput("new_name and apply are for rename only.")


def bounded(head: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """A list answer cut to MAX_RESULTS, with the total and a note when cut."""
    out = {**head, "items": items[:MAX_RESULTS], "total": len(items)}
    if len(items) > MAX_RESULTS:
        out["note"] = f"{len(items) - MAX_RESULTS} more left out; narrow the request."
    return out

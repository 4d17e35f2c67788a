"""What local-tools says to a language server, and how it reads a server's dialects:
the client capabilities it declares, the settings it answers workspace/configuration
with, and typescript-language-server's own diagnostics request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CLIENT_CAPABILITIES", "TSSERVER_REQUEST", "from_tsserver", "setting"]


def setting(settings: Mapping[str, Any], section: Any) -> Any:
    """The value of a workspace/configuration `section` ("a.b" also found as
    {"a": {"b": ...}}); every setting for no section; None when not set."""
    if not isinstance(section, str) or not section:
        return dict(settings)
    if section in settings:
        return settings[section]
    nested: Any = settings
    for part in section.split("."):
        if not isinstance(nested, Mapping) or part not in nested:
            return None
        nested = nested[part]
    return nested


TSSERVER_REQUEST = "typescript.tsserverRequest"
_TS_SEVERITY = {"error": 1, "warning": 2, "suggestion": 4, "message": 3}


def from_tsserver(item: dict[str, Any]) -> dict[str, Any]:
    """A tsserver diagnostic (1-based line and UTF-16 offset) as an LSP one."""
    start = item.get("start")
    line = start.get("line", 1) if isinstance(start, dict) else 1
    offset = start.get("offset", 1) if isinstance(start, dict) else 1
    position = {
        "line": max(line - 1, 0) if isinstance(line, int) else 0,
        "character": max(offset - 1, 0) if isinstance(offset, int) else 0,
    }
    category = item.get("category")
    return {
        "range": {"start": position, "end": position},
        "message": item.get("text", ""),
        "severity": _TS_SEVERITY.get(category, 1) if isinstance(category, str) else 1,
        "code": item.get("code"),
        "source": "typescript",
    }


CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "symbol": {"dynamicRegistration": False},
        "workspaceEdit": {
            "documentChanges": True,
            "resourceOperations": ["create", "rename", "delete"],
        },
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": False},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
        "hover": {"contentFormat": ["plaintext", "markdown"]},
        "definition": {"linkSupport": False},
        "declaration": {"linkSupport": False},
        "typeDefinition": {"linkSupport": False},
        "implementation": {"linkSupport": False},
        "references": {},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "callHierarchy": {},
        "rename": {"prepareSupport": True},
        "diagnostic": {"dynamicRegistration": False, "relatedDocumentSupport": False},
    },
    "window": {"workDoneProgress": False},
}

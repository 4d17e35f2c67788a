"""tools/list's declarations, built once: in memory per process, on disk per version.

A declaration (`schemas.to_mcp`) costs a pydantic core schema and a JSON Schema per
model, most of a cold start's listing; the argument models are built lazily
(`core/tool.py`), so a cached declaration leaves a tool's models unbuilt until its
first call. The disk cache (`cache/mcp-tools.json` in the state dir, private like the
rest of it) is keyed by the package's version and a fingerprint of its source files
(path, size, mtime of every module), pydantic's and Python's versions: an edited
tool, a new release or an upgraded pydantic makes a new key, never a stale schema.
Tools whose models live outside the package (plugins) are declared afresh each time.
Anything wrong with the file (missing, unreadable, malformed, another fingerprint)
only means building the declarations as without it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import mcp_types as types

from local_tools.core.lazy_tool import model_paths
from local_tools.core.package_fingerprint import package_fingerprint
from local_tools.core.tool import Tool
from local_tools.transports.schemas import to_mcp

__all__ = ["CACHE_NAME", "McpDeclarations"]

log = logging.getLogger("local_tools.mcp")

CACHE_NAME = "mcp-tools.json"
_PACKAGE = "local_tools."


class McpDeclarations:
    """`types.Tool` for a `Tool`, built at most once per process and once per version."""

    def __init__(self, state_dir: Path | None) -> None:
        self._path = state_dir / "cache" / CACHE_NAME if state_dir is not None else None
        self._memory: dict[tuple[Any, ...], types.Tool] = {}
        self._disk: dict[str, dict[str, Any]] | None = None  # read on first use
        self._dirty = False

    def tools(self, tools: list[Tool]) -> list[types.Tool]:
        out = [self._declare(t) for t in tools]
        if self._dirty:
            self._dirty = False
            self._save()
        return out

    def _declare(self, tool: Tool) -> types.Tool:
        # Everything `to_mcp` reads: the same key, the same declaration. A built-in's
        # models are named (a lazy tool's module stays unimported); a plugin's are
        # the classes themselves (a reloaded plugin declares afresh).
        paths = model_paths(tool)
        models = paths if _in_package(paths) else (tool.args_model, tool.output_model)
        key = (tool.name, tool.description, tool.hints, models)
        known = self._memory.get(key)
        if known is None:
            known = self._memory[key] = types.Tool.model_validate(self._decl(tool))
        return known

    def _decl(self, tool: Tool) -> dict[str, Any]:
        disk_key = _disk_key(tool)
        if disk_key is None or self._path is None:
            return to_mcp(tool)
        entries = self._entries()
        decl = entries.get(disk_key)
        if isinstance(decl, dict) and decl.get("name") == tool.name:
            return decl
        decl = to_mcp(tool)
        entries[disk_key] = decl
        self._dirty = True
        return decl

    def _entries(self) -> dict[str, dict[str, Any]]:
        if self._disk is None:
            self._disk = _read(self._path) if self._path is not None else {}
        return self._disk

    def _save(self) -> None:
        from local_tools.core.state import write_state_file

        if self._path is None or self._disk is None:
            return
        text = json.dumps({"fingerprint": package_fingerprint(), "tools": self._disk})
        try:
            write_state_file(self._path, text)
        except OSError as exc:  # a read-only state dir: the next start builds them again
            log.debug("could not cache the tool declarations in %s: %s", self._path, exc)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fingerprint") != package_fingerprint():
        return {}  # another version or an edited source: start afresh
    tools = data.get("tools")
    return tools if isinstance(tools, dict) else {}


def _disk_key(tool: Tool) -> str | None:
    """The tool's key in the file, or None for models defined outside the package."""
    paths = model_paths(tool)
    if not _in_package(paths):
        return None
    names = [path or "" for path in paths]
    hints = tool.hints
    flags = (hints.read_only, hints.destructive, hints.idempotent, hints.open_world)
    text = json.dumps([tool.name, tool.description, names, flags])
    return hashlib.sha256(text.encode()).hexdigest()


def _in_package(paths: tuple[str, str | None]) -> bool:
    return all(path is None or path.startswith(_PACKAGE) for path in paths)

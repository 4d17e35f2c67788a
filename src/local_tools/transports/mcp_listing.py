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
import os
import sys
from pathlib import Path
from typing import Any

import mcp_types as types

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
        # Everything `to_mcp` reads: the same key, the same declaration.
        key = (tool.name, tool.description, tool.hints, tool.args_model, tool.output_model)
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
        text = json.dumps({"fingerprint": _fingerprint(), "tools": self._disk})
        try:
            write_state_file(self._path, text)
        except OSError as exc:  # a read-only state dir: the next start builds them again
            log.debug("could not cache the tool declarations in %s: %s", self._path, exc)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fingerprint") != _fingerprint():
        return {}  # another version or an edited source: start afresh
    tools = data.get("tools")
    return tools if isinstance(tools, dict) else {}


def _disk_key(tool: Tool) -> str | None:
    """The tool's key in the file, or None for models defined outside the package."""
    names = []
    for model in (tool.args_model, tool.output_model):
        if model is None:
            names.append("")
            continue
        if not model.__module__.startswith(_PACKAGE):
            return None
        names.append(f"{model.__module__}.{model.__qualname__}")
    hints = tool.hints
    flags = (hints.read_only, hints.destructive, hints.idempotent, hints.open_world)
    text = json.dumps([tool.name, tool.description, names, flags])
    return hashlib.sha256(text.encode()).hexdigest()


_fingerprints: list[str] = []


def _fingerprint() -> str:
    """The package's version and every module's path, size and mtime; pydantic's and
    Python's versions. Computed once per process (a few ms: one stat per module)."""
    if _fingerprints:
        return _fingerprints[0]
    import pydantic
    import pydantic_core

    from local_tools import __version__

    digest = hashlib.sha256()
    for part in (__version__, pydantic.VERSION, pydantic_core.__version__, sys.version):
        digest.update(part.encode() + b"\0")
    root = Path(__file__).resolve().parent.parent
    paths = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        paths += [os.path.join(folder, name) for name in files if name.endswith(".py")]
    for path in sorted(paths):
        try:
            st = os.stat(path)
        except OSError:
            continue
        rel = os.path.relpath(path, root)
        digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    _fingerprints.append(digest.hexdigest())
    return _fingerprints[0]

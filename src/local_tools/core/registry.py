"""Tool lookup: exact name → case-insensitive → alias → the ``invalid`` tool.

Toolsets can be switched on and off by config. A duplicate name or alias is an
error with a hint, never a silent rename. Custom tools come from the workspace's
``.local-tools/tools/*.py`` and from the ``local_tools.tools`` entry-point group.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib.util
import logging
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from local_tools.core.tool import Tool

__all__ = ["ENTRY_POINT_GROUP", "DuplicateToolError", "PluginError", "Registry"]

ENTRY_POINT_GROUP = "local_tools.tools"
WORKSPACE_TOOLS_DIR = Path(".local-tools") / "tools"

log = logging.getLogger(__name__)


class DuplicateToolError(ValueError):
    """Two tools claim one name or alias."""


class PluginError(RuntimeError):
    """A custom tool file or entry point could not be loaded."""


class Registry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: dict[str, str] = {}
        # casefolded name or alias -> canonical name
        self._index: dict[str, str] = {}
        self._enabled: list[str] = ["*"]
        self._disabled: list[str] = []
        self._enabled_cache: dict[str, bool] = {}
        for t in tools:
            self.add(t)

    # -- building ---------------------------------------------------------------

    def add(self, tool: Tool, *, source: str = "builtin") -> None:
        for key in (tool.name, *tool.aliases):
            folded = key.casefold()
            owner = self._index.get(folded)
            if owner is not None:
                raise DuplicateToolError(
                    f"Tool {tool.name!r} from {source} uses the name {key!r}, already taken by "
                    f"{owner!r} from {self._sources[owner]}. Rename the new tool or drop the "
                    f"alias; tools are never renamed silently."
                )
        self._tools[tool.name] = tool
        self._sources[tool.name] = source
        for key in (tool.name, *tool.aliases):
            self._index[key.casefold()] = tool.name

    def set_toolsets(self, enabled: Sequence[str], disabled: Sequence[str] = ()) -> None:
        self._enabled = list(enabled)
        self._disabled = list(disabled)
        self._enabled_cache.clear()

    def load_workspace_tools(self, workspace: Path) -> list[str]:
        """Import ``.local-tools/tools/*.py`` and register every Tool they define."""
        folder = workspace / WORKSPACE_TOOLS_DIR
        added: list[str] = []
        if not folder.is_dir():
            return added
        for path in sorted(folder.glob("*.py")):
            module = _import_file(path)
            for value in vars(module).values():
                if isinstance(value, Tool):
                    self.add(value, source=str(path))
                    added.append(value.name)
        return added

    def load_entry_points(self) -> list[str]:
        added: list[str] = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                loaded = _tools_in(ep.load())
            except Exception as exc:
                raise PluginError(
                    f"cannot load custom tools from entry point {ep.name!r} ({ep.value}): "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            for t in loaded:
                self.add(t, source=f"entry point {ep.name!r} ({ep.value})")
                added.append(t.name)
        return added

    # -- lookup -----------------------------------------------------------------

    def is_enabled(self, tool: Tool) -> bool:
        cached = self._enabled_cache.get(tool.name)
        if cached is None:
            cached = self._enabled_cache[tool.name] = self._check_enabled(tool)
        return cached

    def _check_enabled(self, tool: Tool) -> bool:
        if tool.name == "invalid":
            return True

        def hit(patterns: Sequence[str]) -> bool:
            return any(
                fnmatch.fnmatchcase(tool.toolset, p) or fnmatch.fnmatchcase(tool.name, p)
                for p in patterns
            )

        return hit(self._enabled) and not hit(self._disabled)

    def resolve(self, name: str, *, include_disabled: bool = False) -> Tool | None:
        """Exact, then case-insensitive name or alias; None when unknown (or disabled)."""
        found = self._tools.get(name)
        if found is None:
            canonical = self._index.get(name.casefold())
            found = self._tools.get(canonical) if canonical else None
        if found is None or (not include_disabled and not self.is_enabled(found)):
            return None
        return found

    def closest(self, name: str) -> str | None:
        names = {t.name: t.name for t in self.enabled()}
        for t in self.enabled():
            for alias in t.aliases:
                names[alias] = t.name
        match = difflib.get_close_matches(name, list(names), n=1, cutoff=0.5)
        if not match:
            folded = {k.casefold(): v for k, v in names.items()}
            match = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.5)
            return folded[match[0]] if match else None
        return names[match[0]]

    def enabled(self) -> list[Tool]:
        return [t for t in self._tools.values() if self.is_enabled(t)]

    def all(self) -> list[Tool]:
        return list(self._tools.values())

    def source(self, name: str) -> str:
        return self._sources[name]


def _tools_in(obj: Any) -> list[Tool]:
    if isinstance(obj, Tool):
        return [obj]
    if isinstance(obj, ModuleType):
        return [v for v in vars(obj).values() if isinstance(v, Tool)]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _tools_in(item)]
    if callable(obj):
        return _tools_in(obj())
    raise TypeError(f"entry point gave {type(obj).__name__}, expected a Tool, list or module")


def _import_file(path: Path) -> ModuleType:
    name = f"local_tools_workspace_tools.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot load custom tool file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PluginError(
            f"cannot load custom tool file {path}: {type(exc).__name__}: {exc}"
        ) from exc
    return module

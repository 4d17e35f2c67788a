"""A built-in tool known by its manifest entry until its module is needed.

Importing every tool module to build the registry was the largest part of a server's
start (~75 modules, ~160 pydantic model classes). A `LazyTool` holds what listing a
tool reads (name, aliases, description, hints, toolset, permission, and the dotted
names of its models, which key the cached declarations) and imports the module that
defines it the first time anything else is read: its function, models, subjects,
render, timeout ... It is a `Tool`, so every caller works unchanged; once loaded it
holds the same field values as the module's own object (`target()`).

The manifest (`tools/__init__.py`) is written per version from the real tools, so a
`LazyTool` never says anything its module would not.
"""

from __future__ import annotations

import importlib
from dataclasses import fields
from typing import Any

from local_tools.core.tool import Hints, Tool

__all__ = ["LazyTool", "entry_of", "model_paths", "same_tool"]

# Read from the manifest; everything else loads the module.
_LISTED = ("name", "description", "permission", "aliases", "hints", "toolset")
_HINTS = ("read_only", "destructive", "idempotent", "open_world")


class _Loaded:
    """A field read from the tool's module on first use (then kept in the instance)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        obj._load()
        return obj.__dict__[self.name]


class LazyTool(Tool):
    """A `Tool` whose module is imported when a field beyond its listing is read."""

    def __init__(self, entry: dict[str, Any]) -> None:
        # Frozen like every Tool: fields are set as the dataclass's own __init__ would.
        put = object.__setattr__
        put(self, "name", entry["name"])
        put(self, "description", entry["description"])
        put(self, "permission", entry["permission"])
        put(self, "aliases", tuple(entry["aliases"]))
        put(self, "hints", Hints(**{k: bool(entry["hints"][k]) for k in _HINTS}))
        put(self, "toolset", entry["toolset"])
        put(self, "_module", entry["module"])
        put(self, "_attr", entry["attr"])
        put(self, "_models", (entry["args_model"], entry["output_model"]))

    def target(self) -> Tool:
        """The module's own `Tool` object (imports its module)."""
        found = getattr(importlib.import_module(self.__dict__["_module"]), self.__dict__["_attr"])
        if not isinstance(found, Tool) or found.name != self.name:
            raise RuntimeError(f"the manifest's {self.name!r} is not what its module defines")
        return found

    @property
    def loaded(self) -> bool:
        return "_target" in self.__dict__

    def _load(self) -> None:
        if self.loaded:
            return
        real = self.target()
        # Every field from the module, the listed ones too: what a call runs with (its
        # permission, above all) is the code's, never only the manifest's. All at
        # once, then the mark: a thread reading meanwhile loads again (the same
        # values) rather than finding half of them.
        self.__dict__.update({f.name: getattr(real, f.name) for f in fields(Tool)})
        self.__dict__["_target"] = real

    def __repr__(self) -> str:
        return f"LazyTool({self.name!r}, {'loaded' if self.loaded else 'not loaded'})"

    # A frozen dataclass compares and hashes every field; by identity is what a
    # registry needs, and it must not import the module.
    __eq__ = object.__eq__
    __hash__ = object.__hash__


# Every field the manifest does not hold is read through the module. Set here, not in
# the class body: the dataclass's fields keep their declared types for type checkers.
for _field in fields(Tool):
    if _field.name not in _LISTED:
        setattr(LazyTool, _field.name, _Loaded(_field.name))


def entry_of(tool: Tool, module: str, attr: str) -> dict[str, Any]:
    """The manifest entry for a built-in `tool`, defined as `module.attr`."""
    args_path, output_path = model_paths(tool)
    return {
        "module": module,
        "attr": attr,
        "name": tool.name,
        "description": tool.description,
        "permission": tool.permission,
        "aliases": list(tool.aliases),
        "hints": {k: getattr(tool.hints, k) for k in _HINTS},
        "toolset": tool.toolset,
        "args_model": args_path,
        "output_model": output_path,
    }


def model_paths(tool: Tool) -> tuple[str, str | None]:
    """`module.qualname` of the tool's argument and output models, without importing
    a lazy tool's module."""
    if isinstance(tool, LazyTool) and not tool.loaded:
        args_path, output_path = tool.__dict__["_models"]
        return args_path, output_path
    out = tool.output_model
    return (
        f"{tool.args_model.__module__}.{tool.args_model.__qualname__}",
        None if out is None else f"{out.__module__}.{out.__qualname__}",
    )


def same_tool(registered: Tool, other: Tool) -> bool:
    """Whether `other` is the tool registered (a lazy one stands for its module's)."""
    if registered is other:
        return True
    return (
        isinstance(registered, LazyTool)
        and registered.name == other.name
        and (registered.target() is other)
    )

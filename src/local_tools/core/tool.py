"""How a tool is declared.

A tool is data: a name, a description written for a model, a pydantic arguments
model (the JSON Schema models see is generated from it), the permission it needs,
hints, a toolset, and a function ``(args, ctx) -> output``. The runner does all the
cross-cutting work; a tool only does its job and raises ``ToolError`` when it can't.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from local_tools.core.context import ToolContext

__all__ = ["Args", "Hints", "Tool", "tool"]

A = TypeVar("A", bound=BaseModel)

ToolFunc = Callable[[Any, "ToolContext"], Any]
SubjectsFunc = Callable[[Any, "ToolContext"], "Sequence[str] | None"]
RenderFunc = Callable[[Any], str]


class Args(BaseModel):
    """Base for tool argument models: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NoArgs(Args):
    pass


@dataclass(frozen=True)
class Hints:
    """Behaviour hints, published to clients (MCP annotations) and used by approval UIs."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    func: ToolFunc
    permission: str | None = None
    aliases: tuple[str, ...] = ()
    hints: Hints = field(default_factory=Hints)
    toolset: str = "custom"
    # What the permission rules match against (a path, a command, a host);
    # None means the generic check for the permission.
    subjects: SubjectsFunc | None = None
    # Text a model reads instead of the raw output (line numbers, a diff ...).
    render: RenderFunc | None = None
    # Sync functions that may block run in a worker thread so timeouts and
    # cancellation work; cheap pure functions can run inline.
    blocking: bool = True
    timeout: float | None = None

    @cached_property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    @cached_property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as models see it."""
        return _clean_schema(self.args_model.model_json_schema())

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": copy.deepcopy(self.parameters),
            "aliases": list(self.aliases),
            "permission": self.permission,
            "toolset": self.toolset,
            "hints": {
                "read_only": self.hints.read_only,
                "destructive": self.hints.destructive,
                "idempotent": self.hints.idempotent,
                "open_world": self.hints.open_world,
            },
        }


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's auto-generated titles: noise for a model, and they cost tokens."""
    schema = copy.deepcopy(schema)

    def walk(node: Any, in_properties: bool = False) -> None:
        if isinstance(node, dict):
            if not in_properties:
                node.pop("title", None)
            for key, value in node.items():
                walk(value, in_properties=(key in ("properties", "$defs")))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def tool(
    name: str,
    *,
    args: type[BaseModel] = NoArgs,
    description: str | None = None,
    permission: str | None = None,
    aliases: Sequence[str] = (),
    hints: Hints | None = None,
    toolset: str = "custom",
    subjects: SubjectsFunc | None = None,
    render: RenderFunc | None = None,
    blocking: bool = True,
    timeout: float | None = None,
) -> Callable[[Callable[[A, ToolContext], Any | Awaitable[Any]]], Tool]:
    """Declare a tool from a function; the description defaults to its docstring."""

    def decorate(func: Callable[[A, ToolContext], Any]) -> Tool:
        text = description or inspect.cleandoc(func.__doc__ or "")
        if not text:
            raise ValueError(f"tool {name!r} needs a description (argument or docstring)")
        return Tool(
            name=name,
            description=text,
            args_model=args,
            func=func,
            permission=permission,
            aliases=tuple(aliases),
            hints=hints or Hints(),
            toolset=toolset,
            subjects=subjects,
            render=render,
            blocking=blocking,
            timeout=timeout,
        )

    return decorate

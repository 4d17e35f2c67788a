"""How a tool is declared.

A tool is data: a name, a description written for a model, a pydantic arguments
model (the JSON Schema models see is generated from it), the permission it needs,
hints, a toolset, and a function ``(args, ctx) -> output``. The runner does all the
cross-cutting work; a tool only does its job and raises ``ToolError`` when it can't.

A tool whose output has a fixed shape may also declare it (``output=``, an ``Output``
model): MCP publishes it as ``outputSchema`` and clients validate results against it,
so the model must describe every output the tool returns.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from local_tools.core.context import ToolContext

__all__ = [
    "CHANGES_ROOTS",
    "RUNNER_OUTPUT_FIELDS",
    "Args",
    "ChangesFunc",
    "Hints",
    "NotQuick",
    "Output",
    "QuickFunc",
    "Tool",
    "mark_inline",
    "omitted",
    "running_inline",
    "tool",
]

A = TypeVar("A", bound=BaseModel)

ToolFunc = Callable[[Any, "ToolContext"], Any]
SubjectsFunc = Callable[[Any, "ToolContext"], "Sequence[str] | None"]
RenderFunc = Callable[[Any], str]
# What a call may change on disk (checkpoints snapshot it first, so it can be undone):
# the paths as the caller gave them, CHANGES_ROOTS for anything under a writable root
# (a command), or None for nothing this time (a dry run, a read-only command).
ChangesFunc = Callable[[Any, "ToolContext"], "Sequence[str] | str | None"]
CHANGES_ROOTS = "roots"
# Whether this call of a sync tool cannot block for long (read_file of a small local
# file): the runner then runs it inline, without the worker-thread hop.
QuickFunc = Callable[[Any, "ToolContext"], bool]


class NotQuick(Exception):
    """Raised by a tool running inline (`running_inline()`) that finds this call is not
    quick after all (the file was swapped since `quick` looked: now large, a FIFO, a
    PDF to parse): the runner runs the call again in a worker, under its deadline."""


_inline: ContextVar[bool] = ContextVar("local_tools_inline", default=False)


def running_inline() -> bool:
    """Whether this sync tool runs on the event loop (its `quick` said so): it must
    then neither block nor do long work, and raises NotQuick when it would."""
    return _inline.get()


def mark_inline() -> None:
    """For the runner, in the context copy an inline call runs in."""
    _inline.set(True)


class Args(BaseModel):
    """Base for tool argument models: unknown fields are an error, not silently dropped.

    Built when first used (``defer_build``): a server imports every tool at start but
    validates with few of them, and tools/list's declarations are cached
    (`transports/mcp_listing.py`), so most models are never built in a session."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class NoArgs(Args):
    pass


class Output(BaseModel):
    """Base for tool output models: the shape of a successful result's ``output`` dict.

    Only a description (tools still return dicts); it is published as MCP
    ``outputSchema``, against which clients validate results. Open to extra keys, so a
    tool adding a field later breaks no client. A field without a default is a key every
    output has; ``omitted(...)`` marks a key the tool sometimes leaves out (typed
    ``T``: never null when present), ``T | None`` one it may send as null.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)  # built when first used, as Args


def omitted(description: str, **kwargs: Any) -> Any:
    """A key the tool may leave out: published as its type (not nullable), absent when unset."""
    return Field(None, description=description, **kwargs)


# Keys the runner may add to ANY output (core/runner.py `_bound`, when it cuts a long
# string): every output schema allows them, with these types.
RUNNER_OUTPUT_FIELDS: dict[str, dict[str, Any]] = {
    "truncated": {
        "type": "boolean",
        "description": "True when some of the output was left out or cut.",
    },
    "full_output_path": {
        "type": "string",
        "description": "A file holding the whole text of a field that was cut.",
    },
}


@dataclass(frozen=True)
class Hints:
    """Behaviour hints, published to clients (MCP annotations) and used by approval UIs."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}")


def is_tool_name(name: object) -> bool:
    """1-64 letters, digits, _ - . (not starting with - or .)."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


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
    # The shape of the output, when it has a fixed one (published as MCP outputSchema).
    output_model: type[BaseModel] | None = None
    # Declared by tools that change files (see ChangesFunc); None: it changes none.
    changes: ChangesFunc | None = None
    # Declared by sync tools some of whose calls are short (see QuickFunc).
    quick: QuickFunc | None = None

    def __post_init__(self) -> None:
        for name in (self.name, *self.aliases):
            if not is_tool_name(name):
                # Names reach terminals (`list`, `log`), prompts and every model API:
                # letters, digits, _ - . only, as OpenAI's function names allow.
                raise ValueError(
                    f"tool name {name!r} is not 1-64 letters, digits, '_', '-' or '.' "
                    "(starting with a letter, digit or '_')"
                )

    @cached_property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    @cached_property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as models see it."""
        return _clean_schema(self.args_model.model_json_schema())

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the output when declared, allowing what the runner adds.

        May hold ``$defs``/``$ref`` like ``parameters``; the declarations inline them.
        """
        if self.output_model is None:
            return None
        schema = _clean_schema(
            self.output_model.model_json_schema(mode="serialization"), drop=("title", "default")
        )
        return _with_runner_fields(self.name, schema)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": copy.deepcopy(self.parameters),
            "output_schema": copy.deepcopy(self.output_schema),
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


def _clean_schema(schema: dict[str, Any], drop: Sequence[str] = ("title",)) -> dict[str, Any]:
    """Drop pydantic's auto-generated titles: noise for a model, and they cost tokens.

    Output schemas drop defaults too: an output's missing key is just missing, and a
    client that fills defaults in (ajv's useDefaults) would add a null where the
    schema wants a string.
    """
    schema = copy.deepcopy(schema)

    def walk(node: Any, in_properties: bool = False) -> None:
        if isinstance(node, dict):
            if not in_properties:
                for key in drop:
                    node.pop(key, None)
            for key, value in node.items():
                walk(value, in_properties=(key in ("properties", "$defs")))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _with_runner_fields(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Add the keys the runner may put into any output; refuse a model that types them
    otherwise (every cut result would then fail a client's validation)."""
    props = schema["properties"]
    for key, extra in RUNNER_OUTPUT_FIELDS.items():
        if key not in props:
            props[key] = dict(extra)
        elif not _may_be(props[key], extra["type"]):
            raise ValueError(
                f"tool {name!r}: output field {key!r} must accept a {extra['type']}: "
                "the runner sets it on any output it cuts"
            )
    if schema.get("additionalProperties") is False:
        raise ValueError(f"tool {name!r}: an output schema must stay open to new keys")
    return schema


def _may_be(node: dict[str, Any], json_type: str) -> bool:
    if not node or node.get("type") == json_type:
        return True
    t = node.get("type")
    if isinstance(t, list):
        return json_type in t
    return any(_may_be(branch, json_type) for branch in node.get("anyOf", []))


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
    output: type[BaseModel] | None = None,
    changes: ChangesFunc | None = None,
    quick: QuickFunc | None = None,
) -> Callable[[Callable[[A, ToolContext], Any | Awaitable[Any]]], Tool]:
    """Declare a tool from a function; the description defaults to its docstring.

    ``output``: the model of what the tool returns, when its shape is fixed (see ``Output``).
    """

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
            output_model=output,
            changes=changes,
            quick=quick,
        )

    return decorate

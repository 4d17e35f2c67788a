"""memory: named notes (key/value) for this workspace: read, write, list, delete."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Output, omitted, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.memory import kv_delete, kv_list, kv_read, kv_write

MAX_VALUE = 100_000


class MemoryArgs(Args):
    # Stored as given: SQLite keeps a NUL, PostgreSQL refuses it cleanly (core/arg_checks.py).
    verbatim_text: ClassVar[frozenset[str]] = frozenset({"value"})
    action: Literal["read", "write", "list", "delete"] = Field(description="What to do.")
    key: str = Field(
        "", max_length=128,
        description="The note's name: letters, digits, '_', '.', ':' or '-'. For list: a prefix.",
    )  # fmt: skip
    value: str | None = Field(None, max_length=MAX_VALUE, description="For write: the text.")

    @model_validator(mode="after")
    def _needs(self) -> MemoryArgs:
        if self.action != "list" and not self.key:
            raise ValueError(f"action={self.action} needs a key")
        if self.action == "write" and self.value is None:
            raise ValueError("action=write needs a value")
        return self


class MemoryOutput(Output):
    action: str = Field(description="What was done.")
    key: str = omitted(description="The key read, written or deleted.")
    value: str = omitted(description="For read: the note's text.")
    replaced: bool = omitted(description="For write: whether a value was replaced.")
    keys: list[str] = omitted(description="For list: the keys, sorted.")


def _render(output: dict[str, Any]) -> str:
    action = output["action"]
    if action == "read":
        return str(output["value"])
    if action == "list":
        return "\n".join(output["keys"]) or "No memory keys."
    if action == "write":
        return f"{'Replaced' if output['replaced'] else 'Wrote'} {output['key']}."
    return f"Deleted {output['key']}."


@tool("memory", args=MemoryArgs, toolset="memory", render=_render, output=MemoryOutput)
def memory(args: MemoryArgs, ctx: ToolContext) -> dict[str, Any]:
    """Keep named notes for this workspace: write, read, list or delete one by key.

    Keys are names, never file paths; list takes key as a prefix. Notes last across
    sessions. For searchable insights and decisions use save_memory.
    """
    store = open_store(ctx)
    if args.action == "list":
        return {"action": "list", "keys": kv_list(store, args.key)}
    if args.action == "read":
        return {"action": "read", "key": args.key, "value": kv_read(store, args.key)}
    if args.action == "write":
        assert args.value is not None
        replaced = kv_write(store, args.key, args.value, ctx.user_id)
        return {"action": "write", "key": args.key, "replaced": replaced}
    kv_delete(store, args.key)
    return {"action": "delete", "key": args.key}

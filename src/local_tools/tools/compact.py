"""compact: shrink a conversation to a token budget (engine: compaction/)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.servers import reserved_ports
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.tools._common import file_subjects, shown_path

if TYPE_CHECKING:  # the engine loads with the first call, not with every server's start
    from local_tools.compaction import Summarizer

# The model-backed tools' toolset: not listed while no [models.NAME] is configured.
TOOLSET = "models"
MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_ENCODING = "o200k_base"


class CompactArgs(Args):
    # Or JSON text: strict OpenAI schemas cannot describe free-form message objects.
    messages: list[dict[str, Any]] | str | None = Field(
        None, description="The conversation's messages, or them as JSON text (or give path)."
    )
    path: str | None = Field(
        None, description='A workspace JSON file: a list of messages, or {"messages", "system"}.'
    )
    budget: int = Field(gt=0, le=10_000_000, description="Tokens the result must fit in.")
    format: Literal["auto", "openai", "anthropic"] = Field(
        "auto", description="The messages' API format; auto detects it."
    )
    keep_recent_outputs: int | None = Field(
        None, ge=0, le=100, description="Newest tool outputs kept whole (default 3)."
    )
    output_path: str | None = Field(
        None, description="Write the result's conversation to this workspace file instead."
    )

    @field_validator("messages")
    @classmethod
    def _json_text(cls, value: list[dict[str, Any]] | str | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            parsed = None
        if not isinstance(parsed, list):
            raise ValueError("must be a list of message objects (or it as JSON text)")
        return parsed

    @model_validator(mode="after")
    def _one_source(self) -> CompactArgs:
        if (self.messages is None) == (self.path is None):
            raise ValueError("give either messages (a list) or path (a JSON file), not both")
        return self


class DroppedEntry(Output):
    index: int = Field(description="The message's index in the input.")
    role: str = Field(description="Its role.")
    kind: str = Field(description="tool_output, image, user_text_cut or summarized.")
    tokens: int = Field(description="Tokens it had.")
    restore: str = Field(description="How to get it back.")
    tool: str = omitted(description="tool_output: the tool that produced it.")
    last_index: int = omitted(description="summarized: the last message summarized.")
    count: int = omitted(description="summarized: how many messages.")


class CompactOutput(Output):
    format: Literal["openai", "anthropic"] = Field(description="The messages' format.")
    messages: list[dict[str, Any]] = omitted(
        description="The compacted conversation (absent with output_path)."
    )
    system: Any = omitted(description="Anthropic's top-level system prompt, as given.")
    tokens_before: int = Field(description="Tokens of the input.")
    tokens_after: int = Field(description="Tokens of the result.")
    budget: int = Field(description="The budget asked for.")
    fits: bool = Field(description="Whether the result fits the budget.")
    dropped: list[DroppedEntry] = Field(
        description="What was removed or cut, and how to get it back."
    )
    summarized: bool = Field(description="Whether a model summarized older messages.")
    spill_path: str = omitted(description="The file holding what was removed (read_file reads it).")
    output_path: str = omitted(description="Where the conversation was written.")
    note: str = omitted(description="Why it does not fit, or what went wrong with the summary.")


DESCRIPTION = """Shrink a conversation (OpenAI Chat Completions or Anthropic Messages format) \
to fit `budget` tokens: inline `messages`, or `path` to a workspace JSON file.

Old tool outputs become stubs naming their call and where the full text was saved \
(read_file reads it). Kept whole: user messages, the system prompt, the newest tool \
outputs, skills, todo lists. If still over and a model is configured, it summarizes the \
older part into a handoff note. Returns the messages (or writes them to output_path), \
tokens before/after and what was dropped."""


def _subjects(args: CompactArgs, ctx: ToolContext) -> Sequence[str] | None:
    return file_subjects(ctx, args.path) if args.path is not None else None


def _changes(args: CompactArgs, ctx: ToolContext) -> Sequence[str] | None:
    return (args.output_path,) if args.output_path is not None else None


def _render(out: dict[str, Any]) -> str:
    stubs = sum(1 for d in out.get("dropped") or () if d.get("kind") != "summarized")
    lines = [
        f"{out['tokens_before']:,} -> {out['tokens_after']:,} tokens (budget {out['budget']:,}: "
        f"{'fits' if out['fits'] else 'does NOT fit'}); {stubs} parts removed or cut"
        + ("; older messages summarized" if out.get("summarized") else "")
        + "."
    ]
    if out.get("spill_path"):
        lines.append(f"What was removed is saved in {out['spill_path']}.")
    if out.get("note"):
        lines.append(out["note"])
    if out.get("output_path"):
        lines.append(f"The conversation was written to {out['output_path']}.")
    elif "messages" in out:
        lines.append(json.dumps(out["messages"], ensure_ascii=False))
    return "\n".join(lines)


def _summarizer(ctx: ToolContext) -> Summarizer | None:
    """The model that summarizes ([compact] model, else [task] model, else the first);
    None when none is configured."""
    if not ctx.config.models:
        return None
    from local_tools.compaction import Summarizer
    from local_tools.models import open_model, resolve_model

    resolved = resolve_model(ctx.config, purpose="compact")
    conf = resolved.config
    state_dir = ctx.state_dir

    async def complete(system: str, prompt: str, max_tokens: int) -> str:
        from local_tools.models.types import Message

        # local-tools' own servers stay out of reach, as for web_fetch.
        servers = lambda: reserved_ports(state_dir)  # noqa: E731
        async with open_model(
            ctx.config, resolved.name, purpose="compact", local_servers=servers
        ) as client:
            reply = await client.complete(
                system, [Message(role="user", text=prompt)], max_tokens=max_tokens
            )
        return reply.text

    # Room for the prompt's own instructions and the reply.
    return Summarizer(
        resolved.name, complete, conf.context_tokens - conf.max_tokens, conf.max_tokens
    )


def _load(ctx: ToolContext, path: str) -> Any:
    with ctx.jail.open_read(path) as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(
            f"{path} is over {MAX_FILE_BYTES // 2**20} MB: too big to compact in one call."
        )
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(
            f"{path} is not a JSON file ({exc}). Give a JSON list of messages, or an object "
            'with "messages".'
        ) from None
    except RecursionError:  # nested thousands deep: no conversation is
        raise InvalidInput(
            f"{path} nests lists and objects too deep to read: it is not a conversation. "
            'Give a JSON list of messages, or an object with "messages".'
        ) from None


def _written(source: Any, result: dict[str, Any]) -> bytes:
    """The conversation in the shape it came in (an object keeps its other keys)."""
    doc: Any = result["messages"]
    if isinstance(source, dict):
        doc = {**source, "messages": result["messages"]}
        if "system" in result:
            doc["system"] = result["system"]
    return (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


@tool(
    "compact",
    args=CompactArgs,
    description=DESCRIPTION,
    permission="read:file",
    hints=Hints(open_world=True),
    toolset=TOOLSET,
    subjects=_subjects,
    changes=_changes,
    render=_render,
    timeout=900.0,
    output=CompactOutput,
)
async def compact(args: CompactArgs, ctx: ToolContext) -> dict[str, Any]:
    from local_tools.compaction import Options, parse
    from local_tools.compaction import compact as run_compact

    if args.output_path is not None:
        await ctx.authorize(
            "write:file",
            file_subjects(ctx, args.output_path),
            summary=f"write the compacted conversation to {args.output_path}",
        )
    source: Any = args.messages
    if args.path is not None:
        source = await asyncio.to_thread(_load, ctx, args.path)
    conv = await asyncio.to_thread(parse, source, args.format)
    summarizer = _summarizer(ctx)
    encoding = DEFAULT_ENCODING
    if summarizer is not None:
        encoding = ctx.config.models[summarizer.name].encoding
    keep = args.keep_recent_outputs
    opts = Options(
        budget=args.budget,
        keep_recent=ctx.config.compact.keep_recent_outputs if keep is None else keep,
        encoding=encoding,
        spill_dir=ctx.spill_dir,
        check=ctx.check_cancelled,
    )
    result = await run_compact(conv, opts, summarizer)
    if args.output_path is not None:
        data = _written(source, result)
        await asyncio.to_thread(ctx.jail.write_atomic, args.output_path, data)
        result.pop("messages")
        result.pop("system", None)
        result["output_path"] = shown_path(ctx, args.output_path)
    return result

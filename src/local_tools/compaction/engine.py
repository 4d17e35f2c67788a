"""compact: shrink a conversation to a token budget, first without a model, then with
one (when configured) summarizing the older part."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_tools.compaction.formats import Conversation, is_human
from local_tools.compaction.prune import Pruner
from local_tools.compaction.spill import SpillFile
from local_tools.compaction.summary import Summarizer, summarize
from local_tools.core.errors import ToolError
from local_tools.models.settings import how_to_configure

__all__ = ["Options", "compact"]


@dataclass(frozen=True)
class Options:
    budget: int
    keep_recent: int
    encoding: str
    spill_dir: Path
    check: Callable[[], None] = lambda: None


async def compact(
    conv: Conversation, opts: Options, summarizer: Summarizer | None
) -> dict[str, Any]:
    """The result: {format, messages, tokens_before, tokens_after, budget, fits, dropped,
    summarized, spill_path?, note?}; `conv` holds the compacted conversation."""
    spill = SpillFile(opts.spill_dir)
    try:
        pruner = await asyncio.to_thread(
            Pruner, conv, opts.budget, opts.encoding, spill, opts.keep_recent, check=opts.check
        )
        before = pruner.total
        await asyncio.to_thread(pruner.run)
        notes: list[str] = []
        summarized = False
        if not pruner.fits():
            if summarizer is None:
                notes.append(
                    "Without a model nothing more can go: a model would summarize the older "
                    f"messages. {how_to_configure()}"
                )
            else:
                try:
                    why = await summarize(pruner, summarizer, opts.keep_recent)
                except ToolError as exc:  # the model failed: what fits best so far still helps
                    why = (
                        f"The summary by {summarizer.name} failed ({exc.code.value}: {exc}); "
                        "this is the result without it."
                    )
                summarized = why is None
                if why:
                    notes.append(why)
        if not pruner.fits():
            notes.append(_over(pruner, opts))
    finally:
        spill.close()
    result: dict[str, Any] = {
        "format": conv.format,
        "messages": conv.messages,
        "tokens_before": before,
        "tokens_after": pruner.total,
        "budget": opts.budget,
        "fits": pruner.fits(),
        "dropped": pruner.dropped,
        "summarized": summarized,
    }
    if conv.system is not None:
        result["system"] = conv.system
    if spill.path is not None:
        result["spill_path"] = str(spill.path)
    if notes:
        result["note"] = " ".join(notes)
    return result


def _over(pruner: Pruner, opts: Options) -> str:
    users = pruner.user_tokens()
    if users > opts.budget:
        return (
            f"The user messages alone take {users:,} tokens, more than the budget of "
            f"{opts.budget:,}: they are kept (long ones cut in the middle), so it cannot fit. "
            "Give a larger budget."
        )
    humans = [i for i, m in enumerate(pruner.conv.messages) if is_human(pruner.conv, m)]
    return (
        f"Still {pruner.total:,} tokens, over the budget of {opts.budget:,}: what is left is "
        f"kept whole (the system prompt, {len(humans)} user messages, the newest "
        f"{opts.keep_recent} tool outputs, skill outputs, todo lists). A larger budget or a "
        "smaller keep_recent_outputs would help."
    )

"""A sync tool's call run on the event loop, when the tool says it is quick.

The worker-thread hop costs more than reading a small file. A tool's `quick(args, ctx)`
says a call cannot block for long (read_file: a small regular file on a local disk);
the runner then decides and runs it inline, with the same checks in the same order.
The tool looks again as it runs (`running_inline()`) and raises NotQuick when the
file turned out otherwise (swapped since): the call then runs in a worker, its checks
made again, under its deadline.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from local_tools.core.context import ToolContext
from local_tools.core.tool import NotQuick, Tool, mark_inline

__all__ = ["NOT_QUICK", "is_quick", "run_inline"]

log = logging.getLogger("local_tools.core.runner")

NOT_QUICK = object()  # not run inline: run it in a worker


def is_quick(tool: Tool, args: BaseModel, ctx: ToolContext) -> bool:
    """Whether this call of a sync tool may skip the worker: the tool's `quick` says it
    cannot block for long and the tool changes no files (a checkpoint would copy them
    first). When in doubt, no: a call that may block (a FIFO, a network filesystem, a
    huge file) must run in a worker, so that its deadline can free the caller."""
    quick = tool.quick
    if quick is None or tool.changes is not None:
        return False
    try:
        return bool(quick(args, ctx))
    except Exception:
        log.debug("%s's quick check failed; running it in a worker", tool.name, exc_info=True)
        return False


def run_inline(
    run: Callable[[Tool, BaseModel, ToolContext, bool], Any],
    tool: Tool,
    args: BaseModel,
    ctx: ToolContext,
    check: bool,
) -> Any:
    """`run(tool, args, ctx, check)` on the loop when the call `is_quick`, in a copy of
    the context; NOT_QUICK when it is not, or when the tool raised NotQuick after all."""
    if not is_quick(tool, args, ctx):
        return NOT_QUICK

    def inline() -> Any:
        mark_inline()
        try:
            return run(tool, args, ctx, check)
        except NotQuick:
            return NOT_QUICK

    return contextvars.copy_context().run(inline)

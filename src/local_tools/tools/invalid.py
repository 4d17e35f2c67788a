"""invalid: where calls to unknown tools or with unusable arguments are explained."""

from __future__ import annotations

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput, UnknownTool
from local_tools.core.tool import Args, Hints, tool


class InvalidArgs(Args):
    tool: str = Field(description="The tool name that was asked for.")
    error: str = Field("", description="What was wrong with the call, if known.")


@tool(
    "invalid",
    args=InvalidArgs,
    description="Explains a call that could not be made: an unknown tool or bad arguments. "
    "Never useful to call directly; it always fails with the list of real tools.",
    hints=Hints(read_only=True, idempotent=True),
    toolset="agent",
    blocking=False,
)
def invalid(args: InvalidArgs, ctx: ToolContext) -> None:
    runner = ctx.runner
    names = (
        sorted(t.name for t in runner.registry.enabled() if t.name != "invalid") if runner else []
    )
    if args.error:
        raise InvalidInput(
            f"The call to {args.tool!r} was invalid: {args.error}. Available tools: "
            f"{', '.join(names)}."
        )
    guess = runner.registry.closest(args.tool) if runner else None
    hint = f" Did you mean {guess!r}?" if guess else ""
    raise UnknownTool(
        f"There is no tool named {args.tool!r}.{hint} Available tools: {', '.join(names)}.",
        details={"available": names, "closest": guess},
    )

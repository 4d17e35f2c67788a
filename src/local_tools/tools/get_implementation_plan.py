"""get_implementation_plan: the tasks in an order that respects their dependencies."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, Output, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import implementation_plan
from local_tools.tools._project import ProjectItem, render_item


class PlanStep(ProjectItem):
    step: int = Field(description="Its place in the order, from 1.")


class ImplementationPlanOutput(Output):
    steps: list[PlanStep] = Field(description="Tasks, every dependency before its dependents.")
    unordered: list[str] = Field(description="Tasks that cannot be ordered (in or after a cycle).")
    cycles: list[list[str]] = Field(description="The cycles, each a chain ending where it starts.")


def _render(output: dict[str, Any]) -> str:
    lines = [f"{s['step']}. {render_item(s)}" for s in output["steps"]] or ["No tasks to order."]
    if output["unordered"]:
        lines.append(f"Cannot be ordered: {', '.join(output['unordered'])}")
    lines += [f"Cycle: {' → '.join(c)}" for c in output["cycles"]]
    return "\n".join(lines)


@tool(
    "get_implementation_plan",
    permission="read:project",
    hints=Hints(read_only=True, idempotent=True),
    toolset="project",
    render=_render,
    output=ImplementationPlanOutput,
)
def get_implementation_plan(args: Any, ctx: ToolContext) -> dict[str, Any]:
    """The project's tasks as a plan, each after the tasks it depends on, with status,
    feature and dependencies.

    Tasks in a dependency cycle are listed in `unordered`, with the cycles as chains.
    """
    return implementation_plan(open_store(ctx))

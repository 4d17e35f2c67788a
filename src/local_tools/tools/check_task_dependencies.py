"""check_task_dependencies: missing dependencies and dependency cycles among tasks."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, Output, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import dependencies


class MissingDependency(Output):
    task: str = Field(description="The task.")
    missing: list[str] = Field(description="Tasks it depends on that do not exist.")


class TaskDependenciesOutput(Output):
    ok: bool = Field(description="True when nothing is missing and there is no cycle.")
    missing: list[MissingDependency] = Field(description="Dependencies on tasks that do not exist.")
    cycles: list[list[str]] = Field(description="Each cycle as a chain ending where it starts.")


def _render(output: dict[str, Any]) -> str:
    if output["ok"]:
        return "Task dependencies are sound: nothing missing, no cycle."
    lines = [f"{m['task']} depends on missing {', '.join(m['missing'])}" for m in output["missing"]]
    lines += [f"Cycle: {' → '.join(c)}" for c in output["cycles"]]
    return "\n".join(lines)


@tool(
    "check_task_dependencies",
    permission="read:project",
    hints=Hints(read_only=True, idempotent=True),
    toolset="project",
    render=_render,
    output=TaskDependenciesOutput,
)
def check_task_dependencies(args: Any, ctx: ToolContext) -> dict[str, Any]:
    """Check the tasks' dependencies: tasks depending on tasks that do not exist, and every
    dependency cycle, as a chain (TASK-003 → TASK-007 → TASK-003).
    """
    found = dependencies(open_store(ctx))
    return {"ok": not found["missing"] and not found["cycles"], **found}

"""check_feature_coverage: requirements no feature covers, features covering nothing."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, Output, tool
from local_tools.knowledge import open_store
from local_tools.knowledge.project import coverage


class FeatureCoverageOutput(Output):
    ok: bool = Field(
        description="True when every requirement is covered and every feature covers one."
    )
    uncovered_requirements: list[str] = Field(description="Requirements no feature covers.")
    features_covering_nothing: list[str] = Field(description="Features that cover no requirement.")


def _render(output: dict[str, Any]) -> str:
    if output["ok"]:
        return "Coverage is complete: every requirement is covered, every feature covers one."
    lines = []
    if output["uncovered_requirements"]:
        lines.append(f"Uncovered requirements: {', '.join(output['uncovered_requirements'])}")
    if output["features_covering_nothing"]:
        lines.append(f"Features covering nothing: {', '.join(output['features_covering_nothing'])}")
    return "\n".join(lines)


@tool(
    "check_feature_coverage",
    permission="read:project",
    hints=Hints(read_only=True, idempotent=True),
    toolset="project",
    render=_render,
    output=FeatureCoverageOutput,
)
def check_feature_coverage(args: Any, ctx: ToolContext) -> dict[str, Any]:
    """Check the design both ways: requirements no feature covers, and features covering no
    requirement.
    """
    found = coverage(open_store(ctx))
    ok = not found["uncovered_requirements"] and not found["features_covering_nothing"]
    return {"ok": ok, **found}

"""review_and_edit_content: put a draft to the person for review (see tools/_review.py)."""

from __future__ import annotations

from typing import Any

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools._review import (
    REVIEW_TOOL_TIMEOUT,
    ContentReviewArgs,
    ReviewOutput,
    render_review,
    review_content,
)

DESCRIPTION = """Show a draft (not a file yet) to the user: they pass it or edit it.

For text you generated and have not saved: a PRD, a design, a plan. The user
sees it with your title and prompt and answers pass or edit; on edit the result
has their text (content) and a diff: use it from then on. Nobody there, a
dismissal or the timeout is CANCELLED: never treat that as approval."""


@tool(
    "review_and_edit_content",
    args=ContentReviewArgs,
    description=DESCRIPTION,
    hints=Hints(read_only=True),
    toolset="review",
    render=render_review,
    output=ReviewOutput,
    timeout=REVIEW_TOOL_TIMEOUT,
)
async def review_and_edit_content(args: ContentReviewArgs, ctx: ToolContext) -> dict[str, Any]:
    return await review_content(ctx, args, feedback=False)

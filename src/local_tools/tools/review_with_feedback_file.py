"""review_with_feedback_file: put a draft to the person for review (see tools/_review.py)."""

from __future__ import annotations

from typing import Any

from local_tools.core.context import ToolContext
from local_tools.core.tool import Hints, tool
from local_tools.tools._common import path_subject
from local_tools.tools._review import (
    REVIEW_TOOL_TIMEOUT,
    FileReviewArgs,
    ReviewOutput,
    render_review,
    review_file,
)

DESCRIPTION = """Show a file to the user for review: they pass it, edit it, or give feedback.

Like review_and_edit_file, with a third answer: feedback, the user's words on
what to change. On feedback, regenerate the file following it and review again.
On edit, their text is written to the file and returned with a diff. Nobody
there, a dismissal or the timeout is CANCELLED: never treat that as approval."""


@tool(
    "review_with_feedback_file",
    args=FileReviewArgs,
    description=DESCRIPTION,
    permission="write:file",  # an edit is written back, as the edit tool would
    subjects=path_subject,
    hints=Hints(read_only=False),
    toolset="review",
    render=render_review,
    output=ReviewOutput,
    timeout=REVIEW_TOOL_TIMEOUT,
)
async def review_with_feedback_file(args: FileReviewArgs, ctx: ToolContext) -> dict[str, Any]:
    return await review_file(ctx, args, feedback=True)

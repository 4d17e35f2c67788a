"""review_and_edit_file: put a draft to the person for review (see tools/_review.py)."""

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

DESCRIPTION = """Show a file to the user for review: they pass it or edit it.

The user sees the file (with your prompt) at the terminal, in their MCP client's
form or in the web console, and answers pass or edit. On edit, their text is
written to the file and returned with a diff: keep their changes. If the file
changed on disk during the review, the edit is not written (CONFLICT, with their
text in the error details). Nobody there, a dismissal or the timeout is CANCELLED:
never treat that as approval. Text files up to 200,000 characters."""


@tool(
    "review_and_edit_file",
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
async def review_and_edit_file(args: FileReviewArgs, ctx: ToolContext) -> dict[str, Any]:
    return await review_file(ctx, args, feedback=False)

"""review_with_feedback_content: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a draft (not a file yet) to the user: they pass it, edit it, or give feedback.

On feedback, redo the draft following it and review again; on edit, use their text.
CANCELLED (no answer, dismissed, timeout) is never approval."""

review_with_feedback_content = review_tool(
    "review_with_feedback_content", DESCRIPTION, file=False, feedback=True
)

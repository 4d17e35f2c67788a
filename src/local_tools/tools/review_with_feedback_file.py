"""review_with_feedback_file: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a file to the user for review: they pass it, edit it, or give feedback.

On feedback, regenerate the file following it and review again. On edit their text
is written and returned with a diff. CANCELLED (no answer, dismissed, timeout) is
never approval."""

review_with_feedback_file = review_tool(
    "review_with_feedback_file", DESCRIPTION, file=True, feedback=True
)

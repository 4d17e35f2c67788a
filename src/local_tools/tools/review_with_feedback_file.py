"""review_with_feedback_file: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a file to the user for review: they pass it, edit it, or give feedback.

Like review_and_edit_file, with a third answer: feedback, the user's words on
what to change. On feedback, regenerate the file following it and review again.
On edit, their text is written to the file and returned with a diff. Nobody
there, a dismissal or the timeout is CANCELLED: never treat that as approval."""

review_with_feedback_file = review_tool(
    "review_with_feedback_file", DESCRIPTION, file=True, feedback=True
)

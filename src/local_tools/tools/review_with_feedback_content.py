"""review_with_feedback_content: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a draft (not a file yet) to the user: they pass it, edit it, or give feedback.

Like review_and_edit_content, with a third answer: feedback, the user's words
on what to change. On feedback, redo the draft following it and review again;
on edit, use their text. Nobody there, a dismissal or the timeout is CANCELLED:
never treat that as approval."""

review_with_feedback_content = review_tool(
    "review_with_feedback_content", DESCRIPTION, file=False, feedback=True
)

"""review_and_edit_content: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a draft (not a file yet) to the user: they pass it or edit it.

For text you generated: a PRD, a design, a plan. On edit the result has their text
and a diff: use it from then on. CANCELLED (no answer, dismissed, timeout) is never
approval."""

review_and_edit_content = review_tool(
    "review_and_edit_content", DESCRIPTION, file=False, feedback=False
)

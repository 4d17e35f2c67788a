"""review_and_edit_content: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a draft (not a file yet) to the user: they pass it or edit it.

For text you generated and have not saved: a PRD, a design, a plan. The user
sees it with your title and prompt and answers pass or edit; on edit the result
has their text (content) and a diff: use it from then on. Nobody there, a
dismissal or the timeout is CANCELLED: never treat that as approval."""

review_and_edit_content = review_tool(
    "review_and_edit_content", DESCRIPTION, file=False, feedback=False
)

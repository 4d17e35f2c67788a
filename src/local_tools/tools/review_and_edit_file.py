"""review_and_edit_file: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a file to the user for review: they pass it or edit it.

On edit their text is written to the file and returned with a diff: keep their
changes. If the file changed on disk meanwhile, the edit is not written (CONFLICT,
their text in the details). No answer, a dismissal or the timeout is CANCELLED:
never approval. Text files up to 200,000 characters."""

review_and_edit_file = review_tool("review_and_edit_file", DESCRIPTION, file=True, feedback=False)

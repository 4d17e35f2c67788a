"""review_and_edit_file: put a draft to the person for review (see tools/_review.py)."""

from local_tools.tools._review import review_tool

DESCRIPTION = """Show a file to the user for review: they pass it or edit it.

The user sees the file (with your prompt) at the terminal, in their MCP client's
form or in the web console, and answers pass or edit. On edit, their text is
written to the file and returned with a diff: keep their changes. If the file
changed on disk during the review, the edit is not written (CONFLICT, with their
text in the error details). Nobody there, a dismissal or the timeout is CANCELLED:
never treat that as approval. Text files up to 200,000 characters."""

review_and_edit_file = review_tool("review_and_edit_file", DESCRIPTION, file=True, feedback=False)

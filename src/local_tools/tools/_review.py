"""What the four review tools share: put a draft to the person and read their verdict.

A file review needs read:file on the file (besides the tools' declared write:file),
reads it as it is now, shows it, and on "edit" writes the person's text back through
the jail only if the path still leads to the same file and its text did not change
meanwhile (CONFLICT otherwise). Every error after the person answered keeps their
text in details.edited_content, so nothing they wrote is lost. Nobody
to ask, a dismissal and a timeout all end the call CANCELLED, naming why: a review
never passes silently.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import Cancelled, Conflict, InvalidInput, ToolError
from local_tools.core.tool import Args, Hints, Output, Tool, omitted, tool
from local_tools.editing.diff import unified_diff
from local_tools.editing.freshness import file_lock, note_read
from local_tools.editing.textfile import TextFile, encode_text, read_text_file
from local_tools.interact.base import (
    MAX_REVIEW_CHARS,
    NoPersonAvailable,
    QuestionCancelled,
    ReviewAnswer,
    ReviewRequest,
)
from local_tools.lsp.after_change import (
    DIAGNOSTICS_DESCRIPTION,
    DiagnosticsReport,
    with_diagnostics,
)
from local_tools.tools._common import file_subjects, path_changes, path_subject, shown_path

__all__ = [
    "MAX_REVIEW_CHARS",
    "REVIEW_TOOL_TIMEOUT",
    "ContentReviewArgs",
    "FileReviewArgs",
    "ReviewOutput",
    "render_review",
    "review_content",
    "review_file",
    "review_tool",
]

REVIEW_TOOL_TIMEOUT = 3600.0 + 60.0  # the runner's backstop; [review] timeout decides


class FileReviewArgs(Args):
    path: str = Field(description="The text file to review, inside the workspace.")
    prompt: str = Field(
        "", max_length=4000, description="What to tell the user: what it is, what to check."
    )


class ContentReviewArgs(Args):
    content: str = Field(
        min_length=1,
        max_length=MAX_REVIEW_CHARS,
        description="The draft to review (Markdown or plain text).",
    )
    title: str = Field(
        min_length=1, max_length=200, description='What the draft is, e.g. "PRD: search page".'
    )
    prompt: str = Field(
        "", max_length=4000, description="What to tell the user: what it is, what to check."
    )

    @field_validator("title")
    @classmethod
    def _title_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the title is empty")
        return value.strip()


class ReviewOutput(Output):
    decision: str = Field(description='"pass", "edit" or "feedback".')
    title: str = Field(description="The draft's title (a file's path).")
    path: str = omitted(description="The file reviewed (file reviews).")
    changed: bool = Field(description="Whether the person changed the text.")
    content: str = omitted(description="The text after the person's edit (edit only).")
    diff: str = omitted(description="The person's edit as a unified diff (edit only).")
    feedback: str = omitted(description="The person's feedback (feedback only).")
    message: str = Field(description="What to do next.")
    diagnostics: DiagnosticsReport = omitted(description=DIAGNOSTICS_DESCRIPTION)


_NEXT = {
    "pass": "The person approved it as it is: carry on.",
    "edit": "The person edited it: use their text (content) from now on; do not undo "
    "their changes.",
    "feedback": "The person wants changes: redo the draft following their feedback, then "
    "ask for a review again.",
}


async def review_file(ctx: ToolContext, args: FileReviewArgs, *, feedback: bool) -> dict[str, Any]:
    # The person is shown the file and the model gets it back edited: a read, as
    # read_file's, besides the write the tool declares.
    subjects = file_subjects(ctx, args.path)
    await ctx.authorize("read:file", subjects, summary=f"review {shown_path(ctx, args.path)}")
    tf = await asyncio.to_thread(read_text_file, ctx.jail, args.path)
    shown = ctx.jail.display(tf.real)
    if shown not in subjects:  # the path led elsewhere once checked: check where it led
        for permission in ("read:file", "write:file"):
            await ctx.authorize(permission, [shown], summary=f"review {shown}")
    _check_size(tf.text, shown)
    st = os.stat(tf.real)
    note_read(ctx, tf.real, st)  # what the person is shown is what we saw
    identity = (st.st_dev, tf.version[0])  # the inode read, on its device
    request = _request(ctx, shown, tf.text, args.prompt, feedback, path=shown)
    answer = await _ask(ctx, request)
    out = _output(request, answer)
    out["path"] = shown
    if answer.decision == "edit" and answer.content is not None:
        edited = answer.content
        try:
            await asyncio.to_thread(_write_edit, ctx, args.path, tf, identity, edited, shown)
        except ToolError as exc:
            _keeping(exc, shown, edited)
            raise
        except OSError as exc:  # the disk, not the tool: still keep their text
            failed = ToolError(f"{shown} could not be written ({exc}).")
            raise _keeping(failed, shown, edited) from exc
    return out


async def review_content(
    ctx: ToolContext, args: ContentReviewArgs, *, feedback: bool
) -> dict[str, Any]:
    request = _request(ctx, args.title, args.content, args.prompt, feedback, path=None)
    return _output(request, await _ask(ctx, request))


def render_review(out: dict[str, Any]) -> str:
    what = out.get("path") or out.get("title", "")
    head = f"Review of {what}: {out.get('decision')}. {out.get('message', '')}"
    if out.get("decision") == "edit":
        return with_diagnostics(f"{head}\n{out.get('diff', '')}", out)
    if out.get("decision") == "feedback":
        return f"{head}\nFeedback:\n{out.get('feedback', '')}"
    return head


def _request(
    ctx: ToolContext, title: str, content: str, prompt: str, feedback: bool, path: str | None
) -> ReviewRequest:
    return ReviewRequest(
        title=title,
        content=content,
        prompt=prompt.strip(),
        feedback=feedback,
        path=path,
        tool=ctx.tool,
        user_id=ctx.user_id,
        timeout=ctx.config.review.timeout,
    )


def _check_size(text: str, shown: str) -> None:
    if len(text) > MAX_REVIEW_CHARS:
        raise InvalidInput(
            f"{shown} has {len(text)} characters; a review shows at most {MAX_REVIEW_CHARS}. "
            "Split it, or ask the person to look at it with the question tool."
        )


async def _ask(ctx: ToolContext, request: ReviewRequest) -> ReviewAnswer:
    what = request.path or f"“{request.title}”"
    ask = getattr(ctx.asker, "review", None)
    nobody = (
        f"Nobody can review {what} here: no person is reachable through this client "
        "(no terminal, no MCP form support, no open web console). Nothing was passed or "
        "changed. Ask the user to open the web console (local-tools serve http) and call "
        "again, or show them the draft in your reply."
    )
    if ask is None:
        raise Cancelled(nobody)
    limit = request.timeout
    try:
        # The asker's own wait ends first where it keeps one (the web console); this
        # bounds the others (an MCP client that never answers).
        return await asyncio.wait_for(ask(request), limit + 5.0)
    except NoPersonAvailable as exc:
        raise Cancelled(f"{nobody} ({exc})") from None
    except QuestionCancelled as exc:
        raise Cancelled(
            f"The user dismissed the review of {what} ({exc}). Nothing was passed or "
            "changed; do not ask again at once: ask what they want, or stop and explain."
        ) from None
    except (TimeoutError, asyncio.TimeoutError):
        raise Cancelled(
            f"Nobody reviewed {what} within {limit:g} s ([review] timeout). Nothing was "
            "passed or changed."
        ) from None


def _output(request: ReviewRequest, answer: ReviewAnswer) -> dict[str, Any]:
    out: dict[str, Any] = {
        "decision": answer.decision,
        "title": request.title,
        "changed": answer.decision == "edit",
        "message": _NEXT[answer.decision],
    }
    if answer.decision == "edit" and answer.content is not None:
        out["content"] = answer.content
        out["diff"] = unified_diff(request.content, answer.content, request.path or "draft")
    if answer.decision == "feedback":
        out["feedback"] = answer.feedback
    return out


def _keeping(exc: ToolError, shown: str, edited: str) -> ToolError:
    """`exc` with the person's edited text in its details (said once in its message)."""
    if "edited_content" not in exc.details:
        exc.message = (
            f"{exc.message} The person's edit of {shown} was not written; their edited "
            "text is in details.edited_content: do not lose it."
        )
        exc.args = (exc.message,)
    exc.details = {"path": shown, **exc.details, "edited_content": edited}
    return exc


def _write_edit(
    ctx: ToolContext,
    path: str,
    read: TextFile,
    identity: tuple[int, int],
    after: str,
    shown: str,
) -> None:
    """Write the person's text to the file they were shown, unless the path now leads
    elsewhere (a symlink repointed, the file replaced) or the text changed meanwhile."""
    with file_lock(read.real):
        real = ctx.jail.resolve(path, write=True)
        now = read_text_file(ctx.jail, path) if real == read.real else None
        if now is None or now.real != read.real or _identity(now) != identity:
            raise Conflict(
                f"{shown} is no longer the file the person reviewed (the path was replaced "
                "or now leads elsewhere), so their edit was not written. Their edited text "
                "is in details.edited_content: check the path, or ask them to review again.",
                details={"path": shown, "edited_content": after},
            )
        # The text decides, not the mtime: a save of the same text loses nothing.
        if now.text != read.text:
            raise Conflict(
                f"{shown} changed on disk while it was under review, so the person's edit "
                "was not written over it. Their edited text is in details.edited_content: "
                "read the file again and merge, or ask them to review again.",
                details={"path": shown, "edited_content": after},
            )
        ctx.jail.write_atomic(str(now.real), encode_text(now, after))
        note_read(ctx, now.real, os.stat(now.real))
    ctx.record_change(now.real, now.text, after)


def _identity(tf: TextFile) -> tuple[int, int]:
    return (os.stat(tf.real).st_dev, tf.version[0])


def review_tool(name: str, description: str, *, file: bool, feedback: bool) -> Tool:
    """Declare one of the four review tools: of a file (which needs `write:file` on it:
    an edit is written back) or of a draft; with or without the feedback answer."""
    if file:

        async def run_file(args: FileReviewArgs, ctx: ToolContext) -> dict[str, Any]:
            return await review_file(ctx, args, feedback=feedback)

        return tool(
            name,
            args=FileReviewArgs,
            description=description,
            permission="write:file",  # an edit is written back, as the edit tool would
            subjects=path_subject,
            changes=path_changes,
            hints=Hints(read_only=False),
            toolset="review",
            render=render_review,
            output=ReviewOutput,
            timeout=REVIEW_TOOL_TIMEOUT,
        )(run_file)

    async def run_content(args: ContentReviewArgs, ctx: ToolContext) -> dict[str, Any]:
        return await review_content(ctx, args, feedback=feedback)

    return tool(
        name,
        args=ContentReviewArgs,
        description=description,
        hints=Hints(read_only=True),
        toolset="review",
        render=render_review,
        output=ReviewOutput,
        timeout=REVIEW_TOOL_TIMEOUT,
    )(run_content)

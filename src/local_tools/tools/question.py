"""question: ask the person something and wait for the answer.

Through whichever person the call can reach (see DESIGN "Who answers"): the
terminal, MCP elicitation, the web console's queue. With nobody there — a web chat
through openlink — the question comes back as text for the chat to put to the person,
who answers in their next message, as openlink's design has it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import Cancelled
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.interact.base import NoPersonAvailable, QuestionCancelled, QuestionRequest

MAX_OPTIONS = 20


class QuestionArgs(Args):
    question: str = Field(min_length=1, max_length=4000, description="What to ask, in full.")
    options: list[str] = Field(
        default_factory=list,
        max_length=MAX_OPTIONS,
        description="Choices to offer; the user may still answer in their own words.",
    )
    multiple: bool = Field(False, description="Whether several options may be picked.")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty")
        return value.strip()

    @field_validator("options")
    @classmethod
    def _clean_options(cls, value: list[str]) -> list[str]:
        cleaned = [o.strip() for o in value]
        if any(not o or len(o) > 200 for o in cleaned):
            raise ValueError("each option must be 1 to 200 characters")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError("options must be distinct")
        return cleaned


class QuestionOutput(Output):
    answered: bool = Field(
        description="True with the person's answer; false when nobody could be asked here "
        "and the question is for the chat to put to the person."
    )
    question: str = Field(description="The question asked.")
    answer: str = omitted(
        description="The answer as one text: the picked options, then their words."
    )
    choices: list[str] = omitted(description="The options the person picked.")
    text: str | None = Field(None, description="Their own words, if any.")
    options: list[str] = omitted(description="The options offered (when unanswered).")
    message: str = omitted(description="What to do next (when unanswered).")


def _for_the_chat(args: QuestionArgs) -> dict[str, Any]:
    return {
        "answered": False,
        "question": args.question,
        "options": list(args.options),
        "message": "Nobody can answer here right now. Ask the user this question in your "
        "reply (with the options, if any) and continue with their next message.",
    }


def _render(out: dict[str, Any]) -> str:
    if out.get("answered"):
        return f"The user answered: {out.get('answer', '')}"
    lines = [f"[Question for the user] {out.get('question', '')}"]
    lines += [f"  {n}. {o}" for n, o in enumerate(out.get("options") or [], 1)]
    lines.append(str(out.get("message", "")))
    return "\n".join(lines)


DESCRIPTION = """Ask the user a question and wait for the answer (text plus any picked options).

Use it for a decision or fact only the user has; offer options for obvious choices.
Where no one can answer now (a web chat) the result says so: ask in your reply and
continue with their next message. A dismissed question is CANCELLED: do not ask
again at once."""


@tool(
    "question",
    args=QuestionArgs,
    description=DESCRIPTION,
    aliases=("ask_user", "AskUserQuestion"),
    hints=Hints(read_only=True),
    toolset="agent",
    render=_render,
    output=QuestionOutput,
    timeout=3600.0,  # the asker keeps its own, shorter, wait
)
async def question(args: QuestionArgs, ctx: ToolContext) -> dict[str, Any]:
    request = QuestionRequest(
        question=args.question,
        options=tuple(args.options),
        multiple=args.multiple,
        tool=ctx.tool,
        user_id=ctx.user_id,
    )
    ask = getattr(ctx.asker, "question", None)
    if ask is None:  # an asker that only approves permissions: nobody to ask questions
        return _for_the_chat(args)
    try:
        answer = await ask(request)
    except NoPersonAvailable:
        return _for_the_chat(args)
    except QuestionCancelled as exc:
        raise Cancelled(
            f"The user dismissed the question ({exc}). Do not ask it again at once; "
            "continue with what you can, or stop and explain what you need."
        ) from None
    except TimeoutError as exc:
        raise Cancelled(f"The question went unanswered: {exc}.") from None
    parts = [*answer.choices, *([answer.text] if answer.text else [])]
    return {
        "answered": True,
        "question": args.question,
        "answer": "; ".join(parts),
        "choices": list(answer.choices),
        "text": answer.text,
    }

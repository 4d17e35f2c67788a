"""What a person may answer in the web console, checked before it is stored.

The console's answer route hands each answer here with the pending request it is
for: a permission takes a decision, a question its options and/or words, a review a
pass, an edit or feedback. The answer comes back normalised, or BadAnswer says what
is wrong (the route turns it into a 400); nothing reaches the waiting call unchecked.
"""

from __future__ import annotations

from typing import Any

from local_tools.interact.base import MAX_REVIEW_CHARS
from local_tools.interact.pending import PendingItem

__all__ = ["DECISIONS", "MAX_ANSWER_TEXT", "BadAnswer", "validate_answer"]

MAX_ANSWER_TEXT = 10_000
DECISIONS = frozenset({"once", "always", "pattern", "deny"})


class BadAnswer(ValueError):
    """The answer does not fit the request; the message says how."""


def validate_answer(item: PendingItem, answer: Any) -> dict[str, Any]:
    """The answer to store for `item`, normalised; raises BadAnswer with the reason."""
    if not isinstance(answer, dict):
        raise BadAnswer("answer must be an object")
    if item.kind == "permission":
        decision = answer.get("decision")
        if set(answer) != {"decision"} or decision not in DECISIONS:
            raise BadAnswer('a permission answer is {"decision": "once"|"always"|"pattern"|"deny"}')
        if decision == "pattern" and item.payload.get("suggestion") is None:
            raise BadAnswer("this request offers no pattern: answer once, always or deny")
        return {"decision": decision}
    if item.kind == "question":
        if answer.get("cancelled") is True and set(answer) == {"cancelled"}:
            return {"cancelled": True}
        text, choices = answer.get("text"), answer.get("choices", [])
        if set(answer) - {"text", "choices"}:
            raise BadAnswer('a question answer is {"text": str|null, "choices": [str]}')
        if text is not None and not isinstance(text, str):
            raise BadAnswer("text must be a string or null")
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise BadAnswer("choices must be a list of strings")
        options = [str(o) for o in item.payload.get("options") or []]
        unknown = [c for c in choices if c not in options]
        if unknown:
            raise BadAnswer(f"not among the options: {unknown[0]!r}")
        if len(choices) != len(set(choices)):
            raise BadAnswer("a choice is given twice")
        if len(choices) > 1 and not item.payload.get("multiple"):
            raise BadAnswer("this question takes one choice")
        text = (text or "").strip() or None
        if text is not None and len(text) > MAX_ANSWER_TEXT:
            raise BadAnswer(f"the text is longer than {MAX_ANSWER_TEXT} characters")
        if text is None and not choices:
            raise BadAnswer("choose an option or write an answer")
        return {"text": text, "choices": choices}
    if item.kind == "review":
        return _review_answer(item, answer)
    raise BadAnswer(f"unknown request kind {item.kind!r}")


def _review_answer(item: PendingItem, answer: dict[str, Any]) -> dict[str, Any]:
    if answer.get("cancelled") is True and set(answer) == {"cancelled"}:
        return {"cancelled": True}
    decision = answer.get("decision")
    offered = ("pass", "edit", "feedback") if item.payload.get("feedback") else ("pass", "edit")
    if decision not in offered:
        raise BadAnswer(f"a review answer's decision is one of {', '.join(offered)}")
    if decision == "pass":
        if set(answer) != {"decision"}:
            raise BadAnswer('a pass is {"decision": "pass"}')
        return {"decision": "pass"}
    if decision == "edit":
        content = answer.get("content")
        if set(answer) != {"decision", "content"} or not isinstance(content, str):
            raise BadAnswer('an edit is {"decision": "edit", "content": str}')
        if len(content) > MAX_REVIEW_CHARS:
            raise BadAnswer(f"the edited text is longer than {MAX_REVIEW_CHARS} characters")
        _need_unicode(content, "the edited text")
        if content == item.payload.get("content"):
            raise BadAnswer("the text is unchanged: pass it instead")
        return {"decision": "edit", "content": content}
    words = answer.get("feedback")
    if set(answer) != {"decision", "feedback"} or not isinstance(words, str) or not words.strip():
        raise BadAnswer('feedback is {"decision": "feedback", "feedback": non-empty str}')
    if len(words) > MAX_ANSWER_TEXT:
        raise BadAnswer(f"the feedback is longer than {MAX_ANSWER_TEXT} characters")
    _need_unicode(words, "the feedback")
    return {"decision": "feedback", "feedback": words.strip()}


def _need_unicode(text: str, what: str) -> None:
    """JSON can carry a lone surrogate (half a character): no file or reply can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadAnswer(
            f"{what} is not valid Unicode (a lone surrogate at character {exc.start}): "
            "it cannot be written; fix the text and send it again"
        ) from None

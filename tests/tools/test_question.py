"""question: asked at the terminal, through the web console's queue, or handed back to
the chat when nobody can answer."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.interact.terminal import TerminalAsker

ASK = {"question": "Which database?", "options": ["SQLite", "PostgreSQL", "none"]}


def _terminal(make_toolbox: Any, typed: str) -> tuple[Toolbox, io.StringIO]:
    shown = io.StringIO()
    return make_toolbox(asker=TerminalAsker(io.StringIO(typed), shown)), shown


def test_nobody_to_ask_hands_the_question_to_the_chat(make_toolbox: Any) -> None:
    tb = make_toolbox()
    env = tb.run("question", ASK)
    out = ok(env)
    assert out["answered"] is False
    assert out["options"] == ASK["options"]
    text = tb.render(env)
    assert text.startswith("[Question for the user] Which database?")
    assert "  2. PostgreSQL" in text and "next message" in text


def test_terminal_pick_by_number(make_toolbox: Any) -> None:
    tb, shown = _terminal(make_toolbox, "2\n")
    env = tb.run("question", ASK)
    out = ok(env)
    assert (out["answered"], out["choices"], out["text"]) == (True, ["PostgreSQL"], None)
    assert tb.render(env) == "The user answered: PostgreSQL"
    prompt = shown.getvalue()
    assert "Which database?" in prompt and "  1. SQLite" in prompt and "  3. none" in prompt


def test_terminal_several_numbers_when_multiple(make_toolbox: Any) -> None:
    tb, _ = _terminal(make_toolbox, "3, 1\n")
    out = ok(tb.run("question", {**ASK, "multiple": True}))
    assert out["choices"] == ["SQLite", "none"]  # in the order offered
    assert out["answer"] == "SQLite; none"


def test_terminal_free_text(make_toolbox: Any) -> None:
    tb, _ = _terminal(make_toolbox, "  DuckDB, embedded  \n")
    out = ok(tb.run("question", ASK))
    assert (out["choices"], out["text"], out["answer"]) == (
        [],
        "DuckDB, embedded",
        "DuckDB, embedded",
    )


@pytest.mark.parametrize("typed", ["\n", ""])  # an empty line, or EOF
def test_terminal_dismissed_is_cancelled(make_toolbox: Any, typed: str) -> None:
    tb, _ = _terminal(make_toolbox, typed)
    message = err(tb.run("question", ASK), "CANCELLED")
    assert "dismissed" in message


@pytest.mark.parametrize(
    "args",
    [
        {"question": "   "},
        {"question": "x", "options": ["a", "a"]},
        {"question": "x", "options": [""]},
        {"question": "x", "options": [str(i) for i in range(21)]},
        {"options": ["a"]},
    ],
)
def test_invalid_questions(make_toolbox: Any, args: dict[str, Any]) -> None:
    err(make_toolbox().run("question", args), "INVALID_INPUT")


CONSOLE = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from local_tools.interact.pending import PendingQueue

    queue = PendingQueue(Path(sys.argv[1]))
    answer = json.loads(sys.argv[2])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        queue.beat("question-test", "http://127.0.0.1:1/")
        items = [i for i in queue.pending() if i.kind == "question"]
        if items and queue.answer(items[0].id, answer, by="console test"):
            print(json.dumps(items[0].payload), flush=True)
            break
        time.sleep(0.02)
    queue.console_gone("question-test")
    """
)


@pytest.mark.parametrize(
    ("answer", "choices", "text"),
    [
        ({"choices": ["none", "SQLite"]}, ["SQLite", "none"], None),
        ({"choices": ["Oracle"], "text": "whatever is cheapest"}, [], "whatever is cheapest"),
    ],
)
def test_answered_from_the_console_in_another_process(
    make_toolbox: Any, answer: dict[str, Any], choices: list[str], text: str | None
) -> None:
    tb = make_toolbox()
    console = subprocess.Popen(
        [sys.executable, "-c", CONSOLE, str(tb.pending.path), json.dumps(answer)],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not tb.pending.console_live():
        assert console.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    out = ok(tb.run("question", {**ASK, "multiple": True}))
    payload = json.loads(console.communicate(timeout=30)[0])
    assert payload["question"] == "Which database?" and payload["multiple"] is True
    # Only offered options count as picks; the person's own words are kept as text.
    assert (out["choices"], out["text"]) == (choices, text)


def test_unanswered_in_the_console_is_cancelled(make_toolbox: Any) -> None:
    tb = make_toolbox()
    tb.runner.asker.timeout = 0.3  # type: ignore[union-attr]
    tb.pending.beat("silent", "http://127.0.0.1:1/")
    message = err(tb.run("question", ASK), "CANCELLED")
    assert "unanswered" in message
    assert tb.pending.pending() == []  # withdrawn: the console stops showing it

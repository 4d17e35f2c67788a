"""task_id resumes a task's transcript; model errors keep it; an ask that ends the round
is picked up where it stopped when the call comes again."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools.interact.base import Answer, PermissionRequest
from model_server import KEY_ENV, ScriptedModel, hang, status, text, tool_call


def _task(prompt: str, **args: Any) -> dict[str, Any]:
    return {"description": "remember things", "prompt": prompt, **args}


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_resume_by_task_id(
    make_tb: Any, model: ScriptedModel, wire: Any, tmp_path: Path, api: str
) -> None:
    model.script(text("I will remember 42."), text("You said 42."))
    tb = make_tb(api, stream=api == "anthropic")
    first = ok(tb.run("task", _task("Remember 42."), user_id="alice"))
    second = ok(tb.run("task", _task("What did I say?", task_id=first["task_id"]), user_id="alice"))
    assert second["task_id"] == first["task_id"]
    assert second["answer"] == "You said 42."
    assert second["steps"] == 1  # this call's figures: the budgets start again
    # The second request holds the whole first conversation, then the new prompt.
    resumed = model.requests[1]
    assert wire.user_texts(resumed) == ["Remember 42.", "What did I say?"]
    assert "I will remember 42." in json.dumps(resumed.body["messages"])
    # Kept private, per user, in the state dir.
    [path] = (tmp_path / "state" / "tasks").glob(f"*/{first['task_id']}.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert saved["status"] == "done" and len(saved["messages"]) == 4


def test_another_users_task_is_not_found(make_tb: Any, model: ScriptedModel) -> None:
    model.script(text("mine"))
    tb = make_tb()
    task_id = ok(tb.run("task", _task("Hi."), user_id="alice"))["task_id"]
    message = err(tb.run("task", _task("Tell me.", task_id=task_id), user_id="bob"), "NOT_FOUND")
    assert task_id in message
    err(tb.run("task", _task("x", task_id="../../etc/passwd"), user_id="alice"), "NOT_FOUND")
    assert len(model.requests) == 1


def test_a_500_is_a_network_error_and_the_transcript_is_kept(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model.script(tool_call("read_file", {"path": "a.txt"}), status(500, "overloaded"))
    tb = make_tb()
    env = tb.run("task", _task("Read a.txt."))
    message = err(env, "NETWORK_ERROR")
    task_id = env["error"]["details"]["task_id"]
    assert f"task_id={task_id!r}" in message
    # Resumed later: the read it already made is in the transcript, not made again.
    model.script(text("a.txt says alpha"))
    out = ok(tb.run("task", _task("Go on.", task_id=task_id)))
    assert out["answer"] == "a.txt says alpha"
    last = model.requests[-1]
    assert "alpha" in wire.tool_results(last)[0]
    assert wire.user_texts(last) == ["Read a.txt.", "Go on."]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_model_that_does_not_answer_in_time_is_a_timeout_and_resumable(
    make_tb: Any, model: ScriptedModel, api: str
) -> None:
    model.script(hang(5))
    tb = make_tb(api, False, models={"timeout": 0.5})
    started = time.monotonic()
    env = tb.run("task", _task("Hi."))
    message = err(env, "TIMEOUT")
    assert time.monotonic() - started < 4  # the request was given up, not waited out
    assert "timeout" in message
    task_id = env["error"]["details"]["task_id"]
    model.script(text("here now"))
    assert ok(tb.run("task", _task("Again.", task_id=task_id)))["answer"] == "here now"
    assert model.wait_idle()  # the timed-out request's connection was closed


def test_a_model_that_cannot_be_opened_fails_the_task_and_keeps_it_resumable(
    make_tb: Any, model: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "two words")  # a key never has a space: refused before sending
    tb = make_tb()
    env = tb.run("task", _task("Hi."))
    message = err(env, "EXECUTION_ERROR")
    assert KEY_ENV in message and "two words" not in message
    task_id = env["error"]["details"]["task_id"]
    [path] = (tmp_path / "state" / "tasks").glob(f"*/{task_id}.json")
    assert json.loads(path.read_text())["status"] == "failed"
    assert model.requests == []
    monkeypatch.setenv(KEY_ENV, "sk-fixed")
    model.script(text("hello"))
    assert ok(tb.run("task", _task("Again.", task_id=task_id)))["answer"] == "hello"


def test_429_with_retry_after_then_success(make_tb: Any, model: ScriptedModel) -> None:
    model.script(status(429, "slow down", retry_after=0.3), text("fine"))
    tb = make_tb("anthropic", True, models={"max_retries": 1})
    out = ok(tb.run("task", _task("Hi.")))
    assert (out["status"], out["answer"]) == ("done", "fine")
    first, second = model.requests
    assert second.at - first.at >= 0.25  # the client waited as the server said


class RoundEnded(BaseException):
    """What the MCP transport raises to end a round and ask the person (2026-07-28)."""


class AsksInTwoRounds:
    """Ends the first round to ask; answers "once" when the call comes again."""

    def __init__(self) -> None:
        self.rounds = 0

    async def ask(self, request: PermissionRequest) -> Answer:
        self.rounds += 1
        if self.rounds == 1:
            raise RoundEnded("input required")
        return "once"


def test_an_ask_that_ends_the_round_resumes_at_the_pending_call(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model.script(
        tool_call("read_file", {"path": "a.txt"}),
        tool_call("write_file", {"path": "b.txt", "content": "beta\n"}),
        text("wrote b.txt"),
    )
    tb = make_tb(permissions={"write:file": "ask"})
    person = AsksInTwoRounds()
    args = _task("Copy with a change.")
    with pytest.raises(RoundEnded):
        tb.run("task", args, asker=person)
    assert len(model.requests) == 2 and not (workspace / "b.txt").exists()
    # The client re-sends the same call: the write is retried (and answered), the model
    # is not asked again for the turns it already took.
    out = ok(tb.run("task", args, asker=person))
    assert out["answer"] == "wrote b.txt"
    assert (workspace / "b.txt").read_text() == "beta\n"
    assert len(model.requests) == 3
    assert wire.user_texts(model.requests[2]) == ["Copy with a change."]
    assert len(wire.tool_results(model.requests[2])) == 2
    # Only that very call resumes it: the same arguments later start a new task.
    model.script(text("new"))
    again = ok(tb.run("task", args, asker=person))
    assert again["task_id"] != out["task_id"]


def test_budgets_per_call_only_lower(make_tb: Any, model: ScriptedModel) -> None:
    model.script(*(tool_call("list_dir", {"path": "."}, text=f"turn {n}") for n in range(3)))
    tb = make_tb(task={"max_steps": 2})
    started = time.monotonic()
    out = ok(tb.run("task", _task("Loop.", max_steps=50)))
    assert (out["status"], out["budget"], out["steps"]) == ("budget", "steps", 2)
    assert time.monotonic() - started < 20


def test_old_transcripts_are_pruned(make_tb: Any, model: ScriptedModel, tmp_path: Path) -> None:
    model.script(text("one"), text("two"))
    tb = make_tb()
    old_id = ok(tb.run("task", _task("Old.")))["task_id"]
    [old] = (tmp_path / "state" / "tasks").glob(f"*/{old_id}.json")
    month_ago = time.time() - 31 * 86400
    os.utime(old, (month_ago, month_ago))
    ok(tb.run("task", _task("New.")))  # a new transcript prunes the folder
    assert not old.exists()
    err(tb.run("task", _task("Again?", task_id=old_id)), "NOT_FOUND")

"""Budgets: steps, tokens and wall time each end a task with status "budget", naming it."""

from __future__ import annotations

import time
from typing import Any

from envelopes import ok
from model_server import ScriptedModel, hang, text, tool_call


def _task(**args: Any) -> dict[str, Any]:
    return {"description": "busy work", "prompt": "Keep listing.", **args}


def test_steps(make_tb: Any, model: ScriptedModel) -> None:
    model.script(*(tool_call("list_dir", {"path": "."}, text=f"turn {n}") for n in range(5)))
    out = ok(make_tb().run("task", _task(max_steps=3)))
    assert (out["status"], out["budget"], out["steps"]) == ("budget", "steps", 3)
    assert out["answer"] == "turn 2"  # the last thing it said
    assert "steps budget" in out["message"] and out["task_id"] in out["message"]
    assert model.remaining() == 2


def test_tokens(make_tb: Any, model: ScriptedModel) -> None:
    turns = (
        tool_call("list_dir", {"path": "."}, text=f"turn {n}", input_tokens=600, output_tokens=10)
        for n in range(5)
    )
    model.script(*turns)
    out = ok(make_tb("anthropic", True).run("task", _task(max_tokens=1000)))
    assert (out["status"], out["budget"]) == ("budget", "tokens")
    assert out["tokens"] == {"input": 1200, "output": 20}  # checked before each turn
    assert out["steps"] == 2
    assert "tokens budget" in out["message"]


def test_time_cuts_the_request_in_flight(make_tb: Any, model: ScriptedModel) -> None:
    model.script(tool_call("list_dir", {"path": "."}, text="looking"), hang(20))
    started = time.monotonic()
    out = ok(make_tb().run("task", _task(max_seconds=1.0)))
    assert time.monotonic() - started < 5
    assert (out["status"], out["budget"], out["answer"]) == ("budget", "time", "looking")
    # The request it was waiting on was closed, not left hanging.
    deadline = time.monotonic() + 5
    while not model.requests[1].disconnected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert model.requests[1].disconnected
    assert model.wait_idle()


def test_a_time_cut_task_resumes(make_tb: Any, model: ScriptedModel, wire: Any) -> None:
    model.script(tool_call("list_dir", {"path": "."}), hang(20))
    tb = make_tb()
    first = ok(tb.run("task", _task(max_seconds=0.5)))
    model.script(text("resumed"))
    out = ok(tb.run("task", _task(task_id=first["task_id"], prompt="Finish.")))
    assert out["answer"] == "resumed"
    assert wire.user_texts(model.requests[-1]) == ["Keep listing.", "Finish."]

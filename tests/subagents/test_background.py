"""Background tasks: listed, polled and killed through the process tools."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from envelopes import err, ok
from local_tools import Toolbox
from model_server import ScriptedModel, hang, status, text, tool_call


def _task(**args: Any) -> dict[str, Any]:
    return {"description": "look around", "prompt": "Read a.txt.", "background": True, **args}


def _task_threads(timeout: float = 2.0) -> list[threading.Thread]:
    """The task threads still alive after `timeout` (an ended task's thread returns just
    after it says it is done)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [t for t in threading.enumerate() if t.name.startswith("local-tools-task_")]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def _requested(model: ScriptedModel, count: int, timeout: float = 10.0) -> bool:
    """Whether `count` requests arrived in time (the SDK loads on a task's first call)."""
    deadline = time.monotonic() + timeout
    while len(model.requests) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(model.requests) >= count


def _disconnected(model: ScriptedModel, index: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(model.requests) > index and model.requests[index].disconnected:
            return True
        time.sleep(0.02)
    return False


def test_poll_until_done(make_tb: Any, model: ScriptedModel, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model.script(tool_call("read_file", {"path": "a.txt"}), text("a.txt says alpha"))
    tb: Toolbox = make_tb("anthropic", True)
    started = ok(tb.run("task", _task()))
    assert started["status"] == "running"
    task_id = started["process_id"]
    assert task_id == started["task_id"]
    out = ok(tb.run("process_output", {"process_id": task_id, "block": True, "timeout": 20}))
    assert (out["status"], out["exit_code"]) == ("exited", 0)
    assert out["stdout"].startswith("→ read_file path=a.txt\n")
    assert "a.txt says alpha" in out["stdout"] and "[task done" in out["stdout"]
    [listed] = ok(tb.run("process_list", {}))["processes"]
    assert (listed["process_id"], listed["command"]) == (task_id, "task: look around")
    assert listed["pid"] == 0
    # Another user does not see it.
    assert ok(tb.run("process_list", {}, user_id="bob"))["processes"] == []
    err(tb.run("process_kill", {"process_id": task_id}, user_id="bob"), "NOT_FOUND")
    # A task takes no input.
    message = err(tb.run("process_input", {"process_id": task_id, "input": "x"}), "EXECUTION_ERROR")
    assert "task" in message
    # The transcript resumes it in the foreground.
    model.script(text("still alpha"))
    again = ok(tb.run("task", {**_task(), "background": False, "task_id": task_id}))
    assert again["answer"] == "still alpha"
    assert not _task_threads()


def test_kill_mid_request(make_tb: Any, model: ScriptedModel) -> None:
    model.script(hang(30))
    tb: Toolbox = make_tb()
    task_id = ok(tb.run("task", _task()))["process_id"]
    assert _requested(model, 1)
    out = ok(tb.run("process_output", {"process_id": task_id, "block": True, "timeout": 0.3}))
    assert out["status"] == "running"
    killed = ok(tb.run("process_kill", {"process_id": task_id}))
    assert killed["killed"] is True
    assert (killed["status"], killed["killed_by"]) == ("exited", "kill")
    # The request in flight was closed by the client; nothing is left running.
    assert _disconnected(model, 0)
    assert model.wait_idle()
    assert not _task_threads()
    [listed] = ok(tb.run("process_list", {}))["processes"]
    assert listed["killed_by"] == "kill"
    assert "killed" in tb.render(tb.run("process_list", {}))


def test_max_concurrent_counts_background_tasks(make_tb: Any, model: ScriptedModel) -> None:
    model.script(hang(30))
    tb: Toolbox = make_tb(task={"max_concurrent": 1})
    task_id = ok(tb.run("task", _task()))["process_id"]
    assert _requested(model, 1)
    message = err(tb.run("task", {**_task(), "background": False}), "EXECUTION_ERROR")
    assert task_id in message and "max_concurrent" in message
    ok(tb.run("process_kill", {"process_id": task_id}))
    # Its slot is free again.
    model.script(text("now"))
    assert ok(tb.run("task", {**_task(), "background": False}))["answer"] == "now"


def test_ending_the_session_and_closing_stop_tasks(make_tb: Any, model: ScriptedModel) -> None:
    model.script(hang(30), hang(30))
    tb: Toolbox = make_tb()
    ok(tb.run("task", _task(), session_id="s1"))
    ok(tb.run("task", _task(), session_id="s2"))
    assert _requested(model, 2)
    tb.end_session("default", "s1")
    assert _disconnected(model, 0) or _disconnected(model, 1)
    tb.close()
    assert _disconnected(model, 0) and _disconnected(model, 1)
    assert not _task_threads()
    assert model.wait_idle()


def test_a_failed_background_task_exits_1_and_resumes(
    make_tb: Any, model: ScriptedModel, wire: Any
) -> None:
    model.script(status(500, "down for maintenance"))
    tb: Toolbox = make_tb()
    task_id = ok(tb.run("task", _task()))["process_id"]
    out = ok(tb.run("process_output", {"process_id": task_id, "block": True, "timeout": 20}))
    assert (out["status"], out["exit_code"]) == ("exited", 1)
    assert "[task failed: NETWORK_ERROR" in out["stdout"] and task_id in out["stdout"]
    model.script(text("back"))
    again = ok(tb.run("task", {**_task(), "background": False, "task_id": task_id}))
    assert again["answer"] == "back"
    assert wire.user_texts(model.requests[-1]) == ["Read a.txt.", "Read a.txt."]

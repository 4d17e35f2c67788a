"""task: a subagent on a scripted model, its tools run through the caller's runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.interact.base import Answer, PermissionRequest
from model_server import ScriptedModel, bad_tool_call, text, tool_call, tool_calls


class Answering:
    """A person at the caller's door: answers every ask with `answer`."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.asked.append(request)
        return self.answer


def _task(prompt: str = "Find out what a.txt says.", **args: Any) -> dict[str, Any]:
    return {"description": "read a file", "prompt": prompt, **args}


@pytest.mark.parametrize(("api", "stream"), [("openai", True), ("anthropic", False)])
def test_reads_a_file_and_answers(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any, api: str, stream: bool
) -> None:
    (workspace / "a.txt").write_text("the launch code is 4711\n")
    model.script(tool_call("read_file", {"path": "a.txt"}), text("a.txt says: 4711"))
    tb = make_tb(api, stream)
    env = tb.run("task", _task())
    out = ok(env)
    assert out["status"] == "done"
    assert out["answer"] == "a.txt says: 4711"
    assert out["task_id"].startswith("task_")
    assert (out["steps"], out["tool_calls"]) == (2, 1)
    assert out["tokens"]["input"] > 0 and out["tokens"]["output"] > 0
    first, second = model.requests
    assert wire.user_texts(first) == ["Find out what a.txt says."]
    assert "subagent" in wire.system_text(first) and str(workspace) in wire.system_text(first)
    # The second request carries the file's text as the tool's result, line-numbered as
    # read_file renders it for a model.
    [result] = wire.tool_results(second)
    assert "the launch code is 4711" in result
    # What the caller's model reads: the answer, with the figures.
    rendered = tb.render(env)
    assert "a.txt says: 4711" in rendered and out["task_id"] in rendered
    assert model.wait_idle()


def test_a_denied_tool_is_answered_and_the_model_goes_on(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any
) -> None:
    (workspace / "secret.txt").write_text("hunter2\n")
    model.script(tool_call("read_file", {"path": "secret.txt"}), text("I may not read it."))
    tb = make_tb(permissions={"read:file": {"*": "allow", "secret.txt": "deny"}})
    out = ok(tb.run("task", _task("What is in secret.txt?")))
    assert (out["status"], out["answer"]) == ("done", "I may not read it.")
    [result] = wire.tool_results(model.requests[1])
    assert result.startswith("Error [PERMISSION_DENIED]")
    assert "hunter2" not in result


@pytest.mark.parametrize(("answer", "written"), [("once", True), ("deny", False)])
def test_an_ask_goes_to_the_callers_person(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any, answer: str, written: bool
) -> None:
    target = workspace / "notes.txt"
    model.script(
        tool_call("write_file", {"path": "notes.txt", "content": "from the subagent\n"}),
        text("done" if written else "the person said no"),
    )
    tb = make_tb(permissions={"write:file": "ask"})
    person = Answering(answer)  # type: ignore[arg-type]
    out = ok(tb.run("task", _task("Write notes.txt."), asker=person))
    assert out["status"] == "done"
    [request] = person.asked
    assert (request.tool, request.subject) == ("write_file", "notes.txt")
    assert target.exists() is written
    [result] = wire.tool_results(model.requests[1])
    assert result.startswith("Error [PERMISSION_DENIED]") is not written


def test_explore_cannot_edit(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any
) -> None:
    target = workspace / "a.txt"
    target.write_text("old\n")
    model.script(
        tool_call("edit", {"path": "a.txt", "old_string": "old", "new_string": "new"}),
        text("I cannot edit."),
    )
    tb = make_tb()
    out = ok(tb.run("task", _task("Change old to new in a.txt.", agent="explore")))
    assert out["answer"] == "I cannot edit."
    assert target.read_text() == "old\n"
    first, second = model.requests
    assert wire.offered(first) == {
        "read_file", "read_many_files", "list_dir", "file_stat", "glob", "grep", "web_fetch",
        "lsp",  # [lsp] enabled, the default
    }  # fmt: skip
    [result] = wire.tool_results(second)
    assert result.startswith("Error [UNKNOWN_TOOL]") and "read_file" in result


def test_general_never_gets_the_callers_own_tools(
    make_tb: Any, model: ScriptedModel, wire: Any
) -> None:
    model.script(text("hi"))
    ok(make_tb().run("task", _task("Say hi.")))
    tools = wire.offered(model.requests[0])
    assert {"read_file", "edit", "exec_cmd", "grep"} <= tools
    # Nesting is off by default ([task] max_depth = 1); finder, batch and the caller's
    # todo list would reach past the agent's set or the caller's own state.
    for name in ("task", "find_tools", "call_tool", "batch", "todo_write", "todo_read"):
        assert name not in tools


def test_nesting_when_max_depth_allows(make_tb: Any, model: ScriptedModel, wire: Any) -> None:
    model.script(
        tool_call("task", {"description": "inner", "prompt": "Say hi."}),
        text("inner hi"),  # the inner subagent (depth 2) answers
        text("outer got: inner hi"),
    )
    tb = make_tb(task={"max_depth": 2})
    out = ok(tb.run("task", _task("Delegate.")))
    assert out["answer"] == "outer got: inner hi"
    outer, inner, last = model.requests
    assert "task" in wire.offered(outer)
    assert "task" not in wire.offered(inner)  # depth 2 of 2: no deeper
    assert "inner hi" in wire.tool_results(last)[0]


def test_a_malformed_tool_call_is_answered_and_the_loop_goes_on(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model.script(
        bad_tool_call("read_file", '{"path": '),
        tool_call("read_file", {"path": "a.txt"}),
        text("alpha"),
    )
    out = ok(make_tb("anthropic", True).run("task", _task()))
    assert (out["status"], out["answer"], out["steps"]) == ("done", "alpha", 3)
    [bad] = wire.tool_results(model.requests[1])
    assert bad.startswith("Error [INVALID_INPUT]") and "nothing was run" in bad
    assert "alpha" in wire.tool_results(model.requests[2])[1]


def test_calls_of_one_turn_run_concurrently_and_are_audited_under_the_task(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any
) -> None:
    (workspace / "a.txt").write_text("A\n")
    (workspace / "b.txt").write_text("B\n")
    model.script(
        tool_calls(("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})),
        tool_call("list_dir", {"path": "."}),
        text("A and B"),
    )
    tb: Toolbox = make_tb()
    env = tb.run("task", _task("Read both."), user_id="alice")
    ok(env)
    results = wire.tool_results(model.requests[1])
    assert "A" in results[0] and "B" in results[1]  # in the calls' order
    assert tb.audit is not None
    parent = env["meta"]["call_id"]
    rows = tb.audit.query(user="alice", limit=20)
    calls = {r.call_id: r.tool for r in rows}
    assert calls[parent] == "task"
    assert {calls[f"{parent}.1"], calls[f"{parent}.2"]} == {"read_file"}
    assert calls[f"{parent}.3"] == "list_dir"
    assert all(r.user_id == "alice" for r in rows)


def test_no_model_configured_says_how_to_configure_one(make_toolbox: Any) -> None:
    from local_tools.tools.task import task

    tb = make_toolbox(None, tools=[task] if task.name not in _builtin_names() else [])
    assert "task" not in {t["name"] for t in tb.tools(profile="full")}
    message = err(tb.run("task", _task()), "EXECUTION_ERROR")
    assert "[models." in message and "base_url" in message


def test_unknown_agent_and_model_are_named(make_tb: Any, model: ScriptedModel) -> None:
    tb = make_tb()
    message = err(tb.run("task", _task(agent="wizard")), "INVALID_INPUT")
    assert "explore" in message and "general" in message
    message = err(tb.run("task", _task(model="gpt-9")), "INVALID_INPUT")
    assert "test" in message
    assert model.requests == []


def test_a_configured_agent(make_tb: Any, model: ScriptedModel, wire: Any) -> None:
    model.script(text("ok"))
    agents = {"grepper": {"tools": ["grep", "glob"], "prompt": "Only search.", "description": "x"}}
    tb = make_tb(task={"agents": agents})
    ok(tb.run("task", _task(agent="grepper")))
    assert wire.offered(model.requests[0]) == {"grep", "glob"}
    assert "Only search." in wire.system_text(model.requests[0])


def _builtin_names() -> set[str]:
    from local_tools.tools import builtin_tools

    return {t.name for t in builtin_tools()}

"""What a subagent may not do, whatever its model asks: change files as a read-only
agent, run more than MAX_CALLS_PER_TURN calls a turn (or more than PARALLEL at once),
make its usage negative to dodge the token budget, see other users' tasks in the
max_concurrent refusal; and a damaged transcript is named as damaged."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.core.tool import Args, Hints, tool
from local_tools.subagents.agents import read_only_refusal
from local_tools.subagents.loop import MAX_CALLS_PER_TURN, PARALLEL
from model_server import ScriptedModel, hang, model_config, text, tool_call, tool_calls


def _task(prompt: str = "Look around.", **args: Any) -> dict[str, Any]:
    return {"description": "look around", "prompt": prompt, **args}


def test_explore_refuses_a_call_that_would_change_files(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any
) -> None:
    source = "def foo():\n    return 1\n\n\nfoo()\n"
    (workspace / "a.py").write_text(source)
    rename = {"operation": "rename", "path": "a.py", "line": 1, "column": 5}
    model.script(
        tool_calls(("lsp", {**rename, "new_name": "bar", "apply": True})),
        text("I may not rename."),
    )
    out = ok(make_tb().run("task", _task("Rename foo to bar.", agent="explore")))
    assert out["answer"] == "I may not rename."
    assert (workspace / "a.py").read_text() == source
    [result] = wire.tool_results(model.requests[1])
    assert result.startswith("Error [PERMISSION_DENIED]: this lsp call would change files")
    assert "explore agent is read-only" in result


@pytest.mark.parametrize("name", ["auditor", "explore"])
def test_a_configured_read_only_agent_refuses_writes(
    make_tb: Any, model: ScriptedModel, workspace: Path, wire: Any, name: str
) -> None:
    # Its own tools include write_file; read_only still refuses it (and an `explore` of
    # the user's own, replacing the built-in, stays read-only).
    target = workspace / "a.txt"
    target.write_text("old\n")
    model.script(
        tool_call("write_file", {"path": "a.txt", "content": "new\n", "overwrite": True}),
        text("Refused, as it should be."),
    )
    agent = {"tools": ["read_file", "write_file"], "read_only": name == "auditor"}
    tb = make_tb(task={"agents": {name: agent}})
    out = ok(tb.run("task", _task("Overwrite a.txt.", agent=name)))
    assert out["answer"] == "Refused, as it should be."
    assert target.read_text() == "old\n"
    [result] = wire.tool_results(model.requests[1])
    assert result.startswith("Error [PERMISSION_DENIED]") and "read-only" in result


def test_the_read_only_rule(make_tb: Any) -> None:
    tb: Toolbox = make_tb()
    tools = {t.name: t for t in tb.runner.registry.enabled()}
    ctx: Any = None  # neither lsp nor web_fetch looks at it
    lsp, web_fetch, kill = tools["lsp"], tools["web_fetch"], tools["process_kill"]
    where = {"path": "a.py", "line": 1, "column": 5}
    # Reads: a tool that only reads, and lsp's lookups (a rename that only previews too).
    assert read_only_refusal(web_fetch, {"url": "https://example.com"}, ctx) is None
    assert read_only_refusal(lsp, {"operation": "hover", **where}, ctx) is None
    assert read_only_refusal(lsp, {"operation": "rename", "new_name": "b", **where}, ctx) is None
    # Changes: a rename that applies; a tool that may change things and says not what.
    renames = {"operation": "rename", "new_name": "b", "apply": True, **where}
    assert read_only_refusal(lsp, renames, ctx) == "this lsp call would change files"
    assert read_only_refusal(kill, {"process_id": "p1"}, ctx) == "process_kill may change things"


class ProbeArgs(Args):
    n: int = 0


RUNNING = {"now": 0, "peak": 0, "ran": 0}


@tool("probe", args=ProbeArgs, description="Probe.", hints=Hints(read_only=True))
async def probe(args: ProbeArgs, ctx: Any) -> dict[str, Any]:
    RUNNING["now"] += 1
    RUNNING["ran"] += 1
    RUNNING["peak"] = max(RUNNING["peak"], RUNNING["now"])
    try:
        await asyncio.sleep(0.05)
    finally:
        RUNNING["now"] -= 1
    return {"n": args.n}


def test_a_turn_runs_at_most_25_calls_8_at_a_time(
    make_toolbox: Any, model: ScriptedModel, wire: Any
) -> None:
    RUNNING.update(now=0, peak=0, ran=0)
    many = MAX_CALLS_PER_TURN + 5
    model.script(tool_calls(*(("probe", {"n": n}) for n in range(many))), text("done"))
    tb = make_toolbox(model_config(model), tools=[probe])
    out = ok(tb.run("task", _task()))
    assert (out["status"], out["tool_calls"]) == ("done", MAX_CALLS_PER_TURN)
    assert RUNNING["ran"] == MAX_CALLS_PER_TURN and RUNNING["peak"] == PARALLEL
    results = wire.tool_results(model.requests[1])
    assert len(results) == many  # every call answered, in the turn's order
    assert not any(r.startswith("Error") for r in results[:MAX_CALLS_PER_TURN])
    assert all(
        r.startswith("Error [INVALID_INPUT]: not run: at most 25 calls a turn")
        for r in results[MAX_CALLS_PER_TURN:]
    )


def test_negative_usage_counts_as_none(make_tb: Any, model: ScriptedModel) -> None:
    read = ("read_file", {"path": "a.txt"})
    model.script(
        tool_call(*read, input_tokens=-(10**9), output_tokens=-5),
        tool_call(*read, input_tokens=600, output_tokens=1),
        tool_call(*read, input_tokens=600, output_tokens=1),
        text("never reached"),
    )
    out = ok(make_tb().run("task", _task(max_tokens=1000)))
    assert (out["status"], out["budget"], out["steps"]) == ("budget", "tokens", 3)
    assert out["tokens"] == {"input": 1200, "output": 2}


def _requested(model: ScriptedModel, count: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while len(model.requests) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(model.requests) >= count


def test_max_concurrent_names_only_the_callers_own_tasks(
    make_tb: Any, model: ScriptedModel
) -> None:
    model.script(hang(30))
    tb: Toolbox = make_tb(task={"max_concurrent": 1})
    secret = _task(description="alice's secret plan", background=True)
    mine = ok(tb.run("task", secret, user_id="alice", session_id="a"))["process_id"]
    assert _requested(model, 1)
    theirs = err(tb.run("task", _task(), user_id="bob", session_id="b"), "EXECUTION_ERROR")
    assert "max_concurrent" in theirs and "1 of other sessions or users" in theirs
    assert mine not in theirs and "secret" not in theirs
    own = err(tb.run("task", _task(), user_id="alice", session_id="a"), "EXECUTION_ERROR")
    assert f"{mine} (alice's secret plan)" in own and "other" not in own
    ok(tb.run("process_kill", {"process_id": mine}, user_id="alice", session_id="a"))


DAMAGE: list[tuple[str, Any, str]] = [
    ("not json", "{{{", "it is not JSON"),
    ("a list", lambda good: [good], "the file is a list, not an object"),
    ("a message that is text", lambda good: {**good, "messages": ["hi"]}, "messages[0] is a str"),
    ("messages an object", lambda good: {**good, "messages": {}}, "messages is not a list"),
    ("totals a list", lambda good: {**good, "totals": [1]}, "totals is a list"),
    (
        "a system message",
        lambda good: {**good, "messages": [{**good["messages"][0], "role": "system"}]},
        "messages[0].role is 'system'",
    ),
    (
        "text null",
        lambda good: {**good, "messages": [{**good["messages"][0], "text": None}]},
        "messages[0].text is a NoneType",
    ),
]


@pytest.mark.parametrize(("case", "damage", "where"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_a_damaged_transcript_is_named_as_damaged(
    make_tb: Any, model: ScriptedModel, tmp_path: Path, case: str, damage: Any, where: str
) -> None:
    model.script(text("first"), text("again"))
    tb: Toolbox = make_tb()
    task_id = ok(tb.run("task", _task()))["task_id"]
    folder = tmp_path / "state" / "tasks" / hashlib.sha256(b"default").hexdigest()[:16]
    path = folder / f"{task_id}.json"
    good = json.loads(path.read_text())
    path.write_text(damage if isinstance(damage, str) else json.dumps(damage(good)))
    message = err(tb.run("task", _task("Go on.", task_id=task_id)), "EXECUTION_ERROR")
    assert message.startswith(f"Task {task_id!r} cannot be resumed: its transcript file is")
    assert where in message and "another user" not in message
    assert len(model.requests) == 1  # nothing was sent on from half a transcript

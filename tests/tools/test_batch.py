"""batch: concurrent calls, each through the whole runner, results in order."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from envelopes import err, ok
from local_tools import Args, Toolbox, ToolContext, tool
from local_tools.core.errors import ExecutionError
from local_tools.core.runner import DEFAULT_TOOL_TIMEOUT
from local_tools.tools import builtin_tools
from local_tools.tools.batch import MAX_CALLS, TIMEOUT
from policy_calls import ScriptedAsker
from transports.test_output_schemas import structured


class NapArgs(Args):
    seconds: float = Field(0.0)
    fail: bool = Field(False)


class Naps:
    """A `nap` tool that records which of its calls were cancelled."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []

        @tool("nap", args=NapArgs, toolset="test")
        async def nap(args: NapArgs, ctx: ToolContext) -> dict[str, Any]:
            """Sleep a while, then answer (or fail when asked to)."""
            self.started.append(ctx.call_id)
            try:
                await asyncio.sleep(args.seconds)
            except asyncio.CancelledError:
                self.cancelled.append(ctx.call_id)
                raise
            if args.fail:
                raise ExecutionError("asked to fail")
            return {"slept": args.seconds}

        self.tool = nap


@pytest.fixture
def naps() -> Naps:
    return Naps()


@pytest.fixture
def box(make_toolbox: Any, naps: Naps, workspace: Path) -> Toolbox:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    (workspace / "b.txt").write_text("gamma\n")
    return make_toolbox(tools=[naps.tool])  # type: ignore[no-any-return]


def test_results_come_back_in_order_as_envelopes(box: Toolbox) -> None:
    calls = [
        {"tool": "read_file", "args": {"path": "a.txt"}},
        {"tool": "grep", "args": {"pattern": "gamma"}},
        {"tool": "FileRead", "parameters": {"path": "b.txt"}},  # OpenCode's key, an alias
        {"tool": "list_dir"},
    ]
    env = box.run("batch", {"tool_calls": calls})
    out = ok(env)
    assert (out["succeeded"], out["failed"]) == (4, 0)
    results = out["results"]
    assert [r["meta"]["tool"] for r in results] == ["read_file", "grep", "read_file", "list_dir"]
    assert results[0]["output"]["content"] == "alpha\nbeta\n"
    assert results[2]["output"]["content"] == "gamma\n"
    assert all(r["success"] and set(r) == {"success", "output", "meta"} for r in results)
    batch_id = env["meta"]["call_id"]
    assert [r["meta"]["call_id"] for r in results] == [f"{batch_id}.{n}" for n in range(1, 5)]
    text = box.render(env)
    assert text.startswith("4 calls: 4 succeeded, 0 failed\n--- [1] read_file: ok ---\n1\talpha")
    assert "--- [2] grep: ok ---\nb.txt:\n  1: gamma" in text


def test_one_failure_stops_nothing_else(box: Toolbox) -> None:
    calls = [
        {"tool": "read_file", "args": {"path": "missing.txt"}},
        {"tool": "no_such_tool", "args": {}},
        {"tool": "read_file", "args": {"paht": "a.txt"}},
        {"tool": "nap", "args": {"fail": True}},
        {"tool": "read_file", "args": {"path": "a.txt"}},
    ]
    env = box.run("batch", {"tool_calls": calls})
    out = ok(env)
    codes = [r["error"]["error_code"] if not r["success"] else "ok" for r in out["results"]]
    assert codes == ["NOT_FOUND", "UNKNOWN_TOOL", "INVALID_INPUT", "EXECUTION_ERROR", "ok"]
    assert (out["succeeded"], out["failed"]) == (1, 4)
    assert "--- [2] no_such_tool: failed ---\nError [UNKNOWN_TOOL]: " in box.render(env)


def test_arguments_as_json_text(box: Toolbox) -> None:
    # The HTTP server's XML parameters send the list as text; strict models send args so.
    calls = json.dumps([{"tool": "read_file", "args": json.dumps({"path": "b.txt"})}])
    out = ok(box.run("batch", {"tool_calls": calls}))
    assert out["results"][0]["output"]["content"] == "gamma\n"


@pytest.mark.parametrize(
    ("tool_calls", "expected"),
    [
        ([], "at least 1 item"),
        ([{"tool": "list_dir"}] * (MAX_CALLS + 1), "at most 25 items"),
        ([{"tool": "list_dir"}, {"tool": "Batch", "args": {}}], "tool_calls[1] is a batch"),
        ([{"tool": "read_file", "args": "[1, 2]"}], "must be an object"),
        ([{"tool": "read_file", "args": "{not json"}], "must be an object"),
        ([{"args": {}}], "'tool_calls.0.tool' is required"),
        ([{"tool": "list_dir", "extra": 1}], "'tool_calls.0.extra' is not a parameter"),
        ("nope", "must be a list of {tool, args}"),
    ],
)
def test_bad_input_runs_nothing(box: Toolbox, naps: Naps, tool_calls: Any, expected: str) -> None:
    if isinstance(tool_calls, list) and tool_calls:  # a good call beside the bad: not run
        tool_calls = [*tool_calls, {"tool": "nap"}]
    assert expected in err(box.run("batch", {"tool_calls": tool_calls}), "INVALID_INPUT")
    assert naps.started == []


def test_each_call_is_authorized_on_its_own(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "old.txt").write_text("old\n")
    tb = make_toolbox({"permissions": {"write:file": "deny", "delete:file": "ask"}})
    asker = ScriptedAsker("once")
    calls = [
        {"tool": "write_file", "args": {"path": "new.txt", "content": "x"}},
        {"tool": "read_file", "args": {"path": "a.txt"}},
        {"tool": "file_delete", "args": {"path": "old.txt"}},  # the calls run at once
    ]
    out = ok(tb.run("batch", {"tool_calls": calls}, asker=asker))
    first, second, third = out["results"]
    assert "write:file" in err(first, "PERMISSION_DENIED")
    assert ok(second)["content"] == "alpha\n"
    assert ok(third) and not (workspace / "old.txt").exists()
    # The person was asked about the delete, as if it had been called alone.
    assert [(r.tool, r.permission, r.subject) for r in asker.requests] == [
        ("file_delete", "delete:file", "old.txt")
    ]
    assert not (workspace / "new.txt").exists()
    # Without anyone to ask, an ask is a denial for that call only.
    (workspace / "old.txt").write_text("old\n")
    out = ok(tb.run("batch", {"tool_calls": calls[1:]}))
    assert out["results"][0]["success"]
    err(out["results"][1], "PERMISSION_DENIED")


def test_every_call_is_audited(box: Toolbox) -> None:
    env = box.run(
        "batch",
        {"tool_calls": [{"tool": "list_dir"}, {"tool": "nap", "args": {"fail": True}}]},
        user_id="ann",
    )
    assert box.audit is not None
    records = {r.call_id: r for r in box.audit.query(user="ann")}
    batch_id = env["meta"]["call_id"]
    assert records[batch_id].tool == "batch"
    assert (
        records[f"{batch_id}.1"].tool == "list_dir"
        and records[f"{batch_id}.1"].outcome == "success"
    )
    assert records[f"{batch_id}.2"].error_code == "EXECUTION_ERROR"


def test_twenty_five_calls_run_at_once(box: Toolbox, naps: Naps) -> None:
    calls: list[dict[str, Any]] = [{"tool": "nap", "args": {"seconds": 0.3}} for _ in range(23)]
    calls.insert(5, {"tool": "nap", "args": {"seconds": 1.0}})  # the slow one
    calls.insert(17, {"tool": "nap", "args": {"seconds": 0.1, "fail": True}})
    started = time.monotonic()
    out = ok(box.run("batch", {"tool_calls": calls}))
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 4.0, elapsed  # one after another would take over 7 s
    assert len(out["results"]) == MAX_CALLS
    assert [n for n, r in enumerate(out["results"]) if not r["success"]] == [17]
    assert out["results"][5]["output"] == {"slept": 1.0}
    assert (out["succeeded"], out["failed"]) == (24, 1)


def test_twenty_five_file_reads_at_once(box: Toolbox, workspace: Path) -> None:
    for n in range(MAX_CALLS):
        (workspace / f"f{n}.txt").write_text(f"file {n}\n")
    calls = [{"tool": "read_file", "args": {"path": f"f{n}.txt"}} for n in range(MAX_CALLS)]
    out = ok(box.run("batch", {"tool_calls": calls}))
    assert [r["output"]["content"] for r in out["results"]] == [
        f"file {n}\n" for n in range(MAX_CALLS)
    ]


def test_cancelling_the_batch_cancels_its_calls(box: Toolbox, naps: Naps) -> None:
    calls = [{"tool": "nap", "args": {"seconds": 30}}, {"tool": "nap", "args": {"seconds": 30}}]

    async def scenario() -> None:
        task = asyncio.ensure_future(box.arun("batch", {"tool_calls": calls}))
        for _ in range(200):
            if len(naps.started) == 2:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert sorted(naps.cancelled) == sorted(naps.started) and len(naps.started) == 2
    assert box.audit is not None
    outcomes = {r.call_id: r.error_code for r in box.audit.query(tool="nap")}
    assert set(outcomes) == set(naps.started) and set(outcomes.values()) == {"CANCELLED"}


def test_batch_outlasts_every_call_it_can_make() -> None:
    limits = [t.timeout or DEFAULT_TOOL_TIMEOUT for t in builtin_tools() if t.name != "batch"]
    assert max(limits) < TIMEOUT
    batch = next(t for t in builtin_tools() if t.name == "batch")
    assert batch.timeout == TIMEOUT and batch.permission is None and batch.toolset == "agent"


def test_a_custom_tool_output_reads_as_json(box: Toolbox) -> None:
    text = box.render(box.run("batch", {"tool_calls": [{"tool": "nap"}]}))
    assert text == '1 calls: 1 succeeded, 0 failed\n--- [1] nap: ok ---\n{"slept": 0.0}'


def test_every_output_shape_matches_the_declared_schema(box: Toolbox) -> None:
    calls = [
        {"tool": "read_file", "args": {"path": "a.txt"}},
        {"tool": "read_file", "args": {"path": "missing.txt"}},
        {"tool": "nope"},
    ]
    out = structured(box, "batch", {"tool_calls": calls})
    assert (out["succeeded"], out["failed"]) == (1, 2)

"""The runner's contract: every call returns an envelope, every failure has a code."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from envelopes import err, ok
from local_tools import Args, Hints, Toolbox, ToolContext, tool
from local_tools.core.errors import Conflict, ErrorCode
from local_tools.interact.base import Answer, PermissionRequest


class EchoArgs(Args):
    text: str = Field(description="what to echo")
    times: int = Field(1, ge=1, le=10)


@tool("echo", args=EchoArgs, toolset="test", blocking=False, hints=Hints(read_only=True))
def echo(args: EchoArgs, ctx: ToolContext) -> dict[str, Any]:
    """Echo text back."""
    return {"text": args.text * args.times, "user": ctx.user_id}


@tool("aecho", args=EchoArgs, toolset="test")
async def aecho(args: EchoArgs, ctx: ToolContext) -> dict[str, Any]:
    """Echo text back, asynchronously."""
    await asyncio.sleep(0)
    return {"text": args.text}


@tool("boom", toolset="test", blocking=False)
def boom(args: Args, ctx: ToolContext) -> None:
    """Always crashes."""
    raise RuntimeError("kaboom")


@tool("conflicted", toolset="test")
def conflicted(args: Args, ctx: ToolContext) -> None:
    """Always reports a conflict."""
    raise Conflict("the file changed on disk; read it again")


class SleepArgs(Args):
    seconds: float


@tool("slow", args=SleepArgs, toolset="test", timeout=0.3)
def slow(args: SleepArgs, ctx: ToolContext) -> dict[str, Any]:
    """Sleeps in a worker thread, checking for cancellation."""
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        if ctx.cancelled:
            SEEN_CANCEL.set()
            return {}
        time.sleep(0.01)
    return {}


SEEN_CANCEL = threading.Event()


@tool("aslow", args=SleepArgs, toolset="test", timeout=0.2)
async def aslow(args: SleepArgs, ctx: ToolContext) -> dict[str, Any]:
    """Sleeps asynchronously."""
    await asyncio.sleep(args.seconds)
    return {}


class BigArgs(Args):
    lines: int


@tool("big", args=BigArgs, toolset="test", blocking=False)
def big(args: BigArgs, ctx: ToolContext) -> dict[str, Any]:
    """Returns a lot of text."""
    return {"text": "".join(f"line {i}\n" for i in range(1, args.lines + 1))}


TEST_TOOLS = [echo, aecho, boom, conflicted, slow, aslow, big]


@pytest.fixture
def tbx(make_toolbox: Any) -> Toolbox:
    return make_toolbox(tools=TEST_TOOLS)


def test_success_envelope_shape(tbx: Toolbox) -> None:
    env = tbx.run("echo", {"text": "hi", "times": 2}, user_id="alice")
    assert env["success"] is True
    assert env["output"] == {"text": "hihi", "user": "alice"}
    assert env["meta"]["tool"] == "echo"
    assert isinstance(env["meta"]["call_id"], str) and env["meta"]["call_id"]
    assert env["meta"]["duration_ms"] >= 0
    assert "error" not in env


def test_async_tool_and_arun(tbx: Toolbox) -> None:
    assert ok(tbx.run("aecho", {"text": "x"}))["text"] == "x"
    env = asyncio.run(tbx.arun("echo", {"text": "y"}))
    assert ok(env)["text"] == "y"


def test_sync_facade_inside_running_loop(tbx: Toolbox) -> None:
    async def inside() -> dict[str, Any]:
        return tbx.run("echo", {"text": "nested"})

    assert ok(asyncio.run(inside()))["text"] == "nested"


@pytest.mark.parametrize("name", ["echo", "ECHO", "Echo"])
def test_case_insensitive_names(tbx: Toolbox, name: str) -> None:
    assert ok(tbx.run(name, {"text": "a"}))["text"] == "a"
    assert tbx.run(name, {"text": "a"})["meta"]["tool"] == "echo"


@pytest.mark.parametrize("alias", ["FileRead", "fileread", "read", "Read", "READ_FILE"])
def test_aliases_resolve_to_canonical(tbx: Toolbox, workspace: Path, alias: str) -> None:
    (workspace / "a.txt").write_text("hello\n")
    env = tbx.run(alias, {"path": "a.txt"})
    assert ok(env)["content"] == "hello\n"
    assert env["meta"]["tool"] == "read_file"


def test_unknown_tool_suggests_the_closest_and_points_to_find_tools(tbx: Toolbox) -> None:
    msg = err(tbx.run("read_fil", {"path": "x"}), "UNKNOWN_TOOL")
    assert "Did you mean 'read_file'?" in msg
    assert "find_tools" in msg
    env = tbx.run("nonsense_tool_zzz", {})
    assert env["error"]["details"]["closest"] is None
    assert "read_file" in env["error"]["details"]["available"]  # every name stays in details


@pytest.mark.parametrize("name", ["nosuch", "cat", "git_status", "process"])
def test_unknown_tool_far_from_every_name_gets_no_guess(tbx: Toolbox, name: str) -> None:
    env = tbx.run(name, {})
    msg = err(env, "UNKNOWN_TOOL")
    assert "Did you mean" not in msg and env["error"]["details"]["closest"] is None
    # The ~75 names are in details, not in what a model reads.
    assert "browser_launch" not in msg and "write_file" not in msg
    assert len(msg) < 200


def test_invalid_tool_called_directly(tbx: Toolbox) -> None:
    msg = err(tbx.run("invalid", {"tool": "raed_file"}), "UNKNOWN_TOOL")
    assert "read_file" in msg
    msg = err(tbx.run("invalid", {"tool": "grep", "error": "bad json"}), "INVALID_INPUT")
    assert "bad json" in msg


def test_missing_argument_named(tbx: Toolbox) -> None:
    msg = err(tbx.run("echo", {}), "INVALID_INPUT")
    assert "'text' is required" in msg
    assert "text (string, required)" in msg


def test_wrong_type_and_range_named(tbx: Toolbox) -> None:
    msg = err(tbx.run("echo", {"text": "a", "times": "many"}), "INVALID_INPUT")
    assert "'times'" in msg and "integer" in msg and "'many'" in msg
    msg = err(tbx.run("echo", {"text": "a", "times": 99}), "INVALID_INPUT")
    assert "'times'" in msg and "less than or equal to 10" in msg


def test_unexpected_argument_suggests_name(tbx: Toolbox) -> None:
    msg = err(tbx.run("echo", {"txt": "a"}), "INVALID_INPUT")
    assert "'txt' is not a parameter of echo" in msg
    assert "did you mean 'text'" in msg


@pytest.mark.parametrize("args", [["a"], "text", 42])
def test_non_object_arguments(tbx: Toolbox, args: Any) -> None:
    assert "JSON object" in err(tbx.run("echo", args), "INVALID_INPUT")


def test_none_arguments_mean_empty(tbx: Toolbox) -> None:
    err(tbx.run("echo", None), "INVALID_INPUT")
    assert tbx.run("list_dir", None)["success"]


@pytest.mark.parametrize("name", [None, 3, "", "   "])
def test_bad_tool_names_never_raise(tbx: Toolbox, name: Any) -> None:
    err(tbx.run(name, {}), "UNKNOWN_TOOL")


def test_crash_becomes_internal_error(tbx: Toolbox, caplog: pytest.LogCaptureFixture) -> None:
    msg = err(tbx.run("boom"), "INTERNAL_ERROR")
    assert "RuntimeError: kaboom" in msg
    assert "Traceback" not in msg
    assert any("boom" in r.getMessage() for r in caplog.records)


def test_tool_error_code_kept(tbx: Toolbox) -> None:
    assert "read it again" in err(tbx.run("conflicted"), "CONFLICT")


def test_blocking_tool_timeout_cancels(tbx: Toolbox) -> None:
    SEEN_CANCEL.clear()
    started = time.monotonic()
    msg = err(tbx.run("slow", {"seconds": 5}), "TIMEOUT")
    assert time.monotonic() - started < 2
    assert "0.3 s" in msg
    assert SEEN_CANCEL.wait(2), "the tool never saw the cancellation"


def test_async_tool_timeout(tbx: Toolbox) -> None:
    started = time.monotonic()
    err(tbx.run("aslow", {"seconds": 5}), "TIMEOUT")
    assert time.monotonic() - started < 2


def test_outside_cancellation_propagates(tbx: Toolbox) -> None:
    async def main() -> None:
        task = asyncio.create_task(tbx.arun("aslow", {"seconds": 0.15}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    records = tbx.audit.query(tool="aslow") if tbx.audit else []
    assert records and records[0].error_code == "CANCELLED"


class RoundEnded(BaseException):
    """Like the MCP transport's InputRequired: an asker ending the round to ask."""


class EndingAsker:
    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.asked.append(request)
        raise RoundEnded("waiting for the person's answer")


RAN: list[str] = []


@tool("guarded", args=EchoArgs, toolset="test", permission="test:guarded")
def guarded(args: EchoArgs, ctx: ToolContext) -> dict[str, Any]:
    """Needs an approval (no rule for its permission: it asks)."""
    RAN.append(args.text)
    return {"text": args.text}


def test_a_base_exception_ending_the_call_is_audited_and_re_raised(make_toolbox: Any) -> None:
    asker = EndingAsker()
    tbx = make_toolbox(tools=[*TEST_TOOLS, guarded], asker=asker)
    RAN.clear()
    with pytest.raises(RoundEnded):
        asyncio.run(tbx.arun("guarded", {"text": "hi"}, user_id="bob"))
    assert [r.permission for r in asker.asked] == ["test:guarded"]
    assert RAN == []  # ended before the tool ran
    assert tbx.audit is not None
    (record,) = tbx.audit.query(tool="guarded")
    assert record.outcome == "error" and record.error_code == "CANCELLED"
    assert record.note == "RoundEnded: waiting for the person's answer"
    assert record.user_id == "bob" and record.args == {"text": "hi"}


def test_a_base_exception_from_a_tool_is_audited(make_toolbox: Any) -> None:
    @tool("interrupted", toolset="test", blocking=False)
    def interrupted(args: Args, ctx: ToolContext) -> None:
        """Ends like an interrupt."""
        raise RoundEnded()

    tbx = make_toolbox(tools=[interrupted])
    with pytest.raises(RoundEnded):
        asyncio.run(tbx.arun("interrupted"))
    assert tbx.audit is not None
    (record,) = tbx.audit.query(tool="interrupted")
    assert record.error_code == "CANCELLED" and record.note == "RoundEnded"


class PathArgs(Args):
    path: str


SEEN_THREADS: list[str] = []


def _where_subjects(args: PathArgs, ctx: ToolContext) -> list[str]:
    SEEN_THREADS.append(f"subjects:{threading.current_thread().name}")
    if args.path == "hang":
        time.sleep(1)
    return [args.path]


@tool("touchy", args=PathArgs, toolset="test", permission="test:touchy", timeout=0.3)
def touchy(args: PathArgs, ctx: ToolContext) -> dict[str, Any]:
    """A blocking tool with subjects: where do its parts run?"""
    SEEN_THREADS.append(f"tool:{threading.current_thread().name}")
    return {"path": args.path}


touchy = dataclasses.replace(touchy, subjects=_where_subjects)
TOUCHY_RULES = {"permissions": {"test:touchy": {"*": "ask", "ok*": "allow", "no*": "deny"}}}


class AnsweringAsker:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[str | None] = []

    async def ask(self, request: PermissionRequest) -> Answer:
        self.asked.append(request.subject)
        SEEN_THREADS.append(f"ask:{threading.current_thread().name}")
        return self.answer


def test_blocking_tool_is_authorized_and_run_off_the_loop(make_toolbox: Any) -> None:
    tbx = make_toolbox(TOUCHY_RULES, tools=[touchy])
    SEEN_THREADS.clear()
    loop_thread = threading.current_thread().name
    assert ok(tbx.run("touchy", {"path": "ok.txt"})) == {"path": "ok.txt"}
    assert [s.split(":")[0] for s in SEEN_THREADS] == ["subjects", "tool"]
    assert all(not s.endswith(f":{loop_thread}") for s in SEEN_THREADS), SEEN_THREADS


def test_blocking_tool_denied_in_the_worker_never_runs(make_toolbox: Any) -> None:
    tbx = make_toolbox(TOUCHY_RULES, tools=[touchy])
    SEEN_THREADS.clear()
    message = err(tbx.run("touchy", {"path": "no.txt"}), "PERMISSION_DENIED")
    assert "no*" in message
    assert [s.split(":")[0] for s in SEEN_THREADS] == ["subjects"]


@pytest.mark.parametrize(("answer", "runs"), [("once", True), ("deny", False)])
def test_blocking_tool_asks_on_the_loop_then_runs(
    make_toolbox: Any, answer: Answer, runs: bool
) -> None:
    asker = AnsweringAsker(answer)
    tbx = make_toolbox(TOUCHY_RULES, tools=[touchy], asker=asker)
    SEEN_THREADS.clear()
    envelope = tbx.run("touchy", {"path": "maybe.txt"})
    assert asker.asked == ["maybe.txt"]
    kinds = [s.split(":")[0] for s in SEEN_THREADS]
    if runs:
        assert ok(envelope) == {"path": "maybe.txt"}
        assert kinds == ["subjects", "ask", "tool"]  # subjects once, the tool once
    else:
        assert "declined" in err(envelope, "PERMISSION_DENIED")
        assert kinds == ["subjects", "ask"]


def test_blocking_tool_without_anyone_to_ask_is_denied(make_toolbox: Any) -> None:
    tbx = make_toolbox(TOUCHY_RULES, tools=[touchy])
    assert "no one is available" in err(tbx.run("touchy", {"path": "x"}), "PERMISSION_DENIED")


def test_the_deadline_covers_the_subjects_of_a_blocking_tool(make_toolbox: Any) -> None:
    tbx = make_toolbox(TOUCHY_RULES, tools=[touchy])
    started = time.monotonic()
    err(tbx.run("touchy", {"path": "hang"}), "TIMEOUT")
    assert time.monotonic() - started < 0.9  # the loop was not held by the subjects


def test_a_tool_whose_subjects_outlived_the_deadline_never_starts(make_toolbox: Any) -> None:
    rules = {"permissions": {"test:touchy": "allow"}}
    tbx = make_toolbox(rules, tools=[touchy])
    SEEN_THREADS.clear()
    err(tbx.run("touchy", {"path": "hang"}), "TIMEOUT")
    time.sleep(1.2)  # the subjects return after 1 s, into a call that already ended
    assert [s.split(":")[0] for s in SEEN_THREADS] == ["subjects"]


def test_outside_cancellation_of_a_blocking_tool_tells_it(tbx: Toolbox) -> None:
    SEEN_CANCEL.clear()

    async def main() -> None:
        task = asyncio.create_task(tbx.arun("slow", {"seconds": 5}))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert SEEN_CANCEL.wait(2), "the tool never saw the cancellation"
    records = tbx.audit.query(tool="slow") if tbx.audit else []
    assert records and records[0].error_code == "CANCELLED"


CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("CALLER", default="nobody")


@tool("whoami", toolset="test")
def whoami(args: Args, ctx: ToolContext) -> dict[str, Any]:
    """Reports a context variable of the caller's."""
    return {"caller": CALLER.get()}


def test_blocking_tool_sees_the_callers_context_variables(make_toolbox: Any) -> None:
    tbx = make_toolbox(tools=[whoami])

    async def main() -> dict[str, Any]:
        CALLER.set("alice")
        return await tbx.arun("whoami")

    assert ok(asyncio.run(main())) == {"caller": "alice"}


def test_plain_calls_have_no_note(tbx: Toolbox) -> None:
    ok(tbx.run("echo", {"text": "x"}))
    err(tbx.run("conflicted"), "CONFLICT")
    assert tbx.audit is not None
    assert [r.note for r in tbx.audit.query()] == [None, None]


def test_big_output_is_bounded_and_spilled(make_toolbox: Any) -> None:
    tbx = make_toolbox(
        {"limits": {"max_output_lines": 50, "max_output_bytes": 4000}}, tools=TEST_TOOLS
    )
    out = ok(tbx.run("big", {"lines": 10_000}))
    assert out["truncated"] is True
    assert out["text"].startswith("line 1\nline 2\n")
    assert len(out["text"].encode()) <= 4000 + 400  # preview plus the hint
    spill = Path(out["full_output_path"])
    assert spill.read_text().count("\n") == 10_000
    assert str(spill) in out["text"]
    # The hint tells the model to page the spill with read_file; that must work.
    page = ok(tbx.run("read_file", {"path": str(spill), "offset": 5000, "limit": 2}))
    assert page["content"] == "line 5000\nline 5001\n"


def test_small_output_untouched(tbx: Toolbox) -> None:
    out = ok(tbx.run("big", {"lines": 10}))
    assert "truncated" not in out and "full_output_path" not in out


def test_every_call_is_audited_with_redaction(tbx: Toolbox) -> None:
    tbx.run("echo", {"text": "hi"}, user_id="alice")
    tbx.run("echo", {"text": "hi", "password": "hunter2"}, user_id="bob")
    tbx.run("nope", {"token": "abc"}, user_id="bob")
    assert tbx.audit is not None
    records = tbx.audit.query(limit=10)
    assert [r.tool for r in records] == ["nope", "echo", "echo"]
    assert records[0].error_code == "UNKNOWN_TOOL" and records[0].outcome == "error"
    assert records[1].user_id == "bob" and records[1].error_code == "INVALID_INPUT"
    assert records[2].outcome == "success" and records[2].args == {"text": "hi"}
    dumped = repr([r.args for r in records])
    assert "hunter2" not in dumped and "abc" not in dumped
    assert [r.user_id for r in tbx.audit.query(user="alice")] == ["alice"]


def test_audit_can_be_disabled(make_toolbox: Any) -> None:
    tbx = make_toolbox(audit=False, tools=TEST_TOOLS)
    assert tbx.audit is None
    assert ok(tbx.run("echo", {"text": "x"}))


def test_disabled_toolset_explained(make_toolbox: Any, workspace: Path) -> None:
    tbx = make_toolbox({"toolsets": {"enabled": ["test"]}}, tools=TEST_TOOLS)
    msg = err(tbx.run("read_file", {"path": "x"}), "UNKNOWN_TOOL")
    assert "disabled" in msg and "files" in msg
    names = {t["name"] for t in tbx.tools()}
    assert "echo" in names and "read_file" not in names


def test_render_uses_tool_rendering(tbx: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    text = tbx.render(tbx.run("read_file", {"path": "a.txt"}))
    assert "1\tone" in text and "2\ttwo" in text
    assert tbx.render(tbx.run("boom")).startswith("Error [INTERNAL_ERROR]:")
    assert '"text"' in tbx.render(tbx.run("echo", {"text": "q"}))


def test_error_codes_are_the_documented_set() -> None:
    assert {c.value for c in ErrorCode} == {
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "INVALID_INPUT",
        "ALREADY_EXISTS",
        "TIMEOUT",
        "EXECUTION_ERROR",
        "NETWORK_ERROR",
        "IO_ERROR",
        "UNKNOWN_TOOL",
        "CONFLICT",
        "CANCELLED",
        "INTERNAL_ERROR",
    }


def test_hostile_argument_values_are_invalid_input(tbx: Toolbox) -> None:
    nested: list[Any] = []
    inner = nested
    for _ in range(3000):
        inner.append([])
        inner = inner[0]
    for value in (10**5000, nested, float("nan"), {"\ud800": 1}):
        err(tbx.run("echo", {"text": value}), "INVALID_INPUT")


def test_sync_facade_from_many_threads_leaks_no_loops(tbx: Toolbox) -> None:
    import gc

    results: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=lambda: results.append(tbx.run("echo", {"text": "t"})))
        for _ in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()  # an unclosed loop would warn here, and warnings are errors
    assert len(results) == 20
    assert all(r["success"] for r in results)

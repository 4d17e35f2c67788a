"""The agent loop of one task: ask the model, run the tools it calls, until it answers.

Every tool call goes through the caller's runner as the caller: same user, same rules,
same session, asks to the same person, audited with the task call's id (`<id>.N`, as
batch numbers its calls). Budgets (model turns, tokens, wall time) are checked before
each turn; the wall time also cuts a turn short (the model request and the tool calls
in flight are cancelled). One turn runs at most MAX_CALLS_PER_TURN calls, PARALLEL at
a time. The transcript is saved after every turn and every round of tool calls.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_tools.core.config import Config
from local_tools.core.context import ToolContext
from local_tools.core.errors import ErrorCode, ToolError
from local_tools.core.output import render_compact
from local_tools.core.runner import Runner
from local_tools.core.tool import Tool
from local_tools.interact.base import ASKING_FOR, Asker
from local_tools.models.types import Message, ModelClient, ToolCall, ToolSpec
from local_tools.subagents.agents import Agent, read_only_refusal
from local_tools.subagents.transcripts import Transcript, TranscriptStore

__all__ = [
    "MAX_CALLS_PER_TURN",
    "PARALLEL",
    "Budgets",
    "Caller",
    "Outcome",
    "TaskLoop",
    "current_depth",
    "system_prompt",
]

log = logging.getLogger(__name__)

# Calls of one model turn that are run (as batch's MAX_CALLS); the rest are answered
# "not run". Of those, how many run at once: each may hold a worker thread.
MAX_CALLS_PER_TURN = 25
PARALLEL = 8

# How deep the running code is in tasks: 0 for a person's agent, 1 inside a subagent.
# A context variable: the subagent's tool calls run in its task, and asyncio copies it
# into the tasks gather makes.
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("local_tools_task_depth", default=0)

EventFunc = Callable[[str], None]


def current_depth() -> int:
    return _DEPTH.get()


@dataclass(frozen=True)
class Caller:
    """Who runs the task and where: what the loop needs of the task call's context,
    kept apart from it so a background task outlives the call."""

    runner: Runner
    config: Config
    user_id: str
    session_id: str | None
    transport: str
    call_id: str  # the task call's: the subagent's calls are `<call_id>.N`
    asker: Asker | None  # None: the toolbox's default (a background task's)
    state_dir: Path
    workspace: Path
    depth: int  # the subagent's: 1 when a person's agent called task


@dataclass(frozen=True)
class Budgets:
    steps: int
    tokens: int
    seconds: float


@dataclass
class Outcome:
    """What this call has spent of its budgets: a resumed task (task_id) starts again;
    a call an ask interrupted (MCP 2026-07-28) carries it into the re-sent call."""

    status: str  # done, budget
    answer: str
    budget: str | None = None  # steps, tokens, time
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    cut: bool = False  # the answer was cut at the model's reply limit
    started: float = field(default_factory=time.monotonic)

    @property
    def duration_ms(self) -> float:
        return round((time.monotonic() - self.started) * 1000, 3)


def system_prompt(agent: Agent, workspace: Path) -> str:
    parts = [agent.role]
    if agent.prompt.strip():
        parts.append(agent.prompt.strip())
    parts.append(
        f"The workspace is {workspace}; paths are relative to it.\n"
        "You are a subagent: another agent handed you this task and waits for your final "
        "answer. It sees nothing else you did (not your tool calls, not their results), "
        "so finish with a final answer that stands on its own: what you found or did, "
        "with the paths, names and figures it needs. Do not ask it questions; if "
        "something blocks you, say so in your answer."
    )
    return "\n\n".join(parts)


class TaskLoop:
    def __init__(
        self,
        caller: Caller,
        agent: Agent,
        tools: Sequence[Tool],
        client: ModelClient,
        transcript: Transcript,
        store: TranscriptStore,
        budgets: Budgets,
        on_event: EventFunc | None = None,
        spent: Outcome | None = None,
    ) -> None:
        self.caller = caller
        self.agent = agent
        self.tools = {t.name: t for t in tools}
        self.specs = [ToolSpec(t.name, t.description, t.parameters) for t in tools]
        self.client = client
        self.transcript = transcript
        self.store = store
        self.budgets = budgets
        self.on_event = on_event
        self.system = system_prompt(agent, caller.workspace)
        # Carried from the round an ask ended: the budgets go on from there.
        self.outcome = spent if spent is not None else Outcome(status="running", answer="")
        self.outcome.status, self.outcome.answer, self.outcome.budget = "running", "", None
        self.outcome.cut = False
        self._calls = 0  # numbers this call's tool calls: <call_id>.N

    async def run(self) -> Outcome:
        """Run to an answer or a budget. Raises the model client's ToolError (the
        transcript saved, status "failed"), and re-raises what ends the round from
        outside (a cancel: "killed"; an ask's BaseException: "interrupted", with the
        calls still to run kept for the retried call)."""
        token = _DEPTH.set(self.caller.depth)
        try:
            left = self.budgets.seconds - (time.monotonic() - self.outcome.started)
            try:
                if left <= 0:
                    raise asyncio.TimeoutError
                await asyncio.wait_for(self._turns(), left)
            except asyncio.TimeoutError:
                self._ran_out("time")
            self.transcript.status = self.outcome.status
        except ToolError:
            self.transcript.status = "failed"
            raise
        except asyncio.CancelledError:
            self.transcript.status = "killed"
            raise
        except BaseException:
            self.transcript.status = "interrupted"
            raise
        finally:
            _DEPTH.reset(token)
            await self._save()
        return self.outcome

    # -- the turns

    async def _turns(self) -> None:
        pending = self.transcript.pending_calls()
        if pending:  # an ask ended the round before: run what was left, then go on
            await self._run_calls(pending)
        while True:
            budget = self._over_budget()
            if budget is not None:
                self._ran_out(budget)
                return
            reply = await self.client.complete(self.system, self.transcript.messages, self.specs)
            self._count(reply.usage.input_tokens, reply.usage.output_tokens)
            self.transcript.messages.append(
                Message("assistant", reply.text, tool_calls=reply.tool_calls)
            )
            await self._save()
            if not reply.tool_calls:
                self.outcome.status = "done"
                self.outcome.answer = reply.text
                self.outcome.cut = reply.stop == "max_tokens"
                self._event(reply.text)
                return
            await self._run_calls(list(reply.tool_calls))

    def _over_budget(self) -> str | None:
        if self.outcome.steps >= self.budgets.steps:
            return "steps"
        if self.outcome.input_tokens + self.outcome.output_tokens >= self.budgets.tokens:
            return "tokens"
        return None

    def _ran_out(self, budget: str) -> None:
        self.outcome.status = "budget"
        self.outcome.budget = budget
        self.outcome.answer = self.transcript.last_text()

    def _count(self, input_tokens: int, output_tokens: int) -> None:
        # The server's word, checked: negative usage would keep the budget from tripping.
        input_tokens, output_tokens = max(0, int(input_tokens)), max(0, int(output_tokens))
        self.outcome.steps += 1
        self.outcome.input_tokens += input_tokens
        self.outcome.output_tokens += output_tokens
        self.transcript.steps += 1
        self.transcript.input_tokens += input_tokens
        self.transcript.output_tokens += output_tokens

    # -- tool calls

    async def _run_calls(self, calls: list[ToolCall]) -> None:
        """Run one turn's calls, PARALLEL at a time (the first MAX_CALLS_PER_TURN of the
        turn; the rest are answered, not run); results in the calls' order. A call ended
        by a BaseException (an ask that ends the MCP round) stays pending in the saved
        transcript, and the exception goes on up once the others are in."""
        turn, place = self._turn_of(calls)
        run: list[ToolCall] = []
        for call in calls:
            if place.get(id(call), 0) < MAX_CALLS_PER_TURN:
                run.append(call)
            else:
                why = (
                    f"not run: at most {MAX_CALLS_PER_TURN} calls a turn. Make the calls "
                    "that matter most first, fewer at a time."
                )
                self.transcript.messages.append(_error(call, ErrorCode.INVALID_INPUT, why))
        gate = asyncio.Semaphore(PARALLEL)

        async def one(call: ToolCall, n: int) -> Message:
            async with gate:
                # What an answer to an ask during this call is for: this call of this
                # turn of this task (the same again when a resumed round re-runs it).
                action = _digest(
                    [self.transcript.task_id, turn, place.get(id(call)), call.id, call.name,
                     call.arguments]
                )  # fmt: skip
                token = ASKING_FOR.set(action)
                try:
                    return await self._one(call, n)
                finally:
                    ASKING_FOR.reset(token)

        numbered = []
        for call in run:
            self._calls += 1
            numbered.append((call, self._calls))
        results = await asyncio.gather(
            *(one(call, n) for call, n in numbered), return_exceptions=True
        )
        stop: BaseException | None = None
        for call, result in zip(run, results, strict=True):
            if isinstance(result, Message):
                self.transcript.messages.append(result)
            elif isinstance(result, asyncio.CancelledError):
                self.transcript.messages.append(_error(call, ErrorCode.CANCELLED, "cancelled"))
            elif isinstance(result, Exception):  # a bug of ours: the model still gets an answer
                log.error("a subagent tool call failed", exc_info=result)
                self.transcript.messages.append(
                    _error(call, ErrorCode.INTERNAL_ERROR, f"{type(result).__name__}: {result}")
                )
            elif stop is None:
                stop = result
        self.transcript.order_results()
        await self._save()
        if stop is not None:
            raise stop

    def _turn_of(self, calls: list[ToolCall]) -> tuple[int, dict[int, int]]:
        """The index of the model turn these calls are of (the last one: a new turn, or
        the one whose calls an ask left pending) and each call's place in it."""
        for index in range(len(self.transcript.messages) - 1, -1, -1):
            message = self.transcript.messages[index]
            if message.role == "assistant":
                return index, {id(c): p for p, c in enumerate(message.tool_calls)}
        return -1, {id(c): p for p, c in enumerate(calls)}

    async def _one(self, call: ToolCall, n: int) -> Message:
        self.outcome.tool_calls += 1
        self.transcript.tool_calls += 1
        if call.arguments is None:
            why = call.error or "they were not a JSON object"
            return _error(
                call, ErrorCode.INVALID_INPUT,
                f"The arguments of this {call.name} call could not be read ({why}); "
                "nothing was run. Call it again with the arguments as one JSON object.",
            )  # fmt: skip
        runner = self.caller.runner
        tool = runner.registry.resolve(call.name)
        if tool is None or tool.name not in self.tools:
            names = ", ".join(sorted(self.tools)) or "none"
            return _error(
                call, ErrorCode.UNKNOWN_TOOL,
                f"{call.name!r} is not one of this subagent's tools ({self.agent.name} "
                f"agent); nothing was run. Its tools: {names}.",
            )  # fmt: skip
        if self.agent.read_only:
            ctx = self._context(tool, n)  # the tool may look at the disk to say
            refusal = await asyncio.to_thread(read_only_refusal, tool, call.arguments, ctx)
            if refusal is not None:
                return _error(
                    call, ErrorCode.PERMISSION_DENIED,
                    f"{refusal}, and the {self.agent.name} agent is read-only; nothing was "
                    "run. Make only calls that read, and say in your answer what should "
                    "change.",
                )  # fmt: skip
        self._event(f"→ {tool.name} {_summary(call.arguments)}".rstrip())
        envelope = await runner.arun(
            tool.name,
            call.arguments,
            user_id=self.caller.user_id,
            asker=self.caller.asker,
            transport=self.caller.transport,
            session_id=self.caller.session_id,
            call_id=f"{self.caller.call_id}.{n}",  # the audit ties it to the task call
        )
        if not envelope.get("success"):
            err = envelope.get("error") or {}
            return Message(
                "tool",
                f"Error [{err.get('error_code')}]: {err.get('message')}",
                tool_call_id=call.id,
                is_error=True,
            )
        return Message("tool", _render(tool, envelope.get("output")), tool_call_id=call.id)

    # -- helpers

    def _context(self, tool: Tool, n: int) -> ToolContext:
        """A context for asking a tool what a call would change (nothing runs in it)."""
        runner, caller = self.caller.runner, self.caller
        return ToolContext(
            call_id=f"{caller.call_id}.{n}",
            user_id=caller.user_id,
            tool=tool.name,
            jail=runner.jail,
            config=caller.config,
            policy=runner.policy,
            state_dir=runner.state_dir,
            spill_dir=runner.spill_dir,
            session_id=caller.session_id,
            transport=caller.transport,
            runner=runner,
            resources=runner.resources,
        )

    def _event(self, line: str) -> None:
        if self.on_event is not None and line:
            try:
                self.on_event(line)
            except Exception:  # progress is a courtesy: never the task's failure
                log.exception("reporting a task's progress failed")

    async def _save(self) -> None:
        # Off the loop: an fsync'd write of a long transcript takes a while.
        await asyncio.to_thread(self.store.save, self.transcript)


def _render(tool: Tool, output: Any) -> str:
    if tool.render is not None:
        try:
            return tool.render(output)
        except Exception:  # a renderer surprised by this output: the data still reads
            log.exception("rendering %s's output failed", tool.name)
    return render_compact(output)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _error(call: ToolCall, code: ErrorCode, message: str) -> Message:
    return Message("tool", f"Error [{code.value}]: {message}", tool_call_id=call.id, is_error=True)


def _summary(args: dict[str, Any], limit: int = 100) -> str:
    """`path=a.txt limit=5`: the short arguments of a call, for its progress line."""
    parts = []
    for key, value in args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = " ".join(str(text).split())
        if len(text) > 40:
            text = text[:39] + "…"
        parts.append(f"{key}={text}")
    line = " ".join(parts)
    return line if len(line) <= limit else line[: limit - 1] + "…"

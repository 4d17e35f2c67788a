"""Starting, resuming and finishing a task: what the `task` tool asks of the engine.

`prepare` checks the call (a model configured, the agent, the model, depth, budgets) and
builds or loads the transcript; `run_foreground` runs it within the call;
`background_handle` makes the handle the process tools adopt and `start_background`
runs it on its own thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from local_tools.core.config import Config
from local_tools.core.context import ToolContext, session_owner
from local_tools.core.errors import ExecutionError, InvalidInput, NotFound, ToolError
from local_tools.models.settings import how_to_configure
from local_tools.models.types import Message, ModelClient
from local_tools.subagents.agents import Agent, agent_tools, pick_agent
from local_tools.subagents.background import TaskHandle
from local_tools.subagents.loop import Budgets, Caller, EventFunc, Outcome, TaskLoop, current_depth
from local_tools.subagents.running import RunningTasks
from local_tools.subagents.transcripts import Transcript, TranscriptStore, new_task_id

__all__ = [
    "PreparedTask",
    "TaskRequest",
    "background_handle",
    "prepare",
    "run_foreground",
    "start_background",
]


@dataclass(frozen=True)
class TaskRequest:
    description: str
    prompt: str
    agent: str = "general"
    task_id: str | None = None
    model: str | None = None
    max_steps: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None


@dataclass
class PreparedTask:
    caller: Caller
    agent: Agent
    transcript: Transcript
    store: TranscriptStore
    budgets: Budgets
    model: str  # the [models.NAME] key
    # What the round an ask ended had spent (MCP 2026-07-28): the re-sent call goes on
    # from there, so its budgets hold over the whole call, not per round.
    spent: Outcome | None = None


def prepare(ctx: ToolContext, request: TaskRequest, *, interrupted: str | None) -> PreparedTask:
    """Check the call and build (or load) its transcript. `interrupted`: the task an ask
    interrupted for this very call, picked up where it stopped."""
    config = ctx.config
    if not config.models:
        raise ExecutionError(how_to_configure(), details={"cause": "no_model"})
    if ctx.runner is None:
        raise ExecutionError("task runs tools through a runner, and this call has none.")
    depth = current_depth() + 1
    if depth > config.task.max_depth:
        raise ExecutionError(
            f"A subagent cannot start subagents here ([task] max_depth = "
            f"{config.task.max_depth}). Do the work yourself with your own tools."
        )
    store = TranscriptStore(ctx.state_dir, ctx.user_id)
    if interrupted is not None:
        transcript = _load(store, interrupted, ctx)
    elif request.task_id:
        transcript = _load(store, request.task_id, ctx)
        _answer_unrun(transcript)
        transcript.messages.append(Message("user", request.prompt))
    else:
        transcript = Transcript(
            task_id=new_task_id(),
            agent=pick_agent(config, request.agent).name,
            description=request.description.strip(),
            model="",
            workspace=str(ctx.workspace),
            messages=[Message("user", request.prompt)],
        )
    agent = pick_agent(config, transcript.agent)
    model = _model_name(config, request.model or agent.model or transcript.model)
    transcript.model = model
    if request.task_id is None and interrupted is None:
        store.create(transcript)
    caller = Caller(
        runner=ctx.runner,
        config=config,
        user_id=ctx.user_id,
        session_id=ctx.session_id,
        transport=ctx.transport,
        call_id=ctx.call_id,
        asker=ctx.asker,
        state_dir=ctx.state_dir,
        workspace=ctx.workspace,
        depth=depth,
    )
    return PreparedTask(caller, agent, transcript, store, _budgets(config, request), model)


async def run_foreground(
    task: PreparedTask,
    running: RunningTasks,
    on_event: EventFunc,
    *,
    on_interrupt: Callable[[Outcome], None],
) -> dict[str, Any]:
    """Run the task within the call. `on_interrupt(spent)` is called when an ask ends
    the round (the call will come again, and goes on with what this round spent)."""
    config = task.caller.config
    caller = task.caller
    running.acquire(
        task.transcript.task_id,
        task.transcript.description,
        config.task.max_concurrent,
        session_owner(caller.user_id, caller.session_id),
    )
    try:
        client = await _opened(task)
        loop = _loop(task, client, on_event)
        try:
            outcome = await loop.run()
        except ToolError as exc:
            raise _failed(exc, task) from None
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException:
            on_interrupt(loop.outcome)
            raise
        finally:
            await client.aclose()
    finally:
        running.release(task.transcript.task_id)
    return task_output(task, outcome)


def background_handle(task: PreparedTask, running: RunningTasks, ctx: ToolContext) -> TaskHandle:
    """The handle of a task about to run in the background, counted as running."""
    config = task.caller.config
    transcript = task.transcript
    running.acquire(
        transcript.task_id, transcript.description, config.task.max_concurrent, ctx.owner
    )
    handle = TaskHandle(transcript.task_id, transcript.description, ctx.spill_dir)
    handle.on_end = lambda: running.release(transcript.task_id)
    return handle


def start_background(task: PreparedTask, handle: TaskHandle) -> None:
    """Run it on its own thread. Its asks go to the toolbox's default asker (the web
    console's queue): the call that started it has returned, and with it its door."""
    bg = PreparedTask(
        caller=dataclasses.replace(task.caller, asker=None),
        agent=task.agent,
        transcript=task.transcript,
        store=task.store,
        budgets=task.budgets,
        model=task.model,
    )

    async def work(handle: TaskHandle) -> str:
        try:
            client = await _opened(bg)
        except ToolError as unopened:
            handle.emit(f"[task failed: {unopened.code.value}: {unopened.message}]")
            return "failed"
        try:
            outcome = await _loop(bg, client, handle.emit).run()
        except ToolError as exc:
            failed = _failed(exc, bg)
            handle.emit(f"[task failed: {failed.code.value}: {failed.message}]")
            return "failed"
        finally:
            await client.aclose()
        out = task_output(bg, outcome)
        handle.emit(_closing_line(out))
        return outcome.status

    handle.start(work)


def task_output(task: PreparedTask, outcome: Outcome) -> dict[str, Any]:
    transcript = task.transcript
    out: dict[str, Any] = {
        "task_id": transcript.task_id,
        "status": outcome.status,
        "answer": outcome.answer,
        "steps": outcome.steps,
        "tokens": {"input": outcome.input_tokens, "output": outcome.output_tokens},
        "tool_calls": outcome.tool_calls,
        "duration_ms": outcome.duration_ms,
    }
    if outcome.budget is not None:
        out["budget"] = outcome.budget
        out["message"] = (
            f"The task used up its {outcome.budget} budget ({_spent(task, outcome)}) before "
            "it finished; the answer is the last thing it said. To go on with fresh "
            f"budgets, call task with task_id={transcript.task_id!r} and a prompt "
            "(e.g. 'continue')."
        )
    elif outcome.cut:
        out["message"] = (
            f"The answer was cut at the model's reply limit ([models.{task.model}] "
            f"max_tokens). Resume with task_id={transcript.task_id!r} to get the rest."
        )
    return out


# -- helpers


def _load(store: TranscriptStore, task_id: str, ctx: ToolContext) -> Transcript:
    transcript = store.load(task_id)
    if transcript.workspace and transcript.workspace != str(ctx.workspace):
        raise NotFound(
            f"Task {task_id!r} ran in another workspace ({transcript.workspace}); resume it "
            "there, or start a new task here without task_id."
        )
    return transcript


def _answer_unrun(transcript: Transcript) -> None:
    """Calls a stopped task never ran (killed, time budget, crash) get an answer, so the
    conversation is whole again before the new prompt."""
    for call in transcript.pending_calls():
        transcript.messages.append(
            Message(
                "tool",
                "Error [CANCELLED]: not run: the task stopped before this call finished.",
                tool_call_id=call.id,
                is_error=True,
            )
        )


def _model_name(config: Config, wanted: str) -> str:
    if wanted and wanted not in config.models:
        known = ", ".join(sorted(config.models))
        raise InvalidInput(f"There is no model {wanted!r} in [models]. Configured: {known}.")
    return wanted or config.task.model or next(iter(config.models))


def _budgets(config: Config, request: TaskRequest) -> Budgets:
    """Per call a budget may only be lowered."""
    limits = config.task

    def lower(asked: float | None, ceiling: float) -> float:
        return ceiling if asked is None else min(asked, ceiling)

    return Budgets(
        steps=int(lower(request.max_steps, limits.max_steps)),
        tokens=int(lower(request.max_tokens, limits.max_tokens)),
        seconds=lower(request.max_seconds, limits.max_seconds),
    )


async def _opened(task: PreparedTask) -> ModelClient:
    """The task's model client; a failure to open it (no key, no SDK) marks the
    transcript failed, so a resume with task_id finds it as it was left."""
    try:
        return _open(task)
    except ToolError as exc:
        task.transcript.status = "failed"
        await asyncio.to_thread(task.store.save, task.transcript)
        raise _failed(exc, task) from None


def _open(task: PreparedTask) -> ModelClient:
    from local_tools.core.servers import reserved_ports
    from local_tools.models import open_model  # deferred: the SDKs load only for a task

    # local-tools' own servers stay out of the model server's reach, as for web_fetch.
    state_dir = task.caller.state_dir
    return open_model(
        task.caller.config,
        task.model,
        purpose="task",
        local_servers=lambda: reserved_ports(state_dir),
    )


def _loop(task: PreparedTask, client: ModelClient, on_event: EventFunc) -> TaskLoop:
    caller = task.caller
    tools = agent_tools(
        task.agent,
        caller.runner.registry,
        caller.runner.policy,
        caller.user_id,
        nesting=caller.depth < caller.config.task.max_depth,
    )
    return TaskLoop(
        caller, task.agent, tools, client, task.transcript, task.store, task.budgets, on_event,
        spent=task.spent,
    )  # fmt: skip


def _failed(exc: ToolError, task: PreparedTask) -> ToolError:
    task_id = task.transcript.task_id
    return ToolError(
        f"{exc.message.rstrip()} The task's transcript is kept: call task with "
        f"task_id={task_id!r} to resume it once the model answers again.",
        code=exc.code,
        details={**exc.details, "task_id": task_id},
    )


def _spent(task: PreparedTask, outcome: Outcome) -> str:
    if outcome.budget == "steps":
        return f"{outcome.steps} model turns of {task.budgets.steps}"
    if outcome.budget == "tokens":
        used = outcome.input_tokens + outcome.output_tokens
        return f"{used:,} tokens of {task.budgets.tokens:,}"
    return f"{task.budgets.seconds:g} s"


def _closing_line(out: dict[str, Any]) -> str:
    answer = out["answer"].rstrip()
    tokens = out["tokens"]["input"] + out["tokens"]["output"]
    head = f"[task {out['status']}: {out['steps']} steps, {tokens:,} tokens]"
    note = f"\n[{out['message']}]" if out.get("message") else ""
    return f"{answer}\n{head}{note}" if answer else f"{head}{note}"

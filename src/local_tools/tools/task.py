"""task: hand a sub-problem to a subagent on a configured model; get its answer back."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.tools._shell import process_manager

# The runner's ceiling must stay above any [task] max_seconds (at most a day): the task
# enforces its own wall-time budget inside.
TIMEOUT = 86400.0 + 60


class TaskArgs(Args):
    description: str = Field(min_length=1, max_length=120, description="3-5 words: what for.")
    prompt: str = Field(description="The task, with all the context it needs.")
    agent: str = Field("general", description="explore, general, or one in [task.agents].")
    task_id: str = Field("", description="Resume this task with `prompt`.")
    background: bool = Field(False, description="Return at once; poll with process_output.")
    model: str = Field("", description="A [models] name; default: [task] model.")
    max_steps: int = Field(0, ge=0, description="Lower budgets (0: [task]'s).")
    max_tokens: int = Field(0, ge=0, description="Tokens, input + output.")
    max_seconds: float = Field(0, ge=0, le=86400, description="Wall time.")


class TaskTokens(Output):
    input: int = Field(description="Input tokens the model read.")
    output: int = Field(description="Output tokens it wrote.")


class TaskOutput(Output):
    task_id: str = Field(description="Resumes the task (task_id=...).")
    status: str = Field(description="done, budget (a budget ended it) or running (background).")
    answer: str = omitted(description="The subagent's final answer (budget: its last text).")
    steps: int = omitted(description="Model turns taken in this call.")
    tokens: TaskTokens = omitted(description="Tokens used in this call.")
    tool_calls: int = omitted(description="Tool calls the subagent made in this call.")
    duration_ms: float = omitted(description="How long this call ran.")
    budget: str = omitted(description='The budget that ended it: "steps", "tokens", "time".')
    message: str = omitted(description="What to do next (resume, poll).")
    process_id: str = omitted(description="Background: its id for process_output/kill.")


DESCRIPTION = """Hand a sub-problem to a subagent with its own context; get its final answer back.

Needs a configured model ([models]). The subagent calls its agent's tools as you (same
rules, asks and session: its edits undo like yours) and sees only `prompt`: give it all
it needs. Agents: explore (read-only), general (default), those in [task.agents].
Budgets (steps, tokens, seconds) may only be lowered; status "budget" names the one that
ran out. task_id resumes a task. background=true returns a process_id for
process_output / process_kill; its asks then wait in the web console."""


def _render(output: dict[str, Any]) -> str:
    status = output["status"]
    if status == "running":
        return (
            f"Task {output['task_id']} is running in the background: poll it with "
            f"process_output process_id={output['process_id']}, end it with process_kill."
        )
    tokens = output["tokens"]["input"] + output["tokens"]["output"]
    head = (
        f"[task {output['task_id']} {status}: {output['steps']} steps, "
        f"{output['tool_calls']} tool calls, {tokens:,} tokens]"
    )
    note = f"\n[{output['message']}]" if output.get("message") else ""
    return f"{head}\n{output['answer']}{note}"


@tool(
    "task",
    args=TaskArgs,
    description=DESCRIPTION,
    permission=None,  # the subagent's every call is checked as the caller's own
    hints=Hints(destructive=True, open_world=True),
    toolset="models",
    render=_render,
    timeout=TIMEOUT,
    output=TaskOutput,
)
async def task(args: TaskArgs, ctx: ToolContext) -> dict[str, Any]:
    if not args.prompt.strip():
        raise InvalidInput("prompt is empty: say what the subagent should do, with the context.")
    # The engine loads with the first call, not with every server's start.
    from local_tools.subagents.running import RUNNING_KEY, RunningTasks, retry_key
    from local_tools.subagents.tasks import (
        TaskRequest,
        background_handle,
        prepare,
        run_foreground,
        start_background,
    )

    running = ctx.resource(RUNNING_KEY, RunningTasks)
    key = retry_key(ctx.user_id, ctx.session_id, args.model_dump())
    request = TaskRequest(
        description=args.description,
        prompt=args.prompt,
        agent=args.agent,
        task_id=args.task_id.strip() or None,
        model=args.model.strip() or None,
        max_steps=args.max_steps or None,
        max_tokens=args.max_tokens or None,
        max_seconds=args.max_seconds or None,
    )
    interrupted = running.take_interrupted(key)  # (task_id, what it had spent) or None
    # Off the loop: it reads (and for a new task writes) the transcript.
    prepared = await asyncio.to_thread(
        prepare, ctx, request, interrupted=interrupted[0] if interrupted else None
    )
    if interrupted is not None:  # the budgets go on over the rounds of one call
        prepared.spent = interrupted[1]
    task_id = prepared.transcript.task_id
    if not args.background:
        return await run_foreground(
            prepared,
            running,
            lambda line: ctx.progress(line, None),
            on_interrupt=lambda spent: running.interrupted(key, task_id, spent),
        )
    handle = background_handle(prepared, running, ctx)
    try:
        process_manager(ctx).adopt(task_id, ctx.owner, handle)
    except BaseException:
        running.release(task_id)
        raise
    start_background(prepared, handle)
    return {
        "task_id": task_id,
        "process_id": task_id,
        "status": "running",
        "message": "Poll it with process_output (block=true waits), end it with process_kill.",
    }

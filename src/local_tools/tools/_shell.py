"""What the shell tools share: the toolbox's process manager and the output they show."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Output, omitted
from local_tools.shell.capture import StreamCapture
from local_tools.shell.environment import decode_output
from local_tools.shell.manager import Listed, ProcessManager
from local_tools.shell.process import signal_name

__all__ = [
    "ExecOutput",
    "ProcessKillOutput",
    "ProcessListOutput",
    "ProcessReport",
    "ProcessState",
    "ProcessWriteOutput",
    "new_output",
    "output_preview",
    "process_manager",
    "process_state",
    "render_process",
    "render_streams",
]


class ProcessState(Output):
    """A background process (``process_state``)."""

    process_id: str = Field(
        description="Its id for process_output/input/kill (p1, p2, ...; a task's task_id)."
    )
    command: str = Field(description='The command line ("task: ..." for a subagent task).')
    status: str = Field(description='"running" or "exited".')
    exit_code: int | None = Field(description="Its exit code; null while it runs.")
    pid: int = Field(description="Its operating-system process id (0 for a task).")
    started_at: str = Field(description="Start time, UTC, ISO 8601.")
    ended_at: str = omitted(description="End time, UTC, ISO 8601, once it exited.")
    signal: str = omitted(description="The signal that ended it (SIGKILL, ...).")
    killed_by: str = omitted(description='Why it was killed: "kill", "timeout", ...')


class ProcessReport(ProcessState):
    """A background process and what it printed since the last read (``new_output``)."""

    stdout: str = Field(description="New standard output.")
    stderr: str = Field(description="New standard error.")
    note: str = omitted(description="Output dropped from memory or still waiting.")


class ProcessWriteOutput(ProcessReport):
    written: int = Field(description="Bytes of input the process took.")


class ProcessKillOutput(ProcessReport):
    killed: bool = Field(description="False when it had already exited.")


class ProcessListOutput(Output):
    processes: list[ProcessState] = Field(description="Your background processes.")


class ExecOutput(Output):
    """A finished command (stdout, stderr, exit_code, duration_ms), or one still running
    in the background (process_id, status "running", message; with its output so far
    when it was handed back after yield_after)."""

    stdout: str = omitted(description="Standard output (head and tail when long).")
    stderr: str = omitted(description="Standard error (head and tail when long).")
    exit_code: int | None = Field(description="The exit code; null while it runs.")
    duration_ms: float = omitted(description="Finished commands: how long it ran.")
    truncated: bool = omitted(description="True when output was cut (saved whole).")
    signal: str = omitted(description="The signal that ended it (SIGKILL, ...).")
    stdout_path: str = omitted(description="A file with the whole standard output.")
    stderr_path: str = omitted(description="A file with the whole standard error.")
    note: str = omitted(description="Processes it left running were stopped.")
    sandbox_note: str = omitted(description="Why the command ran without a sandbox.")
    protected_note: str = omitted(
        description="Protected paths the command changed were put back: which, and where "
        "its versions are kept.",
    )
    process_id: str = omitted(description="Background: its id for process_output etc.")
    command: str = omitted(description="Background: the command line.")
    status: str = omitted(description='Background: "running" (or "exited" already).')
    pid: int = omitted(description="Background: its operating-system process id.")
    started_at: str = omitted(description="Background: start time, UTC, ISO 8601.")
    ended_at: str = omitted(description="Background: end time, once it exited.")
    killed_by: str = omitted(description="Background: why it was killed.")
    message: str = omitted(description="Background: what to do next.")


def process_manager(ctx: ToolContext) -> ProcessManager:
    return ctx.resource(
        "shell.processes",
        lambda: ProcessManager(ctx.spill_dir, max_live=ctx.limits.max_processes),
    )


def output_preview(capture: StreamCapture, ctx: ToolContext) -> tuple[str, bool]:
    """The stream as a model should see it: whole, or its head and tail with a pointer to
    the saved whole. Sized to pass the output limits, so the runner does not cut it again."""
    limits = ctx.limits
    max_bytes, max_lines = limits.max_output_bytes, limits.max_output_lines
    # The end of a command's output (the error, the summary) matters most.
    head_bytes, tail_bytes = max_bytes // 4, max_bytes // 2
    p = capture.preview(head_bytes, tail_bytes)
    if not p.tail and not p.omitted_bytes:
        text = decode_output(p.head)
        if text.count("\n") <= max_lines:
            return text, False
        head_text, tail_text = text, text
    else:
        head_text, tail_text = decode_output(p.head), decode_output(p.tail)
    head_lines = head_text.splitlines(keepends=True)[: max_lines // 4]
    tail_lines = tail_text.splitlines(keepends=True)
    if p.omitted_bytes or len(tail_lines) > 1:
        tail_lines = tail_lines[1:]  # the first may start mid-line
    tail_lines = tail_lines[-(max_lines // 2) :]
    head, tail = "".join(head_lines), "".join(tail_lines)
    if not head.endswith("\n"):
        head += "\n"
    total = capture.total_bytes
    if capture.spill_path is not None and capture.spill_error is None:
        where = (
            f"the whole output ({total} bytes, {capture.total_lines} lines) is saved in "
            f"{capture.spill_path}: page through it with read_file (offset/limit) or grep it"
        )
    elif capture.spill_path is not None:
        where = (
            f"{total} bytes in all; only the start is saved in {capture.spill_path} "
            f"({capture.spill_error})"
        )
    else:
        reason = f" ({capture.spill_error})" if capture.spill_error else ""
        where = f"{total} bytes in all; the middle was not saved{reason}"
    return f"{head}... [output cut: {where}] ...\n{tail}", True


def process_state(proc: Listed) -> dict[str, Any]:
    cmd = proc.command
    state: dict[str, Any] = {
        "process_id": proc.process_id,
        "command": cmd.command,
        "status": "running" if cmd.running else "exited",
        "exit_code": cmd.exit_code,
        "pid": cmd.pid,
        "started_at": _iso(cmd.started_at),
    }
    if cmd.ended_at is not None:
        state["ended_at"] = _iso(cmd.ended_at)
    sig = signal_name(cmd.exit_code, killed=cmd.killed_by is not None)
    if sig is not None:
        state["signal"] = sig
    if cmd.killed_by is not None:
        state["killed_by"] = cmd.killed_by
    return state


def new_output(proc: Listed, ctx: ToolContext) -> dict[str, Any]:
    """stdout and stderr printed since the last read, within the output limit."""
    out: dict[str, Any] = {}
    budget = ctx.limits.max_output_bytes // 2
    lines = ctx.limits.max_output_lines // 2
    notes: list[str] = []
    for key, capture in (("stdout", proc.command.stdout), ("stderr", proc.command.stderr)):
        new = capture.read_new(budget, lines)
        out[key] = decode_output(new.data)
        if new.skipped_bytes:
            if new.spill_path and not capture.spill_error:
                where = f"; all of it is in {new.spill_path}"
            elif capture.spill_error:
                where = f"; {capture.spill_error}"
            else:
                where = ""
            notes.append(f"{new.skipped_bytes} bytes of {key} were dropped from memory{where}")
        left = capture.unread_bytes()
        if left:
            notes.append(f"{left} more bytes of {key} wait: call process_output again")
    if notes:
        out["note"] = "; ".join(notes)
    return out


def render_process(output: dict[str, Any]) -> str:
    text = render_streams(output)
    if output["status"] == "running":
        status = f"{output['process_id']} is running"
    else:
        status = f"{output['process_id']} exited with code {output['exit_code']}"
        if output.get("signal"):
            status += f" ({output['signal']})"
        elif output.get("killed_by"):  # a task: stopped, no signal
            status += f" (stopped: {output['killed_by']})"
    notes = "".join(f"\n[{output[k]}]" for k in ("note", "message") if output.get(k))
    return f"{text}[{status}]{notes}"


def render_streams(output: dict[str, Any]) -> str:
    """stdout, then stderr under its own heading, then the exit status: as a person reads it."""
    parts: list[str] = []
    stdout, stderr = output.get("stdout") or "", output.get("stderr") or ""
    if stdout:
        parts.append(stdout if stdout.endswith("\n") else stdout + "\n")
    if stderr:
        parts.append("[stderr]\n" + (stderr if stderr.endswith("\n") else stderr + "\n"))
    return "".join(parts)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")

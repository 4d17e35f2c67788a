"""process_input: type into a background process and read its answer (a REPL, a db shell)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any, ClassVar

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import ExecutionError, InvalidInput
from local_tools.core.tool import CHANGES_ROOTS, Args, Hints, tool
from local_tools.shell.manager import ManagedProcess
from local_tools.tools._shell import (
    ProcessWriteOutput,
    new_output,
    process_manager,
    process_state,
    render_process,
)

# The end of the output looks like a prompt waiting for the next line: `>>> `, `... `,
# `$ `, `# `, `mysql> `, `postgres=# `, `In [3]: `, `Password: `, `(Pdb) `.
_PROMPT = re.compile(r"(?:>>>|\.\.\.|[$#>%:?]|\]|=>|\(Pdb\)) ?$")
QUIET_SECONDS = 0.3  # no new output for this long after some output: the answer is complete
SETTLE_QUIET = 0.1  # before writing: output quiet this long means the process waits for us
SETTLE_MAX = 2.0


class ProcessInputArgs(Args):
    # Bytes for the process's stdin: may hold NUL (core/arg_checks.py).
    verbatim_text: ClassVar[frozenset[str]] = frozenset({"input"})
    process_id: str = Field(description="A background process started by exec_cmd.")
    input: str = Field(description="Text for its stdin; a newline is added if missing.")
    timeout: float = Field(
        10.0, gt=0, le=300, description="Seconds to wait for the answer at most."
    )
    close_stdin: bool = Field(False, description="Close stdin after writing (end-of-file).")


DESCRIPTION = """Send a line to a background process's stdin and return what it printed in answer.

Waits until output goes quiet, ends in a prompt (>>>, $, mysql>), the process exits,
or `timeout` passes. Drive a REPL or database shell turn by turn: start it with
exec_cmd background=true (`python3 -i`, `psql`), then send one statement per call."""


def _subjects(args: ProcessInputArgs, ctx: ToolContext) -> list[str]:
    # Input to a process is code it runs: approved like a command, naming both.
    proc = process_manager(ctx).get(args.process_id, ctx.owner)
    return [f"{proc.command.command} <<< {args.input.rstrip(chr(10))}"]


@tool(
    "process_input",
    args=ProcessInputArgs,
    description=DESCRIPTION,
    permission="execute:command",
    hints=Hints(destructive=True, open_world=True),
    toolset="shell",
    subjects=_subjects,
    render=render_process,
    output=ProcessWriteOutput,
    changes=lambda args, ctx: CHANGES_ROOTS,  # what a process does with input: unknown
)
async def process_input(args: ProcessInputArgs, ctx: ToolContext) -> dict[str, Any]:
    if "\0" in args.input:
        raise InvalidInput("input contains a NUL byte; send text only.")
    proc = process_manager(ctx).get(args.process_id, ctx.owner)
    cmd = proc.command
    if not cmd.running:
        raise ExecutionError(
            f"{proc.process_id} has already exited (code {cmd.exit_code}); read what is left "
            "with process_output, or start it again."
        )
    if not cmd.accepts_input:
        raise ExecutionError(
            f"{proc.process_id} does not take input: its stdin is closed (only commands "
            "started with background=true keep stdin open)."
        )
    data = args.input if args.input.endswith("\n") else args.input + "\n"
    await asyncio.to_thread(_settle, proc)
    # Whatever was printed before this input is not part of the answer: it stays for
    # process_output, which is why the answer is read from this point on.
    before = (cmd.stdout.total_bytes, cmd.stderr.total_bytes)
    payload = data.encode()
    started = time.monotonic()
    try:
        written = await asyncio.to_thread(_write, proc, payload, args.close_stdin, args.timeout)
    except OSError as exc:
        raise ExecutionError(f"Could not write to {proc.process_id}: {exc}.") from None
    left = max(0.0, args.timeout - (time.monotonic() - started))
    await asyncio.to_thread(_await_answer, proc, before, left)
    out = {**process_state(proc), "written": written, **new_output(proc, ctx)}
    if written < len(payload):
        unread = (
            f"only {written} of {len(payload)} bytes were taken within {args.timeout:g} s: "
            "the process is not reading its input"
        )
        out["note"] = f"{unread}; {out['note']}" if out.get("note") else unread
    return out


def _settle(proc: ManagedProcess) -> None:
    """Let a process that is still printing (its banner, its first prompt) finish first.

    Otherwise that output lands after the input is written and passes for the answer:
    a REPL's first `>>> ` would end the wait before the answer came.
    """
    cmd = proc.command
    started = time.monotonic()
    with cmd.activity:
        while cmd.running:
            now = time.monotonic()
            if now - started >= SETTLE_MAX:
                return
            last = cmd.last_output
            if last is None:
                # Nothing printed yet: give a starting program a moment for its prompt.
                if now - cmd.started_monotonic >= SETTLE_QUIET * 5:
                    return
                cmd.activity.wait(SETTLE_QUIET)
            elif now - last >= SETTLE_QUIET:
                return
            else:
                cmd.activity.wait(SETTLE_QUIET - (now - last))


def _write(proc: ManagedProcess, data: bytes, close: bool, timeout: float) -> int:
    written = proc.command.write_input(data, timeout)
    if close:
        proc.command.close_input()
    return written


def _await_answer(proc: ManagedProcess, before: tuple[int, int], timeout: float) -> None:
    cmd = proc.command
    deadline = time.monotonic() + timeout
    seen = before
    last_change: float | None = None
    with cmd.activity:
        while True:
            now = time.monotonic()
            if not cmd.running or now >= deadline:
                return
            current = (cmd.stdout.total_bytes, cmd.stderr.total_bytes)
            if current != seen:
                seen, last_change = current, now
                moved = [a != b for a, b in zip(current, before, strict=True)]
                if _ends_in_prompt(proc, moved):
                    return
            elif last_change is not None and now - last_change >= QUIET_SECONDS:
                return
            wait = deadline - now if last_change is None else QUIET_SECONDS
            cmd.activity.wait(min(wait, deadline - now))


def _ends_in_prompt(proc: ManagedProcess, changed: list[bool]) -> bool:
    """Whether a stream that printed since the input now ends in a prompt."""
    captures = (proc.command.stdout, proc.command.stderr)
    for capture, moved in zip(captures, changed, strict=False):
        if not moved:
            continue  # its old prompt, from before the input, is no answer
        last = capture.last(200).rsplit(b"\n", 1)[-1].decode("utf-8", "replace")
        if last and len(last) < 80 and _PROMPT.search(last):
            return True
    return False

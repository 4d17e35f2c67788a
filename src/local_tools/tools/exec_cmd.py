"""exec_cmd: run a shell command in the workspace, bounded in time, output and reach."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import ErrorCode, InvalidInput, NotFound, ToolError
from local_tools.core.state import private_dir
from local_tools.core.tool import CHANGES_ROOTS, Args, Hints, tool
from local_tools.security.hidden_paths import MAX_FILES
from local_tools.security.sandbox import (
    hiding_supported,
    sandbox_argv,
    sandbox_engine,
    warm_up,
)
from local_tools.security.seccomp import open_filter
from local_tools.security.trusted_paths import Protected
from local_tools.shell.analysis import analyze, outside_paths
from local_tools.shell.command_reach import (
    approved_by_person,
    hidden_paths,
    protected_existing,
    protected_for,
    read_only_by_default,
    secret_files,
    secret_search_note,
    trusted_paths,
)
from local_tools.shell.command_words import changes_program
from local_tools.shell.environment import (
    build_environment,
    check_variables,
    decode_output,
    shell_argv,
)
from local_tools.shell.git_discovery import RepositoryScan, scan_repositories
from local_tools.shell.git_reach import outside_reach, tracked_secrets
from local_tools.shell.git_safety import git_guard
from local_tools.shell.manager import ManagedProcess
from local_tools.tools._shell import (
    ExecOutput,
    output_preview,
    process_manager,
    process_state,
    render_streams,
)

MAX_TIMEOUT = 600.0
# MCP clients cut a call off at about 60 s whatever the tool's own timeout: past this,
# a command still running is handed back as a background process to poll.
REMOTE_YIELD_AFTER = 30.0
_REMOTE_TRANSPORTS = ("mcp", "http")
PROGRESS_EVERY = 5.0  # seconds between progress reports while a command runs


class ExecArgs(Args):
    command: str = Field(
        validation_alias=AliasChoices("command", "cmd"),
        description="The command line (bash; cmd.exe on Windows).",
    )
    cwd: str = Field(".", description="Working directory, inside the workspace.")
    timeout: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds before the process tree is killed (default 60).",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    background: bool = Field(
        False,
        description=(
            "Return a process_id at once; then process_output, process_input, process_kill."
        ),
    )
    yield_after: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT,
        description=(
            "Seconds after which a running command becomes a background process "
            "(default 30 over MCP and HTTP)."
        ),
    )
    description: str | None = Field(
        None, description="What it does, in a few words, for the person approving it."
    )


DESCRIPTION = """Run a shell command in the workspace; returns stdout, stderr and exit_code.

A non-zero exit code (128+N: killed by signal N) is a result, not an error: read
stderr. Stdin is closed; programs needing a terminal (vim, less, git commit without
-m) are refused. Long output shows head and tail; the whole is saved to a file. On
timeout the process tree is killed: TIMEOUT with the output so far. Processes left
behind (`cmd &`) end with the command: run servers with background=true. Each simple
command is approved on its own; read-only ones (ls, cat, git status) run without
asking. On Linux commands are sandboxed by default: writes only in the workspace and
$TMPDIR, no network."""


def _subjects(args: ExecArgs, ctx: ToolContext) -> list[str]:
    if ctx.config.sandbox.mode != "off":
        warm_up()  # asked before the policy decides: the probe overlaps with that
    subjects = list(analyze(args.command, background=args.background).subjects)
    # Variables that change what runs (PATH, BASH_ENV, LD_PRELOAD, exported bash
    # functions) are approved like `VAR=x cmd` on the command line: as their own subject.
    subjects += [f"env {key}={value}" for key, value in args.env.items() if changes_program(key)]
    return subjects


def _changes(args: ExecArgs, ctx: ToolContext) -> str | None:
    """Every writable root, unless each part of the command is one the built-in rules
    allow as read-only (ls, cat, git status, ...): those are not checkpointed."""
    return None if read_only_by_default(ctx, _subjects(args, ctx)) else CHANGES_ROOTS


def _git_reach(scan: RepositoryScan, roots: list[Path]) -> str | None:
    """Why git run by a command nobody approved must ask: it would print the committed
    content of a tracked `.env` (hiding the file does not hide its history), or read a
    repository outside the roots. None when neither."""
    outside = outside_reach(scan, roots)
    if outside is not None:
        return f"(git reading a repository outside the workspace: {outside})"
    secrets = tracked_secrets(scan)
    if secrets:
        shown = ", ".join(secrets[:3]) + (", ..." if len(secrets) > 3 else "")
        return f"(git in a repository that tracks secret files: {shown})"
    return None


def _render(output: dict[str, Any]) -> str:
    if output.get("status") == "running":
        text = render_streams(output)
        return f"{text}[{output.get('message', '')}]"
    text = render_streams(output) or "(no output)\n"
    tail = f"exit code {output['exit_code']}"
    if output.get("signal"):
        tail += f" ({output['signal']})"
    tail += f" · {output['duration_ms']:.0f} ms"
    keys = ("note", "sandbox_note", "protected_note")
    notes = [n for n in (output.get(k) for k in keys) if n]
    return text + f"[{tail}]" + "".join(f"\n[{n}]" for n in notes)


@tool(
    "exec_cmd",
    args=ExecArgs,
    description=DESCRIPTION,
    permission="execute:command",
    aliases=("ExecuteCommand", "bash", "run_command", "shell"),
    hints=Hints(destructive=True, open_world=True),
    toolset="shell",
    subjects=_subjects,
    render=_render,
    # The command's own timeout (at most 600 s) is enforced inside; this is the backstop.
    timeout=MAX_TIMEOUT + 30,
    output=ExecOutput,
    changes=_changes,
)
async def exec_cmd(args: ExecArgs, ctx: ToolContext) -> dict[str, Any]:
    analysis = analyze(args.command, background=args.background)
    check_variables(args.env)
    cwd = _working_dir(ctx, args.cwd)
    roots = [root for root, _ in ctx.jail.roots]
    outside = outside_paths(analysis, cwd, roots)
    if outside:
        await ctx.authorize("external:file", outside, summary=args.command)
    git_env: dict[str, str] = {}
    approved = approved_by_person(ctx, _subjects(args, ctx))
    if "git" in analysis.programs:
        scan = scan_repositories(cwd)
        git_env, risk = git_guard(cwd, scan)
        if risk is not None:
            # Config no environment can override: only a rule for every command allows it.
            subject = f"(git in a repository whose config runs commands: {risk}) {args.command}"
            await ctx.authorize("execute:command", [subject], summary=args.command)
            approved = True
        if not approved:
            reach = _git_reach(scan, roots)
            if reach is not None:
                await ctx.authorize(
                    "execute:command", [f"{reach} {args.command}"], summary=args.command
                )
                approved = True
    if not approved and ctx.config.sandbox.mode != "off" and len(secret_files(ctx)) > MAX_FILES:
        # One mount per file: past this many the command would start slowly, so the
        # person decides instead (an approved command sees them anyway).
        subject = f"(a workspace with more than {MAX_FILES} .env files to hide) {args.command}"
        await ctx.authorize("execute:command", [subject], summary=args.command)
        approved = True
    manager = process_manager(ctx)
    guard = trusted_paths(ctx)
    # What a background command planted meanwhile is put back before this one starts.
    manager.on_access = guard.sweep
    earlier = manager.checked()
    launch = _prepare(ctx, args, cwd, git_env, approved)
    sandbox_note = launch.note
    guard.begin(_discover(ctx, launch.protected), trusted=launch.mounted)
    try:
        proc = manager.start(
            args.command, launch.argv, owner=ctx.owner, cwd=cwd, env=launch.env,
            background=args.background, stdin=args.background,
            # A sandboxed command has a PID namespace; others are held until in their cgroup.
            hold=not launch.sandboxed and os.name == "posix",
            spill_after=(ctx.limits.max_output_bytes, ctx.limits.max_output_lines),
            pass_fds=launch.pass_fds, on_exit=guard.end,
            # Awaited here: read on this loop, no thread (detached below when it is not).
            loop=None if args.background else asyncio.get_running_loop(),
        )  # fmt: skip
    except BaseException:
        guard.end()
        raise
    finally:
        for fd in launch.pass_fds:
            os.close(fd)
    if args.background:
        proc.command.report_exit_note = True
        started = {**process_state(proc), "message": f"Started in the background as "
                   f"{proc.process_id}; read its output with process_output, end it with "
                   "process_kill."}  # fmt: skip
        if earlier:
            started["protected_note"] = earlier
        return {**started, "sandbox_note": sandbox_note} if sandbox_note else started
    try:
        yielded = await _foreground(proc, ctx, args)
    finally:
        # Yielded to the background, cancelled or failed: a thread reads from now on.
        proc.command.detach()
    if yielded:
        return _yielded(proc, ctx, _timeout(args, ctx) - (_yield_after(args, ctx) or 0.0))
    manager.discard(proc.process_id)
    out = _result(proc, ctx, sandbox_note)
    notes = [n for n in (earlier, proc.command.exit_note) if n]
    if notes:
        out["protected_note"] = " ".join(notes)
    return out


def _timeout(args: ExecArgs, ctx: ToolContext) -> float:
    return args.timeout if args.timeout is not None else ctx.limits.exec_timeout


def _yield_after(args: ExecArgs, ctx: ToolContext) -> float | None:
    """Seconds after which the command goes on in the background; None: never."""
    yield_after = args.yield_after
    if yield_after is None and ctx.transport in _REMOTE_TRANSPORTS:
        yield_after = REMOTE_YIELD_AFTER
    return yield_after if yield_after is not None and yield_after < _timeout(args, ctx) else None


async def _foreground(proc: ManagedProcess, ctx: ToolContext, args: ExecArgs) -> bool:
    """Wait for the command to end (False) or until it is to be yielded to the
    background (True); raises TIMEOUT after killing it."""
    manager = process_manager(ctx)
    timeout = _timeout(args, ctx)
    yield_after = _yield_after(args, ctx)
    try:
        if yield_after is not None:
            return not await _wait(proc, ctx, yield_after)
        if not await _wait(proc, ctx, timeout):
            proc.command.kill("timeout")
            await proc.command.wait_async(5.0)
            manager.discard(proc.process_id)
            raise _timed_out(proc, ctx, timeout)
    except asyncio.CancelledError:
        proc.command.kill("cancel")
        manager.discard(proc.process_id)
        raise
    return False


async def _wait(proc: ManagedProcess, ctx: ToolContext, limit: float) -> bool:
    """Wait up to `limit` s for the command; report progress meanwhile when someone
    listens (an MCP client may reset its own call timeout on each report)."""
    if ctx.on_progress is None:
        return await proc.command.wait_async(limit)
    cmd = proc.command
    deadline = time.monotonic() + limit
    while (left := deadline - time.monotonic()) > 0:
        if await cmd.wait_async(min(PROGRESS_EVERY, left)):
            return True
        elapsed = time.monotonic() - cmd.started_monotonic
        printed = cmd.stdout.total_bytes + cmd.stderr.total_bytes
        ctx.progress(f"running for {elapsed:.0f} s, {printed} bytes of output so far")
    return cmd.done.is_set()


def _working_dir(ctx: ToolContext, cwd: str) -> Path:
    path = ctx.jail.resolve(cwd)
    if not path.exists():
        raise NotFound(f"cwd {cwd!r} does not exist; give a folder in the workspace.")
    if not path.is_dir():
        raise InvalidInput(f"cwd {cwd!r} is not a directory; give a folder in the workspace.")
    return path


@dataclass
class _Launch:
    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    note: str | None  # when the config asks for a sandbox this machine cannot give
    pass_fds: tuple[int, ...] = ()  # the seccomp filter bwrap reads (closed after spawning)
    mounted: bool = False  # existing protected paths are read-only, hidden paths hidden
    protected: list[Protected] | None = None  # protected_for(ctx) when it was needed


_NOT_HIDDEN = (
    "nothing is hidden from commands (local-tools' state dir, ~/.ssh and the other "
    "credential stores, .env files) and protected paths are only put back after each "
    "command"
)


def _prepare(
    ctx: ToolContext, args: ExecArgs, cwd: Path, git_env: dict[str, str], approved: bool
) -> _Launch:
    """The argv (sandboxed when configured) and environment of the command.

    `approved`: a person approved the command, which then sees `.env`-style files;
    commands that only the built-in read-only rules allowed run with them hidden.
    """
    tmp = _private_tmp(ctx)
    # The allow-list of host variables holds no GIT_* (scrub_git_variables is for
    # callers that start from the whole environment).
    env = build_environment(args.env)
    env.update(git_env)  # empty unless the command runs git
    argv = shell_argv(args.command)
    env["TMPDIR"] = str(tmp)
    mode = ctx.config.sandbox.mode
    if mode == "off":
        # Said only when it matters: a command nobody approved, with secrets in reach.
        exposed = not approved and secret_files(ctx)
        return _Launch(argv, env, False, f"sandbox off: {_NOT_HIDDEN}" if exposed else None)
    engine = sandbox_engine()
    if engine.name == "off":
        return _Launch(argv, env, False, f"sandbox off: {engine.detail}; {_NOT_HIDDEN}")
    network = ctx.config.sandbox.network
    seccomp = open_filter() if engine.name == "bwrap" and not network else None
    writable = [root for root, can_write in ctx.jail.roots if can_write]
    mounted = hiding_supported(engine)
    note = None if mounted else f"this sandbox cannot mount: {_NOT_HIDDEN}"
    hide, reveal = hidden_paths(ctx, secrets=not approved) if mounted else ([], [])
    if mounted and not approved:
        note = secret_search_note(ctx)
    protected = protected_for(ctx) if mounted else None
    protect = [p.path for p in protected_existing(ctx, protected)] if protected is not None else []
    argv = sandbox_argv(
        argv, mode=mode, network=network, cwd=cwd, writable=writable, tmp_dir=tmp,
        engine=engine, seccomp_fd=seccomp, protect=protect, hide=hide, reveal=reveal,
    )  # fmt: skip
    fds = () if seccomp is None else (seccomp,)
    return _Launch(argv, env, True, note, fds, mounted, protected)


def _discover(ctx: ToolContext, first: list[Protected] | None) -> Callable[[], list[Protected]]:
    """protected_for(ctx), for the guard; its first answer is `first` when _prepare
    found it already (nothing ran in between), later ones are looked up anew."""
    pending = [] if first is None else [first]
    return lambda: pending.pop() if pending else protected_for(ctx)


def _private_tmp(ctx: ToolContext) -> Path:
    """One private temp dir per toolbox, outside the workspace, removed with it."""
    holder = ctx.resource("shell.tmp", lambda: _TempDir(ctx.state_dir))
    return holder.path


class _TempDir:
    def __init__(self, base: Path) -> None:
        private_dir(base)
        self._dir = tempfile.TemporaryDirectory(prefix="shell-tmp-", dir=base)
        self.path = Path(self._dir.name)

    def close(self) -> None:
        self._dir.cleanup()


def _result(proc: ManagedProcess, ctx: ToolContext, sandbox_note: str | None) -> dict[str, Any]:
    cmd = proc.command
    stdout, cut_out = output_preview(cmd.stdout, ctx)
    stderr, cut_err = output_preview(cmd.stderr, ctx)
    out: dict[str, Any] = {
        "stdout": stdout,
        "stderr": stderr,
        "exit_code": cmd.exit_code,
        "duration_ms": round(cmd.duration_ms or 0.0, 3),
        "truncated": cut_out or cut_err,
    }
    state = process_state(proc)
    if "signal" in state:
        out["signal"] = state["signal"]
    for key, capture in (("stdout_path", cmd.stdout), ("stderr_path", cmd.stderr)):
        if capture.spill_path is not None:
            out[key] = str(capture.spill_path)
    if cmd.leftovers_killed:
        out["note"] = (
            "processes the command left running were stopped when it ended; "
            "start long-running work with background=true"
        )
    if sandbox_note:
        out["sandbox_note"] = sandbox_note
    return out


def _yielded(proc: ManagedProcess, ctx: ToolContext, remaining: float) -> dict[str, Any]:
    proc.background = True
    proc.command.report_exit_note = True
    # It was started with a timeout: keep it, so a yielded command cannot run forever.
    timer = threading.Timer(remaining, proc.command.kill, args=("timeout",))
    timer.daemon = True
    timer.start()
    stdout = proc.command.stdout.read_new(ctx.limits.max_output_bytes)
    stderr = proc.command.stderr.read_new(ctx.limits.max_output_bytes)
    return {
        **process_state(proc),
        "stdout": decode_output(stdout.data),
        "stderr": decode_output(stderr.data),
        "message": f"Still running after the wait; it goes on as background process "
        f"{proc.process_id} (killed at its timeout in {remaining:.0f} s). Poll it with "
        f"process_output process_id={proc.process_id} block=true.",
    }


def _timed_out(proc: ManagedProcess, ctx: ToolContext, timeout: float) -> ToolError:
    stdout, _ = output_preview(proc.command.stdout, ctx)
    stderr, _ = output_preview(proc.command.stderr, ctx)
    last = (stderr or stdout)[-2000:]
    shown = f" Last output:\n{last}" if last.strip() else " It printed nothing."
    return ToolError(
        f"The command did not finish within {timeout:g} s; its whole process tree was "
        f"killed.{shown}\nRaise timeout (at most 600), or run it with background=true and "
        "poll it with process_output.",
        code=ErrorCode.TIMEOUT,
        details={"stdout": stdout, "stderr": stderr, "timeout": timeout},
    )

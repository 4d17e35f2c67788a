"""The runner: validate → authorize → execute → truncate → audit → envelope.

One async core (``Runner.arun``); ``Toolbox.run`` is a thin sync facade over it.
``arun`` never raises for anything a tool or its arguments do: every failure
becomes an error envelope with a code from ``ErrorCode``. (An outside
cancellation of the awaiting task, or any other BaseException ending the call — the
MCP transport's InputRequired — is audited as CANCELLED and re-raised.)
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from local_tools.core.arg_aliases import canonical_args
from local_tools.core.arg_checks import check_args
from local_tools.core.audit import AuditLog, AuditRecord
from local_tools.core.call_scope import call_scope
from local_tools.core.config import Config
from local_tools.core.context import ProgressFunc, ToolContext, session_owner
from local_tools.core.errors import ErrorCode, InvalidInput, ToolError, UnknownTool
from local_tools.core.output import bound_text
from local_tools.core.profiles import DEFAULT_PROFILE, Profile, resolve_profile
from local_tools.core.registry import Registry
from local_tools.core.resources import Resources
from local_tools.core.runner_deadline import cancelling, with_deadline
from local_tools.core.runner_inline import NOT_QUICK, run_inline
from local_tools.core.tool import Tool
from local_tools.core.validation import describe_validation_error
from local_tools.interact.audited import ANSWER_TOOL, AuditedAsker
from local_tools.interact.base import Asker
from local_tools.security.jail import Jail
from local_tools.security.policy import Policy

__all__ = ["DEFAULT_TOOL_TIMEOUT", "Runner"]

log = logging.getLogger(__name__)

# A ceiling for tools that declare none; tools with their own notion of time
# (exec_cmd, web_fetch) declare a larger one and enforce theirs inside.
DEFAULT_TOOL_TIMEOUT = 300.0


@dataclass
class Runner:
    registry: Registry
    policy: Policy
    jail: Jail
    config: Config
    state_dir: Path
    spill_dir: Path
    audit: AuditLog | None = None
    asker: Asker | None = None
    profile: Profile = field(default_factory=lambda: resolve_profile(DEFAULT_PROFILE))

    def __post_init__(self) -> None:
        self._sessions: dict[str, dict[str, Any]] = {}
        # Unique per process and cheap: a random prefix plus a counter (uuid4 costs
        # more than the rest of a trivial call).
        self._call_prefix = os.urandom(4).hex()
        self._call_counter = itertools.count(1)
        self.resources = Resources()

    def session_state(self, user_id: str, session_id: str | None) -> Mapping[str, Any]:
        """The scratch state tools keep for one of a user's sessions (ToolContext.session);
        empty for a session that has none yet (none is made for asking)."""
        return self._sessions.get(session_owner(user_id, session_id), {})

    def end_session(self, user_id: str, session_id: str | None) -> None:
        """Forget a finished session: its scratch state and what it left running."""
        owner = session_owner(user_id, session_id)
        self._sessions.pop(owner, None)
        self.resources.end_session(owner)

    def _new_call_id(self) -> str:
        return f"{self._call_prefix}-{next(self._call_counter):06x}"

    async def arun(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        user_id: str = "default",
        call_id: str | None = None,
        asker: Asker | None = None,
        transport: str = "python",
        on_progress: ProgressFunc | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """`on_progress(message, fraction)` hears a long tool's progress (fraction may be
        None); it may be called from a worker thread. `session_id` keeps one of the
        user's conversations apart from the others (see `end_session`)."""
        started = time.perf_counter()
        call_id = call_id or self._new_call_id()
        tool = self.registry.resolve(name) if isinstance(name, str) else None
        tool_name = tool.name if tool is not None else str(name)
        raw_args: Any = {} if args is None else args
        envelope: dict[str, Any]
        try:
            if tool is None:
                raise self._unknown_tool(name)
            output = await self._call(
                tool, raw_args, call_id, user_id, asker, transport, on_progress, session_id
            )
            envelope = {"success": True, "output": output}
        except ToolError as exc:
            envelope = _error(exc.code, exc.message, exc.details)
        except Exception as exc:
            log.exception("tool %s failed unexpectedly", tool_name)
            envelope = _error(
                ErrorCode.INTERNAL_ERROR,
                f"{tool_name} failed unexpectedly ({type(exc).__name__}: {exc}). "
                "This is a bug in the tool; try another approach.",
                None,
            )
        except BaseException as exc:
            # Anything else that ends the call on its way out: a cancellation, the MCP
            # transport's InputRequired (on protocol 2026-07-28 a round ends to ask the
            # person; the client re-sends the call with the answer), KeyboardInterrupt,
            # SystemExit. Audited as CANCELLED — the call stopped before it finished, for
            # a reason outside the tool; INTERNAL_ERROR would report an approval round as
            # a bug — with a note naming what ended it (none for a plain cancellation),
            # then re-raised untouched (the caller decides what it means).
            cancelled = isinstance(exc, asyncio.CancelledError)
            note = None if cancelled else f"{type(exc).__name__}: {exc}".rstrip(": ")
            message = "cancelled" if note is None else note
            self._audit(
                tool_name, raw_args, user_id, call_id, started, transport,
                _error(ErrorCode.CANCELLED, message, None), note=note,
            )  # fmt: skip
            raise
        duration_ms = (time.perf_counter() - started) * 1000
        envelope["meta"] = {
            "tool": tool_name,
            "call_id": call_id,
            "duration_ms": round(duration_ms, 3),
        }
        self._audit(tool_name, raw_args, user_id, call_id, started, transport, envelope)
        return envelope

    async def _call(
        self,
        tool: Tool,
        raw_args: Any,
        call_id: str,
        user_id: str,
        asker: Asker | None,
        transport: str,
        on_progress: ProgressFunc | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        if not isinstance(raw_args, Mapping):
            raise InvalidInput(
                f"Arguments for {tool.name} must be a JSON object of named parameters, "
                f"got {type(raw_args).__name__}."
            )
        raw_args = canonical_args(tool, raw_args)  # names other tool layers taught models
        check_args(tool.args_model, raw_args)  # NUL, surrogates, huge ints, deep nesting
        try:
            args = tool.args_model.model_validate(raw_args)
        except ValidationError as exc:
            raise InvalidInput(describe_validation_error(tool, exc)) from None
        ctx = ToolContext(
            call_id=call_id,
            user_id=user_id,
            tool=tool.name,
            jail=self.jail,
            config=self.config,
            policy=self.policy,
            state_dir=self.state_dir,
            spill_dir=self.spill_dir,
            session=self._sessions.setdefault(session_owner(user_id, session_id), {}),
            session_id=session_id,
            asker=self._audited(asker if asker is not None else self.asker, call_id, user_id),
            transport=transport,
            runner=self,
            resources=self.resources,
            on_progress=on_progress,
        )
        if tool.blocking and not tool.is_async:
            output: dict[str, Any] = await self._call_blocking(tool, args, ctx)
        else:
            if tool.permission is not None:
                subjects = tool.subjects(args, ctx) if tool.subjects is not None else None
                await self.policy.authorize(
                    user_id, tool.permission, subjects, ctx.asker, tool=tool.name
                )
            pending = None
            if tool.changes is not None and self.config.checkpoints.enabled:  # no hop if not
                pending = await asyncio.to_thread(self._before, tool, args, ctx)
            try:
                result = await self._execute(tool, args, ctx)
                output = self._bound(tool, _as_dict(result), call_id)
            except BaseException:
                if pending is not None:
                    await asyncio.to_thread(self._after, pending, ctx, None)
                raise
            if pending is not None:
                await asyncio.to_thread(self._after, pending, ctx, output)
        if ctx.changed_files is not None:  # the call wrote files
            await self._after_change(args, ctx, output)
        return output

    async def _after_change(
        self, args: BaseModel, ctx: ToolContext, output: dict[str, Any]
    ) -> None:
        """Add the language errors of the files the call wrote (lsp/after_change.py),
        unless language servers are off or the call said diagnostics=false."""
        if not self.config.lsp.enabled or getattr(args, "diagnostics", True) is False:
            return
        # Imported here: only calls that write pay for the language-server engine.
        from local_tools.lsp.after_change import check_changes, wanted

        changes = list(ctx.changed_files or ())
        if not any(wanted(ctx, change.path) for change in changes):
            return  # a .md or .txt: not even a thread hop
        try:
            report = await asyncio.to_thread(check_changes, ctx, changes)
        except Exception:  # the write succeeded: a failed check must not turn it into an error
            log.exception("checking %s's changes for language errors failed", ctx.tool)
            return
        if report is not None:
            output["diagnostics"] = report

    async def _call_blocking(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> Any:
        """A sync tool that may block: authorized and run in one worker-thread hop.

        Its subjects (which may touch the disk: the jail resolves paths), the policy's
        decision, the tool and the bounding of its output (which may write a spill file)
        run in the worker, off the event loop, under the tool's deadline. When a rule
        says ask, the worker returns before the tool runs, the person is asked here on
        the loop (no deadline: a person may take a while), and a second hop runs the
        tool. The checks are the same as for any other tool, in the same order.

        A call the tool says cannot block for long (`runner_inline.is_quick`) takes the same steps
        inline instead: the hop would cost more than the call (asked again after an ask;
        the tool hands it to a worker, checks made again, if it finds otherwise).
        """
        run = self._run_blocking
        out = run_inline(run, tool, args, ctx, True)
        if out is NOT_QUICK:
            out = await self._in_worker(tool, ctx, run, tool, args, ctx, True)
        if isinstance(out, _Ask):
            assert tool.permission is not None
            await self.policy.authorize(
                ctx.user_id, tool.permission, out.subjects, ctx.asker, tool=tool.name
            )
            out = run_inline(run, tool, args, ctx, False)
            if out is NOT_QUICK:
                out = await self._in_worker(tool, ctx, run, tool, args, ctx, False)
        return out

    def _run_blocking(self, tool: Tool, args: BaseModel, ctx: ToolContext, check: bool) -> Any:
        """In the worker: decide (with `check`) then run and bound; `_Ask` when a rule asks.
        What the subjects opened for the tool is closed when this ends (call_scope)."""
        with call_scope():
            return self._decide_and_run(tool, args, ctx, check)

    def _decide_and_run(self, tool: Tool, args: BaseModel, ctx: ToolContext, check: bool) -> Any:
        if check and tool.permission is not None:
            subjects = tool.subjects(args, ctx) if tool.subjects is not None else None
            # Raises PermissionDenied for a denied subject; lists the ones that ask.
            if self.policy.check(ctx.user_id, tool.permission, subjects, tool=tool.name):
                return _Ask(subjects)
        # Timed out or cancelled meanwhile (slow subjects): the caller has its answer,
        # so the tool must not start now.
        ctx.check_cancelled()
        pending = self._before(tool, args, ctx)
        try:
            output = self._bound(tool, _as_dict(tool.func(args, ctx)), ctx.call_id)
        except BaseException:
            if pending is not None:
                self._after(pending, ctx, None)  # a failed call may have changed files too
            raise
        if pending is not None:
            self._after(pending, ctx, output)
        return output

    def _before(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> Any:
        """A checkpoint's snapshot before a call that changes files (checkpoints/hook.py);
        in a worker thread. None for tools that change none, or with checkpoints off."""
        if tool.changes is None or not self.config.checkpoints.enabled:
            return None
        # Imported here: only calls that change files pay for the checkpoint engine.
        from local_tools.checkpoints.hook import begin

        return begin(tool, args, ctx)

    def _after(self, pending: Any, ctx: ToolContext, output: dict[str, Any] | None) -> None:
        from local_tools.checkpoints.hook import end

        end(pending, ctx, output)

    async def _in_worker(self, tool: Tool, ctx: ToolContext, func: Any, *args: Any) -> Any:
        """`func(*args)` in the default executor, under the tool's deadline.

        The thread cannot be stopped: on a timeout or an outside cancellation the tool
        sees ctx.cancelled and stops at its next check. A bare timer handle on the
        executor's future instead of wait_for(to_thread(...)): same semantics, one task
        and two loop turns fewer per call.
        """
        limit = tool.timeout or DEFAULT_TOOL_TIMEOUT
        loop = asyncio.get_running_loop()
        # Like asyncio.to_thread: the tool sees the caller's context variables.
        call = functools.partial(contextvars.copy_context().run, func, *args)
        future = loop.run_in_executor(None, call)
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            future.cancel()

        handle = loop.call_later(limit, expire)
        try:
            return await future
        except asyncio.CancelledError:
            ctx.cancel()
            if expired and not cancelling():
                raise self._timed_out(tool, limit) from None
            raise  # cancelled from outside
        finally:
            handle.cancel()

    async def _execute(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> Any:
        """An async tool under its deadline, or a sync one that does not block, inline."""
        limit = tool.timeout or DEFAULT_TOOL_TIMEOUT
        try:
            if tool.is_async:
                return await with_deadline(tool.func(args, ctx), limit)
            return tool.func(args, ctx)
        except (asyncio.TimeoutError, TimeoutError):
            ctx.cancel()
            raise self._timed_out(tool, limit) from None

    @staticmethod
    def _timed_out(tool: Tool, limit: float) -> ToolError:
        return ToolError(
            f"{tool.name} did not finish within {limit:g} s and was stopped. "
            "Narrow the request (smaller range, more specific path) and retry.",
            code=ErrorCode.TIMEOUT,
        )

    def _bound(self, tool: Tool, output: dict[str, Any], call_id: str) -> dict[str, Any]:
        """Keep every long text field within the limits, spilling the full text to a file."""
        limits = self.config.limits
        for key, value in list(output.items()):
            # `*_base64` fields are binary payloads (images): cutting them only breaks
            # them; the tool caps their size itself.
            if not isinstance(value, str) or len(value) <= 1024 or key.endswith("_base64"):
                continue
            bounded = bound_text(
                value,
                max_lines=limits.max_output_lines,
                max_bytes=limits.max_output_bytes,
                spill_dir=self.spill_dir,
                name=f"{tool.name}-{key}",
            )
            if bounded.truncated:
                output[key] = bounded.text
                output["truncated"] = True
                if bounded.spill_path is not None:
                    output.setdefault("full_output_path", str(bounded.spill_path))
        return output

    def _unknown_tool(self, name: Any) -> ToolError:
        disabled = (
            self.registry.resolve(name, include_disabled=True) if isinstance(name, str) else None
        )
        if disabled is not None:
            return UnknownTool(
                f"The tool {disabled.name!r} (toolset {disabled.toolset!r}) is disabled in this "
                "workspace's [toolsets] config. Use another tool or ask the user to enable it.",
                details={"disabled": disabled.name},
            )
        available = sorted(t.name for t in self.registry.enabled() if t.name != "invalid")
        guess = self.registry.closest(name) if isinstance(name, str) else None
        hint = f" Did you mean {guess!r}?" if guess else ""
        # Naming all ~75 tools costs a model more than it helps; find_tools finds by task.
        where = (
            "find_tools finds one for a task"
            if "find_tools" in available
            else f"available tools: {', '.join(available)}"
        )
        return UnknownTool(
            f"There is no tool named {name!r}.{hint} Call a listed tool; {where}.",
            details={"available": available, "closest": guess},
        )

    def _audited(self, asker: Asker | None, call_id: str, user_id: str) -> Asker | None:
        """The asker, recording every answer in the audit log (see interact/audited)."""
        if isinstance(asker, AuditedAsker):  # a call made by a call (batch): record once
            asker = asker.inner
        if asker is None or self.audit is None:
            return asker

        def record(details: dict[str, Any], door: str, error: str | None) -> None:
            envelope = _error(ErrorCode.CANCELLED, error, None) if error else {}
            self._audit(
                ANSWER_TOOL, details, user_id, call_id, time.perf_counter(), door, envelope,
                note=f"answered through {door}" if error is None else f"no answer: {error}",
            )  # fmt: skip

        return AuditedAsker(asker, record)

    def _audit(
        self,
        tool: str,
        args: Any,
        user_id: str,
        call_id: str,
        started: float,
        transport: str,
        envelope: Mapping[str, Any],
        note: str | None = None,
    ) -> None:
        if self.audit is None:
            return
        error = envelope.get("error")
        self.audit.record(
            AuditRecord(
                ts=time.time(),
                call_id=call_id,
                user_id=user_id,
                tool=tool,
                args=dict(args) if isinstance(args, Mapping) else {"_raw": repr(args)},
                outcome="error" if error else "success",
                error_code=str(error["error_code"]) if error else None,
                duration_ms=(time.perf_counter() - started) * 1000,
                workspace=str(self.jail.root),
                transport=transport,
                note=note,
            )
        )


@dataclass(frozen=True)
class _Ask:
    """The worker's answer when a rule asks: the subjects to ask the person about."""

    subjects: Sequence[str] | None


def _error(code: ErrorCode, message: str, details: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "success": False,
        "error": {"error_code": code.value, "message": message, "details": details or {}},
    }


def _as_dict(result: Any) -> dict[str, Any]:
    if isinstance(result, dict):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    if result is None:
        return {}
    if isinstance(result, str):
        return {"text": result}
    return {"result": result}

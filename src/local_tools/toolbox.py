"""``Toolbox``: the public entry point that wires config, jail, policy, audit and tools."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from local_tools.core.audit import AuditLog
from local_tools.core.config import Action, Config, ConfigError, load_config
from local_tools.core.context import ProgressFunc
from local_tools.core.output import cleanup_spills, render_compact
from local_tools.core.profiles import (
    Profile,
    UnknownProfile,
    listed_tools,
    listing_version,
    resolve_profile,
)
from local_tools.core.registry import DuplicateToolError, Registry
from local_tools.core.runner import Runner
from local_tools.core.state import (
    default_state_dir,
    private_dir,
    tighten_state_dir,
    workspace_state_dir,
)
from local_tools.core.tool import Tool
from local_tools.core.trust import Trust, stored_trust, trust_command
from local_tools.interact.base import Asker
from local_tools.interact.pending import PendingQueue
from local_tools.interact.queue_asker import QueueAsker
from local_tools.interact.terminal import safe_text
from local_tools.security.approvals import ApprovalStore
from local_tools.security.jail import Jail
from local_tools.security.policy import Policy
from local_tools.shell.git_reach import git_protected

__all__ = ["Toolbox"]

ConfigSource = None | Mapping[str, Any] | str | os.PathLike[str]


class Toolbox:
    """A workspace's tools behind one runner.

    ``Toolbox(workspace, config).run(name, args, user_id=...)`` returns an envelope
    and never raises; ``arun`` is the same call for asyncio code.

    The workspace's own ``local-tools.toml`` and ``.local-tools/tools/*.py`` take effect
    only when the user trusted the workspace (``local-tools trust``) and nothing changed
    since; until then only the file's narrowing settings apply and its tools are not
    imported (``trust_notice()`` says what was left out). ``trust=True`` is for a caller
    who vouches for the folder; ``trust=False`` ignores a stored trust. A ``config``
    passed here is the caller's own and always applies in full.

    ``profile`` (default: ``[toolsets] profile``, else "core") decides what ``tools()``
    and the servers list to a model; it never limits what can be called by name.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str] | None = None,
        config: ConfigSource = None,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        asker: Asker | None = None,
        audit: bool = True,
        plugins: bool = True,
        tools: Iterable[Tool] | None = None,
        trust: bool | None = None,
        profile: str | None = None,
    ) -> None:
        start = Path(workspace) if workspace is not None else Path.cwd()
        self.state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
        start = start.resolve()
        self._trust: Trust = stored_trust(start, self.state_dir) if trust is None else trust
        self.config: Config = load_config(
            dict(config) if isinstance(config, Mapping) else config,
            start,
            trust=self._trust,
            state_dir=self.state_dir,
        )
        # The config decides the jail when it names a root; otherwise it is the
        # workspace it was loaded for.
        root = Path(self.config.workspace.root)
        ws_state = workspace_state_dir(self.state_dir, Path(os.path.realpath(root)))
        # Per workspace: one workspace's spilled output is not readable from another.
        self.spill_dir = ws_state / "tool-output"
        private_dir(self.spill_dir)  # 0700, and a state dir of an older version tightened
        tighten_state_dir(self.state_dir)
        cleanup_spills(self.spill_dir)
        self.jail = Jail(
            root,
            # Spilled output must stay readable so a model can page through it.
            extra_roots=[*self.config.workspace.extra_roots, self.spill_dir],
            writable_roots=self.config.workspace.writable_roots,
        )
        self.workspace = self.jail.root
        approvals = ApprovalStore(ws_state / "approvals.json")
        self.policy = Policy.from_config(
            self.config, approvals=approvals, protected=self._protected_paths()
        )
        plugin_trust = self._trust
        if trust is None and Path(os.path.realpath(root)) != Path(os.path.realpath(start)):
            plugin_trust = stored_trust(self.workspace, self.state_dir)  # another folder
        self.registry = _build_registry(
            tools, self.workspace if plugins else None, plugin_trust, self.state_dir
        )
        self.registry.set_toolsets(self.config.toolsets.enabled, self.config.toolsets.disabled)
        if not self.config.models:  # task and compact call a model the user configures
            self.registry.set_unlisted("models", "no [models.NAME] is configured")
        self.profile = self._profile(profile)
        self.audit = AuditLog(self.state_dir / "audit.sqlite") if audit else None
        # Where calls with no person at their own door wait for the web console.
        self.pending = PendingQueue(ws_state / "pending.sqlite")
        self.runner = Runner(
            registry=self.registry,
            policy=self.policy,
            jail=self.jail,
            config=self.config,
            state_dir=self.state_dir,
            spill_dir=self.spill_dir,
            audit=self.audit,
            asker=asker if asker is not None else QueueAsker(self.pending),
            profile=self.profile,
        )
        self._local = threading.local()

    def _profile(self, name: str | None) -> Profile:
        try:
            return resolve_profile(
                name or self.config.toolsets.profile, self.config.profile_entries()
            )
        except UnknownProfile as exc:
            raise ConfigError(f"--profile: {exc}") from None

    def _protected_paths(self) -> dict[str, dict[str, Action]]:
        """Rules no broad allow lifts for the files that steer local-tools itself.

        The state dir holds approvals and the audit log: an agent must never write it,
        even when a root contains it (a workspace of `~`). The config file in use is
        protected like `local-tools.toml`, wherever it lies.
        """
        rules: dict[str, dict[str, Action]] = {"read:file": {}, "write:file": {}, "delete:file": {}}
        state_real = Path(os.path.realpath(self.state_dir))
        spill_real = Path(os.path.realpath(self.spill_dir))
        # Only a root that overlaps the state dir can reach it (the spill dir, inside
        # it, is a root of its own): without one the jail already refuses it, and
        # leaving the rule out spares glob and grep a check of every path they list.
        if any(
            root != spill_real
            and (root == state_real or state_real in root.parents or root in state_real.parents)
            for root, _ in self.jail.roots
        ):
            state = self.jail.display(state_real)
            for permission in rules:
                rules[permission].update({state: "deny", f"{state}/*": "deny"})
            rules["read:file"][f"{self.jail.display(spill_real)}/*"] = "allow"
        source = self.config.source
        if source and os.path.isfile(source):
            shown = self.jail.display(os.path.realpath(source))
            rules["write:file"][shown] = "ask"
            rules["delete:file"][shown] = "ask"
        # What the repositories' config makes git run outside `.git` (covered above):
        # core.hooksPath's folder (husky's .githooks) and included config files.
        roots = [root for root, _ in self.jail.roots if root != spill_real]
        for entry in git_protected(roots):
            if entry.checked:
                shown = self.jail.display(entry.path)
                for permission in ("write:file", "delete:file"):
                    rules[permission][shown] = "ask"
                    if entry.tree:
                        rules[permission][f"{shown}/*"] = "ask"
        return rules

    # -- trust ------------------------------------------------------------------

    def trust_notice(self) -> str | None:
        """What of the workspace's own was left out because it is not trusted, and the
        command that trusts it; None when nothing was. For `doctor`, `list` and the
        servers' start-up log."""
        config_file = self.config.untrusted_file
        ignored = list(self.config.ignored) if config_file else []
        plugins = self.registry.untrusted
        if not ignored and not plugins:
            return None
        folder = Path(config_file).parent if config_file else Path(self.workspace)
        parts = []
        if ignored:
            parts.append(f"settings of {config_file} not applied: {'; '.join(ignored)}")
        if plugins:
            parts.append("tool files not loaded: " + ", ".join(p.source for p in plugins))
        # Names and values come from the workspace: no escape sequence reaches a terminal.
        return safe_text(
            f"this workspace is not trusted ({folder}): {'. '.join(parts)}. "
            f"To trust it after reviewing them: {trust_command(folder)}"
        )

    # -- calling ----------------------------------------------------------------

    async def arun(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        user_id: str = "default",
        asker: Asker | None = None,
        transport: str = "python",
        on_progress: ProgressFunc | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        return await self.runner.arun(
            name,
            args,
            user_id=user_id,
            asker=asker,
            transport=transport,
            on_progress=on_progress,
            session_id=session_id,
        )

    def end_session(self, user_id: str, session_id: str | None) -> None:
        """A transport's session ended: drop its state, end the commands it left running."""
        self.runner.end_session(user_id, session_id)

    def run(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        user_id: str = "default",
        asker: Asker | None = None,
        transport: str = "python",
        session_id: str | None = None,
    ) -> dict[str, Any]:
        coro = self.arun(
            name, args, user_id=user_id, asker=asker, transport=transport, session_id=session_id
        )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loop = self._loop()
            envelope = loop.run_until_complete(coro)
            if asyncio.all_tasks(loop):  # what the call dropped is closed now, not at exit
                loop.run_until_complete(asyncio.sleep(0))
            return envelope
        # Called from inside a running loop (a notebook, an async app): finish the
        # call on a helper thread rather than fail.
        result: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: result.update(asyncio.run(coro)))
        worker.start()
        worker.join()
        return result

    def _loop(self) -> asyncio.AbstractEventLoop:
        # One loop per thread, reused: creating a loop per call costs more than the call.
        holder: _LoopHolder | None = getattr(self._local, "loop", None)
        if holder is None or holder.loop.is_closed():
            holder = self._local.loop = _LoopHolder()
        return holder.loop

    # -- describing -------------------------------------------------------------

    def listed(
        self, *, user_id: str = "default", session_id: str | None = None, profile: str | None = None
    ) -> list[Tool]:
        """The tools listed to a model: the profile's (this Toolbox's, or `profile`:
        "full" lists every enabled tool), those `find_tools` loaded into the session, less
        those denied to the user outright. Every enabled tool stays callable by name."""
        chosen = self.profile if profile is None else self._profile(profile)
        session = self.runner.session_state(user_id, session_id)
        return listed_tools(self.registry, self.policy, chosen, session, user_id)

    def tools(
        self, *, user_id: str = "default", session_id: str | None = None, profile: str | None = None
    ) -> list[dict[str, Any]]:
        """The listed tools (see `listed`) with name, description, JSON Schema parameters,
        permission, hints."""
        listed = self.listed(user_id=user_id, session_id=session_id, profile=profile)
        return [t.describe() for t in listed]

    def listing_version(self, *, user_id: str = "default", session_id: str | None = None) -> int:
        """Changes when `find_tools` loads tools into the session: time to re-list."""
        return listing_version(self.runner.session_state(user_id, session_id))

    def render(self, envelope: Mapping[str, Any]) -> str:
        """The text a model reads for this envelope (the tool's own rendering on success)."""
        if not envelope.get("success"):
            err = envelope.get("error") or {}
            return f"Error [{err.get('error_code')}]: {err.get('message')}"
        name = (envelope.get("meta") or {}).get("tool", "")
        tool = self.registry.resolve(name) if name else None
        output = envelope.get("output")
        if tool is not None and tool.render is not None:
            return tool.render(output)
        return render_compact(output)

    def close(self) -> None:
        self.runner.resources.close()  # background processes, browsers: ended first
        if self.audit is not None:
            self.audit.close()
        self.pending.close()
        holder: _LoopHolder | None = getattr(self._local, "loop", None)
        if holder is not None:
            _shut_down(holder.loop)

    def __enter__(self) -> Toolbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _LoopHolder:
    """Owns a thread's loop; closes it when the thread ends and its locals are dropped."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        if sys.is_finalizing():  # too late to run anything: the modules are going away
            self.loop.close()
            return
        with contextlib.suppress(Exception):  # a finalizer never raises
            _shut_down(self.loop)


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
    """Close a loop `run` used, as `asyncio.run` closes its own: the work still scheduled
    runs first. A call can leave some: an async generator dropped before its end (httpx's
    body streams, when a page is cut at the size limit) is closed by a task the loop
    schedules as it is garbage collected; closing the loop under that task printed "Task
    was destroyed but it is pending!"."""
    if loop.is_closed() or loop.is_running():
        return
    try:
        loop.run_until_complete(asyncio.sleep(0))  # tasks just scheduled get their turn
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def _build_registry(
    tools: Iterable[Tool] | None,
    workspace: Path | None,
    trust: Trust = False,
    state_dir: Path | None = None,
) -> Registry:
    from local_tools.tools import builtin_tools  # deferred: keeps `import local_tools` light

    # With a state dir, from its manifest: a tool's module is imported when first used.
    try:
        registry = Registry(builtin_tools(state_dir))
    except DuplicateToolError:  # a manifest edited to clash (an alias): not used
        registry = Registry(builtin_tools(state_dir, rebuild=True))
    for extra in tools or ():
        registry.add(extra, source="Toolbox(tools=...)")
    if workspace is not None:
        registry.load_workspace_tools(workspace, trust)
        registry.load_entry_points()
    return registry

"""How a toolbox starts its language servers: confined like the commands it runs.

The file system read-only (a server reads the project, it never writes it), a private
TMPDIR (also XDG_CACHE_HOME), no network, the state folder and the credential stores
hidden (shell/command_reach.py), the host environment reduced to the allow-list commands
get plus the server's `env`. The TMPDIR (in the state folder) goes with the server. With
`[sandbox] mode = "off"` or no working engine the server runs unconfined, like commands
then.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

from local_tools.core.context import ToolContext
from local_tools.core.state import private_dir
from local_tools.lsp.manager import Launch, Launched, LspManager, LspSettings
from local_tools.lsp.specs import ServerSpec
from local_tools.security.policy import Action
from local_tools.security.sandbox import hiding_supported, sandbox_argv, sandbox_engine
from local_tools.shell.command_reach import hidden_paths
from local_tools.shell.environment import build_environment

__all__ = ["confined_launch", "lsp_manager", "settings_of"]

RESOURCE = "lsp"


def settings_of(ctx: ToolContext) -> LspSettings:
    lsp = ctx.config.lsp
    return LspSettings(
        enabled=lsp.enabled,
        wait=lsp.wait,
        start_timeout=lsp.start_timeout,
        request_timeout=lsp.request_timeout,
        idle_timeout=lsp.idle_timeout,
        max_open_documents=lsp.max_open_documents,
        servers=dict(lsp.servers),
    )


def lsp_manager(ctx: ToolContext) -> LspManager:
    """The toolbox's manager, made on first use."""

    def make() -> LspManager:
        return LspManager(settings_of(ctx), [r for r, _ in ctx.jail.roots], confined_launch(ctx))

    return ctx.resource(RESOURCE, make)


def confined_launch(ctx: ToolContext) -> Launch:
    mode = ctx.config.sandbox.mode
    engine = sandbox_engine()
    mounted = hiding_supported(engine)
    state_dir = ctx.state_dir

    def launch(spec: ServerSpec, root: Path, command: str) -> Launched:
        private_dir(state_dir)
        tmp = Path(tempfile.mkdtemp(prefix=f"lsp-{spec.name}-", dir=state_dir))
        env = build_environment(dict(spec.env))
        env["TMPDIR"] = str(tmp)
        env["XDG_CACHE_HOME"] = str(tmp)
        cleanup = functools.partial(shutil.rmtree, tmp, ignore_errors=True)
        argv = [command, *spec.args]
        if mode == "off" or engine.name == "off":
            return Launched(argv, env, (), cleanup)
        try:
            # Found at each launch, not when the manager is made: that happens inside
            # the toolbox's resource lock, which finding .env files takes too; and a
            # secret file added since is hidden from the next server.
            hide, reveal = hidden_paths(ctx, secrets=True) if mounted else ([], [])
            if mounted:
                hide += rule_protected(ctx, root)
            argv = sandbox_argv(
                argv, mode="read-only", network=False, cwd=root, writable=[], tmp_dir=tmp,
                engine=engine, hide=hide, reveal=reveal,
            )  # fmt: skip
        except BaseException:
            cleanup()
            raise
        return Launched(argv, env, (), cleanup, own_pids=mounted)

    return launch


_SHOWN: tuple[Action, ...] = ("allow", "ask")
MAX_PROTECTED_WALK = 20_000  # files looked at under a server's root


def rule_protected(ctx: ToolContext, root: Path) -> list[Path]:
    """Files under `root` that a `read:file` rule denies: hidden from the server, whose
    hover texts and messages (a constant's value, a docstring) would otherwise carry
    what read_file refuses. Files a rule asks about stay visible (a rename must see
    every use; the lsp tool shows their text only as read_file would). None to find
    when no rule denies reads. The rules of the user whose call started the server
    (servers are per toolbox)."""
    readable = ctx.policy.subject_filter(ctx.user_id, "read:file", _SHOWN)
    if readable is None:
        return []
    hidden: list[Path] = []
    seen = 0
    # Every file, ignored ones too (a .gitignore'd secrets file is the usual case).
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            seen += 1
            if seen > MAX_PROTECTED_WALK:
                return hidden
            path = Path(folder) / name
            try:
                shown = ctx.jail.display(path)
            except Exception:  # not the jail's to show: not ours to hide either
                continue
            if not readable(shown):
                hidden.append(path)
    return hidden

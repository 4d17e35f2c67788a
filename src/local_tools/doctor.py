"""``local-tools doctor``: what this machine gives the tools (jail engine, rg, sandbox,
the optional extras installed, the language servers found)."""

from __future__ import annotations

import os
import platform
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from local_tools.security.sandbox import SandboxEngine
    from local_tools.toolbox import Toolbox

__all__ = ["diagnose", "landlock_abi"]


def landlock_abi() -> int | None:
    """The kernel's Landlock ABI version, or None where Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return None  # the helper module loads the C library of a Linux system
    from local_tools.security.landlock import landlock_abi as kernel_abi

    return kernel_abi() or None


def _sandbox(tb: Toolbox, engine: SandboxEngine) -> str:
    mode = tb.config.sandbox.mode
    name, detail = engine.name, engine.detail
    if mode == "off":
        return f'off by config ([sandbox] mode = "off"); available: {name} ({detail})'
    if name == "off":
        return f"OFF: {detail} — commands run unconfined although mode = {mode!r}"
    network = "network allowed" if tb.config.sandbox.network else "no network"
    return f"{name}, {mode}, {network} ({detail})"


def _browser(tb: Toolbox) -> str:
    """The Chromium the browser tools would drive ([browser] executable), or why none."""
    from local_tools.browser import find_executable
    from local_tools.core.errors import ToolError

    try:
        return find_executable(tb.config.browser.executable)
    except ToolError as exc:
        return f"not found: {exc.message}"


def _extras() -> list[tuple[str, str]]:
    """Each optional extra: installed (with its version), or the command that brings it."""
    from local_tools.core.extras import EXTRAS, extra_status

    return [(f"extra [{name}]", extra_status(name)) for name in EXTRAS]


def _language_servers(tb: Toolbox) -> list[tuple[str, str]]:
    """Whether [lsp] is on, and each server a file could go to: its command found (and
    the version of a PyPI-installed one), or what installs it. No server is started."""
    from local_tools.interact.terminal import safe_text
    from local_tools.lsp.specs import find_command, server_specs

    lsp = tb.config.lsp
    state = "on" if lsp.enabled else "OFF by config ([lsp] enabled = false)"
    rows = [("language servers", f"{state}; a file goes to the first found for its language")]
    for spec in server_specs(lsp.servers):
        found = find_command(spec.command)
        if found is None:
            missing = f"{spec.language}: not found: {spec.install}"
            rows.append((safe_text(f"  {spec.name}"), safe_text(missing)))
            continue
        version = _distribution_version(spec.name) if spec.name in _FROM_PYPI else ""
        rows.append((safe_text(f"  {spec.name}"), safe_text(f"{spec.language}: {found}{version}")))
    rows += [
        (safe_text(f"  {name}"), "disabled by config ([lsp.NAME] enabled = false)")
        for name, server in lsp.servers.items()
        if not server.enabled
    ]
    return rows


_FROM_PYPI = ("basedpyright", "pyright")  # servers whose Python package has their name


def _checkpoints(tb: Toolbox) -> str:
    """On or off, the git they need, where they are kept and how commands find changes."""
    import shutil

    from local_tools.checkpoints.store import checkpoint_folder

    conf = tb.config.checkpoints
    if not conf.enabled:
        return "OFF by config ([checkpoints] enabled = false): changes cannot be undone"
    if shutil.which("git") is None:
        return "UNAVAILABLE: git is not installed (calls run, but cannot be undone)"
    watching = "inotify" if sys.platform == "linux" and conf.watch else "git's stat cache"
    where = checkpoint_folder(tb.state_dir, tb.jail.root)
    return f"on (git; commands: {watching}; kept {conf.keep_days:g} days in {where})"


def _models(tb: Toolbox) -> list[tuple[str, str]]:
    """Each configured model (task, compact) and whether its key's variable is set; never
    the key."""
    from local_tools.interact.terminal import safe_text

    models = tb.config.models
    if not models:
        return [("models", "none configured: task and compact are not listed ([models.NAME])")]
    rows = []
    for name, m in models.items():
        where = m.base_url or f"the {m.api} API"
        key = m.api_key_env or ("" if m.base_url else f"{m.api.upper()}_API_KEY")
        if key:
            where += f", key {key} {'set' if os.environ.get(key) else 'NOT SET'}"
        rows.append((f"model {name}", safe_text(f"{m.api} {m.model} at {where}")))
    return rows


def _distribution_version(name: str) -> str:
    """ " (basedpyright 1.31.0)" when a Python package of that name is installed: cheap,
    unlike running a server's --version."""
    from importlib import metadata

    try:
        return f" ({name} {metadata.version(name)})"
    except (metadata.PackageNotFoundError, ValueError):
        return ""


def diagnose(tb: Toolbox) -> list[tuple[str, str]]:
    from local_tools import __version__
    from local_tools.search import engine_info
    from local_tools.security.sandbox import bwrap_binaries, hiding_detail, sandbox_engine
    from local_tools.shell.environment import shell_argv
    from local_tools.shell.tree_kill import cgroup_info

    abi = landlock_abi()
    bwrap = ", ".join(bwrap_binaries())
    browser = _browser(tb)
    return [
        ("local-tools", __version__),
        ("python", f"{platform.python_version()} ({sys.executable})"),
        ("platform", f"{platform.system()} {platform.release()} {platform.machine()}"),
        ("workspace", str(tb.workspace)),
        ("config", tb.config.source or "built-in defaults"),
        ("state dir", str(tb.state_dir)),
        ("path jail", tb.jail.engine),
        ("search", engine_info()),
        ("shell", shell_argv("")[0]),
        ("sandbox", _sandbox(tb, sandbox_engine())),
        ("hidden", hiding_detail(sandbox_engine(), tb.config.sandbox.mode)),
        ("process tree", cgroup_info()),
        ("landlock", f"ABI {abi}" if abi else "unavailable"),
        ("bubblewrap", bwrap or "not found"),
        ("browser", browser),
        *_extras(),
        *_language_servers(tb),
        ("checkpoints", _checkpoints(tb)),
        *_models(tb),
        ("tools", f"{len(tb.tools())} enabled"),
        *_custom_tools(tb),
        *_trust(tb),
    ]


def _trust(tb: Toolbox) -> list[tuple[str, str]]:
    """Whether the workspace's own config and tools took effect; what was left out, and
    the command that trusts it."""
    from local_tools.core.trust import trust_command
    from local_tools.interact.terminal import safe_text

    config_file = tb.config.untrusted_file
    ignored = tb.config.ignored if config_file else ()
    untrusted = tb.registry.untrusted
    if not ignored and not untrusted:
        from local_tools.core.trust import stored_trust

        trusted = stored_trust(tb.workspace, tb.state_dir) is not False
        return [("workspace trust", "trusted" if trusted else "nothing of its own left out")]
    rows = [("workspace trust", "NOT TRUSTED: its own settings that widen and its tools are off")]
    rows += [("  ignored", safe_text(f"{item} ({config_file})")) for item in ignored]
    rows += [("  not loaded", safe_text(p.source)) for p in untrusted]
    folder = os.path.dirname(config_file) if config_file else str(tb.workspace)
    rows.append(("  to trust", safe_text(trust_command(folder))))
    return rows


def _custom_tools(tb: Toolbox) -> list[tuple[str, str]]:
    """The custom tools loaded, and each file or entry point that failed to load, why."""
    registry = tb.registry
    loaded = [t.name for t in registry.all() if registry.source(t.name) != "builtin"]
    failures = registry.failures
    names = f" ({', '.join(loaded)})" if loaded else ""
    rows = [("custom tools", f"{len(loaded)} loaded{names}, {len(failures)} failed to load")]
    rows += [("  not loaded", str(failure)) for failure in failures]
    return rows

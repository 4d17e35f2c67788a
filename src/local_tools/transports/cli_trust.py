"""`local-tools trust`: show what a workspace's own config and tools would do, then trust it.

What is shown comes from the workspace (file names, config values), which may be an
attacker's: every line goes through `safe_text`, so escape sequences cannot redraw the
prompt. The hashes stored are the ones taken before the files were shown: a file
changed while the person reads is not the one trusted.
"""

from __future__ import annotations

import os
import time
from pathlib import Path, PurePosixPath
from typing import TextIO

from local_tools.core.config import ConfigError, load_config
from local_tools.core.trust import (
    PLUGIN_DIR,
    WORKSPACE_CONFIG,
    TrustStore,
    fingerprint,
    stored_trust,
    trust_command,
    workspace_files,
    workspace_key,
)
from local_tools.interact.terminal import read_line, safe_text

__all__ = ["describe_workspace", "list_trusted", "offer_trust", "run_trust", "startup_notice"]


def describe_workspace(workspace: Path, files: dict[str, str]) -> list[str]:
    """What trusting `workspace` turns on: its config's widening settings, its tool files."""
    lines = [f"Workspace: {workspace}"]
    if WORKSPACE_CONFIG in files:
        lines.append(f"Its config file {WORKSPACE_CONFIG} would apply in full, including:")
        try:
            ignored = load_config(None, workspace, trust=False).ignored
        except ConfigError as exc:
            ignored = (f"(the file is invalid and would not load: {exc})",)
        lines += [f"  {item}" for item in ignored] or ["  (nothing beyond what applies already)"]
    plugins = [name for name in files if name != WORKSPACE_CONFIG]
    if plugins:
        lines.append("Its tool files would be imported and run as you, unsandboxed:")
        for name in plugins:
            try:
                size = (workspace / name).stat().st_size
            except OSError:
                size = 0
            lines.append(f"  {name} ({size} bytes)")
    return [safe_text(line) for line in lines]


def run_trust(
    workspace: str | os.PathLike[str] | None,
    state_dir: Path,
    *,
    yes: bool,
    revoke: bool,
    out: TextIO,
    err: TextIO,
    stdin: TextIO,
) -> tuple[int, str | None]:
    """`local-tools trust [--revoke]`: (exit code, an error for the caller to print)."""
    folder = Path(workspace_key(workspace or Path.cwd()))
    store = TrustStore(state_dir)
    if revoke:
        done = store.revoke(folder)
        print(f"{'revoked trust in' if done else 'was not trusted:'} {folder}", file=out)
        return 0, None
    if not folder.is_dir():
        return 2, f"not a folder: {folder}"
    files = fingerprint(folder)
    if not files:
        print(
            f"nothing to trust in {folder}: no {WORKSPACE_CONFIG}, no .local-tools/tools/", file=out
        )
        return 0, None
    if stored_trust(folder, state_dir) is not False:
        print(f"already trusted, unchanged since: {folder}", file=out)
        return 0, None
    for line in describe_workspace(folder, files):
        print(line, file=err if not yes else out)
    if not yes:
        if not (_isatty(stdin) and _isatty(err)):
            return 2, (
                f"not trusting {folder}: there is no terminal to confirm on. Review the "
                "files above, then run again with --yes."
            )
        if not _confirm(f"Trust {safe_text(str(folder))}? [y/N] ", stdin, err):
            print("not trusted", file=err)
            return 1, None
    if fingerprint(folder) != files:  # changed while shown or while the person decided
        return 1, f"not trusting {folder}: its files changed meanwhile; run it again."
    store.trust(folder, files)
    print(f"trusted: {folder} (it asks again when these files change)", file=out)
    return 0, None


def list_trusted(state_dir: Path, out: TextIO) -> int:
    records = TrustStore(state_dir).records()
    if not records:
        print("(no trusted workspaces)", file=out)
    for record in records:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.trusted_at))
        if not os.path.isdir(record.workspace):
            status = "missing"
        elif fingerprint(Path(record.workspace)) == record.files:
            status = "trusted"
        else:
            status = "changed since: not trusted until trusted again"
        shown = safe_text(record.workspace)
        print(f"{shown}  {when}  {len(record.files)} files  {status}", file=out)
    return 0


def offer_trust(notice: str, workspace: Path, state_dir: Path, stdin: TextIO, err: TextIO) -> bool:
    """On a terminal, on first use: say what was left out and offer to trust. True when
    the person trusted the workspace (the caller then loads it again)."""
    folder = Path(workspace_key(workspace))
    files = fingerprint(folder)
    print(f"local-tools: {notice}", file=err)
    for line in describe_workspace(folder, files):
        print(line, file=err)
    if not _confirm("Trust this workspace now? [y/N] ", stdin, err):
        return False
    if fingerprint(folder) != files:  # changed while shown or while the person decided
        print("local-tools: not trusted: its files changed meanwhile; run it again.", file=err)
        return False
    TrustStore(state_dir).trust(folder, files)
    return True


def startup_notice(
    workspace: str | os.PathLike[str] | None, config_given: bool, state_dir: Path
) -> str | None:
    """What a server started on `workspace` leaves out, without importing anything of it
    (said before the server starts; the Toolbox itself says it again when built)."""
    folder = Path(workspace_key(workspace or Path.cwd()))
    if stored_trust(folder, state_dir) is not False:
        return None
    try:
        files = workspace_files(folder)
    except OSError:
        files = {}
    parts = []
    if WORKSPACE_CONFIG in files and not config_given and not os.environ.get("LOCAL_TOOLS_CONFIG"):
        try:
            ignored = load_config(None, folder, trust=False).ignored
        except ConfigError:
            ignored = ()  # the server reports the broken file itself
        if ignored:
            parts.append(f"settings of {WORKSPACE_CONFIG} not applied: {'; '.join(ignored)}")
    plugins = sorted(
        n
        for n in files
        if n.endswith(".py") and PurePosixPath(n).parent == PurePosixPath(PLUGIN_DIR.as_posix())
    )
    if plugins:
        parts.append(f"tool files not loaded: {', '.join(plugins)}")
    if not parts:
        return None
    text = f"this workspace is not trusted ({folder}): {'. '.join(parts)}. "
    return safe_text(text + f"To trust it after reviewing them: {trust_command(folder)}")


def _confirm(prompt: str, stdin: TextIO, err: TextIO) -> bool:
    print(prompt, end="", file=err, flush=True)
    try:
        answer = read_line(stdin)
    except (OSError, TimeoutError):
        return False
    return answer.strip().lower() in ("y", "yes")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False

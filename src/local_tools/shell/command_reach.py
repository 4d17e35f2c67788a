"""What a command may see and change besides its roots: decided per call for exec_cmd.

- Protected paths (security/trusted_paths.py): `.local-tools/`, `local-tools.toml` at
  each root's top, the config file in use, and what in `.git` runs code; a `write:file`
  rule naming the path (as for the file tools) lifts the protection.
- Hidden paths: local-tools' state dir (but the command's own temp dir and the
  workspace's spilled output), the credential stores (security/hidden_paths.py), and,
  for a command no person approved, the `.env`-style files under the roots.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from local_tools.core.config import CONFIG_ENV, CONFIG_FILENAME
from local_tools.core.context import ToolContext
from local_tools.core.state import default_state_dir
from local_tools.security.hidden_paths import MAX_DIRS, SecretFiles, credential_paths
from local_tools.security.real_path import real_path
from local_tools.security.trusted_paths import Protected, TrustedPaths, protected_paths
from local_tools.shell.git_reach import git_protected

__all__ = [
    "approved_by_person",
    "hidden_paths",
    "protected_existing",
    "protected_for",
    "read_only_by_default",
    "secret_files",
    "secret_search_note",
    "trusted_paths",
]


def trusted_paths(ctx: ToolContext) -> TrustedPaths:
    """The toolbox's before/after guard; what it takes away goes under the state dir."""
    quarantine = ctx.spill_dir.parent / "reverted"
    return ctx.resource("shell.trusted_paths", lambda: TrustedPaths(quarantine))


def _roots(ctx: ToolContext) -> list[Path]:
    spill = Path(real_path(ctx.spill_dir))
    return [root for root, _ in ctx.jail.roots if root != spill]


def protected_for(ctx: ToolContext) -> list[Protected]:
    """The protected paths of this call's roots and config, less those a rule lifts.

    `$LOCAL_TOOLS_CONFIG` is protected too, whether it exists or not: the next start
    would load it in full."""
    roots = _roots(ctx)
    paths = protected_paths(roots, ctx.config.source, CONFIG_FILENAME)
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        real = Path(real_path(os.path.expanduser(from_env)))
        paths += [Protected(real, real.parent)]
    # Submodules, hooksPath and included config files, from the repository scan.
    known = {p.path for p in paths}
    paths += [p for p in git_protected(roots) if p.path not in known]
    answers = _lifted_answers(ctx)
    kept: list[Protected] = []
    for p in paths:
        lifted = answers.get((p.path, p.tree))
        if lifted is None:
            lifted = answers[(p.path, p.tree)] = _lifted(ctx, p)
        if not lifted:
            kept.append(p)
    return kept


def protected_existing(
    ctx: ToolContext, protected: list[Protected] | None = None
) -> list[Protected]:
    """The protected paths that exist now: the sandbox mounts them read-only over
    themselves (a `.git` folder itself stays writable: objects, refs, the index).
    `protected`: protected_for(ctx), when the caller has it already."""
    found = protected_for(ctx) if protected is None else protected
    return [p for p in found if not p.container and os.path.lexists(p.path)]


def _lifted(ctx: ToolContext, p: Protected) -> bool:
    subject = ctx.jail.display(p.path) + ("/*" if p.tree else "")
    decision = ctx.policy.evaluate(ctx.user_id, "write:file", subject)
    return decision.action == "allow" and not _broad(decision.rule)


_MAX_ANSWERS = 4096


class _LiftedAnswers:
    """`_lifted`'s answers, asked twice or three times per command: kept for one policy,
    jail, user and version of the approvals, as the policy keeps its compiled rules."""

    def __init__(self) -> None:
        # Swapped whole, so a reader thread ending a command never mixes two owners.
        self.current: tuple[tuple[object, ...], dict[tuple[Path, bool], bool]] = ((), {})


def _lifted_answers(ctx: ToolContext) -> dict[tuple[Path, bool], bool]:
    if ctx.resources is None:
        return {}
    memo = ctx.resource("shell.lifted", _LiftedAnswers)
    owner: tuple[object, ...] = (ctx.policy, ctx.jail, ctx.policy.approvals.version, ctx.user_id)
    known, answers = memo.current
    same = bool(known) and known[0] is owner[0] and known[1] is owner[1] and known[2:] == owner[2:]
    if not same or len(answers) > _MAX_ANSWERS:
        answers = {}
        memo.current = (owner, answers)
    return answers


def _broad(rule: str) -> bool:
    """A rule for every path (`"write:file" = "allow"`, `{ "*..." = ... }`), which does
    not lift a protection: only one naming the path does."""
    return '= "allow" (' in rule or '{ "*' in rule


def approved_by_person(ctx: ToolContext, subjects: list[str]) -> bool:
    """Whether a person approved every part of this command: asked now, an "allow
    always" answer, or a rule of their config. False when the built-in read-only rules
    allowed any part: `make test; grep -r KEY .` must not show `grep` the `.env` files
    that `make test` may see."""
    return bool(subjects) and not any(_read_only_by_default(ctx, s) for s in subjects)


def read_only_by_default(ctx: ToolContext, subjects: list[str]) -> bool:
    """Whether every part of this command is one the built-in rules allow as read-only
    (ls, cat, git status, ...): such a command changes no file."""
    return all(_read_only_by_default(ctx, s) for s in subjects)


def _read_only_by_default(ctx: ToolContext, subject: str) -> bool:
    decision = ctx.policy.evaluate(ctx.user_id, "execute:command", subject)
    return decision.action == "allow" and decision.rule.endswith("(default)")


def secret_files(ctx: ToolContext) -> list[Path]:
    return _finder(ctx).find(_roots(ctx))


def secret_search_note(ctx: ToolContext) -> str | None:
    """Said when the last search for secret files stopped before the end of the tree."""
    if _finder(ctx).complete:
        return None
    return (
        f"the search for .env files to hide stopped after {MAX_DIRS} folders: "
        "files deeper in the tree may be visible to this command"
    )


def _finder(ctx: ToolContext) -> SecretFiles:
    return ctx.resource("shell.secret_files", SecretFiles)


def _state_dirs() -> list[Path]:
    """The default state dirs (`$LOCAL_TOOLS_STATE_DIR`'s and the platform's): a Toolbox
    with a state dir of its own must not read the person's servers' token there."""
    found = [default_state_dir()]
    with contextlib.suppress(Exception):  # platformdirs cannot fail here, but never raise
        import platformdirs

        found.append(Path(platformdirs.user_state_dir("local-tools", appauthor=False)))
    return found


def hidden_paths(ctx: ToolContext, *, secrets: bool) -> tuple[list[Path], list[Path]]:
    """(paths to hide, paths under them to show read-only)."""
    sandbox = ctx.config.sandbox
    hide = [ctx.state_dir, *_state_dirs(), *credential_paths(sandbox.deny_read, sandbox.allow_read)]
    if secrets:
        hide += secret_files(ctx)
    return hide, [ctx.spill_dir]

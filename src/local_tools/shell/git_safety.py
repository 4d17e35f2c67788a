"""Git commands that cannot run programs chosen by the repository they run in.

"Read-only" git commands (status, diff, log, show, branch) run programs named in the
repository's own config when asked to: core.fsmonitor, diff.external, a diff driver's
textconv/command or a filter's clean/process selected by .gitattributes, the pager,
gpg.program for signed commits, and the same keys in submodules that status and diff
enter by themselves. A downloaded tree writes its own .git/config, so that is code
execution. `git_environment(cwd)` returns variables for the command's environment whose
command-line-scope config (GIT_CONFIG_COUNT, read after every config file) replaces each
such key the repository sets, with the user's own value from the global or system config
if there is one (so LFS, a textconv or a signing program keep working), else a harmless
one; plus always-on settings (fsmonitor off, hooks off, no pager or editor, no bare
repository discovery, no ext:: transport). `scrub_git_variables` drops inherited GIT_*
variables, which could point git at another repository or config.

The config files read are those git itself would read from `cwd` (found by
`git_discovery`, parsed by `git_config`): each repository found walking up (a `.git`
dir, a `gitdir:` file, a worktree's commondir, a bare-looking dir), its config.worktree,
every include.path and includeIf file (conditions are not evaluated, so this
over-approximates), and the same for each populated submodule listed in the index,
recursively. Needs git >= 2.31 (GIT_CONFIG_COUNT); safe.bareRepository
needs 2.38.

What environment variables cannot do (`repository_runs_code` names it, and the caller
should then ask before any git command there instead of auto-allowing it):
- programs run only by other subcommands, that git has no neutral value for or where the
  first value wins: shell aliases, difftool/mergetool/browser/man/guitool commands,
  sendemail commands, submodule.<name>.update = !command, remote.<name>.uploadpack and
  receivepack (fetch/push/ls-remote of a remote whose url is a local path);
- config this module could not read, parse, or bound (unreadable, not a regular file,
  too large, too many nested repositories or includes): git refuses most of these too.
The variables also only describe `cwd`: a command that moves elsewhere first
(`cd dir && git ...`, `git -C dir`, `--git-dir`, `-c`, its own GIT_* assignments) needs
`git_environment` for that place, or approval.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from local_tools.shell.git_config import (
    Config,
    ConfigFiles,
    join_key,
    parse_config,
    read_config,
    split_key,
)
from local_tools.shell.git_discovery import RepositoryScan, scan_repositories

__all__ = ["git_environment", "git_guard", "repository_runs_code", "scrub_git_variables"]

# The tests compare the parser with `git config --list` under this name.
_parse_config = parse_config

# Identity only: they neither redirect git nor run anything.
_KEPT_GIT_VARIABLES = frozenset(
    {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}
)

_ALWAYS_ENV = {
    "GIT_PAGER": "cat",  # beats core.pager and pager.<cmd>; git treats "cat" as no pager
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": ":",  # ":" is git's "no editor": beats core.editor
    "GIT_SEQUENCE_EDITOR": ":",
}

# Always set: (key, value, may the user's global/system value replace it).
_ALWAYS_CONFIG = (
    ("core.fsmonitor", "false", True),
    ("core.hooksPath", "/dev/null", True),
    ("core.pager", "cat", False),
    ("safe.bareRepository", "explicit", False),
    ("protocol.ext.allow", "never", False),
)

# diff.external and diff.<driver>.command get the file pair as
# `path old-file old-hex old-mode new-file new-hex new-mode [new-path xfrm]`, or just
# the path when unmerged. No value turns them off (git dies on "", ":" or a failing
# program), so this stands in with a plain unified diff. The trailing "#" comments out
# the "$@" git appends.
_DIFF_STAND_IN = (
    '[ $# -ge 7 ] || { echo "* Unmerged path $1"; exit 0; }; '
    'printf "diff --git a/%s b/%s\\n" "$1" "${8:-$1}"; '
    'diff -u -L "a/$1" -L "b/${8:-$1}" -- "$2" "$5"; [ $? -le 1 ] #'
)
_MERGE_STAND_IN = "git merge-file -L ours -L base -L theirs --marker-size=%L %A %O %B"

# Set by the repository -> replaced by the user's value, else by this one.
_SINGLE_KEYS = {
    ("diff", "external"): _DIFF_STAND_IN,
    ("core", "sshcommand"): "ssh",
    ("core", "askpass"): "",  # empty: no askpass program, and prompts are off
    ("core", "alternaterefscommand"): "true",  # no alternate refs: slower fetch only
    ("gpg", "program"): "gpg",
    ("gpg.openpgp", "program"): "gpg",
    ("gpg.x509", "program"): "gpgsm",
    ("gpg.ssh", "program"): "ssh-keygen",
    ("gpg.ssh", "defaultkeycommand"): "true",
}
# Keyed by (section, name) for any subsection ("driver"): the override for each name.
_DRIVER_KEYS = {
    "diff": {"textconv": "cat", "command": _DIFF_STAND_IN},
    "merge": {"driver": _MERGE_STAND_IN},
}
# Any filter.<driver>.* key disables the whole driver: an empty command is "no filter".
_FILTER_KEYS = {"clean": "", "smudge": "", "process": "", "required": "false"}

# Programs git has no neutral value for; reported by repository_runs_code.
_RESIDUAL = {
    "difftool": {"cmd", "path"},
    "mergetool": {"cmd", "path"},
    "browser": {"cmd", "path"},
    "man": {"cmd", "path"},
    "guitool": {"cmd"},
    "sendemail": {"tocmd", "cccmd", "headercmd", "sendmailcmd"},
    "instaweb": {"httpd"},
    "svn": {"authorsprog"},
    # The first value wins for these, so command-line config cannot replace them; they
    # run locally when the remote's url is a path.
    "remote": {"uploadpack", "receivepack"},
}


def scrub_git_variables(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without inherited GIT_* variables (keeps nothing that redirects git)."""
    return {
        k: v
        for k, v in env.items()
        if not k.upper().startswith("GIT_") or k.upper() in _KEPT_GIT_VARIABLES
    }


def git_guard(cwd: Path, scan: RepositoryScan | None = None) -> tuple[dict[str, str], str | None]:
    """`git_environment(cwd)` and `repository_runs_code(cwd)` from one scan of the
    repositories (a command that runs git needs both); `scan`: one made from `cwd`."""
    if scan is None:
        scan = scan_repositories(Path(cwd))
    return _environment(scan), _residual(scan)


def git_environment(cwd: Path) -> dict[str, str]:
    """Variables to add to a command's environment so that git run from `cwd` cannot run
    programs configured by the repository (see the module docstring). Never raises."""
    return _environment(scan_repositories(Path(cwd)))


def repository_runs_code(cwd: Path) -> str | None:
    """The first thing in the repository at `cwd` (or its submodules) that could still run
    a program the repository chose despite `git_environment`, or None. When not None the
    caller should ask before running git there rather than auto-allow it."""
    return _residual(scan_repositories(Path(cwd)))


def _environment(scan: RepositoryScan) -> dict[str, str]:
    trusted = _trusted_config()
    pairs: list[tuple[str, str]] = []
    for key, neutral, restorable in _ALWAYS_CONFIG:
        pairs.append((key, trusted.value(key, neutral) if restorable else neutral))
    env = dict(_ALWAYS_ENV)
    credentials = False
    for key in scan.config.distinct_keys():
        section, sub, name = split_key(key)
        if section == "credential" and name == "helper":
            credentials = True
        elif section == "core" and name == "gitproxy" and sub is None:
            # First match wins for core.gitProxy, so config cannot beat it; a set but
            # empty GIT_PROXY_COMMAND stops the lookup and means "no proxy".
            env["GIT_PROXY_COMMAND"] = ""
        elif section == "filter" and sub is not None:
            pairs += [
                (f"filter.{sub}.{n}", trusted.value(f"filter.{sub}.{n}", v))
                for n, v in _FILTER_KEYS.items()
            ]
        elif sub is not None and name in _DRIVER_KEYS.get(section, {}):
            pairs.append((key, trusted.value(key, _DRIVER_KEYS[section][name])))
        elif (join_key(section, sub), name) in _SINGLE_KEYS:
            pairs.append((key, trusted.value(key, _SINGLE_KEYS[join_key(section, sub), name])))
    if credentials:
        # An empty helper empties the list; then the user's own helpers again.
        pairs.append(("credential.helper", ""))
        pairs += [
            (k, v)
            for k, v in trusted.entries
            if v is not None and split_key(k)[0] == "credential" and split_key(k)[2] == "helper"
        ]
    unique = list(dict.fromkeys(pairs))
    env["GIT_CONFIG_COUNT"] = str(len(unique))
    for i, (key, value) in enumerate(unique):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _residual(scan: RepositoryScan) -> str | None:
    if scan.problems:
        return scan.problems[0]
    for key, value in scan.config.entries:
        section, _, name = split_key(key)
        if name in _RESIDUAL.get(section, ()):
            return key
        shell = value is not None and value.lstrip().startswith("!")
        if shell and (section == "alias" or (section == "submodule" and name == "update")):
            return key
    return None


# -- the values that replace the repository's -------------------------------------------


_trusted_cache: dict[tuple[str, ...], tuple[tuple[object, ...], Config]] = {}


def _trusted_config() -> Config:
    """The user's own global and system config: the values that replace the repository's."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    paths = ("/etc/gitconfig", os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig"))
    # Files these include are not stamped: a stale value there is still the user's own.
    stamp = tuple(_stamp(p) for p in paths)
    cached = _trusted_cache.get(paths)
    if cached is not None and cached[0] == stamp and None not in stamp:
        return cached[1]
    found = ConfigFiles()
    for path in paths:
        read_config(found, path, 0)
    _trusted_cache.clear()
    _trusted_cache[paths] = (stamp, found.config)
    return found.config


def _stamp(path: str) -> tuple[object, ...] | None:
    """A file's identity for caching, or None when it may still change unseen (written in
    the last two seconds, a clock tick git's "racy" check also distrusts)."""
    try:
        st = os.stat(path)
    except OSError:
        return ("missing",)
    if time.time_ns() - st.st_ctime_ns < 2_000_000_000:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

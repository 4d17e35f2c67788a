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

The config files read are those git itself would read from `cwd`: each repository found
walking up (a `.git` dir, a `gitdir:` file, a worktree's commondir, a bare-looking dir),
its config.worktree, every include.path and includeIf file (conditions are not
evaluated, so this over-approximates), and the same for each populated submodule listed
in the index, recursively. Needs git >= 2.31 (GIT_CONFIG_COUNT); safe.bareRepository
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
import re
import stat
import struct
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

__all__ = ["git_environment", "repository_runs_code", "scrub_git_variables"]

_Entries: TypeAlias = list[tuple[str, str | None]]  # (canonical key, value; None: bare key)

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

_MAX_CONFIG_BYTES = 1 << 20
_MAX_INDEX_BYTES = 1 << 28
_MAX_INCLUDE_DEPTH = 10  # git's own limit
_MAX_REPOSITORIES = 64
_GITLINK_MODE = b"\x00\x00\xe0\x00"  # 0o160000 as the index stores it
_E0 = re.compile(b"\xe0")


def scrub_git_variables(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without inherited GIT_* variables (keeps nothing that redirects git)."""
    return {
        k: v
        for k, v in env.items()
        if not k.upper().startswith("GIT_") or k.upper() in _KEPT_GIT_VARIABLES
    }


def git_environment(cwd: Path) -> dict[str, str]:
    """Variables to add to a command's environment so that git run from `cwd` cannot run
    programs configured by the repository (see the module docstring). Never raises."""
    scan = _scan(Path(cwd))
    trusted = _trusted_config()
    pairs: list[tuple[str, str]] = []
    for key, neutral, restorable in _ALWAYS_CONFIG:
        pairs.append((key, trusted.value(key, neutral) if restorable else neutral))
    env = dict(_ALWAYS_ENV)
    credentials = False
    for key in scan.config.distinct_keys():
        section, sub, name = _split_key(key)
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
        elif (_join(section, sub), name) in _SINGLE_KEYS:
            pairs.append((key, trusted.value(key, _SINGLE_KEYS[_join(section, sub), name])))
    if credentials:
        # An empty helper empties the list; then the user's own helpers again.
        pairs.append(("credential.helper", ""))
        pairs += [
            (k, v)
            for k, v in trusted.entries
            if v is not None and _split_key(k)[0] == "credential" and _split_key(k)[2] == "helper"
        ]
    unique = list(dict.fromkeys(pairs))
    env["GIT_CONFIG_COUNT"] = str(len(unique))
    for i, (key, value) in enumerate(unique):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def repository_runs_code(cwd: Path) -> str | None:
    """The first thing in the repository at `cwd` (or its submodules) that could still run
    a program the repository chose despite `git_environment`, or None. When not None the
    caller should ask before running git there rather than auto-allow it."""
    scan = _scan(Path(cwd))
    if scan.problems:
        return scan.problems[0]
    for key, value in scan.config.entries:
        section, _, name = _split_key(key)
        if name in _RESIDUAL.get(section, ()):
            return key
        shell = value is not None and value.lstrip().startswith("!")
        if shell and (section == "alias" or (section == "submodule" and name == "update")):
            return key
    return None


# -- which config files git reads -------------------------------------------------------


@dataclass
class _Config:
    """Config entries in file order, as (canonical key, value or None for a bare key)."""

    entries: _Entries = field(default_factory=list)

    def distinct_keys(self) -> Iterator[str]:
        return iter(dict.fromkeys(k for k, _ in self.entries))

    def last(self, key: str) -> str | None:
        wanted = _canonical(key)
        for k, v in reversed(self.entries):
            if k == wanted:
                return v
        return None

    def value(self, key: str, default: str) -> str:
        """The last value of `key`, "true" for a bare key (git's boolean), else `default`."""
        wanted = _canonical(key)
        for k, v in reversed(self.entries):
            if k == wanted:
                return "true" if v is None else v
        return default


@dataclass
class _Scan:
    config: _Config = field(default_factory=_Config)
    problems: list[str] = field(default_factory=list)
    seen: set[tuple[int, int, str | None]] = field(default_factory=set)


def _scan(cwd: Path) -> _Scan:
    scan = _Scan()
    try:
        starts = dict.fromkeys([os.path.abspath(cwd), os.path.realpath(cwd)])
    except (OSError, ValueError) as exc:
        scan.problems.append(f"{cwd}: {exc}")
        return scan
    for start in starts:
        for level in _upwards(start):
            try:
                _scan_level(scan, level)
            except (OSError, ValueError) as exc:  # one level's trouble leaves the others
                scan.problems.append(f"{level}: {exc}")
    return scan


def _upwards(start: str) -> Iterator[str]:
    path = start
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _scan_level(scan: _Scan, directory: str) -> None:
    """A repository whose work tree is `directory`, and `directory` as a git dir."""
    gitdir = _gitdir_of(scan, os.path.join(directory, ".git"))
    if gitdir is not None:
        _scan_repository(scan, gitdir, directory)
    # A bare repository, a .git dir or a worktree's git dir: git refuses them all under
    # safe.bareRepository=explicit, older git does not.
    if _is_file(os.path.join(directory, "HEAD")) and (
        os.path.isdir(os.path.join(directory, "objects"))
        or _is_file(os.path.join(directory, "commondir"))
    ):
        _scan_repository(scan, directory, None)


def _gitdir_of(scan: _Scan, dotgit: str) -> str | None:
    try:
        st = os.stat(dotgit)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return dotgit
    text = _read_text(scan, dotgit)
    if text is None or not text.startswith("gitdir: "):
        return None  # git stops with "invalid gitfile format"
    target = _c_string(text[len("gitdir: ") :]).rstrip("\r\n")
    return os.path.join(os.path.dirname(dotgit), target) if target else None


def _scan_repository(scan: _Scan, gitdir: str, worktree: str | None) -> None:
    try:
        st = os.stat(gitdir)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    # The same git dir may be met without and then with its work tree (cwd inside .git).
    if (st.st_dev, st.st_ino, worktree) in scan.seen:
        return
    if len(scan.seen) >= _MAX_REPOSITORIES:
        scan.problems.append(f"{gitdir}: more than {_MAX_REPOSITORIES} nested repositories")
        return
    scan.seen.add((st.st_dev, st.st_ino, worktree))
    common = gitdir
    if _is_file(os.path.join(gitdir, "commondir")):
        text = _read_text(scan, os.path.join(gitdir, "commondir")) or ""
        relative = _c_string(text).rstrip("\r\n")
        common = os.path.join(gitdir, relative) if relative else gitdir
    before = len(scan.config.entries)
    for name in dict.fromkeys(
        [
            os.path.join(common, "config"),
            os.path.join(common, "config.worktree"),
            os.path.join(gitdir, "config.worktree"),
        ]
    ):
        _read_config(scan, name, 0)
    mine = _Config(scan.config.entries[before:])
    roots = [worktree] if worktree else []
    configured = mine.last("core.worktree")
    if configured:
        roots.append(os.path.join(gitdir, os.path.expanduser(configured)))
    sha256 = (mine.last("extensions.objectformat") or "").lower() == "sha256"
    for path in _gitlinks(scan, gitdir, 32 if sha256 else 20):
        for root in roots:
            sub = os.path.join(root, path)
            subgit = _gitdir_of(scan, os.path.join(sub, ".git"))
            if subgit is not None:
                _scan_repository(scan, subgit, sub)


def _read_config(scan: _Scan, path: str, depth: int) -> None:
    text = _read_text(scan, path)
    if text is None:
        return
    try:
        entries = _parse_config(text)
    except _ConfigError as exc:
        scan.problems.append(f"{path}: {exc}")
        entries = exc.entries
    for key, value in entries:
        scan.config.entries.append((key, value))
        if not _is_include(key) or not value or value.startswith("%(prefix)/"):
            continue
        if depth >= _MAX_INCLUDE_DEPTH:
            scan.problems.append(f"{path}: includes nested deeper than {_MAX_INCLUDE_DEPTH}")
            continue
        target = os.path.join(os.path.dirname(path), os.path.expanduser(_c_string(value)))
        _read_config(scan, target, depth + 1)


def _c_string(text: str) -> str:
    """`text` up to a NUL, where git's C strings end."""
    return text.split("\0", 1)[0]


def _is_include(key: str) -> bool:
    section, sub, name = _split_key(key)
    return name == "path" and (
        (section == "include" and sub is None) or (section == "includeif" and sub is not None)
    )


_trusted_cache: dict[tuple[str, ...], tuple[tuple[object, ...], _Config]] = {}


def _trusted_config() -> _Config:
    """The user's own global and system config: the values that replace the repository's."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    paths = ("/etc/gitconfig", os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig"))
    # Files these include are not stamped: a stale value there is still the user's own.
    stamp = tuple(_stamp(p) for p in paths)
    cached = _trusted_cache.get(paths)
    if cached is not None and cached[0] == stamp and None not in stamp:
        return cached[1]
    scan = _Scan()
    for path in paths:
        _read_config(scan, path, 0)
    _trusted_cache.clear()
    _trusted_cache[paths] = (stamp, scan.config)
    return scan.config


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


# -- reading files ----------------------------------------------------------------------


def _is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _read_bytes(scan: _Scan, path: str, limit: int) -> bytes | None:
    """A regular file's bytes; None when missing. Never blocks on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if not os.path.isdir(path):
            scan.problems.append(f"{path}: {exc.strerror}")
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return None
        if not stat.S_ISREG(st.st_mode):
            scan.problems.append(f"{path}: not a regular file")
            return None
        if st.st_size > limit:
            scan.problems.append(f"{path}: larger than {limit} bytes")
            return None
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while read
            scan.problems.append(f"{path}: larger than {limit} bytes")
            return None
        return b"".join(chunks)
    except OSError as exc:
        scan.problems.append(f"{path}: {exc.strerror}")
        return None
    finally:
        os.close(fd)


def _read_text(scan: _Scan, path: str) -> str | None:
    data = _read_bytes(scan, path, _MAX_CONFIG_BYTES)
    return None if data is None else data.decode("utf-8", "surrogateescape")


def _gitlinks(scan: _Scan, gitdir: str, hash_size: int) -> list[str]:
    """Paths of the submodules recorded in the index (git enters them for status/diff)."""
    data = _read_bytes(scan, os.path.join(gitdir, "index"), _MAX_INDEX_BYTES)
    if not data or data[:4] != b"DIRC":
        return []
    datas = [data]
    with os.scandir(gitdir) as entries:  # a split index keeps most entries in these
        shared = [e.path for e in entries if e.name.startswith("sharedindex.")]
    datas += [_read_bytes(scan, path, _MAX_INDEX_BYTES) or b"" for path in shared]
    paths: list[str] = []
    for blob in datas:
        if blob[:4] == b"DIRC" and _may_hold_gitlinks(blob):
            try:
                paths += _index_gitlinks(blob, hash_size)
            except (struct.error, ValueError, IndexError):
                scan.problems.append(f"{gitdir}/index: not understood")
    return paths


def _may_hold_gitlinks(data: bytes) -> bool:
    """False when no entry can be a gitlink, without parsing the entries: in index
    versions 2 and 3 they are 8-byte aligned, so every mode field starts at 4 mod 8 and
    one byte in eight needs a look (a plain search is ten times slower on all the zeros)."""
    if data[4:8] == b"\x00\x00\x00\x04":
        return _GITLINK_MODE in data
    for hit in _E0.finditer(data[6::8]):
        at = 8 * hit.start() + 4
        if data[at : at + 4] == _GITLINK_MODE:
            return True
    return False


def _index_gitlinks(data: bytes, hash_size: int) -> list[str]:
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(version)
    pos, previous, found = 12, b"", []
    for _ in range(count):
        (mode,) = struct.unpack_from(">I", data, pos + 24)
        (flags,) = struct.unpack_from(">H", data, pos + 40 + hash_size)
        name_at = pos + 42 + hash_size + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:  # the name is a suffix after stripping bytes off the previous
            strip, name_at = _varint(data, name_at)
            end = data.index(b"\0", name_at)
            name = previous[: len(previous) - strip] + data[name_at:end]
            pos = end + 1
        else:
            end = data.index(b"\0", name_at)
            name = data[name_at:end]
            pos += (name_at - pos + len(name) + 8) & ~7
        previous = name
        if mode & 0o170000 == 0o160000:
            found.append(name.decode("utf-8", "surrogateescape"))
    return found


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (varint.c)."""
    byte = data[pos]
    value = byte & 127
    while byte & 128:
        pos += 1
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 127)
    return value, pos + 1


# -- the config file format (a port of config.c's parser) --------------------------------


class _ConfigError(ValueError):
    def __init__(self, message: str, entries: _Entries) -> None:
        super().__init__(message)
        self.entries = entries


_SPACE = frozenset(" \t\n\r")  # git's isspace()
_KEY_RUN = re.compile(r"[A-Za-z0-9-]*")
_SECTION_RUN = re.compile(r"[A-Za-z0-9.-]*")
_VALUE_RUN = re.compile(r'[^\\"\n;# \t\r]+')
_SKIP = re.compile(r"(?:[ \t\n\r]+|[#;][^\n]*)*")


def _parse_config(text: str) -> _Entries:
    """(canonical key, value) pairs; raises _ConfigError (with the pairs before the error)
    where git would report a bad config line."""
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    text += "\n"  # git reads "\n" at end of file
    entries: _Entries = []
    base, pos, end = "", 0, len(text)
    while True:
        pos = _SKIP.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= end:
            return entries
        c = text[pos]
        if c == "[":
            base, pos = _section_header(text, pos + 1, entries)
        elif c.isascii() and c.isalpha():
            run = _KEY_RUN.match(text, pos).end()  # type: ignore[union-attr]
            key = base + text[pos:run].lower()
            pos = run
            while text[pos] in " \t":
                pos += 1
            if text[pos] == "\n":
                entries.append((key, None))
                pos += 1
            elif text[pos] == "=":
                value, pos = _value(text, pos + 1, entries)
                entries.append((key, value))
            else:
                raise _ConfigError("bad config line", entries)
        else:
            raise _ConfigError("bad config line", entries)


def _section_header(text: str, pos: int, entries: _Entries) -> tuple[str, int]:
    run = _SECTION_RUN.match(text, pos).end()  # type: ignore[union-attr]
    name = text[pos:run].lower()
    pos = run
    if text[pos] in _SPACE:  # [section "subsection"]
        while text[pos] in _SPACE:
            if text[pos] == "\n":
                raise _ConfigError("incomplete section header", entries)
            pos += 1
        if text[pos] != '"':
            raise _ConfigError("bad section header", entries)
        pos += 1
        sub = []
        while text[pos] != '"':
            if text[pos] == "\\":
                pos += 1
            if text[pos] == "\n":
                raise _ConfigError("incomplete section header", entries)
            sub.append(text[pos])
            pos += 1
        pos += 1
        name += "." + "".join(sub)
    if text[pos] != "]" or not name:
        raise _ConfigError("bad section header", entries)
    return name + ".", pos + 1


_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}


def _value(text: str, pos: int, entries: _Entries) -> tuple[str, int]:
    out: list[str] = []
    quote, spaces, length = False, 0, 0
    while True:
        c = text[pos] if pos < len(text) else "\n"
        pos += 1
        if c == "\n":
            if quote:
                raise _ConfigError("unterminated quote", entries)
            return "".join(out), pos
        if c in _SPACE and not quote:
            spaces += 1 if length else 0
            continue
        if not quote and c in ";#":
            # A comment runs to the end of the line.
            pos = text.index("\n", pos - 1)
            continue
        if spaces:
            out.append(" " * spaces)
            length += spaces
            spaces = 0
        if c == "\\":
            c = text[pos] if pos < len(text) else "\n"
            pos += 1
            if c == "\n":
                continue
            if c not in _ESCAPES:
                raise _ConfigError("bad escape in value", entries)
            out.append(_ESCAPES[c])
        elif c == '"':
            quote = not quote
            continue
        else:
            run = _VALUE_RUN.match(text, pos - 1) if not quote else None
            if run:
                out.append(run.group())
                length += len(run.group())
                pos = run.end()
                continue
            out.append(c)
        length += 1


def _canonical(key: str) -> str:
    section, sub, name = _split_key(key)
    return f"{section}.{sub}.{name}" if sub is not None else f"{section}.{name}"


def _split_key(key: str) -> tuple[str, str | None, str]:
    """(section, subsection, name) as git's parse_config_key splits them: section and name
    are case-insensitive, the subsection is everything between the first and last dot."""
    first, last = key.find("."), key.rfind(".")
    if first < 0:
        return "", None, key.lower()
    sub = key[first + 1 : last] if last > first else None
    return key[:first].lower(), sub, key[last + 1 :].lower()


def _join(section: str, sub: str | None) -> str:
    return section if sub is None else f"{section}.{sub}"

"""Checks on a parsed simple command before it runs.

`interactive_advice`: programs that would wait for a terminal the tool does not have,
with what to do instead. `path_arguments` and `unknown_paths`: the paths a command
names, known and not, so the tool can tell which may leave the workspace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from local_tools.shell.command_parse import Redirect, SimpleCommand
from local_tools.shell.command_words import GLOB

__all__ = [
    "directory_changes",
    "followed_trees",
    "interactive_advice",
    "leading_patterns",
    "path_arguments",
    "pattern_arguments",
    "unknown_paths",
]

_BACKGROUND = "run it with background=true and drive it with process_input"


# --- programs that wait for a terminal --------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Line:
    """A command line's options (short ones one letter each) and operands."""

    options: frozenset[str]
    operands: tuple[str, ...]


def _scan(
    args: Sequence[str], values: str = "", long_values: Sequence[str] = (), *, first: bool = False
) -> _Line:
    """`values`: short options taking a value (-xV or -x V); `long_values`: whole words
    taking the next word (--name V, sqlite3's -cmd V); `first`: stop at the first operand."""
    seen: set[str] = set()
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg in long_values:
            seen.add(arg)
            i += 1
        elif arg.startswith("--"):
            seen.add(arg.partition("=")[0])
        elif arg.startswith("-") and len(arg) > 1:
            for k, ch in enumerate(arg[1:], 2):
                seen.add("-" + ch)
                if ch in values:
                    i += k == len(arg)  # the value is the next word
                    break
        else:
            operands.append(arg)
            if first:
                break
    return _Line(frozenset(seen), tuple(operands))


@dataclass(frozen=True, slots=True)
class _Program:
    """A program that may need a terminal; `needs(args, cmd)` says whether this run does."""

    advice: str
    needs: Callable[[Sequence[str], SimpleCommand], bool] = lambda args, cmd: True
    background_ok: bool = False  # fine as a background process driven by process_input


def _pager(args: Sequence[str], cmd: SimpleCommand) -> bool:
    return not cmd.stdout_redirected  # piped or saved, a pager prints like cat


_COMMIT_MESSAGE = {"-m", "-F", "--message", "--file", "--no-edit", "-C", "--reuse-message",
                   "--fixup", "--allow-empty-message", "--dry-run"}  # fmt: skip


def _git(args: Sequence[str]) -> str | None:
    """Advice for git subcommands that open an editor or prompt."""
    i = 0
    while i < len(args) and args[i].startswith("-"):  # global options: git -C dir commit
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    sub = args[i] if i < len(args) else ""
    opts = _scan(args[i + 1 :], "mFCcSu").options
    if sub == "commit" and not opts & _COMMIT_MESSAGE:
        return "git commit opens an editor for the message; pass it with -m 'message' (or -F file)"
    if sub == "rebase" and opts & {"-i", "--interactive"}:
        return (
            "an interactive rebase opens an editor; use a non-interactive form (git rebase "
            "BRANCH, or GIT_SEQUENCE_EDITOR=true git rebase -i --autosquash)"
        )
    if sub == "add" and opts & {"-p", "--patch", "-i", "--interactive", "-e", "--edit"}:
        return "git add -p/-i prompts for each change; add whole files with git add PATH"
    annotated = opts & {"-a", "--annotate", "-s", "--sign"}
    if sub == "tag" and annotated and not opts & {"-m", "-F", "--message", "--file"}:
        return "an annotated tag opens an editor for its message; pass it with -m 'message'"
    return None


_INFO = ("--version", "-V", "--help", "-h")


def _repl(
    code: str, values: str = "", info: Sequence[str] = _INFO
) -> Callable[[Sequence[str], SimpleCommand], bool]:
    """A REPL unless given code (`code` options: -c, -e, --eval...), a script or piped
    input; -i asks for one even after a script."""
    long_code = {o for o in code.split() if o.startswith("--")}
    short_code = {f"-{c}" for o in code.split() if not o.startswith("--") for c in o}

    def needs(args: Sequence[str], cmd: SimpleCommand) -> bool:
        line = _scan(args, values + "".join(c[1] for c in short_code), first=True)
        if cmd.stdin_redirected or line.options & (long_code | short_code | set(info)):
            return False
        if line.options & {"-i", "--interactive"}:
            return True
        return not line.operands or line.operands[0] == "-"  # `-`: the program from stdin

    return needs


def _client(
    query: Sequence[str],
    values: str = "",
    long_values: Sequence[str] = (),
    operands: int = 99,
    info: Sequence[str] = ("--help", "--version", "-V"),
) -> Callable[[Sequence[str], SimpleCommand], bool]:
    """A database shell: interactive without a query option or enough operands."""

    def needs(args: Sequence[str], cmd: SimpleCommand) -> bool:
        line = _scan(args, values, long_values)
        if cmd.stdin_redirected or line.options & set(query) or set(args) & set(info):
            return False
        return len(line.operands) < operands

    return needs


def _ssh(args: Sequence[str], cmd: SimpleCommand) -> bool:
    line = _scan(args, "BbcDEeFIiJLlmOoPpQRSWw")
    if cmd.stdin_redirected or line.options & {"-N", "-V", "-O"}:
        return False
    return len(line.operands) == 1  # a host and no remote command: a login shell


_DOCKER_VALUES = ("--name", "--network", "--entrypoint", "--env", "--env-file", "--volume",
                  "--workdir", "--user", "--publish", "--mount", "--label", "--platform",
                  "--hostname", "--memory", "--cpus")  # fmt: skip


def _docker(args: Sequence[str], cmd: SimpleCommand) -> bool:
    if not args or args[0] not in ("run", "exec"):
        return False
    opts = _scan(args[1:], "acehlmpuvw", _DOCKER_VALUES, first=True).options
    return bool(opts & {"-i", "--interactive"} and opts & {"-t", "--tty"})


def _tmux(args: Sequence[str], cmd: SimpleCommand) -> bool:
    sub = next((a for a in args if not a.startswith("-")), "")
    attaching = sub in ("", "a", "at", "attach", "attach-session", "new", "new-session")
    return attaching and "-d" not in args


def _screen(args: Sequence[str], cmd: SimpleCommand) -> bool:
    opts = _scan(args, "SpXc").options
    listing = {"-ls", "-list", "-Q", "-v", "--version"} & set(args) or "-X" in opts
    return not listing and not {"-d", "-m"} <= opts


_EDITOR = _Program("it is an interactive editor; use the edit or write_file tools to change files")
_PAGER = _Program(
    "it is a pager; use read_file or cat (head/tail/rg for parts), or pipe into cat", _pager
)
_MONITOR = _Program(
    "it redraws the screen until quit; take one snapshot instead (top -b -n 1, ps aux)",
    lambda args, cmd: not {"-b", "--batch"} & _scan(args, "dnpuU").options,
)
_REPL = "it starts an interactive interpreter; pass code (-c/-e) or a script, or " + _BACKGROUND
_DB = "it opens an interactive shell; pass the query (-c/-e or as an argument), or " + _BACKGROUND
_CLIENT = "it is an interactive client; use curl or a batch option, or " + _BACKGROUND


def _repl_program(needs: Callable[[Sequence[str], SimpleCommand], bool]) -> _Program:
    return _Program(_REPL, needs, background_ok=True)


_PROGRAMS: dict[str, _Program] = {
    **dict.fromkeys(("vim", "vi", "nvim", "nano", "pico", "micro"), _EDITOR),
    "emacs": _Program(_EDITOR.advice, lambda args, cmd: not {"--batch", "-batch"} & set(args)),
    **dict.fromkeys(("less", "more", "most"), _PAGER),
    "man": _Program("it opens a pager; use `man NAME | cat` or `COMMAND --help`", _pager),
    **dict.fromkeys(("top", "htop", "btop", "atop"), _MONITOR),
    "watch": _Program("it reruns a command on screen until quit; run the command once"),
    "tmux": _Program("attaching needs a terminal; start sessions detached (-d)", _tmux),
    "screen": _Program("attaching needs a terminal; start sessions detached (-dm)", _screen),
    **dict.fromkeys(
        ("python", "python2", "python3", "pypy", "pypy3"), _repl_program(_repl("cm", "WX"))
    ),
    "node": _repl_program(_repl("ep --eval --print", "r", (*_INFO, "-v"))),
    **dict.fromkeys(("ruby", "perl"), _repl_program(_repl("eE", "rIM", (*_INFO, "-v")))),
    **dict.fromkeys(("irb", "ipython"), _repl_program(_repl(""))),
    "ghci": _repl_program(_repl("e")),
    "R": _repl_program(_repl("ef --file")),
    "lua": _repl_program(_repl("e", "l", (*_INFO, "-v"))),
    "psql": _Program(
        _DB, _client(("-c", "--command", "-f", "--file", "-l", "--list"), "cfdhpUv"), True
    ),
    **dict.fromkeys(
        ("mysql", "mariadb"), _Program(_DB, _client(("-e", "--execute"), "euhPDp"), True)
    ),
    "sqlite3": _Program(
        _DB,
        _client((), "", ("-cmd", "-separator", "-newline", "-nullvalue"), 2, ("-help", "-version")),
        True,
    ),
    "redis-cli": _Program(_DB, _client((), "hpanu", operands=1, info=("--help", "-v")), True),
    "ssh": _Program(
        "without a remote command it opens a login shell; pass the command (ssh HOST 'cmd'), "
        "or " + _BACKGROUND,
        _ssh,
        background_ok=True,
    ),
    **dict.fromkeys(
        ("ftp", "telnet"),
        _Program(_CLIENT, lambda args, cmd: not cmd.stdin_redirected, background_ok=True),
    ),
    "sftp": _Program(
        _CLIENT,
        lambda args, cmd: not cmd.stdin_redirected and "-b" not in _scan(args, "bBFiloPRs").options,
        background_ok=True,
    ),
    **dict.fromkeys(
        ("docker", "podman"),
        _Program(
            "-it attaches a terminal; drop -t (keep -i to pipe input), or " + _BACKGROUND,
            _docker,
            background_ok=True,
        ),
    ),
}


def interactive_advice(cmd: SimpleCommand, *, background: bool) -> str | None:
    """Why `cmd` would hang waiting for a terminal, and what to do instead; None if it won't."""
    if cmd.dynamic or not cmd.argv:
        return None
    args = cmd.argv[1:]
    if cmd.program == "git":
        return _git(args)
    program = re.sub(r"^(python|pypy)3\.\d+$", r"\g<1>3", cmd.program)
    spec = _PROGRAMS.get(program)
    if spec is None or (background and spec.background_ok) or not spec.needs(args, cmd):
        return None
    return spec.advice


# --- paths named by a command -------------------------------------------------------------

# Devices that hold no one's data: reading or writing them is not "outside access".
_SPECIAL = frozenset(
    "/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty "
    "/dev/stdin /dev/stdout /dev/stderr".split()
)
_OPTION_VALUE = re.compile(r"-{0,2}[A-Za-z][\w.-]*=(.*)", re.S)
_FILE_OPS = frozenset({"<", ">", ">>", ">|", ">&", "<&", "<>"})


# Programs that never open or look up a path named by an argument: `echo "$x"` reads
# nothing, whatever $x is. (Their redirections still count.)
_NO_PATH_ARGS = frozenset(
    "echo printf true false : exit return shift sleep seq expr read kill wait".split()
)
# Directory changes whose target is not in their words: `cd` alone goes to $HOME, `cd -`
# to $OLDPWD, `popd` and `pushd +1` to a saved one; the commands after them then read
# relative paths from there.
_CHDIR = frozenset({"cd", "pushd", "popd"})


def _may_be_path(text: str) -> bool:
    if not text or text == "-" or text in _SPECIAL or text.startswith("/dev/fd/"):
        return False
    return "://" not in text


def _file_redirects(cmd: SimpleCommand) -> list[Redirect]:
    return [r for r in cmd.redirects if r.op.lstrip("0123456789&") in _FILE_OPS and r.target]


def path_arguments(cmd: SimpleCommand) -> list[str]:
    """Every static argument, `--opt=VALUE` / `-oVALUE` value and file redirection target
    that may name a path, as written. Relative ones count too: a workspace symlink may
    lead out, so the caller resolves them. Options themselves, devices and URLs do not."""
    found: list[str] = []
    # A command built without `static` flags: judge every word (more paths, not fewer).
    flags = cmd.static if len(cmd.static) == len(cmd.argv) else (True,) * len(cmd.argv)
    for text, static in zip(cmd.argv[1:], flags[1:], strict=True):
        if not static or cmd.program in _NO_PATH_ARGS:
            continue
        m = _OPTION_VALUE.fullmatch(text)
        if m:
            candidates = [m.group(1)] if text.startswith("-") else [text, m.group(1)]
        elif text.startswith("--"):
            candidates = []
        elif text.startswith("-"):
            candidates = [text[2:]]  # -o/tmp/out, -I../include: the value is attached
        else:
            candidates = [text]
        found += [c for c in candidates if _may_be_path(c)]
    found += [r.target for r in _file_redirects(cmd) if r.static and _may_be_path(r.target)]
    return list(dict.fromkeys(found))


def leading_patterns(cmd: SimpleCommand) -> list[str]:
    """Patterns that start with a pattern character: they may match a name like `-R`."""
    return [a for a in pattern_arguments(cmd) if a[:1] in "*?["]


def pattern_arguments(cmd: SimpleCommand) -> set[str]:
    """The path arguments bash matches against file names (unquoted `*`, `?`, `[`), and
    file redirection targets with them; a quoted `find -name '*.py'` is not one."""
    if len(cmd.globs) == len(cmd.argv):
        found = {a for a, g in zip(cmd.argv[1:], cmd.globs[1:], strict=True) if g}
    else:  # built without the flags: every word that looks like a pattern
        found = {a for a in cmd.argv[1:] if GLOB.search(a)}
    return found | {r.target for r in _file_redirects(cmd) if r.static and GLOB.search(r.target)}


_CHDIR_OPTIONS = re.compile(r"(?:-C|--chdir=|--directory=)(.+)", re.S)


def directory_changes(cmd: SimpleCommand) -> list[str]:
    """Folders, as written, that `cmd` moves to: `cd D` for the commands after it, `git -C
    D` / `make --directory=D` / `env --chdir=D` for itself. Relative paths are read from
    there, so a link inside D that the working directory does not have counts."""
    if not cmd.argv or not all(cmd.static):
        return []  # not understood: unknown_paths has its words
    args = list(cmd.argv[1:])
    if cmd.program in ("cd", "pushd"):
        return [a for a in args if not a.startswith(("-", "+"))][:1]
    found: list[str] = []
    for i, arg in enumerate(args):
        if arg in ("-C", "--chdir", "--directory") and i + 1 < len(args):
            found.append(args[i + 1])
        elif m := _CHDIR_OPTIONS.fullmatch(arg):
            found.append(m.group(1))
    return found


def unknown_paths(cmd: SimpleCommand) -> list[str]:
    """Arguments and file redirection targets only known at run time, as written
    (`$HOME/.ssh/id_rsa`, `{/etc/x,f}`, `~user/x`): any may name any path."""
    found = [] if cmd.program in _NO_PATH_ARGS else list(cmd.unknown)
    if "xargs" in cmd.wrappers and cmd.program not in _NO_PATH_ARGS:
        # The words xargs adds come from its input (a pipe, `-a list`): file names no
        # check has seen (`xargs -a list cat` prints whatever the list names).
        found.append(f"(names xargs reads) {' '.join(cmd.argv)}")
    if cmd.program in _CHDIR:
        operands = [a for a in cmd.argv[1:] if not a.startswith(("-", "+")) or a == "-"]
        if cmd.program == "popd" or operands in ([], ["-"]):
            found.append(" ".join(cmd.argv))  # a directory not named in the command
    found += [r.target for r in _file_redirects(cmd) if not r.static]
    return list(dict.fromkeys(found))


# --- recursive reads that follow symlinks -------------------------------------------------
# `cat link/x` names the link, so path_arguments sees it; `grep -R KEY .` follows every
# link it meets inside the tree (`sub/keys -> ~/.ssh`) without naming it.

_GREPS = frozenset({"grep", "egrep", "fgrep"})


def followed_trees(cmd: SimpleCommand, *, injected: bool = False) -> list[str]:
    """The folders `cmd` reads recursively following the symlinks inside them, as written
    ("." when it names none); empty when it follows none.

    `injected`: a pattern of the command matches a file named like an option now
    (`grep KEY *` beside a file named `-R` is `grep -R KEY ...`), so any flag may be
    there. (Only PLAIN_OPTIONS programs get here so: for others, such a pattern makes
    the command not understood.)
    """
    if not cmd.argv or not all(cmd.static):
        return []  # not understood: asked anyway
    args, program = cmd.argv[1:], cmd.program
    if program in _GREPS or program == "rg":
        values = "efmABCdD" if program in _GREPS else "efgmABCjMrTEt"
        line = _scan(args, values)
        follow = {"-R", "--dereference-recursive"} if program in _GREPS else {"-L", "--follow"}
        if not line.options & follow and not injected:
            return []
        given = line.options & {"-e", "-f", "--regexp", "--file"} or injected
        operands = list(line.operands if given else line.operands[1:])  # the pattern
    elif program == "find":
        if "-L" not in args and "-follow" not in args:
            return []
        operands = _find_paths(args)
    elif program in ("ls", "tree", "diff"):
        line = _scan(args, "LPIHTo" if program == "tree" else "IwT")
        opts = line.options
        follows = {
            "ls": bool(opts & {"-R", "--recursive"} and opts & {"-L", "--dereference"}),
            "tree": "-l" in opts,
            "diff": bool(opts & {"-r", "--recursive"}),  # diff -r follows links to folders
        }[program]
        if not follows and not injected:
            return []
        operands = list(line.operands)
    else:
        return []
    return operands or ["."]


def _find_paths(args: Sequence[str]) -> list[str]:
    """find's starting points: after -H/-L/-P/-D x/-Ox, before the first expression."""
    i = 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P", "-D") or args[i].startswith("-O")):
        i += 2 if args[i] == "-D" else 1
    paths: list[str] = []
    while i < len(args) and args[i][:1] not in ("-", "(", "!"):
        paths.append(args[i])
        i += 1
    return paths

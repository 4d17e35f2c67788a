"""Commands that run other commands: which one a wrapper's words make it run.

`sudo -u bob env X=1 timeout 5 rm f` runs `rm f`, so that is the policy subject, not
`sudo`. This module knows each wrapper's option syntax (`WRAPPERS`, `peel`), where
`sh -c` keeps its script (`shell_script`), and the commands of `find -exec`
(`find_commands`); `command_parse` decides what to do with the answer (record it,
re-parse a script, ask at run time). It is separate because it is a table of program
command lines, not shell grammar: it works on already-decoded words and changes when
a wrapper is added, not when the parsing does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from local_tools.shell.command_words import Word

__all__ = [
    "PLAIN_OPTIONS",
    "SHELLS",
    "WRAPPERS",
    "Peeled",
    "Wrapper",
    "find_commands",
    "peel",
    "shell_script",
    "split_clusters",
]

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"})


@dataclass(frozen=True, slots=True)
class Wrapper:
    short: str = ""  # short options taking a value (-u bob, -ubob)
    long: frozenset[str] = frozenset()  # long options taking a value (--user bob)
    attached: str = ""  # short options whose value, if any, is attached (xargs -i[R])
    operands: int = 0  # operands before the command (timeout's DURATION)
    assignments: bool = False  # NAME=value words before the command (env, sudo)
    stop: frozenset[str] = frozenset()  # options after which no command follows (command -v)
    keep: frozenset[str] = frozenset()  # options that make the wrapper a subject too
    dynamic: frozenset[str] = frozenset()  # options that build the command at run time
    default: str = ""  # what runs when no command is given (xargs runs echo)


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


WRAPPERS: dict[str, Wrapper] = {
    "sudo": Wrapper(
        "ughpCDrtTUR",
        _fs("--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role",
            "--type", "--command-timeout", "--other-user", "--chroot"),
        assignments=True,
        stop=_fs("-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "-K",
                 "--remove-timestamp"),
        keep=_fs("-D", "--chdir", "-R", "--chroot"),  # where it runs changes what runs
    ),
    "doas": Wrapper("uC", stop=_fs("-C")),
    "env": Wrapper(
        "uCS", _fs("--unset", "--chdir", "--split-string"), assignments=True,
        keep=_fs("-C", "--chdir"), dynamic=_fs("-S", "--split-string"),
    ),
    "nice": Wrapper("n", _fs("--adjustment")),
    "timeout": Wrapper("sk", _fs("--signal", "--kill-after"), operands=1),
    "nohup": Wrapper(),
    "time": Wrapper("of", _fs("--output", "--format"), keep=_fs("-o", "--output")),  # writes
    "command": Wrapper(stop=_fs("-v", "-V")),
    "exec": Wrapper("a"),
    "stdbuf": Wrapper("ioe", _fs("--input", "--output", "--error")),
    "ionice": Wrapper("cnp", _fs("--class", "--classdata", "--pid"), stop=_fs("-p", "--pid")),
    "xargs": Wrapper(
        "adEILnPs",
        _fs("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
            "--process-slot-var"),
        attached="eil", default="echo",
    ),
    "setsid": Wrapper(),
    "builtin": Wrapper(),
    "coproc": Wrapper(),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Peeled:
    inner: list[Word]
    keep: bool
    env: list[str]
    dynamic: bool


def peel(words: Sequence[Word], spec: Wrapper) -> Peeled | None:
    """The wrapped command, or None when there is none (the wrapper is the subject)."""
    i = 1
    seen: set[str] = set()
    env: list[str] = []
    while i < len(words) and words[i].static:
        text = words[i].text
        i += 1
        if text == "--":
            break
        if spec.assignments and re.match(r"[A-Za-z_]\w*=", text):
            env.append(text)
        elif text.startswith("--"):
            name, eq, _ = text.partition("=")
            seen.add(name)
            i += name in spec.long and not eq
        elif text.startswith("-"):
            for k, ch in enumerate(text[1:], 2):
                seen.add("-" + ch)
                if ch in spec.short or ch in spec.attached:
                    i += ch in spec.short and k == len(text)  # the value is the next word
                    break
        else:
            i -= 1
            break
    if seen & spec.stop:
        return None
    # An option value or operand only known at run time may split into more words
    # (`t='1 touch PWN'; timeout $t ls` runs touch): the command is not known.
    if seen & spec.dynamic or not all(w.static for w in words[1 : i + spec.operands]):
        return Peeled([], False, env, True)
    inner = list(words[i + spec.operands :])
    if not inner and spec.default:
        inner = [Word(spec.default, True)]
    return Peeled(inner, bool(seen & spec.keep), env, False) if inner else None


def shell_script(words: Sequence[Word]) -> Word | None:
    """The `-c` string of `sh -c '...'`, or None when the shell runs a file or stdin."""
    i, command_mode = 1, False
    while i < len(words) and words[i].static:
        text = words[i].text
        if text in ("-", "--") or not text or text[0] not in "-+":
            break
        i += 1
        if text in ("--rcfile", "--init-file"):
            i += 1
        elif not text.startswith("--"):
            command_mode = command_mode or "c" in text
            i += text.count("o") + text.count("O")  # -o OPTION takes a value
    return words[i] if command_mode and i < len(words) else None


_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def find_commands(words: Sequence[Word]) -> Iterator[list[Word]]:
    """The commands of find's -exec/-execdir/-ok/-okdir actions, without the `;` or `+`."""
    i = 1
    while i < len(words):
        if not (words[i].static and words[i].text in _FIND_EXEC):
            i += 1
            continue
        j = i + 1
        while j < len(words) and not (
            words[j].static
            and (words[j].text == ";" or (words[j].text == "+" and words[j - 1].text == "{}"))
        ):
            j += 1
        if j > i + 1:
            yield list(words[i + 1 : j])
        i = j + 1


# --- programs whose every option is harmless -------------------------------------------
# A pattern like `*.py` may match a file named `-o.py` or `--pre=sh`, and bash passes it
# as an option (`sort -o.py` writes .py, `rg --pre=sh` runs sh); so does xargs with the
# words it reads. For these programs no option writes a file or runs a program, so an
# option nobody saw in advance does nothing the same command with it written out would
# not; for every other program such a word makes the command not understood.
PLAIN_OPTIONS = frozenset(
    "ls cat head tail wc echo du df stat diff cmp comm cut nl tac tr basename dirname "
    "realpath readlink md5sum sha1sum sha256sum sha512sum grep egrep fgrep jq pwd".split()
)


# --- writing options inside a short-option cluster -------------------------------------
# Allowed read-only programs with a short option that writes a file: (those letters,
# the letters that take the rest of the word as a value). `sort -rnuo out in` writes
# out; the rules see `-o` only when it starts a word, so the cluster is split there.
_WRITING_SHORT: dict[str, tuple[str, str]] = {
    "sort": ("o", "kotST"),
    "file": ("C", "efFmP"),
    "tree": ("oR", "LPIHTo"),
}


def split_clusters(program: str, args: Sequence[str]) -> list[str]:
    """`args` with each writing option letter inside a cluster starting its own word."""
    spec = _WRITING_SHORT.get(program)
    if spec is None:
        return list(args)
    writes, values = spec
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + list(args[i:])
        if not arg.startswith("-") or arg.startswith("--"):
            out.append(arg)
            continue
        start = 1
        for k in range(1, len(arg)):
            ch = arg[k]
            if ch in writes and k > start:
                out.append("-" + arg[start:k])
                start = k
            if ch in values:
                break
        out.append("-" + arg[start:])
    return out

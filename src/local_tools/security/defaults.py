"""The built-in permission rules, applied before the config's own (DESIGN §4)."""

from __future__ import annotations

from local_tools.core.config import CONFIG_FILENAME, Action

__all__ = ["DEFAULT_PERMISSIONS", "PROTECTED_PERMISSIONS", "SELF_PROTECTED_PATHS"]


def _flag(command: str, *flags: str) -> dict[str, Action]:
    """Ask when any of `flags` starts a word after `command`: `cmd -o*`, `cmd * -o*`."""
    rules: dict[str, Action] = {}
    for flag in flags:
        rules[f"{command} {flag}*"] = "ask"
        rules[f"{command} * {flag}*"] = "ask"
    return rules


# Built-in rules, in order (the last match wins). Subjects are simple commands as
# parsed (shell/command_parse.py): wrappers (sudo, env, timeout, xargs, sh -c) peeled,
# `/usr/bin/x` named `x`, output redirections kept (`ls > f`). Conservative on purpose:
# only commands that cannot write or run other programs are allowed, even in a hostile
# repository, and the flags that would make them do so are sent back to ask. Not
# allowed for that reason: `cd` (`cd d && git diff` uses d's repository config, and a
# bare repository written outside .git/ is not protected), awk/sed/env (run or write),
# `uniq IN OUT` and `xxd IN OUT` (write OUT).
_UNIQ_FLAGS = [f"uniq -{a}" for a in "cdiuzD"] + [
    f"uniq -{a}{b}" for a in "cdiu" for b in "cdiu" if a != b
]
_READ_ONLY: dict[str, Action] = dict.fromkeys(
    (
        "ls *", "pwd *", "echo *", "printf *", "cat *", "head *", "tail *", "wc *",
        "which *", "type *", "command -v *", "whoami", "id *", "uname *", "nproc",
        "true *", "false *", "test *", "basename *", "dirname *", "realpath *",
        "readlink *", "stat *", "file *", "du *", "df *", "tree *", "find *",
        "diff *", "cmp *", "comm *", "cut *", "nl *", "tr *", "sort *", "seq *",
        "tac *", "jq *", "md5sum *", "sha1sum *", "sha256sum *",
        # stdin to stdout only (a second operand is written): its flags spelled out, since
        # `uniq -??` also matched `uniq - X`, which writes X
        "uniq", *_UNIQ_FLAGS,
        "date", "date -u", "date +*", "date -u +*",
        "git status *", "git log *", "git diff *", "git show *", "git blame *",
        "git ls-files *", "git rev-parse *",
        # listing only: other forms create, move or delete
        "git branch", "git branch -a", "git branch -r", "git branch -v", "git branch -vv",
        "git branch --show-current", "git remote", "git remote -v",
        "rg *", "grep *",
    ),
    "allow",
)  # fmt: skip

DEFAULT_PERMISSIONS: dict[str, dict[str, Action]] = {
    "read:file": {"*": "allow"},
    "write:file": {"*": "allow"},
    "delete:file": {"*": "ask"},
    "network:outbound": {"*": "ask"},
    # A command argument naming a path outside the workspace (exec_cmd): the subject is
    # the absolute path, so `{ "/opt/data/*" = "allow" }` lets commands read there.
    "external:file": {"*": "ask"},
    # Loading a skill reads instructions the user or the project wrote down, from the
    # skills folders only: no more than a read, and the model is meant to use them.
    "skill": {"*": "allow"},
    # Script run in the page can do anything the page's session can (post, pay, delete).
    "browser:evaluate": {"*": "ask"},
    # Whatever is on the user's screen, other programs' windows included.
    "system:screenshot": {"*": "ask"},
    # Replacing a project folder's files with the workspace's: the person sees the plan.
    "deploy": {"*": "ask"},
    # Project data (requirements, features, tasks) lives in the workspace's state
    # database, not in the user's files: planning is the point of those tools.
    "read:project": {"*": "allow"},
    "write:project": {"*": "allow"},
    "execute:command": {
        "*": "ask",
        **_READ_ONLY,
        "date * -*": "ask",  # e.g. `date +%s -s ...` sets the clock
        "git *--output*": "ask",  # log/diff/show --output=FILE writes a file
        "rg *--pre*": "ask",  # runs a preprocessor command
        "rg *--hostname-bin*": "ask",  # runs a command
        # find: run a command, delete, or write a file (the -exec'd command is also
        # checked on its own)
        **_flag("find", "-exec", "-ok", "-delete", "-fprint", "-fls"),
        # sort: write a file (-o, --output, and its abbreviations --o...; -uo in a
        # cluster), or run a compressor
        **_flag("sort", "-o", "-?o", "--co"),
        **_flag("file", "-C", "--co"),  # compiles a magic file: writes FILE.mgc
        # read the names of the files to read from a file: paths no check has seen
        # (`sort --files0-from=list` prints any file the list names)
        **_flag("sort", "--fil"),
        **_flag("wc", "--f"),
        **_flag("du", "--f"),
        **_flag("find", "-files0-from"),
        **_flag("file", "-f", "--files-from"),  # the names to look at, from a file
        # -c: check the files a sums file names (says whether an outside file exists
        # and what it holds)
        **_flag("md5sum", "-c", "--c"),
        **_flag("sha1sum", "-c", "--c"),
        **_flag("sha256sum", "-c", "--c"),
        # jq loads modules and data by path (`import "../x" as $x`), and filters from files
        "jq *import*": "ask",
        "jq *include*": "ask",
        **_flag("jq", "-L", "-f", "--from-file"),
        **_flag("tree", "-o", "-R"),  # -o writes a file; -R writes 00Tree.html per dir
        # (a writing letter inside a cluster, `sort -rnuo`, is split off by the parser)
        # -v/-R evaluate a subscript in the name (`test -v 'a[$(cmd)]'` runs cmd)
        **_flag("test", "-v", "-R"),
        # printf -v assigns a variable: PATH, or a subscript evaluated like the above
        **_flag("printf", "-v"),
        "*>*": "ask",  # an output redirection (or a `>` in an argument): may write a file
        "*.env": "ask",  # `cat .env` must not bypass the read:file rule
        "*.env *": "ask",
        "*.env.*": "ask",
    },
}

# Writing these would let an agent grant itself more than it was given: git config
# runs commands (core.fsmonitor) on an allowed `git status`, and the config and
# workspace plugins are loaded on the next start.
SELF_PROTECTED_PATHS: tuple[str, ...] = (
    ".git",
    ".git/*",
    "*/.git",
    "*/.git/*",
    CONFIG_FILENAME,
    ".local-tools",
    ".local-tools/*",
)

# Commands that destroy data past undoing, or run code fetched at run time: they ask
# even under `"execute:command" = "allow"`, and a rule naming the command (`"rm *" =
# "allow"`) lifts them. Subjects are parsed, so `sudo rm -rf x`, `/bin/rm -rf x` and
# `sh -c 'rm -rf x'` are all `rm -rf x` here.
_GIT_DESTRUCTIVE = (
    # remote history overwritten or deleted (-?f: -uf and --force...; +: a forced refspec)
    "git *push*--force*", "git *push* -f*", "git *push* -?f*", "git *push* +*",
    "git *push*--delete*", "git *push* -d*", "git *push*--mirror*",
    # local work discarded: uncommitted changes, untracked files, unmerged branches, stashes
    "git *reset* --h*", "git *clean* -*f*", "git *checkout* -f*", "git *checkout* --f*",
    "git *branch* -D*", "git *stash* drop*", "git *stash* clear*",
)  # fmt: skip
_STDIN_PROGRAMS = tuple(
    # a shell or interpreter reading its program from stdin: `curl URL | sh` runs
    # whatever the server sends
    [f"{sh}{tail}" for sh in ("sh", "bash", "zsh", "dash", "ksh")
     for tail in ("", " -", " -s *", " -i", " -l")]
    + [f"{p}{tail}" for p in ("python", "python3", "perl", "ruby", "node") for tail in ("", " -")]
)  # fmt: skip
_DESTRUCTIVE: dict[str, Action] = {
    # recursive delete, the flag anywhere: rm -fr x, rm x -R, --recursive (as -?r)
    **_flag("rm", "-r", "-R", "-?r", "-?R"),
    **_flag("find", "-delete"),
    # disks and raw devices: one wrong argument wipes a file system
    **dict.fromkeys(
        ("dd *", "mkfs*", "mke2fs *", "wipefs *", "fdisk *", "sfdisk *", "parted *"), "ask"
    ),
    "shred *": "ask",  # overwrites contents so they cannot be recovered
    # recursive ownership and mode changes across a tree are hard to undo (--r: --recursive)
    **_flag("chmod", "-R", "-?R", "--r"),
    **_flag("chown", "-R", "-?R", "--r"),
    **_flag("chgrp", "-R", "-?R", "--r"),
    **dict.fromkeys(_GIT_DESTRUCTIVE, "ask"),
    **dict.fromkeys(_STDIN_PROGRAMS, "ask"),
    # the whole machine: stop it, or kill every process the user owns
    **dict.fromkeys(("shutdown *", "reboot *", "poweroff *", "halt *", "kill * -1"), "ask"),
}

# Protections that a broad rule does not lift: the policy re-applies them after
# every config rule whose pattern starts with "*" (so `"write:file" = "allow"`
# keeps them), while a rule naming a path (`".git/*" = "allow"`) overrides them.
PROTECTED_PERMISSIONS: dict[str, dict[str, Action]] = {
    "read:file": {
        # .env-style secrets: a model reading them may leak them into a transcript.
        "*.env": "ask",
        ".env.*": "ask",
        "*/.env.*": "ask",
        "*.env.example": "allow",
        "*.env.sample": "allow",
        "*.env.template": "allow",
    },
    "write:file": dict.fromkeys(SELF_PROTECTED_PATHS, "ask"),
    "delete:file": dict.fromkeys(SELF_PROTECTED_PATHS, "ask"),
    "execute:command": _DESTRUCTIVE,
}

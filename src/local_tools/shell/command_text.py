"""A simple command's words as the rules see them, and when that text is not exact.

The policy matches rules against the text before bash expands it; `inexact` says why
that text may not be what the program gets, so `command_parse` marks the command and
the caller asks. Apart from the walk because it judges one command's words, not the
shell structure around them.
"""

from __future__ import annotations

from collections.abc import Sequence

from local_tools.shell.command_words import Redirect, Word, shown
from local_tools.shell.command_wrappers import PLAIN_OPTIONS, split_clusters

__all__ = ["NOT_FILE_OPS", "brief", "clusters_shown", "inexact"]


def brief(text: str) -> str:
    """A word cut to fit in a message: the command itself may be 64 KB."""
    return text if len(text) <= 60 else text[:57] + "..."


def clusters_shown(program: str, words: Sequence[Word]) -> list[str]:
    """The words as shown, each writing option letter of a cluster its own word
    (`sort -uo F` shows `sort -u -o F`), patterns still marked as patterns."""
    out: list[str] = []
    for i, w in enumerate(words):
        if w.text == "--":
            return out + [shown(v) for v in words[i:]]
        out += [shown(Word(a, True, w.glob)) for a in split_clusters(program, [w.text])]
    return out


# Redirections whose target is not a file name: here-documents and here-strings
NOT_FILE_OPS = frozenset({"<<", "<<-", "<<<"})


def inexact(
    program: str, words: Sequence[Word], files: Sequence[Redirect], wrappers: tuple[str, ...]
) -> str | None:
    """Why rules matched against this command's text would not see what the program gets.

    The rules read the text before bash expands it: `find . $x touch PWN \\;` with
    x=-exec, `sort {-o,PWN} a.txt` and `git log *` beside a file named `--output=F` all
    look read-only. A pattern is fine where it cannot become an option: it does not
    start with one (`src/*.py`), or the program has no option that writes or runs
    (`ls *.py`, see PLAIN_OPTIONS). A process substitution is a /dev/fd path: fine.
    """
    for w in words[1:]:
        if not w.static and not w.pipe:
            return f"the word {brief(w.text)!r} is only known at run time"
        if w.glob and w.text.startswith("-"):
            return f"the option pattern {brief(w.text)!r} is expanded at run time"
        if w.lead_glob and program not in PLAIN_OPTIONS:
            return f"the pattern {brief(w.text)!r} may match a file named like an option"
    for r in files:
        if not r.static:
            return f"the redirection target {brief(r.target)!r} is only known at run time"
    if "xargs" in wrappers and program not in PLAIN_OPTIONS:
        return f"xargs gives {program} words only known at run time"
    return None

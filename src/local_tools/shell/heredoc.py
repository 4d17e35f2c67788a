"""Unquoted here-document bodies: what bash evaluates in them before the command runs.

tree-sitter-bash's `$(...)` detection in a body is unreliable and it never finds
backquotes there, so bodies are scanned by hand; `command_parse` analyses each
substitution found as a nested command. Apart from `command_words` because a body is
plain text, not syntax-tree nodes.
"""

from __future__ import annotations

import re

from local_tools.shell.command_words import expansion_evaluates

__all__ = ["UNSURE_END", "body_evaluates", "body_substitutions"]

# In a substitution: where bash ends it is not sure to be where the bracket count ends it
UNSURE_END = re.compile(r"#|\bcase\b|<<")


def body_evaluates(body: str) -> str | None:
    """`expansion_evaluates` for an unquoted here-document body, plus its arithmetic."""
    if "$((" in body or "$[" in body:
        return "arithmetic in a here-document is evaluated at run time"
    for m in re.finditer(r"\$\{", body):
        why = expansion_evaluates(body[m.start() :])
        if why is not None:
            return why
    return None


def _closing_paren(text: str, i: int) -> int | None:
    """Index of the `)` closing a `$(` whose body starts at i (quotes and nesting skipped)."""
    depth, quote = 1, ""
    while i < len(text):
        c = text[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
            elif quote == '"' and text.startswith("$(", i):
                end = _closing_paren(text, i + 2)
                if end is None:
                    return None
                i = end
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def body_substitutions(body: str) -> list[str] | None:
    """The `$(...)` and backquoted commands of an unquoted here-document body."""
    found: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            i += 2
        elif body[i] == "`":
            end = body.find("`", i + 1)
            while end > 0 and body[end - 1] == "\\":
                end = body.find("`", end + 1)
            if end < 0:
                return None
            found.append(re.sub(r"\\([$`\\])", r"\1", body[i + 1 : end]))
            i = end + 1
        elif body.startswith("$((", i):
            i += 3  # arithmetic: substitutions inside it are found as we go
        elif body.startswith("$(", i):
            close = _closing_paren(body, i + 2)
            if close is None:
                return None
            found.append(body[i + 2 : close])
            i = close + 1
        else:
            i += 1
    return found

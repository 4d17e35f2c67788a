"""Diagnostics as a model reads them, and which of them an edit introduced.

A server's raw diagnostic (0-based, UTF-16) becomes a `Diagnostic` with 1-based line and
column in characters. "New" is decided without line numbers, which an edit shifts: a
diagnostic is old when the text before the edit had one with the same severity, code,
message and line text (as a multiset: two identical errors before and three after
make one new).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from local_tools.lsp.positions import from_lsp

__all__ = ["SEVERITIES", "Diagnostic", "format_diagnostic", "split_new", "to_diagnostics"]

SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


@dataclass(frozen=True)
class Diagnostic:
    line: int  # 1-based
    column: int  # 1-based, in characters
    severity: str  # error | warning | information | hint
    message: str
    code: str | None
    source: str | None
    line_text: str  # the text of its line (stripped), what "already there" compares

    @property
    def key(self) -> tuple[str, str | None, str, str]:
        return (self.severity, self.code, self.message, self.line_text)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "line": self.line,
            "column": self.column,
            "severity": self.severity,
            "message": self.message,
        }
        if self.code:
            out["code"] = self.code
        return out


def to_diagnostics(raw: Iterable[dict[str, Any]], text: str | None) -> list[Diagnostic]:
    """The server's diagnostics for a document whose content is `text`, in line order."""
    lines = text.split("\n") if text is not None else []
    out: list[Diagnostic] = []
    for item in raw:
        rng = item.get("range")
        start = rng.get("start") if isinstance(rng, dict) else None
        line, column = from_lsp(text, start if isinstance(start, dict) else {})
        severity = item.get("severity")
        code = item.get("code")
        source = item.get("source")
        message = item.get("message")
        out.append(
            Diagnostic(
                line=line,
                column=column,
                # A diagnostic without a severity is the client's to interpret: an error.
                severity=SEVERITIES.get(severity, "error")
                if isinstance(severity, int)
                else "error",
                message=_one_line(message if isinstance(message, str) else ""),
                code=str(code) if isinstance(code, (str, int)) and code != "" else None,
                source=source if isinstance(source, str) else None,
                line_text=lines[line - 1].strip() if 0 < line <= len(lines) else "",
            )
        )
    out.sort(key=lambda d: (d.line, d.column))
    return out


def split_new(
    before: Sequence[Diagnostic] | None, after: Sequence[Diagnostic]
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """(new, already there) among `after`; with no `before` known, all are new."""
    if before is None:
        return list(after), []
    left = Counter(d.key for d in before)
    new: list[Diagnostic] = []
    old: list[Diagnostic] = []
    for diag in after:
        if left[diag.key] > 0:
            left[diag.key] -= 1
            old.append(diag)
        else:
            new.append(diag)
    return new, old


def format_diagnostic(shown_path: str, diag: Diagnostic) -> str:
    """`path:line:col: error: message [code]`, the form compilers and editors print."""
    code = f" [{diag.code}]" if diag.code else ""
    return f"{shown_path}:{diag.line}:{diag.column}: {diag.severity}: {diag.message}{code}"


def _one_line(message: str) -> str:
    # Servers indent follow-up lines with no-break spaces ("\xa0\xa0"int" is not ...").
    parts = [p.replace("\xa0", " ").strip() for p in message.splitlines()]
    return "; ".join(p for p in parts if p)

"""What apply_patch returns: its output's shape and the text a model reads."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from local_tools.core.tool import Output, omitted
from local_tools.lsp.after_change import (
    DIAGNOSTICS_DESCRIPTION,
    DiagnosticsReport,
    with_diagnostics,
)

__all__ = ["ApplyPatchOutput", "PatchedFile", "render_patch"]


class PatchedFile(Output):
    path: str = Field(description="The file (the source, for a move).")
    action: str = Field(description='"add", "update", "delete" or "move".')
    to: str = omitted(description="Moves: the destination.")
    matched: str = omitted(description="How loosely the context matched, when not exactly.")


class ApplyPatchOutput(Output):
    files: list[PatchedFile] = Field(description="Every file the patch changed, in patch order.")
    diff: str = Field(description="Unified diff of all the changes.")
    diagnostics: DiagnosticsReport = omitted(description=DIAGNOSTICS_DESCRIPTION)


_LETTERS = {"add": "A", "update": "M", "delete": "D", "move": "R"}


def render_patch(output: dict[str, Any]) -> str:
    files = output["files"]
    rows = []
    for f in files:
        name = f"{f['path']} -> {f['to']}" if "to" in f else f["path"]
        note = f"  (matched {f['matched']})" if "matched" in f else ""
        rows.append(f"{_LETTERS[f['action']]} {name}{note}")
    text = f"Applied patch to {len(files)} file(s):\n" + "\n".join(rows)
    return with_diagnostics(text, output)

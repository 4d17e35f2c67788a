"""lsp: code navigation through language servers (definition, references, symbols,
calls, diagnostics, rename)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import CHANGES_ROOTS, Args, Hints, Output, omitted, tool
from local_tools.lsp.after_change import (
    DIAGNOSTICS_DESCRIPTION,
    DiagnosticsReport,
    with_diagnostics,
)
from local_tools.tools._common import file_subjects

__all__ = ["lsp"]

T = TypeVar("T")

Operation = Literal[
    "definition", "references", "hover", "document_symbols", "workspace_symbols",
    "implementation", "incoming_calls", "outgoing_calls", "diagnostics", "rename",
]  # fmt: skip


class LspArgs(Args):
    operation: Operation = Field(description="What to ask.")
    path: str | None = Field(None, description="File (diagnostics: or folder).")
    line: int | None = Field(None, ge=1, description="1-based.")
    column: int | None = Field(None, ge=1, description="1-based, in characters.")
    symbol: str | None = Field(None, description="Instead of line/column: e.g. Point.norm")
    query: str | None = Field(None, description="workspace_symbols: name to find.")
    new_name: str | None = Field(None, description="rename: the new name.")
    apply: bool = Field(False, description="rename: write the files.")


class LspItem(Output):
    path: str = omitted(description="The file, workspace-relative (absolute outside it).")
    line: int = Field(description="1-based line.")
    column: int = Field(description="1-based column, in characters.")
    text: str = omitted(description="That line's text (files inside the roots only).")
    name: str = omitted(description="The symbol, caller or callee.")
    kind: str = omitted(description="Its kind: class, method, function ...")
    depth: int = omitted(description="document_symbols: nesting depth, 0 at the top.")


class LspFile(Output):
    path: str = Field(description="The file (or the language, when unavailable).")
    state: str = Field(description="errors, clean, pending or unavailable.")
    diagnostics: list[str] = Field(description="path:line:col: severity: message lines.")
    more: int = omitted(description="Diagnostics beyond those listed.")
    note: str = omitted(description="Why pending or unavailable.")


class LspOutput(Output):
    operation: str = Field(description="The operation done.")
    at: str = omitted(description="The place asked about, as path:line:col.")
    path: str = omitted(description="document_symbols: the file.")
    server: str = omitted(description="The language server that answered.")
    items: list[LspItem] = omitted(description="Locations or symbols found.")
    total: int = omitted(description="How many were found (items may hold fewer).")
    hover: str = omitted(description="hover: the text, plain.")
    state: str = omitted(description="diagnostics: errors, clean, pending or unavailable.")
    files: list[LspFile] = omitted(description="diagnostics: per file (clean ones counted).")
    changed: list[str] = omitted(description="rename: the files it changes.")
    edits: int = omitted(description="rename: how many places.")
    applied: bool = omitted(description="rename: whether the files were written.")
    diff: str = omitted(description="rename: unified diff across the files.")
    note: str = omitted(description="What was left out, and why.")
    diagnostics: DiagnosticsReport = omitted(description=DIAGNOSTICS_DESCRIPTION)


DESCRIPTION = """Code navigation via language servers: definition, references, type errors, rename.

Also implementations, hover (types, docs), symbols and calls; Python and
TypeScript/JavaScript, more via [lsp] config.

A place is path + line + column (1-based, as read_file shows) or `symbol`, a name path
(`Point.norm`) looked up in path, else the workspace; an ambiguous one lists candidates.
document_symbols needs path, workspace_symbols query; diagnostics takes a file, a folder
or nothing (the workspace), each file errors/clean/pending/unavailable. rename needs
new_name and returns a diff; apply=true writes every file or none."""


def _render(output: dict[str, Any]) -> str:
    op = output["operation"]
    lines: list[str] = []
    if output.get("at"):
        lines.append(f"{op} of {output['at']} ({output.get('server', '')}):")
    if op == "hover":
        lines.append(output.get("hover") or "(no hover information)")
    elif op == "rename":
        files = len(output["changed"])
        done = "applied" if output["applied"] else "not applied: call again with apply=true"
        lines.append(f"{output['edits']} edit(s) in {files} file(s), {done}.")
        lines.append(output["diff"])
    elif op == "diagnostics":
        lines.append(f"state: {output['state']}")
        for entry in output["files"]:
            more = f" (+{entry['more']} more)" if entry.get("more") else ""
            why = f": {entry['note']}" if entry.get("note") else ""
            lines.append(f"{entry['path']}: {entry['state']}{more}{why}")
            lines += [f"  {d}" for d in entry["diagnostics"]]
    else:
        items = output.get("items") or []
        if op == "document_symbols":
            lines.append(f"{output['path']} ({output.get('server', '')}):")
        for item in items:
            if "depth" in item:
                indent = "  " * (item["depth"] + 1)
                lines.append(f"{indent}{item['kind']} {item['name']} (line {item['line']})")
                continue
            name = f" {item['kind']} {item['name']}" if item.get("name") else ""
            text = f": {item['text']}" if item.get("text") else ""
            lines.append(f"{item['path']}:{item['line']}:{item['column']}{name}{text}")
        if not items:
            lines.append("No results.")
    if output.get("note"):
        lines.append(output["note"])
    return with_diagnostics("\n".join(lines), output)


def _subjects(args: LspArgs, ctx: ToolContext) -> list[str] | None:
    return file_subjects(ctx, args.path) if args.path else None


async def _thread(ctx: ToolContext, func: Callable[..., T], *args: Any) -> T:
    try:
        return await asyncio.to_thread(func, *args)
    except asyncio.CancelledError:
        ctx.cancel()  # the worker sees it and cancels its request at the server
        raise


@tool(
    "lsp",
    args=LspArgs,
    description=DESCRIPTION,
    permission="read:file",
    aliases=("LSP",),
    # rename with apply=true rewrites files (asking write:file for each, like edit);
    # every other operation only reads.
    hints=Hints(read_only=False, destructive=True),
    toolset="code",
    subjects=_subjects,
    render=_render,
    output=LspOutput,
    # A rename that writes may touch any file of the project.
    changes=lambda args, ctx: CHANGES_ROOTS if args.operation == "rename" and args.apply else None,
)
async def lsp(args: LspArgs, ctx: ToolContext) -> dict[str, Any]:
    # The language-server client loads with the first call, not with every server's start.
    from local_tools.lsp.navigation import Navigator
    from local_tools.lsp.rename import check_writable, rename_commit, rename_output, rename_plan
    from local_tools.lsp.requests import LspRequest, validate

    req = LspRequest(**args.model_dump())
    validate(req)
    nav = await _thread(ctx, Navigator, ctx)
    if req.operation != "rename":
        return await _thread(ctx, nav.run, req)
    plan = await _thread(ctx, rename_plan, nav, req)
    others = [c.shown for c in plan.changes if c.real != plan.doc.real]
    if others:  # the diff shows them
        subjects = [s for shown in others for s in file_subjects(ctx, shown)]
        await ctx.authorize(
            "read:file", subjects, summary=f"lsp rename reads {len(others)} file(s)"
        )
    if req.apply:
        check_writable(ctx, plan.changes)
        subjects = [s for c in plan.changes for s in file_subjects(ctx, c.shown)]
        await ctx.authorize(
            "write:file",
            subjects,
            summary=f"rename to {plan.new_name} in {len(plan.changes)} file(s)",
        )
        await _thread(ctx, rename_commit, nav, plan)
    return rename_output(plan, applied=req.apply)

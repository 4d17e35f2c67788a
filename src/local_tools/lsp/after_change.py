"""The language errors of the files a call wrote, told apart from the ones already there.

The runner calls `check_changes` after a call that wrote files (ToolContext.changed_files).
For each file a language server is meant for: the server gets the text from before the
change (unless it already holds it with its diagnostics) and its diagnostics are waited
for, then the text after; only diagnostics for that version count (client.py), and an
error is new when the text before had none like it (diagnostics.split_new). Other open
files whose errors changed with this change (a caller now broken) are reported too.

Everything shares one wait: `[lsp] wait` seconds from the end of the write, a cold
server's start included (it keeps starting; the next change finds it warm). What did not
come in time is `pending`, never `clean`; a missing server is `unavailable`, naming what
to install. Nothing here raises: a failure is a state with a short note.

Imported by the tools for their output model and rendering: the engine itself
(manager, sandbox) is imported only when a check runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from local_tools.core.tool import Output, omitted
from local_tools.lsp.diagnostics import Diagnostic, format_diagnostic, split_new, to_diagnostics

if TYPE_CHECKING:
    from local_tools.core.context import ChangedFile, ToolContext
    from local_tools.lsp.client import LanguageServer

__all__ = [
    "DIAGNOSTICS_DESCRIPTION",
    "DiagnosticsReport",
    "check_changes",
    "render_diagnostics",
    "wanted",
    "with_diagnostics",
]

log = logging.getLogger(__name__)

MAX_PER_FILE = 20  # new errors listed per changed file
MAX_FILES = 20  # changed files listed
MAX_OTHER_FILES = 5  # other open files listed
MAX_PER_OTHER_FILE = 5  # new errors listed per other file
MAX_OTHERS_ASKED = 10  # other open files a pulling server is asked about
MAX_LINE = 300  # characters of one error line
# How long, after the changed files' diagnostics, other open files may take to be
# re-published (basedpyright sends them together; a server may send only changed ones).
OTHER_SETTLE = 0.2

DIAGNOSTICS_DESCRIPTION = (
    "Language errors of the changed files after the change (state: errors, clean, pending, "
    "unavailable), and other open files it broke or fixed."
)


# --------------------------------------------------------------------------- output


class FileDiagnostics(Output):
    path: str = Field(description="A changed file.")
    state: str = Field(description='"errors", "clean", "pending" or "unavailable".')
    server: str = omitted(description="The language server that checked it.")
    new: list[str] = omitted(description="Errors this change added: path:line:col: message.")
    more_new: int = omitted(description="New errors left out of new.")
    existing: int = omitted(description="Errors that were there before the change.")
    note: str = omitted(description="Why it was not checked (what to install), or a caveat.")


class OtherFileDiagnostics(Output):
    path: str = Field(description="An open file whose errors changed with this change.")
    new: list[str] = Field(description="Errors the change caused there.")
    more_new: int = omitted(description="New errors left out of new.")
    fixed: int = omitted(description="Errors there that the change fixed.")


class DiagnosticsReport(Output):
    state: str = Field(description='Overall: "errors", "clean", "pending" or "unavailable".')
    files: list[FileDiagnostics] = Field(description="Each changed file a server is meant for.")
    more_files: int = omitted(description="Changed files left out of files.")
    other_files: list[OtherFileDiagnostics] = omitted(description="Other open files affected.")
    more_other_files: int = omitted(description="Other affected files left out.")


# --------------------------------------------------------------------------- the check


@dataclass
class _File:
    path: Path
    shown: str
    before: str | None
    after: str
    server: LanguageServer | None = None
    state: str = ""
    note: str = ""
    baseline: list[Diagnostic] | None = None  # errors before; None: unknown
    new: Sequence[Diagnostic] = ()
    existing: int | None = None


@dataclass
class _Other:
    shown: str
    new: list[Diagnostic]
    fixed: int


def check_changes(ctx: ToolContext, changes: Sequence[ChangedFile]) -> dict[str, Any] | None:
    """The report for the output's `diagnostics`, or None when no changed file has a
    language server meant for it. Never raises."""
    if not changes:
        return None
    deadline = max(c.written_at for c in changes) + ctx.config.lsp.wait
    files: dict[Path, _File] = {}
    for change in changes:  # a file written twice: from the first before to the last after
        known = files.get(change.path)
        if known is None:
            shown = ctx.jail.display(change.path)
            files[change.path] = _File(change.path, shown, change.before, change.after)
        else:
            known.after = change.after
    meant = [f for f in files.values() if _meant(ctx, f.path)]
    if not meant:  # a .md or .txt: no server is even looked for
        return None
    try:
        checked = _servers_for(ctx, meant)
    except Exception as exc:  # the manager could not be made: nothing can be checked
        log.exception("language servers unavailable")
        checked = meant
        for f in checked:
            f.state, f.note = "unavailable", f"language servers could not be used: {exc}"
    if not checked:
        return None
    others: list[_Other] = []
    groups: dict[int, list[_File]] = {}
    for f in checked:
        if f.server is not None and not f.state:
            groups.setdefault(id(f.server), []).append(f)
    for group in groups.values():
        server = group[0].server
        assert server is not None
        try:
            others += _check_server(server, group, deadline, lambda: ctx.cancelled, ctx)
        except Exception as exc:  # a server gone mid-check, a protocol surprise
            log.warning("checking with %s failed: %s", server.name, exc)
            for f in group:
                if not f.state:
                    f.state, f.note = "pending", f"{server.name} failed: {_short(str(exc))}"
    return _report(checked, others)


def wanted(ctx: ToolContext, path: str | Path) -> bool:
    """Whether a change of `path` will be checked: servers on, and one meant for its
    kind of file (installed or not). A tool asks before reading a text only for this."""
    return ctx.config.lsp.enabled and _meant(ctx, Path(path))


def _meant(ctx: ToolContext, path: Path) -> bool:
    from local_tools.lsp.specs import server_specs, specs_for

    return bool(specs_for(path, server_specs(dict(ctx.config.lsp.servers))))


def _servers_for(ctx: ToolContext, files: list[_File]) -> list[_File]:
    """The files a server is meant for, each with its server or its state."""
    from local_tools.lsp.confine import lsp_manager
    from local_tools.lsp.manager import Unavailable

    manager = lsp_manager(ctx)
    out: list[_File] = []
    for f in files:
        try:
            target = manager.server_for(f.path)
        except Exception as exc:
            f.state, f.note = "unavailable", f"the language server could not start: {exc}"
            out.append(f)
            continue
        if target is None:
            continue
        if isinstance(target, Unavailable):
            f.state, f.note = "unavailable", target.reason
        else:
            f.server = target
        out.append(f)
    return out


def _check_server(
    server: LanguageServer,
    files: list[_File],
    deadline: float,
    cancelled: Callable[[], bool],
    ctx: ToolContext,
) -> list[_Other]:
    from local_tools.lsp.client import StartFailed

    try:
        server.ready.result(timeout=max(deadline - time.monotonic(), 0))
    except FutureTimeout:
        for f in files:
            f.state, f.note = "pending", f"Language server {server.name} still starting"
        return []
    except StartFailed as exc:
        for f in files:
            f.state, f.note = "unavailable", _short(str(exc))
        return []
    pull = server.pulls_diagnostics

    def current(path: Path) -> list[dict[str, Any]] | None:
        """The diagnostics of the text last synced for `path`; None: not in time."""
        return server.diagnostics(path, deadline, cancelled)

    # The text before: its diagnostics, unless the server already has them.
    changed = {f.path for f in files}
    for f in files:
        if f.before is None:
            f.baseline = []
        elif server.text_of(f.path) != f.before:
            server.sync(f.path, f.before)
    for f in files:
        if f.before is not None:
            raw = current(f.path)
            f.baseline = _errors(raw, f.before) if raw is not None else None
    if pull:
        open_others = [p for p in server.open_paths() if p not in changed][-MAX_OTHERS_ASKED:]
        before_others = {p: current(p) for p in open_others}
    else:
        before_others = {p: d for p, d in server.known_diagnostics().items() if p not in changed}
    # The text after.
    mark = server.sync_count + 1
    for f in files:
        server.sync(f.path, f.after)
    for f in files:
        raw = current(f.path)
        if raw is None:
            wait = ctx.config.lsp.wait
            f.state, f.note = "pending", f"No diagnostics from {server.name} within {wait:g} s"
            continue
        errors = _errors(raw, f.after)
        if not errors:
            f.state = "clean"
            continue
        f.state = "errors"
        f.new, old = split_new(f.baseline, errors)
        if f.baseline is None:
            f.note = "errors before the change unknown (the server was slow): some may be old"
        else:
            f.existing = len(old)
    # Other open files whose errors changed.
    if pull:
        after_others = {p: current(p) for p in before_others}
    else:
        settle = min(deadline, time.monotonic() + OTHER_SETTLE)
        server.wait_published(list(before_others), mark, settle)
        after_others = dict(server.published_since(mark))
    others: list[_Other] = []
    for path, before_raw in before_others.items():
        after_raw = after_others.get(path)
        text = server.text_of(path)
        if before_raw is None or after_raw is None or text is None:
            continue
        before_errors = _errors(before_raw, text)
        new, old = split_new(before_errors, _errors(after_raw, text))
        fixed = len(before_errors) - len(old)
        if new or fixed:
            others.append(_Other(ctx.jail.display(path), new, fixed))
    return others


def _errors(raw: list[dict[str, Any]], text: str) -> list[Diagnostic]:
    return [d for d in to_diagnostics(raw, text) if d.severity == "error"]


def _short(text: str, limit: int = MAX_LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _lines(shown: str, diags: Sequence[Diagnostic], limit: int) -> tuple[list[str], int]:
    lines = [_short(format_diagnostic(shown, d)) for d in diags[:limit]]
    return lines, max(len(diags) - limit, 0)


def _report(files: list[_File], others: list[_Other]) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    for f in files[:MAX_FILES]:
        entry: dict[str, Any] = {"path": f.shown, "state": f.state}
        if f.server is not None:
            entry["server"] = f.server.name
        if f.state == "errors":
            entry["new"], more = _lines(f.shown, f.new, MAX_PER_FILE)
            if more:
                entry["more_new"] = more
            if f.existing is not None:
                entry["existing"] = f.existing
        if f.note:
            entry["note"] = f.note
        entries.append(entry)
    report: dict[str, Any] = {"state": _overall(files, others), "files": entries}
    if len(files) > MAX_FILES:
        report["more_files"] = len(files) - MAX_FILES
    if others:
        listed = []
        for other in others[:MAX_OTHER_FILES]:
            item: dict[str, Any] = {"path": other.shown}
            item["new"], more = _lines(other.shown, other.new, MAX_PER_OTHER_FILE)
            if more:
                item["more_new"] = more
            if other.fixed:
                item["fixed"] = other.fixed
            listed.append(item)
        report["other_files"] = listed
        if len(others) > MAX_OTHER_FILES:
            report["more_other_files"] = len(others) - MAX_OTHER_FILES
    return report


def _overall(files: list[_File], others: list[_Other]) -> str:
    states = {f.state for f in files}
    if "errors" in states or any(o.new for o in others):
        return "errors"
    for state in ("pending", "unavailable"):  # anything unchecked is never "clean"
        if state in states:
            return state
    return "clean"


# --------------------------------------------------------------------------- text


def with_diagnostics(text: str, output: dict[str, Any]) -> str:
    """A tool's rendered text, with the diagnostics block when the output has one."""
    report = output.get("diagnostics")
    return f"{text}\n{render_diagnostics(report)}" if isinstance(report, dict) else text


def render_diagnostics(report: dict[str, Any]) -> str:
    """The short block a model reads after a change's own text."""
    files = [f for f in report.get("files", []) if isinstance(f, dict)]
    servers = sorted({f["server"] for f in files if f.get("server")})
    lines: list[str] = []
    if files and all(f.get("state") == "clean" for f in files):
        where = f" in {len(files)} files" if len(files) > 1 else ""
        lines.append(f"No language errors{where} ({', '.join(servers)})")
        files = []
    single = len(files) == 1
    for f in files:
        where = "" if single else f" in {f.get('path')}"
        server = f" ({f['server']})" if f.get("server") else ""
        state, note = f.get("state"), f.get("note", "")
        if state == "errors":
            new = list(f.get("new", []))
            count = len(new) + int(f.get("more_new", 0))
            counts = f"{count} new" if count else "none new"
            if f.get("existing"):
                counts += f", {f['existing']} already there"
            lines.append(f"Language errors{where}{server}: {counts}")
            lines += [f"  {line}" for line in new]
            if f.get("more_new"):
                lines.append(f"  ... and {f['more_new']} more new")
            if note:
                lines.append(f"  ({note})")
        elif state == "clean":
            lines.append(f"No language errors{where}{server}")
        elif state == "pending":
            lines.append(f"{note}: errors{where} not checked yet")
        else:
            lines.append(f"Language errors{where} not checked: {note}")
    if report.get("more_files"):
        lines.append(f"... and {report['more_files']} more changed files")
    others = [o for o in report.get("other_files", []) if isinstance(o, dict)]
    if others:
        lines.append("Other open files this change affected:")
    for other in others:
        lines += [f"  {line}" for line in other.get("new", [])]
        if other.get("more_new"):
            lines.append(f"  ... and {other['more_new']} more new in {other.get('path')}")
        if other.get("fixed"):
            lines.append(f"  {other.get('path')}: {other['fixed']} error(s) fixed")
    if report.get("more_other_files"):
        lines.append(f"  ... and {report['more_other_files']} more files")
    return "\n".join(lines)

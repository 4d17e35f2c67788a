"""The lsp tool's diagnostics: of one file, of a folder's or the workspace's source files.

Each file's state is `errors`, `clean`, `pending` (the server did not report for the
current text in time: never shown as clean) or `unavailable` (no server installed for
its language: which to install). A workspace check opens up to MAX_FILES source files
(.gitignore honoured, at most a server's open-document cap each, so none is closed
before its diagnostics are read), waits up to `[lsp] request_timeout` for all of them,
and lists the files that are not clean, at most MAX_PER_FILE diagnostics each.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from local_tools.core.errors import ExecutionError, NotFound, ToolError
from local_tools.lsp.diagnostics import format_diagnostic, to_diagnostics
from local_tools.lsp.jsonrpc import ServerGone
from local_tools.lsp.manager import Unavailable
from local_tools.lsp.navigation import Doc, Navigator

__all__ = ["MAX_FILES", "MAX_PER_FILE", "diagnostics"]

MAX_FILES = 100
MAX_PER_FILE = 20


def diagnostics(nav: Navigator, path: str | None) -> dict[str, Any]:
    wait = nav.settings.request_timeout
    folder = nav.ctx.jail.resolve(path) if path else None
    if path and folder is not None and not os.path.isdir(folder):
        doc = nav.open(path)
        raw = nav.await_diagnostics(doc.server, doc.real, wait)
        entry = _entry(doc.shown, raw, doc.text)
        return {"operation": "diagnostics", "state": entry["state"], "files": [entry]}
    return _workspace(nav, folder, wait)


def _workspace(nav: Navigator, folder: Path | None, wait: float) -> dict[str, Any]:
    opened: list[Doc] = []
    per_server: dict[int, int] = {}
    unavailable: dict[str, str] = {}
    skipped = 0
    for real in nav.source_files(folder):
        found = nav.mgr.server_for(real)
        if isinstance(found, Unavailable):
            unavailable.setdefault(found.language, found.reason)
            continue
        if found is None:
            continue
        # Past the server's open-document cap the first ones would be closed (and
        # their diagnostics dropped) before they are read.
        full = per_server.get(id(found), 0) >= nav.settings.max_open_documents
        if full or len(opened) >= MAX_FILES:
            skipped += 1
            continue
        try:
            nav.wait_ready(found)
        except ExecutionError as exc:  # it could not start: its files are unavailable
            unavailable.setdefault(found.spec.language, exc.message)
            continue
        try:
            _, shown, text = nav.read(str(real))
            found.sync(real, text)
        except (ToolError, ServerGone):
            continue
        per_server[id(found)] = per_server.get(id(found), 0) + 1
        opened.append(Doc(shown, real, text, found))
        if len(opened) % 10 == 0:
            nav.ctx.progress(f"opened {len(opened)} files", None)
    if not opened and not unavailable:
        where = nav.ctx.jail.display(folder) if folder is not None else "the workspace"
        raise NotFound(
            f"No source file a language server is meant for in {where} (readable without "
            "asking); diagnostics checks .py, .ts, .js ... files."
        )
    deadline = time.monotonic() + wait
    entries = [
        _entry(
            d.shown, nav.await_diagnostics(d.server, d.real, deadline - time.monotonic()), d.text
        )
        for d in opened
    ]
    listed = [e for e in entries if e["state"] != "clean"]
    listed += [
        {"path": language, "state": "unavailable", "diagnostics": [], "note": why}
        for language, why in unavailable.items()
    ]
    states = {e["state"] for e in listed}
    state = next((s for s in ("errors", "pending", "unavailable") if s in states), "clean")
    clean = sum(e["state"] == "clean" for e in entries)
    note = f"{len(entries)} file(s) checked, {clean} clean."
    if not entries and not unavailable:
        note = "No source file with a language server was found."
    if skipped:
        note += f" {skipped} more source file(s) were not checked: give a folder as path."
    return {"operation": "diagnostics", "state": state, "files": listed, "note": note}


def _entry(shown: str, raw: list[dict[str, Any]] | None, text: str) -> dict[str, Any]:
    if raw is None:
        return {"path": shown, "state": "pending", "diagnostics": [],
                "note": "the server did not report in time; not known to be clean"}  # fmt: skip
    found = [d for d in to_diagnostics(raw, text) if d.severity in ("error", "warning")]
    entry: dict[str, Any] = {
        "path": shown,
        "state": "errors" if any(d.severity == "error" for d in found) else "clean",
        "diagnostics": [format_diagnostic(shown, d) for d in found[:MAX_PER_FILE]],
    }
    if len(found) > MAX_PER_FILE:
        entry["more"] = len(found) - MAX_PER_FILE
    return entry

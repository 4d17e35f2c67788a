"""The lsp tool's operations over a language server: where a name is defined and used,
what it is, the symbols of a file or the workspace, calls (diagnostics: diagnose.py;
rename: rename.py, both built on the Navigator here).

Blocking throughout (the tool runs it in a worker thread): waits poll `ctx.cancelled`,
and a cancelled call cancels its request at the server. Every document is synced
before it is asked about, so answers are about the text on disk now; a document new
to the server is given time to be analysed (its diagnostics arriving is the sign)
before the first question, since some servers (tsserver) answer from a half-loaded
project otherwise. A server that dies mid-request is restarted once (the manager's
rule) and the request retried once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from local_tools.core.context import ToolContext
from local_tools.core.errors import (
    Cancelled,
    Conflict,
    ExecutionError,
    InvalidInput,
    NotFound,
    PermissionDenied,
    ToolError,
    ToolTimeout,
)
from local_tools.lsp.client import LanguageServer, RequestCancelled, StartFailed
from local_tools.lsp.confine import lsp_manager
from local_tools.lsp.hover import hover_text, library_roots
from local_tools.lsp.jsonrpc import RpcError, ServerGone
from local_tools.lsp.manager import LspManager, Unavailable
from local_tools.lsp.positions import from_lsp, path_of, to_lsp, uri_of
from local_tools.lsp.requests import CAPABILITY, METHOD, LspRequest, bounded
from local_tools.lsp.symbols import (
    Symbol,
    document_symbols,
    kind_name,
    match_name_path,
    split_name_path,
    workspace_symbol_uris,
)
from local_tools.search.listing import DEFAULT_EXCLUDED_DIRS, list_files
from local_tools.security.policy import Action
from local_tools.text_encoding import detect_bom

__all__ = ["Doc", "Navigator"]

T = TypeVar("T")

MAX_CANDIDATE_FILES = 10  # searched for a symbol named without a path
MAX_WALK = 20_000  # files looked at to find a workspace's source files
MAX_LINE_TEXT = 200
MAX_READ_BYTES = 8 * 1024 * 1024
_EXCLUDED = (*DEFAULT_EXCLUDED_DIRS, ".venv", "venv", "__pycache__", ".tox", ".mypy_cache")
# What makes one file of many unusable, not the call: a cancel or timeout still stops it.
_SKIP = (PermissionDenied, NotFound, InvalidInput, ExecutionError)


@dataclass
class Doc:
    shown: str
    real: Path
    text: str
    server: LanguageServer


class Navigator:
    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.mgr: LspManager = lsp_manager(ctx)
        self.settings = self.mgr.settings
        self._texts: dict[Path, str | None] = {}
        allow: tuple[Action, ...] = ("allow",)  # what needs asking is not shown unasked
        self._readable = ctx.policy.subject_filter(ctx.user_id, "read:file", allow)

    # --- servers and documents ---------------------------------------------------

    def cancelled(self) -> bool:
        return self.ctx.cancelled

    def _check(self) -> None:
        if self.ctx.cancelled:
            raise Cancelled("The call was cancelled before the language server answered.")

    def server(self, real: Path, shown: str) -> LanguageServer:
        """The ready server for a file; the errors a caller can act on otherwise."""
        found = self.mgr.server_for(real)
        if found is None:
            exts = sorted({e for spec in self.mgr.specs for e in spec.extensions})
            raise InvalidInput(
                f"No language server handles {shown} (its type). Supported: {' '.join(exts)}; "
                "others can be configured in [lsp.NAME]."
            )
        if isinstance(found, Unavailable):
            raise ExecutionError(f"{found.reason}. Install it, then call again.")
        self.wait_ready(found)
        return found

    def wait_ready(self, server: LanguageServer) -> None:
        ready: Future[None] = server.ready
        if not ready.done():
            self.ctx.progress(f"waiting for {server.name} to start", None)
        deadline = time.monotonic() + self.settings.start_timeout
        while True:
            try:
                ready.result(0.1)
                return
            except FutureTimeout:
                pass
            except (StartFailed, CancelledError) as exc:
                raise ExecutionError(
                    f"{server.name} could not start: {exc}. Check it runs (local-tools "
                    "doctor), or fix [lsp." + server.name + "]."
                ) from None
            self._check()
            if time.monotonic() >= deadline:
                raise ToolTimeout(
                    f"{server.name} is still starting after {self.settings.start_timeout:g} s "
                    "([lsp] start_timeout). Try again in a moment."
                )

    def read(self, path: str) -> tuple[Path, str, str]:
        """(real path, shown path, text) of a file, through the jail."""
        if os.path.isdir(self.ctx.jail.resolve(path)):
            raise InvalidInput(f"{path} is a folder; give a file.")
        handle, real = self.ctx.jail.open_read_resolved(path)
        with handle:
            data = handle.read(MAX_READ_BYTES + 1)
        shown = self.ctx.jail.display(real)
        if len(data) > MAX_READ_BYTES:
            raise InvalidInput(f"{shown} is over {MAX_READ_BYTES // 2**20} MB; too large here.")
        bom, codec = detect_bom(data) or (b"", "utf-8")
        if not bom and b"\0" in data[:8192]:
            raise InvalidInput(f"{shown} looks like a binary file, not source code.")
        return real, shown, data[len(bom) :].decode(codec, "replace")

    def open(self, path: str, *, named: bool = False) -> Doc:
        """A file synced to its server. `named`: the call's own `path`, which the tool's
        permission check covered; the lines of other files are shown only when the rules
        allow reading them unasked."""
        real, shown, text = self.read(path)
        doc = Doc(shown, real, text, self.server(real, shown))
        if named or self._may_show(real):
            self._texts[real] = text
        self._retrying(doc, "textDocument/didOpen", lambda s: self._sync(s, doc))
        return doc

    def _sync(self, server: LanguageServer, doc: Doc) -> None:
        fresh = server.text_of(doc.real) != doc.text
        server.sync(doc.real, doc.text)
        if fresh:  # let it analyse the new text before it is asked about it
            # Up to the request timeout: answers from a half-loaded project miss files,
            # which for a rename means a change left half done.
            self.await_diagnostics(server, doc.real, self.settings.request_timeout)

    def await_diagnostics(
        self, server: LanguageServer, real: Path, wait: float
    ) -> list[dict[str, Any]] | None:
        deadline = time.monotonic() + wait
        if server.pulls_diagnostics:  # one request, cancelled with the call
            try:
                return server.diagnostics(real, deadline, self.cancelled)
            except RequestCancelled:
                self._check()
                raise
        while True:
            got = server.diagnostics(real, min(deadline, time.monotonic() + 0.25))
            if got is not None:
                return got
            self._check()
            if time.monotonic() >= deadline or not server.alive or server.text_of(real) is None:
                return None

    def _retrying(self, doc: Doc, method: str, call: Callable[[LanguageServer], T]) -> T:
        """`call(server)`; once more on a restarted server if the server died."""
        for attempt in (1, 2):
            try:
                return call(doc.server)
            except ServerGone as exc:
                if attempt == 2:
                    raise ExecutionError(
                        f"{doc.server.name} stopped while answering {method} twice ({exc}). "
                        "Try again later, or check it with local-tools doctor."
                    ) from None
                self.ctx.progress(f"{doc.server.name} stopped; restarting it", None)
                doc.server = self.server(doc.real, doc.shown)
                if method != "textDocument/didOpen":
                    self._sync(doc.server, doc)
            except RequestCancelled:
                raise Cancelled("The call was cancelled; its request was cancelled too.") from None
            except TimeoutError as exc:
                raise ToolTimeout(f"{exc} ([lsp] request_timeout). Try again.") from None
            except RpcError as exc:
                raise ExecutionError(
                    f"{doc.server.name} could not answer {method}: {exc.message}."
                ) from None
        raise AssertionError("unreachable")

    def request(self, doc: Doc, method: str, params: dict[str, Any]) -> Any:
        timeout = self.settings.request_timeout
        return self._retrying(
            doc, method, lambda s: s.request(method, params, timeout, self.cancelled)
        )

    def require(self, server: LanguageServer, operation: str) -> None:
        if not server.capabilities.get(CAPABILITY[operation]):
            raise ExecutionError(f"{server.name} does not support {operation}.")

    # --- what a location shows ---------------------------------------------------

    def _may_show(self, real: Path) -> bool:
        if self._readable is None:
            return True
        try:
            return self._readable(self.ctx.jail.display(self.ctx.jail.resolve(str(real))))
        except ToolError:
            return False

    def _defined_unreadable(self, doc: Doc, where: dict[str, Any]) -> str | None:
        """Where the name at `where` is defined, when that is a file this call may not
        read: outside the roots and every library folder, or refused by a rule."""
        if not doc.server.capabilities.get("definitionProvider"):
            return None
        result = self.request(doc, "textDocument/definition", dict(where))
        items = result if isinstance(result, list) else [result] if result else []
        for item in items:
            uri = item.get("uri", item.get("targetUri")) if isinstance(item, dict) else None
            path = path_of(uri) if isinstance(uri, str) else None
            if path is None:
                continue
            real = Path(os.path.realpath(path))
            if any(real == r or real.is_relative_to(r) for r, _ in self.ctx.jail.roots):
                if not self._may_show(real):
                    return self.ctx.jail.display(real)
            elif not any(real.is_relative_to(lib) for lib in library_roots(doc.server)):
                return str(real)
        return None

    def text_of(self, real: Path) -> str | None:
        """A file's text to show lines of: inside the roots, when the call named it or the
        rules let the caller read it unasked; never read from outside the roots."""
        if real not in self._texts:
            text: str | None = None
            if self._may_show(real):
                with suppress(ToolError):  # outside the roots, binary, gone: no line text
                    text = self.read(str(real))[2]
            self._texts[real] = text
        return self._texts[real]

    def location(self, uri: Any, position: Any, **extra: Any) -> dict[str, Any] | None:
        path = path_of(uri) if isinstance(uri, str) else None
        if path is None or not isinstance(position, dict):
            return None
        text = self.text_of(path)
        line, column = from_lsp(text, position)
        out: dict[str, Any] = {"path": self.ctx.jail.display(path), "line": line, "column": column}
        if text is not None:
            lines = text.split("\n")
            if line <= len(lines):
                out["text"] = lines[line - 1].strip()[:MAX_LINE_TEXT]
        out.update({k: v for k, v in extra.items() if v is not None})
        return out

    # --- a place: path + line + column, or a symbol ------------------------------

    def place(self, req: LspRequest) -> tuple[Doc, dict[str, int], str]:
        """The document and LSP position asked about, and how to show it."""
        if req.symbol:
            return self._symbol_place(req.symbol, req.path)
        assert req.path is not None and req.line is not None and req.column is not None
        doc = self.open(req.path, named=True)
        lines = doc.text.split("\n")
        count = len(lines) - (lines[-1] == "")  # as read_file counts them
        if req.line > max(count, 1):
            raise InvalidInput(f"Line {req.line} is past the end of {doc.shown} ({count} lines).")
        width = len(lines[req.line - 1].rstrip("\r"))
        if req.column > width + 1:
            raise InvalidInput(
                f"Column {req.column} is past the end of line {req.line} of {doc.shown} "
                f"({width} characters)."
            )
        return doc, to_lsp(doc.text, req.line, req.column), f"{doc.shown}:{req.line}:{req.column}"

    def outline(self, doc: Doc) -> list[Symbol]:
        self.require(doc.server, "document_symbols")
        result = self.request(
            doc, "textDocument/documentSymbol", {"textDocument": {"uri": uri_of(doc.real)}}
        )
        return document_symbols(result, uri_of(doc.real), doc.text)

    def _symbol_place(self, symbol: str, path: str | None) -> tuple[Doc, dict[str, int], str]:
        parts = split_name_path(symbol)
        if not parts:
            raise InvalidInput(f"symbol {symbol!r} names nothing; e.g. 'Point.norm' or 'norm'.")
        found: list[tuple[Doc, Symbol]] = []
        if path:
            doc = self.open(path, named=True)
            found = [(doc, s) for s in match_name_path(self.outline(doc), parts)]
            where = doc.shown
        else:
            for uri in self._symbol_files(parts[-1]):
                real = path_of(uri)
                if real is None or not self._may_show(real):  # asks, denied, outside
                    continue
                with suppress(*_SKIP):  # outside the roots, unreadable: not a candidate
                    doc = self.open(str(real))
                    found += [(doc, s) for s in match_name_path(self.outline(doc), parts)]
            where = "the workspace"
        if not found:
            raise NotFound(
                f"No symbol {symbol!r} in {where}. Check the name (document_symbols lists a "
                "file's), or give path, line and column."
            )
        if len(found) > 1:
            listed = [f"{s.name_path} ({s.kind}) at {d.shown}:{_lc(s, d)}" for d, s in found]
            more = f" and {len(listed) - 20} more" if len(listed) > 20 else ""
            raise Conflict(
                f"symbol {symbol!r} matches {len(found)} symbols: {'; '.join(listed[:20])}{more}. "
                "Give a longer name path (e.g. 'Class.method'), a path, or line and column.",
                details={"candidates": listed[:20]},
            )
        doc, sym = found[0]
        return doc, sym.start, f"{sym.name_path} at {doc.shown}:{_lc(sym, doc)}"

    def _symbol_files(self, name: str) -> list[str]:
        uris: list[str] = []
        for doc in self._workspace_docs():
            if doc.server.capabilities.get("workspaceSymbolProvider"):
                result = self.request(doc, "workspace/symbol", {"query": name})
                uris += [u for u in workspace_symbol_uris(result, name) if u not in uris]
        return uris[:MAX_CANDIDATE_FILES]

    # --- the workspace -----------------------------------------------------------

    def source_files(self, folder: Path | None = None) -> Iterator[Path]:
        """Files some server is meant for, .gitignore honoured, readable without asking."""
        base = folder or self.ctx.jail.root
        seen = 0
        for block in list_files(base, exclude_dirs=_EXCLUDED, check=self._check):
            for rel in block:
                seen += 1
                if seen > MAX_WALK:
                    return
                real = base / rel
                if not self.mgr.claims(real):
                    continue
                if self._readable is None or self._readable(self.ctx.jail.display(real)):
                    yield real

    def _workspace_docs(self) -> list[Doc]:
        """One open document per server the workspace's files need (servers answer
        workspace questions about the projects of their open files)."""
        docs: dict[int, Doc] = {}
        kinds: set[str] = set()
        for real in self.source_files():
            if real.suffix.lower() in kinds:
                continue
            kinds.add(real.suffix.lower())
            found = self.mgr.server_for(real)
            if found is None or isinstance(found, Unavailable) or id(found) in docs:
                continue
            with suppress(*_SKIP):  # another file of its kind may do
                docs[id(found)] = self.open(str(real))
        if not docs:
            raise NotFound(
                "No source file here has a language server installed; give path to say "
                "which file (and so which server) to ask."
            )
        return list(docs.values())

    # --- operations --------------------------------------------------------------

    def run(self, req: LspRequest) -> dict[str, Any]:
        op = req.operation
        if op == "document_symbols":
            assert req.path is not None
            doc = self.open(req.path, named=True)
            items = []
            for sym in self.outline(doc):
                line, column = sym.line_column(doc.text)
                items.append({"name": sym.name, "kind": sym.kind, "line": line, "column": column,
                              "depth": sym.depth})  # fmt: skip
            return bounded({"operation": op, "path": doc.shown, "server": doc.server.name}, items)
        if op == "workspace_symbols":
            return self.workspace_symbols(req)
        if op == "diagnostics":
            from local_tools.lsp.diagnose import diagnostics  # it builds on this module

            return diagnostics(self, req.path)
        doc, position, at = self.place(req)
        self.require(doc.server, op)
        head = {"operation": op, "at": at, "server": doc.server.name}
        where = {"textDocument": {"uri": uri_of(doc.real)}, "position": position}
        if op == "hover":
            result = self.request(doc, "textDocument/hover", where)
            contents = result.get("contents") if isinstance(result, dict) else None
            hidden = self._defined_unreadable(doc, where)
            if hidden is not None:  # its text quotes that file (values, docstrings)
                note = (
                    f"The hover text is withheld: the name is defined in {hidden}, which "
                    "this call may not read (outside the roots and not a library, or a "
                    "read:file rule). definition still shows where."
                )
                return {**head, "hover": "", "note": note}
            return {**head, "hover": hover_text(contents)}
        if op in ("incoming_calls", "outgoing_calls"):
            return bounded(head, self.calls(doc, where, op))
        if op == "references":
            where["context"] = {"includeDeclaration": True}
        result = self.request(doc, METHOD[op], where)
        return bounded(head, self.locations(result))

    def locations(self, result: Any) -> list[dict[str, Any]]:
        """Location | Location[] | LocationLink[] | null → shown locations, sorted."""
        items = result if isinstance(result, list) else [result] if result else []
        out: list[dict[str, Any]] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            uri = item.get("uri", item.get("targetUri"))
            rng = item.get("range", item.get("targetSelectionRange"))
            shown = self.location(uri, rng.get("start") if isinstance(rng, dict) else None)
            if shown is not None and shown not in out:
                out.append(shown)
        return sorted(out, key=lambda e: (e["path"], e["line"], e["column"]))

    def calls(self, doc: Doc, where: dict[str, Any], op: str) -> list[dict[str, Any]]:
        items = self.request(doc, "textDocument/prepareCallHierarchy", where)
        out: list[dict[str, Any]] = []
        incoming = op == "incoming_calls"
        method = "callHierarchy/incomingCalls" if incoming else "callHierarchy/outgoingCalls"
        for item in items if isinstance(items, list) else []:
            calls = self.request(doc, method, {"item": item})
            for call in calls if isinstance(calls, list) else []:
                peer = call.get("from" if incoming else "to") if isinstance(call, dict) else None
                if not isinstance(peer, dict):
                    continue
                name, kind = peer.get("name"), kind_name(peer.get("kind"))
                if incoming:  # where the calls are, in the caller
                    ranges = call.get("fromRanges") or [peer.get("selectionRange")]
                    spots = [self.location(peer.get("uri"), _start(r), name=name, kind=kind)
                             for r in ranges]  # fmt: skip
                else:  # the callee's declaration
                    spots = [self.location(peer.get("uri"), _start(peer.get("selectionRange")),
                                           name=name, kind=kind)]  # fmt: skip
                out += [s for s in spots if s is not None]
        return out

    def workspace_symbols(self, req: LspRequest) -> dict[str, Any]:
        docs = [self.open(req.path, named=True)] if req.path else self._workspace_docs()
        items: list[dict[str, Any]] = []
        for doc in docs:
            if req.path:
                self.require(doc.server, "workspace_symbols")
            elif not doc.server.capabilities.get("workspaceSymbolProvider"):
                continue
            result = self.request(doc, "workspace/symbol", {"query": (req.query or "").strip()})
            for item in result if isinstance(result, list) else []:
                uri = item.get("location", {}).get("uri") if isinstance(item, dict) else None
                path = path_of(uri) if isinstance(uri, str) else None
                if path is None or not self._may_show(path):  # a name can be a secret
                    continue
                # Where its name is (some servers give the whole declaration's range).
                found = document_symbols([item], str(uri), self.text_of(path)) if path else []
                for sym in found:
                    spot = self.location(uri, sym.start, name=sym.name_path, kind=sym.kind)
                    if spot is not None:
                        items.append(spot)
        servers = ", ".join(sorted({d.server.name for d in docs}))
        return bounded({"operation": "workspace_symbols", "server": servers}, items)


def _start(rng: Any) -> Any:
    return rng.get("start") if isinstance(rng, dict) else None


def _lc(symbol: Symbol, doc: Doc) -> str:
    line, column = symbol.line_column(doc.text)
    return f"{line}:{column}"

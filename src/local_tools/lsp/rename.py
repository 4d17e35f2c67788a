"""A rename's WorkspaceEdit → the new text of each file → a diff; and applying it.

The server computes edits against the text it has: the text we synced for a document
it has open, the disk for the others. A file whose disk text differs from what the
server had is a CONFLICT (its edits would land in the wrong places); so is a file this
session read and that changed since (the editing engine's stale check). Applying
writes every file atomically, all or nothing: a failed write puts back the files
already written. Encoding, BOM and line endings are kept (the server's edits carry
only the new name).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from local_tools.core.context import ToolContext
from local_tools.core.errors import (
    Conflict,
    ExecutionError,
    InvalidInput,
    PermissionDenied,
    StorageError,
    ToolError,
)
from local_tools.editing.diff import unified_diff
from local_tools.editing.freshness import check_fresh, file_lock, note_read
from local_tools.editing.textfile import MAX_EDIT_BYTES, TextFile, encode_text
from local_tools.lsp.jsonrpc import ServerGone
from local_tools.lsp.positions import from_lsp, path_of, uri_of, utf16_to_chars
from local_tools.text_encoding import detect_bom

if TYPE_CHECKING:
    from local_tools.lsp.navigation import Doc, Navigator
    from local_tools.lsp.requests import LspRequest

__all__ = [
    "FileChange",
    "RenamePlan",
    "apply_text_edits",
    "check_writable",
    "commit",
    "edits_by_file",
    "plan",
    "read_source",
    "rename_commit",
    "rename_output",
    "rename_plan",
]

MAX_FILES = 500  # a rename touching more is refused before anything is read


@dataclass
class FileChange:
    real: Path
    shown: str
    text: TextFile  # as read at plan time
    raw: bytes  # the file's bytes then: what a failed commit puts back
    after: str
    edits: int
    written: bool = field(default=False)

    @property
    def diff(self) -> str:
        return unified_diff(self.text.text, self.after, self.shown)


def edits_by_file(edit: Any, server: str) -> dict[Path, list[dict[str, Any]]]:
    """The text edits of a WorkspaceEdit per local file (`changes` or `documentChanges`).

    Resource operations (create, rename, delete a file) are refused: a rename of a
    symbol that moves files is beyond what this tool applies safely.
    """
    if edit is None:
        return {}
    if not isinstance(edit, Mapping):
        raise ExecutionError(f"{server} answered the rename with something that is not an edit.")
    out: dict[Path, list[dict[str, Any]]] = {}

    def add(uri: Any, edits: Any) -> None:
        path = path_of(uri) if isinstance(uri, str) else None
        if path is None:
            raise ExecutionError(
                f"{server} wants to change {uri!r}, which is not a local file; nothing was changed."
            )
        if not isinstance(edits, list):
            return
        out.setdefault(path, []).extend(e for e in edits if isinstance(e, dict))
        if len(out) > MAX_FILES:
            raise InvalidInput(
                f"The rename would change over {MAX_FILES} files; nothing was changed. "
                "Rename something with a narrower reach, or in steps."
            )

    document_changes = edit.get("documentChanges")
    if isinstance(document_changes, list):
        for change in document_changes:
            if not isinstance(change, Mapping):
                continue
            kind = change.get("kind")
            if kind is not None:
                raise InvalidInput(
                    f"{server}'s rename would also {kind} a file "
                    f"({change.get('uri') or change.get('newUri') or change.get('oldUri')}); "
                    "this tool only changes text. Nothing was changed; do the file operation "
                    "yourself (file_move) and rename the rest."
                )
            document = change.get("textDocument")
            add(document.get("uri") if isinstance(document, Mapping) else None, change.get("edits"))
    else:
        changes = edit.get("changes")
        if isinstance(changes, Mapping):
            for uri, edits in changes.items():
                add(uri, edits)
    return out


def apply_text_edits(
    text: str, edits: Iterable[Mapping[str, Any]], old_name: str | None = None
) -> str:
    """`text` with LSP TextEdits applied (UTF-16 positions; all against the original).

    ValueError when a range is malformed, past the end of the text, overlaps another,
    or (with `old_name`) replaces anything but that name or nothing: the sign of a file
    that changed since the server read it.
    """
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    spans: list[tuple[int, int, str]] = []
    for edit in edits:
        rng = edit.get("range")
        new = edit.get("newText")
        if not isinstance(rng, Mapping) or not isinstance(new, str):
            raise ValueError("an edit without a range or new text")
        start = _offset(text, starts, rng.get("start"))
        end = _offset(text, starts, rng.get("end"))
        if end < start:
            raise ValueError("an edit whose range ends before it starts")
        if old_name and text[start:end] not in (old_name, ""):
            raise ValueError(f"an edit replaces {text[start:end][:60]!r}, not {old_name!r}")
        spans.append((start, end, new))
    spans.sort(key=lambda s: (s[0], s[1]))
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise ValueError("two edits overlap")
    for start, end, new in reversed(spans):  # from the end: earlier offsets stay valid
        text = text[:start] + new + text[end:]
    return text


def _offset(text: str, starts: list[int], position: Any) -> int:
    if not isinstance(position, Mapping):
        raise ValueError("an edit with a malformed position")
    line, units = position.get("line"), position.get("character")
    if not isinstance(line, int) or not isinstance(units, int) or line < 0 or units < 0:
        raise ValueError("an edit with a malformed position")
    if line >= len(starts):
        if line == len(starts) and units == 0:  # the end of a text ending with "\n"
            return len(text)
        raise ValueError(f"an edit at line {line + 1}, past the end of the text")
    begin = starts[line]
    stop = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
    content = text[begin:stop].removesuffix("\r")
    return begin + utf16_to_chars(content, units)


def read_source(ctx: ToolContext, real: Path) -> tuple[TextFile, bytes]:
    """A file's text as the editing tools read it, and its bytes."""
    shown = ctx.jail.display(real)
    with ctx.jail.open_read(str(real)) as handle:
        st = os.fstat(handle.fileno())
        if st.st_size > MAX_EDIT_BYTES:
            raise InvalidInput(f"{shown} is too large to rename in ({st.st_size} bytes).")
        data = handle.read(MAX_EDIT_BYTES + 1)
    bom, codec = detect_bom(data) or (b"", "utf-8")
    try:
        text = data[len(bom) :].decode(codec)
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{shown} is not valid {codec}; the rename cannot change it safely. Nothing was "
            "changed."
        ) from None
    version = (st.st_ino, st.st_mtime_ns, st.st_size)
    return TextFile(shown, real, text, codec, bom, True, version), data


def plan(
    ctx: ToolContext,
    edits: Mapping[Path, list[dict[str, Any]]],
    server_text: Mapping[Path, str | None],
    server: str,
    old_name: str | None = None,
) -> list[FileChange]:
    """Each file's new text. `server_text`: what the server had for each file it has open."""
    changes: list[FileChange] = []
    for path, file_edits in edits.items():
        ctx.check_cancelled()
        real = ctx.jail.resolve(str(path))  # PermissionDenied outside the roots
        shown = ctx.jail.display(real)
        tf, raw = read_source(ctx, real)
        seen = server_text.get(path)
        if seen is not None and seen != tf.text:
            raise Conflict(
                f"{shown} changed on disk since {server} read it, so its edits would land in "
                "the wrong places. Nothing was changed; the server now has the current text: "
                "run the rename again.",
                details={"path": shown},
            )
        check_fresh(ctx, real, tf.version, shown)
        try:
            after = apply_text_edits(tf.text, file_edits, old_name)
        except ValueError as exc:
            raise Conflict(
                f"{server}'s edits do not fit {shown} ({exc}): the file probably changed "
                "since the server read it. Nothing was changed; run the rename again.",
                details={"path": shown},
            ) from None
        if after != tf.text:
            changes.append(FileChange(real, shown, tf, raw, after, len(file_edits)))
    return sorted(changes, key=lambda c: c.shown)


def check_writable(ctx: ToolContext, changes: Iterable[FileChange]) -> None:
    for change in changes:
        if not ctx.jail.is_writable(change.real):
            raise PermissionDenied(
                f"The rename would change {change.shown}, which is outside the writable "
                "roots. Nothing was changed."
            )


def commit(ctx: ToolContext, changes: list[FileChange]) -> None:
    """Write every file or none. CONFLICT when one changed since `plan` read it."""
    check_writable(ctx, changes)
    with ExitStack() as locks:
        for change in sorted(changes, key=lambda c: str(c.real)):  # one order: no deadlock
            locks.enter_context(file_lock(change.real))
        for change in changes:
            try:
                st = ctx.jail.stat(str(change.real))
                now: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
            except ToolError:
                now = None
            if now != change.text.version:
                raise Conflict(
                    f"{change.shown} changed on disk while the rename was being prepared. "
                    "Nothing was changed; run the rename again.",
                    details={"path": change.shown},
                )
        ctx.check_cancelled()
        try:
            for change in changes:
                ctx.jail.write_atomic(str(change.real), encode_text(change.text, change.after))
                change.written = True
        except Exception as exc:
            failed = next(c for c in changes if not c.written)
            raise _failed(exc, failed, _roll_back(ctx, changes)) from exc
    for change in changes:  # the session has seen what it wrote
        with suppress(ToolError, OSError):
            note_read(ctx, change.real, os.stat(change.real))
        ctx.record_change(change.real, change.text.text, change.after)  # errors after it


def _roll_back(ctx: ToolContext, changes: list[FileChange]) -> list[str]:
    failures: list[str] = []
    for change in reversed(changes):
        if not change.written:
            continue
        try:
            ctx.jail.write_atomic(str(change.real), change.raw)
            change.written = False
        except Exception as exc:  # keep putting back the others
            failures.append(f"{change.shown}: {exc}")
    return failures


def _failed(exc: Exception, change: FileChange, failures: list[str]) -> ToolError:
    reason = exc.message if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"
    where = f"Writing {change.shown} failed: {reason}"
    if failures:
        return StorageError(
            f"{where}. Putting back the files already written also failed for: "
            f"{'; '.join(failures)}. Those files may be left renamed; check them.",
            details={"path": change.shown, "not_restored": failures},
        )
    code = exc.code if isinstance(exc, ToolError) else StorageError.code
    return ToolError(
        f"{where}. The files already written were put back, so nothing was changed.",
        code=code,
        details={"path": change.shown},
    )


# --- the operation, over a Navigator ---------------------------------------------


@dataclass
class RenamePlan:
    doc: Doc  # where the rename was asked
    at: str
    new_name: str
    changes: list[FileChange]


def rename_plan(nav: Navigator, req: LspRequest) -> RenamePlan:
    """Ask the server (prepareRename when it has it, then rename) and compute each file's
    new text; nothing is written."""
    doc, position, at = nav.place(req)
    server = doc.server
    nav.require(server, "rename")
    for path in server.open_paths():  # files changed since synced: the disk's text first
        with suppress(ToolError, ServerGone):
            text = nav.read(str(path))[2]
            if server.text_of(path) != text:
                server.sync(path, text)
    where = {"textDocument": {"uri": uri_of(doc.real)}, "position": position}
    provider = server.capabilities.get("renameProvider")
    prepared: Any = None
    if isinstance(provider, dict) and provider.get("prepareProvider"):
        prepared = nav.request(doc, "textDocument/prepareRename", where)
        if prepared is None:
            raise InvalidInput(f"{server.name}: nothing at {at} can be renamed.")
    new_name = (req.new_name or "").strip()
    edit = nav.request(doc, "textDocument/rename", {**where, "newName": new_name})
    by_file = edits_by_file(edit, server.name)
    if not by_file:
        hint = "" if new_name.isidentifier() else f" ({new_name!r} may not be a valid name)"
        raise InvalidInput(f"{server.name} found nothing to rename at {at}{hint}.")
    seen = {p: server.text_of(p) for p in by_file}
    try:
        changes = plan(nav.ctx, by_file, seen, server.name, _old_name(doc.text, prepared, position))
    except Conflict:
        for path, had in seen.items():  # the server gets the disk's text for a retry
            with suppress(ToolError, ServerGone):
                if had is not None:
                    server.sync(path, nav.read(str(path))[2])
        raise
    return RenamePlan(doc, at, new_name, changes)


def _old_name(text: str, prepared: Any, position: dict[str, Any]) -> str | None:
    """The name being renamed: prepareRename's range, else the word at the position."""
    rng = prepared.get("range", prepared) if isinstance(prepared, dict) else None
    lines = text.split("\n")
    if isinstance(rng, dict) and isinstance(rng.get("start"), dict):
        (line, start), (end_line, end) = (
            from_lsp(text, rng["start"]),
            from_lsp(text, rng.get("end") or {}),
        )
        if line == end_line and 0 < line <= len(lines) and end > start:
            return lines[line - 1][start - 1 : end - 1]
    line, column = from_lsp(text, position)
    if not 0 < line <= len(lines):
        return None
    for word in re.finditer(r"[\w$]+", lines[line - 1]):
        if word.start() <= column - 1 <= word.end():
            return word.group()
    return None


def rename_commit(nav: Navigator, rename: RenamePlan) -> None:
    commit(nav.ctx, rename.changes)
    for change in rename.changes:  # the server analyses what is on disk now
        with suppress(ServerGone):
            rename.doc.server.sync(change.real, change.after)


def rename_output(rename: RenamePlan, applied: bool) -> dict[str, Any]:
    return {
        "operation": "rename",
        "at": rename.at,
        "server": rename.doc.server.name,
        "changed": [c.shown for c in rename.changes],
        "edits": sum(c.edits for c in rename.changes),
        "applied": applied,
        "diff": "".join(c.diff for c in rename.changes),
    }

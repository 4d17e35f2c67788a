"""write_file: create, replace or append to a file, atomically."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import AlreadyExists, InvalidInput, ToolError
from local_tools.core.output import render_compact
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.editing.freshness import note_read
from local_tools.editing.textfile import MAX_EDIT_BYTES
from local_tools.lsp.after_change import (
    DIAGNOSTICS_DESCRIPTION,
    DiagnosticsReport,
    wanted,
    with_diagnostics,
)
from local_tools.tools._common import path_changes, path_subject, shown_path


class WriteFileArgs(Args):
    # Written as given: may hold NUL (core/arg_checks.py).
    verbatim_text: ClassVar[frozenset[str]] = frozenset({"content"})
    path: str = Field(description="File to write, workspace-relative or absolute.")
    content: str = Field(description="The full text to write.")
    encoding: str = Field("utf-8", description="Text encoding to write with.")
    overwrite: bool = Field(False, description="Replace the file if it already exists.")
    append: bool = Field(False, description="Add content to the end of the file.")
    diagnostics: bool = Field(True, description="Report language errors after.")


class WriteFileOutput(Output):
    path: str = Field(description="The file written, workspace-relative or absolute.")
    bytes_written: int = Field(description="Bytes written (appended, with append=true).")
    created: bool = Field(description="True when the file did not exist before.")
    line_endings: str = Field(description='"lf" or "crlf": the line endings written.')
    bom: bool = Field(description="Whether the file starts with a byte order mark.")
    diagnostics: DiagnosticsReport = omitted(description=DIAGNOSTICS_DESCRIPTION)


DESCRIPTION = """Write a text file in the workspace, creating missing parent folders.

An existing file is replaced only with overwrite=true (else ALREADY_EXISTS);
append=true adds to the end. Writes are atomic. Replacing or appending to a CRLF file
writes plain \\n content with CRLF; a UTF-8 BOM is kept. To change part of a file,
prefer edit."""

# Enough of the old file to tell its line endings; a huge file is judged by its start.
_STYLE_SAMPLE = 64 * 1024
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE,
         codecs.BOM_UTF16_BE)  # fmt: skip


@dataclass(frozen=True)
class _Style:
    """How the existing file is written."""

    crlf: bool
    utf8_bom: bool


def _existing_style(ctx: ToolContext, path: str, ascii_like: bool) -> _Style | None:
    """The old file's line endings and BOM; None when there is no readable old file."""
    try:
        with ctx.jail.open_read(path) as handle:
            head = handle.read(_STYLE_SAMPLE)
    except ToolError:  # missing, a directory, a link out...: the write itself reports it
        return None
    utf8_bom = head.startswith(codecs.BOM_UTF8)
    crlf = False
    # Counting bytes is only meaningful where "\n" is one byte (ASCII-compatible
    # encodings) and the file is text.
    if ascii_like and (utf8_bom or b"\0" not in head[:8192]):
        pairs = head.count(b"\r\n")
        crlf = pairs > 0 and pairs >= head.count(b"\n") - pairs
    return _Style(crlf, utf8_bom)


def _line_endings(text: str, style: _Style | None) -> tuple[str, str]:
    """The text with the old file's CRLF applied, and which endings it has."""
    crlf_file = style is not None and style.crlf
    pairs = text.count("\r\n")  # two scans in all: contents can be hundreds of MB
    singles = text.count("\n") - pairs
    if crlf_file and singles and not pairs:  # the content says nothing; the file does
        return text.replace("\n", "\r\n"), "crlf"
    if not pairs and not singles:  # no line break: the file's convention
        return text, "crlf" if crlf_file else "lf"
    return text, "crlf" if pairs >= singles else "lf"


def _old_text(ctx: ToolContext, path: str, encoding: str) -> tuple[bool, str | None]:
    """(known, the file's text before the write: None when there is none); unknown
    for a file too big to check or not text in `encoding`."""
    try:
        with ctx.jail.open_read(path) as handle:
            data = handle.read(MAX_EDIT_BYTES + 1)
    except ToolError:
        return True, None
    if len(data) > MAX_EDIT_BYTES:
        return False, None
    try:
        return True, data.decode(encoding).removeprefix("\ufeff")
    except UnicodeDecodeError:
        return False, None


def _render(output: dict[str, Any]) -> str:
    plain = {k: v for k, v in output.items() if k != "diagnostics"}
    return with_diagnostics(render_compact(plain), output)


@tool(
    "write_file",
    args=WriteFileArgs,
    description=DESCRIPTION,
    permission="write:file",
    aliases=("FileWrite", "write"),
    hints=Hints(destructive=True),
    toolset="files",
    subjects=path_subject,
    changes=path_changes,
    render=_render,
    output=WriteFileOutput,
)
def write_file(args: WriteFileArgs, ctx: ToolContext) -> dict[str, Any]:
    try:
        codec = codecs.lookup(args.encoding).name
        ascii_like = "a\r\n".encode(args.encoding).endswith(b"a\r\n")
    except LookupError:
        raise InvalidInput(f"Unknown encoding {args.encoding!r}. Try 'utf-8'.") from None
    # Exclusive creation has no old file to match (if one exists, it is refused).
    matching = args.append or args.overwrite
    style = _existing_style(ctx, args.path, ascii_like) if matching else None
    text, endings = _line_endings(args.content, style)
    keep_bom = (
        not args.append
        and style is not None
        and style.utf8_bom
        and codec == "utf-8"
        and not text.startswith("\ufeff")
    )
    try:
        data = (codecs.BOM_UTF8 if keep_bom else b"") + text.encode(args.encoding)
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"The content cannot be written as {args.encoding}: {exc.reason} at character "
            f"{exc.start}. Use encoding='utf-8'."
        ) from None
    # The text before, for telling the language errors this write adds from old ones.
    checked = args.diagnostics and wanted(ctx, args.path)
    known, before = (True, None)
    if checked and matching:
        known, before = _old_text(ctx, args.path, args.encoding)
    if args.append:
        created = ctx.jail.append(args.path, data)
        bom = style.utf8_bom if style is not None and not created else data.startswith(_BOMS)
    else:
        try:
            created = ctx.jail.write_atomic(args.path, data, exclusive=not args.overwrite)
        except AlreadyExists:
            raise AlreadyExists(
                f"{args.path} already exists. Pass overwrite=true to replace it, append=true "
                "to add to it, or use edit to change part of it."
            ) from None
        bom = data.startswith(_BOMS)
    real = ctx.jail.resolve(args.path)
    note_read(ctx, real, os.stat(real))  # what we wrote is what this session has seen
    if checked and known:
        written = text.removeprefix("\ufeff")
        if created:
            ctx.record_change(real, None, written)
        elif before is not None:
            ctx.record_change(real, before, before + written if args.append else written)
    return {
        "path": shown_path(ctx, args.path),
        "bytes_written": len(data),
        "created": created,
        "line_endings": endings,
        "bom": bom,
    }

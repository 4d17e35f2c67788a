"""read_file: a page of a text file, streamed, line-numbered for models; images and PDFs."""

from __future__ import annotations

import base64
import contextvars
import io
import os
import stat
from collections.abc import Sequence
from typing import Any, BinaryIO

from pydantic import Field

from local_tools.core.call_scope import close_at_end
from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput, NotFound, ToolError
from local_tools.core.tool import Args, Hints, NotQuick, Output, omitted, running_inline, tool
from local_tools.editing.freshness import note_read
from local_tools.security.jail_mounts import quick_stat
from local_tools.text_encoding import choose_codec, looks_binary, text_codec_name
from local_tools.tools._common import path_subject, shown_path, similar_paths
from local_tools.tools._image import image_mime, image_size
from local_tools.tools._pdf import MAX_PDF_BYTES, pdf_lines
from local_tools.tools._text_page import (
    MAX_LINE_CHARS,
    Page,
    numbered,
    page_of_lines,
    read_text_page,
)

__all__ = ["ReadFileOutput", "read_file", "read_path"]

DEFAULT_LIMIT = 2000
MAX_BYTES = 50 * 1024
MAX_IMAGE_BYTES = 5 * 1024 * 1024
SNIFF_BYTES = 4096
# A file this small on a local disk is read in well under a millisecond (text, image;
# PDFs excluded): quicker than the hop to a worker thread, so it is read inline.
QUICK_BYTES = 64 * 1024
MAX_LINE_ARG = 10**9
# Refused by name unless the content is an image or PDF we read; sniffing catches the rest.
_BINARY_EXT_WORDS = """
    zip gz tgz bz2 xz 7z rar tar jar war class exe dll so dylib o a lib bin dat db sqlite
    pyc pyo wasm png jpg jpeg gif webp bmp ico tiff pdf mp3 mp4 wav ogg flac mov avi mkv
    woff woff2 ttf otf eot psd
"""
BINARY_EXTENSIONS = frozenset("." + word for word in _BINARY_EXT_WORDS.split())
_IMAGE_EXTENSIONS = frozenset((".png", ".jpg", ".jpeg", ".gif", ".webp"))


class ReadFileArgs(Args):
    path: str = Field(
        description="File to read: workspace-relative, or absolute inside an allowed root."
    )
    offset: int = Field(1, ge=1, le=MAX_LINE_ARG, description="1-based line number to start from.")
    limit: int = Field(
        DEFAULT_LIMIT, ge=1, le=MAX_LINE_ARG, description="Maximum number of lines to return."
    )
    encoding: str = Field(
        "utf-8",
        max_length=64,
        description="Text encoding, e.g. 'latin-1', 'cp1252', 'utf-16'.",
    )


class ReadFileOutput(Output):
    """One of three shapes: a text page, a PDF page (text extracted), or an image."""

    path: str = Field(description="The file read: workspace-relative, or absolute outside it.")
    content: str = omitted(description="Text and PDF: the exact text of the lines read.")
    start_line: int = omitted(description="Text and PDF: first line returned (1-based).")
    end_line: int = omitted(description="Text and PDF: last line returned.")
    total_lines: int = omitted(description="Text and PDF: lines in the whole file.")
    truncated: bool = omitted(
        description="True when lines after end_line were left out or a line was cut."
    )
    cut_lines: list[int] = omitted(
        description=f"Text and PDF: lines longer than {MAX_LINE_CHARS} characters, cut."
    )
    encoding: str = omitted(description="Text: the codec the file was decoded with.")
    pages: int = omitted(description="PDF: number of pages.")
    mime_type: str = omitted(description="PDF and images: the file's MIME type.")
    image_base64: str = omitted(
        description="Images: the file's bytes in base64 (over MCP: image content)."
    )
    size: int = omitted(description="Images: size in bytes.")
    width: int = omitted(description="Images: width in pixels, when known.")
    height: int = omitted(description="Images: height in pixels, when known.")


DESCRIPTION = f"""Read a file from the workspace: a page of a text file, an image or a PDF's text.

Text: up to `limit` lines (default {DEFAULT_LIMIT}) from line `offset` (1-based), at
most {MAX_BYTES // 1024} KB per call; lines over {MAX_LINE_CHARS} characters are cut. The
footer says how to continue: read a large file in pages. UTF-8 by default (a BOM is
honoured); `encoding` reads others. Images (PNG, JPEG, GIF, WebP, up to
{MAX_IMAGE_BYTES // (1024 * 1024)} MB) come as base64 with MIME type and size; PDFs as
text with a `--- page N ---` line per page, paged like text. Other binary files are
refused. Use list_dir for folders, grep to search many files, read_many_files for
several files."""


def _render(output: dict[str, Any]) -> str:
    if "image_base64" in output:
        size = f", {output['width']}x{output['height']} px" if "width" in output else ""
        return (
            f"[Image {output['path']}: {output['mime_type']}{size}, {output['size']} bytes. "
            "The image is attached to this result as base64 (image_base64).]"
        )
    total, start, end = output["total_lines"], output["start_line"], output["end_line"]
    pdf = f"(PDF, {output['pages']} pages, text extracted.)" if "pages" in output else ""
    if total == 0:
        return f"{pdf}\n(no text)" if pdf else "(empty file)"
    notes = [pdf] if pdf else []
    if end < total:
        notes.append(f"(Showing lines {start}-{end} of {total}. Use offset={end + 1} to continue.)")
    else:
        notes.append(f"(End of file - {total} lines total.)")
    cut = output.get("cut_lines") or []
    if cut:
        which = ", ".join(map(str, cut[:5])) + (", ..." if len(cut) > 5 else "")
        notes.append(
            f"(Line {which}: longer than {MAX_LINE_CHARS} characters, cut. "
            "Use grep to search inside long lines.)"
        )
    body = numbered(output["content"], start)
    return "\n\n".join([body, " ".join(notes)] if body else notes)


def _quick(args: ReadFileArgs, ctx: ToolContext) -> bool:
    """Whether this read cannot block for long, so the runner may skip the worker
    thread: a regular file of at most QUICK_BYTES, not named .pdf (parsing costs CPU),
    on the workspace's own filesystem, a local disk (jail_mounts: no network or FUSE
    filesystem within reach). Anything else (a FIFO, a device, a large or missing file,
    another root) runs in a worker under the deadline, as before. The open itself never
    waits on a FIFO swapped in meanwhile (the jail opens with O_NONBLOCK and refuses
    non-regular files).
    """
    if os.path.splitext(args.path)[1].lower() == ".pdf":
        return False
    st = quick_stat(ctx.jail.root, ctx.jail.engine, args.path)
    return st is not None and stat.S_ISREG(st.st_mode) and st.st_size <= QUICK_BYTES


class _Opened:
    """The file a call's subjects opened, for the call to read: the policy decided on
    the real path of this very file, so the read cannot be redirected after the check
    (a symlink swapped in meanwhile) and the path is resolved once. The runner closes
    it when the call's run ends unless the call took it (call_scope)."""

    __slots__ = ("call_id", "handle", "path", "real")

    def __init__(self, call_id: str, path: str, handle: BinaryIO, real: Any) -> None:
        self.call_id, self.path, self.real = call_id, path, real
        self.handle: BinaryIO | None = handle

    def take(self, call_id: str, path: str) -> tuple[BinaryIO, Any] | None:
        handle = self.handle
        if handle is None or call_id != self.call_id or path != self.path:
            return None
        self.handle = None
        return handle, self.real

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


# The runner runs a sync tool's subjects and the tool in one copy of the context (inline
# or in its worker), so what the subjects opened is seen by that call only.
_opened: contextvars.ContextVar[_Opened | None] = contextvars.ContextVar(
    "read_file_opened", default=None
)


def _subjects(args: ReadFileArgs, ctx: ToolContext) -> Sequence[str]:
    """path_subject's answer, from the resolution that opens the file (a regular file
    only: nothing else is opened before the policy decides). Anything unusual (a
    missing file, a directory, an error) gets path_subject itself, and the tool then
    opens and reports as ever."""
    try:
        handle, real = ctx.jail.open_read_resolved(args.path, regular_first=True)
    except ToolError:
        return path_subject(args, ctx)
    opened = _Opened(ctx.call_id, args.path, handle, real)
    if close_at_end(opened):
        _opened.set(opened)
    else:  # not run by the runner: nothing would close it
        opened.close()
    subjects = [shown_path(ctx, args.path)]
    resolved = ctx.jail.display(real)
    if resolved not in subjects:
        subjects.append(resolved)
    return subjects


@tool(
    "read_file",
    args=ReadFileArgs,
    description=DESCRIPTION,
    permission="read:file",
    aliases=("FileRead", "read", "Read"),
    hints=Hints(read_only=True, idempotent=True),
    toolset="files",
    subjects=_subjects,
    render=_render,
    output=ReadFileOutput,
    quick=_quick,
)
def read_file(args: ReadFileArgs, ctx: ToolContext) -> dict[str, Any]:
    return read_path(
        ctx,
        args.path,
        offset=args.offset,
        limit=min(args.limit, ctx.limits.max_output_lines),
        encoding=text_codec_name(args.encoding),
        max_bytes=min(MAX_BYTES, ctx.limits.max_output_bytes),
    )


def read_path(
    ctx: ToolContext,
    path: str,
    *,
    offset: int,
    limit: int,
    encoding: str,
    max_bytes: int,
    min_one_line: bool = True,
    images: bool = True,
) -> dict[str, Any]:
    """read_file's output for one path (text page, image or PDF); ToolError when it can't.

    `encoding` is a codec name from text_codec_name. With min_one_line=False a first
    line over max_bytes is left out instead of returned whole.
    """
    opened = _opened.get()
    taken = opened.take(ctx.call_id, path) if opened is not None else None
    try:
        # The real path from the resolution that opened the file: it names that file.
        handle, real = taken if taken is not None else ctx.jail.open_read_resolved(path)
    except NotFound:
        guesses = similar_paths(ctx, path)
        hint = f" Did you mean: {', '.join(guesses)}?" if guesses else ""
        raise NotFound(f"File not found: {path}.{hint}", details={"suggestions": guesses}) from None
    with handle:
        shown = ctx.jail.display(real)
        head = handle.read(SNIFF_BYTES)
        source: BinaryIO = _inline_text(handle, head) if running_inline() else handle
        ext = os.path.splitext(path)[1].lower()
        mime = image_mime(head)
        if mime is not None:
            if not images:
                raise InvalidInput(f"{shown} is an image ({mime}); read it with read_file.")
            output = _image(handle, head, mime, shown)
        elif head.startswith(b"%PDF-") or (ext == ".pdf" and b"%PDF-" in head[:1024]):
            lines, pages = _pdf_lines(ctx, handle, shown, real)
            page = page_of_lines(
                lines,
                where=shown,
                offset=offset,
                limit=limit,
                max_bytes=max_bytes,
                check=ctx.check_cancelled,
            )
            output = {**_page_output(shown, page), "pages": pages, "mime_type": "application/pdf"}
        else:
            _refuse_binary_name(shown, ext)
            codec = choose_codec(encoding, head)
            if codec.split_bytes and looks_binary(head[codec.bom_bytes :]):
                raise InvalidInput(
                    f"{shown} looks like a binary file (NUL or control bytes); read_file only "
                    "reads text. If it is UTF-16 or UTF-32 text without a byte order mark, "
                    "pass encoding='utf-16-le' (or the right one)."
                )
            page = read_text_page(
                source,
                codec,
                where=shown,
                offset=offset,
                limit=limit,
                max_bytes=max_bytes,
                min_one_line=min_one_line,
                check=ctx.check_cancelled,
            )
            output = {**_page_output(shown, page), "encoding": codec.name}
        # Remember the version read, so an edit against it can tell if it went stale.
        note_read(ctx, real, os.fstat(handle.fileno()))
        return output


def _inline_text(handle: BinaryIO, head: bytes) -> BinaryIO:
    """The file, read whole, when this call runs inline (`_quick` saw a small regular
    file): it may have been swapped since for a FIFO, a huge or growing file, an image
    or a PDF to parse, so at most QUICK_BYTES are read here and anything else goes to a
    worker (NotQuick), where the call runs again under its deadline."""
    if (
        not stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
        or image_mime(head) is not None
        or b"%PDF-" in head[:1024]
    ):
        raise NotQuick
    rest = handle.read(QUICK_BYTES + 1 - len(head))
    if len(head) + len(rest) > QUICK_BYTES:
        raise NotQuick
    return io.BytesIO(head + rest)


def _page_output(shown: str, page: Page) -> dict[str, Any]:
    return {
        "path": shown,
        "content": page.content,
        "start_line": page.start_line,
        "end_line": page.end_line,
        "total_lines": page.total_lines,
        "truncated": page.truncated,
        "cut_lines": page.cut_lines,
    }


def _refuse_binary_name(shown: str, ext: str) -> None:
    if ext not in BINARY_EXTENSIONS:
        return
    if ext in _IMAGE_EXTENSIONS:
        what = f"has a binary file extension ({ext}) but is not a PNG, JPEG, GIF or WebP image"
    elif ext == ".pdf":
        what = "has a binary file extension (.pdf) but no %PDF- header"
    else:
        what = f"is a binary file ({ext})"
    raise InvalidInput(f"{shown} {what}; read_file only reads text, images and PDFs.")


def _image(handle: Any, head: bytes, mime: str, shown: str) -> dict[str, Any]:
    size = os.fstat(handle.fileno()).st_size
    data = head + handle.read(MAX_IMAGE_BYTES + 1 - len(head)) if size <= MAX_IMAGE_BYTES else b""
    if size > MAX_IMAGE_BYTES or len(data) > MAX_IMAGE_BYTES:
        raise InvalidInput(
            f"{shown} is an image ({mime}) of {max(size, len(data))} bytes; read_file returns "
            f"images up to {MAX_IMAGE_BYTES // (1024 * 1024)} MB. Ask the user for a smaller "
            "version, or resize it with a command."
        )
    output: dict[str, Any] = {
        "path": shown,
        "mime_type": mime,
        "image_base64": base64.b64encode(data).decode("ascii"),
        "size": len(data),
    }
    dimensions = image_size(data, mime)
    if dimensions is not None:
        output["width"], output["height"] = dimensions
    return output


def _pdf_lines(ctx: ToolContext, handle: Any, shown: str, real: Any) -> tuple[list[str], int]:
    st = os.fstat(handle.fileno())
    if st.st_size > MAX_PDF_BYTES:
        raise InvalidInput(
            f"{shown} is a PDF of {st.st_size} bytes; read_file extracts text from PDFs up "
            f"to {MAX_PDF_BYTES // (1024 * 1024)} MB."
        )
    handle.seek(0)
    return pdf_lines(
        handle,
        where=shown,
        key=(str(real), st.st_mtime_ns, st.st_size),
        session=ctx.session,
        check=ctx.check_cancelled,
    )

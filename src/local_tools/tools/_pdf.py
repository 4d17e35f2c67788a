"""Text extracted from a PDF, page by page, with pypdf (an optional dependency).

The lines are kept per session for the last PDF read (keyed by path, mtime and size),
so paging through a long document extracts it once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO

from local_tools.core.errors import InvalidInput, ToolError

__all__ = ["MAX_PDF_BYTES", "pdf_lines"]

MAX_PDF_BYTES = 100 * 1024 * 1024
_CACHE_KEY = "read_file.pdf"
_CACHE_MAX_CHARS = 8 * 1024 * 1024


def pdf_lines(
    handle: BinaryIO,
    *,
    where: str,
    key: tuple[Any, ...],
    session: dict[str, Any],
    check: Callable[[], None],
) -> tuple[list[str], int]:
    """(lines, each ending with "\\n", with a `--- page N ---` line before each page; pages)."""
    cached = session.get(_CACHE_KEY)
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    try:
        from pypdf import PdfReader
    except ImportError:
        raise InvalidInput(
            f"{where} is a PDF. PDF support needs the pypdf package, which is not "
            "installed here (pip install pypdf); ask the user to install it."
        ) from None
    lines: list[str] = []
    try:
        reader = PdfReader(handle)
        if reader.is_encrypted and not reader.decrypt(""):
            raise InvalidInput(f"{where} is an encrypted PDF; its text cannot be read.")
        pages = len(reader.pages)
        for number, page in enumerate(reader.pages, 1):
            check()
            lines.append(f"--- page {number} ---\n")
            text = (page.extract_text() or "").rstrip("\n")
            if text:
                lines.extend(line + "\n" for line in text.split("\n"))
    except ToolError:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise InvalidInput(
            f"{where} could not be read as a PDF ({type(exc).__name__}: {exc})."
        ) from None
    if sum(map(len, lines)) <= _CACHE_MAX_CHARS:
        session[_CACHE_KEY] = (key, lines, pages)
    return lines, pages

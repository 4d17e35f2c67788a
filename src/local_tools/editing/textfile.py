"""A text file as the editing tools see it: decoded text plus how to write it back.

Edits must not change what they were not asked to change: the byte-order mark,
the encoding and the line endings of the file survive an edit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from local_tools.core.errors import InvalidInput, NotFound
from local_tools.security.jail import Jail
from local_tools.text_encoding import detect_bom

__all__ = ["MAX_EDIT_BYTES", "TextFile", "encode_text", "read_text_file"]

# Whole-file edits hold the text in memory several times over; past this, refuse.
MAX_EDIT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class TextFile:
    path: str  # as the caller gave it
    real: Path  # where the jail resolved it
    text: str  # decoded, BOM removed, original line endings
    encoding: str
    bom: bytes
    exists: bool
    version: tuple[int, int, int]  # (inode, mtime_ns, size) as read; zeros when missing

    @property
    def newline(self) -> str:
        """The file's dominant line ending ("\\n" when it has none)."""
        crlf = self.text.count("\r\n")
        return "\r\n" if crlf and crlf >= self.text.count("\n") - crlf else "\n"


def read_text_file(
    jail: Jail, path: str, *, encoding: str = "utf-8", missing_ok: bool = False
) -> TextFile:
    """Read and decode `path` through the jail; a missing file is empty if `missing_ok`."""
    real = jail.resolve(path, write=True)
    try:
        handle = jail.open_read(path)
    except NotFound:
        if not missing_ok:
            raise
        return TextFile(path, real, "", encoding, b"", False, (0, 0, 0))
    with handle:
        st = os.fstat(handle.fileno())
        if st.st_size > MAX_EDIT_BYTES:
            raise InvalidInput(
                f"{path} is {st.st_size} bytes; files over {MAX_EDIT_BYTES // 2**20} MB "
                "cannot be edited in place. Use a shell tool for files this large."
            )
        data = handle.read(MAX_EDIT_BYTES + 1)
    bom, codec = _detect(data, encoding)
    if not bom and b"\0" in data[:8192]:
        raise InvalidInput(f"{path} looks like a binary file; only text files can be edited.")
    try:
        text = data[len(bom) :].decode(codec)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(
            f"{path} is not valid {codec} (line {line}, byte {exc.start}). It cannot be "
            "edited safely; rewrite it with write_file and an explicit encoding if needed."
        ) from None
    except LookupError:
        raise InvalidInput(f"Unknown encoding {codec!r}.") from None
    version = (st.st_ino, st.st_mtime_ns, st.st_size)
    return TextFile(path, real, text, codec, bom, True, version)


def encode_text(tf: TextFile, text: str) -> bytes:
    """Bytes to write for `text`, in the file's encoding and with its BOM."""
    try:
        return tf.bom + text.encode(tf.encoding)
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"The new text cannot be written as {tf.encoding} ({exc.reason} at character "
            f"{exc.start}); keep to characters that encoding can hold."
        ) from None


def _detect(data: bytes, encoding: str) -> tuple[bytes, str]:
    return detect_bom(data) or (b"", encoding)

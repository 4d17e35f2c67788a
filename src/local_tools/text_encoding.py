"""Text encodings as the file tools see them: which codecs are text, BOMs, binary sniffing.

Shared by reading (tools/_text_page.py) and editing (editing/textfile.py), so a file
read as UTF-16 through its BOM is also edited as UTF-16.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from local_tools.core.errors import InvalidInput

__all__ = [
    "BOMS",
    "TextCodec",
    "choose_codec",
    "detect_bom",
    "looks_binary",
    "text_codec_name",
]

_UNICODE_CODECS = frozenset(
    "utf-8 utf-8-sig utf-16 utf-16-le utf-16-be utf-32 utf-32-le utf-32-be".split()
)
# Longest first: the UTF-32-LE BOM starts with the UTF-16-LE one.
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_PROBE = "a\nb\r\t azAZ09"


def text_codec_name(encoding: str) -> str:
    """The canonical name of a text encoding, or INVALID_INPUT saying why not."""
    try:
        info = codecs.lookup(encoding)
    except (LookupError, ValueError):  # ValueError: a lone surrogate, a NUL ...
        raise InvalidInput(
            f"Unknown encoding {encoding!r}. Try 'utf-8' (the default), 'latin-1', "
            "'utf-16' or 'cp1252'."
        ) from None
    if not getattr(info, "_is_text_encoding", True):
        raise InvalidInput(
            f"{encoding!r} is not a text encoding (it transforms bytes, like rot13, hex or "
            "zlib). Pass the file's character encoding, e.g. 'utf-8' or 'latin-1'."
        )
    return info.name


@dataclass(frozen=True)
class TextCodec:
    name: str  # the codec that decodes the bytes after any BOM
    bom_bytes: int
    split_bytes: bool  # b"\n" always ends a line: split the bytes, then decode

    @property
    def label(self) -> str:
        return f"{self.name} (from its BOM)" if self.bom_bytes else self.name


def _splits_bytes(name: str) -> bool:
    try:
        encoded = _PROBE.encode(name)
        return encoded == _PROBE.encode("ascii") and encoded.decode(name) == _PROBE
    except Exception:  # a codec that cannot even do ASCII: decode it as a stream
        return False


def choose_codec(name: str, head: bytes) -> TextCodec:
    """How to decode a file whose first bytes are `head`, asked for encoding `name`.

    A byte order mark decides for the Unicode encodings (the default utf-8 included);
    a non-Unicode encoding the caller named is honoured as it is.
    """
    if name in _UNICODE_CODECS:
        for bom, bom_codec in BOMS:
            if head.startswith(bom):
                return TextCodec(bom_codec, len(bom), _splits_bytes(bom_codec))
        if name == "utf-8-sig":
            name = "utf-8"
    return TextCodec(name, 0, _splits_bytes(name))


# Control bytes that do not occur in text (tab, newline, form feed, CR and ESC do).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))


def looks_binary(head: bytes) -> bool:
    """NUL bytes, or many control bytes, in the first bytes of a file."""
    if b"\0" in head:
        return True
    if not head:
        return False
    # Counted in C (translate deletes them): a loop over the bytes costs ~50 µs a call.
    control = len(head) - len(head.translate(None, _CONTROL))
    return control / len(head) > 0.3


def detect_bom(data: bytes) -> tuple[bytes, str] | None:
    """The byte order mark `data` starts with and its codec, if any."""
    for bom, codec in BOMS:
        if data.startswith(bom):
            return bom, codec
    return None

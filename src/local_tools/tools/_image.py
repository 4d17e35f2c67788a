"""Images read_file can hand to a model: recognised by magic bytes, sized from headers.

PNG, JPEG, GIF and WebP, the formats multimodal model APIs accept. Width and height
come from the header bytes, so no imaging library is needed.
"""

from __future__ import annotations

import struct

__all__ = ["image_mime", "image_size"]


def image_mime(head: bytes) -> str | None:
    """The MIME type when `head` (the first bytes of a file) starts an image we show."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """(width, height) from the header, or None when the header is not understood."""
    try:
        if mime == "image/png":
            if data[12:16] == b"IHDR":
                width, height = struct.unpack(">II", data[16:24])
                return width, height
            return None
        if mime == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
            return width, height
        if mime == "image/webp":
            return _webp_size(data)
        if mime == "image/jpeg":
            return _jpeg_size(data)
    except (struct.error, IndexError):  # a truncated header
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


# Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) do not.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:  # no length field
            i += 2
            continue
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if length < 2:
            return None
        i += 2 + length
    return None

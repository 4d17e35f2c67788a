"""Content decoding that never returns more than it is asked for.

httpx decodes each network read whole, so a few KB of brotli or gzip-of-gzip can
expand to gigabytes before a size cap applies. ``net`` reads the raw stream and asks
a decoder here for at most the bytes it still has room for.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import httpx

from local_tools.core.errors import NetworkError

__all__ = ["Decode", "decoder"]

# (compressed bytes, most bytes to return) -> decoded bytes, at most that many
Decode = Callable[[bytes, int], bytes]


def decoder(response: httpx.Response, url: httpx.URL) -> Decode:
    """The decoder of `response`'s content coding (gzip, deflate or br; others: the
    bytes as they come); NetworkError for a body encoded twice."""
    codings = [
        c.strip().lower()
        for value in response.headers.get_list("content-encoding")
        for c in value.split(",")
    ]
    codings = [c for c in codings if c in ("gzip", "deflate", "br")]  # others: as httpx, raw
    if not codings:
        return lambda data, limit: data
    if len(codings) > 1:
        raise NetworkError(
            f"{url} sent a body encoded more than once ({', '.join(codings)}); web tools "
            "decode one content coding.",
            details={"cause": "read", "host": url.host},
        )
    if codings[0] == "br":
        return _brotli_decoder(url)
    zlib_decoder = _zlib_decoder(codings[0] == "gzip")

    def decode(data: bytes, limit: int) -> bytes:
        try:
            return zlib_decoder(data, limit)
        except zlib.error as exc:
            raise _undecodable(url, codings[0], exc) from None

    return decode


def _zlib_decoder(gzip: bool) -> Decode:
    # deflate is zlib-wrapped per the RFC, raw deflate in practice: try one, then the other.
    state = {"d": zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)}
    first = [not gzip]

    def decode(data: bytes, limit: int) -> bytes:
        d = state["d"]
        try:
            out = d.decompress(data, limit)
        except zlib.error:
            if not first[0]:
                raise
            state["d"] = d = zlib.decompressobj(-zlib.MAX_WBITS)
            out = d.decompress(data, limit)
        first[0] = False
        return out  # shorter than limit: all input used; as long: past the cap, stop

    return decode


def _brotli_decoder(url: httpx.URL) -> Decode:
    import brotli

    d = brotli.Decompressor()

    def decode(data: bytes, limit: int) -> bytes:
        try:
            out = d.process(data, output_buffer_limit=limit)
            while len(out) < limit and not d.can_accept_more_data():
                more = d.process(b"", output_buffer_limit=limit - len(out))
                if not more:
                    break
                out += more
        except brotli.error as exc:
            raise _undecodable(url, "br", exc) from None
        return out

    return decode


def _undecodable(url: httpx.URL, coding: str, exc: Exception) -> NetworkError:
    return NetworkError(
        f"{url} sent a body that does not decode as {coding}: {exc}.",
        details={"cause": "read", "host": url.host},
    )

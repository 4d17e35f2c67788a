"""A small UTF-8 file read whole gives exactly the page the streaming reader gives."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest

from local_tools.core.errors import InvalidInput
from local_tools.text_encoding import choose_codec
from local_tools.tools import _text_page


def _page(data: bytes, whole: bool, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Any:
    with monkeypatch.context() as m:
        if not whole:
            m.setattr(_text_page, "_WHOLE_BYTES", -1)  # always the streaming reader
        try:
            page = _text_page.read_text_page(
                io.BytesIO(data), choose_codec("utf-8", data[:4096]), where="f.txt",
                check=lambda: None, **kw,
            )  # fmt: skip
        except InvalidInput as exc:
            return ("error", exc.message)
    return (page.content, page.start_line, page.end_line, page.total_lines, page.cut_lines)


PIECES = ["a", "é", "€", "😀", "\r", "\n", "\r\n", "\t", " ", "x" * 300, "\ufeff"]


def test_same_page_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(26)
    for _ in range(600):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 60)))
        data = text.encode("utf-8")
        if rng.random() < 0.1:
            data += b"\xff"  # undecodable: the whole reader steps aside
        if rng.random() < 0.1:
            data = b"y" * 2500 + b"\n" + data  # a line to cut: likewise
        kw = {
            "offset": rng.choice([1, 1, 2, 3, 5, 40]),
            "limit": rng.choice([1, 2, 5, 2000]),
            "max_bytes": rng.choice([10, 200, 50 * 1024]),
            "min_one_line": rng.random() < 0.8,
        }
        whole = _page(data, True, monkeypatch, **kw)
        assert whole == _page(data, False, monkeypatch, **kw), (data, kw)

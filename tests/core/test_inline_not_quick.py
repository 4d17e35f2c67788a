"""A call that runs inline finds the file swapped since `quick` looked: it goes to a worker.

read_file's quick check stats the file, and the subjects open it again: between the
two a small file can be renamed over by a huge (or sparse) one, a PDF to parse or an
image. Running inline, read_path reads at most QUICK_BYTES, refuses anything but
small text, and raises NotQuick; the runner then runs the call in a worker, under its
deadline, with its checks made again (attack review of issue #26, F2 and F3).
Real files, the real runner and read_path.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from envelopes import ok
from local_tools import Args, Toolbox, ToolContext, tool
from local_tools.core.errors import ToolError
from local_tools.core.tool import NotQuick, running_inline
from local_tools.tools.read_file import QUICK_BYTES, _inline_text, read_path

BIG_LINES = 20_000  # ~200 KB: past QUICK_BYTES


class SwapArgs(Args):
    path: str
    swap_to: str = "big"


def _swap_then_read(args: SwapArgs, ctx: ToolContext) -> dict[str, Any]:
    """Swap the file under the name when running inline (after quick looked), then read."""
    target = Path(ctx.workspace) / args.path
    inline = running_inline()
    if inline:
        if args.swap_to == "big":
            swapped = "".join(f"line {i}\n" for i in range(BIG_LINES)).encode()
        else:
            swapped = b"%PDF-1.4\n" + b"%" * 200 + b"\n"
        tmp = target.with_name("swap.tmp")
        tmp.write_bytes(swapped)
        tmp.replace(target)  # a rename: what an attacker racing the call does
    try:
        out = read_path(ctx, args.path, offset=1, limit=5, encoding="utf-8", max_bytes=50_000)
    except ToolError as exc:  # a PDF that does not parse: where it was tried is the point
        out = {"refused": type(exc).__name__}
    return {"thread": threading.get_ident(), "inline": inline, **out}


swap_read = tool("swap_read", args=SwapArgs, permission="read:file", toolset="test")(
    _swap_then_read
)
object.__setattr__(swap_read, "quick", lambda args, ctx: True)  # "small" when it looked


def _call(tb: Toolbox, **args: Any) -> tuple[dict[str, Any], int]:
    async def call() -> dict[str, Any]:
        return await tb.arun("swap_read", args)

    return asyncio.run(call()), threading.get_ident()


def test_a_file_swapped_for_a_big_one_is_read_in_a_worker(make_toolbox: Any) -> None:
    tb = make_toolbox(tools=[swap_read], plugins=False)
    (Path(tb.workspace) / "small.txt").write_text("small\n")
    envelope, loop_thread = _call(tb, path="small.txt")
    out = ok(envelope)
    assert out["thread"] != loop_thread and out["inline"] is False
    assert out["total_lines"] == BIG_LINES  # the whole file, read in the worker
    assert out["content"].startswith("line 0\n")


def test_a_file_swapped_for_a_pdf_is_not_parsed_inline(make_toolbox: Any) -> None:
    tb = make_toolbox(tools=[swap_read], plugins=False)
    (Path(tb.workspace) / "notes.txt").write_text("small\n")
    envelope, loop_thread = _call(tb, path="notes.txt", swap_to="pdf")
    out = ok(envelope)
    assert out["thread"] != loop_thread and out["inline"] is False
    assert "refused" in out or out.get("mime_type") == "application/pdf"


@pytest.mark.parametrize(
    ("content", "quick"),
    [
        (b"text\n" * 10, True),
        (b"x" * QUICK_BYTES, True),
        (b"x" * (QUICK_BYTES + 1), False),
        (b"y\n" * (10 * QUICK_BYTES), False),
        (b"%PDF-1.7\n" + b"x" * 100, False),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 100, False),
    ],
)
def test_inline_reads_only_small_text_and_at_most_quick_bytes(
    tmp_path: Path, content: bytes, quick: bool
) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    with path.open("rb") as handle:
        head = handle.read(512)
        if quick:
            assert _inline_text(handle, head).read() == content
        else:
            with pytest.raises(NotQuick):
                _inline_text(handle, head)
        assert handle.tell() <= QUICK_BYTES + 1  # never the whole of a big file

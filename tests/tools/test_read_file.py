"""read_file: paging, line numbers, encodings, binary refusal, images, PDFs, errors."""

from __future__ import annotations

import base64
import codecs
import encodings.aliases
import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.tools import builtin_tools
from policy_calls import ScriptedAsker

CUT = "... (line cut)"


# --------------------------------------------------------------------------- helpers


def png_bytes(width: int, height: int, *, noise: bool = False) -> bytes:
    """A real PNG (RGB, 8 bit); with noise=True its pixels are random and incompressible."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    row = (lambda: os.urandom(3 * width)) if noise else (lambda: b"\xff\x00\x00" * width)
    pixels = b"".join(b"\x00" + row() for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixels, 0 if noise else 9))
        + chunk(b"IEND", b"")
    )


# The classic smallest valid GIF: one transparent pixel.
GIF_1X1 = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00"
    b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


def with_tools(make_toolbox: Any, *tools: Any, **kwargs: Any) -> Toolbox:
    """A toolbox that also has `tools`, whether or not they are built in yet."""
    builtin = {t.name for t in builtin_tools()}
    return make_toolbox(tools=[t for t in tools if t.name not in builtin], **kwargs)


def make_pdf(pages: list[list[str]]) -> bytes:
    pypdf = pytest.importorskip("pypdf", reason="pypdf builds the test PDF")
    from pypdf.generic import DictionaryObject, NameObject, StreamObject

    writer = pypdf.PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        ops = ["BT /F1 12 Tf 14 TL 72 720 Td", *(f"({line}) Tj T*" for line in lines), "ET"]
        stream = StreamObject()
        stream.set_data("\n".join(ops).encode())
        page.replace_contents(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def read_all_pages(tb: Toolbox, path: str, **args: Any) -> tuple[str, int]:
    """The file read page by page following the footers; (text, number of calls)."""
    offset, parts, calls = 1, [], 0
    while True:
        env = tb.run("read_file", {"path": path, "offset": offset, **args})
        out = ok(env)
        parts.append(out["content"])
        calls += 1
        if out["end_line"] >= out["total_lines"]:
            return "".join(parts), calls
        assert f"Use offset={out['end_line'] + 1} to continue" in tb.render(env)
        assert out["end_line"] >= offset, "paging must move forward"
        offset = out["end_line"] + 1


# --------------------------------------------------------------------------- normal


def test_reads_whole_small_file(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\ngamma\n")
    env = tb.run("read_file", {"path": "a.txt"})
    out = ok(env)
    assert out["content"] == "alpha\nbeta\ngamma\n"
    assert (out["start_line"], out["end_line"], out["total_lines"]) == (1, 3, 3)
    assert out["truncated"] is False
    assert out["path"] == "a.txt"
    assert tb.render(env) == "1\talpha\n2\tbeta\n3\tgamma\n\n(End of file - 3 lines total.)"


def test_aliases_reach_read_file(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    for name in ("Read", "read", "FileRead"):
        assert ok(tb.run(name, {"path": "a.txt"}))["content"] == "x\n"


def test_paging_with_offset_and_limit(tb: Toolbox, workspace: Path) -> None:
    (workspace / "n.txt").write_text("".join(f"{i}\n" for i in range(1, 101)))
    env = tb.run("read_file", {"path": "n.txt", "offset": 10, "limit": 5})
    out = ok(env)
    assert out["content"] == "10\n11\n12\n13\n14\n"
    assert (out["start_line"], out["end_line"], out["total_lines"]) == (10, 14, 100)
    assert out["truncated"] is True
    text = tb.render(env)
    assert text.splitlines()[0] == "10\t10"
    assert "(Showing lines 10-14 of 100. Use offset=15 to continue.)" in text
    last = ok(tb.run("read_file", {"path": "n.txt", "offset": 100}))
    assert last["content"] == "100\n" and last["truncated"] is False


def test_default_limit_is_2000_lines(tb: Toolbox, workspace: Path) -> None:
    (workspace / "long.txt").write_text("x\n" * 5000)
    out = ok(tb.run("read_file", {"path": "long.txt"}))
    assert out["end_line"] == 2000 and out["total_lines"] == 5000 and out["truncated"]
    assert out["content"] == "x\n" * 2000


def test_limit_capped_by_configured_output_lines(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "long.txt").write_text("x\n" * 50)
    tb = make_toolbox({"limits": {"max_output_lines": 10}})
    out = ok(tb.run("read_file", {"path": "long.txt", "limit": 40}))
    assert out["end_line"] == 10 and out["truncated"]


def test_byte_cap_and_pages_join_back_to_the_file(tb: Toolbox, workspace: Path) -> None:
    text = "".join(f"{i:05d} " + "y" * (i % 1500) + "\n" for i in range(400))
    (workspace / "wide.txt").write_text(text)
    out = ok(tb.run("read_file", {"path": "wide.txt"}))
    assert len(out["content"].encode()) <= 50 * 1024
    assert out["truncated"] and out["total_lines"] == 400 and out["end_line"] < 400
    assert out["content"] == "".join(text.splitlines(keepends=True)[: out["end_line"]])
    joined, calls = read_all_pages(tb, "wide.txt")
    assert joined == text and calls > 1


def test_read_is_remembered_for_stale_edit_check(make_toolbox: Any, workspace: Path) -> None:
    edit = pytest.importorskip("local_tools.tools.edit", reason="the edit tool checks").edit
    tb = with_tools(make_toolbox, edit)
    target = workspace / "f.txt"
    target.write_text("hello\n")
    ok(tb.run("read_file", {"path": "f.txt"}))
    target.write_text("hello changed elsewhere\n")
    os.utime(target, ns=(1, 1))
    err(tb.run("edit", {"path": "f.txt", "old_string": "hello", "new_string": "bye"}), "CONFLICT")


# --------------------------------------------------------------------------- long lines


def test_long_line_is_cut_and_ending_kept(tb: Toolbox, workspace: Path) -> None:
    (workspace / "min.js").write_bytes(b"z" * 10_000 + b"\r\nshort\n")
    env = tb.run("read_file", {"path": "min.js"})
    out = ok(env)
    assert out["content"] == "z" * 2000 + CUT + "\r\nshort\n"
    assert out["cut_lines"] == [1] and out["truncated"] and out["total_lines"] == 2
    text = tb.render(env)
    assert "2\tshort" in text and "longer than 2000 characters" in text


def test_exactly_2000_chars_not_cut(tb: Toolbox, workspace: Path) -> None:
    (workspace / "edge.txt").write_text("é" * 2000 + "\n" + "é" * 2001 + "\n")
    out = ok(tb.run("read_file", {"path": "edge.txt"}))
    assert out["content"] == "é" * 2000 + "\n" + "é" * 2000 + CUT + "\n"
    assert out["cut_lines"] == [2]


def test_cut_line_at_end_of_file_without_newline(tb: Toolbox, workspace: Path) -> None:
    (workspace / "tail.txt").write_bytes(b"a\n" + b"q" * 9000)
    out = ok(tb.run("read_file", {"path": "tail.txt"}))
    assert out["content"] == "a\n" + "q" * 2000 + CUT
    assert out["total_lines"] == 2


@pytest.mark.parametrize("length", [8003, 8004, 8005, 8004 + 65535, 8004 + 65536, 8004 + 65537])
def test_crlf_of_a_cut_line_found_across_read_boundaries(
    tb: Toolbox, workspace: Path, length: int
) -> None:
    # Lengths around the bytes kept of a long line and the chunk its rest is drained in.
    (workspace / "b.txt").write_bytes(b"w" * length + b"\r\nend\n")
    out = ok(tb.run("read_file", {"path": "b.txt"}))
    assert out["content"] == "w" * 2000 + CUT + "\r\nend\n"


def test_minified_64k_lines_are_readable_and_paging_moves_on(tb: Toolbox, workspace: Path) -> None:
    # Each line alone is over the 50 KB cap: the cap applies after the cut.
    (workspace / "bundle.js").write_text("".join(f"{i}" + "m" * 65536 + "\n" for i in range(60)))
    env = tb.run("read_file", {"path": "bundle.js"})
    out = ok(env)
    assert out["end_line"] >= 20 and out["total_lines"] == 60
    assert out["content"].startswith("0" + "m" * 1999 + CUT + "\n1")
    joined, calls = read_all_pages(tb, "bundle.js")
    assert joined.count("\n") == 60 and calls >= 2


# --------------------------------------------------------------------------- line numbering


def test_only_newline_ends_a_line(tb: Toolbox, workspace: Path) -> None:
    (workspace / "cr.txt").write_bytes("one\rtwo\nthree\ffour\u2028five\x1cx\n".encode())
    env = tb.run("read_file", {"path": "cr.txt"})
    out = ok(env)
    assert out["total_lines"] == 2 and out["end_line"] == 2
    body = tb.render(env).split("\n")
    assert body[0] == "1\tone\rtwo" and body[1].startswith("2\tthree\ffour\u2028five")
    (workspace / "one.txt").write_bytes(b"one\rtwo\n")
    assert ok(tb.run("read_file", {"path": "one.txt"}))["total_lines"] == 1


def test_crlf_kept_exactly_and_numbered_once(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    env = tb.run("read_file", {"path": "w.txt"})
    out = ok(env)
    assert out["content"] == "one\r\ntwo\r\n"
    assert out["total_lines"] == 2
    assert tb.render(env).startswith("1\tone\n2\ttwo\n")


def test_number_width_follows_last_line(tb: Toolbox, workspace: Path) -> None:
    (workspace / "n.txt").write_text("".join(f"{i}\n" for i in range(1, 121)))
    text = tb.render(tb.run("read_file", {"path": "n.txt", "offset": 98, "limit": 4}))
    assert text.split("\n")[:4] == [" 98\t98", " 99\t99", "100\t100", "101\t101"]


# --------------------------------------------------------------------------- encodings


def test_utf8_bom_stripped_and_unicode(tb: Toolbox, workspace: Path) -> None:
    (workspace / "u.txt").write_bytes("\ufeffhéllo 🌍\n日本語\n".encode())
    out = ok(tb.run("read_file", {"path": "u.txt"}))
    assert out["content"] == "héllo 🌍\n日本語\n"
    assert out["total_lines"] == 2


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_with_bom(tb: Toolbox, workspace: Path, codec: str) -> None:
    text = "héllo\r\nwörld 🌍\n" + "".join(f"line {i}\n" for i in range(3, 11))
    (workspace / "w.txt").write_bytes(codecs.lookup(codec).encode("\ufeff" + text)[0])
    out = ok(tb.run("read_file", {"path": "w.txt"}))
    assert out["content"] == text and out["total_lines"] == 10 and out["encoding"] == codec
    page = ok(tb.run("read_file", {"path": "w.txt", "offset": 2, "limit": 2}))
    assert page["content"] == "wörld 🌍\nline 3\n" and page["total_lines"] == 10


def test_utf16_without_bom_needs_the_encoding(tb: Toolbox, workspace: Path) -> None:
    text = "".join(f"zeile {i} ü\n" for i in range(1, 6)) + "ende"
    (workspace / "nb.txt").write_bytes(text.encode("utf-16-le"))
    msg = err(tb.run("read_file", {"path": "nb.txt"}), "INVALID_INPUT")
    assert "binary" in msg and "utf-16" in msg
    out = ok(tb.run("read_file", {"path": "nb.txt", "encoding": "utf-16-le", "offset": 5}))
    assert out["content"] == "zeile 5 ü\nende" and out["total_lines"] == 6
    assert out["start_line"] == 5


def test_long_utf16_line_is_cut_and_counted(tb: Toolbox, workspace: Path) -> None:
    text = "a\n" + "ß" * 100_000 + "\r\n" + "b\n"
    (workspace / "l.txt").write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    out = ok(tb.run("read_file", {"path": "l.txt"}))
    assert out["content"] == "a\n" + "ß" * 2000 + CUT + "\r\nb\n"
    assert out["total_lines"] == 3 and out["cut_lines"] == [2]


def test_encoding_honoured_and_errors_reported(tb: Toolbox, workspace: Path) -> None:
    (workspace / "l1.txt").write_bytes("ok\nok\ncafé\n".encode("latin-1"))
    msg = err(tb.run("read_file", {"path": "l1.txt"}), "INVALID_INPUT")
    assert "not valid utf-8" in msg and "line 3" in msg and "latin-1" in msg
    out = ok(tb.run("read_file", {"path": "l1.txt", "encoding": "latin-1"}))
    assert out["content"] == "ok\nok\ncafé\n"
    assert ok(tb.run("read_file", {"path": "l1.txt", "encoding": "cp1252"}))["total_lines"] == 3


def test_bad_bytes_outside_the_page_do_not_matter(tb: Toolbox, workspace: Path) -> None:
    (workspace / "m.txt").write_bytes(b"\xff\n" + b"good\n" * 10 + b"\xfe\n")
    out = ok(tb.run("read_file", {"path": "m.txt", "offset": 2, "limit": 3}))
    assert out["content"] == "good\n" * 3 and out["total_lines"] == 12
    msg = err(tb.run("read_file", {"path": "m.txt", "offset": 10}), "INVALID_INPUT")
    assert "line 12" in msg


def test_undecodable_utf16_reports_its_line(tb: Toolbox, workspace: Path) -> None:
    data = "one\ntwo\n".encode("utf-16-le") + b"\x00\xdc" + "x\n".encode("utf-16-le")
    (workspace / "bad16.txt").write_bytes(codecs.BOM_UTF16_LE + data)
    msg = err(tb.run("read_file", {"path": "bad16.txt"}), "INVALID_INPUT")
    assert "line 3" in msg and "utf-16-le" in msg


@pytest.mark.parametrize("name", ["rot13", "hex", "base64", "zlib", "bz2", "uu"])
def test_byte_transforms_are_not_text_encodings(tb: Toolbox, workspace: Path, name: str) -> None:
    (workspace / "t.txt").write_text("hi\n")
    msg = err(tb.run("read_file", {"path": "t.txt", "encoding": name}), "INVALID_INPUT")
    assert "not a text encoding" in msg


@pytest.mark.parametrize("name", ["klingon", "\ud800", "utf\x00-8", "x" * 65])
def test_unknown_encodings_refused(tb: Toolbox, workspace: Path, name: str) -> None:
    (workspace / "t.txt").write_text("hi\n")
    err(tb.run("read_file", {"path": "t.txt", "encoding": name}), "INVALID_INPUT")


def test_every_text_codec_succeeds_or_says_why(tb: Toolbox, workspace: Path) -> None:
    (workspace / "s.txt").write_bytes(
        "plain ascii\nline two\r\nnon ascii: \xe9\xff\n".encode("latin-1")
    )
    names = set(encodings.aliases.aliases.values()) | {"punycode", "idna", "utf-7", "undefined"}
    for name in sorted(names | {"unicode_escape", "raw_unicode_escape", "utf-16", "utf-32"}):
        env = tb.run("read_file", {"path": "s.txt", "encoding": name})
        assert env["success"] or env["error"]["error_code"] == "INVALID_INPUT", (name, env)


# --------------------------------------------------------------------------- binary


def test_binary_refused(tb: Toolbox, workspace: Path) -> None:
    (workspace / "blob").write_bytes(b"\x00\x01\x02binary" * 100)
    assert "binary" in err(tb.run("read_file", {"path": "blob"}), "INVALID_INPUT")
    (workspace / "ctl").write_bytes(bytes(range(1, 9)) * 100)
    assert "binary" in err(tb.run("read_file", {"path": "ctl"}), "INVALID_INPUT")


@pytest.mark.parametrize("name", ["x.zip", "app.exe", "x.png", "doc.pdf", "lib.so"])
def test_binary_extensions_refused_even_with_text_inside(
    tb: Toolbox, workspace: Path, name: str
) -> None:
    (workspace / name).write_text("not really\n")
    assert "binary" in err(tb.run("read_file", {"path": name}), "INVALID_INPUT")


def test_text_with_escape_and_form_feed_is_text(tb: Toolbox, workspace: Path) -> None:
    (workspace / "ansi.log").write_bytes(b"\x1b[31mred\x1b[0m\n\x0cpage\n")
    assert ok(tb.run("read_file", {"path": "ansi.log"}))["total_lines"] == 2


# --------------------------------------------------------------------------- images


def test_png_returned_as_base64_with_size(tb: Toolbox, workspace: Path) -> None:
    data = png_bytes(3, 2)
    (workspace / "dot.png").write_bytes(data)
    env = tb.run("read_file", {"path": "dot.png"})
    out = ok(env)
    assert out["mime_type"] == "image/png" and (out["width"], out["height"]) == (3, 2)
    assert base64.b64decode(out["image_base64"]) == data and out["size"] == len(data)
    assert out["path"] == "dot.png" and "content" not in out
    text = tb.render(env)
    assert "Image dot.png" in text and "image/png" in text and "3x2" in text
    assert out["image_base64"] not in text


def test_image_detected_by_magic_not_extension(tb: Toolbox, workspace: Path) -> None:
    (workspace / "pixel.dat").write_bytes(GIF_1X1)
    out = ok(tb.run("read_file", {"path": "pixel.dat"}))
    assert out["mime_type"] == "image/gif" and (out["width"], out["height"]) == (1, 1)
    (workspace / "noext").write_bytes(png_bytes(5, 7))
    assert ok(tb.run("read_file", {"path": "noext"}))["width"] == 5


def test_jpeg_and_webp_sizes_from_headers(tb: Toolbox, workspace: Path) -> None:
    app0 = b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0\x00\x11\x08" + struct.pack(">HH", 480, 640) + b"\x03" + b"\x01\x22\x00" * 3
    (workspace / "p.jpg").write_bytes(b"\xff\xd8" + app0 + sof0 + b"\xff\xd9")
    out = ok(tb.run("read_file", {"path": "p.jpg"}))
    assert out["mime_type"] == "image/jpeg" and (out["width"], out["height"]) == (640, 480)
    bits = (300 - 1) | ((200 - 1) << 14)
    vp8l = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits)
    (workspace / "p.webp").write_bytes(b"RIFF" + struct.pack("<I", 4 + len(vp8l)) + b"WEBP" + vp8l)
    out = ok(tb.run("read_file", {"path": "p.webp"}))
    assert out["mime_type"] == "image/webp" and (out["width"], out["height"]) == (300, 200)


def test_image_over_5_mb_refused(tb: Toolbox, workspace: Path) -> None:
    with (workspace / "huge.png").open("wb") as f:
        f.write(png_bytes(1, 1))
        f.truncate(5 * 1024 * 1024 + 1)
    msg = err(tb.run("read_file", {"path": "huge.png"}), "INVALID_INPUT")
    assert "5 MB" in msg


def test_larger_image_arrives_whole(tb: Toolbox, workspace: Path) -> None:
    data = png_bytes(120, 120, noise=True)
    assert len(data) > 40_000
    (workspace / "noise.png").write_bytes(data)
    out = ok(tb.run("read_file", {"path": "noise.png"}))
    assert base64.b64decode(out["image_base64"]) == data


# --------------------------------------------------------------------------- PDF


def test_pdf_text_per_page(tb: Toolbox, workspace: Path) -> None:
    (workspace / "doc.pdf").write_bytes(make_pdf([["Hello PDF", "second line"], ["Page two"]]))
    env = tb.run("read_file", {"path": "doc.pdf"})
    out = ok(env)
    assert out["pages"] == 2 and out["mime_type"] == "application/pdf"
    assert out["content"] == ("--- page 1 ---\nHello PDF\nsecond line\n--- page 2 ---\nPage two\n")
    assert out["total_lines"] == 5
    assert "2 pages" in tb.render(env) and "1\t--- page 1 ---" in tb.render(env)
    page = ok(tb.run("read_file", {"path": "doc.pdf", "offset": 4, "limit": 1}))
    assert page["content"] == "--- page 2 ---\n" and page["truncated"]


def test_pdf_rewritten_is_read_again(tb: Toolbox, workspace: Path) -> None:
    (workspace / "doc.pdf").write_bytes(make_pdf([["first version"]]))
    assert "first version" in ok(tb.run("read_file", {"path": "doc.pdf"}))["content"]
    (workspace / "doc.pdf").write_bytes(make_pdf([["second version text"], ["more"]]))
    out = ok(tb.run("read_file", {"path": "doc.pdf"}))
    assert "second version text" in out["content"] and out["pages"] == 2


def test_pdf_without_pypdf_says_so(
    tb: Toolbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf -> ImportError
    (workspace / "doc.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    msg = err(tb.run("read_file", {"path": "doc.pdf"}), "INVALID_INPUT")
    assert "pypdf" in msg


def test_text_mentioning_pdf_magic_is_text(tb: Toolbox, workspace: Path) -> None:
    (workspace / "sniff.py").write_text('MAGIC = b"%PDF-"\n')
    assert ok(tb.run("read_file", {"path": "sniff.py"}))["content"] == 'MAGIC = b"%PDF-"\n'


def test_damaged_pdf_reported(tb: Toolbox, workspace: Path) -> None:
    pytest.importorskip("pypdf")
    (workspace / "bad.pdf").write_bytes(b"%PDF-1.7\nthis is not a pdf body\n")
    assert "PDF" in err(tb.run("read_file", {"path": "bad.pdf"}), "INVALID_INPUT")


# --------------------------------------------------------------------------- edge cases


def test_empty_file(tb: Toolbox, workspace: Path) -> None:
    (workspace / "empty").write_bytes(b"")
    out = ok(tb.run("read_file", {"path": "empty"}))
    assert out["content"] == "" and out["total_lines"] == 0 and not out["truncated"]
    assert tb.render(tb.run("read_file", {"path": "empty"})) == "(empty file)"
    (workspace / "bom-only").write_bytes(codecs.BOM_UTF8)
    assert ok(tb.run("read_file", {"path": "bom-only"}))["total_lines"] == 0


def test_no_trailing_newline(tb: Toolbox, workspace: Path) -> None:
    (workspace / "t").write_text("a\nb")
    out = ok(tb.run("read_file", {"path": "t"}))
    assert out["content"] == "a\nb" and out["total_lines"] == 2
    assert ok(tb.run("read_file", {"path": "t", "offset": 2}))["content"] == "b"


def test_hidden_file_readable(tb: Toolbox, workspace: Path) -> None:
    (workspace / ".hidden").write_text("h\n")
    assert ok(tb.run("read_file", {"path": ".hidden"}))["content"] == "h\n"


def test_directory_points_to_list_dir(tb: Toolbox, workspace: Path) -> None:
    (workspace / "d").mkdir()
    assert "list_dir" in err(tb.run("read_file", {"path": "d"}), "INVALID_INPUT")


def test_symlink_inside_is_read(tb: Toolbox, workspace: Path) -> None:
    (workspace / "real.txt").write_text("target\n")
    (workspace / "link.txt").symlink_to("real.txt")
    out = ok(tb.run("read_file", {"path": "link.txt"}))
    assert out["content"] == "target\n" and out["path"] == "real.txt"


def test_symlink_outside_denied(tb: Toolbox, workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("s3cret")
    (workspace / "out.txt").symlink_to(workspace.parent / "secret.txt")
    env = tb.run("read_file", {"path": "out.txt"})
    err(env, "PERMISSION_DENIED")
    assert "s3cret" not in json.dumps(env)


def test_offset_past_end(tb: Toolbox, workspace: Path) -> None:
    (workspace / "s.txt").write_text("1\n2\n")
    msg = err(tb.run("read_file", {"path": "s.txt", "offset": 10}), "INVALID_INPUT")
    assert "past the end" in msg and "2 lines" in msg
    err(tb.run("read_file", {"path": "s.txt", "offset": 3}), "INVALID_INPUT")
    (workspace / "e.txt").write_text("")
    assert "0 lines" in err(tb.run("read_file", {"path": "e.txt", "offset": 2}), "INVALID_INPUT")


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le"])
def test_offset_past_end_without_final_newline(tb: Toolbox, workspace: Path, encoding: str) -> None:
    (workspace / "s.txt").write_bytes("1\n2\nthree".encode(encoding))
    args = {"path": "s.txt", "encoding": encoding}
    msg = err(tb.run("read_file", {**args, "offset": 5}), "INVALID_INPUT")
    assert "(3 lines)" in msg
    assert ok(tb.run("read_file", {**args, "offset": 3}))["content"] == "three"


def test_deep_offset_large_file(tb: Toolbox, workspace: Path) -> None:
    with (workspace / "big.log").open("w") as f:
        for start in range(1, 300_001, 10_000):
            f.write("".join(f"row {i}\n" for i in range(start, start + 10_000)))
    out = ok(tb.run("read_file", {"path": "big.log", "offset": 250_000, "limit": 2}))
    assert out["content"] == "row 250000\nrow 250001\n"
    assert out["total_lines"] == 300_000


_MEMORY_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    from local_tools import Toolbox

    def peak():
        scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes vs KiB
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale

    tb = Toolbox(sys.argv[1], state_dir=sys.argv[2], audit=False)
    tb.run("read_file", {"path": "warm.txt"})
    before = peak()
    single = tb.run("read_file", {"path": "single.txt"})["output"]
    deep = tb.run("read_file", {"path": "many.txt", "offset": 2_000_000, "limit": 2})["output"]
    wide = tb.run("read_file", {"path": "single16.txt"})["output"]
    print(json.dumps({
        "growth": peak() - before,
        "single": [single["content"][-30:], len(single["content"]), single["total_lines"]],
        "deep": [deep["content"], deep["total_lines"]],
        "utf16": [wide["content"][:3], len(wide["content"]), wide["total_lines"]],
    }))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="resource.getrusage is POSIX-only")
def test_huge_files_read_in_bounded_memory(workspace: Path, tmp_path: Path) -> None:
    (workspace / "warm.txt").write_text("warm\n")
    with (workspace / "single.txt").open("wb") as f:  # 300 MB, one line
        block = b"s" * (1 << 20)
        for _ in range(300):
            f.write(block)
    with (workspace / "single16.txt").open("wb") as f:  # 64 MB of UTF-16, one line
        f.write(codecs.BOM_UTF16_LE)
        block = "ü".encode("utf-16-le") * (1 << 19)
        for _ in range(64):
            f.write(block)
    with (workspace / "many.txt").open("wb") as f:
        for start in range(1, 2_100_001, 100_000):
            f.write("".join(f"row {i}\n" for i in range(start, start + 100_000)).encode())
    proc = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, str(workspace), str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["single"] == ["s" * (30 - len(CUT)) + CUT, 2000 + len(CUT), 1]
    assert result["deep"] == ["row 2000000\nrow 2000001\n", 2_100_000]
    assert result["utf16"] == ["üüü", 2000 + len(CUT), 1]
    assert result["growth"] < 64 * 1024 * 1024, f"peak RSS grew {result['growth']} bytes"


# --------------------------------------------------------------------------- invalid input


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"path": "a", "offset": 0}, "offset"),
        ({"path": "a", "limit": 0}, "limit"),
        ({"path": "a", "offset": 10**30}, "offset"),
        ({"path": "a", "limit": 10**12}, "limit"),
        ({"path": "a", "offset": "x"}, "offset"),
        ({"path": "a", "lines": 3}, "lines"),
        ({}, "path"),
    ],
)
def test_invalid_arguments(tb: Toolbox, args: dict[str, Any], field: str) -> None:
    assert f"'{field}'" in err(tb.run("read_file", args), "INVALID_INPUT")


# --------------------------------------------------------------------------- not found


def test_not_found_suggests_siblings(tb: Toolbox, workspace: Path) -> None:
    (workspace / "config.yaml").write_text("a: 1\n")
    env = tb.run("read_file", {"path": "config.yml"})
    msg = err(env, "NOT_FOUND")
    assert "config.yml" in msg and "config.yaml" in msg
    assert env["error"]["details"]["suggestions"] == ["config.yaml"]
    err(tb.run("read_file", {"path": "nope/deeper.txt"}), "NOT_FOUND")


def test_not_found_suggests_at_most_three(tb: Toolbox, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    for i in range(1, 6):
        (workspace / "sub" / f"notes{i}.md").write_text("n\n")
    env = tb.run("read_file", {"path": "sub/notes.md"})
    err(env, "NOT_FOUND")
    suggestions = env["error"]["details"]["suggestions"]
    assert 1 <= len(suggestions) <= 3 and all(s.startswith("sub/notes") for s in suggestions)


# --------------------------------------------------------------------------- permissions


def test_outside_workspace_denied(tb: Toolbox, workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("s3cret")
    for path in ("../secret.txt", str(workspace.parent / "secret.txt")):
        env = tb.run("read_file", {"path": path})
        assert err(env, "PERMISSION_DENIED")
        assert "s3cret" not in str(env)


def test_permission_rule_denies(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "private").mkdir()
    (workspace / "private" / "k.txt").write_text("k")
    (workspace / "open.txt").write_text("o")
    tb = make_toolbox({"permissions": {"read:file": {"private/*": "deny"}}})
    msg = err(tb.run("read_file", {"path": "private/k.txt"}), "PERMISSION_DENIED")
    assert "read:file" in msg
    assert ok(tb.run("read_file", {"path": "open.txt"}))["content"] == "o"


def test_env_file_asks_and_without_asker_is_denied(tb: Toolbox, workspace: Path) -> None:
    (workspace / ".env").write_text("API_KEY=xyz\n")
    env = tb.run("read_file", {"path": ".env"})
    msg = err(env, "PERMISSION_DENIED")
    assert "xyz" not in str(env)
    assert "local-tools.toml" in msg


def test_env_file_read_once_the_user_approves(tb: Toolbox, workspace: Path) -> None:
    (workspace / ".env").write_text("API_KEY=xyz\n")
    asker = ScriptedAsker("once")
    out = ok(tb.run("read_file", {"path": ".env"}, asker=asker))
    assert out["content"] == "API_KEY=xyz\n"
    assert [r.subject for r in asker.requests] == [".env"]

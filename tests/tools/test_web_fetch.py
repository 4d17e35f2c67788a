"""web_fetch against a real HTTP server on loopback (allowed by allow_private)."""

from __future__ import annotations

import io
import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

import net_server
from local_tools import Toolbox

WEB = {
    "network": {"allow_private": ["127.0.0.1"]},
    "permissions": {"network:outbound": "allow"},
}

PAGE = """<!doctype html><html><head><title>Docs  page</title>
<style>body { color: red }</style><script>var tracking = 1;</script></head>
<body><header>Site header</header><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<main><h1>Install</h1><p>Run <code>pip install thing</code> and read the
<a href="guide.html">guide</a>.</p><ul><li>fast</li><li>safe</li></ul></main>
<footer>Copyright footer</footer></body></html>"""


@pytest.fixture
def server() -> Iterator[net_server.Server]:
    s = net_server.serve("127.0.0.1")
    s.routes["/page"] = net_server.html(PAGE)
    yield s
    s.stop()


@pytest.fixture
def web(make_toolbox: Any) -> Toolbox:
    return make_toolbox(WEB)  # type: ignore[no-any-return]


def error_code(env: dict[str, Any]) -> str:
    assert not env["success"], env["output"]
    return env["error"]["error_code"]  # type: ignore[no-any-return]


def ok(tb: Toolbox, **args: Any) -> dict[str, Any]:
    env = tb.run("web_fetch", args)
    assert env["success"], env["error"]
    return env["output"]  # type: ignore[no-any-return]


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    rows = b"".join(b"\x00" + b"\x00\x00\xff" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def pdf(text: str) -> bytes:
    pypdf = pytest.importorskip("pypdf")
    from pypdf.generic import DictionaryObject, NameObject, StreamObject

    writer = pypdf.PdfWriter()
    page = writer.add_blank_page(612, 792)
    stream = StreamObject()
    stream.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode())
    page.replace_contents(stream)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
    )
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


# --------------------------------------------------------------------------- pages


def test_html_becomes_markdown_without_the_page_chrome(
    web: Toolbox, server: net_server.Server
) -> None:
    out = ok(web, url=server.url("/page"))
    content = out["content"]
    assert out["title"] == "Docs page" and out["status_code"] == 200
    assert out["content_type"] == "text/html" and out["format"] == "markdown"
    assert "# Install" in content and "`pip install thing`" in content
    assert f"[guide]({server.url('/guide.html')})" in content  # links made absolute
    assert "- fast" in content
    for noise in ("tracking", "color: red", "Home", "Site header", "Copyright footer"):
        assert noise not in content
    assert out["truncated"] is False and "next_index" not in out
    text = web.render(web.run("web_fetch", {"url": server.url("/page")}))
    assert text.startswith(server.url("/page")) and "Docs page" in text


def test_text_and_html_formats(web: Toolbox, server: net_server.Server) -> None:
    text = ok(web, url=server.url("/page"), format="text")["content"]
    assert "Run pip install thing and read the guide." in " ".join(text.split())
    assert "#" not in text and "](" not in text
    raw = ok(web, url=server.url("/page"), format="html")
    assert raw["content"] == PAGE and raw["format"] == "html"


def test_redirects_are_followed_and_the_final_url_reported(
    web: Toolbox, server: net_server.Server
) -> None:
    server.routes["/old"] = net_server.redirect("/moved", 301)
    server.routes["/moved"] = net_server.redirect(server.url("/page"), 302)
    out = ok(web, url=server.url("/old"))
    assert out["url"] == server.url("/page")
    assert out["redirects"] == [server.url("/moved"), server.url("/page")]


@pytest.mark.parametrize(
    ("body", "header", "expected"),
    [
        ("café".encode("latin-1"), "text/html; charset=ISO-8859-1", "iso8859-1"),
        ('<meta charset="windows-1251"><p>привет</p>'.encode("cp1251"), "text/html", "cp1251"),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=shift_jis">'
            + "<p>日本語</p>".encode("shift_jis"),
            "text/html",
            "shift_jis",
        ),
        ("<p>ünïcode</p>".encode(), "text/html", "utf-8"),
        (b"\xef\xbb\xbf<p>bom</p>", "text/html; charset=latin-1", "utf-8"),
    ],
)
def test_charset_from_headers_meta_and_bom(
    web: Toolbox, server: net_server.Server, body: bytes, header: str, expected: str
) -> None:
    server.routes["/cs"] = lambda req: (200, {"Content-Type": header}, body)
    out = ok(web, url=server.url("/cs"), format="text")
    assert out["charset"] == expected
    word = {"iso8859-1": "café", "cp1251": "привет", "shift_jis": "日本語"}.get(expected)
    if word:
        assert word in out["content"]


def test_paging_with_start_index(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/long"] = net_server.html(
        "<main>" + "".join(f"<p>paragraph {i}</p>" for i in range(3000)) + "</main>"
    )
    first = ok(web, url=server.url("/long"), max_length=1000)
    assert len(first["content"]) == 1000 and first["truncated"] is True
    assert first["next_index"] == 1000 and first["total_length"] > 30000
    assert "start_index=1000" in web.render(
        web.run("web_fetch", {"url": server.url("/long"), "max_length": 1000})
    )
    requests = len(server.requests)
    second = ok(web, url=server.url("/long"), max_length=1000, start_index=1000)
    assert second["start_index"] == 1000 and second["content"] != first["content"]
    assert len(server.requests) == requests  # the next part comes from the page fetched
    last = ok(web, url=server.url("/long"), start_index=first["total_length"] - 5)
    assert len(last["content"]) == 5 and last["truncated"] is False
    env = web.run("web_fetch", {"url": server.url("/long"), "start_index": 10**7})
    assert error_code(env) == "INVALID_INPUT" and "past the end" in env["error"]["message"]


def test_a_page_over_five_mb_is_cut_and_says_so(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/huge"] = lambda req: (
        200,
        {"Content-Type": "text/plain"},
        b"0123456789" * 600_000,
    )
    out = ok(web, url=server.url("/huge"))
    assert out["page_cut"] is True and out["truncated"] is True
    assert out["total_length"] == 5 * 1024 * 1024


def test_json_and_plain_text_come_as_is(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/data.json"] = net_server.as_json({"a": [1, 2]})
    server.routes["/notes.txt"] = lambda req: (200, {"Content-Type": "text/plain"}, b"# not md\n")
    assert json.loads(ok(web, url=server.url("/data.json"))["content"]) == {"a": [1, 2]}
    assert ok(web, url=server.url("/notes.txt"))["content"] == "# not md\n"


def test_gzip_and_brotli_pages(web: Toolbox, server: net_server.Server) -> None:
    brotli = pytest.importorskip("brotli")
    server.routes["/gz"] = net_server.gzipped("<p>zipped</p>", "text/html")
    data = brotli.compress(b"<p>brotli page</p>")
    server.routes["/br"] = lambda req: (
        200,
        {"Content-Type": "text/html", "Content-Encoding": "br"},
        data,
    )
    assert ok(web, url=server.url("/gz"))["content"].strip() == "zipped"
    assert ok(web, url=server.url("/br"))["content"].strip() == "brotli page"


def test_images_pdfs_and_other_binaries(web: Toolbox, server: net_server.Server) -> None:
    image = png(4, 3)
    server.routes["/pic"] = lambda req: (200, {"Content-Type": "image/png"}, image)
    server.routes["/doc.pdf"] = lambda req: (
        200,
        {"Content-Type": "application/pdf"},
        pdf("Hello from a PDF"),
    )
    server.routes["/blob"] = lambda req: (
        200,
        {"Content-Type": "application/zip"},
        b"PK\x03\x04" + bytes(100),
    )
    out = ok(web, url=server.url("/pic"))
    assert (out["mime_type"], out["width"], out["height"]) == ("image/png", 4, 3)
    assert out["size"] == len(image) and "content" not in out
    doc = ok(web, url=server.url("/doc.pdf"))
    assert doc["pages"] == 1 and "Hello from a PDF" in doc["content"]
    env = web.run("web_fetch", {"url": server.url("/blob")})
    assert error_code(env) == "INVALID_INPUT" and "application/zip" in env["error"]["message"]


def test_blocked_and_missing_pages_say_so(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/blocked"] = lambda req: (
        429,
        {"Content-Type": "text/html", "Retry-After": "120"},
        b"<p>Slow down</p>",
    )
    server.routes["/forbidden"] = net_server.html("<p>Bots not welcome</p>", status=403)
    env = web.run("web_fetch", {"url": server.url("/blocked")})
    assert error_code(env) == "NETWORK_ERROR"
    message, details = env["error"]["message"], env["error"]["details"]
    assert "HTTP 429" in message and "Retry-After: 120" in message and "rate limited" in message
    assert details["retry_after"] == "120" and details["status_code"] == 429
    forbidden = web.run("web_fetch", {"url": server.url("/forbidden")})
    assert "HTTP 403 Forbidden" in forbidden["error"]["message"]
    assert "Bots not welcome" in forbidden["error"]["details"]["body_excerpt"]
    missing = web.run("web_fetch", {"url": server.url("/nothing")})
    assert "HTTP 404" in missing["error"]["message"]


def test_user_agent_is_honest_and_configurable(
    make_toolbox: Any, server: net_server.Server
) -> None:
    server.routes["/ua"] = net_server.echo
    ok(make_toolbox(WEB), url=server.url("/ua"))
    assert server.requests[-1].headers["User-Agent"].startswith("local-tools/")
    custom = {**WEB, "network": {**WEB["network"], "user_agent": "my-agent/1.0 (me@x.org)"}}
    ok(make_toolbox(custom), url=server.url("/ua"))
    assert server.requests[-1].headers["User-Agent"] == "my-agent/1.0 (me@x.org)"


def test_robots_txt_when_asked(make_toolbox: Any, server: net_server.Server) -> None:
    robots = b"User-agent: local-tools\nDisallow: /private\n\nUser-agent: *\nAllow: /\n"
    server.routes["/robots.txt"] = lambda req: (200, {"Content-Type": "text/plain"}, robots)
    server.routes["/private/page"] = net_server.html("<p>hidden</p>")
    polite = make_toolbox({**WEB, "network": {**WEB["network"], "respect_robots": True}})
    env = polite.run("web_fetch", {"url": server.url("/private/page")})
    assert error_code(env) == "PERMISSION_DENIED" and "robots.txt" in env["error"]["message"]
    assert ok(polite, url=server.url("/page"))["title"] == "Docs page"
    plain = make_toolbox(WEB)  # off by default
    assert ok(plain, url=server.url("/private/page"))["content"].strip() == "hidden"
    assert [r.path for r in server.requests].count("/private/page") == 1


def test_a_server_that_never_answers_is_a_timeout(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/never"] = net_server.never(server)
    env = web.run("web_fetch", {"url": server.url("/never"), "timeout": 0.5})
    assert error_code(env) == "TIMEOUT"


# --------------------------------------------------------------------------- refusals


def test_loopback_is_refused_without_allow_private(
    make_toolbox: Any, server: net_server.Server
) -> None:
    tb = make_toolbox({"permissions": {"network:outbound": "allow"}})
    env = tb.run("web_fetch", {"url": server.url("/page")})
    assert error_code(env) == "PERMISSION_DENIED"
    assert "allow_private" in env["error"]["message"] and server.requests == []


def test_network_outbound_is_asked_per_host(make_toolbox: Any, server: net_server.Server) -> None:
    nobody = make_toolbox({"network": {"allow_private": ["127.0.0.1", "localhost"]}})
    env = nobody.run("web_fetch", {"url": server.url("/page")})
    assert error_code(env) == "PERMISSION_DENIED" and "127.0.0.1" in env["error"]["message"]
    # Allowed for one host; a redirect to another host is checked before it is contacted.
    server.routes["/away"] = net_server.redirect(f"http://localhost:{server.port}/page")
    one_host = make_toolbox(
        {
            "network": {"allow_private": ["127.0.0.1", "localhost"]},
            "permissions": {"network:outbound": {"127.0.0.1": "allow"}},
        }
    )
    env = one_host.run("web_fetch", {"url": server.url("/away")})
    assert error_code(env) == "PERMISSION_DENIED" and "localhost" in env["error"]["message"]
    assert [r.path for r in server.requests] == ["/away"]


@pytest.mark.parametrize(
    "url", ["ftp://example.com/x", "file:///etc/passwd", "not a url", "//example.com/"]
)
def test_bad_urls(web: Toolbox, url: str) -> None:
    assert error_code(web.run("web_fetch", {"url": url})) == "INVALID_INPUT"


def test_bad_arguments(web: Toolbox) -> None:
    for args in (
        {"url": "https://example.com", "timeout": 500},
        {"url": "https://example.com", "format": "pdf"},
        {"url": "https://example.com", "max_length": 0},
    ):
        assert error_code(web.run("web_fetch", args)) == "INVALID_INPUT"


def test_a_trailing_dot_does_not_slip_past_a_deny_rule(
    make_toolbox: Any, server: net_server.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "docs.example." is the same DNS name as "docs.example" (fully qualified), so a
    # rule about one is a rule about the other, on the first hop and on redirects.
    from local_tools.security import net

    async def hosts(host: str, port: int) -> list[str]:
        assert host.rstrip(".") == "docs.example", host
        return ["127.0.0.1"]

    monkeypatch.setattr(net, "_system_resolver", hosts)
    tb = make_toolbox(
        {
            "network": {"allow_private": ["127.0.0.1"]},
            "permissions": {"network:outbound": {"*": "allow", "docs.example": "deny"}},
        }
    )
    server.routes["/away"] = net_server.redirect(f"http://DOCS.example.:{server.port}/page")
    for url in (f"http://docs.example.:{server.port}/page", server.url("/away")):
        env = tb.run("web_fetch", {"url": url})
        assert error_code(env) == "PERMISSION_DENIED", url
        assert env["error"]["details"]["subject"] == "docs.example"
    assert [r.path for r in server.requests] == ["/away"]


def test_an_international_name_is_one_subject_however_spelled(
    make_toolbox: Any, server: net_server.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # httpx spells "faß.de" in Unicode but "sub.faß.de" in punycode: rules must see one
    # spelling (Unicode, as people write them), on the first hop and on redirects.
    from local_tools.security import net

    async def hosts(host: str, port: int) -> list[str]:
        assert host.rstrip(".").endswith("xn--fa-hia.de"), host
        return ["127.0.0.1"]

    monkeypatch.setattr(net, "_system_resolver", hosts)
    tb = make_toolbox(
        {
            "network": {"allow_private": ["127.0.0.1"]},
            "permissions": {"network:outbound": {"*": "allow", "*.faß.de": "deny"}},
        }
    )
    server.routes["/away"] = net_server.redirect(f"http://Sub.xn--fa-hia.de:{server.port}/page")
    for url in (f"http://sub.faß.de:{server.port}/page", server.url("/away")):
        env = tb.run("web_fetch", {"url": url})
        assert error_code(env) == "PERMISSION_DENIED", url
        assert env["error"]["details"]["subject"] == "sub.faß.de"
    assert [r.path for r in server.requests] == ["/away"]

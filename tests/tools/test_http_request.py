"""http_request against a real HTTP server on loopback (allowed by allow_private)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import net_server
from local_tools import Toolbox

WEB = {
    "network": {"allow_private": ["127.0.0.1"]},
    "permissions": {"network:outbound": "allow"},
}


@pytest.fixture
def server() -> Iterator[net_server.Server]:
    s = net_server.serve("127.0.0.1")
    s.routes["/echo"] = net_server.echo
    yield s
    s.stop()


@pytest.fixture
def web(make_toolbox: Any) -> Toolbox:
    return make_toolbox(WEB)  # type: ignore[no-any-return]


def call(tb: Toolbox, **args: Any) -> dict[str, Any]:
    env = tb.run("http_request", args)
    assert env["success"], env["error"]
    return env["output"]  # type: ignore[no-any-return]


def failed(tb: Toolbox, **args: Any) -> dict[str, Any]:
    env = tb.run("http_request", args)
    assert not env["success"], env["output"]
    return env["error"]  # type: ignore[no-any-return]


def test_get_returns_status_headers_and_parsed_json(
    web: Toolbox, server: net_server.Server
) -> None:
    out = call(web, url=server.url("/echo?x=1"), headers={"Accept": "application/json"})
    assert out["status_code"] == 200 and out["reason"] == "OK"
    assert out["content_type"] == "application/json"
    assert out["body"]["method"] == "GET" and out["body"]["query"] == "x=1"
    assert out["body"]["headers"]["accept"] == "application/json"
    assert out["headers"]["content-type"] == "application/json"
    assert out["url"] == server.url("/echo?x=1") and out["elapsed_ms"] > 0
    assert "HTTP 200 OK" in web.render(web.run("http_request", {"url": server.url("/echo")}))


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_json_and_text_bodies(web: Toolbox, server: net_server.Server, method: str) -> None:
    sent = call(web, url=server.url("/echo"), method=method, body={"name": "ada", "n": [1]})
    assert sent["body"]["method"] == method
    assert json.loads(sent["body"]["body"]) == {"name": "ada", "n": [1]}
    assert sent["body"]["headers"]["content-type"] == "application/json"
    text = call(
        web,
        url=server.url("/echo"),
        method=method,
        body="a=1&b=2",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert text["body"]["body"] == "a=1&b=2"
    assert text["body"]["headers"]["content-type"] == "application/x-www-form-urlencoded"
    as_text = call(web, url=server.url("/echo"), method=method, body='{"a": 1}')
    assert as_text["body"]["headers"]["content-type"] == "application/json"
    plain = call(web, url=server.url("/echo"), method=method, body="{not json")
    assert plain["body"]["headers"]["content-type"] == "text/plain; charset=utf-8"


def test_head_has_no_body(web: Toolbox, server: net_server.Server) -> None:
    out = call(web, url=server.url("/echo"), method="HEAD")
    assert out["status_code"] == 200 and out["body"] == ""


def test_errors_from_the_server_are_results(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/missing"] = net_server.as_json({"error": "no such user"}, status=404)
    server.routes["/boom"] = lambda req: (500, {"Content-Type": "text/plain"}, b"internal oops")
    missing = call(web, url=server.url("/missing"))
    assert missing["status_code"] == 404 and missing["body"] == {"error": "no such user"}
    boom = call(web, url=server.url("/boom"), method="POST", body="x")
    assert (boom["status_code"], boom["reason"], boom["body"]) == (
        500,
        "Internal Server Error",
        "internal oops",
    )


def test_text_charset_binary_and_bad_json(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/latin"] = lambda req: (
        200,
        {"Content-Type": "text/plain; charset=latin-1"},
        "façade".encode("latin-1"),
    )
    server.routes["/bin"] = lambda req: (
        200,
        {"Content-Type": "application/octet-stream"},
        b"\x00\x01\x02\xff",
    )
    server.routes["/badjson"] = lambda req: (200, {"Content-Type": "application/json"}, b"{oops")
    assert call(web, url=server.url("/latin"))["body"] == "façade"
    assert "binary content" in call(web, url=server.url("/bin"))["body"]
    assert call(web, url=server.url("/badjson"))["body"] == "{oops"


def test_gzip_and_redirects(web: Toolbox, server: net_server.Server) -> None:
    server.routes["/gz"] = net_server.gzipped('{"zipped": true}', "application/json")
    server.routes["/old"] = net_server.redirect("/gz", 308)
    out = call(web, url=server.url("/old"))
    assert out["body"] == {"zipped": True} and out["redirects"] == [server.url("/gz")]


def test_a_big_json_answer_stays_text_within_the_limits(
    web: Toolbox, server: net_server.Server
) -> None:
    big = [{"i": i, "text": "x" * 50} for i in range(3000)]  # ~200 KB
    server.routes["/big"] = net_server.as_json(big)
    out = call(web, url=server.url("/big"))
    assert isinstance(out["body"], str) and out["truncated"] is True
    assert Path(out["full_output_path"]).stat().st_size > 100_000


def test_network_failures_name_the_cause(web: Toolbox, server: net_server.Server) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        refused = failed(web, url=f"http://127.0.0.1:{port}/")
    assert refused["error_code"] == "NETWORK_ERROR" and "Could not connect" in refused["message"]
    assert refused["details"]["cause"] == "connect"
    dns = failed(web, url="http://no-such-host.invalid/")
    assert dns["error_code"] in ("NETWORK_ERROR", "TIMEOUT"), dns
    server.routes["/never"] = net_server.never(server)
    slow = failed(web, url=server.url("/never"), timeout=0.5)
    assert slow["error_code"] == "TIMEOUT" and "0.5 s" in slow["message"]


def test_private_addresses_and_permissions(make_toolbox: Any, server: net_server.Server) -> None:
    guarded = make_toolbox({"permissions": {"network:outbound": "allow"}})
    assert failed(guarded, url=server.url("/echo"))["error_code"] == "PERMISSION_DENIED"
    nobody = make_toolbox({"network": {"allow_private": ["127.0.0.1"]}})
    denied = failed(nobody, url=server.url("/echo"))
    assert denied["error_code"] == "PERMISSION_DENIED" and "network:outbound" in denied["message"]
    by_host = make_toolbox(
        {
            "network": {"allow_private": ["127.0.0.1"]},
            "permissions": {"network:outbound": {"*": "ask", "127.0.0.*": "allow"}},
        }
    )
    assert call(by_host, url=server.url("/echo"))["status_code"] == 200
    # The subject is the host connected to, not a userinfo decoy.
    decoy = f"http://allowed.example@127.0.0.1:{server.port}/echo"
    strict = make_toolbox(
        {
            "network": {"allow_private": ["127.0.0.1"]},
            "permissions": {"network:outbound": {"allowed.example": "allow"}},
        }
    )
    assert failed(strict, url=decoy)["error_code"] == "PERMISSION_DENIED"
    assert [r.path for r in server.requests] == ["/echo"]


def test_bad_arguments(web: Toolbox) -> None:
    for args in (
        {"url": "https://example.com", "method": "TRACE"},
        {"url": "https://example.com", "timeout": 0},
        {"url": "https://example.com", "headers": {"A": 1}},
        {"url": "gopher://example.com"},
    ):
        assert failed(web, **args)["error_code"] == "INVALID_INPUT", args


def test_credentials_are_redacted_in_the_audit_log(
    make_toolbox: Any, server: net_server.Server
) -> None:
    tb = make_toolbox(WEB, audit=True)
    headers = {"Authorization": "Bearer sk-live-123456", "Cookie": "session=abcdef", "X-Ok": "1"}
    call(tb, url=server.url("/echo"), headers=headers, body={"api_key": "k-999", "q": "fine"})
    assert server.requests[-1].headers["Authorization"] == "Bearer sk-live-123456"
    assert tb.audit is not None
    records = tb.audit.query(tool="http_request")
    assert len(records) == 1
    text = json.dumps(records[0].args)
    assert "X-Ok" in text
    for secret in ("sk-live-123456", "abcdef", "k-999"):
        assert secret not in text
    assert "fine" in text

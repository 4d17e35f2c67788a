"""The SSRF guard (security/net.py) against real servers on loopback.

A canary server on 127.0.0.1 must never receive a request; a second server on
127.0.0.2, named by allow_private, is the control that stays reachable and redirects
to the canary in every form an attacker would try.
"""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import shutil
import socket
import ssl
import subprocess
import tracemalloc
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import net_server
from local_tools.core.errors import (
    InvalidInput,
    NetworkError,
    PermissionDenied,
    ToolError,
    ToolTimeout,
)
from local_tools.security.ip_ranges import blocked_reason
from local_tools.security.net import Guard, parse_url, request, url_host

ALLOWED = "127.0.0.2"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def canary() -> Iterator[net_server.Server]:
    server = net_server.serve("127.0.0.1")
    server.routes["/"] = net_server.html("<p>secret</p>")
    server.routes["/latest/meta-data/"] = net_server.html("secret")
    yield server
    server.stop()


@pytest.fixture
def allowed() -> Iterator[net_server.Server]:
    server = net_server.serve(ALLOWED)
    server.routes["/ok"] = net_server.html("<p>fine</p>")
    yield server
    server.stop()


GUARD = Guard([ALLOWED])


def fetch(url: str, guard: Guard = GUARD, **kwargs: Any) -> Any:
    kwargs.setdefault("timeout", 5)
    return run(request("GET", url, guard=guard, **kwargs))


# --------------------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "127.255.255.254", "0.0.0.0", "0.1.2.3", "10.0.0.1", "172.16.5.4",
        "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1",
        "100.127.255.255", "192.0.0.8", "192.0.2.1", "198.18.0.1", "198.19.255.255",
        "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1",
        "255.255.255.255", "::", "::1", "fc00::1", "fd12:3456::1", "fe80::1", "febf::1",
        "fec0::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
        "::127.0.0.1", "::ffff:0:7f00:1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a00:1", "2002:7f00:1::", "2002:a9fe:a9fe::1", "2002:c0a8:101::",
        # Teredo: server 192.168.1.1, or client 127.0.0.1 (stored as its complement)
        "2001:0:c0a8:101::1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:db8::1",
        "100::1", "2001:2::1", "::2:3",
    ],
)  # fmt: skip
def test_private_and_special_addresses_are_refused(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450::1",
     "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "172.32.0.1", "100.128.0.1"],
)  # fmt: skip
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


def test_is_private_alone_would_miss_some() -> None:
    # Why the ranges are explicit: these are "not private" to ipaddress on some versions.
    for address in ("100.64.0.1", "64:ff9b::7f00:1", "2002:7f00:1::"):
        assert blocked_reason(ipaddress.ip_address(address)) is not None


def test_allow_private_takes_hosts_addresses_and_cidrs() -> None:
    guard = Guard(["intranet.example", "10.1.0.0/16", "fd00::/8", "127.0.0.2"])
    assert guard.refusal("INTRANET.example.", ipaddress.ip_address("10.9.9.9")) is None
    assert guard.refusal("x", ipaddress.ip_address("10.1.2.3")) is None
    assert guard.refusal("x", ipaddress.ip_address("10.2.0.1")) is not None
    assert guard.refusal("x", ipaddress.ip_address("fd00::5")) is None
    assert guard.refusal("x", ipaddress.ip_address("127.0.0.2")) is None
    assert guard.refusal("x", ipaddress.ip_address("127.0.0.1")) is not None


# --------------------------------------------------------------------------- the canary


def test_control_the_allowed_address_is_reachable(allowed: net_server.Server) -> None:
    response = fetch(allowed.url("/ok"))
    assert response.status_code == 200 and response.content == b"<p>fine</p>"
    assert len(allowed.requests) == 1


def bypasses(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/",
        f"http://2130706433:{port}/",
        f"http://0x7f000001:{port}/",
        f"http://0177.0.0.1:{port}/",
        f"http://0x7f.0.0.1:{port}/",
        f"http://127.1:{port}/",
        f"http://127.0.1:{port}/",
        f"http://good.example@127.0.0.1:{port}/",
        f"http://good.example:pw@127.0.0.1:{port}/",
        f"http://localhost:{port}/",
        f"http://LOCALHOST.:{port}/",
        f"http://0:{port}/",
        f"http://0.0.0.0:{port}/",
        f"http://[::1]:{port}/",
        f"http://[::]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://[::ffff:7f00:1]:{port}/",
        f"http://[0:0:0:0:0:ffff:127.0.0.1]:{port}/",
        f"http://[::127.0.0.1]:{port}/",
        f"http://[64:ff9b::127.0.0.1]:{port}/",
        f"http://169.254.169.254:{port}/latest/meta-data/",
    ]


def test_every_bypass_form_is_refused(canary: net_server.Server) -> None:
    for url in bypasses(canary.port):
        with pytest.raises((PermissionDenied, InvalidInput, NetworkError)) as caught:
            fetch(url)
        if isinstance(caught.value, NetworkError):  # only "cannot even connect" is fine
            assert caught.value.details.get("cause") == "connect", (url, caught.value.message)
    assert canary.requests == []


def test_redirects_to_the_canary_are_refused_at_every_hop(
    canary: net_server.Server, allowed: net_server.Server
) -> None:
    for i, target in enumerate(bypasses(canary.port)):
        allowed.routes[f"/to{i}"] = net_server.redirect(target)
        # and two hops: allowed -> allowed -> canary
        allowed.routes[f"/via{i}"] = net_server.redirect(f"/to{i}", 307)
    for i in range(len(bypasses(canary.port))):
        for path in (f"/to{i}", f"/via{i}"):
            with pytest.raises(ToolError):
                fetch(allowed.url(path))
    assert canary.requests == []
    assert len(allowed.requests) == 3 * len(bypasses(canary.port))


def test_a_name_answering_public_then_loopback_is_refused(canary: net_server.Server) -> None:
    async def rebinding(host: str, port: int) -> Sequence[str]:
        return ["93.184.216.34", "127.0.0.1"]

    guard = Guard([ALLOWED], resolver=rebinding)
    with pytest.raises(PermissionDenied, match=r"127\.0\.0\.1.*loopback"):
        fetch(f"http://rebind.example:{canary.port}/", guard)
    assert canary.requests == []


def test_dns_rebinding_between_lookups_cannot_redirect_the_connection(
    canary: net_server.Server, allowed: net_server.Server
) -> None:
    # First answer: the allowed server; any later answer: the canary. The connection goes
    # to the address that was checked, and the pooled connection is reused for the hop.
    calls: list[str] = []

    async def flipping(host: str, port: int) -> Sequence[str]:
        calls.append(host)
        return [ALLOWED] if len(calls) == 1 else ["127.0.0.1"]

    allowed.routes["/again"] = net_server.redirect("/ok")
    guard = Guard([ALLOWED], resolver=flipping)
    assert fetch(f"http://rebind.example:{allowed.port}/again", guard).status_code == 200
    assert canary.requests == [] and len(allowed.requests) == 2


def test_the_resolved_name_is_checked_not_the_text(allowed: net_server.Server) -> None:
    async def to_allowed(host: str, port: int) -> Sequence[str]:
        return [ALLOWED]

    response = fetch(f"http://docs.example:{allowed.port}/ok", Guard([ALLOWED], to_allowed))
    assert response.status_code == 200
    assert allowed.requests[-1].headers["Host"] == f"docs.example:{allowed.port}"


def test_environment_proxies_are_ignored(
    canary: net_server.Server, allowed: net_server.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(var, canary.base)
    assert fetch(allowed.url("/ok")).status_code == 200
    assert canary.requests == []


def test_a_configured_proxy_is_used_and_the_target_still_checked(
    canary: net_server.Server, allowed: net_server.Server
) -> None:
    allowed.routes["http://public.example/page"] = net_server.html("via proxy")

    async def public(host: str, port: int) -> Sequence[str]:
        return ["93.184.216.34"] if host == "public.example" else ["127.0.0.1"]

    guard = Guard([ALLOWED], resolver=public)
    response = fetch("http://public.example/page", guard, proxy=allowed.base)
    assert response.content == b"via proxy"
    with pytest.raises(PermissionDenied):
        fetch(f"http://127.0.0.1:{canary.port}/", guard, proxy=allowed.base)
    assert canary.requests == []


# --------------------------------------------------------------------------- the client


def test_only_http_and_https(allowed: net_server.Server) -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/", "gopher://x/", "example.com/x", ""):
        with pytest.raises(InvalidInput):
            parse_url(url)
    allowed.routes["/file"] = net_server.redirect("file:///etc/passwd")
    with pytest.raises(NetworkError, match="only http and https"):
        fetch(allowed.url("/file"))


def test_url_host_is_the_host_connected_to() -> None:
    assert url_host("http://good.example@127.0.0.1:8/") == "127.0.0.1"
    assert url_host("https://Docs.Python.org/3/") == "docs.python.org"


def test_redirect_chains_up_to_five(allowed: net_server.Server) -> None:
    for i in range(1, 7):
        allowed.routes[f"/r{i}"] = net_server.redirect(f"/r{i - 1}" if i > 1 else "/ok", 301)
    response = fetch(allowed.url("/r5"))
    assert response.status_code == 200 and response.url == allowed.url("/ok")
    assert len(response.redirects) == 5
    with pytest.raises(NetworkError, match="Too many redirects"):
        fetch(allowed.url("/r6"))


def test_credentials_are_dropped_when_the_origin_changes(allowed: net_server.Server) -> None:
    other = net_server.serve(ALLOWED)
    try:
        other.routes["/echo"] = net_server.echo
        allowed.routes["/echo"] = net_server.echo
        allowed.routes["/out"] = net_server.redirect(other.url("/echo"))
        allowed.routes["/in"] = net_server.redirect("/echo")
        secret = {"Authorization": "Bearer s3cret", "Cookie": "a=b", "Accept-Language": "kept"}
        same = fetch(allowed.url("/in"), headers=secret)
        assert b"s3cret" in same.content
        moved = fetch(allowed.url("/out"), headers=secret)
        assert b"s3cret" not in moved.content and b"a=b" not in moved.content
        assert b"kept" in moved.content
    finally:
        other.stop()


def test_a_post_redirected_by_303_becomes_a_get(allowed: net_server.Server) -> None:
    allowed.routes["/form"] = net_server.redirect("/echo", 303)
    allowed.routes["/keep"] = net_server.redirect("/echo", 307)
    allowed.routes["/echo"] = net_server.echo
    got = run(request("POST", allowed.url("/form"), guard=GUARD, content=b"x=1", timeout=5))
    assert b'"method": "GET"' in got.content
    kept = run(request("POST", allowed.url("/keep"), guard=GUARD, content=b"x=1", timeout=5))
    assert b'"method": "POST"' in kept.content and b'"body": "x=1"' in kept.content


def test_new_hosts_on_redirect_are_checked_before_contact(allowed: net_server.Server) -> None:
    async def by_name(host: str, port: int) -> Sequence[str]:
        return [ALLOWED]

    allowed.routes["/hop"] = net_server.redirect(f"http://second.example:{allowed.port}/ok")
    seen: list[str] = []

    async def check(host: str) -> None:
        seen.append(host)
        if host == "second.example":
            raise PermissionDenied("no")

    url = f"http://first.example:{allowed.port}/hop"
    guard = Guard([ALLOWED], by_name)
    with pytest.raises(PermissionDenied):
        fetch(url, guard, check_host=check, checked_hosts=["first.example"])
    assert seen == ["second.example"] and len(allowed.requests) == 1


def test_body_capped_and_flagged(allowed: net_server.Server) -> None:
    allowed.routes["/big"] = lambda req: (200, {}, b"a" * 100_000)
    allowed.routes["/exact"] = lambda req: (200, {}, b"a" * 1000)
    cut = fetch(allowed.url("/big"), max_bytes=1000)
    assert len(cut.content) == 1000 and cut.truncated
    whole = fetch(allowed.url("/exact"), max_bytes=1000)
    assert len(whole.content) == 1000 and not whole.truncated


def test_gzip_and_brotli_are_decoded(allowed: net_server.Server) -> None:
    brotli = pytest.importorskip("brotli")
    allowed.routes["/gz"] = net_server.gzipped("hello gzip")
    data = brotli.compress(b"hello brotli")
    allowed.routes["/br"] = lambda req: (200, {"Content-Encoding": "br"}, data)
    assert fetch(allowed.url("/gz")).content == b"hello gzip"
    assert fetch(allowed.url("/br")).content == b"hello brotli"


def test_a_slow_body_hits_the_total_deadline(allowed: net_server.Server) -> None:
    allowed.routes["/drip"] = net_server.drip(100, 0.05)
    with pytest.raises(ToolTimeout, match="within 1 s"):
        fetch(allowed.url("/drip"), timeout=1)


def test_a_server_that_never_answers_times_out(allowed: net_server.Server) -> None:
    allowed.routes["/never"] = net_server.never(allowed)
    with pytest.raises(ToolTimeout):
        fetch(allowed.url("/never"), timeout=0.5)


def test_connect_refused_and_dns_failures_name_the_cause() -> None:
    with socket.socket() as sock:
        sock.bind((ALLOWED, 0))
        port = sock.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(NetworkError, match="Could not connect") as caught:
            fetch(f"http://{ALLOWED}:{port}/")
    assert caught.value.details["cause"] == "connect"

    async def failing(host: str, port: int) -> Sequence[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(NetworkError, match=r"DNS lookup failed for nowhere\.example") as dns:
        fetch("http://nowhere.example/", Guard([], failing))
    assert dns.value.details["cause"] == "dns"


def test_cancellation_closes_the_connection(allowed: net_server.Server) -> None:
    allowed.routes["/drip"] = net_server.drip(200, 0.05)

    async def cancel_midway() -> None:
        task = asyncio.create_task(request("GET", allowed.url("/drip"), guard=GUARD, timeout=30))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancel_midway())  # -W error: an unclosed socket or client would fail the test


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
def test_tls_verifies_the_certificate(tmp_path: Path) -> None:
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", f"/CN={ALLOWED}",
         "-addext", f"subjectAltName=IP:{ALLOWED}"],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = net_server.serve(ALLOWED)
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    try:
        with pytest.raises(NetworkError, match="TLS") as caught:
            fetch(f"https://{ALLOWED}:{server.port}/")
        assert caught.value.details["cause"] == "tls"
    finally:
        server.stop()


def _bomb(coding: str, size: int) -> bytes:
    """`size` zero bytes compressed with `coding`, built without holding them all."""
    block = b"\0" * 2**20
    if coding == "br":
        brotli = pytest.importorskip("brotli")
        compressor = brotli.Compressor(quality=5)
        parts = [compressor.process(block) for _ in range(size // len(block))]
        return b"".join(parts) + compressor.finish()
    z = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    return b"".join(z.compress(block) for _ in range(size // len(block))) + z.flush()


def test_a_compression_bomb_is_capped_as_it_is_decoded(allowed: net_server.Server) -> None:
    # A few hundred KB on the wire that decode to 128 MB: the cap must apply while
    # decoding, not to what a whole network read happened to decode to.
    for coding in ("gzip", "deflate", "br"):
        data = _bomb(coding, 128 * 2**20)
        allowed.routes[f"/{coding}"] = lambda req, c=coding, d=data: (
            200, {"Content-Encoding": c}, d
        )  # fmt: skip
    tracemalloc.start()
    try:
        for coding in ("gzip", "deflate", "br"):
            got = fetch(allowed.url(f"/{coding}"), max_bytes=1000)
            assert got.content == b"\0" * 1000 and got.truncated, coding
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MB held to return 1000 bytes"


def test_a_body_encoded_twice_is_refused_not_expanded(allowed: net_server.Server) -> None:
    # gzip of gzip: each layer multiplies the ratio (2 KB -> 1 GB); one coding is decoded.
    inner = _bomb("gzip", 64 * 2**20)
    data = gzip.compress(inner)
    allowed.routes["/twice"] = lambda req: (200, {"Content-Encoding": "gzip, gzip"}, data)
    allowed.routes["/once"] = lambda req: (200, {"Content-Encoding": "identity, gzip"}, data)
    with pytest.raises(NetworkError, match="encoded more than once"):
        fetch(allowed.url("/twice"), max_bytes=1000)
    assert fetch(allowed.url("/once")).content == inner


def test_malformed_hosts_and_locations_are_errors_not_crashes(
    canary: net_server.Server, allowed: net_server.Server
) -> None:
    # An xn-- label that does not decode, and Locations httpx cannot build a request
    # from: the tool's own error (nothing contacted), not an internal one.
    with pytest.raises(InvalidInput):
        parse_url("http://xn--zz.example/?.github.com")
    locations = ["data:text/plain,hi", f"http:127.0.0.1:{canary.port}/", "http://xn--zz.example/"]
    for i, location in enumerate(locations):
        allowed.routes[f"/bad{i}"] = net_server.redirect(location)
        with pytest.raises(NetworkError, match="invalid URL"):
            fetch(allowed.url(f"/bad{i}"))
    assert canary.requests == []


@pytest.mark.parametrize("port", ["109017", "-1", "0", "65536"])
def test_a_port_out_of_range_is_invalid_input_not_a_crash(
    allowed: net_server.Server, port: str
) -> None:
    with pytest.raises(InvalidInput, match="port"):
        fetch(f"http://{ALLOWED}:{port}/")
    allowed.routes["/bad"] = net_server.redirect(f"http://{ALLOWED}:{port}/")
    with pytest.raises(NetworkError, match="port"):
        fetch(allowed.url("/bad"))

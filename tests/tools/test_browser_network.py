"""The browser's network rules beyond browser_navigate's own host, with real Chromium.

- Top-level navigations a page makes itself (a link, a form, a script, a redirect) meet
  the `network:outbound` rules: allowed hosts load, denied ones are stopped, and a host
  the rules ask about is stopped with a note telling the model to use browser_navigate
  (which asks), unless browser_navigate already went there.
- Every connection goes through the guarding proxy: a redirect hop to a private address
  and a name Chromium would resolve elsewhere (DNS rebinding) never reach the canary.

Names like asked.test resolve through net's resolver hook (the web tools' tests fake DNS
the same way); the proxy resolves every name, so Chromium's own DNS is never asked.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import net_server
from local_tools import Toolbox
from local_tools.browser import BrowserSession, find_executable
from local_tools.interact.base import PermissionRequest
from local_tools.security import net

pytest.importorskip("playwright", reason="the playwright package is not installed")
if not __import__("os").path.exists("/usr/bin/chromium"):
    pytest.skip("no /usr/bin/chromium (`make test` installs it)", allow_module_level=True)

NAMES = ("allowed.test", "asked.test", "denied.test", "again.test")
RULES = {
    "network:outbound": {
        "*": "ask",
        "127.0.0.1": "allow",
        "allowed.test": "allow",
        "denied.test": "deny",
    },
    "browser:evaluate": "allow",  # the tests wait for page conditions (script)
}


@pytest.fixture(scope="module")
def canary() -> Iterator[net_server.Server]:
    server = net_server.serve("127.0.0.2")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def site(canary: net_server.Server) -> Iterator[net_server.Server]:
    server = net_server.serve("127.0.0.1")
    port = server.port

    def on(host: str, path: str) -> str:
        return f"http://{host}:{port}{path}"

    server.routes["/links"] = net_server.html(
        f"""<title>Links</title>
        <a id="allowed" href="{on("allowed.test", "/next")}">allowed</a>
        <a id="asked" href="{on("asked.test", "/next")}">asked</a>
        <a id="denied" href="{on("denied.test", "/next")}">denied</a>
        <a id="again" href="{on("asked.test", "/other")}">asked again</a>
        <a id="hop" href="/hop-asked">a redirect to asked.test</a>
        <a id="popup" href="{on("asked.test", "/next")}" target="_blank">popup</a>
        <form id="form" method="post" action="{on("asked.test", "/next")}">
          <input name="q" value="secret"><button id="submit">Send</button></form>
        <button id="script" onclick="location.href='{on("asked.test", "/next")}'">go</button>
        <iframe src="{on("asked.test", "/framed")}"></iframe>"""
    )
    server.routes["/next"] = net_server.html("<title>Next</title>")
    server.routes["/other"] = net_server.html("<title>Other</title>")
    server.routes["/framed"] = net_server.html("<title>Framed</title><p>in a frame</p>")
    server.routes["/hop-asked"] = net_server.redirect(on("asked.test", "/next"))
    server.routes["/hop-canary"] = net_server.redirect(canary.url("/x"))
    server.routes["/hop-denied"] = net_server.redirect(on("denied.test", "/next"))
    server.routes["/worker"] = net_server.html(
        f"""<title>Worker</title><script>
        const code = 'new WebSocket("ws://127.0.0.2:{canary.port}/ws"); '
          + 'fetch("http://127.0.0.2:{canary.port}/fetch").catch(() => 0)';
        new Worker(URL.createObjectURL(new Blob([code])));
        </script>"""
    )
    yield server
    server.stop()


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The test names resolve to 127.0.0.1 (allowed by allow_private); lookups listed."""
    looked_up: list[str] = []
    real = net._system_resolver

    async def resolve(host: str, port: int) -> Sequence[str]:
        looked_up.append(host)
        if host in NAMES:
            return ["127.0.0.1"]
        return await real(host, port)

    monkeypatch.setattr(net, "_system_resolver", resolve)
    return looked_up


@pytest.fixture
def box(make_toolbox: Any, fake_dns: list[str]) -> Toolbox:
    config = {"permissions": RULES, "network": {"allow_private": ["127.0.0.1"]}}
    return make_toolbox(config, audit=False, plugins=False)  # type: ignore[no-any-return]


class Once:
    """A person who approves each question once, and remembers what was asked."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    async def ask(self, request: PermissionRequest) -> str:
        self.asked.append(request.subject)
        return "once"


def ok(tb: Toolbox, name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    result = tb.run(name, args or {}, **kw)
    assert result["success"], result["error"]
    return result["output"]  # type: ignore[no-any-return]


def hosts_seen(server: net_server.Server) -> list[str]:
    return [r.headers.get("Host", "").split(":")[0] for r in server.requests]


def settle(tb: Toolbox) -> dict[str, Any]:
    ok(tb, "browser_wait_for", {"condition": "document.readyState === 'complete'"})
    time.sleep(0.2)
    return ok(tb, "browser_get_state")


# --------------------------------------------------------------------------- the rules


def test_a_link_to_an_allowed_host_loads(box: Toolbox, site: net_server.Server) -> None:
    ok(box, "browser_navigate", {"url": site.url("/links")})
    clicked = ok(box, "browser_click", {"selector": "#allowed"})
    state = settle(box)
    assert state["url"] == f"http://allowed.test:{site.port}/next", clicked
    assert state["title"] == "Next" and "allowed.test" in hosts_seen(site)


@pytest.mark.parametrize("selector", ["#asked", "#submit", "#script", "#popup"])
def test_a_host_the_rules_ask_about_is_stopped_and_the_model_told(
    box: Toolbox, site: net_server.Server, selector: str
) -> None:
    ok(box, "browser_navigate", {"url": site.url("/links")})
    del site.requests[:]
    result = box.run("browser_click", {"selector": selector})
    state = settle(box)
    top = [r for r in site.requests if r.path == "/next"]
    assert top == [], "the page reached asked.test on its own"
    notes = (result.get("output") or {}).get("notes", [])
    assert any("browser_navigate" in n and "asked.test" in n for n in notes), result
    assert any(
        "asked.test" in f["url"] and "browser_navigate" in f["reason"]
        for f in state["failed_requests"]
    )


def test_a_denied_host_is_stopped_naming_the_rule(box: Toolbox, site: net_server.Server) -> None:
    ok(box, "browser_navigate", {"url": site.url("/links")})
    del site.requests[:]
    clicked = ok(box, "browser_click", {"selector": "#denied"})
    settle(box)
    assert [r for r in site.requests if r.path == "/next"] == []
    assert any("denied.test" in n and "deny" in n for n in clicked.get("notes", [])), clicked


def test_a_frame_is_a_subresource_not_a_navigation(box: Toolbox, site: net_server.Server) -> None:
    # The rules are about where the browser goes; frames pass the address guard only.
    del site.requests[:]
    ok(box, "browser_navigate", {"url": site.url("/links")})
    settle(box)
    assert any(r.path == "/framed" for r in site.requests)


def test_a_host_browser_navigate_was_allowed_to_visit_is_open_to_the_page(
    box: Toolbox, site: net_server.Server
) -> None:
    person = Once()
    asked_page = f"http://asked.test:{site.port}/links"
    site.routes["/links-asked"] = site.routes["/links"]
    ok(box, "browser_navigate", {"url": asked_page.replace("/links", "/links-asked")},
       asker=person)  # fmt: skip
    assert person.asked == ["asked.test"]
    del site.requests[:]
    clicked = ok(box, "browser_click", {"selector": "#again"})  # asked.test/other
    state = settle(box)
    assert state["title"] == "Other", clicked
    assert not clicked.get("notes") and person.asked == ["asked.test"]  # nobody asked again
    # Another user of the same browser has not been there.
    ok(box, "browser_navigate", {"url": site.url("/links")}, user_id="bob")
    clicked = ok(box, "browser_click", {"selector": "#asked"}, user_id="bob")
    assert any("browser_navigate" in n for n in clicked.get("notes", []))


# --------------------------------------------------------------------------- redirects


def test_navigate_redirected_to_a_host_the_rules_ask_about(
    box: Toolbox, site: net_server.Server
) -> None:
    result = box.run("browser_navigate", {"url": site.url("/hop-asked")})
    assert not result["success"]
    err = result["error"]
    assert err["error_code"] == "PERMISSION_DENIED" and "browser_navigate" in err["message"]
    assert "asked.test" in err["message"]
    state = ok(box, "browser_get_state")
    assert "asked.test" not in state["url"]  # the page was taken off it


def test_a_click_redirected_to_a_denied_host(box: Toolbox, site: net_server.Server) -> None:
    site.routes["/links-hop"] = net_server.html('<a id="go" href="/hop-denied">go</a>')
    ok(box, "browser_navigate", {"url": site.url("/links-hop")})
    clicked = ok(box, "browser_click", {"selector": "#go"})
    state = settle(box)
    notes = clicked.get("notes", []) + state.get("notes", [])
    assert any("denied.test" in n for n in notes), (clicked, state)
    assert "denied.test" not in state["url"]


def test_a_redirect_to_a_private_address_never_arrives(
    box: Toolbox, site: net_server.Server, canary: net_server.Server
) -> None:
    # Playwright does not route redirect hops; the proxy checks their address.
    err = box.run("browser_navigate", {"url": site.url("/hop-canary")})["error"]
    assert err["error_code"] == "PERMISSION_DENIED" and "127.0.0.2" in err["message"]
    assert canary.requests == []


def test_a_workers_socket_and_fetch_to_a_private_address_never_arrive(
    box: Toolbox, site: net_server.Server, canary: net_server.Server
) -> None:
    ok(box, "browser_navigate", {"url": site.url("/worker")})
    time.sleep(0.8)
    failed = ok(box, "browser_get_state")["failed_requests"]
    assert any("127.0.0.2" in f["url"] for f in failed)
    assert canary.requests == []


def test_a_name_that_does_not_resolve_is_a_network_error(box: Toolbox) -> None:
    for url in ("http://nowhere.invalid/", "https://nowhere.invalid/"):
        err = box.run("browser_navigate", {"url": url}, asker=Once())["error"]
        assert err["error_code"] == "NETWORK_ERROR" and "DNS lookup failed" in err["message"]


@pytest.fixture
def echo_socket() -> Iterator[int]:
    """A websocket server on 127.0.0.1 that greets each client with one text frame."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(4096)
                key = next(
                    line.split(b":", 1)[1].strip()
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"sec-websocket-key:")
                )
                magic = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
                accept = base64.b64encode(hashlib.sha1(key + magic).digest())
                conn.sendall(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
                )
                conn.sendall(b"\x81\x05hello")  # FIN + text, 5 bytes, unmasked
                with contextlib.suppress(OSError):
                    conn.recv(4096)  # until the page closes it

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(3)
    listener.close()


def test_an_allowed_websocket_works_through_the_proxy(
    box: Toolbox, site: net_server.Server, echo_socket: int
) -> None:
    site.routes["/ws"] = net_server.html(
        f"""<title>waiting</title><script>
        const ws = new WebSocket("ws://allowed.test:{echo_socket}/");
        ws.onmessage = e => {{ document.title = e.data; ws.close(); }};
        </script>"""
    )
    ok(box, "browser_navigate", {"url": site.url("/ws")})
    ok(box, "browser_wait_for", {"condition": "document.title === 'hello'", "timeout": 5})


# --------------------------------------------------------------------------- DNS rebinding


def _session_with(box: Toolbox, *args: str) -> BrowserSession:
    """The toolbox's browser, made here with extra Chromium switches."""
    guard = net.Guard(["127.0.0.1"])
    made = BrowserSession(find_executable(), guard, args=args)
    return box.runner.resources.get("browser", lambda: made)  # type: ignore[no-any-return]


@pytest.fixture
def twin(site: net_server.Server) -> Iterator[list[bytes]]:
    """A listener on 127.0.0.2 at the site's port: what reaches it is listed."""
    reached: list[bytes] = []
    listener = socket.create_server(("127.0.0.2", site.port))
    listener.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    reached.append(conn.recv(4096))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield reached
    stop.set()
    thread.join(2)
    listener.close()


def test_chromium_connects_only_where_the_guard_checked(
    box: Toolbox, site: net_server.Server, twin: list[bytes]
) -> None:
    # Chromium's own resolver would send again.test to 127.0.0.2 (not allowed), ours
    # says 127.0.0.1 (allowed): the page must come from where ours said, the checked one.
    _session_with(box, "--host-resolver-rules=MAP again.test 127.0.0.2")
    site.routes["/again"] = net_server.html("<title>Again</title>")
    result = box.run("browser_navigate", {"url": f"http://again.test:{site.port}/again"},
                     asker=Once())  # fmt: skip
    assert result["success"] and result["output"]["title"] == "Again", result
    assert twin == []


def test_a_name_that_changes_its_answer_after_the_check_is_refused(
    make_toolbox: Any, site: net_server.Server, canary: net_server.Server,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    answers = iter(["127.0.0.1"])

    async def flipping(host: str, port: int) -> Sequence[str]:
        if host != "rebind.test":
            return ["127.0.0.1"]
        return [next(answers, "127.0.0.2")]  # allowed once, then the canary

    monkeypatch.setattr(net, "_system_resolver", flipping)
    box = make_toolbox({"permissions": {"network:outbound": "allow"},
                        "network": {"allow_private": ["127.0.0.1"]}})  # fmt: skip
    err = box.run("browser_navigate", {"url": f"http://rebind.test:{canary.port}/"})["error"]
    assert err["error_code"] == "PERMISSION_DENIED" and "127.0.0.2" in err["message"], err
    assert canary.requests == []


def test_webrtc_sends_nothing_around_the_proxy(make_toolbox: Any, site: net_server.Server) -> None:
    """STUN, TURN and ICE checks are UDP: Chromium must not send them itself."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.2", 0))
    udp.settimeout(0.2)
    port = udp.getsockname()[1]
    site.routes["/rtc"] = net_server.html(
        f"""<title>rtc</title><script>
        (async () => {{
          const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.2:{port}'}}]}});
          pc.createDataChannel('x');
          await pc.setLocalDescription(await pc.createOffer());
          const other = new RTCPeerConnection(); other.createDataChannel('y');
          await other.setRemoteDescription(pc.localDescription);
          await pc.setRemoteDescription(await other.createAnswer());
          const host = 'candidate:1 1 udp 2122260223 127.0.0.2 {port} typ host';
          await pc.addIceCandidate({{candidate: host, sdpMid: '0', sdpMLineIndex: 0}})
            .catch(() => 0);
          window.pc = pc;
        }})();</script>"""
    )
    config = {
        "permissions": {"network:outbound": "allow"},
        "network": {"allow_private": ["127.0.0.1"]},
    }
    tb = make_toolbox(config, audit=False, plugins=False)
    try:
        ok(tb, "browser_navigate", {"url": site.url("/rtc")})
        received = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError, socket.timeout):
                received.append(udp.recvfrom(2048))
        assert received == []
    finally:
        udp.close()
        tb.close()


def test_a_wait_condition_is_script_and_needs_browser_evaluate(
    make_toolbox: Any, site: net_server.Server
) -> None:
    config = {
        "permissions": {"network:outbound": "allow", "browser:evaluate": "deny"},
        "network": {"allow_private": ["127.0.0.1"]},
    }
    tb = make_toolbox(config, audit=False, plugins=False)
    try:
        ok(tb, "browser_navigate", {"url": site.url("/next")})
        changed = "(document.title = 'changed', true)"
        refused = tb.run("browser_wait_for", {"condition": changed, "timeout": 2})
        assert refused["error"]["error_code"] == "PERMISSION_DENIED"
        assert ok(tb, "browser_get_state")["title"] == "Next"  # the script never ran
        assert ok(tb, "browser_wait_for", {"selector": "title", "state": "attached"})
    finally:
        tb.close()

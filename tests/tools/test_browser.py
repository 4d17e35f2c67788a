"""The browser tools against pages served on loopback, with Debian's chromium headless.

One toolbox (one browser) for the module; `make test` installs chromium with apt-get,
and without it (or without Playwright) the module is skipped, saying which is missing.
The network guard's proof: a canary server on another loopback address (127.0.0.2),
not named by allow_private, that pages try to reach; it must never see a request.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import net_server
from local_tools import Toolbox
from local_tools.browser import find_executable
from local_tools.core.errors import ExecutionError

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        f"no {CHROMIUM}: `make test` installs Debian's chromium with apt-get when it runs as root",
        allow_module_level=True,
    )
pytest.importorskip("playwright", reason="the playwright package is not installed")

FORM = """<html><head><title>Form</title></head><body>
<h1>Sign up</h1>
<label>Name <input id="name"></label>
<button id="go" onclick="document.title = 'Hello ' + document.getElementById('name').value">
Go</button>
<a id="next" href="/next">Next page</a>
<div id="later"></div>
<div style="height: 3000px"></div>
<script>
  console.log('form ready');
  document.addEventListener('keydown', e => {
    if (e.key === 'k' && e.ctrlKey) document.title = 'ctrl-k';
  });
  document.getElementById('go').addEventListener('mouseover', () => document.title = 'hovered');
  setTimeout(() => { document.getElementById('later').innerHTML = '<p id="late">late</p>'; }, 300);
</script>
</body></html>"""
FRAMED = """<html><head><title>Framed</title></head><body>
<iframe srcdoc="<button onclick=&quot;parent.document.title='inner'&quot;>Inner</button>"></iframe>
</body></html>"""


@pytest.fixture(scope="module")
def canary() -> Iterator[net_server.Server]:
    server = net_server.serve("127.0.0.2")
    server.routes["/canary"] = net_server.html("reached")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def site(canary: net_server.Server) -> Iterator[net_server.Server]:
    server = net_server.serve("127.0.0.1")
    server.routes["/form"] = net_server.html(FORM)
    server.routes["/next"] = net_server.html("<title>Next</title><p>second page</p>")
    server.routes["/framed"] = net_server.html(FRAMED)
    server.routes["/slow"] = net_server.never(server)
    server.routes["/sneaky"] = net_server.html(
        f"""<title>Sneaky</title><img src="{canary.url("/canary")}">
        <script>fetch("{canary.url("/canary")}").catch(e => console.log('blocked'));
        new WebSocket("ws://127.0.0.2:{canary.port}/canary");</script>"""
    )
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolbox]:
    root = tmp_path_factory.mktemp("browser")
    (root / "ws").mkdir()
    config = {
        "permissions": {"network:outbound": "allow", "browser:evaluate": "allow"},
        "network": {"allow_private": ["127.0.0.1"]},
    }
    box = Toolbox(root / "ws", config, state_dir=root / "state", audit=False, plugins=False)
    yield box
    box.close()


def ok(tb: Toolbox, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = tb.run(name, args or {})
    assert result["success"], result["error"]
    return result["output"]  # type: ignore[no-any-return]


def fails(tb: Toolbox, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = tb.run(name, args)
    assert not result["success"], result["output"]
    return result["error"]  # type: ignore[no-any-return]


def _ref(snapshot: str, line_start: str) -> str:
    line = next(x for x in snapshot.splitlines() if x.strip().startswith(line_start))
    return line.split("[ref=")[1].split("]")[0]


# --------------------------------------------------------------------------- pages


def test_snapshot_refs_type_and_click(tb: Toolbox, site: net_server.Server) -> None:
    nav = ok(tb, "browser_navigate", {"url": site.url("/form")})
    assert (nav["title"], nav["status"]) == ("Form", 200)
    snap = ok(tb, "browser_snapshot")
    assert 'heading "Sign up"' in snap["snapshot"] and len(snap["snapshot"]) < 1000
    ok(tb, "browser_type", {"ref": _ref(snap["snapshot"], "- textbox"), "text": "Ada"})
    clicked = ok(tb, "browser_click", {"ref": _ref(snap["snapshot"], '- button "Go"')})
    assert clicked["title"] == "Hello Ada"
    ok(tb, "browser_type", {"selector": "#name", "text": "Bob", "delay": 5})
    assert ok(tb, "browser_click", {"selector": "#go"})["title"] == "Hello Bob"
    state = ok(tb, "browser_get_state")
    assert state["loading"] is False
    assert {"type": "log", "text": "form ready", "url": site.url("/form")} in state["console"]


def test_click_a_point_hover_keys_scroll_dom_and_evaluate(
    tb: Toolbox, site: net_server.Server
) -> None:
    ok(tb, "browser_navigate", {"url": site.url("/form")})
    assert ok(tb, "browser_hover", {"selector": "#go"})["title"] == "hovered"
    script = "JSON.stringify(document.querySelector('#name').getBoundingClientRect())"
    rect = json.loads(json.loads(ok(tb, "browser_evaluate", {"script": script})["result"]))
    ok(tb, "browser_click", {"x": rect["x"] + 5, "y": rect["y"] + 5})
    assert ok(tb, "browser_evaluate", {"script": "document.activeElement.id"})["result"] == '"name"'
    assert ok(tb, "browser_press_key", {"key": "k", "modifiers": ["Control"]})["title"] == "ctrl-k"
    down = ok(tb, "browser_scroll", {"direction": "down", "amount": 400})
    assert down["scroll_y"] == 400 and down["scroll_height"] > 3000
    assert ok(tb, "browser_scroll", {"direction": "to_top"})["scroll_y"] == 0
    dom = ok(tb, "browser_get_dom", {"selector": "body", "max_depth": 2})["dom"]
    assert "input#name" in dom and 'a#next [href="/next"] "Next page"' in dom
    assert "script" not in dom
    result = ok(tb, "browser_evaluate", {"script": "async () => [1, 'two', null]"})
    assert result["result"] == '[1, "two", null]'
    assert fails(tb, "browser_evaluate", {"script": "nope("})["error_code"] == "INVALID_INPUT"


def test_wait_for_a_late_element_and_a_condition_that_never_holds(
    tb: Toolbox, site: net_server.Server
) -> None:
    ok(tb, "browser_navigate", {"url": site.url("/form")})
    ok(tb, "browser_wait_for", {"selector": "#late", "timeout": 5})
    err = fails(tb, "browser_wait_for", {"condition": "window.never === 1", "timeout": 0.5})
    assert err["error_code"] == "TIMEOUT" and "window.never" in err["message"]


def test_navigating_away_back_forward_reload(tb: Toolbox, site: net_server.Server) -> None:
    ok(tb, "browser_navigate", {"url": site.url("/form")})
    moved = ok(tb, "browser_click", {"selector": "#next"})
    ok(tb, "browser_wait_for", {"condition": "document.title === 'Next'"})
    assert ok(tb, "browser_get_state")["url"] == site.url("/next"), moved
    assert ok(tb, "browser_go_back")["url"] == site.url("/form")
    assert ok(tb, "browser_go_forward")["title"] == "Next"
    assert ok(tb, "browser_reload")["title"] == "Next"


def test_iframe_elements_have_refs_that_work(tb: Toolbox, site: net_server.Server) -> None:
    ok(tb, "browser_navigate", {"url": site.url("/framed")})
    snap = ok(tb, "browser_snapshot")["snapshot"]
    ref = _ref(snap, '- button "Inner"')
    assert ref.startswith("f")
    assert ok(tb, "browser_click", {"ref": ref})["title"] == "inner"


def test_bad_selector_unknown_ref_and_bad_arguments(tb: Toolbox, site: net_server.Server) -> None:
    ok(tb, "browser_navigate", {"url": site.url("/form")})
    err = fails(tb, "browser_click", {"selector": "#missing", "timeout": 2})
    assert err["error_code"] == "NOT_FOUND" and "browser_snapshot" in err["message"]
    assert fails(tb, "browser_click", {"ref": "e999"})["error_code"] == "NOT_FOUND"
    assert fails(tb, "browser_click", {"selector": "[[["})["error_code"] == "INVALID_INPUT"
    assert fails(tb, "browser_click", {"x": 3})["error_code"] == "INVALID_INPUT"
    assert fails(tb, "browser_navigate", {"url": "file:///etc/passwd"})["error_code"] == (
        "INVALID_INPUT"
    )


def test_a_page_that_never_finishes_is_a_timeout_and_the_browser_goes_on(
    tb: Toolbox, site: net_server.Server
) -> None:
    started = time.monotonic()
    err = fails(tb, "browser_navigate", {"url": site.url("/slow"), "timeout": 1})
    assert err["error_code"] == "TIMEOUT" and time.monotonic() - started < 10
    assert ok(tb, "browser_navigate", {"url": site.url("/next")})["title"] == "Next"


# --------------------------------------------------------------------------- the network guard


def test_a_private_address_the_config_does_not_name_is_never_reached(
    tb: Toolbox, site: net_server.Server, canary: net_server.Server
) -> None:
    ok(tb, "browser_navigate", {"url": site.url("/sneaky")})
    ok(tb, "browser_wait_for", {"condition": "document.readyState === 'complete'"})
    time.sleep(0.3)
    failed = ok(tb, "browser_get_state")["failed_requests"]
    refused = [f for f in failed if "127.0.0.2" in f["url"]]
    assert {f["method"] for f in refused} >= {"GET", "WEBSOCKET"}
    assert all("loopback" in f["reason"] or "Refused" in f["reason"] for f in refused), refused
    err = fails(tb, "browser_navigate", {"url": canary.url("/canary")})
    assert err["error_code"] == "PERMISSION_DENIED" and "allow_private" in err["message"]
    assert canary.requests == []


def test_navigation_asks_for_the_host(make_toolbox: Any, site: net_server.Server) -> None:
    denied = make_toolbox({"permissions": {"network:outbound": "deny"}})
    err = denied.run("browser_navigate", {"url": site.url("/form")})["error"]
    assert err["error_code"] == "PERMISSION_DENIED"
    assert denied.runner.resources.peek("browser") is None  # refused before starting one


# --------------------------------------------------------------------------- screenshots


def test_screenshot_as_an_image_and_to_a_workspace_file(
    tb: Toolbox, site: net_server.Server
) -> None:
    ok(tb, "browser_navigate", {"url": site.url("/form")})
    shot = ok(tb, "browser_screenshot")
    png = base64.b64decode(shot["image_base64"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and (shot["width"], shot["height"]) == (1280, 800)
    assert "image/png" in tb.render(tb.run("browser_screenshot", {"selector": "#go"}))
    full = ok(tb, "browser_screenshot", {"full_page": True})
    assert full["height"] > 3000
    saved = ok(tb, "browser_screenshot", {"path": "shots/form.png"})
    assert saved["path"] == "shots/form.png" and "image_base64" not in saved
    assert (tb.workspace / "shots" / "form.png").read_bytes().startswith(b"\x89PNG")
    assert fails(tb, "browser_screenshot", {"path": "/etc/x.png"})["error_code"] in (
        "PERMISSION_DENIED",
        "INVALID_INPUT",
    )


# --------------------------------------------------------------------------- lifecycle


def _browser_pids() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "--", "--headless"], capture_output=True, text=True)
    mine = set()
    for pid in map(int, out.stdout.split()):
        try:
            ppid = pid
            for _ in range(6):  # our process among its ancestors
                stat = Path(f"/proc/{ppid}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid():
                    mine.add(pid)
                    break
        except (OSError, ValueError, IndexError):
            continue
    return mine


def test_launch_restart_after_a_crash_and_close(make_toolbox: Any, site: net_server.Server) -> None:
    box = make_toolbox({"permissions": {"network:outbound": "allow"},
                        "network": {"allow_private": ["127.0.0.1"]}})  # fmt: skip
    assert box.runner.resources.peek("browser") is None  # lazy
    before = _browser_pids()
    launched = ok(box, "browser_launch", {"viewport": {"width": 800, "height": 600}})
    assert launched["viewport"] == {"width": 800, "height": 600} and launched["version"]
    ours = _browser_pids() - before
    assert ours
    for pid in ours:
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    again = ok(box, "browser_navigate", {"url": site.url("/next")})
    assert any("restarted" in n or "new one was started" in n for n in again["notes"])
    assert ok(box, "browser_screenshot")["width"] == 800  # the launch's settings kept
    box.close()
    time.sleep(0.3)
    assert not (_browser_pids() - before)


def test_the_executable_setting(make_toolbox: Any) -> None:
    assert find_executable() == str(CHROMIUM)
    assert find_executable("chromium").endswith("chromium")
    with pytest.raises(ExecutionError, match="not a file nor a program"):
        find_executable("/nope/chrome")
    box = make_toolbox({"browser": {"executable": "/nope/chrome"}})
    err = box.run("browser_snapshot", {})["error"]
    assert err["error_code"] == "EXECUTION_ERROR" and "[browser] executable" in err["message"]

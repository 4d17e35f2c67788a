"""The system toolset: screenshot under Xvfb (Debian's package), open_in_folder with a
stand-in opener on PATH that records what it was asked. Without Xvfb (`make test`
installs it) the screenshot test is skipped, saying so."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_tools import Toolbox

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="X11 and xdg-open: Linux")
ALLOW = {"permissions": {"system:screenshot": "allow"}}


@pytest.fixture
def xvfb(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if shutil.which("Xvfb") is None:
        pytest.skip("no Xvfb: `make test` installs Debian's xvfb with apt-get as root")
    for number in range(91, 99):
        if not Path(f"/tmp/.X11-unix/X{number}").exists():
            break
    display = f":{number}"
    server = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", "640x480x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not Path(f"/tmp/.X11-unix/X{number}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    monkeypatch.setenv("DISPLAY", display)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    yield display
    server.terminate()
    server.wait(5)


@pytest.fixture
def headless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)


def test_screenshot_of_a_virtual_display(make_toolbox: Any, xvfb: str) -> None:
    tb: Toolbox = make_toolbox(ALLOW)
    result = tb.run("screenshot", {})
    assert result["success"], result["error"]
    out = result["output"]
    assert base64.b64decode(out["image_base64"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert (out["width"], out["height"], out["monitors"]) == (640, 480, 1)
    assert tb.run("screenshot", {"monitor": 1})["output"]["width"] == 640
    err = tb.run("screenshot", {"monitor": 3})["error"]
    assert err["error_code"] == "INVALID_INPUT" and "has 1" in err["message"]


def test_screenshot_asks_and_says_why_without_a_display(make_toolbox: Any, headless: None) -> None:
    asked = make_toolbox().run("screenshot", {})["error"]  # ask, and nobody to ask
    assert asked["error_code"] == "PERMISSION_DENIED"
    err = make_toolbox(ALLOW).run("screenshot", {})["error"]
    assert err["error_code"] == "EXECUTION_ERROR" and "DISPLAY" in err["message"]


@pytest.fixture
def opener(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "opened.txt"
    script = bin_dir / "xdg-open"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{record}"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("DISPLAY", ":0")
    return record


def test_open_in_folder_runs_the_opener(tb: Toolbox, workspace: Path, opener: Path) -> None:
    (workspace / "out").mkdir()
    (workspace / "out" / "report.pdf").write_bytes(b"%PDF")
    shown = tb.run("open_in_folder", {"path": "out/report.pdf"})
    assert shown["success"], shown["error"]
    assert shown["output"]["path"] == "out/report.pdf"
    assert tb.run("open_in_folder", {"path": "out"})["success"]
    assert opener.read_text().splitlines() == [str(workspace / "out")] * 2


def test_open_in_folder_refusals(
    tb: Toolbox, opener: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tb.run("open_in_folder", {"path": "missing"})["error"]["error_code"] == "NOT_FOUND"
    outside = tb.run("open_in_folder", {"path": "/etc"})["error"]
    assert outside["error_code"] == "PERMISSION_DENIED"
    monkeypatch.delenv("DISPLAY")
    err = tb.run("open_in_folder", {"path": "."})["error"]
    assert err["error_code"] == "EXECUTION_ERROR" and "no display" in err["message"]
    assert not opener.exists()

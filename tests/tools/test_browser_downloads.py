"""Downloads land in the workspace's downloads folder only, with real Chromium.

Files served on loopback with Content-Disposition: attachment are saved through the
jail under a safe, unique name, reported to the model (the call's notes and
browser_get_state), cancelled past the size cap, and refused when the folder leads out
of the workspace. `safe_filename` is also tested alone, since Chromium cleans some
names itself before we see them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import net_server
from local_tools import Toolbox
from local_tools.browser.downloads import MAX_NAME_BYTES, safe_filename

pytest.importorskip("playwright", reason="the playwright package is not installed")
if not os.path.exists("/usr/bin/chromium"):
    pytest.skip("no /usr/bin/chromium (`make test` installs it)", allow_module_level=True)


def attachment(body: bytes, disposition: str, delay: float = 0.0) -> net_server.Route:
    def route(req: net_server.Request) -> tuple[int, dict[str, str], Any]:
        headers = {"Content-Type": "application/octet-stream", "Content-Disposition": disposition}
        if not delay:
            return 200, headers, body

        def slowly() -> Iterator[bytes]:
            for i in range(0, len(body), 256 * 1024):
                yield body[i : i + 256 * 1024]
                time.sleep(delay)

        return 200, headers, slowly()

    return route


@pytest.fixture(scope="module")
def site() -> Iterator[net_server.Server]:
    server = net_server.serve("127.0.0.1")
    server.routes["/report"] = attachment(
        b"quarterly numbers\n", 'attachment; filename="report.txt"'
    )
    server.routes["/evil"] = attachment(b"#!/bin/sh\necho pwned\n", (
        "attachment; filename=\"../../evil.sh\"; filename*=UTF-8''..%2F..%2F%E2%80%AEtxt.sh"
    ))  # fmt: skip
    server.routes["/big"] = attachment(b"x" * (3 * 2**20), 'attachment; filename="big.bin"', 0.05)
    server.routes["/page"] = net_server.html(
        '<title>Files</title><a id="report" href="/report">report</a>'
        '<a id="evil" href="/evil">evil</a><a id="big" href="/big">big</a>'
    )
    yield server
    server.stop()


@pytest.fixture
def box(make_toolbox: Any, workspace: Path) -> Toolbox:
    config = {
        "permissions": {"network:outbound": "allow"},
        "network": {"allow_private": ["127.0.0.1"]},
        "browser": {"max_download_mb": 1},
    }
    return make_toolbox(config, audit=False, plugins=False)  # type: ignore[no-any-return]


def ok(tb: Toolbox, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = tb.run(name, args or {})
    assert result["success"], result["error"]
    return result["output"]  # type: ignore[no-any-return]


def downloads_when_done(tb: Toolbox, count: int) -> list[dict[str, Any]]:
    for _ in range(100):
        found = ok(tb, "browser_get_state")["downloads"]
        if len(found) >= count and all(d["status"] != "downloading" for d in found):
            return found  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"downloads did not finish: {found}")


def test_a_download_lands_in_the_folder_never_over_another_file(
    box: Toolbox, site: net_server.Server, workspace: Path
) -> None:
    (workspace / "downloads").mkdir()
    (workspace / "downloads" / "report.txt").write_text("mine")
    ok(box, "browser_navigate", {"url": site.url("/page")})
    ok(box, "browser_click", {"selector": "#report"})
    ok(box, "browser_click", {"selector": "#report"})
    found = downloads_when_done(box, 2)
    assert [(d["status"], d["path"], d["size"]) for d in found] == [
        ("saved", "downloads/report (1).txt", 18),
        ("saved", "downloads/report (2).txt", 18),
    ]
    assert (workspace / "downloads" / "report.txt").read_text() == "mine"
    assert (workspace / "downloads" / "report (2).txt").read_bytes() == b"quarterly numbers\n"
    text = box.render(box.run("browser_get_state", {}))
    assert "download saved" in text and "downloads/report (1).txt (18 bytes)" in text


def test_navigating_to_a_file_reports_the_download_in_the_result(
    box: Toolbox, site: net_server.Server, workspace: Path
) -> None:
    out = ok(box, "browser_navigate", {"url": site.url("/report")})
    assert any("downloads/report.txt (18 bytes)" in n for n in out["notes"]), out
    assert (workspace / "downloads" / "report.txt").exists()


def test_a_hostile_name_stays_in_the_folder(
    box: Toolbox, site: net_server.Server, workspace: Path
) -> None:
    ok(box, "browser_navigate", {"url": site.url("/page")})
    ok(box, "browser_click", {"selector": "#evil"})
    (saved,) = downloads_when_done(box, 1)
    assert saved["status"] == "saved" and saved["path"].startswith("downloads/")
    name = saved["path"].removeprefix("downloads/")
    assert "/" not in name and "\u202e" not in name and not name.startswith(".")
    assert sorted(os.listdir(workspace)) == ["downloads"]
    assert not (workspace.parent / "evil.sh").exists()
    assert (workspace / saved["path"]).read_bytes().startswith(b"#!/bin/sh")


def test_a_download_over_the_cap_is_cancelled_and_nothing_saved(
    box: Toolbox, site: net_server.Server, workspace: Path
) -> None:
    ok(box, "browser_navigate", {"url": site.url("/page")})
    ok(box, "browser_click", {"selector": "#big"})
    (failed,) = downloads_when_done(box, 1)
    assert failed["status"] == "failed" and "max_download_mb" in failed["reason"]
    assert not (workspace / "downloads").exists() or not os.listdir(workspace / "downloads")


def test_a_folder_that_leads_out_of_the_workspace_is_refused(
    make_toolbox: Any, site: net_server.Server, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "downloads").symlink_to(outside)
    box = make_toolbox({"permissions": {"network:outbound": "allow"},
                        "network": {"allow_private": ["127.0.0.1"]}})  # fmt: skip
    out = ok(box, "browser_navigate", {"url": site.url("/report")})
    assert any("could not be saved" in n and "[browser] downloads" in n for n in out["notes"])
    assert os.listdir(outside) == []


@pytest.mark.parametrize(
    ("suggested", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\boot.ini", "boot.ini"),
        ("/abs/path/x.txt", "x.txt"),
        ("..", "download"),
        ("", "download"),
        (".bashrc", "bashrc"),
        ("-rf", "rf"),
        ("invoice\u202efdp.exe", "invoicefdp.exe"),
        ("zero\u200bwidth.txt", "zerowidth.txt"),
        ("a\x00b\nc.txt", "abc.txt"),
        ('what?<>:"|*.txt', "what_______.txt"),
        ("CON.txt", "_CON.txt"),
        ("nul", "_nul"),
        ("trailing. . .", "trailing"),
        ("cafe\u0301.txt", "caf\u00e9.txt"),
    ],
)
def test_safe_filename(suggested: str, expected: str) -> None:
    assert safe_filename(suggested) == expected


def test_safe_filename_keeps_long_names_short_with_their_extension() -> None:
    name = safe_filename("é" * 300 + ".tar.gz")
    assert len(name.encode()) <= MAX_NAME_BYTES and name.endswith(".gz")


def test_a_download_where_writing_is_denied_or_asks_is_not_saved(
    make_toolbox: Any, site: net_server.Server, workspace: Path
) -> None:
    for rule in ("deny", "ask"):
        config = {
            "permissions": {"network:outbound": "allow", "write:file": {"downloads/*": rule}},
            "network": {"allow_private": ["127.0.0.1"]},
        }
        tb = make_toolbox(config, audit=False, plugins=False)
        ok(tb, "browser_navigate", {"url": site.url("/page")})
        ok(tb, "browser_click", {"selector": "#report"})
        (found,) = downloads_when_done(tb, 1)
        assert found["status"] == "failed", found
        assert "write:file" in found["reason"] or "denied" in found["reason"].lower()
        assert not (workspace / "downloads").exists() or not any(
            (workspace / "downloads").iterdir()
        )
        tb.close()

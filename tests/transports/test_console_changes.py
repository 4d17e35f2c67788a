"""The console's Changes panel routes over a real uvicorn on loopback, driven with httpx:
checkpoints of every session, a diff, the plan of an undo (conflicts shown) and the undo.

The calls that change files are made by a Toolbox of the same workspace and state dir,
as another door's calls would be (the served one may carry other rules); checkpoints
are on (the `checkpoints` mark). The guard itself (token vs console session) is tested
against `local-tools serve http` in its own process, as people start it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from envelopes import ok
from local_tools import Toolbox
from spawned_http import spawn_http_server
from transports.test_web_console import Console, serve_console

pytestmark = pytest.mark.checkpoints

API = "/console/api/checkpoints"


@pytest.fixture
def console(tb: Toolbox) -> Iterator[Console]:
    with serve_console(tb) as c:
        yield c


def _get(console: Console, path: str) -> httpx.Response:
    with console.client() as c:
        return c.get(path)


def _post(console: Console, path: str, body: Any = None, **kw: Any) -> httpx.Response:
    with console.client() as c:
        if "content" in kw:
            return c.post(path, content=kw["content"], headers={"Content-Type": "application/json"})
        return c.post(path, json=body if body is not None else {})


def _two_calls(tb: Toolbox, workspace: Path) -> tuple[int, int]:
    """write_file in one session, edit in another: checkpoints (created, edited)."""
    ok(tb.run("write_file", {"path": "notes.txt", "content": "one\n"}, session_id="a"))
    edit = {"path": "notes.txt", "old_string": "one", "new_string": "two"}
    ok(tb.run("edit", edit, session_id="b"))
    found = ok(tb.run("checkpoint_list", {"all_sessions": True}))["checkpoints"]
    assert [c["tool"] for c in found] == ["edit", "write_file"]
    return found[1]["id"], found[0]["id"]


def test_the_list_shows_every_sessions_calls_newest_first(
    console: Console, tb: Toolbox, workspace: Path
) -> None:
    created, edited = _two_calls(tb, workspace)
    response = _get(console, API)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    items = response.json()["checkpoints"]
    assert [(c["id"], c["tool"]) for c in items] == [(edited, "edit"), (created, "write_file")]
    assert items[0]["files"] == [
        {"path": "notes.txt", "action": "modified", "added": 1, "removed": 1}
    ]
    assert items[1]["files"][0]["action"] == "created" and items[1]["time"]
    assert [c["id"] for c in _get(console, f"{API}?limit=1").json()["checkpoints"]] == [edited]


def test_the_diff_of_one_call(console: Console, tb: Toolbox, workspace: Path) -> None:
    _, edited = _two_calls(tb, workspace)
    response = _get(console, f"{API}/{edited}/diff")
    assert response.status_code == 200
    body = response.json()
    assert body["checkpoint"]["id"] == edited
    assert "-one\n+two\n" in body["diff"] and "notes.txt" in body["diff"]


def test_the_plan_shows_a_conflict_and_changes_nothing(
    console: Console, tb: Toolbox, workspace: Path
) -> None:
    created, edited = _two_calls(tb, workspace)
    (workspace / "notes.txt").write_text("changed by hand\n")
    response = _post(console, f"{API}/{created}/plan")
    assert response.status_code == 200
    plan = response.json()
    assert plan["dry_run"] is True and plan["undone"] == [created, edited]
    (step,) = plan["plan"]
    assert (step["path"], step["action"]) == ("notes.txt", "delete")
    assert "changed since" in step["conflict"]
    assert (workspace / "notes.txt").read_text() == "changed by hand\n"

    # Confirmed without force: refused, nothing touched, the conflict named.
    refused = _post(console, f"{API}/{created}/restore", {"undone": plan["undone"]})
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "CONFLICT" and "notes.txt" in body["error"]
    assert body["details"]["conflicts"][0]["path"] == "notes.txt"
    assert (workspace / "notes.txt").read_text() == "changed by hand\n"

    forced = _post(console, f"{API}/{created}/restore", {"undone": plan["undone"], "force": True})
    assert forced.status_code == 200, forced.text
    assert not (workspace / "notes.txt").exists()


def test_the_undo_restores_the_file_and_is_itself_undoable(
    console: Console, tb: Toolbox, workspace: Path
) -> None:
    _, edited = _two_calls(tb, workspace)
    plan = _post(console, f"{API}/{edited}/plan", {"paths": ["notes.txt"]}).json()
    assert [s["action"] for s in plan["plan"]] == ["replace"]
    response = _post(console, f"{API}/{edited}/restore", {"undone": plan["undone"]})
    assert response.status_code == 200, response.text
    out = response.json()
    assert (out["dry_run"], out["undone"], out["failed"]) == (False, [edited], {})
    assert (workspace / "notes.txt").read_text() == "one\n"

    # Audited as the console's call, and checkpointed: the undo can be undone.
    (row,) = [r for r in tb.audit.query(tool="restore") if not r.args.get("dry_run")]
    assert (row.transport, row.outcome, row.args["all_sessions"]) == ("console", "success", True)
    top = _get(console, API).json()["checkpoints"][0]
    assert top["tool"] == "restore" and top["files"][0]["path"] == "notes.txt"
    again = _post(console, f"{API}/{top['id']}/restore", {})
    assert again.status_code == 200, again.text
    assert (workspace / "notes.txt").read_text() == "two\n"


def test_a_plan_that_grew_since_it_was_shown_is_refused(
    console: Console, tb: Toolbox, workspace: Path
) -> None:
    _, edited = _two_calls(tb, workspace)
    shown = _post(console, f"{API}/{edited}/plan").json()
    ok(tb.run("write_file", {"path": "later.txt", "content": "x\n"}, session_id="a"))
    response = _post(console, f"{API}/{edited}/restore", {"undone": shown["undone"]})
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "PLAN_CHANGED"
    assert len(body["details"]["plan"]["undone"]) == 2
    assert (workspace / "later.txt").exists()
    assert (workspace / "notes.txt").read_text() == "two\n"


def test_an_ask_rule_is_approved_by_the_confirmation_a_deny_rule_still_denies(
    make_toolbox: Any, workspace: Path
) -> None:
    caller = make_toolbox()
    _, edited = _two_calls(caller, workspace)
    ok(caller.run("write_file", {"path": "locked/keep.txt", "content": "v1\n"}))
    ok(caller.run("write_file", {"path": "locked/keep.txt", "content": "v2\n", "overwrite": True}))
    locked = ok(caller.run("checkpoint_list", {}))["checkpoints"][0]["id"]
    rules = {"write:file": {"*": "ask", "locked/*": "deny"}, "delete:file": {"*": "ask"}}
    served = make_toolbox({"permissions": rules})
    with serve_console(served) as console:
        response = _post(console, f"{API}/{edited}/restore", {"paths": ["notes.txt"]})
        assert response.status_code == 200, response.text
        assert (workspace / "notes.txt").read_text() == "one\n"
        answers = served.audit.query(tool="answer")
        assert answers[0].args["answer"] == "once"
        assert answers[0].args["answered_by"].startswith("web console (127.0.0.1")
        assert answers[0].args["authenticated"] == "console-session"

        denied = _post(console, f"{API}/{locked}/restore", {})
        assert denied.status_code == 403
        assert denied.json()["code"] == "PERMISSION_DENIED"
        assert (workspace / "locked/keep.txt").read_text() == "v2\n"


def test_an_unknown_checkpoint_is_a_json_404(console: Console, tb: Toolbox) -> None:
    for response in (
        _get(console, f"{API}/999/diff"),
        _post(console, f"{API}/999/plan"),
        _post(console, f"{API}/999/restore", {"undone": [999]}),
        _post(console, f"{API}/999/restore"),
    ):
        assert response.status_code == 404, response.text
        body = response.json()
        assert body["code"] == "NOT_FOUND" and "999" in body["error"]


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        (f"{API}/abc/diff", None, "checkpoint id"),
        (f"{API}/0/plan", {}, "checkpoint id"),
        (f"{API}/1/plan", "[1, 2]", "JSON object"),
        (f"{API}/1/plan", "{not json", "JSON object"),
        (f"{API}/1/plan", {"force": True}, "unknown field"),
        (f"{API}/1/restore", {"force": "yes"}, "force"),
        (f"{API}/1/restore", {"paths": "notes.txt"}, "paths"),
        (f"{API}/1/restore", {"undone": "1"}, "undone"),
        (f"{API}?limit=0", None, "limit"),
        (f"{API}?limit=lots", None, "limit"),
    ],
)
def test_a_bad_request_is_a_json_400(
    console: Console, tb: Toolbox, workspace: Path, path: str, body: Any, says: str
) -> None:
    ok(tb.run("write_file", {"path": "notes.txt", "content": "one\n"}))
    if body is None:
        response = _get(console, path)
    elif isinstance(body, str):
        response = _post(console, path, content=body)
    else:
        response = _post(console, path, body)
    assert response.status_code == 400, response.text
    assert says in response.json()["error"]
    assert (workspace / "notes.txt").read_text() == "one\n"


def test_the_token_alone_is_refused_a_console_session_is_not(tb: Toolbox, workspace: Path) -> None:
    ok(tb.run("write_file", {"path": "notes.txt", "content": "one\n"}))
    with spawn_http_server(workspace, tb.state_dir) as server:
        bearer = {"Authorization": f"Bearer {server.token}"}
        with httpx.Client(base_url=server.url, timeout=10) as c:
            assert c.get(API).status_code == 403  # nobody at all: the guard's own refusal
            for response in (
                c.get(API, headers=bearer),
                c.get(f"{API}/1/diff", headers=bearer),
                c.post(f"{API}/1/plan", json={}, headers=bearer),
                c.post(f"{API}/1/restore", json={}, headers=bearer),
            ):
                assert response.status_code == 403, response.text  # refused by the guard
                assert "only a person in the web console" in response.json()["error"]
            assert (workspace / "notes.txt").read_text() == "one\n"

            # Signed in as a person does (the printed URL sets the session cookie).
            assert c.get(f"/auth?token={server.token}").status_code == 303
            listed = c.get(API).json()["checkpoints"]
            assert [cp["tool"] for cp in listed] == ["write_file"]
            done = c.post(f"{API}/{listed[0]['id']}/restore", json={})
            assert done.status_code == 200, done.text
        assert not (workspace / "notes.txt").exists()


def test_undo_in_the_page_shows_the_plan_then_restores(tb: Toolbox, workspace: Path) -> None:
    """In Chromium, against `serve http` in its own process (test_console_browser.py's
    harness; skipped as there without Debian's chromium or the playwright package)."""
    from playwright.sync_api import expect, sync_playwright

    from transports import test_console_browser as harness

    timeout = harness.TIMEOUT_MS
    _, edited = _two_calls(tb, workspace)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(harness.CHROMIUM))
        try:
            with harness._console(browser, tb) as page:
                rows = page.locator("#checkpoints .checkpoint")
                expect(rows).to_have_count(2, timeout=timeout)
                # A call made while the page is open is listed without a reload.
                ok(tb.run("write_file", {"path": "later.txt", "content": "x\n"}))
                expect(rows).to_have_count(3, timeout=timeout)
                expect(rows.first).to_contain_text("write_file")

                row = page.locator(f'.checkpoint[data-id="{edited}"]')
                row.locator("summary").click()
                expect(row.locator(".udiff .add")).to_have_text("+two", timeout=timeout)
                expect(row.locator(".udiff .del")).to_have_text("-one")

                (workspace / "notes.txt").write_text("by hand\n")
                row.get_by_role("button", name=f"Undo #{edited}…").click()
                plan = row.locator(".cp-plan")
                expect(plan).to_contain_text("and the 1 later call", timeout=timeout)
                expect(plan.locator(".cp-steps li.conflict")).to_contain_text("notes.txt")
                expect(plan.locator(".cp-steps")).to_contain_text("later.txt")
                confirm = plan.get_by_role("button", name="Confirm undo")
                expect(confirm).to_be_disabled()  # a conflict: overwrite it knowingly
                assert (workspace / "later.txt").exists()  # nothing happens before the click
                plan.get_by_label("Overwrite the files changed since").check()
                confirm.click()

                done = plan.locator(".cp-done")
                expect(done).to_contain_text("2 files put back", timeout=timeout)
                assert (workspace / "notes.txt").read_text() == "one\n"
                assert not (workspace / "later.txt").exists()
                expect(rows).to_have_count(4, timeout=timeout)  # the undo, itself undoable
                expect(rows.first).to_contain_text("restore")
                # The call log shows the undo, not the panel's own looking.
                from_console = page.locator('.call:has(.via:text-is("console")) .tool')
                expect(from_console).to_have_text(["restore"], timeout=timeout)
        finally:
            browser.close()

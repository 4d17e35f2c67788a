"""The review tools: at a terminal (a scripted $EDITOR, answers on a real pty), through
the web console's queue from another process, through MCP elicitation, with nobody
there, and with bad input. The console page itself is driven in Chromium in
tests/transports/test_console_review.py."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.interact.terminal import TerminalAsker
from local_tools.transports.mcp import LocalToolsMcp

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX editors and ptys")

DRAFT = "# Plan\n\nThis is the draft.\n"


def _editor(tmp_path: Path, script: str, name: str = "editor.sh") -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _terminal(make_toolbox: Any, typed: str) -> tuple[Toolbox, io.StringIO]:
    shown = io.StringIO()
    return make_toolbox(asker=TerminalAsker(io.StringIO(typed), shown)), shown


@pytest.fixture
def doc(workspace: Path) -> Path:
    path = workspace / "plan.md"
    path.write_text(DRAFT)
    return path


@pytest.fixture
def editor_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    return monkeypatch


# ------------------------------------------------------------------ the terminal


def test_terminal_edit_writes_the_file_and_returns_a_diff(
    make_toolbox: Any, doc: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    editor_env.setenv("EDITOR", _editor(tmp_path, "sed -i 's/the draft/the final plan/' \"$1\"\n"))
    tb, shown = _terminal(make_toolbox, "e\n")
    env = tb.run("review_and_edit_file", {"path": "plan.md", "prompt": "Check the wording."})
    out = ok(env)
    assert out["decision"] == "edit" and out["changed"] is True
    assert doc.read_text() == "# Plan\n\nThis is the final plan.\n"
    assert out["content"] == doc.read_text()
    assert "-This is the draft." in out["diff"] and "+This is the final plan." in out["diff"]
    screen = shown.getvalue()
    assert "Check the wording." in screen and "| This is the draft." in screen
    assert "do not undo" in tb.render(env)


def test_terminal_pass_changes_nothing(make_toolbox: Any, doc: Path) -> None:
    tb, _ = _terminal(make_toolbox, "p\n")
    before = doc.stat().st_mtime_ns
    out = ok(tb.run("review_and_edit_file", {"path": "plan.md"}))
    assert (out["decision"], out["changed"]) == ("pass", False)
    assert "content" not in out and "diff" not in out
    assert doc.stat().st_mtime_ns == before


def test_terminal_feedback_reads_lines_until_an_empty_one(make_toolbox: Any, doc: Path) -> None:
    tb, shown = _terminal(make_toolbox, "f\nShorter, please.\nAnd name the owner.\n\n")
    out = ok(tb.run("review_with_feedback_file", {"path": "plan.md"}))
    assert out["decision"] == "feedback"
    assert out["feedback"] == "Shorter, please.\nAnd name the owner."
    assert doc.read_text() == DRAFT
    assert "[f]eedback" in shown.getvalue()


def test_feedback_is_not_an_answer_where_it_is_not_offered(make_toolbox: Any, doc: Path) -> None:
    tb, shown = _terminal(make_toolbox, "f\np\n")
    assert ok(tb.run("review_and_edit_file", {"path": "plan.md"}))["decision"] == "pass"
    assert "Not an answer: 'f'" in shown.getvalue() and "[f]eedback" not in shown.getvalue()


def test_no_editor_set_says_so_and_asks_again(
    make_toolbox: Any, doc: Path, editor_env: pytest.MonkeyPatch
) -> None:
    tb, shown = _terminal(make_toolbox, "e\np\n")
    out = ok(tb.run("review_and_edit_file", {"path": "plan.md"}))
    assert out["decision"] == "pass"
    assert "No editor is set: set $VISUAL or $EDITOR" in shown.getvalue()


def test_a_failing_editor_discards_the_edit_and_asks_again(
    make_toolbox: Any, doc: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    # VISUAL wins over EDITOR, as in git.
    editor_env.setenv("VISUAL", _editor(tmp_path, 'echo junk > "$1"; exit 3\n'))
    editor_env.setenv("EDITOR", _editor(tmp_path, 'echo never > "$1"\n', "other.sh"))
    tb, shown = _terminal(make_toolbox, "e\n\n")
    message = err(tb.run("review_and_edit_file", {"path": "plan.md"}), "CANCELLED")
    assert "dismissed" in message
    assert "exited with status 3: the edit was discarded" in shown.getvalue()
    assert doc.read_text() == DRAFT


def test_an_editor_saving_no_change_is_not_an_edit(
    make_toolbox: Any, doc: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    editor_env.setenv("EDITOR", _editor(tmp_path, "true\n"))
    tb, shown = _terminal(make_toolbox, "e\np\n")
    assert ok(tb.run("review_and_edit_file", {"path": "plan.md"}))["decision"] == "pass"
    assert "No changes were saved." in shown.getvalue()


@pytest.mark.parametrize("typed", ["\n", ""])  # an empty line, or EOF
def test_dismissed_is_cancelled_and_changes_nothing(
    make_toolbox: Any, doc: Path, typed: str
) -> None:
    tb, _ = _terminal(make_toolbox, typed)
    message = err(tb.run("review_with_feedback_file", {"path": "plan.md"}), "CANCELLED")
    assert "dismissed the review of plan.md" in message and "Nothing was passed" in message
    assert doc.read_text() == DRAFT


def test_a_file_changed_during_the_review_is_a_conflict_and_keeps_both(
    make_toolbox: Any, doc: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    # While the person edits, another program rewrites the file.
    script = f"printf 'someone else\\n' > '{doc}'\nsed -i 's/draft/edit/' \"$1\"\n"
    editor_env.setenv("EDITOR", _editor(tmp_path, script))
    tb, _ = _terminal(make_toolbox, "e\n")
    env = tb.run("review_and_edit_file", {"path": "plan.md"})
    message = err(env, "CONFLICT")
    assert "changed on disk while it was under review" in message
    assert doc.read_text() == "someone else\n"  # the other writer's text survives
    assert env["error"]["details"]["edited_content"] == "# Plan\n\nThis is the edit.\n"


def test_an_edit_keeps_crlf_and_the_bom(
    make_toolbox: Any, workspace: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    path = workspace / "win.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    editor_env.setenv("EDITOR", _editor(tmp_path, "sed -i 's/two/2/' \"$1\"\n"))
    tb, _ = _terminal(make_toolbox, "e\n")
    assert ok(tb.run("review_and_edit_file", {"path": "win.txt"}))["decision"] == "edit"
    assert path.read_bytes() == b"\xef\xbb\xbfone\r\n2\r\n"


def test_content_review_at_the_terminal(
    make_toolbox: Any, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    editor_env.setenv("EDITOR", _editor(tmp_path, "printf '# PRD\\n\\nv2\\n' > \"$1\"\n"))
    tb, shown = _terminal(make_toolbox, "e\n")
    args = {"content": "# PRD\n\nv1\n", "title": "PRD: search", "prompt": "Is v1 right?"}
    out = ok(tb.run("review_and_edit_content", args))
    assert (out["decision"], out["content"]) == ("edit", "# PRD\n\nv2\n")
    assert "-v1" in out["diff"] and "+v2" in out["diff"]
    assert "PRD: search" in shown.getvalue()


def test_control_characters_in_the_draft_are_shown_escaped(make_toolbox: Any) -> None:
    tb, shown = _terminal(make_toolbox, "p\n")
    args = {"content": "ok\n\x1b[2Jcleared\ttab\n", "title": "t\x1b]0;x\x07"}
    ok(tb.run("review_and_edit_content", args))
    screen = shown.getvalue()
    assert "\x1b" not in screen and "\\x1b[2Jcleared\ttab" in screen


def _run_on_pty(args: list[str], cwd: Path, env: dict[str, str], typed: list[str]) -> str:
    """The CLI on a real terminal: wait for each prompt, type the next line."""
    master, slave = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "local_tools", *args],
        cwd=cwd,
        env=env,
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        os.close(slave)
        seen = b""
        for line in typed:
            deadline = time.monotonic() + 30
            while seen.count(b"Review:") <= typed.index(line) and time.monotonic() < deadline:
                if select.select([master], [], [], 0.2)[0]:
                    seen += os.read(master, 4096)
            os.write(master, line.encode() + b"\n")
        stdout, _ = proc.communicate(timeout=30)
        os.close(master)
    return stdout


def test_the_cli_on_a_real_terminal_opens_the_editor(doc: Path, tmp_path: Path) -> None:
    editor = _editor(tmp_path, "[ -t 0 ] && sed -i 's/draft/reviewed draft/' \"$1\"\n")
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(tmp_path / "state"), "EDITOR": editor}
    env.pop("VISUAL", None)
    args = ["call", "review_with_feedback_file", "path=plan.md", "prompt=Ready?"]
    stdout = _run_on_pty(args, doc.parent, env, ["e"])
    out = ok(json.loads(stdout))
    assert out["decision"] == "edit"  # the editor had the terminal (`[ -t 0 ]`)
    assert doc.read_text() == "# Plan\n\nThis is the reviewed draft.\n"


def test_a_review_timing_out_at_the_terminal_lets_go_of_it(make_toolbox: Any, doc: Path) -> None:
    # A real pipe for the keyboard: the dialog must stop reading it at the deadline.
    read_end, write_end = os.pipe()
    shown = io.StringIO()
    with os.fdopen(read_end, "r", encoding="utf-8") as stdin:
        try:
            tb = make_toolbox({"review": {"timeout": 1}}, asker=TerminalAsker(stdin, shown))
            started = time.monotonic()
            message = err(tb.run("review_and_edit_file", {"path": "plan.md"}), "CANCELLED")
            assert "within 1 s" in message
            assert time.monotonic() - started < 3  # on time, not the runner's margin later
            assert "The review timed out" in shown.getvalue()
            # The next prompt gets the terminal, and what the person types for it.
            result: dict[str, Any] = {}
            args = {"question": "Which day?", "options": ["Monday", "Friday"]}
            call = threading.Thread(target=lambda: result.update(tb.run("question", args)))
            call.start()
            deadline = time.monotonic() + 10
            while "Which day?" not in shown.getvalue() and time.monotonic() < deadline:
                time.sleep(0.02)
            os.write(write_end, b"2\n")
            call.join(10)
            assert not call.is_alive(), "the timed-out review still holds the terminal"
            assert ok(result)["choices"] == ["Friday"]
        finally:
            os.close(write_end)  # EOF: any reader still waiting ends
    assert doc.read_text() == DRAFT


def test_answers_typed_ahead_on_a_pipe_are_all_read(make_toolbox: Any, doc: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"f\nShorter, please.\n\n")  # all at once, before the dialog
    with os.fdopen(read_end, "r", encoding="utf-8") as stdin:
        try:
            tb = make_toolbox(
                {"review": {"timeout": 20}}, asker=TerminalAsker(stdin, io.StringIO())
            )
            started = time.monotonic()
            out = ok(tb.run("review_with_feedback_file", {"path": "plan.md"}))
            assert out["feedback"] == "Shorter, please." and time.monotonic() - started < 5
        finally:
            os.close(write_end)


def test_a_file_with_a_very_long_extension_can_be_edited(
    make_toolbox: Any, workspace: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    name = "notes." + "x" * 240
    (workspace / name).write_text(DRAFT)
    script = 'case "$1" in *.txt) sed -i "s/draft/edit/" "$1";; *) exit 9;; esac\n'
    editor_env.setenv("EDITOR", _editor(tmp_path, script))
    tb, _ = _terminal(make_toolbox, "e\n")
    assert ok(tb.run("review_and_edit_file", {"path": name}))["decision"] == "edit"
    assert (workspace / name).read_text() == "# Plan\n\nThis is the edit.\n"


# ------------------------------------------------------------------ the console's queue

CONSOLE = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from local_tools.interact.pending import PendingQueue
    queue = PendingQueue(Path(sys.argv[1]))
    answer = json.loads(sys.argv[2])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        queue.beat("review-test", "http://127.0.0.1:1/")
        items = queue.pending()
        if items:
            assert queue.answer(items[0].id, answer, "web console (test)")
            print(json.dumps({"kind": items[0].kind, **items[0].payload}), flush=True)
            break
        time.sleep(0.02)
    queue.console_gone("review-test")
    """
)


def _with_console(tb: Toolbox, answer: dict[str, Any]) -> subprocess.Popen[str]:
    console = subprocess.Popen(
        [sys.executable, "-c", CONSOLE, str(tb.pending.path), json.dumps(answer)],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not tb.pending.console_live():
        assert console.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    return console


def test_edited_in_the_console_from_another_process(make_toolbox: Any, doc: Path) -> None:
    tb = make_toolbox()
    edited = "# Plan\n\nApproved with changes.\n"
    console = _with_console(tb, {"decision": "edit", "content": edited})
    out = ok(tb.run("review_with_feedback_file", {"path": "plan.md", "prompt": "Go?"}))
    shown = json.loads(console.communicate(timeout=30)[0])
    assert shown["kind"] == "review" and shown["content"] == DRAFT
    assert (shown["path"], shown["prompt"], shown["feedback"]) == ("plan.md", "Go?", True)
    assert out["decision"] == "edit" and doc.read_text() == edited


def test_an_edit_sent_with_lf_for_a_crlf_file_keeps_crlf(
    make_toolbox: Any, workspace: Path
) -> None:
    # A browser's textarea (or a form field) turns CRLF into LF before sending it.
    path = workspace / "win.md"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    tb = make_toolbox()
    console = _with_console(tb, {"decision": "edit", "content": "one\n2\nthree\n"})
    out = ok(tb.run("review_and_edit_file", {"path": "win.md"}))
    console.communicate(timeout=30)
    assert out["decision"] == "edit" and out["content"] == "one\r\n2\r\nthree\r\n"
    assert path.read_bytes() == b"one\r\n2\r\nthree\r\n"
    assert [line for line in out["diff"].splitlines()[2:] if line[:1] in "+-"] == ["-two", "+2"]
    # The same text with LF is no edit at all: a pass, the file untouched.
    console = _with_console(tb, {"decision": "edit", "content": "one\n2\nthree\n"})
    assert ok(tb.run("review_and_edit_file", {"path": "win.md"}))["decision"] == "pass"
    console.communicate(timeout=30)
    assert path.read_bytes() == b"one\r\n2\r\nthree\r\n"


def test_feedback_from_the_console_for_a_draft(make_toolbox: Any) -> None:
    tb = make_toolbox()
    console = _with_console(tb, {"decision": "feedback", "feedback": "  Add a budget.  "})
    args = {"content": "# Design\n", "title": "Design"}
    out = ok(tb.run("review_with_feedback_content", args))
    console.communicate(timeout=30)
    assert (out["decision"], out["feedback"]) == ("feedback", "Add a budget.")


def test_unanswered_in_the_console_is_cancelled_after_the_configured_timeout(
    make_toolbox: Any, doc: Path
) -> None:
    tb = make_toolbox({"review": {"timeout": 0.4}})
    tb.pending.beat("silent", "http://127.0.0.1:1/")
    started = time.monotonic()
    message = err(tb.run("review_and_edit_file", {"path": "plan.md"}), "CANCELLED")
    assert "within 0.4 s ([review] timeout)" in message
    assert time.monotonic() - started < 5
    assert tb.pending.pending() == []  # withdrawn: the console stops showing it
    assert doc.read_text() == DRAFT


# ------------------------------------------------------------------ nobody, bad input


def test_nobody_there_is_cancelled_never_a_pass(make_toolbox: Any, doc: Path) -> None:
    tb = make_toolbox()  # no terminal, no console: the queue has nobody
    for name, args in [
        ("review_and_edit_file", {"path": "plan.md"}),
        ("review_with_feedback_content", {"content": "x", "title": "Draft"}),
    ]:
        message = err(tb.run(name, args), "CANCELLED")
        assert "Nobody can review" in message and "Nothing was passed" in message
    assert doc.read_text() == DRAFT
    assert tb.pending.pending() == []


def test_bad_input(make_toolbox: Any, workspace: Path) -> None:
    tb, shown = _terminal(make_toolbox, "p\n" * 10)
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    (workspace / "huge.md").write_text("x" * 200_001)
    (workspace / "folder").mkdir()
    assert "binary" in err(tb.run("review_and_edit_file", {"path": "blob.bin"}), "INVALID_INPUT")
    assert "at most 200000" in err(
        tb.run("review_and_edit_file", {"path": "huge.md"}), "INVALID_INPUT"
    )
    err(tb.run("review_and_edit_file", {"path": "missing.md"}), "NOT_FOUND")
    folder = tb.run("review_and_edit_file", {"path": "folder"})
    assert folder["error"]["error_code"] in ("INVALID_INPUT", "NOT_FOUND"), folder
    err(tb.run("review_and_edit_file", {"path": "../outside.md"}), "PERMISSION_DENIED")
    err(tb.run("review_and_edit_content", {"content": "", "title": "t"}), "INVALID_INPUT")
    err(tb.run("review_and_edit_content", {"content": "x", "title": "  "}), "INVALID_INPUT")
    err(tb.run("review_and_edit_content", {"content": "x"}), "INVALID_INPUT")
    assert "review" not in shown.getvalue()  # nobody was bothered with a bad call


def test_a_denied_write_is_refused_before_the_person_is_asked(make_toolbox: Any, doc: Path) -> None:
    shown = io.StringIO()
    config = {"permissions": {"write:file": {"*.md": "deny"}}}
    tb = make_toolbox(config, asker=TerminalAsker(io.StringIO("p\n"), shown))
    err(tb.run("review_and_edit_file", {"path": "plan.md"}), "PERMISSION_DENIED")
    assert shown.getvalue() == ""


# ------------------------------------------------------------------ MCP elicitation


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_review_through_mcp_elicitation(workspace: Path, doc: Path, mode: str) -> None:
    forms: list[types.ElicitRequestParams] = []
    answers = iter(
        [
            {"decision": "edit", "content": "# Plan\n\nEdited in the client.\n"},
            {"decision": "feedback", "feedback": "More detail"},
            None,
        ]
    )

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        forms.append(params)
        answer = next(answers)
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)

    async def main() -> None:
        app = LocalToolsMcp(workspace)
        try:
            async with Client(app.server(), mode=mode, elicitation_callback=person) as c:
                edited = await c.call_tool("review_with_feedback_file", {"path": "plan.md"})
                assert edited.structured_content["decision"] == "edit", edited
                commented = await c.call_tool("review_with_feedback_file", {"path": "plan.md"})
                assert commented.structured_content["feedback"] == "More detail"
                declined = await c.call_tool(
                    "review_and_edit_content", {"content": "x", "title": "T"}
                )
                assert declined.is_error
        finally:
            app.close()

    anyio.run(main)
    assert doc.read_text() == "# Plan\n\nEdited in the client.\n"
    first = forms[0]
    assert "This is the draft." in first.message
    schema = first.requested_schema
    assert schema["properties"]["decision"]["enum"] == ["pass", "edit", "feedback"]
    # No default decision: a person who only hits Accept has not passed the review.
    assert "default" not in schema["properties"]["decision"]
    assert schema["required"] == ["decision"]
    assert schema["properties"]["content"]["default"] == DRAFT
    assert forms[2].requested_schema["properties"]["decision"]["enum"] == ["pass", "edit"]


# ------------------------------------------------------------------ rules, races, lost text


@pytest.mark.parametrize("tool", ["review_and_edit_file", "review_with_feedback_file"])
def test_a_file_denied_for_reading_is_not_shown(make_toolbox: Any, doc: Path, tool: str) -> None:
    shown = io.StringIO()
    config = {"permissions": {"read:file": {"plan.md": "deny"}}}
    tb = make_toolbox(config, asker=TerminalAsker(io.StringIO("p\n"), shown))
    err(tb.run(tool, {"path": "plan.md"}), "PERMISSION_DENIED")
    assert shown.getvalue() == ""  # the person was not shown it, the model gets nothing


def test_a_symlink_repointed_during_the_review_gets_no_edit(
    make_toolbox: Any, workspace: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    (workspace / "locked").mkdir()
    locked = workspace / "locked/policy.md"
    locked.write_text(DRAFT)
    (workspace / "draft.md").write_text(DRAFT)
    (workspace / "link.md").symlink_to("draft.md")
    # While the person edits, the link is pointed at a file the model may not write.
    script = f"ln -sfn locked/policy.md '{workspace / 'link.md'}'\nsed -i 's/draft/edit/' \"$1\"\n"
    editor_env.setenv("EDITOR", _editor(tmp_path, script))
    config = {"permissions": {"write:file": {"locked/*": "deny"}}}
    tb = make_toolbox(config, asker=TerminalAsker(io.StringIO("e\n"), io.StringIO()))
    env = tb.run("review_and_edit_file", {"path": "link.md"})
    assert "no longer the file the person reviewed" in err(env, "CONFLICT")
    assert env["error"]["details"]["edited_content"] == "# Plan\n\nThis is the edit.\n"
    assert locked.read_text() == DRAFT and (workspace / "draft.md").read_text() == DRAFT


def test_a_symlink_repointed_while_its_read_is_approved_is_checked_again(
    make_toolbox: Any, workspace: Path
) -> None:
    (workspace / "locked").mkdir()
    (workspace / "locked/policy.md").write_text(DRAFT)
    (workspace / "draft.md").write_text(DRAFT)
    (workspace / "link.md").symlink_to("draft.md")
    config = {"permissions": {"read:file": {"link.md": "ask"}, "write:file": {"locked/*": "deny"}}}
    read_end, write_end = os.pipe()
    shown = io.StringIO()
    with os.fdopen(read_end, "r", encoding="utf-8") as stdin:
        try:
            tb = make_toolbox(config, asker=TerminalAsker(stdin, shown))
            result: dict[str, Any] = {}
            args = {"path": "link.md"}
            call = threading.Thread(
                target=lambda: result.update(tb.run("review_and_edit_file", args))
            )
            call.start()
            deadline = time.monotonic() + 10
            while "permission needed" not in shown.getvalue() and time.monotonic() < deadline:
                time.sleep(0.02)
            # While the person reads the read:file prompt, the link is repointed.
            (workspace / "link.md").unlink()
            (workspace / "link.md").symlink_to("locked/policy.md")
            os.write(write_end, b"o\n")
            call.join(10)
        finally:
            os.close(write_end)
    assert "locked/policy.md" in err(result, "PERMISSION_DENIED")
    assert "asks for your review" not in shown.getvalue()


def test_a_file_replaced_during_the_review_with_the_same_text_gets_no_edit(
    make_toolbox: Any, doc: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    # Same text, another file (a new inode) at the path: not the file reviewed.
    script = f"cp '{doc}' '{doc}.new' && mv '{doc}.new' '{doc}'\nsed -i 's/draft/edit/' \"$1\"\n"
    editor_env.setenv("EDITOR", _editor(tmp_path, script))
    tb, _ = _terminal(make_toolbox, "e\n")
    env = tb.run("review_and_edit_file", {"path": "plan.md"})
    err(env, "CONFLICT")
    assert env["error"]["details"]["edited_content"] == "# Plan\n\nThis is the edit.\n"
    assert doc.read_text() == DRAFT


def test_a_file_moved_away_during_the_review_keeps_the_edit_in_the_error(
    make_toolbox: Any, doc: Path, tmp_path: Path, editor_env: pytest.MonkeyPatch
) -> None:
    script = f"mv '{doc}' '{doc}.old'\nsed -i 's/draft/edit/' \"$1\"\n"
    editor_env.setenv("EDITOR", _editor(tmp_path, script))
    tb, _ = _terminal(make_toolbox, "e\n")
    env = tb.run("review_and_edit_file", {"path": "plan.md"})
    assert "details.edited_content" in err(env, "NOT_FOUND")
    assert env["error"]["details"]["edited_content"] == "# Plan\n\nThis is the edit.\n"
    assert not doc.exists()

"""compact with a model: the real SDKs against the scripted model server (tests/
model_server.py). The older part becomes a handoff note with the files touched and the
todo list computed from the calls; every user message stays verbatim; the result is a
valid conversation in its own format, whichever API the summarizing model speaks."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from compaction.conftest import MakeToolbox
from compaction.transcripts import (
    SKILL_TEXT,
    SYSTEM,
    anthropic_conversation,
    check_anthropic,
    check_openai,
    openai_messages,
    turns,
    user_texts,
)
from model_server import ScriptedModel, model_config, status, text

HANDOFF = "## Goal\nFix every module.\n## Decisions\nUse pytest.\n## Open work\nRelease notes."
SUMMARY_HEAD = re.compile(r"\[summary of (\d+) earlier messages by compact\]")


def _user_texts(fmt: str, messages: list[dict[str, Any]]) -> list[str]:
    """The texts of the user turns, block by block (a merged Anthropic turn holds many)."""
    found: list[str] = []
    for m in messages:
        if m["role"] != "user":
            continue
        content = m["content"]
        blocks = [content] if isinstance(content, str) else [b.get("text") for b in content]
        found += [b for b in blocks if isinstance(b, str)]
    return found


def _conversation(fmt: str, ts: Any) -> list[dict[str, Any]]:
    return openai_messages(ts) if fmt == "openai" else anthropic_conversation(ts)["messages"]


@pytest.mark.parametrize(
    ("fmt", "api", "stream"),
    [("openai", "anthropic", True), ("anthropic", "openai", False), ("openai", "openai", True)],
)
def test_summary_of_the_older_part(
    make_toolbox: MakeToolbox, fmt: str, api: str, stream: bool
) -> None:
    ts = turns()
    with ScriptedModel() as srv:
        srv.script(text(HANDOFF))
        tb = make_toolbox(model_config(srv, api=api, stream=stream))
        env = tb.run("compact", {"messages": _conversation(fmt, ts), "budget": 6000})
        assert env["success"], env
        assert srv.wait_idle()
    out = env["output"]
    assert out["summarized"] is True and out["fits"] is True, out.get("note")
    assert out["tokens_after"] <= 6000 < out["tokens_before"]

    # The model was shown the older part: users' messages, answers, calls, outputs.
    (request,) = srv.requests
    sent = json.dumps(request.body)
    for marker in ("USER-0", "ANSWER-0", "ANSWER-31", "src/mod_5.py", "OUT-31-1 line 0"):
        assert marker in sent
    assert "handoff" in sent and "USER-final" not in sent  # the newest request: not summarized

    result = out["messages"]
    (check_openai if fmt == "openai" else check_anthropic)(result)
    users = _user_texts(fmt, result)
    summary = users[0]
    match = SUMMARY_HEAD.match(summary)
    assert match, summary[:200]
    # Every user message, verbatim and in order, after the summary.
    assert users[1:] == user_texts(ts)
    if fmt == "openai":
        assert result[0] == {"role": "system", "content": SYSTEM}
        assert [m["role"] for m in result] == ["system"] + ["user"] * (len(users))
    else:
        assert len(result) == 1  # one user turn: the note and the users' messages
    assert HANDOFF in summary
    assert "## Files touched" in summary and "- src/mod_0.py: read_file" in summary
    todo = summary.split("## Current todo list (from the last todo_write)\n", 1)[1]
    assert todo.startswith(
        "- [x] Read the modules (completed)\n- [x] Fix the parser (completed)\n"
        "- [~] FINAL-TODO write the release notes (in_progress)"
    )
    assert SKILL_TEXT in summary  # skill instructions outlive the summary

    (entry,) = [d for d in out["dropped"] if d["kind"] == "summarized"]
    assert entry["count"] == int(match[1]) and entry["index"] == (2 if fmt == "openai" else 1)
    first = re.fullmatch(r"read_file path=(.+) offset=(\d+) limit=(\d+)", entry["restore"])
    assert first
    page = tb.run("read_file", {"path": first[1], "offset": int(first[2]), "limit": 1})
    assert json.loads(page["output"]["content"])["role"] == "assistant"


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_one_long_request_summarizes_its_own_older_work(
    make_toolbox: MakeToolbox, fmt: str
) -> None:
    """One user message and a long run of tool calls: nothing is before the newest user
    message, so the older work of that request is summarized, the newest outputs kept."""
    ts = [t for t in turns() if t.calls or t.text.startswith("USER-0:")]
    messages = _conversation(fmt, ts)
    (check_openai if fmt == "openai" else check_anthropic)(messages)
    with ScriptedModel() as srv:
        srv.script(text(HANDOFF))
        tb = make_toolbox(model_config(srv, api="openai"))
        out = tb.run("compact", {"messages": messages, "budget": 5000})["output"]
    assert out["summarized"] is True and out["fits"] is True, out.get("note")
    result = out["messages"]
    (check_openai if fmt == "openai" else check_anthropic)(result)
    users = _user_texts(fmt, result)
    assert SUMMARY_HEAD.match(users[0]) and users[1] == ts[0].text
    newest = [c for t in ts for c in t.calls][-3:]
    kept = json.dumps(result)
    assert all(json.dumps(c.output) in kept for c in newest)


def test_model_failure_returns_the_best_without_it(make_toolbox: MakeToolbox) -> None:
    with ScriptedModel() as srv:
        srv.script(status(500, "overloaded"))
        tb = make_toolbox(model_config(srv))
        env = tb.run("compact", {"messages": openai_messages(turns()), "budget": 6000})
    assert env["success"], env
    out = env["output"]
    assert out["summarized"] is False and out["fits"] is False
    assert "The summary by test failed (NETWORK_ERROR" in out["note"]
    check_openai(out["messages"])


def test_no_room_for_a_summary_no_model_call(make_toolbox: MakeToolbox) -> None:
    with ScriptedModel() as srv:
        tb = make_toolbox(model_config(srv))
        out = tb.run("compact", {"messages": openai_messages(turns()), "budget": 600})["output"]
        assert srv.requests == []
    assert out["fits"] is False and "No room for a summary" in out["note"]


def test_plain_chat_stays_valid_for_both_apis(make_toolbox: MakeToolbox) -> None:
    """Plain strings fit either API: the result must too (turns alternating)."""
    chat = []
    for k in range(10):
        chat.append({"role": "user", "content": f"USER-{k}: tell me more."})
        chat.append({"role": "assistant", "content": f"ANSWER-{k} " + "lorem ipsum " * 300})
    chat.append({"role": "user", "content": "USER-last: and now?"})
    with ScriptedModel() as srv:
        srv.script(text(HANDOFF))
        tb = make_toolbox(model_config(srv, api="anthropic", stream=False))
        out = tb.run("compact", {"messages": chat, "budget": 1500})["output"]
    assert out["summarized"] is True and out["fits"] is True, out.get("note")
    check_openai(out["messages"])
    check_anthropic(out["messages"])
    (merged,) = out["messages"]
    assert SUMMARY_HEAD.match(merged["content"])
    assert all(m["content"] in merged["content"] for m in chat if m["role"] == "user")

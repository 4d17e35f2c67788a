"""compact without a model, through the real runner: a 200-message agent transcript in
both formats shrunk under a budget (users' messages verbatim, calls still answered, the
newest outputs, skills and todos whole, stubs whose text read_file reads back), over-budget
cases, images, files in and out, bad input."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from compaction.conftest import MakeToolbox
from compaction.transcripts import (
    FIRST_TODOS,
    LAST_TODOS,
    SKILL_TEXT,
    SYSTEM,
    all_calls,
    anthropic_conversation,
    check_anthropic,
    check_openai,
    openai_messages,
    turns,
    user_texts,
)
from local_tools import Toolbox

FORMATS = ["openai", "anthropic"]
KEPT = ("skill", "todo_write")


def _messages(fmt: str) -> list[dict[str, Any]]:
    ts = turns()
    return openai_messages(ts) if fmt == "openai" else anthropic_conversation(ts)["messages"]


def _outputs(fmt: str, messages: list[dict[str, Any]]) -> dict[str, str]:
    """call id -> the text of its output, as it now stands."""
    found: dict[str, str] = {}
    for msg in messages:
        if fmt == "openai" and msg["role"] == "tool":
            found[msg["tool_call_id"]] = msg["content"]
        content = msg.get("content")
        for block in content if fmt == "anthropic" and isinstance(content, list) else ():
            if block["type"] == "tool_result":
                found[block["tool_use_id"]] = block["content"]
    return found


def _users(fmt: str, messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], str)]


def _read_back(tb: Toolbox, restore: str) -> str:
    """Follow a stub's "read_file path=... offset=N limit=M" through the toolbox."""
    match = re.fullmatch(r"read_file path=(.+) offset=(\d+) limit=(\d+)", restore)
    assert match, restore
    env = tb.run(
        "read_file",
        {"path": match[1], "offset": int(match[2]), "limit": int(match[3])},
    )
    assert env["success"], env
    return str(env["output"]["content"])


def _check(fmt: str, messages: list[dict[str, Any]]) -> None:
    (check_openai if fmt == "openai" else check_anthropic)(messages)


@pytest.mark.parametrize("fmt", FORMATS)
def test_200_messages_fit_without_a_model(make_toolbox: MakeToolbox, fmt: str) -> None:
    tb = make_toolbox()
    ts = turns()
    messages = _messages(fmt)
    assert len(messages) >= 199
    _check(fmt, messages)  # the generated input is valid to begin with

    env = tb.run("compact", {"messages": messages, "budget": 20_000})
    assert env["success"], env
    out = env["output"]
    assert out["format"] == fmt
    assert out["tokens_before"] > 40_000 > 20_000 >= out["tokens_after"]
    assert out["fits"] is True and out["summarized"] is False
    result = out["messages"]
    assert len(result) == len(messages)  # only contents change
    _check(fmt, result)
    assert _users(fmt, result) == user_texts(ts)  # every user message, verbatim, in order

    calls = all_calls(ts)
    plain = [c for c in calls if c.name not in KEPT]
    now = _outputs(fmt, result)
    for c in plain[-3:]:  # the newest outputs: whole
        assert now[c.id] == c.output
    for c in calls:  # skill and todo outputs: whole
        if c.name in KEPT:
            assert now[c.id] == c.output
    assert now[next(c.id for c in calls if c.name == "skill")] == SKILL_TEXT

    stubbed = [d for d in out["dropped"] if d["kind"] == "tool_output"]
    by_index = {c.id: c for c in plain}
    stubbed_ids = [c.id for c in plain if now[c.id] != c.output]
    # Oldest first, and it stopped as soon as it fitted (later old outputs still whole).
    assert stubbed_ids == [c.id for c in plain[: len(stubbed_ids)]]
    assert len(stubbed) == len(stubbed_ids) < len(plain) - 3
    for entry, cid in zip(stubbed, stubbed_ids, strict=True):
        call = by_index[cid]
        stub = now[cid]
        assert stub.startswith(f"[compact removed this output of {call.name} ")
        assert json.dumps(call.args) in stub  # the call, so it can be re-run
        assert entry["restore"] in stub and entry["tool"] == call.name
        assert entry["tokens"] > 500
    for entry, cid in [(stubbed[0], stubbed_ids[0]), (stubbed[-1], stubbed_ids[-1])]:
        assert _read_back(tb, entry["restore"]) == by_index[cid].output + "\n"
    assert Path(out["spill_path"]).is_file()


@pytest.mark.parametrize("fmt", FORMATS)
def test_without_a_model_over_budget_says_so(make_toolbox: MakeToolbox, fmt: str) -> None:
    env = make_toolbox().run(
        "compact", {"messages": _messages(fmt), "budget": 4000, "keep_recent_outputs": 2}
    )
    out = env["output"]
    assert env["success"] and out["fits"] is False and out["tokens_after"] > 4000
    assert "No model is configured" in out["note"] and "summarize" in out["note"]
    plain = [c for c in all_calls(turns()) if c.name not in KEPT]
    now = _outputs(fmt, out["messages"])
    assert [now[c.id] == c.output for c in plain] == [False] * (len(plain) - 2) + [True] * 2
    _check(fmt, out["messages"])


def _long_user_conversation(words: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    for k in range(6):
        text = f"USER-{k}-HEAD " + " ".join(f"w{k}x{n}" for n in range(words)) + f" USER-{k}-TAIL"
        msgs += [{"role": "user", "content": text}, {"role": "assistant", "content": f"ok {k}"}]
    return msgs


def test_long_user_messages_cut_in_the_middle_to_fit(make_toolbox: MakeToolbox) -> None:
    tb = make_toolbox()
    msgs = _long_user_conversation(700)  # ~2,000 tokens each
    env = tb.run("compact", {"messages": msgs, "budget": 8000})
    out = env["output"]
    assert env["success"] and out["fits"] is True, out.get("note")
    cuts = [d for d in out["dropped"] if d["kind"] == "user_text_cut"]
    assert cuts and [d["index"] for d in cuts] == [0, 2, 4, 6][: len(cuts)]  # oldest first
    for d in cuts:
        text = out["messages"][d["index"]]["content"]
        k = d["index"] // 2
        assert text.startswith(f"USER-{k}-HEAD ") and text.endswith(f" USER-{k}-TAIL")
        assert "compact cut" in text and d["restore"] in text
        # One long line, wrapped in the spill file so read_file shows all of it.
        saved = _read_back(tb, d["restore"])
        assert saved.count("\n") > 2 and saved.replace("\n", "") == msgs[d["index"]]["content"]
    assert out["messages"][-2]["content"] == msgs[-2]["content"]  # the newest: whole


def test_budget_below_the_user_messages_alone(make_toolbox: MakeToolbox) -> None:
    out = make_toolbox().run("compact", {"messages": _long_user_conversation(700), "budget": 1000})[
        "output"
    ]
    assert out["fits"] is False
    assert "user messages alone" in out["note"] and "larger budget" in out["note"]
    assert all(m["content"].startswith(f"USER-{i // 2}-HEAD") for i, m in
               enumerate(out["messages"]) if m["role"] == "user")  # fmt: skip


def _png() -> str:
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400).decode()


@pytest.mark.parametrize("fmt", FORMATS)
def test_images_count_fixed_and_old_ones_become_stubs(make_toolbox: MakeToolbox, fmt: str) -> None:
    def image() -> dict[str, Any]:
        if fmt == "openai":
            return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_png()}"}}
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": _png()}}  # fmt: skip

    msgs = []
    for k in range(3):
        msgs.append({"role": "user", "content": [{"type": "text", "text": f"USER-{k}"}, image()]})
        msgs.append({"role": "assistant", "content": f"seen {k}"})
    tb = make_toolbox()
    out = tb.run("compact", {"messages": msgs, "budget": 100_000})["output"]
    # ~140 KB of base64 each, counted as an image (~1,000 tokens), not as text.
    assert 3000 < out["tokens_before"] < 3400 and out["dropped"] == []
    out = tb.run("compact", {"messages": msgs, "budget": 1500})["output"]
    assert out["fits"] is True
    assert [(d["index"], d["kind"]) for d in out["dropped"]] == [(0, "image"), (2, "image")]
    first = out["messages"][0]["content"]
    assert first[0] == {"type": "text", "text": "USER-0"}
    assert first[1]["type"] == "text" and "compact removed an image" in first[1]["text"]
    assert out["messages"][4] == msgs[4]  # the newest user message keeps its image
    _check(fmt, out["messages"])


def test_file_in_and_out_keeps_its_shape(make_toolbox: MakeToolbox, workspace: Path) -> None:
    convo = {"model": "claude-x", **anthropic_conversation(turns())}
    (workspace / "chat.json").write_text(json.dumps(convo), encoding="utf-8")
    env = make_toolbox().run(
        "compact", {"path": "chat.json", "budget": 20_000, "output_path": "out/small.json"}
    )
    assert env["success"], env
    out = env["output"]
    assert "messages" not in out and out["output_path"] == "out/small.json"
    assert out["format"] == "anthropic" and out["fits"] is True
    written = json.loads((workspace / "out/small.json").read_text(encoding="utf-8"))
    assert written["model"] == "claude-x" and written["system"] == SYSTEM
    check_anthropic(written["messages"])
    assert out["tokens_after"] <= 20_000 < out["tokens_before"]


def test_paths_refused_or_unreadable(make_toolbox: MakeToolbox, workspace: Path) -> None:
    (workspace / "private").mkdir()
    (workspace / "private/chat.json").write_text("[]", encoding="utf-8")
    (workspace / "notes.txt").write_text("not json", encoding="utf-8")
    (workspace / "chat.json").write_text("[]", encoding="utf-8")
    tb = make_toolbox(
        {
            "permissions": {
                "read:file": {"*": "allow", "private/*": "deny"},
                "write:file": {"*": "allow", "locked/*": "deny"},
            }
        }
    )

    def error(args: dict[str, Any]) -> dict[str, Any]:
        env = tb.run("compact", {"budget": 1000, **args})
        assert not env["success"], env
        return dict(env["error"])

    assert error({"path": "private/chat.json"})["error_code"] == "PERMISSION_DENIED"
    assert error({"path": "../outside.json"})["error_code"] == "PERMISSION_DENIED"
    assert error({"path": "missing.json"})["error_code"] == "NOT_FOUND"
    bad = error({"path": "notes.txt"})
    assert bad["error_code"] == "INVALID_INPUT" and "not a JSON file" in bad["message"]
    denied = error({"path": "chat.json", "output_path": "locked/out.json"})
    assert denied["error_code"] == "PERMISSION_DENIED"
    assert not (workspace / "locked").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"messages": [{"content": "hi"}]}, 'messages[0] has no "role"'),
        (
            {"messages": ["hi"]},
            "messages.list[dict[str,any]].0': Input should be a valid dictionary",
        ),
        (
            {"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}]},
            "messages[1] (role 'tool'): a tool message needs",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": [{"type": "tool_use", "name": "x"}]},
                ]
            },
            "messages[1] (role 'assistant'): content[0] tool_use needs",
        ),
        (
            {"messages": [{"role": "system", "content": "s"}], "format": "anthropic"},
            "messages[0]: role 'system' is not an Anthropic Messages role (user, assistant) (the system prompt goes in a top-level \"system\")",  # noqa: E501
        ),
        ({"messages": [{"role": "user", "content": 5}]}, "content must be a string or a list"),
        ({"messages": "[{not json"}, "must be a list of message objects (or it as JSON text)"),
        ({"messages": [], "path": "a.json"}, "either messages"),
        ({}, "either messages"),
    ],
)
def test_bad_input(make_toolbox: MakeToolbox, args: dict[str, Any], expected: str) -> None:
    env = make_toolbox().run("compact", {"budget": 1000, **args})
    assert not env["success"]
    assert env["error"]["error_code"] == "INVALID_INPUT"
    assert expected in env["error"]["message"], env["error"]["message"]


def test_empty_and_already_small(make_toolbox: MakeToolbox) -> None:
    tb = make_toolbox()
    out = tb.run("compact", {"messages": [], "budget": 10})["output"]
    assert out["messages"] == [] and out["tokens_before"] == out["tokens_after"] == 0
    assert out["fits"] is True and out["dropped"] == [] and "spill_path" not in out
    msgs = openai_messages(turns(episodes=2, output_lines=3))
    out = tb.run("compact", {"messages": msgs, "budget": 50_000})["output"]
    assert out["messages"] == msgs and out["fits"] is True and out["dropped"] == []
    # As JSON text (what strict OpenAI schemas make a model send): the same.
    text = tb.run("compact", {"messages": json.dumps(msgs), "budget": 50_000})["output"]
    assert text == out


def test_todos_from_the_transcript_are_the_ones_kept() -> None:
    # Guards the generator the tests rely on: two todo_writes, the last one different.
    names = [c.name for c in all_calls(turns())]
    assert names.count("todo_write") == 2 and names.count("skill") == 1
    assert FIRST_TODOS != LAST_TODOS


@pytest.mark.checkpoints
def test_output_path_write_is_undoable(make_toolbox: MakeToolbox, workspace: Path) -> None:
    original = json.dumps(openai_messages(turns()))
    (workspace / "chat.json").write_text(original, encoding="utf-8")
    tb = make_toolbox()
    env = tb.run("compact", {"path": "chat.json", "budget": 20_000, "output_path": "chat.json"})
    assert env["success"], env
    assert len((workspace / "chat.json").read_text(encoding="utf-8")) < len(original) // 2
    (latest,) = tb.run("checkpoint_list", {"limit": 1})["output"]["checkpoints"]
    assert latest["tool"] == "compact"
    assert tb.run("restore", {"checkpoint": latest["id"]})["success"]
    assert (workspace / "chat.json").read_text(encoding="utf-8") == original


def test_compacting_a_compacted_conversation_again(make_toolbox: MakeToolbox) -> None:
    tb = make_toolbox()
    first = tb.run("compact", {"messages": _messages("anthropic"), "budget": 30_000})["output"]
    again = tb.run("compact", {"messages": first["messages"], "budget": 15_000})["output"]
    assert again["fits"] is True and again["tokens_before"] == first["tokens_after"]
    old_stubs = {d["index"] for d in first["dropped"]}
    # The stubs from before stay as they were; only outputs still whole are removed now.
    assert old_stubs.isdisjoint(d["index"] for d in again["dropped"])
    for i in old_stubs:
        assert again["messages"][i] == first["messages"][i]
    check_anthropic(again["messages"])


def test_conversations_nested_too_deep_are_bad_input(
    make_toolbox: MakeToolbox, workspace: Path
) -> None:
    tb = make_toolbox()
    (workspace / "deep.json").write_text("[" * 5000 + "]" * 5000)
    env = tb.run("compact", {"path": "deep.json", "budget": 100})
    assert env["error"]["error_code"] == "INVALID_INPUT", env["error"]
    assert "deep.json nests lists and objects too deep" in env["error"]["message"]
    nest: Any = "x"
    for _ in range(900):
        nest = {"a": nest}
    conv = [{"role": "user", "content": [{"type": "text", "text": "x", "meta": nest}]}]
    (workspace / "deep2.json").write_text(json.dumps(conv))
    for args in ({"messages": json.dumps(conv)}, {"path": "deep2.json"}):
        env = tb.run("compact", {**args, "budget": 10})
        assert env["error"]["error_code"] == "INVALID_INPUT", env["error"]
        assert "over 64 levels deep" in env["error"]["message"]
    # Arguments of a call nested too deep to walk stay text; the rest compacts.
    deep_args = "[" * 5000 + "]" * 5000
    calls = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "x", "arguments": deep_args}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "y" * 20_000},
        {"role": "user", "content": "next"},
    ]
    out = tb.run("compact", {"messages": json.dumps(calls), "budget": 3000})
    assert out["success"], out["error"]

"""The scripted model server against the official SDKs directly (no local-tools code):
both APIs, streamed and not, tool calls arriving in pieces, error bodies the SDKs map."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from model_server import (
    ScriptedModel,
    bad_tool_call,
    hang,
    reply,
    status,
    text,
    tool_calls,
)


@pytest.fixture
def srv() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


def _openai(srv: ScriptedModel, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.openai_base_url, api_key="k", **kw)


def _anthropic(srv: ScriptedModel, **kw: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="k", **kw)


MSGS = [{"role": "user", "content": "hi"}]


def _openai_ask(client: openai.OpenAI, stream: bool) -> tuple[str, list[tuple[str, str]], str, int]:
    """(text, [(name, arguments)], finish_reason, completion tokens), assembled from deltas."""
    if not stream:
        r = client.chat.completions.create(model="m", messages=MSGS)  # type: ignore[arg-type]
        msg = r.choices[0].message
        calls = [(c.function.name, c.function.arguments) for c in msg.tool_calls or ()]  # type: ignore[union-attr]
        return msg.content or "", calls, r.choices[0].finish_reason, r.usage.completion_tokens  # type: ignore[union-attr]
    out, args, names, finish, used = "", {}, {}, "", 0
    pieces = 0
    for chunk in client.chat.completions.create(
        model="m",
        messages=MSGS,
        stream=True,
        stream_options={"include_usage": True},  # type: ignore[arg-type]
    ):
        if chunk.usage:
            used = chunk.usage.completion_tokens
        for ch in chunk.choices:
            out += ch.delta.content or ""
            for tc in ch.delta.tool_calls or ():
                if tc.id:
                    names[tc.index] = tc.function.name  # type: ignore[union-attr]
                    args[tc.index] = ""
                args[tc.index] += tc.function.arguments or ""  # type: ignore[union-attr]
                pieces += 1
            finish = ch.finish_reason or finish
    assert not args or pieces > len(args) * 2  # arguments came in several deltas
    return out, [(names[i], args[i]) for i in sorted(args)], finish, used


@pytest.mark.parametrize("stream", [False, True])
def test_openai_text_and_tool_calls(srv: ScriptedModel, stream: bool) -> None:
    srv.script(
        text("the answer is 42", output_tokens=7),
        tool_calls(("read_file", {"path": "a.txt"}), ("glob", {"pattern": "**/*.py"})),
        bad_tool_call("read_file", '{"path": '),
    )
    with _openai(srv) as client:
        assert _openai_ask(client, stream) == ("the answer is 42", [], "stop", 7)
        _, calls, finish, _ = _openai_ask(client, stream)
        assert finish == "tool_calls"
        assert [(n, json.loads(a)) for n, a in calls] == [
            ("read_file", {"path": "a.txt"}),
            ("glob", {"pattern": "**/*.py"}),
        ]
        assert _openai_ask(client, stream)[1] == [("read_file", '{"path": ')]
    assert [r.api for r in srv.requests] == ["openai"] * 3
    assert srv.requests[0].headers["authorization"] == "Bearer k"
    assert srv.wait_idle()


def _anthropic_ask(
    client: anthropic.Anthropic, stream: bool
) -> tuple[str, list[tuple[str, Any]], str, int]:
    if not stream:
        m = client.messages.create(model="m", max_tokens=100, messages=MSGS)  # type: ignore[arg-type]
        out = "".join(b.text for b in m.content if b.type == "text")
        calls = [(b.name, b.input) for b in m.content if b.type == "tool_use"]
        return out, calls, m.stop_reason or "", m.usage.output_tokens
    out, calls, stop, used = "", [], "", 0
    deltas = 0
    for ev in client.messages.create(model="m", max_tokens=100, messages=MSGS, stream=True):  # type: ignore[arg-type]
        if ev.type == "content_block_start" and ev.content_block.type == "tool_use":
            calls.append([ev.content_block.name, ""])
        elif ev.type == "content_block_delta" and ev.delta.type == "text_delta":
            out += ev.delta.text
        elif ev.type == "content_block_delta" and ev.delta.type == "input_json_delta":
            calls[-1][1] += ev.delta.partial_json
            deltas += 1
        elif ev.type == "message_delta":
            stop, used = ev.delta.stop_reason or "", ev.usage.output_tokens
    assert not calls or deltas > len(calls) * 2
    return out, [(n, _loads(a)) for n, a in calls], stop, used


def _loads(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_text_and_tool_calls(srv: ScriptedModel, stream: bool) -> None:
    srv.script(
        text("the answer is 42", output_tokens=7),
        tool_calls(
            ("read_file", {"path": "a.txt"}), ("glob", {"pattern": "**/*.py"}), text="let me look"
        ),
        bad_tool_call("read_file", '{"path": '),
        text("cut", stop="max_tokens"),
    )
    with _anthropic(srv) as client:
        assert _anthropic_ask(client, stream) == ("the answer is 42", [], "end_turn", 7)
        out, calls, stop, _ = _anthropic_ask(client, stream)
        assert (out, stop) == ("let me look", "tool_use")
        assert calls == [("read_file", {"path": "a.txt"}), ("glob", {"pattern": "**/*.py"})]
        assert _anthropic_ask(client, stream)[1] == [("read_file", '{"path": ')]
        assert _anthropic_ask(client, stream)[2] == "max_tokens"
    assert srv.requests[0].headers["authorization"] == "Bearer k"  # this SDK sends the key so
    assert srv.wait_idle()


def test_errors_in_each_apis_format(srv: ScriptedModel) -> None:
    srv.script(status(400, "bad field"), status(400, "bad field"), status(500))
    with _openai(srv, max_retries=0) as oa, _anthropic(srv, max_retries=0) as an:
        with pytest.raises(openai.BadRequestError, match="bad field"):
            _openai_ask(oa, False)
        with pytest.raises(anthropic.BadRequestError, match="bad field"):
            _anthropic_ask(an, True)
        with pytest.raises(anthropic.InternalServerError):
            _anthropic_ask(an, False)
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            _openai_ask(oa, True)


def test_retry_after_is_honoured_by_the_sdk(srv: ScriptedModel) -> None:
    srv.script(status(429, retry_after=1), text("ok"))
    start = time.monotonic()
    with _openai(srv, max_retries=1) as client:
        assert _openai_ask(client, True)[0] == "ok"
    assert 0.9 < srv.requests[1].at - srv.requests[0].at < 3
    assert time.monotonic() - start < 5


def test_hang_times_out_and_the_server_sees_the_close(srv: ScriptedModel) -> None:
    srv.script(hang(10))
    with (
        _anthropic(srv, max_retries=0, timeout=0.5) as client,
        pytest.raises(anthropic.APITimeoutError),
    ):
        _anthropic_ask(client, False)
    deadline = time.monotonic() + 3
    while not srv.requests[0].disconnected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv.requests[0].disconnected
    assert srv.wait_idle()


def test_reply_sees_the_request_and_bad_tool_results_get_400(srv: ScriptedModel) -> None:
    srv.script(reply(lambda req: text(f"{len(req.body['messages'])} messages")), text("never"))
    with _openai(srv, max_retries=0) as client:
        assert _openai_ask(client, False)[0] == "1 messages"
        orphan = [*MSGS, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
        with pytest.raises(openai.BadRequestError, match="tool message"):
            client.chat.completions.create(model="m", messages=orphan)  # type: ignore[arg-type]
    assert srv.remaining() == 1

"""The models engine against the scripted server through the real SDKs: both APIs,
streamed and not; what is sent, what comes back, every failure as the project's error."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from local_tools.core.config import Config, load_config
from local_tools.core.errors import ErrorCode, ToolError
from local_tools.models import Message, Reply, ToolCall, ToolSpec, open_model
from model_server import (
    KEY_ENV,
    ScriptedModel,
    bad_tool_call,
    hang,
    model_config,
    redirect,
    status,
    text,
    tool_calls,
)

BOTH = [
    pytest.param(api, stream, id=f"{api}-{'stream' if stream else 'plain'}")
    for api in ("openai", "anthropic")
    for stream in (False, True)
]
USER = [Message("user", "What does a.txt say?")]
READ = ToolSpec(
    "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
)


@pytest.fixture
def srv() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


def config(srv: ScriptedModel, api: str = "openai", stream: bool = True, **keys: Any) -> Config:
    return load_config(model_config(srv, api, stream, **keys), ".")


def no_servers() -> tuple[int, ...]:
    return ()


def complete(cfg: Config, messages: list[Message] = USER, **kw: Any) -> Reply:
    kw.setdefault("local_servers", no_servers)

    async def go() -> Reply:
        async with open_model(cfg, **kw) as model:
            return await model.complete("Be brief.", messages, [READ])

    return asyncio.run(go())


def failure(cfg: Config, **kw: Any) -> ToolError:
    with pytest.raises(ToolError) as info:
        complete(cfg, **kw)
    return info.value


@pytest.mark.parametrize(("api", "stream"), BOTH)
def test_text_answer_with_usage_and_the_system_prompt_where_the_api_wants_it(
    srv: ScriptedModel, api: str, stream: bool
) -> None:
    srv.script(text("It says hi.", input_tokens=11, output_tokens=3))
    reply = complete(config(srv, api, stream))
    assert (reply.text, reply.tool_calls, reply.stop) == ("It says hi.", (), "end")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (11, 3)
    body = srv.requests[0].body
    assert srv.requests[0].stream is stream
    if api == "openai":
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert body["max_tokens"] == 4096  # a base_url server: max_tokens
        assert body["tools"][0]["function"]["name"] == "read_file"
    else:
        assert body["system"] == "Be brief."
        assert body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": USER[0].text}]}
        ]
        assert body["tools"][0]["input_schema"] == READ.parameters
    assert srv.wait_idle()  # the client closed its connections


@pytest.mark.parametrize(("api", "stream"), BOTH)
def test_tool_calls_then_their_results_go_back_in_the_apis_shape(
    srv: ScriptedModel, api: str, stream: bool
) -> None:
    srv.script(
        tool_calls(("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt", "limit": 5})),
        text("a says hi, b is missing", stop="max_tokens"),
    )
    cfg = config(srv, api, stream)
    first = complete(cfg)
    assert first.stop == "tool_calls"
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("read_file", {"path": "a.txt"}),
        ("read_file", {"path": "b.txt", "limit": 5}),
    ]
    a, b = first.tool_calls
    history = [
        *USER,
        Message("assistant", "", first.tool_calls),
        Message("tool", "hi", tool_call_id=a.id),
        Message("tool", "NOT_FOUND: b.txt", tool_call_id=b.id, is_error=True),
    ]
    second = complete(cfg, history)  # the server answers 400 if a result answers no call
    assert (second.text, second.stop) == ("a says hi, b is missing", "max_tokens")
    sent = srv.requests[1].body["messages"]
    if api == "openai":
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
        assert sent[4]["content"].startswith("Error: ")
    else:  # both results in one user turn, the failure flagged
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        results = sent[2]["content"]
        assert [r["tool_use_id"] for r in results] == [a.id, b.id]
        assert results[1]["is_error"] is True and "is_error" not in results[0]


@pytest.mark.parametrize(("api", "stream"), BOTH)
def test_malformed_arguments_are_a_call_with_an_error_not_an_exception(
    srv: ScriptedModel, api: str, stream: bool
) -> None:
    srv.script(bad_tool_call("read_file", '{"path": '))
    (call,) = complete(config(srv, api, stream)).tool_calls
    assert call.name == "read_file" and call.arguments is None
    assert call.error and "not valid JSON" in call.error and '{"path": ' in call.error


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_429_waits_retry_after_then_succeeds(srv: ScriptedModel, api: str) -> None:
    srv.script(status(429, retry_after=1), text("ok"))
    assert complete(config(srv, api, max_retries=2)).text == "ok"
    waited = srv.requests[1].at - srv.requests[0].at
    assert 0.9 < waited < 2.5  # the SDK honoured Retry-After, not its own backoff


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_429_after_the_last_retry_says_when_to_retry(srv: ScriptedModel, api: str) -> None:
    srv.script(status(429, retry_after=0.5), status(429, "slow down", retry_after=0.5))
    err = failure(config(srv, api, stream=False, max_retries=1))
    assert err.code == ErrorCode.NETWORK_ERROR
    assert err.details["retry_after"] == 0.5 and "retry after 0.5 s" in err.message
    assert "slow down" in err.message and len(srv.requests) == 2


@pytest.mark.parametrize(("api", "stream"), BOTH)
def test_500_and_400(srv: ScriptedModel, api: str, stream: bool) -> None:
    srv.script(status(500, "boom"), status(400, "messages.0: bad role"))
    cfg = config(srv, api, stream)
    err = failure(cfg)
    assert err.code == ErrorCode.NETWORK_ERROR and "500" in err.message and "boom" in err.message
    err = failure(cfg)
    assert err.code == ErrorCode.INVALID_INPUT and "messages.0: bad role" in err.message


@pytest.mark.parametrize(("api", "stream"), BOTH)
def test_timeout_names_the_setting_and_the_server_sees_the_close(
    srv: ScriptedModel, api: str, stream: bool
) -> None:
    srv.script(hang(10))
    started = time.monotonic()
    err = failure(config(srv, api, stream, timeout=0.5))
    assert err.code == ErrorCode.TIMEOUT and "[models.test] timeout" in err.message
    assert time.monotonic() - started < 5
    assert srv.wait_idle() and srv.requests[0].disconnected


@pytest.mark.parametrize(("api", "stream"), BOTH)
def test_cancelling_the_task_closes_the_request(srv: ScriptedModel, api: str, stream: bool) -> None:
    srv.script(hang(30))
    cfg = config(srv, api, stream)

    async def go() -> None:
        async with open_model(cfg, local_servers=no_servers) as model:
            task = asyncio.create_task(model.complete("", USER))
            while not srv.requests:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    started = time.monotonic()
    asyncio.run(go())
    assert srv.wait_idle(3) and srv.requests[0].disconnected
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_redirect_is_not_followed_even_to_the_same_host(srv: ScriptedModel, api: str) -> None:
    path = "/v1/chat/completions" if api == "openai" else "/v1/messages"
    with ScriptedModel() as same_host, ScriptedModel(host="127.0.0.2") as other:
        for target in (same_host, other):
            target.script(text("should never be reached"))
            srv.script(redirect(target.url + path + "?key=hidden"))
            err = failure(config(srv, api, max_retries=2))
            assert err.code == ErrorCode.NETWORK_ERROR and err.details["cause"] == "redirect"
            assert "307" in err.message and "do not follow redirects" in err.message
            assert target.url + path in err.message and "hidden" not in err.message
            assert target.requests == []
    assert len(srv.requests) == 2  # not retried either


def test_local_tools_own_server_port_is_refused_even_when_named(srv: ScriptedModel) -> None:
    srv.script(text("never"))
    err = failure(config(srv), local_servers=lambda: {srv.port})
    assert err.code == ErrorCode.PERMISSION_DENIED and "own server" in err.message
    assert srv.requests == []


def test_connection_refused_names_the_base_url() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    table = {"model": "m", "base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 0}
    err = failure(load_config({"models": {"gone": table}}, "."))
    assert err.code == ErrorCode.NETWORK_ERROR
    assert f"127.0.0.1:{port}/v1" in err.message and "[models.gone] base_url" in err.message


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_key_is_sent_but_never_shown(
    srv: ScriptedModel, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv(KEY_ENV, secret)
    srv.script(status(401, f"Incorrect API key provided: {secret}"), status(400, f"echo {secret}"))
    cfg = config(srv, api)

    async def go() -> list[str]:
        async with open_model(cfg, local_servers=no_servers) as model:
            shown = [repr(model), str(vars(model).get("name"))]
            for _ in range(2):
                try:
                    await model.complete("", USER)
                except ToolError as exc:
                    shown += [exc.message, repr(exc.details), exc.code]
            return shown

    shown = asyncio.run(go())
    assert srv.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert ErrorCode.PERMISSION_DENIED in shown and ErrorCode.INVALID_INPUT in shown
    assert KEY_ENV in shown[3]  # the 401 names the variable
    assert not any(secret in str(s) for s in shown)


def test_a_local_server_gets_no_provider_key(
    srv: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-provider-secret")
    srv.script(text("ok"))
    cfg = config(srv, api_key_env="")  # base_url set, no variable named: a placeholder
    assert complete(cfg).text == "ok"
    assert "sk-provider-secret" not in srv.requests[0].headers["authorization"]


def test_no_model_unknown_name_and_no_key_for_a_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ToolError) as info:
        open_model(load_config({}, "."), local_servers=no_servers)
    assert info.value.code == ErrorCode.EXECUTION_ERROR
    assert "[models.local]" in info.value.message and "base_url" in info.value.message
    two = load_config(
        {"models": {"a": {"model": "x"}, "b": {"model": "y", "api": "anthropic"}}}, "."
    )
    with pytest.raises(ToolError) as info:
        open_model(two, "nope", local_servers=no_servers)
    assert info.value.code == ErrorCode.NOT_FOUND and "a, b" in info.value.message
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ToolError) as info:
        open_model(two, "b", local_servers=no_servers)
    assert (
        info.value.code == ErrorCode.EXECUTION_ERROR and "ANTHROPIC_API_KEY" in info.value.message
    )


def test_which_model_each_purpose_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    from local_tools.models import resolve_model

    models = {"a": {"model": "x"}, "b": {"model": "y"}, "c": {"model": "z"}}
    plain = load_config({"models": models}, ".")
    assert resolve_model(plain).name == "a"
    assert resolve_model(plain, purpose="compact").name == "a"
    chosen = load_config({"models": models, "task": {"model": "b"}, "compact": {"model": "c"}}, ".")
    assert resolve_model(chosen).name == "b"
    assert resolve_model(chosen, purpose="compact").name == "c"
    assert resolve_model(chosen, "a", purpose="compact").name == "a"
    task_only = load_config({"models": models, "task": {"model": "b"}}, ".")
    assert resolve_model(task_only, purpose="compact").name == "b"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_stream_cut_short_is_an_error_not_a_partial_answer(srv: ScriptedModel, api: str) -> None:
    srv.script(text("the first half of", cut=True))
    err = failure(config(srv, api))
    assert err.code == ErrorCode.NETWORK_ERROR and "ended before" in err.message


def test_tool_call_arguments_of_other_shapes() -> None:
    from local_tools.models.base import parse_arguments

    assert parse_arguments("") == ({}, None)
    assert parse_arguments({"a": 1}) == ({"a": 1}, None)
    assert parse_arguments("[1, 2]")[1] == "the arguments were a JSON list, not an object"
    assert parse_arguments("nope")[0] is None
    assert ToolCall("i", "n", None, "why").error == "why"


def test_network_proxy_carries_the_requests_and_the_guard_still_checks(srv: ScriptedModel) -> None:
    with ScriptedModel() as proxy:  # it answers absolute-form requests as a model would
        proxy.script(text("via the proxy"), text("never"))
        data = model_config(srv)
        data["network"] = {"proxy": proxy.url}
        cfg = load_config(data, ".")
        assert complete(cfg).text == "via the proxy"
        assert proxy.requests[0].path == srv.openai_base_url + "/chat/completions"
        # The target is still checked: local-tools' own port stays refused via a proxy.
        err = failure(cfg, local_servers=lambda: {srv.port})
        assert err.code == ErrorCode.PERMISSION_DENIED and "own server" in err.message
        assert srv.requests == [] and len(proxy.requests) == 1

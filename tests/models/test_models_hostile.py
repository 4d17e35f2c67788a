"""The models engine against a hostile or careless model server: what it may send us
(sizes, time, redirects, Retry-After, malformed replies) and what of the user's it must
never get (environment headers, the key, credentials in base_url, local-tools' own port)."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envelopes import err
from local_tools.core.config import Config, ConfigError, load_config
from local_tools.core.errors import ErrorCode, NetworkError, PermissionDenied, ToolError
from local_tools.core.servers import registered_server
from local_tools.models import Message, Reply, open_model
from local_tools.models.base import parse_arguments
from model_server import (
    KEY_ENV,
    Raw,
    ScriptedModel,
    bad_tool_call,
    endless,
    huge,
    model_config,
    raw,
    status,
    text,
    trickle,
)

APIS = ["openai", "anthropic"]
BOTH = [
    pytest.param(api, stream, id=f"{api}-{'stream' if stream else 'plain'}")
    for api in APIS
    for stream in (False, True)
]
USER = [Message("user", "hello")]


def no_servers() -> tuple[int, ...]:
    return ()


@pytest.fixture
def srv() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


def config(srv: ScriptedModel, api: str = "openai", stream: bool = True, **keys: Any) -> Config:
    return load_config(model_config(srv, api, stream, **keys), ".")


def complete(cfg: Config, **kw: Any) -> Reply:
    async def go() -> Reply:
        async with open_model(cfg, local_servers=no_servers) as model:
            return await model.complete("sys", USER, **kw)

    return asyncio.run(go())


def failure(cfg: Config, **kw: Any) -> ToolError:
    with pytest.raises(ToolError) as info:
        complete(cfg, **kw)
    return info.value


# -- F1: local-tools' own server ----------------------------------------------------------


def test_open_model_cannot_be_called_without_local_servers(srv: ScriptedModel) -> None:
    with pytest.raises(TypeError, match="local_servers"):
        open_model(config(srv))  # type: ignore[call-arg]


def test_a_task_never_reaches_local_tools_own_server(
    make_toolbox: Any, srv: ScriptedModel, tmp_path: Path
) -> None:
    from local_tools.tools import builtin_tools
    from local_tools.tools.task import task

    tools = [] if any(t.name == "task" for t in builtin_tools()) else [task]
    state = tmp_path / "state"
    srv.script(text("never"))
    tb = make_toolbox(model_config(srv), tools=tools, state_dir=state)
    # The model server's port is, for this state dir, local-tools' own server.
    with registered_server(state, "http", "127.0.0.1", srv.port):
        message = err(tb.run("task", {"description": "d", "prompt": "p"}), "PERMISSION_DENIED")
    assert "own server" in message and srv.requests == []


# -- F2: only our headers -----------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_headers_from_the_environment_never_reach_the_server(
    srv: ScriptedModel, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv(KEY_ENV, secret)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-SECRET")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_SECRET")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-SECRET")
    monkeypatch.setenv(
        "ANTHROPIC_CUSTOM_HEADERS", "X-Gateway-Token: gw-SECRET\nAuthorization: Bearer cu-SECRET"
    )
    srv.script(text("ok"))
    assert complete(config(srv, api)).text == "ok"
    headers = srv.requests[0].headers
    assert not [k for k, v in headers.items() if "SECRET" in v]
    assert "openai-organization" not in headers and "x-gateway-token" not in headers
    assert headers["authorization"] == f"Bearer {secret}"
    assert headers["accept-encoding"] == "identity"


# -- F3: bytes and time -------------------------------------------------------------------


@pytest.mark.parametrize(("api", "stream"), BOTH)
def test_a_huge_reply_stops_at_the_cap(srv: ScriptedModel, api: str, stream: bool) -> None:
    srv.script(huge(40))
    started = time.monotonic()
    error = failure(config(srv, api, stream, max_retries=2), max_tokens=1000)
    assert error.code == ErrorCode.EXECUTION_ERROR and "reply_too_large" in str(error.details)
    assert "reading stopped" in error.message
    assert time.monotonic() - started < 10 and len(srv.requests) == 1  # not retried
    assert srv.wait_idle()


@pytest.mark.parametrize("api", APIS)
def test_an_endless_stream_stops_at_the_cap(srv: ScriptedModel, api: str) -> None:
    srv.script(endless())
    started = time.monotonic()
    error = failure(config(srv, api, max_retries=0), max_tokens=500)
    assert error.code == ErrorCode.EXECUTION_ERROR and "reading stopped" in error.message
    assert time.monotonic() - started < 10
    assert srv.wait_idle() and srv.requests[0].disconnected


@pytest.mark.parametrize("api", APIS)
def test_a_reply_under_the_cap_still_arrives_whole(srv: ScriptedModel, api: str) -> None:
    srv.script(huge(1))
    reply = complete(config(srv, api, stream=False), max_tokens=200)
    assert len(reply.text) == 1024 * 1024


@pytest.mark.parametrize("api", APIS)
def test_a_trickled_reply_times_out_as_a_whole(srv: ScriptedModel, api: str) -> None:
    srv.script(trickle(text("a slow answer"), every=0.3))
    started = time.monotonic()
    error = failure(config(srv, api, stream=False, timeout=1.0))
    assert error.code == ErrorCode.TIMEOUT and "[models.test] timeout" in error.message
    assert time.monotonic() - started < 4  # each byte came well within the timeout
    assert srv.wait_idle()


def test_a_compressed_reply_is_refused(srv: ScriptedModel) -> None:
    body = gzip.compress(b"{" + b" " * 10_000_000 + b"}")
    srv.script(raw(200, body, {"content-encoding": "gzip"}))
    error = failure(config(srv, stream=False))
    assert error.code == ErrorCode.EXECUTION_ERROR and "compressed" in error.message


# -- F4: Retry-After ----------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_a_long_retry_after_is_reported_not_slept(srv: ScriptedModel, api: str) -> None:
    srv.script(status(429, "slow down", retry_after=3600), text("never"))
    started = time.monotonic()
    error = failure(config(srv, api, stream=False, max_retries=2))
    assert time.monotonic() - started < 5 and len(srv.requests) == 1
    assert error.code == ErrorCode.NETWORK_ERROR and error.details["retry_after"] == 3600
    assert "retry after 3600 s" in error.message


# -- F5: the key --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["sk-abc\ndef0123456789", "sk-abc def0123456789", "sk-é0123456789"])
def test_a_key_with_odd_characters_is_refused_without_showing_it(
    srv: ScriptedModel, bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, bad)
    with pytest.raises(ToolError) as info:
        open_model(config(srv), local_servers=no_servers)
    error = info.value
    assert error.code == ErrorCode.EXECUTION_ERROR and KEY_ENV in error.message
    assert "def0123456789" not in error.message + repr(error.details)
    assert srv.requests == []


@pytest.mark.parametrize("api", APIS)
def test_pieces_of_the_key_echoed_by_a_server_are_scrubbed(
    srv: ScriptedModel, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdefXYZ"
    monkeypatch.setenv(KEY_ENV, secret)
    said = f"bad key {secret[:14]}..., ends ...{secret[-9:]}; repr {secret!r}"
    srv.script(status(400, said))
    error = failure(config(srv, api, stream=False))
    assert error.code == ErrorCode.INVALID_INPUT and "bad key [key]" in error.message
    for piece in (secret[:8], secret[-8:], "0123456789"):
        assert piece not in error.message


# -- F6: credentials in base_url ----------------------------------------------------------


def test_a_base_url_with_a_user_and_password_is_a_config_error() -> None:
    table = {"model": "m", "base_url": "http://user:pw-SECRET@127.0.0.1:9/v1"}
    with pytest.raises(ConfigError, match="api_key_env") as raised:
        load_config({"models": {"m": table}}, ".")
    assert "pw-SECRET" not in str(raised.value)  # the refused value is not echoed


def test_a_key_in_the_base_urls_query_is_never_shown() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1?api-key=SECRET"
    cfg = load_config({"models": {"q": {"model": "m", "base_url": url, "max_retries": 0}}}, ".")
    error = failure(cfg)
    assert error.code == ErrorCode.NETWORK_ERROR and f"127.0.0.1:{port}/v1" in error.message
    assert "SECRET" not in error.message + repr(error.details)


# -- F7: which addresses ------------------------------------------------------------------


def _host_name_of_this_machine() -> str:
    name = socket.gethostname()
    try:
        found = {i[4][0] for i in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    except OSError:
        pytest.skip(f"{name} does not resolve here")
    if "127.0.0.1" not in found or name.lower().startswith("localhost"):
        pytest.skip(f"{name} does not resolve to 127.0.0.1 here")
    return name


def test_a_host_name_reaches_a_private_address_only_when_allow_private_lists_it(
    srv: ScriptedModel,
) -> None:
    name = _host_name_of_this_machine()
    srv.script(text("reached by name"))
    data = model_config(srv)
    data["models"]["test"]["base_url"] = f"http://{name}:{srv.port}/v1"
    error = failure(load_config(data, "."))
    assert isinstance(error, PermissionDenied) and "allow_private" in error.message
    assert srv.requests == []
    data["network"] = {"allow_private": [name]}
    assert complete(load_config(data, ".")).text == "reached by name"


def test_a_name_that_does_not_resolve_says_so() -> None:
    table = {"model": "m", "base_url": "http://no-such-host.invalid/v1", "max_retries": 0}
    error = failure(load_config({"models": {"d": table}}, "."))
    assert isinstance(error, NetworkError) and error.code == ErrorCode.NETWORK_ERROR
    assert "could not be resolved" in error.message and "guard" not in error.message


# -- F9: malformed replies and arguments --------------------------------------------------


def test_hostile_arguments_are_an_error_on_the_call_not_an_exception() -> None:
    for raw_args in ("[" * 100_000, '{"a": ' + "9" * 5000 + "}", '{"a": 1e999999}', '{"a": NaN}'):
        arguments, why = parse_arguments(raw_args)
        assert arguments is None and why is not None and "malformed" in why, raw_args[:20]
    assert parse_arguments({"a": float("inf")})[0] is None


@pytest.mark.parametrize("api", APIS)
def test_deeply_nested_arguments_leave_the_reply_readable(srv: ScriptedModel, api: str) -> None:
    srv.script(bad_tool_call("read_file", "[" * 100_000))
    reply = complete(config(srv, api, stream=True))
    [call] = reply.tool_calls
    assert call.arguments is None and call.error and "nested too deeply" in call.error


@pytest.mark.parametrize(
    ("api", "body", "what"),
    [
        ("openai", {"id": "x", "object": "chat.completion", "choices": []}, "no choices"),
        ("openai", {"id": "x"}, "no choices"),
        ("anthropic", {"type": "message", "id": "x"}, "no content"),
    ],
)
def test_a_reply_missing_its_parts_says_so(
    srv: ScriptedModel, api: str, body: dict[str, Any], what: str
) -> None:
    srv.script(raw(200, json.dumps(body).encode()))
    error = failure(config(srv, api, stream=False))
    assert error.code == ErrorCode.EXECUTION_ERROR and what in error.message
    assert "NoneType" not in error.message


def test_an_anthropic_error_event_is_reported_with_its_type(srv: ScriptedModel) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    event = b"event: error\ndata: %s\n\n" % json.dumps(error).encode()
    srv.script(Raw(200, lambda req, model: iter([event])))
    failed = failure(config(srv, "anthropic", stream=True))
    assert failed.code == ErrorCode.NETWORK_ERROR
    assert "overloaded_error" in failed.message and "Overloaded" in failed.message
    assert "200" not in failed.message

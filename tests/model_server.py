"""A scripted fake model on 127.0.0.1 speaking OpenAI Chat Completions and Anthropic Messages.

The official SDKs talk to it over real HTTP/1.1 (keep-alive, chunked SSE streams), so a
test drives the whole client path. The model's answers are a script of turns, consumed in
order by whichever request comes next (either API)::

    with ScriptedModel() as srv:
        srv.script(tool_call("read_file", {"path": "a.txt"}), text("it says hi"))
        tb = Toolbox(workspace=ws, config=model_config(srv, api="anthropic"))
        ...
        assert srv.requests[1].body["messages"][-1]  # what the client sent
        assert srv.wait_idle()                       # no connection left open

URLs: ``srv.url`` ("http://127.0.0.1:PORT"), ``srv.openai_base_url`` (url + "/v1"),
``srv.anthropic_base_url`` (url).

Turns:
    text("answer", stop="end"|"max_tokens")          the assistant answers (cut=True: a
                                                      stream ends before its stop reason)
    tool_call("read_file", {"path": "a.txt"})        one tool call (text="" says something too)
    tool_calls(("glob", {...}), ("grep", {...}))      several calls in one turn
    bad_tool_call("read_file", '{"path": ')           arguments that are not a JSON object
    status(429, retry_after=1.0) / status(500) / status(400, "message")
                                                      an error in the API's own error body
    hang(seconds, then=None)                          hold the request (timeouts, cancel); then
                                                      answer `then`, else a 500
    redirect(url, code=307)                           a redirect (the SSRF guard's test)
    reply(fn)                                         fn(request) -> a turn (on what was sent)
    huge(megabytes)                                   a 200 text answer that big (JSON or SSE)
    endless()                                         a 200 stream of text deltas that never ends
    trickle(turn, every=1.5)                          `turn`'s reply, one byte every `every` s
    raw(code, body, headers)                          exactly these bytes (chunked)

Each text/tool turn takes ``input_tokens=`` / ``output_tokens=``; by default usage is
len(request body) // 4 in and len(generated text) // 4 out (at least 1), so budget tests
can count. Streams split text into pieces and tool arguments into several deltas, as the
real APIs do (OpenAI: id + name first, then argument pieces; a usage chunk when
``stream_options.include_usage``; ``[DONE]``. Anthropic: message_start, content blocks with
text_delta / input_json_delta, message_delta with stop_reason and usage, message_stop).
Malformed arguments in a non-streamed Anthropic reply arrive as a string ``input`` (the
API itself always sends an object; a client must still not crash).

An empty script answers 500 "script exhausted" (a test bug, made visible). Requests that
break the API's rules a client could get wrong (a tool result answering no tool call of
the assistant turn before it, Anthropic without max_tokens) get a 400 as the real API would.
``POST /v1/messages/count_tokens`` answers len(body) // 4 without consuming a turn.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Request",
    "ScriptedModel",
    "bad_tool_call",
    "hang",
    "model_config",
    "redirect",
    "reply",
    "status",
    "text",
    "tool_call",
    "tool_calls",
]

KEY_ENV = "LT_TEST_MODEL_KEY"  # the variable model_config names; tests set or unset it


# -- turns ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str  # raw JSON text as the model wrote it (maybe malformed)
    id: str = ""


@dataclass(frozen=True)
class Answer:
    text: str = ""
    calls: tuple[Call, ...] = ()
    stop: str = "end"  # "end" | "max_tokens" (tool calls imply "tool_calls")
    input_tokens: int | None = None
    output_tokens: int | None = None
    cut: bool = False  # a stream that ends before its stop reason (a dropped upstream)


@dataclass(frozen=True)
class Status:
    code: int
    message: str = ""
    retry_after: float | None = None


@dataclass(frozen=True)
class Hang:
    seconds: float
    then: Turn | None = None


@dataclass(frozen=True)
class Redirect:
    location: str
    code: int = 307


@dataclass(frozen=True)
class Reply:
    fn: Callable[[Request], Turn]


@dataclass(frozen=True)
class Raw:
    """A hostile reply: `code`, `headers`, then the pieces `body(request)` yields, each
    sent as an HTTP chunk `delay` s apart, until they end (or the client leaves)."""

    code: int
    body: Callable[[Request, ScriptedModel], Iterator[bytes]]
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0


Turn = Answer | Status | Hang | Redirect | Reply | Raw


def text(content: str, *, stop: str = "end", cut: bool = False, **usage: int) -> Answer:
    return Answer(text=content, stop=stop, cut=cut, **usage)


def tool_call(name: str, arguments: dict[str, Any], *, text: str = "", **usage: int) -> Answer:
    return Answer(text=text, calls=(Call(name, json.dumps(arguments)),), **usage)


def tool_calls(*calls: tuple[str, dict[str, Any]], text: str = "", **usage: int) -> Answer:
    return Answer(text=text, calls=tuple(Call(n, json.dumps(a)) for n, a in calls), **usage)


def bad_tool_call(name: str, raw_arguments: str, **usage: int) -> Answer:
    return Answer(calls=(Call(name, raw_arguments),), **usage)


def status(code: int, message: str = "", *, retry_after: float | None = None) -> Status:
    return Status(code, message, retry_after)


def hang(seconds: float, then: Turn | None = None) -> Hang:
    return Hang(seconds, then)


def redirect(location: str, code: int = 307) -> Redirect:
    return Redirect(location, code)


def reply(fn: Callable[[Request], Turn]) -> Reply:
    return Reply(fn)


def raw(code: int, body: bytes, headers: dict[str, str] | None = None) -> Raw:
    return Raw(code, lambda req, model: iter([body]), tuple((headers or {}).items()))


def huge(megabytes: int) -> Raw:
    """A well-formed 200 text answer of `megabytes` MB, streamed or not as asked."""

    def body(req: Request, model: ScriptedModel) -> Iterator[bytes]:
        mb = b"A" * (1024 * 1024)
        if not req.stream:
            full = _full(req, Answer(text="@"), 10, model)
            head, _, tail = json.dumps(full).encode().partition(b"@")
            yield head
            for _ in range(megabytes):
                yield mb
            yield tail
            return
        events = _delta_events(req, model)
        yield events[0]
        for _ in range(megabytes):
            yield events[1]
        yield from events[2:]

    return Raw(200, body, _ctype_of_any())


def endless() -> Raw:
    """A streamed answer whose text never ends (64 KB deltas)."""

    def body(req: Request, model: ScriptedModel) -> Iterator[bytes]:
        events = _delta_events(req, model, piece=64 * 1024)
        yield events[0]
        while True:
            yield events[1]

    return Raw(200, body, _ctype_of_any())


def trickle(turn: Answer, every: float = 1.5) -> Raw:
    """`turn`'s non-streamed reply sent one byte every `every` s."""

    def body(req: Request, model: ScriptedModel) -> Iterator[bytes]:
        data = json.dumps(_full(req, turn, 10, model)).encode()
        return (data[i : i + 1] for i in range(len(data)))

    return Raw(200, body, (("content-type", "application/json"),), every)


def _ctype_of_any() -> tuple[tuple[str, str], ...]:
    return ()  # chosen per request in _raw (JSON or SSE)


def _delta_events(req: Request, model: ScriptedModel, piece: int = 1024 * 1024) -> list[bytes]:
    """[the stream's start, one text delta of `piece` characters, its end]."""
    events = _openai_events if req.api == "openai" else _anthropic_events
    whole = [e.encode() for e in events(req, Answer(text="@"), 10, model)]
    at = next(i for i, e in enumerate(whole) if b"@" in e)
    # One character: the server splits text in three, so it sits whole in one delta.
    delta = whole[at].replace(b"@", b"A" * piece, 1)
    return [b"".join(whole[:at]), delta, b"".join(whole[at + 1 :])]


# -- requests --------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # the parsed JSON body (None when there was none)
    api: str  # "openai" | "anthropic" | "" (another path)
    at: float = field(default_factory=time.monotonic)
    disconnected: bool = False  # the client went away while a hang() held it

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


def _api_of(path: str) -> str:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return ""


# -- the server ------------------------------------------------------------------------------


class ScriptedModel:
    """The fake model: a thread serving HTTP/1.1 on `host` (a context manager)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.requests: list[Request] = []
        self._turns: list[Turn] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer((host, 0), _handler(self))
        self._httpd.daemon_threads = True
        self.host = host
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def script(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(turns)

    def remaining(self) -> int:
        with self._lock:
            return len(self._turns)

    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """True once no client connection is open (the SDK closed its pool)."""
        deadline = time.monotonic() + timeout
        while self.open_connections() and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.open_connections() == 0

    def close(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # a keep-alive connection's thread waits on it: wake it
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_turn(self) -> Turn | None:
        with self._lock:
            return self._turns.pop(0) if self._turns else None

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}"


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes: with Nagle on, a kept-alive
        # connection waits for the client's delayed ACK (~40 ms a reply).
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            with model._lock:
                model._conns.add(self.connection)

        def handle(self) -> None:
            # A client that dropped a reply mid-body (a cap, a timeout) resets the socket.
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                super().handle()

        def finish(self) -> None:
            with model._lock:
                model._conns.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def do_GET(self) -> None:
            self._send_json(404, {"error": {"message": f"no GET {self.path}"}})

        def do_POST(self) -> None:
            raw = self._read_body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            path = self.path.partition("?")[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            req = Request("POST", path, headers, body, _api_of(path))
            if path.endswith("/messages/count_tokens"):
                self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
                return
            with model._lock:
                model.requests.append(req)
            if not req.api:
                self._send_json(404, {"error": {"message": f"no route {path}"}})
                return
            problem = _check(req)
            if problem:
                self._send_error(req, Status(400, problem))
                return
            self._play(req, model._next_turn(), len(raw))

        def _read_body(self) -> bytes:
            if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                out = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    chunk = self.rfile.read(size + 2)[:size]
                    if not size:
                        return out
                    out += chunk
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        def _play(self, req: Request, turn: Turn | None, body_len: int) -> None:
            while isinstance(turn, Reply):
                turn = turn.fn(req)
            if turn is None:
                self._send_error(req, Status(500, "script exhausted: the test scripted no turn"))
            elif isinstance(turn, Status):
                self._send_error(req, turn)
            elif isinstance(turn, Raw):
                self._raw(req, turn)
            elif isinstance(turn, Redirect):
                self._send(turn.code, "text/plain", b"", {"location": turn.location})
            elif isinstance(turn, Hang):
                if self._hold(turn.seconds):
                    req.disconnected = True
                    self.close_connection = True
                    return
                self._play(req, turn.then or Status(500, "hang ended"), body_len)
            elif req.stream:
                self._stream(req, turn, body_len)
            else:
                self._send_json(200, _full(req, turn, body_len, model))

        def _hold(self, seconds: float) -> bool:
            """Wait `seconds`; True when the client closed the connection meanwhile."""
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not model._stopping.is_set():
                ready, _, _ = select.select([self.connection], [], [], 0.02)
                if ready:
                    try:
                        if not self.connection.recv(1, socket.MSG_PEEK):
                            return True
                    except OSError:
                        return True
            return model._stopping.is_set()

        def _stream(self, req: Request, turn: Answer, body_len: int) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            events = _openai_events if req.api == "openai" else _anthropic_events
            try:
                for event in events(req, turn, body_len, model):
                    data = event.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True

        def _raw(self, req: Request, turn: Raw) -> None:
            headers = dict(turn.headers)
            headers.setdefault(
                "content-type", "text/event-stream" if req.stream else "application/json"
            )
            try:
                self.send_response(turn.code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for piece in turn.body(req, model):
                    if model._stopping.is_set() or (turn.delay and self._hold(turn.delay)):
                        break
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                else:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
            except OSError:
                pass
            req.disconnected = True
            self.close_connection = True

        def _send_error(self, req: Request, err: Status) -> None:
            headers = {}
            if err.retry_after is not None:
                headers["retry-after"] = _num(err.retry_after)
            message = err.message or f"scripted {err.code}"
            if req.api == "anthropic":
                kind = _ANTHROPIC_ERRORS.get(err.code, "api_error")
                body = {"type": "error", "error": {"type": kind, "message": message}}
                headers["request-id"] = model._new_id("req_")
            else:
                kind = _OPENAI_ERRORS.get(err.code, "server_error")
                body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
            self._send_json(err.code, body, headers)

        def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
            self._send(code, "application/json", json.dumps(body).encode(), headers or {})

        def _send(self, code: int, ctype: str, data: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    return Handler


_OPENAI_ERRORS = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    429: "rate_limit_exceeded",
}
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _num(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _check(req: Request) -> str:
    """The request rules a client's translation could break; "" when it is fine."""
    body = req.body
    if (
        not isinstance(body, dict)
        or not body.get("model")
        or not isinstance(body.get("messages"), list)
    ):
        return "the body needs model and messages"
    messages = body["messages"]
    if req.api == "anthropic":
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens: Field required"
        asked: set[str] = set()
        for i, m in enumerate(messages):
            if m.get("role") not in ("user", "assistant"):
                return f"messages.{i}.role: Input should be 'user' or 'assistant'"
            blocks = m["content"] if isinstance(m.get("content"), list) else []
            for b in blocks:
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in asked:
                    return f"messages.{i}: tool_result {b.get('tool_use_id')} answers no tool_use"
            asked = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        return ""
    asked = set()
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in asked:
                return f"messages.[{i}]: tool message answers no preceding tool_calls id"
            continue
        asked = {c["id"] for c in m.get("tool_calls") or ()}
    return ""


def _usage(turn: Answer, body_len: int) -> tuple[int, int]:
    made = turn.text + "".join(c.name + c.arguments for c in turn.calls)
    inp = turn.input_tokens if turn.input_tokens is not None else max(1, body_len // 4)
    out = turn.output_tokens if turn.output_tokens is not None else max(1, len(made) // 4)
    return inp, out


def _ids(turn: Answer, model: ScriptedModel, prefix: str) -> list[str]:
    return [c.id or model._new_id(prefix) for c in turn.calls]


def _pieces(s: str, n: int = 3) -> list[str]:
    """`s` in `n` pieces (at least one, maybe empty), the way deltas arrive."""
    size = max(1, -(-len(s) // n))
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


def _openai_finish(turn: Answer) -> str:
    return "tool_calls" if turn.calls else ("length" if turn.stop == "max_tokens" else "stop")


def _anthropic_stop(turn: Answer) -> str:
    return "tool_use" if turn.calls else ("max_tokens" if turn.stop == "max_tokens" else "end_turn")


def _anthropic_input(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _full(req: Request, turn: Answer, body_len: int, model: ScriptedModel) -> dict[str, Any]:
    inp, out = _usage(turn, body_len)
    name = req.body["model"]
    if req.api == "anthropic":
        ids = _ids(turn, model, "toolu_")
        content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        content += [
            {"type": "tool_use", "id": i, "name": c.name, "input": _anthropic_input(c.arguments)}
            for i, c in zip(ids, turn.calls, strict=True)
        ]
        return {
            "id": model._new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": name,
            "content": content,
            "stop_reason": _anthropic_stop(turn),
            "stop_sequence": None,
            "usage": {"input_tokens": inp, "output_tokens": out},
        }
    ids = _ids(turn, model, "call_")
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None}
    if turn.calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for i, c in zip(ids, turn.calls, strict=True)
        ]
    return {
        "id": model._new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _openai_finish(turn),
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out},
    }


def _openai_events(
    req: Request, turn: Answer, body_len: int, model: ScriptedModel
) -> Iterator[str]:
    inp, out = _usage(turn, body_len)
    base = {
        "id": model._new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": req.body["model"],
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if turn.text:
        for piece in _pieces(turn.text):
            yield chunk({"content": piece})
    for index, (call_id, call) in enumerate(
        zip(_ids(turn, model, "call_"), turn.calls, strict=True)
    ):
        head = {"name": call.name, "arguments": ""}
        yield chunk(
            {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": head}]}
        )
        for piece in _pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if turn.cut:
        return
    yield chunk({}, _openai_finish(turn))
    if (req.body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


def _anthropic_events(
    req: Request, turn: Answer, body_len: int, model: ScriptedModel
) -> Iterator[str]:
    inp, out = _usage(turn, body_len)

    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    message = {
        "id": model._new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": req.body["model"],
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": 1},
    }
    yield event("message_start", {"message": message})
    yield event("ping", {})
    index = 0
    if turn.text:
        yield event(
            "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
        )
        for piece in _pieces(turn.text):
            yield event(
                "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}}
            )
        yield event("content_block_stop", {"index": 0})
        index = 1
    for call_id, call in zip(_ids(turn, model, "toolu_"), turn.calls, strict=True):
        block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        yield event("content_block_start", {"index": index, "content_block": block})
        for piece in _pieces(call.arguments):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield event("content_block_delta", {"index": index, "delta": delta})
        yield event("content_block_stop", {"index": index})
        index += 1
    if turn.cut:
        return
    delta = {"stop_reason": _anthropic_stop(turn), "stop_sequence": None}
    yield event("message_delta", {"delta": delta, "usage": {"output_tokens": out}})
    yield event("message_stop", {})


def model_config(
    server: ScriptedModel,
    api: str = "openai",
    stream: bool = True,
    name: str = "test",
    **model_keys: Any,
) -> dict[str, Any]:
    """The config mapping a Toolbox takes, with one model `name` served by `server`.

    The key's variable is LT_TEST_MODEL_KEY (a test sets it when it checks the header;
    unset, the client sends a placeholder, as for any local server). `model_keys` override
    or add `[models.NAME]` keys (max_retries defaults to 0 here so errors are quick)."""
    base_url = server.openai_base_url if api == "openai" else server.anthropic_base_url
    table: dict[str, Any] = {
        "api": api,
        "model": "scripted-1",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "stream": stream,
        "max_retries": 0,
        "timeout": 30.0,
    }
    table.update(model_keys)
    return {"models": {name: table}, "task": {"model": name}}

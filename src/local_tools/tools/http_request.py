"""http_request: one HTTP call to an API — any common method, headers, a JSON or text body."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.tools import _web
from local_tools.web.convert import decode_text
from local_tools.web.url_arg import WebUrl

if TYPE_CHECKING:  # httpx loads with the first call, not with every start
    from local_tools.security import net

__all__ = ["HttpRequestArgs", "HttpRequestOutput", "http_request"]

MAX_RESPONSE_BYTES = 5 * 1024 * 1024


class HttpRequestArgs(Args):
    url: WebUrl = Field(description="The http:// or https:// URL.", max_length=8192)
    method: Literal["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"] = Field(
        "GET", description="The HTTP method."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Request headers, e.g. {'Accept': 'application/json'}.",
    )
    body: str | dict[str, Any] | list[Any] | None = Field(
        None,
        description="A JSON object or array (sent as JSON), or a string. Omit for none.",
    )
    timeout: float = Field(
        30.0, gt=0, le=_web.MAX_TIMEOUT, description="Seconds for the whole call."
    )


class HttpRequestOutput(Output):
    status_code: int = Field(description="The HTTP status; a 4xx/5xx is a result, not an error.")
    reason: str = Field(description="The status line's reason phrase, e.g. Not Found.")
    headers: dict[str, str] = Field(description="Response headers (lower-case names).")
    body: Any = Field(
        description="The response body: parsed JSON when the response is JSON, else text "
        "(empty for HEAD; a description for binary content)."
    )
    url: str = Field(description="The final URL, after redirects.")
    content_type: str = Field(description="The response's media type.")
    truncated: bool = omitted(description="True when the body was cut at 5 MB.")
    redirects: list[str] = omitted(description="The URLs redirected through, in order.")
    elapsed_ms: float = Field(description="Time for the whole exchange, in milliseconds.")


DESCRIPTION = """Make an HTTP request (GET, POST, PUT, DELETE, PATCH, HEAD) and return the status
code, headers and body.

For APIs: a JSON `body` (object, or a string holding JSON) is sent as JSON
(Content-Type application/json unless set); other strings as text. A JSON response
comes back parsed, other text as text; binary is described, not returned. A 4xx/5xx
answer is a result carrying its status_code. Redirects are followed (up to 5).
Network failures are NETWORK_ERROR naming the cause; past `timeout`, TIMEOUT. Local
network addresses are refused. To read a web page as text, use web_fetch."""


def _render(output: dict[str, Any]) -> str:
    head = (
        f"HTTP {output['status_code']} {output['reason']} ({output['content_type'] or 'no body'})"
    )
    body = output["body"]
    text = body if isinstance(body, str) else json.dumps(body, indent=2, ensure_ascii=False)
    shown = "\n".join(f"{k}: {v}" for k, v in output["headers"].items())
    return f"{head}\n{shown}\n\n{text}" if text else f"{head}\n{shown}"


@tool(
    "http_request",
    args=HttpRequestArgs,
    description=DESCRIPTION,
    permission="network:outbound",
    aliases=("HTTPRequest",),
    hints=Hints(open_world=True),
    toolset="web",
    subjects=_web.url_subject,
    render=_render,
    timeout=_web.TOOL_DEADLINE,
    output=HttpRequestOutput,
)
async def http_request(args: HttpRequestArgs, ctx: ToolContext) -> dict[str, Any]:
    headers = dict(args.headers)
    content = None
    if args.body is not None:
        named = {k.lower() for k in headers}
        if isinstance(args.body, str):
            content = args.body.encode("utf-8")
            if "content-type" not in named:
                headers["Content-Type"] = _text_type(args.body)
        else:
            content = json.dumps(args.body, ensure_ascii=False).encode("utf-8")
            if "content-type" not in named:
                headers["Content-Type"] = "application/json"
    response = await _web.fetch(
        ctx,
        args.method,
        args.url,
        timeout=args.timeout,
        max_bytes=MAX_RESPONSE_BYTES,
        headers=headers,
        content=content,
    )
    out: dict[str, Any] = {
        "status_code": response.status_code,
        "reason": response.reason,
        "headers": {k: ", ".join(response.headers.get_list(k)) for k in response.headers},
        "body": _body(response, ctx.limits.max_output_bytes),
        "url": response.url,
        "content_type": response.content_type,
        "elapsed_ms": round(response.elapsed_ms, 3),
    }
    if response.truncated:
        out["truncated"] = True
    if response.redirects:
        out["redirects"] = response.redirects
    return out


def _text_type(body: str) -> str:
    """JSON written as a string (all a strict-mode model can send) is sent as JSON."""
    if body.lstrip()[:1] in ("{", "["):
        try:
            json.loads(body)
            return "application/json"
        except ValueError:
            pass
    return "text/plain; charset=utf-8"


def _body(response: net.WebResponse, max_parsed: int) -> Any:
    data = response.content
    if not data:
        return ""
    ctype = response.content_type
    charset = None
    for part in response.headers.get("content-type", "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'")
    is_json = ctype == "application/json" or ctype.endswith("+json")
    textual = is_json or ctype.startswith("text/") or "xml" in ctype or "javascript" in ctype
    if textual:
        text, _ = decode_text(data, charset, sniff_meta=False)
    else:  # unlabelled or other types: text only if it is UTF-8 without NULs
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = "\x00"
        if "\x00" in text:
            return f"[binary content: {ctype or 'unknown type'}, {len(data)} bytes, not shown]"
    # Parsed JSON is not cut by the output limits, so only a body within them is parsed;
    # a longer one stays text (cut, with the whole saved to a file).
    if is_json and not response.truncated and len(data) <= max_parsed:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text

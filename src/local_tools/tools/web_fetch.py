"""web_fetch: a web page as Markdown (or text, or HTML), paged; images and PDFs too."""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import InvalidInput, NetworkError, PermissionDenied
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.tools import _web
from local_tools.tools._image import image_mime, image_size
from local_tools.tools._pdf import pdf_lines
from local_tools.web.convert import convert_html, decode_text
from local_tools.web.robots import ROBOTS_AGENT, robots_allows
from local_tools.web.url_arg import WebUrl

if TYPE_CHECKING:  # httpx loads with the first call, not with every start
    from local_tools.security import net

__all__ = ["WebFetchArgs", "WebFetchOutput", "web_fetch"]

MAX_PAGE_BYTES = 5 * 1024 * 1024
DEFAULT_LENGTH = 20_000
MAX_LENGTH = 100_000
_CACHE_KEY = "web_fetch.page"
_TEXT_TYPES = (
    "application/json", "application/ld+json", "application/xml", "application/javascript",
    "application/x-javascript", "application/ecmascript", "application/x-yaml",
    "application/yaml", "application/toml", "application/x-sh", "application/sql",
    "application/graphql", "application/x-ndjson", "application/rss+xml",
    "application/atom+xml", "application/xhtml+xml", "image/svg+xml",
)  # fmt: skip


class WebFetchArgs(Args):
    url: WebUrl = Field(description="The http:// or https:// URL to fetch.", max_length=8192)
    format: Literal["markdown", "text", "html"] = Field(
        "markdown",
        description="For HTML: markdown (main content), text, or html as served.",
    )
    timeout: float = Field(
        30.0, gt=0, le=_web.MAX_TIMEOUT, description="Seconds for the whole fetch."
    )
    start_index: int = Field(0, ge=0, description="Character offset: a previous call's next_index.")
    max_length: int = Field(
        DEFAULT_LENGTH,
        ge=1,
        le=MAX_LENGTH,
        description="Most characters to return.",
    )


class WebFetchOutput(Output):
    url: str = Field(description="The final URL, after redirects.")
    status_code: int = Field(description="The HTTP status of the final response.")
    content_type: str = Field(description="The response's media type, e.g. text/html.")
    content: str = omitted(description="Text: the characters from start_index on.")
    truncated: bool = omitted(
        description="True when more text follows (see next_index) or the page was cut."
    )
    start_index: int = omitted(description="Text: offset of the first character returned.")
    next_index: int = omitted(description="Text: start_index for the next part, when any.")
    total_length: int = omitted(description="Text: characters in the whole converted page.")
    title: str = omitted(description="HTML: the page's title.")
    format: str = omitted(description="Text: markdown, text or html.")
    charset: str = omitted(description="Text: the charset the page was decoded with.")
    page_cut: bool = omitted(
        description=f"True when the page was over {MAX_PAGE_BYTES // 2**20} MB and was cut."
    )
    redirects: list[str] = omitted(description="The URLs redirected through, in order.")
    pages: int = omitted(description="PDF: number of pages.")
    mime_type: str = omitted(description="Images: the image's MIME type.")
    image_base64: str = omitted(description="Images: the bytes in base64 (MCP: image content).")
    size: int = omitted(description="Images: size in bytes.")
    width: int = omitted(description="Images: width in pixels, when known.")
    height: int = omitted(description="Images: height in pixels, when known.")


DESCRIPTION = f"""Fetch a web page (http or https) and return its content as Markdown.

HTML becomes Markdown (page chrome dropped) or `format` text or html. JSON, XML and
plain text come as is, PDFs as text, images as an image; other binary is refused.
Long pages come in parts of `max_length` characters (default {DEFAULT_LENGTH}): call
again with start_index = next_index. Pages over {MAX_PAGE_BYTES // 2**20} MB are cut.
Redirects are followed (up to 5). A 4xx/5xx is an error with the status, reason and
Retry-After, so a block (403, 429) is not taken for an empty page. Local network
addresses are refused. For APIs (methods, headers, JSON) use http_request; to find
pages, web_search."""


def _render(output: dict[str, Any]) -> str:
    if "image_base64" in output:
        return (
            f"[Image from {output['url']}: {output['mime_type']}, {output['size']} bytes. "
            "The image is attached to this result as base64 (image_base64).]"
        )
    head = f"{output['url']} ({output['content_type']}"
    head += f", {output['pages']} PDF pages)" if "pages" in output else ")"
    if output.get("title"):
        head += f" — {output['title']}"
    notes = []
    if "next_index" in output:
        notes.append(
            f"(Characters {output['start_index']}-{output['next_index']} of "
            f"{output['total_length']}. Call again with start_index={output['next_index']} "
            "to continue.)"
        )
    if output.get("page_cut"):
        notes.append(f"(The page was larger than {MAX_PAGE_BYTES // 2**20} MB and was cut.)")
    body = output.get("content") or "(no text)"
    return "\n\n".join([head, body, *notes])


@tool(
    "web_fetch",
    args=WebFetchArgs,
    description=DESCRIPTION,
    permission="network:outbound",
    aliases=("webfetch", "fetch"),
    hints=Hints(read_only=True, idempotent=True, open_world=True),
    toolset="web",
    subjects=_web.url_subject,
    render=_render,
    timeout=_web.TOOL_DEADLINE,
    output=WebFetchOutput,
)
async def web_fetch(args: WebFetchArgs, ctx: ToolContext) -> dict[str, Any]:
    from local_tools.security import net  # httpx loads with the first call

    url = str(net.parse_url(args.url))
    cached = ctx.session.get(_CACHE_KEY)
    if args.start_index and cached is not None and cached[0] == (url, args.format):
        return _page(cached[1], args)  # paging on: the page converted last time
    if ctx.config.network.respect_robots:
        await _check_robots(ctx, url, args.timeout)
    response = await _web.fetch(ctx, "GET", url, timeout=args.timeout, max_bytes=MAX_PAGE_BYTES)
    if response.status_code >= 400:
        raise _http_error(response)
    whole = _whole(ctx, response, args.format)
    if "content" in whole:
        ctx.session[_CACHE_KEY] = ((url, args.format), whole)  # for the next part
        return _page(whole, args)
    return whole


def _whole(ctx: ToolContext, response: net.WebResponse, fmt: str) -> dict[str, Any]:
    """The whole response as output fields, text not yet paged."""
    ctype = response.content_type or "application/octet-stream"
    base: dict[str, Any] = {
        "url": response.url,
        "status_code": response.status_code,
        "content_type": ctype,
    }
    if response.redirects:
        base["redirects"] = response.redirects
    if response.truncated:
        base["page_cut"] = True
    data = response.content
    mime = image_mime(data[:64])
    if mime is not None:
        if response.truncated:
            raise InvalidInput(
                f"{response.url} is an image larger than {MAX_PAGE_BYTES // 2**20} MB; "
                "web_fetch returns images up to that size."
            )
        base.update(
            mime_type=mime, image_base64=base64.b64encode(data).decode("ascii"), size=len(data)
        )
        size = image_size(data, mime)
        if size is not None:
            base["width"], base["height"] = size
        return base
    if ctype == "application/pdf" or data.startswith(b"%PDF-"):
        if response.truncated:
            raise InvalidInput(
                f"{response.url} is a PDF larger than {MAX_PAGE_BYTES // 2**20} MB; "
                "download it with a command and read it with read_file."
            )
        lines, pages = pdf_lines(
            io.BytesIO(data),
            where=response.url,
            key=(response.url, len(data)),
            session=ctx.session,
            check=ctx.check_cancelled,
        )
        return {**base, "content": "".join(lines), "pages": pages, "format": "text"}
    html = ctype in ("text/html", "application/xhtml+xml") or (
        ctype in ("", "application/octet-stream") and data[:512].lstrip()[:1] == b"<"
    )
    if not (html or ctype.startswith("text/") or ctype in _TEXT_TYPES or ctype.endswith("+json")):
        raise InvalidInput(
            f"{response.url} is {ctype} ({len(data)} bytes), not text, HTML, a PDF or an "
            "image; web_fetch does not return other binary content."
        )
    charset = _charset(response.headers.get("content-type", ""))
    text, used = decode_text(data, charset, sniff_meta=html)
    out = {**base, "charset": used, "format": fmt if html else "text"}
    if html:
        converted = convert_html(text, fmt, base_url=response.url)  # type: ignore[arg-type]
        out["content"] = converted.content
        if converted.title:
            out["title"] = converted.title
    else:
        out["content"] = text
    return out


def _page(whole: dict[str, Any], args: WebFetchArgs) -> dict[str, Any]:
    text: str = whole["content"]
    total = len(text)
    if args.start_index and args.start_index >= total:
        raise InvalidInput(
            f"start_index {args.start_index} is past the end: the page has {total} characters."
        )
    end = min(total, args.start_index + args.max_length)
    out = {**whole, "content": text[args.start_index : end], "start_index": args.start_index}
    out["total_length"] = total
    out["truncated"] = end < total or bool(whole.get("page_cut"))
    if end < total:
        out["next_index"] = end
    return out


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def _http_error(response: net.WebResponse) -> NetworkError:
    status = response.status_code
    reason = response.reason or "no reason given"
    wait = _web.retry_after(response)
    what = {
        401: "the page needs a login",
        403: "the server refused this client (blocked, or a login is needed)",
        404: "no page at this URL",
        429: "rate limited: too many requests",
    }.get(status, "a server error" if status >= 500 else "the request was refused")
    message = f"HTTP {status} {reason} from {response.url}: {what}."
    if wait:
        message += f" Retry-After: {wait}."
    excerpt = " ".join(response.content[:2000].decode("utf-8", "replace").split())[:300]
    details: dict[str, Any] = {"status_code": status, "reason": reason, "url": response.url}
    if wait:
        details["retry_after"] = wait
    if excerpt:
        details["body_excerpt"] = excerpt
    return NetworkError(message, details=details)


async def _check_robots(ctx: ToolContext, url: str, timeout: float) -> None:
    from local_tools.security import net  # httpx loads with the first call

    target = net.parse_url(url)
    robots_url = str(target.copy_with(path="/robots.txt", query=None, fragment=None))
    try:
        response = await _web.fetch(ctx, "GET", robots_url, timeout=min(timeout, 10.0),
                                    max_bytes=512 * 1024)  # fmt: skip
        status, text = response.status_code, response.content.decode("utf-8", "replace")
    except NetworkError:
        status, text = 404, ""  # unreachable robots.txt: RFC 9309 treats it as missing
    if not robots_allows(status, text, url):
        raise PermissionDenied(
            f"{target.host}'s robots.txt does not allow '{ROBOTS_AGENT}' to fetch {url}, and "
            "[network] respect_robots is on. Do not retry; tell the user, or find the "
            "information elsewhere.",
            details={"robots_url": robots_url, "robots_status": status},
        )

"""browser_get_dom: the page's HTML structure under a selector, to a depth."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from local_tools.core.context import ToolContext
from local_tools.core.errors import NotFound
from local_tools.core.tool import Hints, omitted, tool
from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserGetDomArgs", "BrowserGetDomOutput", "browser_get_dom"]

MAX_LENGTH = 100_000


class BrowserGetDomArgs(_browser.TimeoutArgs):
    selector: str = Field("body", description="The element to start from.", max_length=2000)
    max_depth: int = Field(5, ge=1, le=50, description="Levels of elements below it to show.")
    max_length: int = Field(20_000, ge=100, le=MAX_LENGTH, description="Most characters to return.")


class BrowserGetDomOutput(_browser.PageOutput):
    dom: str = Field(description="An indented outline: tag#id.class [attributes] text.")
    truncated: bool = omitted(description="True when the outline was cut at max_length.")


DESCRIPTION = """The live DOM under `selector` as an indented outline of tags with id, classes, key
attributes and short text.

browser_snapshot is more compact for reading and acting; use this for selectors,
attributes and structure."""

_OUTLINE = """([el, maxDepth]) => {
  const keep = ['href', 'src', 'name', 'type', 'value', 'placeholder', 'role', 'aria-label',
                'for', 'action', 'alt', 'title'];
  const lines = [];
  const walk = (node, depth) => {
    let head = node.tagName.toLowerCase();
    if (node.id) head += '#' + node.id;
    if (typeof node.className === 'string' && node.className.trim())
      head += '.' + node.className.trim().split(/\\s+/).join('.');
    const attrs = keep.filter(a => node.hasAttribute(a))
      .map(a => `${a}="${String(node.getAttribute(a)).slice(0, 100)}"`);
    if (attrs.length) head += ' [' + attrs.join(' ') + ']';
    const text = Array.from(node.childNodes).filter(n => n.nodeType === 3)
      .map(n => n.textContent.trim()).join(' ').replace(/\\s+/g, ' ').slice(0, 100);
    if (text) head += ' ' + JSON.stringify(text);
    const kids = Array.from(node.children).filter(c => !['SCRIPT', 'STYLE'].includes(c.tagName));
    if (kids.length && depth >= maxDepth) head += ` (${kids.length} children)`;
    lines.push('  '.repeat(depth) + head);
    if (depth < maxDepth) kids.forEach(c => walk(c, depth + 1));
  };
  walk(el, 0);
  return lines.join('\\n');
}"""


def _render(output: dict[str, Any]) -> str:
    text = _browser.render_page(output) + "\n\n" + output["dom"]
    if output.get("truncated"):
        text += "\n(Cut at max_length: narrow the selector or lower max_depth.)"
    return text


@tool(
    "browser_get_dom",
    args=BrowserGetDomArgs,
    description=DESCRIPTION,
    hints=Hints(read_only=True),
    toolset="browser",
    render=_render,
    timeout=_browser.TOOL_DEADLINE,
    output=BrowserGetDomOutput,
)
async def browser_get_dom(args: BrowserGetDomArgs, ctx: ToolContext) -> dict[str, Any]:
    async def outline(browser: BrowserSession) -> dict[str, Any]:
        element = await browser.element(args.selector)
        handle = await element.element_handle()
        if handle is None:
            raise NotFound(f"No element matches {args.selector!r}.")
        dom = await browser.page.evaluate(_OUTLINE, [handle, args.max_depth])
        out = {**await _browser.page_info(browser), "dom": dom[: args.max_length]}
        if len(dom) > args.max_length:
            out["truncated"] = True
        return out

    return await _browser.call(ctx, outline, args.timeout)

"""browser_type: type text into a field."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, model_validator

from local_tools.tools import _browser

if TYPE_CHECKING:  # the browser engine loads with the first call
    from local_tools.browser import BrowserSession

__all__ = ["BrowserTypeArgs", "browser_type"]


class BrowserTypeArgs(_browser.ElementArgs):
    text: str = Field(description="The text to type.", max_length=100_000)
    delay: int = Field(0, ge=0, le=1000, description="Milliseconds between keys (0: fill).")
    clear: bool = Field(True, description="Replace the field's text (false: add to it).")
    submit: bool = Field(False, description="Press Enter afterwards.")

    @model_validator(mode="after")
    def _one_target(self) -> BrowserTypeArgs:
        if bool(self.ref) == bool(self.selector):
            raise ValueError("give exactly one of ref or selector")
        return self


DESCRIPTION = """Type text into an input, textarea or editable element (`ref` or `selector`).

Replaces the field's text unless clear=false; delay > 0 types key by key."""


@_browser.page_tool("browser_type", description=DESCRIPTION, args=BrowserTypeArgs)
async def browser_type(browser: BrowserSession, args: BrowserTypeArgs) -> None:
    element = await browser.element(args.selector, args.ref)
    if args.clear and not args.delay:
        await element.fill(args.text)
    else:
        if args.clear:
            await element.fill("")
        await element.press_sequentially(args.text, delay=args.delay)
    if args.submit:
        await element.press("Enter")

"""A real Chromium for the browser tools: one session per toolbox, driven by Playwright.

The tools (``tools/browser_*.py``) are thin modules over ``BrowserSession``; this
package knows nothing of the tool contract and raises the project's errors.
"""

from local_tools.browser.session import (
    BrowserSession,
    ConsoleEntry,
    FailedRequest,
    find_executable,
)

__all__ = ["BrowserSession", "ConsoleEntry", "FailedRequest", "find_executable"]

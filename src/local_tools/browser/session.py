"""One Chromium per toolbox, on a thread of its own, every request through the guard.

Why a thread with its own event loop: Playwright's objects belong to the loop that made
them, and a toolbox's calls do not all run on one loop (``Toolbox.run`` from inside a
running loop finishes each call with a fresh ``asyncio.run``). So the browser lives on
its own loop and each call is handed to it (``run``); the calling loop awaits the
result, under the call's deadline. The browser starts on the first call (lazy), ends
with ``close()`` (the toolbox's resources are closed with it) and, failing that, at
interpreter exit; Playwright's driver ends Chromium when its pipe closes.

The network rules (the guarding proxy, the route checks, `network:outbound` for the
pages' own navigations) are ``network_rules.NetworkRules``, which this class takes on.

Downloads land in the workspace's ``[browser] downloads`` folder only (``downloads``:
staged in a private directory, cancelled past ``max_download_mb``, written through the
jail under a safe, never-overwriting name); the call that started one reports it in its
notes when it ends within the call, browser_get_state lists them all.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from local_tools.browser.downloads import DownloadRecord, Downloads
from local_tools.browser.network_rules import FailedRequest, Gate, NetworkRules
from local_tools.browser.proxy import GuardProxy
from local_tools.core.errors import (
    ExecutionError,
    InvalidInput,
    NetworkError,
    NotFound,
    PermissionDenied,
    ToolError,
    ToolTimeout,
)
from local_tools.core.extras import require_extra
from local_tools.security import net

__all__ = ["BrowserSession", "ConsoleEntry", "FailedRequest", "Gate", "find_executable"]

T = TypeVar("T")
DEFAULT_VIEWPORT = (1280, 800)
MAX_ENTRIES = 200  # console messages and failed requests kept, newest last
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_START_TIMEOUT = 30.0
_CLOSED_WORDS = ("has been closed", "Target closed", "Browser closed", "crashed")


def find_executable(configured: str = "") -> str:
    """The Chromium to drive: `configured` (a path or a name on PATH), else Debian's
    /usr/bin/chromium, else a chromium or chrome on PATH; ExecutionError naming what
    was looked for when there is none."""
    if configured:
        found = configured if os.path.isfile(configured) else shutil.which(configured)
        if not found:
            raise ExecutionError(
                f"[browser] executable = {configured!r} is not a file nor a program on PATH. "
                "Name Chromium's path there, or remove the setting to use /usr/bin/chromium."
            )
        return found
    if os.path.isfile("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    for name in _CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ExecutionError(
        "No Chromium found (looked for /usr/bin/chromium and "
        f"{', '.join(_CHROMIUM_NAMES)} on PATH). Install it (Debian: apt-get install "
        "chromium) or set [browser] executable in local-tools.toml."
    )


@dataclass(frozen=True)
class ConsoleEntry:
    type: str  # log, info, warning, error, pageerror, ...
    text: str
    url: str


def _no_writes(path: str) -> str:
    return "no tool call has driven this browser yet, so no user's rules allow it"


_live: weakref.WeakSet[BrowserSession] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for session in list(_live):
        session.close()


class BrowserSession(NetworkRules):
    """A lazily started Chromium: `run(op)` runs `op(self)` on the browser's loop."""

    def __init__(
        self,
        executable: str,
        guard: net.Guard,
        *,
        headless: bool = True,
        viewport: tuple[int, int] = DEFAULT_VIEWPORT,
        downloads: Downloads | None = None,
        args: Sequence[str] = (),
    ) -> None:
        """`downloads`: where a page's downloads land (None: downloads are refused);
        `args`: more Chromium switches (the tests map host names with them).
        ExecutionError naming `pip install 'local-tools[browser]'` without Playwright."""
        require_extra("browser", "The browser toolset")
        self.executable = executable
        self.guard = guard
        self.headless = headless
        self.viewport = viewport
        self.downloads = downloads
        self.args = tuple(args)
        self.console: deque[ConsoleEntry] = deque(maxlen=MAX_ENTRIES)
        self.failed: deque[FailedRequest] = deque(maxlen=MAX_ENTRIES)
        self.downloaded: deque[DownloadRecord] = deque(maxlen=MAX_ENTRIES)
        # What the next result tells the model (a restart, a stopped navigation, a
        # download); kept across calls, since a page acts between them too.
        self.notes: list[str] = []
        self.gate: Gate | None = None
        # Why a navigation or connection was refused during the current call, if one was.
        self.refusal: str | None = None
        self.navigation_refusal: str | None = None
        self.network_error: str | None = None  # the proxy's, e.g. DNS, in the current call
        self.version = ""
        self._approved: set[tuple[str, str]] = set()  # (user, host) browser_navigate went to
        self._tasks: set[asyncio.Future[Any]] = set()  # downloads saving, pages being left
        self._proxy: GuardProxy | None = None
        self._adopted: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._playwright: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._page: Any = None
        self._page_crashed = False
        self._closing = False
        self._call_lock: asyncio.Lock | None = None
        _live.add(self)

    # -- calling ------------------------------------------------------------------

    async def run(
        self,
        op: Callable[[BrowserSession], Awaitable[T]],
        timeout: float,
        gate: Gate | None = None,
    ) -> T:
        """`op(self)` on the browser's loop, the browser started (or restarted) first;
        ToolTimeout past `timeout` seconds. What `op` returns is returned here. `gate`
        decides the pages' navigations from now on (the newest call's user and rules)."""
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(self._call(op, timeout, gate), loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout + 5)
        except (asyncio.TimeoutError, TimeoutError):
            future.cancel()
            raise _timed_out(timeout) from None

    def started(self) -> bool:
        return self._browser is not None

    @property
    def page(self) -> Any:
        return self._page

    async def _call(
        self, op: Callable[[BrowserSession], Awaitable[T]], timeout: float, gate: Gate | None
    ) -> T:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        if self._call_lock is None:
            self._call_lock = asyncio.Lock()
        async with self._call_lock:  # one call at a time drives the page
            if gate is not None:
                self.gate = gate
            self.refusal = self.navigation_refusal = self.network_error = None
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            try:
                await asyncio.wait_for(self._ensure_started(), _START_TIMEOUT)
                self._page.set_default_timeout(timeout * 1000)
                before = set(self._tasks)
                result = await asyncio.wait_for(op(self), timeout)
                # Downloads this call started: reported by it when they end in its time.
                started = self._tasks - before
                if started:
                    await asyncio.wait(started, timeout=max(0.1, deadline - loop.time()))
                    for record in list(self.downloaded)[-len(started) :]:
                        if record.status == "downloading":
                            self.notes.append(record.describe())
                if self.notes and isinstance(result, dict):
                    result["notes"] = [*self.notes, *result.get("notes", [])]
                    self.notes = []
                return result
            except (asyncio.TimeoutError, TimeoutError, PlaywrightTimeout):
                raise _timed_out(timeout) from None
            except PlaywrightError as exc:
                raise self._error(exc) from None

    def _error(self, exc: Exception) -> ToolError:
        message = str(exc).strip().split("\n")[0]
        if any(word in message for word in _CLOSED_WORDS):
            return ExecutionError(
                f"The browser closed or crashed during the call ({message}). The next browser "
                "call starts a new one."
            )
        if "ERR_BLOCKED_BY_CLIENT" in message or ("ERR_" in message and self.refusal):
            refused = self.refusal or "refused by the network guard"
            return PermissionDenied(f"The page was not loaded: {refused}")
        if "ERR_" in message and self.network_error:
            return NetworkError(f"The browser could not load the page: {self.network_error}")
        if "ERR_" in message:
            return ExecutionError(f"The browser could not load the page: {message}")
        return InvalidInput(f"The browser refused: {message}")

    # -- lifecycle ------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._closing = False
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()
                    loop.close()

                self._thread = threading.Thread(target=serve, name="browser", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    async def _ensure_started(self) -> None:
        if self._browser is not None and not self._browser.is_connected():
            self.notes.append(
                "The browser had closed or crashed; a new one was started (the previous "
                "page and its state are gone)."
            )
            await self._shutdown()
        if self._browser is None:
            await self._start()
        elif self._page is None or self._page.is_closed() or self._page_crashed:
            if self._page_crashed:
                self.notes.append("The page had crashed; a new blank page was opened.")
            await self._new_page()

    async def _start(self) -> None:
        from playwright.async_api import async_playwright

        self._playwright = await async_playwright().start()
        self._proxy = GuardProxy(self.guard, self._proxy_failed)
        port = await self._proxy.start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable,
                headless=self.headless,
                args=[
                    # Every connection, loopback included, through the guarding proxy:
                    # Chromium never resolves a page's host names itself.
                    f"--proxy-server=http://127.0.0.1:{port}",
                    "--proxy-bypass-list=<-loopback>",
                    # WebRTC would send UDP around the proxy: TCP through it only.
                    # WebRTC may use only the proxy (no UDP of its own, so no STUN/ICE
                    # packets to addresses nobody checked). The switch's real name: a
                    # "--force-" spelling is silently ignored.
                    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
                    *self.args,
                ],
                downloads_path=self.downloads.staging if self.downloads else None,
            )
        except Exception as exc:
            await self._shutdown()
            raise ExecutionError(
                f"Chromium ({self.executable}) did not start: {str(exc).splitlines()[0]}"
            ) from None
        self.version = self._browser.version
        width, height = self.viewport
        self._context = await self._browser.new_context(
            viewport={"width": width, "height": height},
            service_workers="block",  # a service worker's requests would bypass routing
            accept_downloads=self.downloads is not None,
        )
        await self._context.route("**/*", self._route)
        await self._context.route_web_socket("**/*", self._route_websocket)
        self._context.on("page", self._adopt)
        await self._new_page()

    async def _new_page(self) -> None:
        self._page_crashed = False
        self._adopt(await self._context.new_page())

    def _adopt(self, page: Any) -> None:
        """A page opened by the tools or by the page (a popup): it becomes the current one."""
        self._page = page
        if page in self._adopted:  # new_page() and the context's "page" event both call
            return
        self._adopted.add(page)
        page.on("console", lambda m: self.console.append(ConsoleEntry(m.type, m.text, page.url)))
        page.on(
            "pageerror", lambda e: self.console.append(ConsoleEntry("pageerror", str(e), page.url))
        )
        page.on("requestfailed", self._request_failed)
        page.on("request", self._redirected)
        page.on("download", self._download)
        page.on("crash", lambda _page: setattr(self, "_page_crashed", True))

    def _request_failed(self, request: Any) -> None:
        reason = request.failure or "failed"
        if any(f.url == request.url for f in list(self.failed)[-5:]):
            return  # the guard has listed it, with its reason
        self.failed.append(FailedRequest(request.url, request.method, reason))

    async def relaunch(self, headless: bool, viewport: tuple[int, int]) -> None:
        """Start again with other settings (browser_launch)."""
        await self._shutdown()
        self.headless, self.viewport = headless, viewport
        await self._start()

    async def _shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for thing in (self._context, self._browser):
            if thing is not None:
                with contextlib.suppress(Exception):  # already gone: nothing to close
                    await thing.close()
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
        if self._proxy is not None:
            await self._proxy.stop()
        self._playwright = self._browser = self._context = self._page = self._proxy = None

    def close(self) -> None:
        """End the browser and its thread (the toolbox's close, or interpreter exit)."""
        with self._lock:
            loop, thread, self._loop = self._loop, self._thread, None
        if loop is None or thread is None:
            return
        self._closing = True
        if loop.is_running():
            done: Future[None] = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            # A browser that will not close: the driver's exit ends it.
            with contextlib.suppress(Exception):
                done.result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if self.downloads is not None:
            self.downloads.close()

    # -- downloads and background work ----------------------------------------------

    def _download(self, download: Any) -> None:
        if self.downloads is None:
            return
        record = DownloadRecord(download.url, download.suggested_filename, "downloading")
        self.downloaded.append(record)
        gate = self.gate
        permit = gate.may_write if gate is not None else _no_writes
        self._track(self.downloads.watch(download, record, self._download_ended, permit))

    def _download_ended(self, record: DownloadRecord) -> None:
        self.notes.append(record.describe())

    def _track(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the page to be left after a refused redirect (browser_navigate)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)

    # -- what the tools share ---------------------------------------------------------------

    def locator(self, selector: str | None = None, ref: str | None = None) -> Any:
        """The element a tool names, by a snapshot ref (`e12`) or a CSS selector."""
        if ref:
            return self._page.locator(f"aria-ref={ref}")
        if selector:
            return self._page.locator(selector).first
        raise InvalidInput("Name the element: a ref from browser_snapshot, or a selector.")

    async def element(self, selector: str | None = None, ref: str | None = None) -> Any:
        """`locator(...)`, NotFound when nothing on the page matches it now."""
        found = self.locator(selector, ref)
        try:
            count = await found.count()
        except Exception as exc:
            message = str(exc).split("\n")[0]
            if ref:
                count = 0
            else:
                raise InvalidInput(f"Not a valid selector {selector!r}: {message}") from None
        if not count:
            what = f"ref {ref}" if ref else f"selector {selector!r}"
            raise NotFound(
                f"No element on {self._page.url} matches {what}. Take a browser_snapshot "
                "for the current refs (they change when the page does)."
            )
        return found


def _timed_out(timeout: float) -> ToolTimeout:
    return ToolTimeout(
        f"The browser did not finish within {timeout:g} s. The page may be slow or waiting "
        "on something: retry with a larger timeout, or check browser_get_state.",
        details={"timeout": timeout},
    )

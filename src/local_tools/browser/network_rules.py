"""The network rules of the browser's pages, taken on by ``BrowserSession``.

In three layers:

- Every connection goes through ``proxy.GuardProxy``, a loopback proxy on this loop that
  Chromium must use for everything, loopback included. It resolves each host with
  ``net.Guard`` (the web tools' check and resolver) and connects to the address it
  checked, so Chromium never resolves a page's names itself: DNS rebinding, redirect
  hops, websockets, workers and preconnects all meet the guard at connect time. WebRTC
  may use TCP through it only (no UDP around it).
- Every request Playwright routes (the page's requests, not redirect hops) is checked
  first by ``_route``: only http(s), ws(s), data:, blob: and about: URLs load. A
  navigation's (and a websocket's) address is checked there too, for a clear early
  refusal; a subresource's only by the proxy, so a name is looked up once. Refusals are
  listed among the failed requests with the guard's reason; a navigation refused is
  PermissionDenied, a name that does not resolve NetworkError.
- ``network:outbound``: browser_navigate's host is authorized by the runner like
  web_fetch's (and may ask). The top-level navigations a page makes itself (a link, a
  form, a script, a popup, a redirect) are decided by the same policy without asking
  (``Gate``, from the newest call: nobody can be asked from inside a page load): allowed
  when the rules allow the host or browser_navigate was allowed to go there in this
  browser for this user; denied: stopped; ask: stopped, and the result's notes tell the
  model to call browser_navigate with that URL (which asks). Frames and subresources
  pass the address guard only.

Known limits: Playwright does not let a redirect hop be held (it continues them itself),
so a hop to a host the rules do not allow is seen as it is sent: its address was checked
by the proxy, but the request reaches that host; the page is then taken to about:blank
and the call says why. Chromium's own background requests (update checks) go through
the proxy's address guard but not the rules. A configured ``[network] proxy``
is not used by the browser.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from local_tools.core.errors import PermissionDenied, ToolError
from local_tools.security import net

__all__ = ["FailedRequest", "Gate", "NetworkRules"]

_LOCAL_SCHEMES = frozenset({"data", "blob", "about"})


@dataclass(frozen=True)
class FailedRequest:
    url: str
    method: str
    reason: str  # the guard's refusal, or the network error


@dataclass(frozen=True)
class Gate:
    """The `network:outbound` decision for the pages' own top-level navigations, from
    the call that drives the browser (the route handler cannot ask anyone mid-request)."""

    user: str
    # host -> None when the policy allows it, else a sentence for the model saying why
    # the navigation was stopped and what to do (deny: the rule; ask: browser_navigate).
    decide: Callable[[str, str], str | None]  # (host, url)
    # A download's workspace path -> None when `write:file` allows it without asking,
    # else why it is not saved (a page cannot ask either).
    may_write: Callable[[str], str | None] = lambda path: None


class NetworkRules:
    """The route handlers and the proxy's callback; the session holds the state."""

    guard: net.Guard
    gate: Gate | None
    failed: deque[FailedRequest]
    notes: list[str]
    refusal: str | None
    navigation_refusal: str | None
    network_error: str | None
    _approved: set[tuple[str, str]]
    _page: Any

    def _track(self, work: Awaitable[Any]) -> None:
        raise NotImplementedError  # the session's: background work it waits for

    async def _route(self, route: Any) -> None:
        request = route.request
        if request.is_navigation_request():
            # A navigation's address is checked here too, for a clear early refusal; a
            # subresource's only by the proxy as it connects (one DNS lookup, not two).
            refusal = await self._refusal(request.url)
            if refusal is None and _main_frame(request):
                refusal = self._navigation_refusal(request.url)
        else:
            refusal = _scheme_refusal(request.url)
        if refusal is not None:
            self._refused(request.url, request.method, refusal)
            await route.abort("blockedbyclient")
            return
        await route.fallback()

    def _refused(self, url: str, method: str, reason: str) -> None:
        self.failed.append(FailedRequest(url, method, reason))
        self.refusal = reason

    def _proxy_failed(self, target: str, method: str, reason: str, refused: bool) -> None:
        # The route handler refuses navigations first; the proxy refuses the rest
        # (subresources, redirect hops, rebinding names, workers' sockets), each once
        # even when Chromium retries it.
        if not refused:
            # A name that does not resolve: Chromium lists the failed request itself
            # (and its own background requests, update checks, are not the page's).
            self.network_error = reason
        elif not any((f.url, f.reason) == (target, reason) for f in list(self.failed)[-5:]):
            self._refused(target, method, reason)

    def _navigation_refusal(self, url: str) -> str | None:
        """Why the page may not go to `url` by itself, by the `network:outbound` rules:
        allowed when the policy allows the host or browser_navigate went there."""
        gate = self.gate
        if gate is None or urlsplit(url).scheme.lower() in _LOCAL_SCHEMES:
            return None
        host = net.url_host(url)
        if (gate.user, host) in self._approved:
            return None
        try:
            why = gate.decide(host, url)
        except Exception as exc:  # a broken check fails closed, saying why
            why = (
                f"The page's navigation to {url} was stopped: the rules could not be read ({exc})."
            )
        if why is not None:
            self.notes.append(why)
            self.navigation_refusal = why
        return why

    def approve(self, url: str) -> None:
        """browser_navigate was allowed to go to `url`: the pages may go to its host."""
        if self.gate is not None:
            self._approved.add((self.gate.user, net.url_host(url)))

    def _redirected(self, request: Any) -> None:
        """A redirect hop of a top-level navigation: Playwright lets it through without
        routing it (the proxy has checked its address), so the rules are applied here,
        as soon as it is known: a host they do not allow, the page is taken off it."""
        if request.redirected_from is None or not request.is_navigation_request():
            return
        if not _main_frame(request):
            return
        refusal = self._navigation_refusal(request.url)
        if refusal is not None:
            self._refused(request.url, request.method, refusal)
            try:
                page = request.frame.page
            except Exception:  # a popup's frame not there yet: the current page is it
                page = self._page
            self._track(self._leave(page))

    async def _leave(self, page: Any) -> None:
        with contextlib.suppress(Exception):  # the page may be closing: nothing to leave
            await page.goto("about:blank")

    async def _route_websocket(self, ws: Any) -> None:
        refusal = await self._refusal(ws.url)
        if refusal is not None:
            self.failed.append(FailedRequest(ws.url, "WEBSOCKET", refusal))
            await ws.close(code=1008, reason="refused by local-tools")
            return
        ws.connect_to_server()

    async def _refusal(self, url: str) -> str | None:
        """Why the page may not load `url`, or None."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme in _LOCAL_SCHEMES or scheme not in ("http", "https", "ws", "wss"):
            return _scheme_refusal(url)
        host = parts.hostname or ""
        try:
            port = parts.port or (443 if scheme in ("https", "wss") else 80)
            await self.guard.addresses(host, port, timeout=10)
        except PermissionDenied as exc:
            return exc.message
        except ToolError as exc:
            # DNS failed or timed out: not a refusal. The proxy's own lookup fails too and
            # Chromium reports the request; the reason is kept for the call's error.
            self.network_error = exc.message
            return None
        except ValueError as exc:
            return f"not a valid URL ({exc})"
        return None


def _scheme_refusal(url: str) -> str | None:
    scheme = urlsplit(url).scheme.lower()
    if scheme in _LOCAL_SCHEMES or scheme in ("http", "https", "ws", "wss"):
        return None
    return f"{scheme}: URLs are not loaded by the browser tools"


def _main_frame(request: Any) -> bool:
    try:
        return request.frame.parent_frame is None
    except Exception:  # a popup's first request comes before its frame: top-level too
        return True

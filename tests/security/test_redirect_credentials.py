"""A redirect to another site never carries the caller's credentials (issue: "Security,
second pass", Medium): when the origin changes only headers that describe the request
go on (an allow-list), not only without Authorization, Cookie and Proxy-Authorization."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import net_server
from local_tools.security.net import Guard, request

ALLOWED = "127.0.0.2"
SECRET = "s3cretV4lue"
CREDENTIAL_HEADERS = [
    "Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key", "PRIVATE-TOKEN",
    "X-Auth-Token", "X-Goog-Api-Key", "X-Amz-Security-Token", "X-Session-Id", "X-Secret",
    "X-Hub-Signature", "X-JFrog-Art-Api", "X-Honeycomb-Team", "X-Ovh-Consumer", "X-Pwd",
]  # fmt: skip


@pytest.fixture
def sites() -> Iterator[tuple[net_server.Server, net_server.Server]]:
    first, other = net_server.serve(ALLOWED), net_server.serve(ALLOWED)
    for server in (first, other):
        server.routes["/echo"] = net_server.echo
    first.routes["/out"] = net_server.redirect(other.url("/echo"))
    first.routes["/in"] = net_server.redirect("/echo")
    yield first, other
    first.stop()
    other.stop()


@pytest.mark.parametrize("name", CREDENTIAL_HEADERS)
def test_credential_headers_stay_behind_on_a_redirect_to_another_site(
    sites: tuple[net_server.Server, net_server.Server], name: str
) -> None:
    first, other = sites
    headers = {name: SECRET, "Accept-Language": "kept-value"}
    guard = Guard([ALLOWED])
    moved = asyncio.run(request("GET", first.url("/out"), guard=guard, headers=headers, timeout=5))
    assert moved.url == other.url("/echo")
    assert SECRET.encode() not in moved.content
    assert b"kept-value" in moved.content  # other headers go on
    same = asyncio.run(request("GET", first.url("/in"), guard=guard, headers=headers, timeout=5))
    assert SECRET.encode() in same.content  # the same site still gets them

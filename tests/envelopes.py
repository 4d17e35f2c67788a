"""Assertions on envelopes, shared by the tests."""

from __future__ import annotations

from typing import Any


def ok(envelope: dict[str, Any]) -> dict[str, Any]:
    """The output of a successful envelope, with a readable failure otherwise."""
    assert envelope["success"], envelope.get("error")
    return envelope["output"]


def err(envelope: dict[str, Any], code: str) -> str:
    assert not envelope["success"], f"expected {code}, got success: {envelope.get('output')}"
    assert envelope["error"]["error_code"] == code, envelope["error"]
    return envelope["error"]["message"]

"""Schemathesis hooks for tests/transports/test_openapi_schemathesis.py, loaded by the
`st` CLI in its own venv (`SCHEMATHESIS_HOOKS`), never by pytest.

`no_internal_error`: a 200 envelope whose error is INTERNAL_ERROR is a tool that crashed
on its input. Not a 500 (the runner catches it), but the issue asks that no input be
one, and schemathesis then prints the call that reproduces it."""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.check
def no_internal_error(ctx: Any, response: Any, case: Any) -> bool | None:
    if response.status_code != 200:
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        return None  # content_type_conformance and the schema check say what is wrong
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("error_code") == "INTERNAL_ERROR":
        raise AssertionError(f"the tool crashed: {error.get('message')}")
    return None

"""Elicitation on MCP 2026-07-28: no server-to-client requests, so a question ends the round.

The call is run until the asker needs an answer it does not have; `InputRequired`
then carries an `InputRequiredResult` back to the client, which asks its person and
retries the same tools/call with the answers. The retry re-runs the call from the
start (nothing has run yet: the runner asks before the tool acts) and answers the
questions from what the client sent back. A call made of many actions (a task's
subagent calls, resumed where the ask stopped it) keys each answer by the action it
was given for (interact.base.ASKING_FOR), so one answer never covers another action.
Answers from earlier rounds travel in `request_state`, signed so a client cannot
forge answers for another call.

Imported only by the MCP transport (it needs the SDK's types).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from local_tools.interact.base import ASKING_FOR

__all__ = ["InputRequired", "RoundTripElicit"]

STATE_TTL = 600.0  # seconds a signed request_state stays valid


class InputRequired(BaseException):
    """Ends the round with a question. A BaseException so neither the policy nor the
    runner turns it into a denial or an error envelope on its way out."""

    def __init__(self, result: types.InputRequiredResult) -> None:
        super().__init__("waiting for the person's answer")
        self.result = result


class RoundTripElicit:
    """Per server: the key that signs `request_state`."""

    def __init__(self) -> None:
        self._secret = os.urandom(32)

    def start(self, params: types.CallToolRequestParams) -> _Round:
        call = _digest({"name": params.name, "arguments": params.arguments or {}})
        answers = self._decode(params.request_state, call)
        for key, response in (params.input_responses or {}).items():
            if isinstance(response, types.ElicitResult):
                answers[key] = [response.action, response.content]
        return _Round(self, call, answers)

    def _encode(self, call: str, answers: dict[str, Any]) -> str:
        stamped = [call, answers, time.time()]
        body = base64.urlsafe_b64encode(json.dumps(stamped).encode()).decode()
        return f"{body}.{self._sign(body)}"

    def _decode(self, state: str | None, call: str) -> dict[str, Any]:
        body, _, sig = (state or "").partition(".")
        if not body or not hmac.compare_digest(sig, self._sign(body)):
            return {}  # absent, forged or from an earlier server process: ask again
        try:
            state_call, answers, stamp = json.loads(base64.urlsafe_b64decode(body))
        except (ValueError, TypeError):
            return {}
        # A "once" answer is for this retry, not for the same call an hour later.
        fresh = isinstance(stamp, (int, float)) and time.time() - stamp < STATE_TTL
        ok = fresh and state_call == call and isinstance(answers, dict)
        return dict(answers) if ok else {}

    def _sign(self, body: str) -> str:
        return hmac.new(self._secret, body.encode(), hashlib.sha256).hexdigest()


class _Round:
    def __init__(self, owner: RoundTripElicit, call: str, answers: dict[str, Any]) -> None:
        self._owner = owner
        self._call = call
        self._answers = answers

    async def elicit(
        self, message: str, schema: dict[str, Any]
    ) -> tuple[str, Mapping[str, Any] | None]:
        asked: dict[str, Any] = {"message": message, "schema": schema}
        action = ASKING_FOR.get()
        if action is not None:  # one of many actions of this call: its answer is its own
            asked["action"] = action
        key = _digest(asked)
        if key in self._answers:
            action, content = self._answers[key]
            return str(action), content if isinstance(content, Mapping) else None
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
        )
        raise InputRequired(
            types.InputRequiredResult(
                input_requests={key: request},
                request_state=self._owner._encode(self._call, self._answers),
            )
        )


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:24]

"""Subagent tests: a scripted model server and a Toolbox whose [models] points at it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from local_tools import Toolbox
from model_server import Request, ScriptedModel, model_config


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as srv:
        yield srv


def _task_tools() -> list[Any]:
    """`task` for Toolbox(tools=...) until tools/__init__.py registers it."""
    from local_tools.tools import builtin_tools
    from local_tools.tools.task import task

    return [] if any(t.name == "task" for t in builtin_tools()) else [task]


@pytest.fixture
def make_tb(make_toolbox: Any, model: ScriptedModel) -> Any:
    def make(
        api: str = "openai",
        stream: bool = True,
        *,
        task: dict[str, Any] | None = None,
        models: dict[str, Any] | None = None,
        **extra: Any,
    ) -> Toolbox:
        config = model_config(model, api=api, stream=stream, **(models or {}))
        config["task"].update(task or {})
        config.update(extra)
        return make_toolbox(config, tools=_task_tools())  # type: ignore[no-any-return]

    return make


class Wire:
    """Reading what the client sent the scripted model, whichever API."""

    @staticmethod
    def tool_results(req: Request) -> list[str]:
        """The texts of the tool results a request carries, whichever API."""
        out: list[str] = []
        for message in req.body["messages"]:
            if req.api == "openai":
                if message.get("role") == "tool":
                    out.append(_text(message.get("content")))
                continue
            for block in message.get("content") if isinstance(message.get("content"), list) else ():
                if block.get("type") == "tool_result":
                    out.append(_text(block.get("content")))
        return out

    @staticmethod
    def user_texts(req: Request) -> list[str]:
        """The user's own messages (not tool results) a request carries."""
        out: list[str] = []
        for message in req.body["messages"]:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
                continue
            texts = [b.get("text", "") for b in content if b.get("type") == "text"]
            if texts:
                out.append("".join(texts))
        return out

    @staticmethod
    def offered(req: Request) -> set[str]:
        """The names of the tools a request offers the model."""
        names = set()
        for spec in req.body.get("tools") or ():
            names.add(spec["function"]["name"] if req.api == "openai" else spec["name"])
        return names

    @staticmethod
    def system_text(req: Request) -> str:
        if req.api == "anthropic":
            system = req.body.get("system")
            if isinstance(system, list):
                return "".join(b.get("text", "") for b in system)
            return str(system or "")
        first = req.body["messages"][0]
        return _text(first.get("content")) if first.get("role") in ("system", "developer") else ""


@pytest.fixture
def wire() -> type[Wire]:
    return Wire


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return json.dumps(content)

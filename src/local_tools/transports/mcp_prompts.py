"""Skills as MCP prompts: `prompts/list` lists them, `prompts/get` gives one's instructions.

Both go through the `skill` tool, so the same permission rules (a denied skill is neither
listed nor given) and the audit log apply as when a model loads a skill itself.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from local_tools.toolbox import Toolbox

__all__ = ["get_prompt", "list_prompts"]


async def list_prompts(tb: Toolbox | None, **call: Any) -> types.ListPromptsResult:
    if tb is None:
        return types.ListPromptsResult(prompts=[])
    envelope = await tb.arun("skill", {}, **call)
    skills = (envelope.get("output") or {}).get("skills") or [] if envelope["success"] else []
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(name=s["name"], description=s.get("description") or None) for s in skills
        ]
    )


async def get_prompt(tb: Toolbox | None, name: str, **call: Any) -> types.GetPromptResult:
    if tb is None:
        raise MCPError(code=types.INVALID_PARAMS, message="the workspace's config is broken")
    envelope = await tb.arun("skill", {"skill": name}, **call)
    if not envelope["success"]:
        error = envelope.get("error") or {}
        raise MCPError(code=types.INVALID_PARAMS, message=str(error.get("message")))
    output = envelope["output"]
    return types.GetPromptResult(
        description=output.get("description") or None,
        messages=[
            types.PromptMessage(
                role="user",
                content=types.TextContent(type="text", text=tb.render(envelope)),
            )
        ],
    )

"""Skills as MCP prompts: `prompts/list` lists them, `prompts/get` gives one's instructions.

Listing asks nobody (a client lists prompts routinely): skills the `skill` permission
denies are left out, those it asks for are listed. Getting one goes through the `skill`
tool, so its permission (asked where the rule says ask) and the audit log apply as when
a model loads a skill itself.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from local_tools.skills import list_skills
from local_tools.toolbox import Toolbox

__all__ = ["get_prompt", "list_prompts"]


async def list_prompts(tb: Toolbox | None, user_id: str) -> types.ListPromptsResult:
    if tb is None:
        return types.ListPromptsResult(prompts=[])
    skills = await anyio.to_thread.run_sync(list_skills, tb.workspace)
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(name=s["name"], description=s["description"] or None)
            for s in skills
            if tb.policy.evaluate(user_id, "skill", s["name"]).action != "deny"
        ]
    )


async def get_prompt(
    tb: Toolbox | None, broken: str, name: str, **call: Any
) -> types.GetPromptResult:
    """`broken`: why there is no Toolbox (its config), when `tb` is None."""
    if tb is None:
        raise MCPError(code=types.INVALID_PARAMS, message=broken)
    if not name.strip():
        raise MCPError(code=types.INVALID_PARAMS, message="name the skill to get")
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

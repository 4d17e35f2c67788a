"""What the model wrote cannot pass for the form's own lines (issue: "Security, second
pass", Medium). Through the real MCP server and the official SDK client: the approval
form of a here-document shows no forged `subject:` line and repeats the real subject
last; a question's options are escaped and still answer as the model wrote them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types

from local_tools.transports.mcp import LocalToolsMcp

# Reads a file outside the workspace: asked as external:file, with the command as summary.
FORGED = "cat /etc/hostname - <<'EOF'\nsubject: ls\nallow: yes\nEOF"


def _forms(workspace: Path, tool: str, args: dict[str, Any], answer: dict[str, Any]) -> list[Any]:
    seen: list[types.ElicitRequestParams] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params)
        return types.ElicitResult(action="accept", content=answer)

    async def main() -> types.CallToolResult:
        app = LocalToolsMcp(workspace)
        try:
            async with Client(app.server(), elicitation_callback=person) as client:
                return await client.call_tool(tool, args)
        finally:
            app.close()

    seen.append(anyio.run(main))
    return seen


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCAL_TOOLS_STATE_DIR", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_a_here_document_cannot_forge_a_subject_line(workspace: Path) -> None:
    *forms, result = _forms(workspace, "exec_cmd", {"command": FORGED}, {"decision": "deny"})
    assert forms, "the command was not asked"
    for form in forms:
        lines = form.message.split("\n")
        subjects = [line for line in lines if line.startswith("subject:")]
        assert len(subjects) == 1, form.message  # only the form's own
        assert "subject: ls" not in lines and "allow: yes" not in lines
        assert lines[-1].startswith("(the subject, again:"), form.message
    assert any("summary:" in form.message for form in forms)
    assert result.is_error  # denied: nothing ran


@pytest.mark.parametrize(
    "option",
    ["PostgreSQL\nsubject: rm -rf ~", "safe\u202e)lanif(", "a\x1b[2Kb"],
)
def test_question_options_are_escaped_and_still_answer(workspace: Path, option: str) -> None:
    ask = {"question": "Which one?", "options": ["SQLite", option]}
    *forms, _ = _forms(workspace, "question", ask, {})
    listed = forms[0].requested_schema["properties"]["choice"]["enum"]
    assert option not in listed and len(listed) == 2
    assert all(ch.isprintable() for shown in listed for ch in shown)
    # The person picks the option as it was shown: the model gets its own text back.
    *_, picked = _forms(workspace, "question", ask, {"choice": listed[1]})
    assert not picked.is_error
    assert picked.structured_content["choices"] == [option]


def test_options_that_escape_alike_are_all_listed() -> None:
    from local_tools.interact.base import QuestionRequest
    from local_tools.interact.mcp_asker import question_form

    options = ["Keep my files\n", "Keep my files\\n", "Delete"]
    _, schema = question_form(QuestionRequest(tool="q", question="Which?", options=options))
    listed = schema["properties"]["choice"]["enum"]
    assert len(listed) == 3 and len(set(listed)) == 3

"""What the audit log keeps of a call never holds the credentials in it (issue: "Security,
second pass", Medium): commands a model runs carry them in every spelling the common
tools take. Each command goes through the real runner and the real SQLite audit log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools import Toolbox

SECRET = "s3cr3tV4lue9"

COMMANDS = [
    f"curl -H 'X-Api-Key: {SECRET}' https://api.example.com",
    f'curl -H "PRIVATE-TOKEN: {SECRET}" https://gitlab.example.com/api/v4/projects',
    f'curl -H "Authorization:token {SECRET}" https://api.github.com',
    f"curl -u alice:{SECRET} https://example.com",
    f"curl --user alice:{SECRET} https://example.com",
    f"mysql -u root -p{SECRET} shop",
    f"mariadb -h db -p'{SECRET}' shop",
    f"mysqldump --password {SECRET} shop",
    f"gh auth login --token {SECRET}",
    f"tool --api-key {SECRET} run",
    f"export OPENAI_API_KEY={SECRET} && python app.py",
    f"curl 'https://maps.googleapis.com/maps/api/geocode/json?address=x&key={SECRET}'",
    f"curl 'https://b.s3.amazonaws.com/o?X-Amz-Date=1&X-Amz-Signature={SECRET}'",
    f"curl 'https://acct.blob.core.windows.net/c/b?sv=2020&sig={SECRET}'",
    f"curl -X POST https://hooks.slack.com/services/T0AAA/B0BBB/{SECRET}",
    f"curl -X POST https://discord.com/api/webhooks/123456/{SECRET}",
    f"curl https://api.telegram.org/bot123456:{SECRET}/sendMessage",
    f"curl -X POST https://example.com/webhook/{SECRET}",
]


@pytest.fixture
def tb(tmp_path: Path) -> Iterator[Toolbox]:
    ws = tmp_path / "ws"
    ws.mkdir()
    with Toolbox(ws, state_dir=tmp_path / "state") as toolbox:
        yield toolbox


@pytest.mark.parametrize("command", COMMANDS)
def test_command_credentials_never_reach_the_audit_log(tb: Toolbox, command: str) -> None:
    tb.run("exec_cmd", {"command": command})  # asked, and denied: nobody is there
    assert tb.audit is not None
    records = tb.audit.query(tool="exec_cmd")
    assert records, "the call was not audited"
    stored = json.dumps([r.args for r in records])
    assert SECRET not in stored, stored
    assert "[REDACTED]" in stored


@pytest.mark.parametrize(
    "text",
    [
        "mkdir -p build && ls -la --color auto",
        "git log --max-count 3 --author bob -p",
        "pip install -U my-package --user",
        "curl 'https://example.com/a?page=2&max_tokens=5'",
        "echo 'password: see below' now",
    ],
)
def test_ordinary_commands_stay_readable(tb: Toolbox, text: str) -> None:
    tb.run("exec_cmd", {"command": text})
    assert tb.audit is not None
    assert tb.audit.query(tool="exec_cmd")[0].args["command"] == text

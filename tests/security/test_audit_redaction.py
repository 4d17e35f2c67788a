"""What the audit log keeps of a call never holds the credentials in it (issue: "Security,
second pass", Medium): commands a model runs carry them in every spelling the common
tools take. Each command goes through the real runner and the real SQLite audit log.
"""

from __future__ import annotations

import json
import sqlite3
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


def test_a_record_keeps_about_64_kb_of_arguments(tb: Toolbox) -> None:
    """Every call is audited, unknown tools too: 2 MB of arguments per call must not all
    be redacted and stored (from the re-review of #27)."""
    big = {"x": [("://" * 2000)[:4096]] * 500}
    tb.run("no_such_tool", big)
    assert tb.audit is not None
    (record,) = tb.audit.query(tool="no_such_tool")
    stored = json.dumps(record.args)
    assert len(stored) < 80_000
    assert "more items]" in stored


def test_the_log_keeps_the_newest_calls_within_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from local_tools.core import audit

    monkeypatch.setattr(audit, "MAX_LOG_BYTES", 2 * 1024 * 1024)  # 2 MB, to fill it fast
    monkeypatch.setattr(audit, "_PRUNE_EVERY", 20)
    ws = tmp_path / "ws"
    ws.mkdir()
    with Toolbox(ws, state_dir=tmp_path / "state") as tb:
        for n in range(200):  # ~60 KB each: 12 MB unpruned
            tb.run("no_such_tool", {"n": n, "x": ["y" * 4000] * 15})
        assert tb.audit is not None
        newest = tb.audit.query(tool="no_such_tool", limit=1)[0]
        assert newest.args["n"] == 199
    conn = sqlite3.connect(tmp_path / "state" / "audit.sqlite")
    pages, free, size = (
        conn.execute(f"PRAGMA {p}").fetchone()[0]
        for p in ("page_count", "freelist_count", "page_size")
    )
    rows = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
    conn.close()
    assert (pages - free) * size <= 3 * 1024 * 1024
    assert rows < 200


MORE_COMMANDS = [
    f"curl --header 'PRIVATE-TOKEN:{SECRET}' https://gitlab.example.com",
    f"curl -H X-Api-Key:{SECRET} https://api.example.com",
    f"curl -uadmin:{SECRET} https://example.com",
    f"curl --user=admin:{SECRET} https://example.com",
    f"curl --proxy-user admin:{SECRET} https://example.com",
    f"DB_PASS={SECRET} ./run",
    f"MYSQL_PWD={SECRET} mysql shop",
    f"API_AUTH={SECRET} ./deploy",
    f"curl -H 'X-Auth: {SECRET}' https://example.com",
]


@pytest.mark.parametrize("command", MORE_COMMANDS)
def test_more_spellings_never_reach_the_audit_log(tb: Toolbox, command: str) -> None:
    """From the re-review of #27: these reached the log verbatim."""
    tb.run("exec_cmd", {"command": command})
    assert tb.audit is not None
    stored = json.dumps([r.args for r in tb.audit.query(tool="exec_cmd")])
    assert SECRET not in stored, stored

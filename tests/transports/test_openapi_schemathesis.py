"""Schemathesis against `serve http`'s own `/openapi.json`: a real server process on
loopback, the `st` CLI generating requests from the document (the coverage phase's
boundary and wrong-typed values, then fuzzing), with a fixed seed and a bounded number
of examples per operation.

What it asserts: no answer is a 500; every answer's status, content type and body are
the ones the document declares for that route (the guard's refusals included); and no
tool answers INTERNAL_ERROR (`schemathesis_hooks.py`), which is a crash on its input even
inside a 200 envelope.

Schemathesis runs from its own venv, `.venv-schemathesis` (pinned by
tests/schemathesis-requirements.txt, made by `make test`): it needs a newer hypothesis
than the dev extra pins and would move starlette and pytest in ours.

The tools run for real on a temporary workspace, so the server's config takes away what
reaches outside it: commands, the network and deleting are denied, the browser and system
toolsets are off, and with nobody to ask every `ask` is denied."""

from __future__ import annotations

import os
import re
import subprocess
import time
import xml.etree.ElementTree as ET
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from spawned_http import spawn_http_server

ROOT = Path(__file__).resolve().parents[2]
ST = ROOT / ".venv-schemathesis" / "bin" / "st"
HOOKS_DIR = Path(__file__).resolve().parent
SEED = 22
MAX_EXAMPLES = 5  # per operation in the fuzzing phase; the coverage phase adds its own
RUN_TIMEOUT = 100  # seconds; a run takes about 45 here
STANDARD_CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
)
INTERNAL_CHECK = "no_internal_error"

SAFE_CONFIG = """
[permissions]
"execute:command" = "deny"
"network:outbound" = "deny"
"delete:file" = "deny"

[toolsets]
disabled = ["browser", "system"]
"""

pytestmark = pytest.mark.skipif(
    not ST.exists(),
    reason=f"no {ST.relative_to(ROOT)}: `make test` makes it "
    "(pip install -r tests/schemathesis-requirements.txt in that venv)",
)


@dataclass
class Run:
    returncode: int
    output: str  # what st printed
    failures: list[str]  # one block per failing test case, as st words it
    server_log: str
    server_stop_error: str | None  # spawn_http_server's complaint at exit, if any
    seconds: float


def _failures(junit: Path) -> list[str]:
    """Every failing case of the JUnit report, each with its check and a curl."""
    if not junit.exists():
        return []
    blocks: list[str] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        for failure in [*case.iter("failure"), *case.iter("error")]:
            text = failure.text or failure.get("message") or ""
            parts = re.split(r"(?m)^(?=\d+\. Test Case ID)", text)
            blocks += [f"{case.get('name')}\n{p.strip()}" for p in parts if p.strip()]
    return blocks


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    base = tmp_path_factory.mktemp("schemathesis")
    workspace, state, work = base / "ws", base / "state", base / "st"
    for d in (workspace / "src", state, work):
        d.mkdir(parents=True)
    (workspace / "README.md").write_text("# fuzzed\n")
    (workspace / "src" / "app.py").write_text("print('hello')\n")
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    config = base / "safe.toml"
    config.write_text(SAFE_CONFIG)
    junit = work / "junit.xml"

    stack = ExitStack()
    server = stack.enter_context(spawn_http_server(workspace, state, "--config", str(config)))
    started = time.monotonic()
    try:
        args = [
            str(ST), "run", f"{server.url}/openapi.json",
            "--header", f"Authorization: Bearer {server.token}",
            "--checks", ",".join([*STANDARD_CHECKS, INTERNAL_CHECK]),
            "--phases", "coverage,fuzzing",
            "--max-examples", str(MAX_EXAMPLES),
            "--seed", str(SEED),
            "--workers", "2",
            "--request-timeout", "30",
            "--no-color",
            "--report", "junit", "--report-junit-path", str(junit),
        ]  # fmt: skip
        proc = subprocess.run(
            args,
            cwd=work,  # its .hypothesis/ and reports stay out of the checkout
            env={
                **os.environ,
                "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
                "PYTHONPATH": str(HOOKS_DIR),
            },
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    finally:
        seconds = time.monotonic() - started
        stop_error = None
        try:
            stack.close()
        except AssertionError as exc:  # a traceback in the log: a tool crashed
            stop_error = str(exc)
    return Run(
        proc.returncode,
        proc.stdout + proc.stderr,
        _failures(junit),
        "".join(server.stderr),
        stop_error,
        seconds,
    )


def _internal(block: str) -> bool:
    checks = re.findall(r"(?m)^- (ST\d+ .*)$", block)
    return bool(checks) and all(INTERNAL_CHECK in c for c in checks)


def test_every_answer_is_declared_and_none_is_a_500(run: Run) -> None:
    assert "Operations:" in run.output and "Loaded specification" in run.output, run.output
    tested = re.search(r"Tested: (\d+)", run.output)
    assert tested and int(tested.group(1)) >= 40, run.output  # every tool, not a few
    found = [b for b in run.failures if not _internal(b)]
    assert not found, f"{len(found)} failing cases:\n\n" + "\n\n".join(found)
    if not run.failures:
        assert run.returncode == 0, run.output
    assert run.seconds < RUN_TIMEOUT


def test_no_input_makes_a_tool_crash(run: Run) -> None:
    crashed = [b for b in run.failures if _internal(b)]
    logged = re.findall(r"tool (\S+) failed unexpectedly", run.server_log)
    assert not crashed and not logged, (
        f"INTERNAL_ERROR from {sorted(set(logged))}:\n\n" + "\n\n".join(crashed)
    )
    assert run.server_stop_error is None, run.server_stop_error

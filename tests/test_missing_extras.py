"""A tool whose optional extra is not installed says which `pip install` brings it.

Each case runs in a fresh interpreter where the extra's module cannot be imported: a
meta path finder answers ModuleNotFoundError for it, as Python does for a module that is
not there (the wheel's own clean-venv install, tests/test_packaging.py, checks the same
without any finder). The call goes through `Toolbox.run`, as a library user's would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Run before anything imports local_tools: `BLOCKED` cannot be imported from then on.
_BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Missing())
"""

_CALL = """
import json, sys
from local_tools import Toolbox
from local_tools.doctor import diagnose

workspace, state, config, tool, args = sys.argv[1:6]
tb = Toolbox(workspace, json.loads(config), state_dir=state, audit=False, plugins=False)
try:
    envelope = tb.run(tool, json.loads(args))
    rows = dict(diagnose(tb))
finally:
    tb.close()
print(json.dumps({"envelope": envelope, "doctor": rows}))
"""


def _run_without(
    blocked: set[str], tmp_path: Path, config: dict[str, object], tool: str, args: dict[str, object]
) -> dict[str, object]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    code = _BLOCKER.format(blocked=sorted(blocked)) + _CALL
    argv = [str(workspace), str(tmp_path / "state"), json.dumps(config), tool, json.dumps(args)]
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=90
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


def _error(envelope: object) -> dict[str, str]:
    assert isinstance(envelope, dict)
    assert envelope["success"] is False, envelope
    error: dict[str, str] = envelope["error"]
    return error


def test_browser_tools_without_playwright_name_the_extra(tmp_path: Path) -> None:
    result = _run_without(
        {"playwright"}, tmp_path, {"browser": {"executable": sys.executable}}, "browser_launch", {}
    )
    error = _error(result["envelope"])
    assert error["error_code"] == "EXECUTION_ERROR", error
    assert "pip install 'local-tools[browser]'" in error["message"]
    assert "playwright" in error["message"]
    doctor = result["doctor"]
    assert isinstance(doctor, dict)
    assert doctor["extra [browser]"].startswith("not installed: pip install 'local-tools[browser]'")
    assert doctor["extra [postgres]"].startswith("installed (psycopg ")


def test_postgres_knowledge_without_psycopg_names_the_extra(tmp_path: Path) -> None:
    # No server is needed: the missing module is found before any connection.
    url = f"postgresql://me@/knowledge?host={tmp_path}&port=1"
    result = _run_without(
        {"psycopg"}, tmp_path, {"knowledge": {"url": url}}, "save_insight", {"content": "x"}
    )
    error = _error(result["envelope"])
    assert error["error_code"] == "EXECUTION_ERROR", error
    assert "pip install 'local-tools[postgres]'" in error["message"]
    doctor = result["doctor"]
    assert isinstance(doctor, dict)
    assert doctor["extra [postgres]"].startswith("not installed: pip install")
    assert doctor["extra [browser]"].startswith("installed (playwright ")


@pytest.mark.parametrize("blocked", [set(), {"playwright", "psycopg"}])
def test_doctor_lists_every_extra(blocked: set[str], tmp_path: Path) -> None:
    result = _run_without(blocked, tmp_path, {}, "list_dir", {"path": "."})
    doctor = result["doctor"]
    assert isinstance(doctor, dict)
    for name in ("browser", "postgres"):
        status = doctor[f"extra [{name}]"]
        if blocked:
            assert status.startswith(f"not installed: pip install 'local-tools[{name}]'")
        else:
            assert status.startswith("installed (")


@pytest.mark.parametrize(("blocked", "api"), [({"openai"}, "openai"), ({"anthropic"}, "anthropic")])
def test_model_tools_without_the_sdks_name_the_extra(
    blocked: set[str], api: str, tmp_path: Path
) -> None:
    # No server is needed: the missing SDK is found before any request.
    config = {"models": {"m": {"api": api, "model": "x", "base_url": "http://127.0.0.1:9/v1"}}}
    args = {"description": "look around", "prompt": "what is here?"}
    result = _run_without(blocked, tmp_path, config, "task", args)
    error = _error(result["envelope"])
    assert error["error_code"] == "EXECUTION_ERROR", error
    assert "pip install 'local-tools[models]'" in error["message"]
    doctor = result["doctor"]
    assert isinstance(doctor, dict)
    if api == "openai":
        assert doctor["extra [models]"].startswith("not installed: pip install")

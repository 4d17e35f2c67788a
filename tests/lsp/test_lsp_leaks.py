"""What a language server sees must not reach a model that may not read it, and a stuck
server must not hold a call: the findings of the review of the lsp work, as tests.

- a `read:file` rule's files are hidden from the confined server and never opened for a
  symbol looked up by name (their names, values and docstrings stay out of answers);
- hover never quotes a file outside the roots that is not a library (stdlib,
  site-packages, the server's TypeScript);
- pyright's empty publish for a file it has not checked yet is never taken as clean;
- a server that stops reading its input costs an edit at most [lsp] wait, and close
  still ends it.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.security.sandbox import sandbox_engine
from lsp_projects import write_tree

HERE = Path(__file__).parent
SECRET = "sk-live-not-for-models-123"


def _toolbox(ws: Path, state: Path, config: dict[str, Any]) -> Toolbox:
    return Toolbox(ws, config, state_dir=state, audit=False, plugins=False)


@pytest.mark.skipif(sandbox_engine().name == "off", reason="no sandbox engine works here")
def test_a_denied_file_reaches_no_answer(tmp_path: Path, pyright_server: str) -> None:
    ws = write_tree(
        tmp_path / "ws",
        {
            "pyproject.toml": '[project]\nname = "p"\n',
            "secret.py": (
                f'API_KEY = "{SECRET}"\n\n\n'
                'def helper() -> str:\n    """db password hunter2"""\n    return API_KEY\n'
            ),
            "main.py": "from secret import API_KEY\n\nprint(API_KEY)\n",
        },
    )
    config = {"permissions": {"read:file": {"*": "allow", "secret.py": "deny"}}}
    tb = _toolbox(ws, tmp_path / "state", config)
    try:
        hover = {"operation": "hover", "path": "secret.py", "line": 1, "column": 1}
        err(tb.run("lsp", hover), "PERMISSION_DENIED")
        by_name = tb.run("lsp", {"operation": "hover", "symbol": "API_KEY"})
        assert by_name["success"] is False and SECRET not in str(by_name)
        at_import = ok(
            tb.run("lsp", {"operation": "hover", "path": "main.py", "line": 3, "column": 7})
        )
        assert SECRET not in str(at_import)
        found = ok(tb.run("lsp", {"operation": "workspace_symbols", "query": "helper"}))
        assert found["items"] == []
        assert "hunter2" not in str(tb.run("lsp", {"operation": "hover", "symbol": "helper"}))
    finally:
        tb.close()


def test_hover_quotes_no_file_outside_the_roots(tmp_path: Path, pyright_server: str) -> None:
    outside = write_tree(tmp_path / "outside", {"secretmod.py": f'TOKEN = "{SECRET}"\n'})
    ws = write_tree(
        tmp_path / "ws",
        {
            "pyrightconfig.json": f'{{"extraPaths": ["{outside}"]}}\n',
            "main.py": "import secretmod\n\nsecretmod.TOKEN\nprint(len('x'))\n",
        },
    )
    tb = _toolbox(ws, tmp_path / "state", {"sandbox": {"mode": "off"}})
    try:
        token = ok(
            tb.run("lsp", {"operation": "hover", "path": "main.py", "line": 3, "column": 11})
        )
        assert SECRET not in str(token) and token["hover"] == ""
        assert "withheld" in token["note"] and "secretmod.py" in token["note"]
        where = ok(
            tb.run("lsp", {"operation": "definition", "path": "main.py", "line": 3, "column": 11})
        )
        assert where["items"][0]["path"].endswith("secretmod.py")  # a location, not its text
        assert "text" not in where["items"][0]
        builtin = ok(
            tb.run("lsp", {"operation": "hover", "path": "main.py", "line": 4, "column": 7})
        )
        assert "len" in builtin["hover"]  # a library's (typeshed's) text is shown
    finally:
        tb.close()


def test_no_file_with_errors_is_reported_clean(tmp_path: Path, pyright_server: str) -> None:
    files = {"pyproject.toml": '[project]\nname = "p"\n'}
    files |= {f"m{i}.py": f'value{i}: int = "not a number {i}"\n' for i in range(30)}
    ws = write_tree(tmp_path / "ws", files)
    tb = _toolbox(ws, tmp_path / "state", {})
    try:
        out = ok(tb.run("lsp", {"operation": "diagnostics"}))
        states = {f["path"]: f["state"] for f in out["files"]}
        assert out["state"] == "errors"
        assert [p for p, s in states.items() if s != "errors"] == [], states
        assert len(states) == 30
        empty = tmp_path / "ws" / "docs"
        empty.mkdir()
        (empty / "notes.md").write_text("# notes\n")
        err(tb.run("lsp", {"operation": "diagnostics", "path": "docs"}), "NOT_FOUND")
    finally:
        tb.close()


def test_a_server_that_stops_reading_holds_nothing(tmp_path: Path) -> None:
    ws = write_tree(tmp_path / "ws", {"a.py": "x = 1\n" + "# pad\n" * 40000})  # 240 KB
    config = {
        "sandbox": {"mode": "off"},
        "lsp": {
            "wait": 1.0,
            "basedpyright": {"enabled": False},
            "pyright": {"enabled": False},
            "deaf": {
                "command": sys.executable,
                "args": [str(HERE / "deaf_server.py")],
                "extensions": [".py"],
            },
        },
    }
    tb = _toolbox(ws, tmp_path / "state", config)
    for old, new in (("x = 1", "x = 2"), ("x = 2", "x = 3"), ("x = 3", "x = 4")):
        started = time.monotonic()
        out = ok(tb.run("edit", {"path": "a.py", "old_string": old, "new_string": new}))
        assert time.monotonic() - started < 10  # the wait is 1 s: bounded, not stuck
        assert out["diagnostics"]["state"] == "pending"
    closer = threading.Thread(target=tb.close, daemon=True)
    closer.start()
    closer.join(30)
    assert not closer.is_alive(), "Toolbox.close() is stuck on a server that stopped reading"
    assert (ws / "a.py").read_text().startswith("x = 4\n")

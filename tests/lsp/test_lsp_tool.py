"""The lsp tool on real servers (basedpyright, typescript-language-server): one toolbox
and its servers shared by the module, over a workspace holding both small projects.

Cancellation and a crash mid-request use a tiny real LSP process (FAKE_SERVER below):
one that never answers, one that dies on its first definition request.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.core.context import ToolContext
from local_tools.core.errors import Cancelled
from local_tools.lsp.navigation import Navigator
from local_tools.lsp.requests import LspRequest
from local_tools.tools.lsp import lsp as lsp_tool
from lsp_projects import PY_PROJECT, TS_PROJECT, write_tree

GEOMETRY = {"py": "shapes/geometry.py", "ts": "src/geometry.ts"}
USE = {"py": "shapes/use.py", "ts": "src/use.ts"}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lspws")
    write_tree(root, PY_PROJECT)
    write_tree(root, TS_PROJECT)
    write_tree(root, {"tools/scale.py": "def scale(v: float) -> float:\n    return v * 2\n"})
    return root


@pytest.fixture(scope="module")
def tb(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolbox]:
    box = Toolbox(ws, None, state_dir=tmp_path_factory.mktemp("lspstate"))
    yield box
    box.close()


@pytest.fixture(params=["py", "ts"])
def lang(request: pytest.FixtureRequest) -> str:
    # Skips (saying what installs it) when that language's server is missing.
    request.getfixturevalue("pyright_server" if request.param == "py" else "ts_server")
    return str(request.param)


def call(tb: Toolbox, **args: Any) -> dict[str, Any]:
    return ok(tb.run("lsp", args))


def line_of(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the nth occurrence of `needle`."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def files_of(lang: str) -> dict[str, str]:
    return PY_PROJECT if lang == "py" else TS_PROJECT


def test_definition_of_origin_lands_on_its_line(tb: Toolbox, lang: str) -> None:
    use = files_of(lang)[USE[lang]]
    line, column = line_of(use, "origin", nth=1)  # the call, not the import
    out = call(tb, operation="definition", path=USE[lang], line=line, column=column)
    [item] = out["items"]
    geometry = files_of(lang)[GEOMETRY[lang]]
    want_line, want_col = line_of(geometry, "origin")
    assert (item["path"], item["line"], item["column"]) == (GEOMETRY[lang], want_line, want_col)
    assert "origin()" in item["text"]
    assert f"{GEOMETRY[lang]}:{want_line}:{want_col}" in lsp_tool.render(out)  # type: ignore[misc]


def test_references_of_point_list_both_files(tb: Toolbox, lang: str) -> None:
    out = call(tb, operation="references", path=GEOMETRY[lang], symbol="Point")
    paths = {item["path"] for item in out["items"]}
    assert paths == {GEOMETRY[lang], USE[lang]}
    assert out["total"] == len(out["items"]) >= 4
    assert all(item["text"] and "Point" in item["text"] for item in out["items"])


def test_symbol_name_path_resolves(tb: Toolbox, lang: str) -> None:
    out = call(tb, operation="hover", path=GEOMETRY[lang], symbol="Point.norm")
    line, column = line_of(files_of(lang)[GEOMETRY[lang]], "norm")
    assert out["at"] == f"Point.norm at {GEOMETRY[lang]}:{line}:{column}"
    assert "norm" in out["hover"] and "```" not in out["hover"]


def test_symbol_without_path_searches_the_workspace_and_lists_ambiguity(
    tb: Toolbox, pyright_server: str, ts_server: str
) -> None:
    message = err(tb.run("lsp", {"operation": "definition", "symbol": "Point.norm"}), "CONFLICT")
    assert "shapes/geometry.py:6:9" in message and "src/geometry.ts:4:3" in message
    out = call(tb, operation="hover", symbol="scale")  # defined once: found by its name
    assert out["at"] == "scale at tools/scale.py:1:5"
    assert "def scale(v: float) -> float" in out["hover"]


def test_ambiguous_name_in_a_file_lists_candidates_with_lines(
    tb: Toolbox, pyright_server: str
) -> None:
    # `x` is the __init__ parameter and the attribute: equally good matches.
    env = tb.run("lsp", {"operation": "hover", "path": GEOMETRY["py"], "symbol": "x"})
    message = err(env, "CONFLICT")
    assert "shapes/geometry.py:2:24" in message and "shapes/geometry.py:3:14" in message
    assert len(env["error"]["details"]["candidates"]) == 2
    # A longer name path settles it.
    out = call(tb, operation="hover", path=GEOMETRY["py"], symbol="Point.x")
    assert out["at"] == "Point.x at shapes/geometry.py:3:14"


def test_document_symbols_outline(tb: Toolbox, lang: str) -> None:
    out = call(tb, operation="document_symbols", path=GEOMETRY[lang])
    names = [(i["name"], i["kind"], i["depth"]) for i in out["items"]]
    assert names[0] == ("Point", "class", 0)
    assert ("norm", "method", 1) in names
    assert ("origin", "function", 0) in names
    lines = [i["line"] for i in out["items"] if i["depth"] == 0]
    assert lines == sorted(lines)  # document order
    text = lsp_tool.render(out)  # type: ignore[misc]
    assert "  class Point (line 1)" in text and "    method norm (line" in text


def test_workspace_symbols_query(tb: Toolbox, pyright_server: str, ts_server: str) -> None:
    out = call(tb, operation="workspace_symbols", query="norm")
    found = {(i["path"], i["line"]) for i in out["items"]}
    assert ("shapes/geometry.py", 6) in found and ("src/geometry.ts", 4) in found
    assert set(out["server"].split(", ")) == {"basedpyright", "typescript"}


def test_hover_text(tb: Toolbox, lang: str) -> None:
    out = call(tb, operation="hover", path=GEOMETRY[lang], symbol="origin")
    assert ("def origin() -> Point" if lang == "py" else "origin(): Point") in out["hover"]


def test_incoming_and_outgoing_calls_of_distance(tb: Toolbox, lang: str) -> None:
    use = files_of(lang)[USE[lang]]
    incoming = call(tb, operation="incoming_calls", path=USE[lang], symbol="distance")
    last = use.rstrip("\n").count("\n") + 1
    assert [(i["path"], i["line"]) for i in incoming["items"]] == [(USE[lang], last)] * 2
    outgoing = call(tb, operation="outgoing_calls", path=USE[lang], symbol="distance")
    assert [(i["name"], i["path"]) for i in outgoing["items"]] == [("norm", GEOMETRY[lang])]


def test_diagnostics_of_a_file_with_a_type_error(tb: Toolbox, ws: Path, lang: str) -> None:
    name = "extra/broken.py" if lang == "py" else "src/broken.ts"
    bad = (
        "def half(n: int) -> int:\n    return n // 2\n\n\nvalue: int = half('two')\n"
        if lang == "py"
        else "export function half(n: number): number {\n  return n / 2;\n}\n\n"
        "export const value: number = half('two');\n"
    )
    (ws / name).parent.mkdir(exist_ok=True)
    (ws / name).write_text(bad)
    try:
        out = call(tb, operation="diagnostics", path=name)
        assert out["state"] == "errors"
        [entry] = out["files"]
        assert entry["state"] == "errors"
        column = bad.split("\n")[4].index("'two'") + 1
        assert any(d.startswith(f"{name}:5:{column}: error:") for d in entry["diagnostics"])
        (ws / name).write_text(bad.replace("'two'", "2"))
        fixed = call(tb, operation="diagnostics", path=name)
        assert fixed["state"] == "clean" and fixed["files"][0]["diagnostics"] == []
    finally:
        (ws / name).unlink()


def test_diagnostics_of_a_folder_and_the_workspace(
    tb: Toolbox, ws: Path, pyright_server: str, ts_server: str
) -> None:
    folder = call(tb, operation="diagnostics", path="shapes")
    assert folder["state"] == "clean" and folder["files"] == []
    assert folder["note"].startswith("3 file(s) checked, 3 clean")  # __init__, geometry, use
    (ws / "shapes" / "bad.py").write_text("x: int = 'no'\n")
    try:
        out = call(tb, operation="diagnostics")
        assert out["state"] == "errors"
        assert [(f["path"], f["state"]) for f in out["files"]] == [("shapes/bad.py", "errors")]
        assert out["files"][0]["diagnostics"][0].startswith("shapes/bad.py:1:10: error:")
    finally:
        (ws / "shapes" / "bad.py").unlink()


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        ({"operation": "definition", "path": "shapes/use.py"}, "INVALID_INPUT", "needs a place"),
        (
            {"operation": "definition", "path": "shapes/use.py", "line": 99, "column": 1},
            "INVALID_INPUT",
            "past the end of shapes/use.py (8 lines)",
        ),
        (
            {"operation": "hover", "path": "shapes/use.py", "line": 1, "column": 200},
            "INVALID_INPUT",
            "Column 200 is past the end of line 1",
        ),
        ({"operation": "definition", "line": 1, "column": 1}, "INVALID_INPUT", "path, line"),
        ({"operation": "jump"}, "INVALID_INPUT", "operation"),
        ({"operation": "document_symbols", "path": "README.md"}, "INVALID_INPUT", ".py"),
        ({"operation": "hover", "path": "/etc/hostname", "symbol": "x"}, "PERMISSION_DENIED", ""),
        ({"operation": "document_symbols", "path": "shapes/nope.py"}, "NOT_FOUND", "nope.py"),
        ({"operation": "workspace_symbols"}, "INVALID_INPUT", "needs query"),
        ({"operation": "rename", "symbol": "origin"}, "INVALID_INPUT", "new_name"),
        ({"operation": "hover", "symbol": "x", "apply": True}, "INVALID_INPUT", "rename only"),
    ],
)
def test_invalid_inputs(
    tb: Toolbox, ws: Path, pyright_server: str, args: dict[str, Any], code: str, says: str
) -> None:
    (ws / "README.md").write_text("# shapes\n")
    message = err(tb.run("lsp", args), code)
    assert says in message


# --- a real LSP process that misbehaves on purpose -----------------------------------

FAKE_SERVER = r"""
import json, os, sys
log = os.environ["FAKE_LOG"]
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            break
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
def send(msg):
    body = json.dumps(dict(msg, jsonrpc="2.0")).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
while True:
    msg = read()
    method = msg.get("method", "")
    with open(log, "a") as f:
        f.write(method + "\n")
    if method == "initialize":
        send({"id": msg["id"], "result": {"capabilities": {"definitionProvider": True}}})
    elif method == "textDocument/didOpen":
        doc = msg["params"]["textDocument"]
        send({"method": "textDocument/publishDiagnostics", "params": {
            "uri": doc["uri"], "version": doc["version"], "diagnostics": []}})
    elif method == "textDocument/definition":
        if os.environ["FAKE_MODE"] == "hang":
            continue
        if not os.path.exists(log + ".crashed"):
            open(log + ".crashed", "w").close()
            os._exit(3)
        send({"id": msg["id"], "result": {"uri": msg["params"]["textDocument"]["uri"],
              "range": {"start": {"line": 0, "character": 4},
                        "end": {"line": 0, "character": 5}}}})
    elif method == "exit":
        sys.exit(0)
    elif "id" in msg and method:
        send({"id": msg["id"], "result": None})
"""


def fake_toolbox(make_toolbox: Any, tmp_path: Path, mode: str) -> tuple[Toolbox, Path]:
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    log = tmp_path / "fake.log"
    config = {
        "sandbox": {"mode": "off"},  # the fake writes its log beside the test
        "lsp": {
            "fake": {
                "command": sys.executable,
                "args": [str(script)],
                "extensions": [".fake"],
                "env": {"FAKE_MODE": mode, "FAKE_LOG": str(log)},
            }
        },
    }
    return make_toolbox(config), log


def tool_context(tb: Toolbox) -> ToolContext:
    r = tb.runner
    return ToolContext(
        call_id="c1", user_id="default", tool="lsp", jail=r.jail, config=r.config,
        policy=r.policy, state_dir=r.state_dir, spill_dir=r.spill_dir, resources=r.resources,
    )  # fmt: skip


def test_a_cancelled_call_cancels_its_request(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    tb, log = fake_toolbox(make_toolbox, tmp_path, "hang")
    (workspace / "a.fake").write_text("let x = 1\n")
    ctx = tool_context(tb)
    nav = Navigator(ctx)
    outcome: list[BaseException] = []

    def ask() -> None:
        try:
            nav.run(LspRequest("definition", "a.fake", 1, 5))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=ask)
    worker.start()
    deadline = time.monotonic() + 20
    while "textDocument/definition" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "the request never reached the server"
        time.sleep(0.05)
    ctx.cancel()
    worker.join(10)
    assert not worker.is_alive(), "the call did not stop when cancelled"
    assert [type(e) for e in outcome] == [Cancelled]
    deadline = time.monotonic() + 5
    while "$/cancelRequest" not in log.read_text():
        assert time.monotonic() < deadline, "the server was not told to drop the request"
        time.sleep(0.05)


def test_a_server_dying_mid_request_is_restarted_and_asked_again(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    tb, log = fake_toolbox(make_toolbox, tmp_path, "crash_once")
    (workspace / "a.fake").write_text("let x = 1\n")
    out = ok(tb.run("lsp", {"operation": "definition", "path": "a.fake", "line": 1, "column": 5}))
    assert [(i["path"], i["line"], i["column"]) for i in out["items"]] == [("a.fake", 1, 5)]
    assert log.read_text().count("initialize\n") == 2  # started again after the crash
    assert os.path.exists(str(log) + ".crashed")


def test_a_capability_the_server_lacks_is_named(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    tb, _ = fake_toolbox(make_toolbox, tmp_path, "crash_once")
    (workspace / "a.fake").write_text("let x = 1\n")
    message = err(
        tb.run("lsp", {"operation": "hover", "path": "a.fake", "line": 1, "column": 5}),
        "EXECUTION_ERROR",
    )
    assert message == "fake does not support hover."


def test_a_missing_server_says_what_to_install(make_toolbox: Any, py_project: Path) -> None:
    tb = make_toolbox(
        {"lsp": {"basedpyright": {"command": "no-such-langserver"}, "pyright": {"enabled": False}}}
    )
    message = err(
        tb.run("lsp", {"operation": "document_symbols", "path": "shapes/geometry.py"}),
        "EXECUTION_ERROR",
    )
    assert "no Python language server is installed" in message
    assert "pip install basedpyright" in message


def test_lines_of_files_that_need_asking_are_not_shown(
    make_toolbox: Any, py_project: Path, pyright_server: str
) -> None:
    tb = make_toolbox({"permissions": {"read:file": {"*": "allow", "shapes/use.py": "ask"}}})
    out = call(tb, operation="references", path="shapes/geometry.py", symbol="Point")
    by_file = {(i["path"], "text" in i) for i in out["items"]}
    assert by_file == {("shapes/geometry.py", True), ("shapes/use.py", False)}

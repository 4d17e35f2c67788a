"""Every declared output schema against what the tool really returns, as MCP sends it.

MCP clients (the TypeScript SDK notably) validate a result's structuredContent against
the tool's listed outputSchema and fail the call when it does not match, so each tool
with a schema is run for real (its SAMPLES call, and one call per shape its output can
take), its envelope turned into a CallToolResult by the MCP transport's own
`call_result`, and the structuredContent validated (JSON Schema 2020-12) against the
outputSchema the server lists. A second, closed copy of each schema (no extra keys
anywhere) checks that every key a tool returns is declared, so the schema stays a
complete description and not only a permissive one.
"""

from __future__ import annotations

import copy
import io
import os
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field

import net_server
from checkpoint_switch import checkpoints_on
from local_tools import Toolbox
from local_tools.core.tool import RUNNER_OUTPUT_FIELDS, Output, Tool, tool
from local_tools.interact.terminal import TerminalAsker
from local_tools.transports.mcp import call_result, mcp_tool
from local_tools.transports.schemas import FORMATS, to_mcp, tool_schemas
from transports.test_schemas import SAMPLES

POSIX = sys.platform != "win32"
ALLOW = {
    "permissions": {
        "read:file": "allow",
        "write:file": "allow",
        "delete:file": "allow",
        "execute:command": "allow",
    }
}
# Project data the knowledge samples name.
PROJECT_SEED = [
    ("create_requirement", {"title": "r"}),
    ("add_feature", {"title": "f", "covers": ["REQ-001"]}),
    ("create_task", {"title": "t", "depends_on": ["TASK-002"]}),
    ("create_task", {"title": "u", "depends_on": ["TASK-001"]}),
]
PROJECT_SEEDED = {
    "get_requirements", "add_feature", "update_feature_status", "add_component",
    "create_task", "update_task_status", "delete_project_item", "get_implementation_plan",
    "get_design_document", "check_feature_coverage", "check_task_dependencies",
}  # fmt: skip
# Every built-in tool but `invalid` (which always fails) and `call_tool` (whose output
# is the called tool's) has a fixed shape.
WITH_SCHEMA = sorted(set(SAMPLES) - {"call_tool"})


# --------------------------------------------------------------------------- helpers


@pytest.fixture
def shell(make_toolbox: Any, workspace: Path) -> Toolbox:
    (workspace / "a.txt").write_text("a\nb\nc\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "x.py").write_text("x = 1\n# x marks\n")
    return make_toolbox(ALLOW)  # type: ignore[no-any-return]


def _closed(schema: Any) -> Any:
    """The schema with no extra keys allowed on any object that lists its properties."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) for k, v in schema.items() if k != "properties"}
    if "properties" in schema:
        out["properties"] = {k: _closed(v) for k, v in schema["properties"].items()}
        out["additionalProperties"] = False
    return out


def _errors(schema: dict[str, Any], instance: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in Draft202012Validator(schema).iter_errors(instance)
    ]


def structured(tb: Toolbox, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run a call as the MCP server does and check its structuredContent against the
    listed outputSchema (and that it declares every key); returns the content."""
    env = tb.run(name, args, transport="mcp")
    assert env["success"], env.get("error")
    result = call_result(tb, env)
    assert not result.is_error
    content = result.structured_content
    assert isinstance(content, dict)
    t = tb.registry.resolve(name)
    assert t is not None
    schema = mcp_tool(t).output_schema
    assert schema is not None, f"{name} lists no outputSchema"
    assert _errors(schema, content) == [], f"{name}: {content}"
    assert _errors(_closed(schema), content) == [], f"{name} returns keys it does not declare"
    return content


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    pixels = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(pixels))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + idat + chunk(b"IEND", b"")


def _pdf(lines: list[str]) -> bytes:
    pypdf = pytest.importorskip("pypdf")
    from pypdf.generic import DictionaryObject, NameObject, StreamObject

    writer = pypdf.PdfWriter()
    page = writer.add_blank_page(612, 792)
    stream = StreamObject()
    ops = ["BT /F1 12 Tf 14 TL 72 720 Td", *(f"({line}) Tj T*" for line in lines), "ET"]
    stream.set_data("\n".join(ops).encode())
    page.replace_contents(stream)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
    )
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def _start(tb: Toolbox, command: str) -> str:
    out = structured(tb, "exec_cmd", {"command": command, "background": True})
    assert out["status"] == "running"
    return str(out["process_id"])


# The web tools' samples name https://example.com; they run against a loopback server
# instead (allow_private names it, and it answers the search in SearXNG's format).
WEB_TOOLS = ("web_fetch", "http_request", "web_search")
# The browser tools' samples act on a form page, loaded first; one browser for them all.
BROWSER_TOOLS = tuple(name for name in SAMPLES if name.startswith("browser_"))
BROWSER_FORM = (
    "<html><head><title>Form</title></head><body><input id=name>"
    "<button id=go>Go</button></body></html>"
)


@pytest.fixture
def web() -> Iterator[net_server.Server]:
    server = net_server.serve("127.0.0.1")
    server.routes["/docs"] = net_server.html(
        "<html><head><title>Docs</title></head><body><main><h1>Hi</h1></main></body></html>"
    )
    server.routes["/api"] = net_server.echo
    server.routes["/search"] = net_server.as_json(
        {"results": [{"title": "HTTPX", "url": "https://www.python-httpx.org/", "content": "A"}]}
    )
    server.routes["/pic"] = lambda req: (200, {"Content-Type": "image/png"}, _png(2, 2))
    server.routes["/doc.pdf"] = lambda req: (
        200,
        {"Content-Type": "application/pdf"},
        _pdf(["pdf text"]),
    )
    server.routes["/old"] = net_server.redirect("/api", 307)
    yield server
    server.stop()


def _web_toolbox(make_toolbox: Any, server: net_server.Server) -> Toolbox:
    config = {
        "permissions": {"network:outbound": "allow"},
        "network": {
            "allow_private": ["127.0.0.1"],
            "search": {"provider": "searxng", "url": server.base},
        },
    }
    return make_toolbox(config)  # type: ignore[no-any-return]


def _web_sample(server: net_server.Server, name: str) -> dict[str, Any]:
    sample = dict(SAMPLES[name])
    if "url" in sample:
        sample["url"] = server.url("/" + sample["url"].rsplit("/", 1)[1])
    return sample


@pytest.fixture(scope="module")
def browser_toolbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("no /usr/bin/chromium: `make test` installs Debian's chromium")
    server = net_server.serve("127.0.0.1")
    server.routes["/form"] = net_server.html(BROWSER_FORM)
    root = tmp_path_factory.mktemp("browser")
    (root / "ws").mkdir()
    config = {
        "permissions": {"network:outbound": "allow", "browser:evaluate": "allow"},
        "network": {"allow_private": ["127.0.0.1"]},
    }
    tb = Toolbox(root / "ws", config, state_dir=root / "state", audit=False, plugins=False)
    yield tb, server
    tb.close()
    server.stop()


@pytest.fixture
def tools(make_toolbox: Any) -> list[Tool]:
    tb = make_toolbox(audit=False, plugins=False)
    return [t for t in tb.registry.enabled() if t.name != "invalid"]


# --------------------------------------------------------------------------- the schemas


def test_which_tools_declare_their_output(tools: list[Tool]) -> None:
    declared = sorted(t.name for t in tools if t.output_schema is not None)
    assert declared == WITH_SCHEMA


def test_output_schemas_are_self_contained_open_objects(tools: list[Tool]) -> None:
    for t in tools:
        schema = to_mcp(t).get("outputSchema")
        if t.output_schema is None:
            assert schema is None, t.name
            continue
        assert schema is not None
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", t.name
        assert schema.get("additionalProperties", True) is not False, t.name
        text = str(schema)
        assert "$ref" not in text and "$defs" not in text and "$schema" not in schema, t.name
        assert "'default'" not in text, f"{t.name}: a client filling defaults in would add them"
        props = schema["properties"]
        # What the runner adds to any output it cuts, and what the transport removes.
        for key, extra in RUNNER_OUTPUT_FIELDS.items():
            assert key not in schema.get("required", []) or key == "truncated", t.name
            assert _errors(props[key], True if extra["type"] == "boolean" else "/x") == [], key
        assert not [k for k in props if k.endswith("_base64")], t.name
        assert not [k for k in schema.get("required", []) if k.endswith("_base64")], t.name
        # The same schema as the server lists it (the SDK's model keeps it as is).
        assert mcp_tool(t).output_schema == schema


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "mcp"])
def test_only_mcp_declarations_carry_an_output_schema(tools: list[Tool], fmt: str) -> None:
    for decl in tool_schemas(tools, fmt):  # type: ignore[arg-type]
        for part in (decl, decl.get("function", {})):
            assert not {"outputSchema", "output_schema"} & set(part), fmt


# --------------------------------------------------------------------------- real calls


@pytest.mark.skipif(not POSIX, reason="POSIX shell commands")
@pytest.mark.parametrize("name", WITH_SCHEMA)
def test_sample_call_matches_its_output_schema(
    shell: Toolbox,
    workspace: Path,
    name: str,
    web: net_server.Server,
    make_toolbox: Any,
    request: pytest.FixtureRequest,
) -> None:
    if name in ("screenshot", "open_in_folder"):
        # The desktop stubbed (the real one: tests/tools/test_system_tools.py, Xvfb).
        from local_tools import desktop

        shot = desktop.Capture(_png(4, 3), 4, 3, 1, 1)
        request.getfixturevalue("monkeypatch").setattr(desktop, "capture", lambda m: shot)
        request.getfixturevalue("monkeypatch").setattr(
            desktop, "reveal", lambda path: ["xdg-open", str(path.parent)]
        )
        allowed = {"permissions": {"system:screenshot": "allow"}}
        out = structured(make_toolbox(allowed), name, SAMPLES[name])
        assert out.get("width", 4) == 4
        return
    if name.startswith("review_"):
        # A person at a terminal edits the draft in their (scripted) editor.
        editor = workspace.parent / "editor.sh"
        editor.write_text('#!/bin/sh\necho "one more line" >> "$1"\n')
        editor.chmod(0o755)
        request.getfixturevalue("monkeypatch").setenv("EDITOR", str(editor))
        request.getfixturevalue("monkeypatch").delenv("VISUAL", raising=False)
        person = TerminalAsker(io.StringIO("e\n"), io.StringIO())
        out = structured(make_toolbox(asker=person), name, SAMPLES[name])
        assert out["decision"] == "edit" and out["diff"]
        return
    if name in BROWSER_TOOLS:
        tb, server = request.getfixturevalue("browser_toolbox")
        assert tb.run("browser_navigate", {"url": server.url("/form")})["success"]
        sample = {**SAMPLES[name]}
        if "url" in sample:
            sample["url"] = server.url("/form")
        structured(tb, name, sample)
        return
    if name in WEB_TOOLS:
        out = structured(_web_toolbox(make_toolbox, web), name, _web_sample(web, name))
        assert out.get("status_code", 200) == 200 and out.get("results", [1])
        return
    if name == "task":  # a scripted model on loopback answers (tests/model_server.py)
        from model_server import ScriptedModel, hang, model_config, text, tool_call

        with ScriptedModel() as srv:
            srv.script(tool_call("read_file", {"path": "a.txt"}), text("a.txt has 3 lines"))
            tb = make_toolbox({**ALLOW, **model_config(srv)})
            out = structured(tb, name, SAMPLES[name])
            assert out["answer"] == "a.txt has 3 lines" and out["status"] == "done"
            srv.script(hang(30))
            started = structured(tb, name, {**SAMPLES[name], "background": True})
            assert started["status"] == "running"
            killed = structured(tb, "process_kill", {"process_id": started["process_id"]})
            assert killed["killed"] is True
            structured(tb, "process_list", {})
        return
    if name == "write_file":
        (workspace / "a.txt").unlink()  # the sample creates it
    if name == "lsp":  # a real basedpyright (the dev extra); each shape of its output
        (workspace / "a.py").write_text(
            "class Point:\n    def norm(self) -> int:\n        return 1\n\n\n"
            "x: str = Point().norm()\n"
        )
        out = structured(shell, name, SAMPLES[name])
        assert out["items"][0]["line"] == 2
        for other in (
            {"operation": "document_symbols", "path": "a.py"},
            {"operation": "hover", "path": "a.py", "symbol": "Point"},
            {"operation": "diagnostics", "path": "a.py"},
            {"operation": "rename", "path": "a.py", "symbol": "Point", "new_name": "P"},
            {
                "operation": "rename",
                "path": "a.py",
                "symbol": "Point",
                "new_name": "Q",
                "apply": True,
            },
        ):
            out = structured(shell, name, other)
        assert "class Q:" in (workspace / "a.py").read_text()
        return
    if name in ("checkpoint_list", "checkpoint_diff", "restore"):  # checkpoint 1 edits a.txt
        checkpoints_on(request.getfixturevalue("monkeypatch"))
        edit = {"path": "a.txt", "old_string": "b", "new_string": "B"}
        assert shell.run("edit", edit)["success"]
    if name.startswith("process_"):
        assert _start(shell, "cat") == "p1"  # the samples name p1
    if name.startswith("promote_"):
        assert shell.run("save_insight", {"content": "seed"})["success"]  # the samples name 1
    if name == "import_knowledge":
        assert shell.run("export_knowledge", {"path": "knowledge.json"})["success"]
    if name == "copy_workspace_to_project":
        for rel in ("build/index.html", "build/app.js.map", "site/old.css", "site/README.md"):
            (workspace / rel).parent.mkdir(exist_ok=True)
            (workspace / rel).write_text(rel)
    if name == "check_data_format":
        (workspace / "data.json").write_text('{"name": "x"}')
    if name in PROJECT_SEEDED:  # the samples name REQ-001, FEAT-001, TASK-001
        for tool_name, args in PROJECT_SEED:
            assert shell.run(tool_name, args)["success"]
    out = structured(shell, name, SAMPLES[name])
    if name == "read_file":
        assert out["start_line"] == 2


def test_read_file_text_pdf_and_image(shell: Toolbox, workspace: Path) -> None:
    (workspace / "long.txt").write_text("x" * 2500 + "\n" + "y\n" * 10, encoding="latin-1")
    text = structured(shell, "read_file", {"path": "long.txt", "limit": 3, "encoding": "latin-1"})
    assert text["cut_lines"] == [1] and text["truncated"] is True
    (workspace / "doc.pdf").write_bytes(_pdf(["first line", "second line"]))
    pdf = structured(shell, "read_file", {"path": "doc.pdf"})
    assert pdf["pages"] == 1 and pdf["mime_type"] == "application/pdf"
    (workspace / "dot.png").write_bytes(_png(3, 2))
    env = shell.run("read_file", {"path": "dot.png"}, transport="mcp")
    assert "image_base64" in env["output"]
    image = structured(shell, "read_file", {"path": "dot.png"})
    assert "image_base64" not in image  # sent as image content instead
    assert (image["width"], image["height"], image["mime_type"]) == (3, 2, "image/png")
    (workspace / "empty.txt").write_text("")
    assert structured(shell, "read_file", {"path": "empty.txt"})["total_lines"] == 0


def test_file_tools_other_shapes(shell: Toolbox, workspace: Path) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("one\n")
    (workspace / ".hidden").write_text("h\n")
    if POSIX:
        os.symlink("nowhere", workspace / "dangling")
        link = structured(shell, "file_stat", {"path": "dangling"})
        assert link["type"] == "symlink" and link["lines"] is None
        listing = structured(shell, "list_dir", {"include_hidden": True})
        assert any(e.get("target") == "nowhere" for e in listing["entries"])
    assert structured(shell, "file_stat", {"path": "d"})["lines"] is None
    created = structured(shell, "edit", {"path": "new.txt", "old_string": "", "new_string": "n\n"})
    assert created["created"] is True
    copied = structured(shell, "file_copy", {"source": "d", "destination": "e"})
    assert copied["type"] == "directory" and copied["files_copied"] == 1
    structured(shell, "file_delete", {"path": "e", "recursive": True})
    structured(shell, "write_file", {"path": "a.txt", "content": "z\r\n", "overwrite": True})
    structured(shell, "write_file", {"path": "a.txt", "content": "w\n", "append": True})
    patch = (
        "*** Begin Patch\n*** Add File: p.txt\n+p\n*** Update File: a.txt\n@@\n z\n+added\n"
        "*** Update File: d/f.txt\n*** Move to: moved.txt\n@@\n-one\n+two\n"
        "*** Delete File: new.txt\n*** End Patch\n"
    )
    applied = structured(shell, "apply_patch", {"patch": patch})
    assert [f["action"] for f in applied["files"]] == ["add", "update", "move", "delete"]
    edits = [{"old_string": "", "new_string": "q\n"}, {"old_string": "q", "new_string": "r"}]
    assert (
        len(structured(shell, "multi_edit", {"path": "q.txt", "edits": edits})["strategies"]) == 2
    )


def test_web_tools_other_shapes(make_toolbox: Any, web: net_server.Server) -> None:
    tb = _web_toolbox(make_toolbox, web)
    image = structured(tb, "web_fetch", {"url": web.url("/pic")})
    assert "image_base64" not in image and image["mime_type"] == "image/png"
    assert structured(tb, "web_fetch", {"url": web.url("/doc.pdf")})["pages"] == 1
    part = structured(tb, "web_fetch", {"url": web.url("/docs"), "max_length": 2})
    assert part["next_index"] == 2
    moved = structured(tb, "http_request", {"url": web.url("/old"), "method": "HEAD"})
    assert moved["redirects"] and moved["body"] == ""
    text = structured(tb, "http_request", {"url": web.url("/docs")})
    assert isinstance(text["body"], str)


def test_read_many_files_with_errors_and_notes(shell: Toolbox, workspace: Path) -> None:
    for i in range(60):
        (workspace / "many" / f"{i:02}.txt").parent.mkdir(exist_ok=True)
        (workspace / "many" / f"{i:02}.txt").write_text(f"{i}\n" * 3)
    (workspace / "doc.pdf").write_bytes(_pdf(["page text"]))
    (workspace / "dot.png").write_bytes(_png(1, 1))
    out = structured(
        shell,
        "read_many_files",
        {"paths": ["a.txt", "missing.txt", "dot.png", "doc.pdf", "many/*.txt"], "limit": 2},
    )
    assert out["errors"] and out["notes"] and out["truncated"] is True
    assert any("pages" in f for f in out["files"])
    names = [f"big{i}.txt" for i in range(4)]
    for name in names:  # 32 lines (50 KB) of each of two use up the 100 KB total
        (workspace / name).write_text(("w" * 1599 + "\n") * 40)
    spent = structured(shell, "read_many_files", {"paths": names})
    assert [("start_line" in f) for f in spent["files"]] == [True, True, False, False]


def test_search_tools_other_shapes(shell: Toolbox, workspace: Path) -> None:
    for i in range(110):
        (workspace / "src" / f"m{i}.py").write_text("x = 2\n")
    found = structured(shell, "glob", {"pattern": "*.py"})
    assert found["truncated"] is True and "note" in found
    (workspace / "src" / "long.py").write_text("a\n" + "x" * 600 + "\nb\n")
    hits = structured(shell, "grep", {"pattern": "x", "context": 1})
    assert hits["truncated"] is True and "note" in hits
    near = structured(shell, "grep", {"pattern": "^x+$", "context": 1})
    assert any(m.get("context") for m in near["matches"])
    assert structured(shell, "grep", {"pattern": "absent-text"})["matches"] == []
    assert structured(shell, "glob", {"pattern": "*.none"})["files"] == []


@pytest.mark.skipif(not POSIX, reason="POSIX shell commands")
def test_exec_cmd_shapes(shell: Toolbox) -> None:
    failed = structured(shell, "exec_cmd", {"command": "echo out; echo err >&2; exit 3"})
    assert failed["exit_code"] == 3 and failed["stderr"] == "err\n"
    killed = structured(shell, "exec_cmd", {"command": "kill -9 $$"})
    assert killed["exit_code"] != 0
    structured(shell, "exec_cmd", {"command": "sleep 30 & echo left"})  # leftovers stopped
    pid = _start(shell, "sleep 30")
    yielded = structured(shell, "exec_cmd", {"command": "echo early; sleep 5", "yield_after": 0.3})
    assert yielded["status"] == "running" and yielded["stdout"] == "early\n"
    for process_id in (pid, yielded["process_id"]):
        structured(shell, "process_kill", {"process_id": process_id})


@pytest.mark.skipif(not POSIX, reason="POSIX shell commands")
def test_process_tools_shapes(shell: Toolbox) -> None:
    assert structured(shell, "process_list", {})["processes"] == []
    repl = _start(shell, "cat")
    answer = structured(shell, "process_input", {"process_id": repl, "input": "hello"})
    assert answer["written"] == 6 and answer["stdout"] == "hello\n"
    done = _start(shell, "echo bye; exit 2")
    out = structured(shell, "process_output", {"process_id": done, "block": True})
    assert (out["status"], out["exit_code"], out["stdout"]) == ("exited", 2, "bye\n")
    listed = structured(shell, "process_list", {})["processes"]
    assert {p["status"] for p in listed} == {"running", "exited"}
    killed = structured(shell, "process_kill", {"process_id": repl})
    assert killed["killed"] is True and killed["signal"] and killed["killed_by"] == "kill"
    again = structured(shell, "process_kill", {"process_id": repl})
    assert again["killed"] is False and "ended_at" in again


def test_skill_shapes(
    shell: Toolbox, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no real skills
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / "config"))
    folder = workspace / ".claude" / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship.\n---\nSteps.\n")
    (folder / "run.sh").write_text("echo\n")
    (workspace / ".skills" / "broken").mkdir(parents=True)
    (workspace / ".skills" / "broken" / "SKILL.md").write_text("---\nname: x\n")
    listed = structured(shell, "skill", {})
    assert [s["name"] for s in listed["skills"]] == ["deploy"] and listed["errors"]
    loaded = structured(shell, "skill", {"skill": "deploy"})
    assert loaded["files"] == ["run.sh"] and loaded["content"] == "Steps."
    home = tmp_path / "home" / ".claude" / "skills" / "mine"
    home.mkdir(parents=True)
    (home / "SKILL.md").write_text("Mine.\n")
    (home / "ref.md").write_text("r\n")
    assert "note" in structured(shell, "skill", {"skill": "mine"})


# --------------------------------------------------------------------------- cut outputs


@pytest.mark.skipif(not POSIX, reason="POSIX shell commands")
def test_outputs_cut_by_the_limits_still_validate(make_toolbox: Any, workspace: Path) -> None:
    small = {**ALLOW, "limits": {"max_output_bytes": 2048, "max_output_lines": 20}}
    tb = make_toolbox(small)
    (workspace / "big.txt").write_text("".join(f"line {i} {'=' * 60}\n" for i in range(300)))
    edit = structured(tb, "edit", {"path": "big.txt", "old_string": "=", "new_string": "-",
                                   "replace_all": True})  # fmt: skip
    # The runner cut the diff: the keys it adds are in the schema.
    assert edit["truncated"] is True and os.path.isfile(edit["full_output_path"])
    cmd = structured(tb, "exec_cmd", {"command": "seq 1 5000; seq 1 3000 >&2"})
    assert cmd["truncated"] is True and "stdout_path" in cmd and "stderr_path" in cmd
    page = structured(tb, "read_file", {"path": "big.txt"})
    assert page["truncated"] is True
    long = structured(tb, "write_file", {"path": "w.txt", "content": "x"})
    assert "truncated" not in long


# --------------------------------------------------------------------------- declarations


class _Part(BaseModel):
    tag: str = Field(description="A tag.")


class _Out(Output):
    path: str = Field(description="A path.")
    part: _Part = Field(description="Nested.")
    image_base64: str = Field(description="Bytes.")
    note: str = Field(None, description="Sometimes.")
    maybe: int | None = Field(description="Null or a number.")


def _with(output: type[BaseModel]) -> Tool:
    return tool("demo", description="A test tool.", output=output)(lambda a, ctx: None)


def test_declared_schema_is_inlined_and_fits_the_transport() -> None:
    schema = to_mcp(_with(_Out))["outputSchema"]
    assert schema["properties"]["part"]["description"] == "Nested."
    assert schema["properties"]["part"]["properties"]["tag"] == {
        "description": "A tag.",
        "type": "string",
    }
    assert "$ref" not in str(schema) and "image_base64" not in str(schema)
    assert sorted(schema["required"]) == ["maybe", "part", "path"]
    assert schema["properties"]["note"] == {"description": "Sometimes.", "type": "string"}
    assert schema["additionalProperties"] is True
    assert _errors(schema, {"path": "p", "part": {"tag": "t"}, "maybe": None}) == []
    assert _errors(schema, {"path": "p", "part": {"tag": "t"}, "maybe": 1, "note": None})
    # The python description keeps the binary field (only MCP moves it out).
    assert "image_base64" in _with(_Out).describe()["output_schema"]["properties"]


def test_declarations_the_runner_or_clients_would_break_are_refused() -> None:
    class WrongTruncated(Output):
        truncated: str = Field(description="Not a boolean.")

    class Closed(BaseModel):
        model_config = ConfigDict(extra="forbid")
        path: str

    with pytest.raises(ValueError, match="truncated"):
        _ = _with(WrongTruncated).output_schema
    with pytest.raises(ValueError, match="open"):
        _ = _with(Closed).output_schema
    assert tool("plain", description="No output model.")(lambda a, ctx: None).output_schema is None
    assert "outputSchema" not in to_mcp(tool("plain", description="x")(lambda a, ctx: None))


def test_schema_copies_are_independent() -> None:
    t = _with(_Out)
    first = to_mcp(t)["outputSchema"]
    first["properties"].clear()
    assert to_mcp(t)["outputSchema"]["properties"]
    described = t.describe()["output_schema"]
    described["properties"].clear()
    assert copy.deepcopy(t.output_schema)["properties"]

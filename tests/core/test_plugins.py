"""Custom tools that fail to load take nothing else down; the README's drop-in file works."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools.core.registry import DuplicateToolError
from local_tools.transports.cli import main

README = Path(__file__).parents[2] / "README.md"

GOOD = '''
from local_tools import Args, ToolContext, tool

class ShoutArgs(Args):
    text: str

@tool("shout", args=ShoutArgs, aliases=("yell",))
def shout(args: ShoutArgs, ctx: ToolContext) -> dict:
    """Upper-case some text."""
    return {"text": args.text.upper()}
'''

BROKEN = '''
from local_tools import Args, ToolContext, tool

SETTING = load_setting()

@tool("greet", aliases=("hello",))
def greet(args: Args, ctx: ToolContext) -> dict:
    """Say hello."""
    return {}
'''


@pytest.fixture
def tools_dir(workspace: Path) -> Path:
    folder = workspace / ".local-tools" / "tools"
    folder.mkdir(parents=True)
    return folder


def test_a_broken_file_leaves_the_others_working(make_toolbox: Any, tools_dir: Path) -> None:
    (tools_dir / "good.py").write_text(GOOD)
    (tools_dir / "broken.py").write_text(BROKEN)
    tb = make_toolbox(trust=True)
    assert ok(tb.run("yell", {"text": "hi"})) == {"text": "HI"}
    assert ok(tb.run("list_dir"))
    [failure] = tb.registry.failures
    assert failure.source == str(tools_dir / "broken.py")
    assert failure.error == "NameError: name 'load_setting' is not defined (line 4)"
    assert failure.names == ("broken", "greet", "hello")
    names = {t["name"] for t in tb.tools()}
    assert "shout" in names and "greet" not in names and "broken" not in names
    # Called by any name it declares: UNKNOWN_TOOL saying it failed to load, and why.
    for name in ("greet", "HELLO", "broken"):
        message = err(tb.run(name, {"anything": 1}), "UNKNOWN_TOOL")
        assert "failed to load" in message and "broken.py" in message
        assert "NameError: name 'load_setting' is not defined (line 4)" in message
    details = tb.run("greet")["error"]["details"]
    assert details["failed_source"].endswith("broken.py")
    # A name no file declares is still just unknown.
    assert "There is no tool named 'grete'" in err(tb.run("grete"), "UNKNOWN_TOOL")


def test_syntax_errors_and_missing_modules(make_toolbox: Any, tools_dir: Path) -> None:
    (tools_dir / "syntax.py").write_text("def broken(:\n    pass\n")
    (tools_dir / "missing.py").write_text("import no_such_module_anywhere\n")
    tb = make_toolbox(trust=True)
    errors = {Path(f.source).name: f.error for f in tb.registry.failures}
    assert errors["syntax.py"].startswith("SyntaxError: ") and "line 1" in errors["syntax.py"]
    assert errors["missing.py"] == (
        "ModuleNotFoundError: No module named 'no_such_module_anywhere' (line 1)"
    )
    assert "SyntaxError" in err(tb.run("syntax"), "UNKNOWN_TOOL")
    assert "local_tools_workspace_tools.missing" not in sys.modules


def test_a_tool_whose_schema_cannot_be_built_is_a_failure(
    make_toolbox: Any, tools_dir: Path
) -> None:
    (tools_dir / "odd.py").write_text(
        "from collections.abc import Callable\n"
        "from local_tools import Args, tool\n\n"
        "class OddArgs(Args):\n    callback: Callable[[], int]\n\n"
        '@tool("odd", args=OddArgs)\ndef odd(args, ctx):\n    "Odd."\n'
    )
    tb = make_toolbox(trust=True)
    [failure] = tb.registry.failures
    assert failure.error.startswith("tool 'odd': ")
    assert {t["name"] for t in tb.tools()} >= {"read_file"}  # listing still works
    assert "failed to load" in err(tb.run("odd"), "UNKNOWN_TOOL")


def test_a_name_clash_stays_an_error_naming_both(make_toolbox: Any, tools_dir: Path) -> None:
    (tools_dir / "clash.py").write_text(GOOD.replace('("yell",)', '("FileRead",)'))
    with pytest.raises(DuplicateToolError, match=r"clash\.py.*'read_file' from builtin"):
        make_toolbox(trust=True)


def test_reusing_a_builtin_tool_object_is_no_clash(make_toolbox: Any, tools_dir: Path) -> None:
    (tools_dir / "reuse.py").write_text(
        "from local_tools.tools.read_file import read_file\n" + GOOD + "loud = shout\n"
    )
    tb = make_toolbox(trust=True)
    assert tb.registry.source("shout").endswith("reuse.py")
    assert tb.registry.source("read_file") == "builtin"
    assert tb.registry.failures == []


def test_a_broken_entry_point_is_a_failure(
    make_toolbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "lt_broken_demo").mkdir(parents=True)
    (site / "lt_broken_demo" / "__init__.py").write_text("raise ImportError('no backend')\n")
    dist = site / "lt_broken_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lt-broken-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[local_tools.tools]\ndemo = lt_broken_demo:tools\n")
    monkeypatch.syspath_prepend(str(site))
    try:
        tb = make_toolbox(trust=True)
        [failure] = tb.registry.failures
        assert failure.source == "entry point 'demo' (lt_broken_demo:tools)"
        assert failure.error == "ImportError: no backend"
        assert "no backend" in err(tb.run("demo"), "UNKNOWN_TOOL")
        assert ok(tb.run("list_dir"))
    finally:
        sys.modules.pop("lt_broken_demo", None)


def test_list_and_doctor_report_the_failure(
    tools_dir: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tools_dir / "broken.py").write_text(BROKEN)
    assert main(["trust", "--yes", "--workspace", str(workspace)]) == 0
    capsys.readouterr()
    assert main(["list", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr()
    assert "read_file" in out.out
    assert f"local-tools: not loaded: {tools_dir / 'broken.py'}: NameError" in out.err
    assert main(["list", "--json", "--workspace", str(workspace)]) == 0
    assert "broken.py" in capsys.readouterr().err
    assert main(["doctor", "--workspace", str(workspace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(re.match(r"custom tools +0 loaded, 1 failed to load", line) for line in lines)
    assert any(re.match(r"  not loaded +.*broken\.py: NameError", line) for line in lines)


def _readme_drop_in() -> tuple[str, str]:
    """The README's complete drop-in file: its path (first line) and its code."""
    blocks = re.findall(
        r"```python\n(# \.local-tools/tools/\S+\.py\n.*?)```", README.read_text(), re.S
    )
    assert len(blocks) == 1, "the README shows one drop-in tool file"
    first, _, _ = blocks[0].partition("\n")
    return first.removeprefix("# "), blocks[0]


def test_the_readme_drop_in_file_works_as_written(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    relative, code = _readme_drop_in()
    target = workspace / relative
    target.parent.mkdir(parents=True)
    target.write_text(code)
    (workspace / "README.md").write_text("one two three\nfour\n")
    # Exactly the commands the README shows.
    assert main(["trust", "--yes", "--workspace", str(workspace)]) == 0
    capsys.readouterr()
    assert main(["call", "word_count", "path=README.md", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr()
    assert '"words": 4' in out.out and '"lines": 2' in out.out, out
    assert main(["list", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr()
    assert "word_count" in out.out and out.err == ""


def test_the_readme_drop_in_file_honours_permissions(make_toolbox: Any, workspace: Path) -> None:
    relative, code = _readme_drop_in()
    (workspace / relative).parent.mkdir(parents=True)
    (workspace / relative).write_text(code)
    (workspace / "secret.txt").write_text("s3cret")
    tb = make_toolbox(
        {"permissions": {"read:file": {"*": "allow", "secret.txt": "deny"}}}, trust=True
    )
    assert "secret.txt" in err(tb.run("word_count", {"path": "secret.txt"}), "PERMISSION_DENIED")
    assert err(tb.run("word_count", {"path": "../outside.txt"}), "PERMISSION_DENIED")

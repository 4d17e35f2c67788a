"""Registry lookup order, duplicate names, toolsets, and custom tool loading."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Args, ToolContext, tool
from local_tools.core.registry import DuplicateToolError, Registry
from local_tools.tools import builtin_tools


def _make(name: str, aliases: tuple[str, ...] = (), toolset: str = "x") -> Any:
    @tool(name, aliases=aliases, toolset=toolset, blocking=False)
    def func(args: Args, ctx: ToolContext) -> dict[str, str]:
        """A test tool."""
        return {"name": name}

    return func


def test_lookup_order_exact_then_casefold_then_alias() -> None:
    reg = Registry([_make("Alpha", aliases=("first",)), _make("alpha_two")])
    assert reg.resolve("Alpha").name == "Alpha"
    assert reg.resolve("ALPHA").name == "Alpha"
    assert reg.resolve("FIRST").name == "Alpha"
    assert reg.resolve("alpha_two").name == "alpha_two"
    assert reg.resolve("missing") is None


def test_duplicate_name_is_an_error_with_hint() -> None:
    reg = Registry([_make("read_file")])
    with pytest.raises(DuplicateToolError, match=r"already taken by 'read_file'.*never renamed"):
        reg.add(_make("READ_FILE"), source="plugin.py")
    with pytest.raises(DuplicateToolError, match="'read_file'"):
        reg.add(_make("other", aliases=("read_file",)))
    # the failed additions left nothing half-registered
    assert [t.name for t in reg.all()] == ["read_file"]
    assert reg.resolve("other") is None


def test_builtin_names_and_aliases_are_unique() -> None:
    reg = Registry(builtin_tools())  # would raise on any clash
    assert reg.resolve("FileRead").name == "read_file"
    assert reg.resolve("ListDirectory").name == "list_dir"
    assert reg.resolve("FileDelete").name == "file_delete"


def test_toolsets_enable_and_disable() -> None:
    reg = Registry(
        [_make("a", toolset="files"), _make("b", toolset="web"), _make("c", toolset="web")]
    )
    reg.set_toolsets(["files"])
    assert [t.name for t in reg.enabled()] == ["a"]
    reg.set_toolsets(["*"], disabled=["web"])
    assert [t.name for t in reg.enabled()] == ["a"]
    reg.set_toolsets(["*"], disabled=["c"])
    assert [t.name for t in reg.enabled()] == ["a", "b"]
    assert reg.resolve("c") is None and reg.resolve("c", include_disabled=True) is not None


def test_closest_name() -> None:
    reg = Registry(builtin_tools())
    assert reg.closest("read_fiel") == "read_file"
    assert reg.closest("ListDir") == "list_dir"
    assert reg.closest("zzzzzz") is None


@pytest.mark.parametrize(
    ("name", "guess"),
    [
        ("read_fiel", "read_file"),  # two letters swapped
        ("raed_file", "read_file"),
        ("write_fle", "write_file"),  # one left out
        ("grepp", "grep"),
        ("gerp", "grep"),
        ("browser_clik", "browser_click"),
        ("websearch", "web_search"),  # separators and case
        ("Web-Fetch", "web_fetch"),
        ("fetch", "web_fetch"),  # a word of one tool's name only
        ("kill", "process_kill"),
        ("nosuch", None),  # far from every name: no guess (was browser_launch)
        ("nosuchtool", None),  # (was call_tool)
        ("git_status", None),  # (was file_stat)
        ("cat", None),
        ("process", None),  # a word of several tools' names: which one?
        ("todo", None),
        ("", None),
        ("___", None),
    ],
)
def test_closest_suggests_only_close_names(name: str, guess: str | None) -> None:
    assert Registry(builtin_tools()).closest(name) == guess


PLUGIN = '''
from local_tools import Args, ToolContext, tool

class ShoutArgs(Args):
    text: str

@tool("shout", args=ShoutArgs, toolset="custom", aliases=("yell",))
def shout(args: ShoutArgs, ctx: ToolContext) -> dict:
    """Upper-case some text."""
    return {"text": args.text.upper(), "workspace": str(ctx.workspace)}
'''


def test_workspace_tools_are_loaded(make_toolbox: Any, workspace: Path) -> None:
    folder = workspace / ".local-tools" / "tools"
    folder.mkdir(parents=True)
    (folder / "shout.py").write_text(PLUGIN)
    tb = make_toolbox(trust=True)
    out = ok(tb.run("yell", {"text": "hey"}))
    assert out == {"text": "HEY", "workspace": str(workspace.resolve())}
    assert tb.registry.source("shout").endswith("shout.py")
    assert make_toolbox(plugins=False).registry.resolve("shout") is None


def test_workspace_tool_clashing_with_builtin_fails_loudly(
    make_toolbox: Any, workspace: Path
) -> None:
    folder = workspace / ".local-tools" / "tools"
    folder.mkdir(parents=True)
    (folder / "clash.py").write_text(PLUGIN.replace('"shout"', '"read_file"'))
    with pytest.raises(DuplicateToolError, match=r"clash\.py"):
        make_toolbox(trust=True)


def test_entry_point_tools_are_loaded(make_toolbox: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "lt_plugin_demo").mkdir(parents=True)
    (site / "lt_plugin_demo" / "__init__.py").write_text(
        PLUGIN.replace('"shout"', '"ep_shout"').replace('("yell",)', "()")
    )
    dist = site / "lt_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lt-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[local_tools.tools]\ndemo = lt_plugin_demo:shout\n")
    sys.path.insert(0, str(site))
    try:
        tb = make_toolbox()
        assert ok(tb.run("ep_shout", {"text": "a"}))["text"] == "A"
        assert "entry point 'demo'" in tb.registry.source("ep_shout")
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("lt_plugin_demo", None)


def test_tool_needs_description() -> None:
    with pytest.raises(ValueError, match="needs a description"):

        @tool("nodoc")
        def nodoc(args: Args, ctx: ToolContext) -> None:
            pass


def test_unknown_tool_via_runner_mentions_custom(make_toolbox: Any) -> None:
    tb = make_toolbox(tools=[_make("custom_thing")])
    assert "custom_thing" in err(tb.run("custom_thin"), "UNKNOWN_TOOL")

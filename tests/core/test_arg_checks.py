"""Values no tool can take are INVALID_INPUT naming the parameter, through a real Toolbox.

Each class of value that reached the OS, SQLite or a codec as an INTERNAL_ERROR before
(core/arg_checks.py): NUL characters, lone surrogates, integers beyond 64 bits, floats
that are not finite, deep nesting; and text a tool writes verbatim, which may hold NUL.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import Field

from local_tools import Toolbox
from local_tools.core.arg_checks import MAX_DEPTH
from local_tools.core.context import ToolContext
from local_tools.core.errors import NotFound
from local_tools.core.tool import Args, tool
from local_tools.knowledge.memory import promote
from local_tools.knowledge.sqlite import SqliteStore


def refused(envelope: dict[str, Any], param: str) -> str:
    """The message of an INVALID_INPUT envelope that names `param`; it must be JSON."""
    assert envelope["success"] is False, envelope
    error = envelope["error"]
    assert error["error_code"] == "INVALID_INPUT", error
    assert f"'{param}'" in error["message"], error["message"]
    json.dumps(envelope, ensure_ascii=False).encode("utf-8")  # a transport can send it
    return str(error["message"])


@pytest.mark.parametrize(
    ("name", "args", "param"),
    [
        ("glob", {"pattern": "*.py\x00"}, "pattern"),
        ("grep", {"pattern": "a\x00b"}, "pattern"),
        ("grep", {"pattern": "a", "include": "*.py\x00"}, "include"),
        ("write_file", {"path": "x.txt", "content": "a", "encoding": "utf\x008"}, "encoding"),
        ("read_file", {"path": "a.txt\x00"}, "path"),
        ("save_memory", {"content": "c", "title": "a\x00b"}, "title"),
    ],
)
def test_a_nul_character_is_refused_naming_the_parameter(
    tb: Toolbox, workspace: Path, name: str, args: dict[str, Any], param: str
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    assert "NUL" in refused(tb.run(name, args), param)
    assert not (workspace / "x.txt").exists()


def test_text_a_tool_writes_verbatim_may_hold_nul(tb: Toolbox, workspace: Path) -> None:
    assert tb.run("write_file", {"path": "n.bin", "content": "a\x00b"})["success"] is True
    assert (workspace / "n.bin").read_bytes() == b"a\x00b"
    # edit and multi_edit change text files only: a NUL would make one binary
    (workspace / "t.txt").write_text("alpha\n")
    edits = [{"old_string": "alpha", "new_string": "a\x00"}]
    refused(tb.run("multi_edit", {"path": "t.txt", "edits": edits}), "edits.0.new_string")
    assert (workspace / "t.txt").read_text() == "alpha\n"
    # ...but not the path beside it
    refused(tb.run("write_file", {"path": "n\x00.bin", "content": "x"}), "path")


def test_a_lone_surrogate_is_refused_at_any_depth(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    message = refused(tb.run("read_file", {"path": "\ud800.txt"}), "path")
    assert "surrogate" in message and "U+D800" in message
    edits = [
        {"old_string": "alpha", "new_string": "ok"},
        {"old_string": "x", "new_string": "\udfff"},
    ]
    refused(tb.run("multi_edit", {"path": "a.txt", "edits": edits}), "edits.1.new_string")
    assert (workspace / "a.txt").read_text() == "alpha\n"  # nothing half-applied


@pytest.mark.parametrize("name", ["promote_memory", "promote_to_decision", "promote_to_pattern"])
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**40])
def test_an_integer_beyond_64_bits_is_refused(tb: Toolbox, name: str, value: int) -> None:
    args: dict[str, Any] = {"id": value}
    if name == "promote_memory":
        args["to"] = "decision"
    assert "64-bit" in refused(tb.run(name, args), "id")


def test_the_largest_64_bit_id_is_simply_not_found(tb: Toolbox) -> None:
    envelope = tb.run("promote_to_decision", {"id": 2**63 - 1})
    assert envelope["error"]["error_code"] == "NOT_FOUND"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_number_json_cannot_carry_is_refused(tb: Toolbox, workspace: Path, value: float) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    refused(tb.run("read_file", {"path": "a.txt", "offset": value}), "offset")


def test_deep_nesting_is_refused_before_validation(tb: Toolbox) -> None:
    deep: Any = "x"
    for _ in range(5000):  # deeper than Python's recursion limit
        deep = [deep]
    message = refused(tb.run("glob", {"pattern": deep}), "pattern." + ".".join(["0"] * MAX_DEPTH))
    assert f"deeper than {MAX_DEPTH}" in message


def test_a_bad_parameter_name_is_shown_escaped(tb: Toolbox) -> None:
    message = refused(tb.run("read_file", {"path": "a.txt", "k\x00": 1}), "k\\x00")
    assert "\x00" not in message


def test_plugin_tools_get_the_same_checks_and_declare_their_verbatim_text(
    make_toolbox: Any, workspace: Path
) -> None:
    seen: list[str] = []

    class StoreArgs(Args):
        verbatim_text: ClassVar[frozenset[str]] = frozenset({"blob"})
        key: str = Field(description="A name.")
        blob: str = Field("", description="Stored as given.")

    @tool("store_blob", args=StoreArgs, description="Keep a blob.")
    def store_blob(args: StoreArgs, ctx: ToolContext) -> dict[str, Any]:
        seen.append(args.blob)
        return {"ok": True}

    box = make_toolbox(tools=[store_blob])
    assert box.run("store_blob", {"key": "k", "blob": "a\x00b"})["success"] is True
    refused(box.run("store_blob", {"key": "k\x00", "blob": ""}), "key")
    refused(box.run("store_blob", {"key": "k", "blob": "\ud800"}), "blob")
    assert seen == ["a\x00b"]


def test_the_store_itself_answers_not_found_for_an_id_beyond_64_bits(tmp_path: Path) -> None:
    """A plugin calling the knowledge engine with its own id gets NOT_FOUND too."""
    store = SqliteStore(tmp_path / "k" / "knowledge.sqlite")
    try:
        with pytest.raises(NotFound):
            promote(store, entry_id=2**64, to="decision", user_id="u", tool="plugin")
    finally:
        store.close()

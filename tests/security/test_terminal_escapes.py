"""Nothing a model or a plugin names reaches the person's terminal as an escape sequence
(issue: "Security, second pass", Low): `local-tools log` escapes every column, and a
tool name with control characters is refused where tools are declared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from local_tools import Args, Toolbox, tool

ERASE = "\x1b[2K\r"  # erase the line, back to its start
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: set the clipboard
BIDI = "\u202e"


def test_log_prints_no_escape_sequences(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "a.txt").write_text("x\n")
    with Toolbox(ws, state_dir=state) as tb:
        tb.run("read_file", {"path": "a.txt"}, user_id=f"eve{ERASE}{CLIPBOARD}")
        tb.run(f"read_file{ERASE}", {"path": f"a.txt{CLIPBOARD}"}, user_id=f"eve{BIDI}")
        tb.run("grep", {"pattern": f"x{CLIPBOARD}"}, user_id="\x9b2K")  # C1 CSI
    env = {**os.environ, "LOCAL_TOOLS_STATE_DIR": str(state)}
    out = subprocess.run(
        [sys.executable, "-m", "local_tools", "log", "--workspace", str(ws)],
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout.decode("utf-8")
    assert out.count("\n") >= 3, out
    for bad in ("\x1b", "\x07", "\x9b", "\r", BIDI):
        assert bad not in out, repr(out)
    assert "\\x1b" in out  # shown, escaped, rather than dropped


class _NoArgs(Args):
    pass


@pytest.mark.parametrize("name", [f"greet{ERASE}", "greet\n", f"greet{BIDI}", "", "a b", "x" * 65])
def test_tool_names_with_control_characters_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="tool name"):
        tool(name, args=_NoArgs, description="d")(lambda args, ctx: {})
    with pytest.raises(ValueError, match="tool name"):
        tool("greet", args=_NoArgs, description="d", aliases=(name,))(lambda args, ctx: {})


def test_a_plugin_naming_a_tool_with_escapes_is_not_loaded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".local-tools" / "tools").mkdir(parents=True)
    (ws / ".local-tools" / "tools" / "evil.py").write_text(
        "from local_tools import Args, tool\n"
        "class A(Args):\n    pass\n"
        f"t = tool({'ok' + ERASE!r}, args=A, description='d')(lambda a, c: {{}})\n"
    )
    with Toolbox(ws, state_dir=tmp_path / "state", audit=False, trust=True) as tb:
        assert not any("\x1b" in t["name"] for t in tb.tools())
        assert [f.source for f in tb.registry.failures] == [
            str(ws / ".local-tools" / "tools" / "evil.py")
        ]


@pytest.mark.parametrize("trusted", [False, True])
def test_calling_a_name_with_escapes_is_an_envelope(tmp_path: Path, trusted: bool) -> None:
    """The name a refused or untrusted plugin declared may be any text: calling it answers
    UNKNOWN_TOOL, escaped, never a raise (it raised ValueError before)."""
    ws = tmp_path / "ws"
    (ws / ".local-tools" / "tools").mkdir(parents=True)
    (ws / ".local-tools" / "tools" / "evil.py").write_text(
        "from local_tools import Args, tool\n"
        "class A(Args):\n    pass\n"
        f"t = tool({'ok' + ERASE!r}, args=A, description='d')(lambda a, c: {{}})\n"
    )
    with Toolbox(ws, state_dir=tmp_path / "state", audit=False, trust=trusted) as tb:
        envelope = tb.run(f"ok{ERASE}", {})
    assert envelope["error"]["error_code"] == "UNKNOWN_TOOL"
    assert "\x1b" not in envelope["error"]["message"]

"""Names read from a file or a pipe were never checked: a command xargs runs on them asks
`external:file` (found by the adversarial re-review of issue "Nothing gets past the
person": `xargs -a list cat` printed a file outside the workspace, unasked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools import Toolbox

CANARY = "OUTSIDE-CANARY-5"


@pytest.fixture
def tb(tmp_path: Path) -> Iterator[Toolbox]:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(CANARY + "\n")
    (ws / "list").write_text(f"{secret}\n")
    (ws / "list0").write_bytes(str(secret).encode() + b"\0")
    with Toolbox(ws, state_dir=tmp_path / "state", audit=False) as toolbox:
        yield toolbox


@pytest.mark.parametrize(
    "command",
    [
        "xargs -a list cat",
        "cat list | xargs cat",
        "xargs cat < list",
        "xargs -0 -a list0 head",
        "xargs -a list grep -h .",
        "cat list | xargs -I{} cat {}",
        "cat list | xargs -n1 tail -n1",
    ],
)
def test_files_named_by_xargs_input_ask(tb: Toolbox, command: str) -> None:
    envelope = tb.run("exec_cmd", {"command": command})
    assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope
    assert CANARY not in str(envelope)


def test_xargs_echo_still_runs(tb: Toolbox) -> None:
    envelope = tb.run("exec_cmd", {"command": "printf 'a b' | xargs echo"})
    assert envelope["success"], envelope
    assert envelope["output"]["stdout"] == "a b\n"


@pytest.mark.parametrize("command", ["GLOBIGNORE=x; cat ?env", "GLOBIGNORE=x; grep -H . ?en?"])
def test_globignore_cannot_make_a_pattern_reach_dotfiles(tb: Toolbox, command: str) -> None:
    """GLOBIGNORE turns on dotglob: `?env` then matches `.env` (sandbox or not)."""
    (tb.workspace / ".env").write_text(f"KEY={CANARY}\n")
    envelope = tb.run("exec_cmd", {"command": command})
    assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope
    assert CANARY not in str(envelope)

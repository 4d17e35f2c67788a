"""The read-only commands allowed by default cannot be spelled to write: `uniq -??` also
matched `uniq - X`, which writes X (found by the adversarial re-review of issue "Nothing
gets past the person")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools import Toolbox


@pytest.fixture
def tb(tmp_path: Path) -> Iterator[Toolbox]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("b\na\na\n")
    with Toolbox(ws, state_dir=tmp_path / "state", audit=False) as toolbox:
        yield toolbox


@pytest.mark.parametrize(
    "command", ["uniq - X", "cat a.txt | uniq - P", "uniq -c - Q", "sort a.txt | uniq -- R"]
)
def test_uniq_never_writes_unasked(tb: Toolbox, command: str) -> None:
    envelope = tb.run("exec_cmd", {"command": command})
    assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope
    assert sorted(p.name for p in tb.workspace.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("command", ["sort a.txt | uniq", "sort a.txt | uniq -c", "uniq -cd"])
def test_uniq_filtering_stdin_still_runs(tb: Toolbox, command: str) -> None:
    assert tb.run("exec_cmd", {"command": command})["success"]


@pytest.mark.parametrize(
    "command",
    [
        "sort --files0-from=list0",
        "sort --files0-from list0",
        "sort -r --files0-fr=list0",
        "wc --files0-from=list0",
        "du --files0-from=list0",
        "find -files0-from list0",
    ],
)
def test_a_list_of_files_read_from_a_file_asks(tb: Toolbox, tmp_path: Path, command: str) -> None:
    """The names in the list were never checked: they may lead outside the workspace."""
    secret = tmp_path / "outside.txt"
    secret.write_text("OUTSIDE-CANARY\n")
    (tb.workspace / "list0").write_bytes(str(secret).encode() + b"\0")
    envelope = tb.run("exec_cmd", {"command": command})
    assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope
    assert "OUTSIDE-CANARY" not in str(envelope)


@pytest.mark.parametrize(
    "command",
    [
        "file -f list",
        "file --files-from list",
        "sha256sum -c sums",
        "cat sums | sha256sum -c",
        "md5sum --check sums",
        "jq -n 'import \"../outside\" as $x; $x'",
        "jq -n 'include \"../lib\"; 1'",
        "jq -L .. -n 1",
    ],
)
def test_programs_reading_paths_named_in_data_ask(
    tb: Toolbox, tmp_path: Path, command: str
) -> None:
    """From the last re-review: these read files outside the workspace by names in a file
    or a filter, unasked."""
    (tmp_path / "outside.json").write_text('{"secret": "OUTSIDE-JSON-CANARY"}')
    (tb.workspace / "list").write_text(str(tmp_path / "outside.json") + "\n")
    (tb.workspace / "sums").write_text(f"0  {tmp_path / 'outside.json'}\n")
    envelope = tb.run("exec_cmd", {"command": command})
    assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope
    assert "OUTSIDE-JSON-CANARY" not in str(envelope)

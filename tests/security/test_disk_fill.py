"""Filling the disk needs approval (issue: "Security, second pass", Medium): `seq inf` in
the background runs without asking, so what its output may take on disk is capped: each
spill file stops at SPILL_FILE_LIMIT and no new one starts while the spill folder holds
SPILL_DIR_LIMIT; the model is told what was not saved. Real commands, real files."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools import Toolbox
from local_tools.core import output
from local_tools.shell import capture


@pytest.fixture
def tb(tmp_path: Path) -> Iterator[Toolbox]:
    ws = tmp_path / "ws"
    ws.mkdir()
    with Toolbox(ws, state_dir=tmp_path / "state", audit=False) as toolbox:
        yield toolbox


def _spills(tb: Toolbox) -> list[Path]:
    return [p for p in tb.spill_dir.iterdir() if p.is_file()]


def test_endless_background_output_stops_at_the_spill_file_limit(tb: Toolbox) -> None:
    started = tb.run("exec_cmd", {"command": "seq inf", "background": True})
    assert started["success"], started  # runs without asking: a read-only command
    pid = started["output"]["process_id"]
    deadline = time.monotonic() + 90
    note = ""
    try:
        while time.monotonic() < deadline and "stops at" not in note:
            time.sleep(0.5)
            polled = tb.run("process_output", {"process_id": pid})
            assert polled["success"], polled
            note = polled["output"].get("note", "")
        assert "stops at its first 64 MB" in note, note
        # Still printing, still capped: the file does not grow past the limit.
        time.sleep(1)
        sizes = [p.stat().st_size for p in _spills(tb)]
        assert sizes and max(sizes) == capture.SPILL_FILE_LIMIT
    finally:
        tb.run("process_kill", {"process_id": pid})


def test_no_new_spill_file_while_the_folder_is_full(
    tb: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "SPILL_DIR_LIMIT", 1024 * 1024)  # 1 MB, to fill it quickly
    (tb.spill_dir / "earlier.txt").write_bytes(b"x" * 1024 * 1024)
    out = tb.run("exec_cmd", {"command": "seq 1 400000"})  # 2.6 MB, past the preview
    assert out["success"], out
    assert "stdout_path" not in out["output"]
    assert [p.name for p in _spills(tb)] == ["earlier.txt"]
    assert "not saved: the output folder already holds 1 MB" in out["output"]["stdout"]


def test_a_tool_output_is_not_saved_while_the_folder_is_full(
    tb: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's own bounding (any tool's long output) keeps to the same folder limit."""
    monkeypatch.setattr(output, "SPILL_DIR_LIMIT", 1024 * 1024)
    (tb.spill_dir / "earlier.txt").write_bytes(b"x" * 1024 * 1024)
    bounded = output.bound_text(
        "x\n" * 200_000, max_lines=10, max_bytes=1000, spill_dir=tb.spill_dir, name="t"
    )
    assert bounded.spill_path is None
    assert "was not saved" in bounded.text
    assert [p.name for p in _spills(tb)] == ["earlier.txt"]


def test_many_background_commands_together_keep_to_the_folder_limit(
    tb: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is counted on every write, not only when a file opens: four `seq inf`
    together do not pass it (8 of them left 65 MB in a 32 MB folder)."""
    monkeypatch.setattr(output, "SPILL_DIR_LIMIT", 4 * 1024 * 1024)
    ids = []
    for _ in range(4):
        started = tb.run("exec_cmd", {"command": "seq inf", "background": True})
        assert started["success"], started
        ids.append(started["output"]["process_id"])
    try:
        time.sleep(4)  # seq prints far more than 4 MB in that time
        total = sum(p.stat().st_size for p in _spills(tb))
        assert 0 < total <= output.SPILL_DIR_LIMIT
        notes = [tb.run("process_output", {"process_id": i})["output"].get("note", "") for i in ids]
        assert any("output folder holds its most" in n for n in notes), notes
    finally:
        for i in ids:
            tb.run("process_kill", {"process_id": i})

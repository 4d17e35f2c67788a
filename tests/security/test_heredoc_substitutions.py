"""A command substitution inside an unquoted here-document is read by bracket counting;
where bash would end it elsewhere (a comment running past a `)`, a `case` pattern, a
nested here-document) the command is not understood and asks (found by the adversarial
re-review of issue "Nothing gets past the person": these ran `touch` unasked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools import Toolbox


@pytest.fixture
def tb(tmp_path: Path) -> Iterator[Toolbox]:
    ws = tmp_path / "ws"
    ws.mkdir()
    with Toolbox(ws, state_dir=tmp_path / "state", audit=False) as toolbox:
        yield toolbox


ATTACKS = [
    "cat <<EOF\n$(# )\ntouch PWN)\nEOF",
    "cat <<EOF\n$(echo hi #)\ntouch PWN)\nEOF",
    "cat <<EOF | cat\n$(# )\ntouch PWN)\nEOF",
    "cat <<EOF\nx $(: '#' ; # ) ' \ntouch PWN)\nEOF",
    "cat <<EOF\n$(case a in a) touch PWN;; esac)\nEOF",
    "cat <<EOF\n$(cat <<X\n)\nX\ntouch PWN)\nEOF",
    "cat <<EOF\n`# `\n$(# )\ntouch PWN)\nEOF",
]


@pytest.mark.parametrize("command", ATTACKS)
def test_a_substitution_whose_end_is_unsure_asks(tb: Toolbox, command: str) -> None:
    envelope = tb.run("exec_cmd", {"command": command})
    assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope
    assert not (tb.workspace / "PWN").exists()


def test_plain_substitutions_in_a_here_document_still_run(tb: Toolbox) -> None:
    envelope = tb.run("exec_cmd", {"command": "cat <<EOF\nyear $(date +%Y), `pwd`\nEOF"})
    assert envelope["success"], envelope
    assert envelope["output"]["stdout"].startswith("year ")

"""An edit shows what it read (its diff, the closest block of a failed match, the lines
near a failed hunk), so the edit tools need read:file as read_file does: editing `.env`
asks like reading it, and with nobody to ask nothing of it is printed (found by the
adversarial re-review of issue "Nothing gets past the person")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_tools import Toolbox

CANARY = "dotenv-canary-77"


@pytest.fixture
def tb(tmp_path: Path) -> Iterator[Toolbox]:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    for name in (".env", "sub/prod.env", ".env.local"):
        (ws / name).write_text(f"API_KEY={CANARY}\nTOKEN=x{CANARY}\n")
    (ws / "link-to-env").symlink_to(".env")
    with Toolbox(ws, state_dir=tmp_path / "state", audit=False) as toolbox:
        yield toolbox


CALLS = [
    ("edit", {"path": ".env", "old_string": "API_KEY", "new_string": "API"}),
    ("edit", {"path": "sub/prod.env", "old_string": "TOKEN=y", "new_string": "z"}),
    ("edit", {"path": "link-to-env", "old_string": "API_KEY", "new_string": "API"}),
    ("multi_edit", {"path": ".env", "edits": [{"old_string": "API_KEY", "new_string": "K"}]}),
    ("multi_edit", {"path": ".env", "edits": [{"old_string": "nope", "new_string": "K"}]}),
    (
        "apply_patch",
        {"patch": "*** Begin Patch\n*** Update File: .env.local\n@@\n-nope\n+x\n*** End Patch"},
    ),
    (
        "apply_patch",
        {
            "patch": "*** Begin Patch\n*** Update File: .env\n@@\n-API_KEY="
            + CANARY
            + "\n+API_KEY=new\n*** End Patch"
        },
    ),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: .env\n*** End Patch"}),
]


@pytest.mark.parametrize(("tool", "args"), CALLS)
def test_editing_a_secret_file_asks_and_prints_nothing(
    tb: Toolbox, tool: str, args: dict[str, object]
) -> None:
    before = {p: p.read_text() for p in tb.workspace.rglob("*env*") if p.is_file()}
    envelope = tb.run(tool, args)
    assert not envelope["success"]
    assert envelope["error"]["error_code"] == "PERMISSION_DENIED", envelope["error"]
    assert CANARY not in json.dumps(envelope)
    assert {p: p.read_text() for p in before} == before  # and nothing changed


def test_an_ordinary_file_still_edits_without_asking(tb: Toolbox) -> None:
    (tb.workspace / "app.py").write_text("x = 1\n")
    tb.run("read_file", {"path": "app.py"})
    assert tb.run("edit", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"})[
        "success"
    ]
    assert (tb.workspace / "app.py").read_text() == "x = 2\n"

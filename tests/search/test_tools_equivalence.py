"""The grep and glob tools answer the same, envelope for envelope, with either engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from local_tools import Toolbox
from local_tools.search.engine import ENGINE_ENV
from local_tools.search.ripgrep import RG_ENV, Ripgrep
from local_tools.tools import builtin_tools
from local_tools.tools.glob import glob
from local_tools.tools.grep import grep

EXTRA = [] if "grep" in {t.name for t in builtin_tools()} else [grep, glob]

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("grep", {"pattern": "needle"}),  # over the cap
    ("grep", {"pattern": "needle", "context": 2, "path": "src"}),
    ("grep", {"pattern": r"def \w+\(", "include": "*.py"}),
    ("grep", {"pattern": "café|ÉLAN", "ignore_case": True}),
    ("grep", {"pattern": "foo$"}),
    ("grep", {"pattern": "nothing_matches_this"}),
    ("grep", {"pattern": "y{3,}"}),  # a long line, cut
    ("grep", {"pattern": "needle", "path": "crlf.txt"}),
    ("grep", {"pattern": "needle", "path": "binary.bin"}),
    ("grep", {"pattern": r"line \d needle 1[0-4]\d", "include": "many/*"}),
    ("glob", {"pattern": "**/*"}),
    ("glob", {"pattern": "*.py", "path": "src"}),
    ("glob", {"pattern": "*.{txt,md,log}"}),
    ("glob", {"pattern": "**/deep/*"}),
    ("glob", {"pattern": "/*"}),
]


@pytest.mark.parametrize(("tool", "args"), CALLS, ids=[f"{t}-{a}" for t, a in CALLS])
def test_same_envelopes(
    tree: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rg: Ripgrep,
    tool: str,
    args: dict[str, Any],
) -> None:
    outputs = []
    for engine in ("rg", "python"):
        monkeypatch.setenv(ENGINE_ENV, engine)
        monkeypatch.setenv(RG_ENV, rg.path)
        with Toolbox(
            tree, state_dir=tmp_path / engine, audit=False, plugins=False, tools=EXTRA
        ) as tb:
            env = tb.run(tool, args)
            assert env["success"], env
            outputs.append((env["output"], tb.render(env)))
    assert outputs[0] == outputs[1]

"""read_file: paging, line numbers, encodings, binary refusal, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox


def test_reads_whole_small_file(tb: Toolbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\ngamma\n")
    out = ok(tb.run("read_file", {"path": "a.txt"}))
    assert out["content"] == "alpha\nbeta\ngamma\n"
    assert (out["start_line"], out["end_line"], out["total_lines"]) == (1, 3, 3)
    assert out["truncated"] is False
    assert out["path"] == "a.txt"


def test_paging_with_offset_and_limit(tb: Toolbox, workspace: Path) -> None:
    (workspace / "n.txt").write_text("".join(f"{i}\n" for i in range(1, 101)))
    out = ok(tb.run("read_file", {"path": "n.txt", "offset": 10, "limit": 5}))
    assert out["content"] == "10\n11\n12\n13\n14\n"
    assert (out["start_line"], out["end_line"], out["total_lines"]) == (10, 14, 100)
    assert out["truncated"] is True
    text = tb.render(tb.run("read_file", {"path": "n.txt", "offset": 10, "limit": 5}))
    assert text.splitlines()[0] == "10\t10"
    assert "Use offset=15 to continue" in text


def test_default_limit_is_2000_lines(tb: Toolbox, workspace: Path) -> None:
    (workspace / "long.txt").write_text("x\n" * 5000)
    out = ok(tb.run("read_file", {"path": "long.txt"}))
    assert out["end_line"] == 2000 and out["total_lines"] == 5000 and out["truncated"]


def test_byte_cap(tb: Toolbox, workspace: Path) -> None:
    (workspace / "wide.txt").write_text(("y" * 999 + "\n") * 200)
    out = ok(tb.run("read_file", {"path": "wide.txt"}))
    assert len(out["content"].encode()) <= 50 * 1024
    assert out["truncated"] and out["total_lines"] == 200


def test_long_line_is_cut(tb: Toolbox, workspace: Path) -> None:
    (workspace / "min.js").write_text("z" * 10_000 + "\nshort\n")
    out = ok(tb.run("read_file", {"path": "min.js"}))
    first, second = out["content"].splitlines()
    assert first.startswith("z" * 2000) and first.endswith("(line cut)") and len(first) < 2100
    assert second == "short"


def test_crlf_kept_exactly(tb: Toolbox, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    out = ok(tb.run("read_file", {"path": "w.txt"}))
    assert out["content"] == "one\r\ntwo\r\n"
    assert out["total_lines"] == 2


def test_bom_stripped_and_unicode(tb: Toolbox, workspace: Path) -> None:
    (workspace / "u.txt").write_bytes("\ufeffhéllo 🌍\n日本語\n".encode())
    out = ok(tb.run("read_file", {"path": "u.txt"}))
    assert out["content"] == "héllo 🌍\n日本語\n"


def test_encoding_honoured_and_errors_reported(tb: Toolbox, workspace: Path) -> None:
    (workspace / "l1.txt").write_bytes("café\n".encode("latin-1"))
    msg = err(tb.run("read_file", {"path": "l1.txt"}), "INVALID_INPUT")
    assert "not valid utf-8" in msg and "latin-1" in msg
    assert ok(tb.run("read_file", {"path": "l1.txt", "encoding": "latin-1"}))["content"] == "café\n"
    assert "Unknown encoding" in err(
        tb.run("read_file", {"path": "l1.txt", "encoding": "klingon"}), "INVALID_INPUT"
    )


def test_empty_file(tb: Toolbox, workspace: Path) -> None:
    (workspace / "empty").write_bytes(b"")
    out = ok(tb.run("read_file", {"path": "empty"}))
    assert out["content"] == "" and out["total_lines"] == 0
    assert tb.render(tb.run("read_file", {"path": "empty"})) == "(empty file)"


def test_no_trailing_newline(tb: Toolbox, workspace: Path) -> None:
    (workspace / "t").write_text("a\nb")
    out = ok(tb.run("read_file", {"path": "t"}))
    assert out["content"] == "a\nb" and out["total_lines"] == 2


def test_hidden_file_readable(tb: Toolbox, workspace: Path) -> None:
    (workspace / ".hidden").write_text("h\n")
    assert ok(tb.run("read_file", {"path": ".hidden"}))["content"] == "h\n"


def test_binary_refused(tb: Toolbox, workspace: Path) -> None:
    (workspace / "blob").write_bytes(b"\x00\x01\x02binary" * 100)
    assert "binary" in err(tb.run("read_file", {"path": "blob"}), "INVALID_INPUT")
    (workspace / "x.png").write_bytes(b"not really")
    assert "binary" in err(tb.run("read_file", {"path": "x.png"}), "INVALID_INPUT")


def test_directory_points_to_list_dir(tb: Toolbox, workspace: Path) -> None:
    (workspace / "d").mkdir()
    assert "list_dir" in err(tb.run("read_file", {"path": "d"}), "INVALID_INPUT")


def test_not_found_suggests_siblings(tb: Toolbox, workspace: Path) -> None:
    (workspace / "config.yaml").write_text("a: 1\n")
    env = tb.run("read_file", {"path": "config.yml"})
    msg = err(env, "NOT_FOUND")
    assert "config.yml" in msg and "config.yaml" in msg
    assert env["error"]["details"]["suggestions"] == ["config.yaml"]
    err(tb.run("read_file", {"path": "nope/deeper.txt"}), "NOT_FOUND")


def test_offset_past_end(tb: Toolbox, workspace: Path) -> None:
    (workspace / "s.txt").write_text("1\n2\n")
    msg = err(tb.run("read_file", {"path": "s.txt", "offset": 10}), "INVALID_INPUT")
    assert "past the end" in msg and "2 lines" in msg


@pytest.mark.parametrize(
    ("args", "field"),
    [({"path": "a", "offset": 0}, "offset"), ({"path": "a", "limit": 0}, "limit"), ({}, "path")],
)
def test_invalid_arguments(tb: Toolbox, args: dict[str, Any], field: str) -> None:
    assert f"'{field}'" in err(tb.run("read_file", args), "INVALID_INPUT")


def test_outside_workspace_denied(tb: Toolbox, workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("s3cret")
    for path in ("../secret.txt", str(workspace.parent / "secret.txt")):
        env = tb.run("read_file", {"path": path})
        assert err(env, "PERMISSION_DENIED")
        assert "s3cret" not in str(env)


def test_permission_rule_denies(make_toolbox: Any, workspace: Path) -> None:
    (workspace / "private").mkdir()
    (workspace / "private" / "k.txt").write_text("k")
    (workspace / "open.txt").write_text("o")
    tb = make_toolbox({"permissions": {"read:file": {"private/*": "deny"}}})
    msg = err(tb.run("read_file", {"path": "private/k.txt"}), "PERMISSION_DENIED")
    assert "read:file" in msg
    assert ok(tb.run("read_file", {"path": "open.txt"}))["content"] == "o"


def test_env_file_asks_and_without_asker_is_denied(tb: Toolbox, workspace: Path) -> None:
    (workspace / ".env").write_text("API_KEY=xyz\n")
    env = tb.run("read_file", {"path": ".env"})
    msg = err(env, "PERMISSION_DENIED")
    assert "xyz" not in str(env)
    assert "local-tools.toml" in msg


def test_deep_offset_large_file(tb: Toolbox, workspace: Path) -> None:
    with (workspace / "big.log").open("w") as f:
        for i in range(1, 300_001):
            f.write(f"row {i}\n")
    out = ok(tb.run("read_file", {"path": "big.log", "offset": 250_000, "limit": 2}))
    assert out["content"] == "row 250000\nrow 250001\n"
    assert out["total_lines"] == 300_000

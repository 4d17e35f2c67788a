"""The local-tools command, run as a real subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli_run import cli


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_call_prints_envelope(workspace: Path, state: Path) -> None:
    (workspace / "README.md").write_text("# hi\n")
    r = cli("call", "read_file", "path=README.md", cwd=workspace, state=state)
    assert r.returncode == 0, r.stderr
    env = json.loads(r.stdout)
    assert env["success"] and env["output"]["content"] == "# hi\n"


def test_call_types_follow_schema(workspace: Path, state: Path) -> None:
    # `content=123` stays text because content is a string; `limit=1` becomes a number.
    r = cli("call", "write_file", "path=n.txt", "content=123", cwd=workspace, state=state)
    assert r.returncode == 0, r.stdout
    assert (workspace / "n.txt").read_text() == "123"
    (workspace / "two.txt").write_text("a\nb\n")
    r = cli("call", "read_file", "path=two.txt", "limit=1", cwd=workspace, state=state)
    assert json.loads(r.stdout)["output"]["content"] == "a\n"


def test_call_json_args_and_text(workspace: Path, state: Path) -> None:
    (workspace / "a.txt").write_text("x\ny\n")
    r = cli(
        "call",
        "read_file",
        "--json",
        '{"path": "a.txt", "offset": 2}',
        "--text",
        cwd=workspace,
        state=state,
    )
    assert r.returncode == 0
    assert r.stdout.startswith("2\ty")


def test_tool_error_exit_1(workspace: Path, state: Path) -> None:
    r = cli("call", "read_file", "path=missing.txt", cwd=workspace, state=state)
    assert r.returncode == 1
    assert json.loads(r.stdout)["error"]["error_code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    "args", [("call", "read_file", "nokeyvalue"), ("call", "read_file", "--json", "[1"), ()]
)
def test_usage_error_exit_2(workspace: Path, state: Path, args: tuple[str, ...]) -> None:
    r = cli(*args, cwd=workspace, state=state)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


def test_bad_config_exit_2_names_key(workspace: Path, state: Path) -> None:
    (workspace / "local-tools.toml").write_text("[limits]\nmax_output_lines = -1\n")
    r = cli("list", cwd=workspace, state=state)
    assert r.returncode == 2
    assert "max_output_lines" in r.stderr and "Traceback" not in r.stderr


def test_ask_without_tty_is_denied(workspace: Path, state: Path) -> None:
    (workspace / "f").write_text("x")
    r = cli("call", "file_delete", "path=f", cwd=workspace, state=state)
    assert r.returncode == 1
    assert json.loads(r.stdout)["error"]["error_code"] == "PERMISSION_DENIED"
    assert (workspace / "f").exists()


def test_workspace_flag(tmp_path: Path, workspace: Path, state: Path) -> None:
    (workspace / "w.txt").write_text("w")
    r = cli(
        "call", "read_file", "path=w.txt", "--workspace", str(workspace), cwd=tmp_path, state=state
    )
    assert json.loads(r.stdout)["output"]["content"] == "w"


def test_list_and_json(workspace: Path, state: Path) -> None:
    r = cli("list", cwd=workspace, state=state)
    assert "[files]" in r.stdout and "read_file" in r.stdout and "FileRead" in r.stdout
    tools = json.loads(cli("list", "--json", cwd=workspace, state=state).stdout)
    assert {"read_file", "write_file", "list_dir", "file_stat", "file_delete"} <= {
        t["name"] for t in tools
    }


@pytest.mark.parametrize(
    ("fmt", "key"), [("openai", "function"), ("anthropic", "input_schema"), ("mcp", "inputSchema")]
)
def test_schema_formats(workspace: Path, state: Path, fmt: str, key: str) -> None:
    r = cli("schema", "--format", fmt, cwd=workspace, state=state)
    schemas = json.loads(r.stdout)
    assert schemas and all(key in s for s in schemas)
    if fmt == "mcp":
        read = next(s for s in schemas if s["name"] == "read_file")
        assert read["annotations"]["readOnlyHint"] is True


def test_log_shows_calls(workspace: Path, state: Path) -> None:
    cli("call", "read_file", "path=nope", cwd=workspace, state=state)
    cli("call", "list_dir", cwd=workspace, state=state, stdin="")
    r = cli("log", cwd=workspace, state=state)
    lines = r.stdout.splitlines()
    assert "list_dir" in lines[0] and "read_file" in lines[1] and "NOT_FOUND" in lines[1]
    r = cli("log", "--outcome", "error", "--json", cwd=workspace, state=state)
    records = json.loads(r.stdout)
    assert [rec["tool"] for rec in records] == ["read_file"]


def test_doctor(workspace: Path, state: Path) -> None:
    r = cli("doctor", cwd=workspace, state=state)
    assert r.returncode == 0
    assert "path jail" in r.stdout and "search" in r.stdout and str(workspace.resolve()) in r.stdout


def test_doctor_lists_language_servers(workspace: Path, state: Path) -> None:
    (workspace / "local-tools.toml").write_text(
        f'[lsp.mine]\ncommand = "{sys.executable}"\nextensions = [".mine"]\n\n'
        '[lsp.clangd]\ncommand = "no-such-clangd"\n\n[lsp.gopls]\nenabled = false\n'
    )
    assert cli("trust", "--yes", cwd=workspace, state=state).returncode == 0
    r = cli("doctor", cwd=workspace, state=state)
    assert r.returncode == 0, r.stderr
    rows = {
        line.split(None, 1)[0]: line.split(None, 1)[1]
        for line in r.stdout.splitlines()
        if line.startswith("  ") and line.split()
    }
    assert "language servers" in r.stdout and "on; " in r.stdout
    assert rows["mine"] == f"mine: {sys.executable}"  # configured, found
    assert rows["clangd"] == "C/C++: not found: apt-get install clangd"  # its install hint
    assert rows["gopls"].startswith("disabled by config")
    # basedpyright comes with the dev extra; pyright may or may not be here.
    assert (
        rows["basedpyright"].startswith("Python: ")
        and "basedpyright-langserver" in rows["basedpyright"]
    )
    assert rows["pyright"].startswith("Python: ")
    assert "extra [lsp]" in r.stdout


def test_init_writes_loadable_config(workspace: Path, state: Path) -> None:
    r = cli("init", cwd=workspace, state=state)
    assert r.returncode == 0 and (workspace / "local-tools.toml").exists()
    assert cli("list", cwd=workspace, state=state).returncode == 0
    assert cli("init", cwd=workspace, state=state).returncode == 2


def test_missing_workspace_is_a_usage_error(tmp_path: Path, state: Path) -> None:
    r = cli("list", "--workspace", str(tmp_path / "nope"), cwd=tmp_path, state=state)
    assert r.returncode == 2
    assert "nope" in r.stderr
    assert "Traceback" not in r.stderr


def test_broken_plugin_is_reported_and_the_rest_works(workspace: Path, state: Path) -> None:
    (workspace / ".local-tools" / "tools").mkdir(parents=True)
    (workspace / ".local-tools" / "tools" / "bad.py").write_text("raise RuntimeError('x')\n")
    assert cli("trust", "--yes", cwd=workspace, state=state).returncode == 0
    r = cli("list", cwd=workspace, state=state)
    assert r.returncode == 0
    assert "read_file" in r.stdout
    assert "bad.py: RuntimeError: x (line 1)" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("call", "bad", cwd=workspace, state=state)
    assert r.returncode == 1
    assert "failed to load" in json.loads(r.stdout)["error"]["message"]


def test_flags_before_the_subcommand_count(tmp_path: Path, workspace: Path, state: Path) -> None:
    (workspace / "secret.txt").write_text("s3cret")
    strict = tmp_path / "strict.toml"
    strict.write_text('[permissions]\n"read:file" = "deny"\n')
    r = cli(
        "--config", str(strict), "call", "read_file", "path=secret.txt", cwd=workspace, state=state
    )
    assert r.returncode == 1
    assert "s3cret" not in r.stdout
    r = cli(
        "--workspace",
        str(workspace),
        "call",
        "file_stat",
        "path=secret.txt",
        cwd=tmp_path,
        state=state,
    )
    assert json.loads(r.stdout)["output"]["path"] == "secret.txt"


def test_init_into_missing_dir_is_usage_error(tmp_path: Path, state: Path) -> None:
    r = cli("init", "-w", str(tmp_path / "missing"), cwd=tmp_path, state=state)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("call", "read_file", "--text", "path=a.txt"),
        ("call", "read_file", "path=a.txt", "--text"),
        ("call", "read_file", "--user", "bob", "path=a.txt", "--text", "limit=1"),
        ("call", "--text", "read_file", "limit=1", "--workspace", ".", "path=a.txt"),
    ],
)
def test_pairs_and_options_in_any_order(
    workspace: Path, state: Path, args: tuple[str, ...]
) -> None:
    (workspace / "a.txt").write_text("x\ny\n")
    r = cli(*args, cwd=workspace, state=state)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("1\tx")


def test_a_value_that_looks_like_an_option_stays_a_value(workspace: Path, state: Path) -> None:
    r = cli(
        "call", "write_file", "--text", "path=o.txt", "content=--json", cwd=workspace, state=state
    )
    assert r.returncode == 0, r.stderr
    assert (workspace / "o.txt").read_text() == "--json"


def test_an_unknown_option_among_pairs_is_a_usage_error(workspace: Path, state: Path) -> None:
    r = cli("call", "read_file", "--text", "--bogus", "path=a.txt", cwd=workspace, state=state)
    assert r.returncode == 2
    assert "--bogus" in r.stderr and "Traceback" not in r.stderr


def test_version(workspace: Path, state: Path) -> None:
    from local_tools import __version__

    r = cli("--version", cwd=workspace, state=state)
    assert r.returncode == 0
    assert r.stdout.strip() == f"local-tools {__version__}"

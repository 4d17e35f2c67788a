"""local-tools.toml: defaults, every section, sources, errors that name the key and file."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from local_tools.core.config import (
    CONFIG_ENV,
    Config,
    ConfigError,
    default_config_toml,
    load_config,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    root = tmp_path / "ws"
    root.mkdir()
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def config_error(source: object, ws: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(source, ws)  # type: ignore[arg-type]
    return str(info.value)


# --- defaults ----------------------------------------------------------------------


def test_no_file_gives_safe_defaults(ws: Path) -> None:
    config = load_config(None, ws)
    assert config.source is None
    assert config.workspace.root == ws.resolve()
    assert config.workspace.extra_roots == []
    assert config.workspace.writable_roots == []
    assert config.permissions == {}
    assert config.users == {}
    assert config.sandbox.mode == "workspace-write"
    assert config.sandbox.network is False
    assert config.network.allow_private == []
    assert config.limits.max_output_lines == 2000
    assert config.limits.max_output_bytes == 51200
    assert config.limits.exec_timeout == 60
    assert config.toolsets.enabled == ["*"]
    assert config.toolsets.disabled == []


def test_config_is_immutable(ws: Path) -> None:
    config = load_config(None, ws)
    with pytest.raises(ValidationError):
        config.limits.max_output_lines = 5  # type: ignore[misc]


# --- every section -----------------------------------------------------------------

FULL = """
[workspace]
root = "."
extra_roots = ["docs"]
writable_roots = ["out"]

[permissions]
"read:file" = "allow"
"write:file" = "allow"
"delete:file" = "ask"
"execute:command" = { "*" = "ask", "git status*" = "allow", "rm -rf *" = "deny" }
"network:outbound" = { "*" = "ask", "*.python.org" = "allow" }

[users.alice.permissions]
"execute:command" = "deny"

[users."bob smith".permissions]
"network:outbound" = { "pypi.org" = "allow" }

[sandbox]
mode = "read-only"
network = true

[network]
allow_private = ["localhost", "10.0.0.0/8", "fd00::/8"]

[limits]
max_output_lines = 100
max_output_bytes = 4096
exec_timeout = 2.5

[toolsets]
enabled = ["files", "search"]
disabled = ["web"]
"""


def test_every_section_from_a_file(ws: Path) -> None:
    path = write(ws / "local-tools.toml", FULL)
    config = load_config(path, ws)
    assert config.source == str(path)
    assert config.workspace.root == ws.resolve()
    assert config.workspace.extra_roots == [ws.resolve() / "docs"]
    assert config.workspace.writable_roots == [ws.resolve() / "out"]
    assert config.permissions["read:file"] == "allow"
    assert config.permissions["execute:command"] == {
        "*": "ask",
        "git status*": "allow",
        "rm -rf *": "deny",
    }
    assert list(config.permissions["execute:command"]) == ["*", "git status*", "rm -rf *"]
    assert config.users["alice"].permissions == {"execute:command": "deny"}
    assert config.users["bob smith"].permissions == {"network:outbound": {"pypi.org": "allow"}}
    assert config.sandbox.mode == "read-only"
    assert config.sandbox.network is True
    assert config.network.allow_private == ["localhost", "10.0.0.0/8", "fd00::/8"]
    assert config.limits.max_output_lines == 100
    assert config.limits.max_output_bytes == 4096
    assert config.limits.exec_timeout == 2.5
    assert config.toolsets.enabled == ["files", "search"]
    assert config.toolsets.disabled == ["web"]


def test_toolsets_accept_a_single_name(ws: Path) -> None:
    config = load_config({"toolsets": {"enabled": "files", "disabled": "web"}}, ws)
    assert config.toolsets.enabled == ["files"]
    assert config.toolsets.disabled == ["web"]


def test_plugin_permissions_are_accepted(ws: Path) -> None:
    config = load_config({"permissions": {"deploy:site": "deny"}}, ws)
    assert config.permissions == {"deploy:site": "deny"}


# --- unknown keys ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("sandbx = {}", "unknown key 'sandbx' (did you mean 'sandbox'?)"),
        ("[sandbox]\nmod = 'off'", "unknown key 'sandbox.mod' (did you mean 'mode'?)"),
        ("[workspace]\nroots = []", "unknown key 'workspace.roots' (did you mean 'root'?)"),
        (
            "[limits]\nmax_output_line = 5",
            "unknown key 'limits.max_output_line' (did you mean 'max_output_lines'?)",
        ),
        ("[network]\nallow = []", "unknown key 'network.allow' (did you mean 'allow_private'?)"),
        ("[toolsets]\nenable = []", "unknown key 'toolsets.enable' (did you mean 'enabled'?)"),
        (
            "[users.alice]\npermisions = {}",
            "unknown key 'users.alice.permisions' (did you mean 'permissions'?)",
        ),
        (
            "[toolsets]\nzzz = 1",
            "unknown key 'toolsets.zzz' (expected one of: enabled, disabled, profile)",
        ),
    ],
)
def test_unknown_keys_are_named_with_a_hint(ws: Path, toml: str, expected: str) -> None:
    path = write(ws / "local-tools.toml", toml)
    message = config_error(path, ws)
    assert expected in message
    assert str(path) in message


# --- bad values --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"limits": {"max_output_lines": -1}}, "limits.max_output_lines: must be > 0, got -1"),
        ({"limits": {"max_output_bytes": 0}}, "limits.max_output_bytes: must be > 0, got 0"),
        ({"limits": {"exec_timeout": 0}}, "limits.exec_timeout: must be > 0, got 0"),
        ({"limits": {"exec_timeout": "60"}}, 'limits.exec_timeout: must be a number, got "60"'),
        ({"limits": {"max_output_lines": 1.5}}, "limits.max_output_lines: must be an integer"),
        ({"limits": {"max_output_lines": True}}, "limits.max_output_lines: must be an integer"),
        ({"limits": {"exec_timeout": float("inf")}}, "limits.exec_timeout: must be a finite"),
        ({"sandbox": {"mode": "ro"}}, "sandbox.mode: must be 'off', 'read-only' or"),
        ({"sandbox": {"network": "yes"}}, 'sandbox.network: must be true or false, got "yes"'),
        ({"network": {"allow_private": ["10.0.0.0/33"]}}, "network.allow_private[0]: not a valid"),
        ({"workspace": {"extra_roots": "docs"}}, "workspace.extra_roots: must be a list"),
        ({"workspace": {"root": ""}}, "workspace.root: must not be empty"),
        ({"workspace": "here"}, 'workspace: must be a table, got "here"'),
        ({"toolsets": {"enabled": [""]}}, "toolsets.enabled[0]: must not be empty"),
    ],
)
def test_bad_values_name_the_key(ws: Path, data: dict[str, object], expected: str) -> None:
    message = config_error(data, ws)
    assert expected in message
    assert message.startswith("<dict>: ")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"permissions": {"read:file": "allwo"}},
            """permissions."read:file": must be 'allow', 'deny' or 'ask' (or a table""",
        ),
        (
            {"permissions": {"execute:command": {"ls *": "yes"}}},
            'permissions."execute:command"."ls *": '
            """must be 'allow', 'deny' or 'ask', got "yes\"""",
        ),
        (
            {"users": {"alice": {"permissions": {"delete:file": 1}}}},
            """users.alice.permissions."delete:file": must be 'allow', 'deny' or 'ask'""",
        ),
        (
            {"permissions": {"delete:file": {"": "allow"}}},
            """permissions."delete:file"."": a pattern must not be empty""",
        ),
        (
            {"permissions": {"exec:command": "allow"}},
            """permissions."exec:command": unknown permission (did you mean 'execute:command'?)""",
        ),
        (
            {"permissions": {"read": "allow"}},
            "permissions.read: a permission looks like 'verb:object'",
        ),
    ],
)
def test_bad_permissions_name_the_key(ws: Path, data: dict[str, object], expected: str) -> None:
    assert expected in config_error(data, ws)


def test_every_problem_is_listed(ws: Path) -> None:
    path = write(
        ws / "local-tools.toml",
        "[limits]\nmax_output_lines = -1\n[sandbox]\nmode = 'x'\nnetwok = true\n",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, ws)
    assert len(info.value.problems) == 3
    assert info.value.source == str(path)
    message = str(info.value)
    assert message.startswith(f"{path}: 3 problems:")
    assert "limits.max_output_lines" in message
    assert "sandbox.mode" in message
    assert "unknown key 'sandbox.netwok' (did you mean 'network'?)" in message


def test_invalid_toml_names_the_file(ws: Path) -> None:
    path = write(ws / "local-tools.toml", "[limits\nmax_output_lines = 1\n")
    message = config_error(path, ws)
    assert message.startswith(f"{path}: invalid TOML")
    assert "line 1" in message


def test_non_utf8_file_is_a_config_error(ws: Path) -> None:
    path = ws / "local-tools.toml"
    path.write_bytes(b"[limits]\nmax_output_lines = 1 # \xff\n")
    assert "not UTF-8" in config_error(path, ws)


def test_directory_is_a_config_error(ws: Path) -> None:
    (ws / "conf.toml").mkdir()
    assert "is a directory" in config_error(ws / "conf.toml", ws)


# --- sources -----------------------------------------------------------------------


def test_explicit_path_as_str_and_path(ws: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "elsewhere" / "custom.toml", "[limits]\nexec_timeout = 5\n")
    assert load_config(str(path), ws).limits.exec_timeout == 5
    assert load_config(path, ws).limits.exec_timeout == 5
    assert load_config(path, ws).source == str(path)


def test_missing_explicit_file_is_an_error(ws: Path) -> None:
    message = config_error(ws / "nope.toml", ws)
    assert str(ws / "nope.toml") in message
    assert "not found" in message


def test_workspace_file_is_found(ws: Path) -> None:
    path = write(ws / "local-tools.toml", "[limits]\nmax_output_lines = 7\n")
    config = load_config(None, ws)
    assert config.limits.max_output_lines == 7
    assert config.source == str(path)


def test_env_var_wins_over_workspace_file(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(ws / "local-tools.toml", "[limits]\nmax_output_lines = 7\n")
    env_file = write(tmp_path / "env.toml", "[limits]\nmax_output_lines = 9\n")
    monkeypatch.setenv(CONFIG_ENV, str(env_file))
    config = load_config(None, ws)
    assert config.limits.max_output_lines == 9
    assert config.source == str(env_file)


def test_explicit_source_wins_over_env(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(write(tmp_path / "env.toml", "[limits]\nexec_timeout = 9")))
    assert load_config({"limits": {"exec_timeout": 3}}, ws).limits.exec_timeout == 3


def test_env_var_to_missing_file_is_an_error(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "missing.toml"))
    message = config_error(None, ws)
    assert "missing.toml" in message
    assert CONFIG_ENV in message


def test_empty_env_var_is_ignored(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_ENV, "")
    assert load_config(None, ws).source is None


def test_dict_source(ws: Path) -> None:
    config = load_config({"sandbox": {"mode": "off"}}, ws)
    assert config.sandbox.mode == "off"
    assert config.source == "<dict>"


def test_config_instance_passes_through(ws: Path) -> None:
    config = load_config({"sandbox": {"mode": "off"}}, ws)
    assert load_config(config, ws) is config


# --- roots -------------------------------------------------------------------------


def test_relative_roots_resolve_against_the_config_dir(ws: Path, tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    path = write(
        conf_dir / "lt.toml",
        '[workspace]\nroot = "proj"\nextra_roots = ["../shared"]\n'
        'writable_roots = ["out", "/abs"]\n',
    )
    config = load_config(path, ws)
    base = conf_dir.resolve()
    assert config.workspace.root == base / "proj"
    assert config.workspace.extra_roots == [tmp_path.resolve() / "shared"]
    assert config.workspace.writable_roots == [base / "out", Path("/abs").resolve()]


def test_unset_root_is_the_workspace_even_for_an_external_file(ws: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "conf" / "lt.toml", '[workspace]\nextra_roots = ["data"]\n')
    config = load_config(path, ws)
    assert config.workspace.root == ws.resolve()
    assert config.workspace.extra_roots == [(tmp_path / "conf").resolve() / "data"]


def test_dict_roots_resolve_against_the_workspace(ws: Path) -> None:
    config = load_config({"workspace": {"root": "sub", "extra_roots": ["../other"]}}, ws)
    assert config.workspace.root == ws.resolve() / "sub"
    assert config.workspace.extra_roots == [ws.resolve().parent / "other"]


def test_home_is_expanded_in_roots(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = load_config({"workspace": {"extra_roots": ["~/notes"]}}, ws)
    assert config.workspace.extra_roots == [(tmp_path / "home").resolve() / "notes"]


# --- `local-tools init` ------------------------------------------------------------


def test_init_template_loads_back_to_the_defaults(ws: Path) -> None:
    defaults = load_config(None, ws).model_dump()
    write(ws / "local-tools.toml", default_config_toml())
    from_template = load_config(None, ws)
    assert from_template.source == str(ws / "local-tools.toml")
    assert from_template.model_dump() == defaults


def test_init_template_elsewhere_keeps_the_workspace_root(ws: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "other" / "local-tools.toml", default_config_toml())
    assert load_config(path, ws).model_dump() == load_config(None, ws).model_dump()


def test_init_template_shows_every_section_and_is_commented() -> None:
    text = default_config_toml()
    parsed = tomllib.loads(text)
    sections = {"workspace", "permissions", "sandbox", "network", "browser", "limits", "toolsets"}
    sections |= {"lsp", "checkpoints", "http", "knowledge", "review", "deploy", "task", "compact"}
    assert set(parsed) == sections
    assert set(parsed) == set(Config.model_fields) - {"users", "profiles", "models"}
    assert "[users.alice.permissions]" in text  # shown as a commented example
    assert "[models.local]" in text
    assert "[profiles.frontend]" in text
    assert text.count("#") > 20


def test_init_template_examples_are_valid_when_uncommented(ws: Path) -> None:
    # The commented examples must work if a user simply removes the "# ".
    lines = []
    in_table = False  # inside a commented example table: its commented keys too
    for line in default_config_toml().splitlines():
        stripped = line.removeprefix("# ")
        in_table = stripped.startswith(("[models.", "[task.agents.")) or (
            in_table
            and line.startswith("# ")
            and (re.match(r"\w+ = ", stripped) is not None or stripped.lstrip().startswith("#"))
        )
        if in_table or stripped.startswith(('"', "[users", "[profiles", "tools =", "root =")):
            lines.append(stripped.split("  #")[0])
        else:
            lines.append(line)
    config = load_config(tomllib.loads("\n".join(lines)), ws)
    assert config.models["local"].base_url == "http://127.0.0.1:11434/v1"
    assert config.models["local"].encoding == "o200k_base"  # the table's last key
    assert config.task.agents["reviewer"].tools == ["read_file", "grep", "glob", "lsp"]
    assert config.permissions["execute:command"]["rm -rf *"] == "deny"  # type: ignore[index]
    assert config.users["alice"].permissions == {"execute:command": "deny"}

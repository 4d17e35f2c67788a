"""`[lsp]` in local-tools.toml: its scalar keys beside `[lsp.NAME]` server tables, what
is rejected (with the key path named), and how a table changes the built-in servers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from local_tools.core.config import ConfigError, default_config_toml, load_config
from local_tools.lsp.specs import BUILTIN_SPECS, server_specs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _load(text: str, ws: Path) -> object:
    return load_config(tomllib.loads(text), ws)


def test_scalar_keys_beside_server_tables(tmp_path: Path) -> None:
    config = load_config(
        tomllib.loads(
            "[lsp]\nwait = 0.5\nmax_open_documents = 4\n\n"
            '[lsp.zls]\ncommand = "zls"\nextensions = [".zig", ".ZON"]\n'
            'root_markers = ["build.zig"]\nenv = { ZLS_LOG = "error" }\n'
        ),
        tmp_path,
    )
    assert config.lsp.wait == 0.5 and config.lsp.max_open_documents == 4
    assert config.lsp.enabled is True and config.lsp.idle_timeout == 600
    zls = config.lsp.servers["zls"]
    assert zls.command == "zls" and zls.root_markers == ["build.zig"]
    (spec,) = [s for s in server_specs(config.lsp.servers) if s.name == "zls"]
    assert spec.extensions == (".zig", ".zon") and spec.env == {"ZLS_LOG": "error"}
    assert "zls" in spec.install  # what a missing one says to do


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[lsp]\nwiat = 1.0\n", "lsp.wiat"),
        ('[lsp.zls]\ncommand = "zls"\ncomand = "x"\n', "lsp.zls.comand"),
        ('[lsp.zls]\ncommand = "zls"\nextensions = ["*.zig"]\n', "lsp.zls.extensions"),
        ("[lsp]\nwait = 31.0\n", "lsp.wait"),
        ("[lsp]\nmax_open_documents = 0\n", "lsp.max_open_documents"),
        ('[lsp]\nenabled = "no"\n', "lsp.enabled"),
    ],
)
def test_bad_keys_are_rejected_with_their_path(text: str, named: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(text, tmp_path)
    assert named in str(caught.value), str(caught.value)


def test_a_disabled_builtin_is_left_out(tmp_path: Path) -> None:
    config = load_config(tomllib.loads("[lsp.basedpyright]\nenabled = false\n"), tmp_path)
    names = [s.name for s in server_specs(config.lsp.servers)]
    assert "basedpyright" not in names and "pyright" in names  # Python falls back to pyright


def test_a_builtin_name_changes_only_the_keys_given(tmp_path: Path) -> None:
    config = load_config(
        tomllib.loads('[lsp.typescript]\ncommand = "/opt/tsls/bin/typescript-language-server"\n'),
        tmp_path,
    )
    specs = server_specs(config.lsp.servers)
    (changed,) = [s for s in specs if s.name == "typescript"]
    (builtin,) = [s for s in BUILTIN_SPECS if s.name == "typescript"]
    assert changed.command == "/opt/tsls/bin/typescript-language-server"
    assert changed.args == builtin.args == ("--stdio",)
    assert changed.extensions == builtin.extensions
    assert changed.init_options == builtin.init_options
    assert changed.install == builtin.install and changed.language == builtin.language
    assert [s.name for s in specs].count("typescript") == 1


def test_lsp_off(tmp_path: Path) -> None:
    config = load_config({"lsp": {"enabled": False}}, tmp_path)
    assert config.lsp.enabled is False


def test_the_init_template_documents_lsp_and_its_examples_load(tmp_path: Path) -> None:
    text = default_config_toml()
    assert tomllib.loads(text)["lsp"]["wait"] == 2.0
    # Uncommented, the [lsp.NAME] examples are valid tables.
    start = text.index("# [lsp.gopls]")
    block = text[start : text.index("\n\n", start)]
    uncommented = "\n".join(line.removeprefix("# ") for line in block.splitlines())
    config = load_config(tomllib.loads(uncommented), tmp_path)
    assert set(config.lsp.servers) == {"gopls", "pyright", "zls"}
    assert config.lsp.servers["pyright"].enabled is False

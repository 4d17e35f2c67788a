"""`[network]` for the web tools: defaults, validation naming the key, the init template."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from local_tools.core.config import ConfigError, default_config_toml, load_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_defaults(tmp_path: Path) -> None:
    network = load_config(None, tmp_path).network
    assert network.respect_robots is False and network.user_agent == "" and network.proxy == ""
    assert network.search.provider == "" and network.search.api_key_env == ""


def test_all_keys_load(tmp_path: Path) -> None:
    network = load_config(
        {
            "network": {
                "allow_private": ["localhost", "10.0.0.0/8"],
                "respect_robots": True,
                "user_agent": "bot/1 (me@example.org)",
                "proxy": "http://proxy.corp:3128",
                "search": {"provider": "searxng", "url": "http://127.0.0.1:8888"},
            }
        },
        tmp_path,
    ).network
    assert network.respect_robots and network.proxy == "http://proxy.corp:3128"
    assert network.search.url == "http://127.0.0.1:8888"


@pytest.mark.parametrize(
    ("network", "message"),
    [
        ({"respect_robots": "yes"}, "network.respect_robots: must be true or false"),
        ({"proxy": "socks://x"}, "network.proxy: must be an http:// or https:// URL"),
        ({"user_agent": "a\nb"}, "network.user_agent: must be one line"),
        ({"search": {"provider": "google"}}, "network.search.provider: must be"),
        ({"search": {"url": "ftp://x"}}, "network.search.url: must be an http"),
        ({"search": {"api_key_env": "my key"}}, "network.search.api_key_env: must be the name"),
        ({"search": {"key": "x"}}, "unknown key 'network.search.key'"),
        ({"robots": True}, "unknown key 'network.robots' (did you mean 'respect_robots'?)"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, network: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError) as caught:
        load_config({"network": network}, tmp_path)
    assert message in str(caught.value)


def test_the_init_template_shows_the_web_keys() -> None:
    text = default_config_toml()
    network = tomllib.loads(text)["network"]
    assert set(network) == {"allow_private", "respect_robots", "user_agent", "proxy", "search"}
    assert set(network["search"]) == {"provider", "url", "api_key_env"}
    for word in ("searxng", "brave", "tavily", "exa", "BRAVE_API_KEY", "robots.txt"):
        assert word in text

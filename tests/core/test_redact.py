"""Redaction of logged tool arguments: secret keys, headers, env values, inline secrets."""

from __future__ import annotations

import pytest

from local_tools.core.redact import REDACTED, redact

R = REDACTED


@pytest.mark.parametrize(
    "key",
    [
        "authorization",
        "Authorization",
        "Proxy-Authorization",
        "cookie",
        "Set-Cookie",
        "X-API-KEY",
        "x_api_key",
        "token",
        "Token",
        "auth_token",
        "accessToken",
        "refresh_token",
        "csrftoken",
        "id_token",
        "password",
        "db_passwd",
        "PASSWORD",
        "client_secret",
        "secret_key",
        "api_key",
        "apiKey",
        "APIKey",
        "apikey",
        "aws_access_key_id",
        "private_key",
        "privateKey",
        "credentials",
        "gcp_credential_file",
    ],
)
def test_secret_keys_are_redacted(key: str) -> None:
    assert redact({key: "s3cr3t-value"}) == {key: R}


@pytest.mark.parametrize(
    "key",
    [
        "path",
        "content",
        "command",
        "pattern",
        "max_tokens",
        "input_tokens",
        "tokens",
        "token_count",
        "token_limit",
        "tokenizer",
        "key",
        "author",
        "url",
        "old_string",
    ],
)
def test_ordinary_keys_are_kept(key: str) -> None:
    assert redact({key: "plain value 12345"}) == {key: "plain value 12345"}


def test_nested_dicts_and_lists() -> None:
    args = {
        "edits": [
            {"old_string": "a", "new_string": "b"},
            {"config": {"password": "p", "user": "bob", "levels": [1, 2.5, None, True]}},
        ],
        "pair": ("x", {"api_key": "k"}),
    }
    assert redact(args) == {
        "edits": [
            {"old_string": "a", "new_string": "b"},
            {"config": {"password": R, "user": "bob", "levels": [1, 2.5, None, True]}},
        ],
        "pair": ["x", {"api_key": R}],
    }


def test_redact_copies_and_leaves_input_untouched() -> None:
    args = {"nested": {"token": "t", "n": [1]}, "path": "a"}
    out = redact(args)
    assert args == {"nested": {"token": "t", "n": [1]}, "path": "a"}
    assert out["nested"] is not args["nested"]
    assert out["nested"]["n"] is not args["nested"]["n"]


def test_none_and_booleans_under_secret_keys_are_kept() -> None:
    assert redact({"token": None, "verify_token": False, "password": ""}) == {
        "token": None,
        "verify_token": False,
        "password": R,
    }


def test_headers_redacted_by_name() -> None:
    headers = {
        "Authorization": "Bearer abc",
        "X-Auth-Token": "t",
        "Cookie": "sid=1",
        "X-Goog-Api-Key": "k",
        "X-Amz-Security-Token": "t",
        "Content-Type": "application/json",
        "Accept": "*/*",
        "X-Trace": "Bearer inline.secret",
    }
    assert redact({"url": "https://example.com", "headers": headers})["headers"] == {
        "Authorization": R,
        "X-Auth-Token": R,
        "Cookie": R,
        "X-Goog-Api-Key": R,
        "X-Amz-Security-Token": R,
        "Content-Type": "application/json",
        "Accept": "*/*",
        "X-Trace": f"Bearer {R}",
    }


def test_headers_as_list_of_pairs() -> None:
    out = redact({"headers": [["Authorization", "Basic dXNlcjpwYXNz"], ["Accept", "text/html"]]})
    assert out == {"headers": [["Authorization", R], ["Accept", "text/html"]]}


def test_env_values_redacted_names_kept() -> None:
    args = {
        "command": "make",
        "env": {"PATH": "/usr/bin", "AWS_SECRET": "x", "DEBUG": "1"},
        "options": {"environment": ["HOME=/root", "TOKEN=abc", "BARE"]},
    }
    assert redact(args) == {
        "command": "make",
        "env": {"PATH": R, "AWS_SECRET": R, "DEBUG": R},
        "options": {"environment": ["HOME=" + R, "TOKEN=" + R, R]},
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:hunter2@example.com/x", f"https://user:{R}@example.com/x"),
        (
            "git clone https://bob:p%40ss@git.example.com/r.git",
            f"git clone https://bob:{R}@git.example.com/r.git",
        ),
        ("postgres://app:pw@db:5432/prod", f"postgres://app:{R}@db:5432/prod"),
        (
            "https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r",
            f"https://{R}@github.com/o/r",
        ),
        ("curl -H 'Authorization: Bearer sk-abc.def'", f"curl -H 'Authorization: Bearer {R}'"),
        ("bearer xyz", f"bearer {R}"),
        ("Authorization: Basic dXNlcjpwYXNz", f"Authorization: Basic {R}"),
        (
            "https://api.example.com/v1?access_token=abc123&page=2",
            f"https://api.example.com/v1?access_token={R}&page=2",
        ),
        ("https://x.example/?page=1&api_key=k", f"https://x.example/?page=1&api_key={R}"),
    ],
)
def test_inline_secrets_in_strings(text: str, expected: str) -> None:
    assert redact({"command": text}) == {"command": expected}
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ssh://git@github.com/o/r.git",
        "https://example.com/a?page=2&max_tokens=5",
        "user@example.com",
        "x = a == b",
        "see https://docs.python.org/3/",
    ],
)
def test_strings_without_secrets_are_kept(text: str) -> None:
    assert redact({"content": text}) == {"content": text}

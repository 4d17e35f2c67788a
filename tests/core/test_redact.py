"""Redaction of logged tool arguments: secret keys, headers, env values, inline secrets."""

from __future__ import annotations

import time

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


# --------------------------------------------------------------------------- secrets in values

GHP = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"  # the shape of a GitHub token
AKIA = "AKIAIOSFODNN7EXAMPLE"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"
)
RSA_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # dotenv, shell
        ("OPENAI_API_KEY=sk-proj-abc123", f"OPENAI_API_KEY={R}"),
        ("OPENAI_API_KEY=sk-proj-abc123\nDEBUG=1\n", f"OPENAI_API_KEY={R}\nDEBUG=1\n"),
        (
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            f"export AWS_SECRET_ACCESS_KEY={R}",
        ),
        ('DB_PASSWORD="correct horse battery"', f'DB_PASSWORD="{R}"'),
        ("PGPASSWORD=s3cret psql -h db", f"PGPASSWORD={R} psql -h db"),
        ("deploy --api-key=k3y --verbose", f"deploy --api-key={R} --verbose"),
        ("spring.datasource.password=xyz", f"spring.datasource.password={R}"),
        ("Server=db;User Id=sa;Password=s3cr3t;", f"Server=db;User Id=sa;Password={R};"),
        # JSON, also compact and escaped inside a JSON string
        ('{"password": "hunter2"}', f'{{"password": "{R}"}}'),
        ('{"user":"bob","password":"hunter2"}', f'{{"user":"bob","password":"{R}"}}'),
        ('{"token":12345}', f'{{"token":{R}}}'),
        ('{"password": "hun\\"ter2", "user": "bob"}', f'{{"password": "{R}", "user": "bob"}}'),
        ('body = "{\\"password\\": \\"hunter2\\"}"', f'body = "{{\\"password\\": \\"{R}\\"}}"'),
        # YAML
        (
            f"aws_secret_access_key: {AKIA}\nregion: us-east-1",
            f"aws_secret_access_key: {R}\nregion: us-east-1",
        ),
        ("db:\n  password: hunter2  # rotate\n", f"db:\n  password: {R}  # rotate\n"),
        ("clientSecret: 'abc'", f"clientSecret: '{R}'"),
        # code
        ("api_key = 'sk-abc'", f"api_key = '{R}'"),
        ('os.environ["OPENAI_API_KEY"] = "abc"', f'os.environ["OPENAI_API_KEY"] = "{R}"'),
        ("password: str = 'hunter2'", f"password: str = '{R}'"),
        # headers, any scheme
        ("Authorization: token ghp_xxx", f"Authorization: token {R}"),
        (
            "curl -H 'Authorization: token ghp_xxx' https://x",
            f"curl -H 'Authorization: token {R}' https://x",
        ),
        ("Proxy-Authorization: Negotiate YIIabc", f"Proxy-Authorization: Negotiate {R}"),
        ("authorization: abc123", f"authorization: {R}"),
        ("{'Authorization': 'Bearer abc.def'}", f"{{'Authorization': 'Bearer {R}'}}"),
        ("X-Api-Key: abcdef123", f"X-Api-Key: {R}"),
        ("Cookie: sid=abc; theme=dark\nAccept: */*", f"Cookie: {R}\nAccept: */*"),
        # PEM private keys, whatever kind
        (
            f"key:\n{RSA_KEY}\nafter",
            f"key:\n-----BEGIN RSA PRIVATE KEY-----{R}-----END RSA PRIVATE KEY-----\nafter",
        ),
        (
            # as in a JSON string: "\\n" escapes, one line
            "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXk\\n"
            "-----END OPENSSH PRIVATE KEY-----",
            f"-----BEGIN OPENSSH PRIVATE KEY-----{R}-----END OPENSSH PRIVATE KEY-----",
        ),
        (
            f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}",  # cut off: hidden to the end
            f"-----BEGIN PRIVATE KEY-----{R}",
        ),
        # well-known token shapes, bare
        (f"push with {GHP} now", f"push with {R} now"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF", R),
        ("key sk-" + "A1b2C3d4" * 6, f"key {R}"),
        ("sk-proj-" + "Ab1_-" * 10 + " end", f"{R} end"),
        ("sk-ant-api03-" + "x9Y8" * 10, R),
        ("task-sk-" + "A1b2C3d4" * 3, "task-" + R),  # after a "-" is a word start
        ("stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", f"stripe {R}"),
        (f"id={AKIA}", f"id={R}"),
        (f"aws {AKIA}, ok", f"aws {R}, ok"),
        ("ASIA1234567890ABCDEF", R),
        ("slack xox" + "b-1234567890-abcdefghij", f"slack {R}"),
        ("AIza" + "SyA1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q", R),
        ("glpat-" + "x1y2z3" * 4, R),
        (f"jwt {JWT} done", f"jwt {R} done"),
        (f"Authorization: Bearer {JWT}", f"Authorization: Bearer {R}"),
    ],
)
def test_secrets_inside_values(text: str, expected: str) -> None:
    assert redact({"content": text}) == {"content": expected}


@pytest.mark.parametrize(
    "text",
    [
        "token_count = 3",
        "max_tokens: 100",
        "input_tokens=5",
        "tokenizer = load()",
        "if token == other:",
        "primary_key = id",
        "keyword: value and more",
        "monkey = 1",
        "secretary is out",
        "def get_secret():\n    return os.environ['X']\n",
        "def login(username: str, password: str) -> bool:\n    ...\n",
        "password = None\ntoken: null\nverify_token = false\n",
        "Forgot your password: reset it here",
        "Pass a bearer token in the Authorization header.",
        "This is a basic example of basic usage.",
        "The token: see below.",
        "print(f'{key}: {value}')",
        "ssh -i ~/.ssh/id_rsa host",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "task-1234567890abcdefghijklmnop",  # not sk-...
        '<div class="sk-folding-cube-container-large">',  # CSS, no digit: not a key
        "risk_live_" + "a" * 20,  # not sk_live_
        "AKIAIOSFODNN7EXAMPLEX",  # 17 characters after AKIA
        "class TokenizerAKIAIOSFODNN7EXAMPLE",  # in the middle of a word
        "x = a == b",
        "user@example.com",
        "C:/Users/me/notes.txt",
        "tests/core/test_redact.py::test_secrets_inside_values",
        "ok: true",
    ],
)
def test_ordinary_code_and_prose_are_kept(text: str) -> None:
    assert redact({"content": text}) == {"content": text}


def test_values_of_secret_names_are_hidden_even_if_they_look_like_code() -> None:
    # A deliberate choice: "form.password" could as well be "ya29.a0Af..." (a Google
    # OAuth token); a hidden expression costs a little readability, a shown token more.
    assert redact("password_field = form.password") == f"password_field = {R}"
    assert redact("access_token = ya29.a0AfH6SMBx") == f"access_token = {R}"
    assert redact("token = get_token()") == f"token = {R}()"
    # but a bare value after "key:" counts only if it ends the line (YAML, headers)
    assert redact("{'token': get_token(), 'n': 1}") == "{'token': get_token(), 'n': 1}"


def test_python_file_with_a_secret_default() -> None:
    source = (
        "import os\n\n"
        "def get_secret() -> str:\n"
        '    return os.environ.get("APP_SECRET", "dev-fallback-s3cret")\n\n'
        "class Settings:\n"
        "    token_count: int = 3\n"
        '    api_key: str = "sk-live-123"\n'
    )
    out = redact(source)
    assert "dev-fallback" in out  # a call argument, not a key/value: kept
    assert "token_count: int = 3" in out
    assert f'api_key: str = "{R}"' in out
    assert "sk-live-123" not in out


def test_inline_secret_in_a_list_and_nested_dict() -> None:
    args = {"commands": ["ls", "export GITHUB_TOKEN=abc"], "opts": {"note": f"use {GHP}"}}
    assert redact(args) == {
        "commands": ["ls", f"export GITHUB_TOKEN={R}"],
        "opts": {"note": f"use {R}"},
    }


def test_redaction_is_idempotent() -> None:
    text = f'OPENAI_API_KEY=abc\n{{"password": "x"}}\nAuthorization: token t\n{RSA_KEY}\n{GHP}'
    once = redact(text)
    assert redact(once) == once
    assert "abc" not in once
    assert PEM_BODY[:20] not in once


def test_ordinary_strings_are_returned_as_they_are() -> None:
    # The fast path: no copy, no scan (the gate finds nothing a rule needs).
    args = {"path": "src/local_tools/core/audit.py", "pattern": "def test_", "glob": "**/*.py"}
    out = redact(args)
    assert out == args
    assert all(out[k] is args[k] for k in args)


def test_non_ascii_text_is_scanned_too() -> None:
    # "İ" lower-cases to two characters; positions must still line up.
    assert redact("İİ token=abc İ") == f"İİ token={R} İ"
    assert redact("naïve café: password = 'x'") == f"naïve café: password = '{R}'"


def test_secret_straddling_the_clip_of_long_content_is_hidden() -> None:
    from local_tools.core.redact import redact_clipped

    content = "x" * 95 + "\n" + RSA_KEY
    out = redact_clipped({"content": content}, 100)["content"]
    assert out.startswith("x" * 95)
    assert "MIIE" not in out
    assert out.endswith(f"[clipped, {len(content)} chars]")


@pytest.mark.parametrize(
    "text",
    [
        "token: a" + " " * 40_000 + "x",
        "ken" * 13_000,
        'max_tokens="' * 3_000,
        "a" * 40_000 + " token=x",
        "Bearer " * 6_000,
        "sk-" * 13_000,
        "://" + "a" * 40_000,
        "token: x, " * 4_000,
        '{"token": "' + "a" * 40_000,
        "token: " + "a, " * 13_000,
        "AKIA" * 10_000,
    ],
    ids=lambda text: repr(text[:12]),
)
def test_pathological_strings_take_linear_time(text: str) -> None:
    # Each takes a few ms; anything quadratic would take seconds.
    start = time.perf_counter()
    redact(text)
    assert time.perf_counter() - start < 1.0

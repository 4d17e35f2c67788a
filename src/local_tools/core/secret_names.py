"""Which names belong to secrets: arg keys, header names, names read from text.

Shared by ``redact`` (dict keys, ``env``, ``headers``) and the in-string scanner of
``redact_text`` (names before ``=``/``:``, long options, query parameters), so both
judge a name by the same rules.
"""

from __future__ import annotations

import re
from typing import Any

_PLAIN, _SECRET, _ENV, _HEADERS = range(4)

# Compared after normalizing: camelCase -> snake_case, lower case, "-" -> "_".
_SECRET_NAMES = frozenset(
    {"authorization", "proxy_authorization", "cookie", "set_cookie", "x_api_key"}
)
_SECRET_PARTS = (
    "password",
    "passwd",
    "secret",
    "api_key",
    "apikey",
    "access_key",
    "accesskey",
    "private_key",
    "privatekey",
    "credential",
)
# "token" names a secret (auth_token, refresh_token, csrftoken) unless it is a count
# or a setting: "max_tokens"/"input_tokens" (plural) and "token_count" stay visible.
_TOKEN_NOT_SECRET_AFTER = frozenset(
    {"count", "counts", "limit", "limits", "budget", "usage", "type", "estimate", "length"}
)
# In a headers mapping, any header whose name has one of these is a credential.
_HEADER_SECRET_PARTS = (
    "auth",
    "cookie",
    "session",
    "signature",
    "key",
    "token",
    "secret",
    "password",
    "credential",
)
# Whole words of a name that make it a secret's (not parts: "author", "compass").
_SECRET_WORDS = frozenset({"pass", "pwd", "pw", "auth", "passphrase"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")

_key_kinds: dict[str, int] = {}  # memo: args use the same few keys over and over
_KEY_KINDS_MAX = 4096


def _normalize(key: str) -> str:
    return _CAMEL.sub("_", key).lower().replace("-", "_")


def _classify_uncached(key: str) -> int:
    norm = _normalize(key)
    if norm in ("env", "environment"):
        return _ENV
    if norm == "headers":
        return _HEADERS
    if norm in _SECRET_NAMES or any(part in norm for part in _SECRET_PARTS):
        return _SECRET
    words = [w for w in _WORD_SPLIT.split(norm) if w]
    if any(w in _SECRET_WORDS for w in words):  # DB_PASS, MYSQL_PWD, API_AUTH
        return _SECRET
    for i, word in enumerate(words):
        if word.endswith("token") and (
            i + 1 == len(words) or words[i + 1] not in _TOKEN_NOT_SECRET_AFTER
        ):
            return _SECRET
    return _PLAIN


def _classify(key: Any) -> int:
    kind = _key_kinds.get(key)
    if kind is None:
        if not isinstance(key, str):
            return _PLAIN
        kind = _classify_uncached(key)
        if len(_key_kinds) < _KEY_KINDS_MAX:
            _key_kinds[key] = kind
    return kind


def is_secret_header(name: Any) -> bool:
    """Whether a header of this name carries a credential (hidden in the audit, and not
    sent on to another site on a redirect): X-Api-Key, PRIVATE-TOKEN, Authorization..."""
    if not isinstance(name, str):
        return False
    low = name.lower()
    return _classify(name) == _SECRET or any(part in low for part in _HEADER_SECRET_PARTS)


# Names read from text have a memo of their own, so they cannot crowd arg keys out.
_name_kinds: dict[str, int] = {}


def _kind_of_name(name: str) -> int:
    kind = _key_kinds.get(name)
    if kind is None:
        kind = _name_kinds.get(name)
        if kind is None:
            if len(_name_kinds) >= _KEY_KINDS_MAX:
                _name_kinds.clear()
            kind = _name_kinds[name] = _classify_uncached(name)
    return kind

"""Secret redaction for logged tool arguments: ``redact`` and its rules.

Values of secret-named keys (passwords, tokens, API keys, credentials), every value
under ``env``, credential headers, and inline secrets in strings (``Bearer ...``,
``scheme://user:password@host``, ``?token=...``) become ``REDACTED``.
``redact_clipped`` also clips long strings, as the audit log stores them.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "redact", "redact_clipped"]

REDACTED = "[REDACTED]"

_CLIP_MARGIN = 256  # redact a little past the clip so a secret across it is still caught

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
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")

# Inline secrets inside strings: "Bearer <cred>", "Basic <cred>", the password of
# "scheme://user:password@host", a long token used as "scheme://<token>@host", and
# "?token=..." style query parameters (names judged like dict keys).
_INLINE = re.compile(
    r"(?P<auth>\b(?:[Bb]earer|BEARER|[Bb]asic|BASIC)\s+)[^\s\"',;]+"
    r"|(?P<userinfo>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:]*:)[^\s/@]+(?=@)"
    r"|(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/@:]{16,}(?=@)"
    r"|(?P<q>[?&](?P<qname>[A-Za-z_][\w.\-]*)=)(?P<qval>[^\s&#\"']+)"
)

_key_kinds: dict[str, int] = {}  # memo: args use the same few keys over and over
_KEY_KINDS_MAX = 4096


def _classify_uncached(key: str) -> int:
    norm = _CAMEL.sub("_", key).lower().replace("-", "_")
    if norm in ("env", "environment"):
        return _ENV
    if norm == "headers":
        return _HEADERS
    if norm in _SECRET_NAMES or any(part in norm for part in _SECRET_PARTS):
        return _SECRET
    words = [w for w in _WORD_SPLIT.split(norm) if w]
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


def _is_secret_header(name: Any) -> bool:
    if not isinstance(name, str):
        return False
    low = name.lower()
    return _classify(name) == _SECRET or any(part in low for part in _HEADER_SECRET_PARTS)


def _inline_sub(m: re.Match[str]) -> str:
    if m.group("q") is not None:
        if _classify(m.group("qname")) == _SECRET:
            return m.group("q") + REDACTED
        return m.group(0)
    prefix = m.group("auth") or m.group("userinfo") or m.group("scheme")
    return prefix + REDACTED


def _redact_str(s: str, limit: int | None) -> str:
    if limit is not None and len(s) > limit:
        head = _redact_str(s[: limit + _CLIP_MARGIN], None)
        return f"{head[:limit]}…[clipped, {len(s)} chars]"
    # Substring tests are much cheaper than the regex; every pattern needs one of them.
    if len(s) < 8 or not (
        "://" in s or "=" in s or "earer" in s or "asic" in s or "EARER" in s or "ASIC" in s
    ):
        return s
    return _INLINE.sub(_inline_sub, s)


def _hide(value: Any) -> Any:
    # Keep None/bools: "verify_token": false says something and reveals nothing.
    if value is None or isinstance(value, bool):
        return value
    return REDACTED


def _redact_env(value: Any) -> Any:
    """Keep variable names, hide every value."""
    if isinstance(value, dict):
        return {k: _hide(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if isinstance(item, str) and "=" in item:
                out.append(item.split("=", 1)[0] + "=" + REDACTED)
            else:
                out.append(_hide(item))
        return out
    return _hide(value)


def _redact_headers(value: Any, limit: int | None) -> Any:
    if isinstance(value, dict):
        return {
            k: _hide(v) if _is_secret_header(k) else _redact(v, limit) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        # [[name, value], ...] as some HTTP clients take them
        out: list[Any] = []
        for item in value:
            if isinstance(item, (list, tuple)) and len(item) == 2:
                name, v = item
                out.append([name, _hide(v) if _is_secret_header(name) else _redact(v, limit)])
            else:
                out.append(_redact(item, limit))
        return out
    return _redact(value, limit)


def _redact_dict(d: dict[Any, Any], limit: int | None) -> dict[Any, Any]:
    out = {}
    for k, v in d.items():
        kind = _classify(k)
        if kind == _PLAIN:
            # Inline the common scalar cases: this loop runs for every call.
            tv = type(v)
            if tv is str:
                out[k] = _redact_str(v, limit)
            elif tv is int or tv is float or tv is bool or v is None:
                out[k] = v
            else:
                out[k] = _redact(v, limit)
        elif kind == _SECRET:
            out[k] = _hide(v)
        elif kind == _ENV:
            out[k] = _redact_env(v)
        else:
            out[k] = _redact_headers(v, limit)
    return out


def _redact(value: Any, limit: int | None) -> Any:
    if isinstance(value, str):
        return _redact_str(value, limit)
    if isinstance(value, dict):
        return _redact_dict(value, limit)
    if isinstance(value, (list, tuple)):
        return [_redact(v, limit) for v in value]
    return value


def redact(value: Any) -> Any:
    """A copy of ``value`` (dicts, lists, tuples → lists, strings) with secrets hidden.

    Replaced by ``"[REDACTED]"`` (keys are matched case-insensitively, camelCase and
    ``-`` treated like ``_``; ``None`` and booleans are kept):

    - values of ``authorization``, ``proxy-authorization``, ``cookie``, ``set-cookie``,
      ``x-api-key`` and of any key containing password, passwd, secret, api_key/apikey,
      access_key, private_key or credential;
    - values of keys with a word ending in ``token`` (``token``, ``auth_token``,
      ``accessToken``, ``csrftoken``) — but not plurals or counts such as
      ``max_tokens``, ``input_tokens``, ``token_count``, ``token_limit``;
    - every value under ``env``/``environment`` (names kept; ``"K=V"`` list items
      become ``"K=[REDACTED]"``);
    - under ``headers``: any header whose name contains auth, cookie, session,
      signature, key, token, secret, password or credential;
    - inside any string: the credential after ``Bearer``/``Basic``, the password in
      ``scheme://user:password@host``, a userinfo of 16+ characters without a
      password (``https://<token>@github.com``), and secret-named query parameters
      (``?access_token=...``).

    A bare ``key`` is not treated as a secret (tools use it for memory keys etc.).
    """
    if type(value) is dict:  # the usual case: tool args
        return _redact_dict(value, None)
    return _redact(value, None)


def redact_clipped(value: Any, limit: int) -> Any:
    """``redact``, and strings longer than ``limit`` are clipped to ``limit`` characters.

    A clipped string ends with ``…[clipped, N chars]`` (N: its original length); it is
    redacted a little past the cut, so a secret straddling it is still hidden.
    """
    return _redact(value, limit)

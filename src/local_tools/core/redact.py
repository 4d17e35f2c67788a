"""Secret redaction for logged tool arguments: ``redact`` and its rules.

Values of secret-named keys (passwords, tokens, API keys, credentials), every value
under ``env``, credential headers, and secrets inside strings (``KEY=value``,
``key: value`` and ``"key": "value"`` with a secret-named key, ``Authorization:
<scheme> ...``, ``Bearer ...``, ``scheme://user:password@host``, ``?token=...``, PEM
private keys, well-known token shapes) become ``REDACTED``. ``redact_clipped`` also
clips long strings, as the audit log stores them.

Strings are scanned at flush time, but for every string arg of every call: a cheap
gate skips the ones that hold none of the characters or prefixes a rule needs.
"""

from __future__ import annotations

import json
from typing import Any

from local_tools.core.redact_text import _GATE, REDACTED, _scan
from local_tools.core.secret_names import (
    _ENV,
    _PLAIN,
    _SECRET,
    _classify,
    _key_kinds,
    is_secret_header,
)

__all__ = ["REDACTED", "is_secret_header", "redact", "redact_clipped"]

_CLIP_MARGIN = 256  # redact a little past the clip so a secret across it is still caught

_is_secret_header = is_secret_header


def _redact_str(s: str, limit: int | None) -> str:
    if limit is not None and len(s) > limit:
        head = _redact_str(s[: limit + _CLIP_MARGIN], None)
        return f"{head[:limit]}…[clipped, {len(s)} chars]"
    if len(s) < 8:
        return s
    scanned = s if _GATE(s) is None else _scan(s)
    if s[0] in _JSON_STARTS:
        return _json_text(s, scanned)
    return scanned


_JSON_STARTS = "{["
_JSON_MAX = 1 << 20  # larger JSON text is scanned as text


def _json_text(s: str, scanned: str) -> str:
    """Arguments sent as JSON text (call_tool's, batch's) are also redacted as the object
    they are (an `env` inside is hidden by its key, which no text rule sees): the text
    scan's result when it hid as much, else the redacted object written back."""
    if len(s) > _JSON_MAX:
        return scanned
    try:
        parsed = json.loads(s)
        redacted = _redact(parsed, None)
        if redacted == parsed or json.loads(scanned) == redacted:
            return scanned
    except (ValueError, RecursionError):  # not JSON (or the scan made it so): text rules
        return scanned
    return json.dumps(redacted, ensure_ascii=False)


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
    kinds = _key_kinds
    for k, v in d.items():
        # This loop runs for every call: the memo lookup, the common scalar cases
        # and the cheap tests of _redact_str are inlined.
        kind = kinds.get(k)
        if kind is None:
            kind = _classify(k)
        if kind == _PLAIN:
            tv = type(v)
            if tv is str:
                if len(v) < 8 or (
                    v[0] not in _JSON_STARTS
                    and _GATE(v) is None
                    and (limit is None or len(v) <= limit)
                ):
                    out[k] = v
                else:
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
    - inside any string (file contents, commands), keeping what says what was there:

      - the value after a secret-named key (judged as above, so ``token_count = 3``
        stays) in ``KEY=value`` (dotenv, ``export``, ``--password=...``),
        ``"key": "value"`` (JSON, also escaped inside a string), ``key = "value"``,
        ``key: Type = value`` and ``key: value`` (YAML, headers) →
        ``OPENAI_API_KEY=[REDACTED]``. A bare value after ``key:`` counts only if it
        ends its line, so prose (``password: see below``) and annotations
        (``def f(password: str)``) stay; the cost is that ``{user: u, password: p}``
        in YAML flow style is missed. Any other value is hidden whatever it looks
        like, code included (``password_field = form.password`` →
        ``password_field = [REDACTED]``): ``ya29.a0Af...`` (a Google OAuth token)
        looks just like an attribute access. Unquoted ``None``, ``null``, ``nil``,
        ``true``, ``false`` and ``~`` hide nothing and are kept.
      - ``Authorization: <scheme> <credential>`` (any scheme: ``token``, ``Bearer``,
        ``Basic``...) keeps the scheme; a ``Cookie:``/``Set-Cookie:`` line is hidden
        whole;
      - the credential after ``Bearer``/``Basic`` anywhere (not the words in "a
        bearer token" or "basic usage": a Basic credential must look like base64);
      - the password in ``scheme://user:password@host``, a userinfo of 16+
        characters without a password (``https://<token>@github.com``), and
        secret-named query parameters (``?access_token=...``, and in a query also
        ``key``, ``sig``, ``auth``, ``code`` and any ``*signature*``, ``*session*``);
      - a webhook URL's path past the part naming the service (Slack ``/services/``,
        Discord and others ``/webhooks/``, Zapier ``/hooks/catch/``, Telegram
        ``/bot<token>``);
      - command-line credentials: ``--password X``, ``--token X``, ``--api-key X``
        (any secret-named long option with its value after a space), the password of
        ``curl -u user:pass`` / ``--user user:pass``, ``mysql -pX`` (in a mysql or
        mariadb command), ``Authorization:token X`` with no space;
      - a header in quotes: ``-H 'X-Api-Key: k'``, ``-H "PRIVATE-TOKEN: k"``;
      - the body of a PEM private key (``-----BEGIN ... PRIVATE KEY-----`` to its END
        line, or to the end of the string if that was cut off);
      - well-known token shapes: GitHub (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``,
        ``ghr_``, ``github_pat_``), GitLab (``glpat-``), OpenAI/Anthropic-style
        ``sk-...`` (20+ characters with a digit), Stripe (``sk_live_``...), Slack
        (``xoxb-``...), AWS key ids (``AKIA``/``ASIA`` + 16), Google API keys
        (``AIza``), JWTs (``eyJ....eyJ....``).

    A bare ``key`` is not treated as a secret (tools use it for memory keys etc.).
    """
    if type(value) is dict:  # the usual case: tool args
        return _redact_dict(value, None)
    return _redact(value, None)


def redact_clipped(value: Any, limit: int, total: int | None = None) -> Any:
    """``redact``, and strings longer than ``limit`` are clipped to ``limit`` characters.

    A clipped string ends with ``…[clipped, N chars]`` (N: its original length); it is
    redacted a little past the cut, so a secret straddling it is still hidden. With
    ``total``, what is kept of the whole value is about that many characters: later
    items of lists and dicts are replaced by a note of how many were left out, so neither
    the work nor what is stored grows with the arguments' size.
    """
    if total is not None:
        value = _clip_total(value, limit, [total])
    return _redact(value, limit)


def _clip_total(value: Any, limit: int, budget: list[int]) -> Any:
    if isinstance(value, str):
        budget[0] -= min(len(value), limit)
        return value
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        items = list(value.items())
        for n, (key, item) in enumerate(items):
            if budget[0] <= 0:
                out["…"] = f"[clipped: {len(items) - n} more keys]"
                break
            budget[0] -= len(str(key)) + 4
            out[key] = _clip_total(item, limit, budget)
        return out
    if isinstance(value, (list, tuple)):
        kept: list[Any] = []
        for n, item in enumerate(value):
            if budget[0] <= 0:
                kept.append(f"[clipped: {len(value) - n} more items]")
                break
            budget[0] -= 2
            kept.append(_clip_total(item, limit, budget))
        return kept
    budget[0] -= 8
    return value

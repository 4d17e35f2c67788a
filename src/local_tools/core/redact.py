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

import re
from typing import Any

__all__ = ["REDACTED", "is_secret_header", "redact", "redact_clipped"]

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
# Whole words of a name that make it a secret's (not parts: "author", "compass").
_SECRET_WORDS = frozenset({"pass", "pwd", "pw", "auth", "passphrase"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}

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


_is_secret_header = is_secret_header


# ------------------------------------------------------------------ secrets inside strings
#
# Strings are scanned only if a cheap case-sensitive gate finds something one of the
# rules needs: "=" (key=value, query strings), ": " or a colon next to a quote
# ("key": "value", YAML, headers), "://", "BEGIN" (PEM), an auth scheme, or a token
# prefix. Most paths, globs, patterns and commands stop there.
_GATE = re.compile(
    # Each alternative starts with a literal character, and a rare one: the regex
    # engine then skips in C to the few positions holding one of them (a class or a
    # group up front would disable that, a common letter would stop it everywhere).
    r"=|: |:\t|:\"|:'|\":|':|://|BEGIN|Bearer|bearer|BEARER|Basic|basic|BASIC"
    r"|gh[pousr]_|github_pat_|glpat-|k[-_]|xox|J(?<=eyJ)|AKIA|ASIA|AIza"
    # command-line credentials: --password X, curl -u user:pass, mysql -pX
    r"|--|-u|mysql|mariadb|zation:|ZATION:|PASS|pass|Pass|PWD|pwd|AUTH|auth|Auth"
    r"|y:(?<=[Kk][Ee]y:)|Y:(?<=KEY:)|n:(?<=[Tt]oken:)|N:(?<=TOKEN:)"
).search

# What the scanner looks for, in the lower-cased string: the start of a PEM private
# key, an auth scheme, a URL, a query string, and pieces of secret-looking names,
# found by their rarer letters ("ken" of token, "key", "kie" of cookie, "word"/"wd"
# of password/passwd, "cret" of secret, "cred", "zation" of authorization). The
# whole name is then read around the hit and judged by the same rules as dict keys,
# so "token_count = 3" or "keyword: x" stay visible.
_ANCHOR = re.compile(
    r"-----begin |bearer|basic|://|\?|&|word|wd|cre[td]|zation|ken|key|kie|pass|auth"
    r"|--(?=[a-z])|-u(?=[^\s-]|[ \t])|-p(?=[^\s-])"
).search

_PEM_BEGIN = re.compile(r"-----begin [a-z0-9 ]*private key(?: block)?-----")
_PEM_END = re.compile(r"-----end [a-z0-9 ]*private key(?: block)?-----")
_AUTH_CRED = re.compile(r"[ \t]+([^\s\"',;]+)")
_URL_CRED = re.compile(r"(?:[^\s/@:]*:([^\s/@]+)|([^\s/@:]{16,}))(?=@)")
_QUERY_PARAM = re.compile(r"([a-z_][\w.\-]*)=([^\s&#\"']+)")
# After a piece of a name: the rest of the name, then `=`, `:=`, `: Type =` or `:` (after
# a quoted name, or followed by a space or a quote; quotes and a `]` around the name
# allowed: "k": v, ENV["K"] = v, \"k\": \"v\" in a JSON string).
_NAME_REST = re.compile(r"[\w.\-]*")
_KV_SEP = re.compile(
    r"""[\w.\-]*(?P<sep>(?:\\?["'])?\]?[ \t]*"""
    r"""(?::=|=(?![=>~])|:[ \t]*[a-z_][\w.\[\]|, ]{0,80}?[ \t]{1,8}=(?![=>~])"""
    r"""|(?<=["'])(?P<colon>:)(?!:)|(?P<bare_colon>:)(?=[ \t]|\\?["']))"""
    r"""[ \t]*)"""
)
# Then a quoted value (up to the closing quote, or the end of the line; \"...\" in a
# JSON string) or a bare one.
_KV_VALUE = re.compile(
    r"""(?:"(?P<dq>(?:[^"\\\r\n]+|\\[^\r\n])*)"""
    r"""|'(?P<sq>(?:[^'\\\r\n]+|\\[^\r\n])*)"""
    r"""|\\"(?P<eq>(?:[^\\\r\n]+|\\(?!"))*))"""
    r"""|(?P<v>[^\s"'`,;&|()\[\]{}<>]+)"""
)
_QUOTED = ("dq", "sq", "eq")
# `Authorization: <scheme> <credential>`: the scheme stays visible.
_AUTH_VALUE = re.compile(r"(?:[a-z][\w\-]*[ \t]+(?=[^\s\"'`]))?[^\s\"'`,;]+")
_SCHEME = re.compile(r"[A-Za-z][\w\-]*[ \t]+(?=\S)")
_HEADER_VALUE = re.compile(r"[^\s\"'`,;]+")
_LINE_REST = re.compile(r"[^\r\n\"'`]*")  # a Cookie header's value
# (a closing quote too: curl -H 'X-Api-Key: k' is a header line in quotes)
_LINE_END = re.compile(r"[ \t]*(?:[\r\n#}\]\"'`]|\Z)")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{4,}={0,2}")
# Unquoted values that hide nothing (kept, like None and booleans in dicts).
_NOT_SECRET_VALUES = frozenset({"none", "null", "nil", "true", "false", "~"})
# "bearer token", "Basic auth" in prose: words, not credentials.
_NOT_CREDENTIALS = frozenset(
    {"token", "tokens", "auth", "authentication", "authorization", "scheme", "header"}
)
_AUTH_HEADERS = frozenset({"authorization", "proxy_authorization"})
_COOKIE_HEADERS = frozenset({"cookie", "set_cookie"})

# Well-known token shapes, anywhere (case-sensitive, in the original string), not in
# the middle of a word. As in _GATE, every alternative starts with a rare literal:
# the "k" of sk-/rk_, the "J" of eyJ; the lookbehinds check what comes before it.
_SHAPES = re.compile(
    r"g(?<![A-Za-z0-9]g)(?:h[pousr]_[A-Za-z0-9]{20,}|ithub_pat_[A-Za-z0-9_]{20,}"
    r"|lpat-[0-9A-Za-z_\-]{20,})"  # GitHub, GitLab
    r"|k(?<![A-Za-z0-9]sk)(?<=sk)-[A-Za-z0-9_\-]{20,}"  # sk-..., sk-proj-..., sk-ant-...
    r"|k(?<![A-Za-z0-9][sr]k)(?<=[sr]k)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|x(?<![A-Za-z0-9]x)ox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|A(?<![A-Za-z0-9]A)(?:KIA|SIA)[0-9A-Z]{16}(?![0-9A-Za-z])"  # AWS access key id
    r"|A(?<![A-Za-z0-9]A)Iza[0-9A-Za-z_\-]{35}"  # Google API key
    r"|J(?<![A-Za-z0-9]eyJ)(?<=eyJ)[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"
)
_SHAPE_BACK = {"k": 1, "J": 2}  # characters of the token before where the match starts


_MAX_NAME = 128  # a longer run of name characters is judged by its end


def _name_before(s: str, i: int, floor: int) -> int:
    """Where the name that reaches position ``i`` of ``s`` starts."""
    floor = max(floor, i - _MAX_NAME)
    while i > floor and (s[i - 1].isalnum() or s[i - 1] in "_.-"):
        i -= 1
    return i


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


# (start, end, replacement) in the original string, or None: nothing here
_Hit = tuple[int, int, str] | None


def _at_pem(s: str, low: str, start: int, end: int, floor: int) -> _Hit:
    begin = _PEM_BEGIN.match(low, start)
    if begin is None:
        return None
    stop = _PEM_END.search(low, begin.end())
    # No END line (clipped, or pasted halfway): hide everything after BEGIN.
    return begin.end(), len(s) if stop is None else stop.start(), REDACTED


def _at_auth_scheme(s: str, low: str, start: int, end: int, floor: int) -> _Hit:
    if start and (low[start - 1].isalnum() or low[start - 1] == "_"):
        return None  # inside a word
    m = _AUTH_CRED.match(low, end)
    if m is None:
        return None
    a, b = m.span(1)
    if low.startswith("bearer", start):
        if low[a:b] in _NOT_CREDENTIALS:  # "a bearer token"
            return None
    else:  # basic: only base64-looking credentials, not "basic usage"
        cred = s[a:b]
        if not _BASE64.fullmatch(cred) or (
            cred[1:].islower() and not any(c in cred for c in "0123456789+/=")
        ):
            return None
    return a, b, REDACTED


# A webhook's URL is its credential: whoever has it can post. The path after the part
# that names the service is hidden (Slack, Discord, Teams, Zapier, any /webhook(s)/,
# Telegram's /bot<token>).
# (bounded: a string of many "://" would otherwise be scanned to its end from each one)
_URL_HOST_PATH = re.compile(r"([^\s/?#@\"'`]{1,255})(/[^\s?#\"'`]{0,256})")
_WEBHOOK_PATH = re.compile(r"/(?:api/)?webhooks?/|/services/|/hooks/catch/|/bot(?=\d+:)")


def _at_url(s: str, low: str, start: int, end: int, floor: int) -> _Hit:
    m = _URL_CRED.match(low, end)
    if m is not None:
        group = 1 if m.group(1) is not None else 2
        return m.start(group), m.end(group), REDACTED
    url = _URL_HOST_PATH.match(low, end)
    if url is None:
        return None
    host, path = url.group(1), url.group(2)
    marker = _WEBHOOK_PATH.search(path)
    hooky = "hook" in host or (marker is not None and "hook" in marker.group())
    if marker is None or not (hooky or marker.group().startswith("/bot")):
        return None
    a = url.start(2) + marker.end()
    return (a, url.end(2), REDACTED) if a < url.end(2) else None


# In a query string a bare `key` (Google's ?key=AIza...), `sig` and any signature
# (X-Amz-Signature, Azure's sig) are credentials too.
_QUERY_SECRET_NAMES = frozenset({"key", "sig", "auth", "code"})
_QUERY_SECRET_PARTS = ("signature", "secret", "password", "credential", "session")


def _query_secret(name: str) -> bool:
    low = name.lower()
    return (
        low in _QUERY_SECRET_NAMES
        or any(part in low for part in _QUERY_SECRET_PARTS)
        or _kind_of_name(name) == _SECRET
    )


def _at_query(s: str, low: str, start: int, end: int, floor: int) -> _Hit:
    m = _QUERY_PARAM.match(low, end)
    if m is None or not _query_secret(s[m.start(1) : m.end(1)]):
        return None
    return m.start(2), m.end(2), REDACTED


def _auth_value(value: str) -> str:
    scheme = _SCHEME.match(value)
    return REDACTED if scheme is None else scheme.group() + REDACTED


def _at_name(s: str, low: str, start: int, end: int, floor: int) -> _Hit | int:
    sep = _KV_SEP.match(low, end)
    if sep is None:  # not followed by = or :, go past the name (each is read once)
        rest = _NAME_REST.match(low, end)
        stop = rest.end() if rest else end
        if low.startswith(":", stop):  # Authorization:token X, PRIVATE-TOKEN:X (no space)
            name = s[_name_before(s, start, floor) : stop]
            if _normalize(name).strip("_") in _AUTH_HEADERS:
                whole = _AUTH_VALUE.match(low, stop + 1)
                if whole is not None:
                    return stop + 1, whole.end(), _auth_value(s[stop + 1 : whole.end()])
            elif is_secret_header(name) and _kind_of_name(name) == _SECRET:
                value = _HEADER_VALUE.match(low, stop + 1)
                if value is not None:
                    return stop + 1, value.end(), REDACTED
        return stop
    name = s[_name_before(s, start, floor) : sep.start("sep")]
    m = _KV_VALUE.match(low, sep.end())
    if m is None or _kind_of_name(name) != _SECRET:
        return sep.end()  # the value is still scanned
    lname = name.lower()
    # Header names get their own value rules; most names are not worth normalizing.
    norm = _normalize(name).strip("_") if "auth" in lname or "cookie" in lname else ""
    for group in _QUOTED:  # quoted: everything up to the closing quote
        if m.group(group) is not None:
            a, b = m.span(group)
            return a, b, _auth_value(s[a:b]) if norm in _AUTH_HEADERS else REDACTED
    a, b = m.span("v")
    colon = sep.group("colon") is not None or sep.group("bare_colon") is not None
    if norm in _AUTH_HEADERS:  # Authorization: token ghp_...
        whole = _AUTH_VALUE.match(low, a)
        b = whole.end() if whole else b
        return a, b, _auth_value(s[a:b])
    if colon and norm in _COOKIE_HEADERS:  # Cookie: a=1; b=2
        rest = _LINE_REST.match(s, a)
        return a, max(b, a + len(rest.group().rstrip()) if rest else b), REDACTED
    if low[a:b] in _NOT_SECRET_VALUES:
        return b
    # "key: value" is YAML or a header only if the value ends the line; otherwise it
    # is prose ("password: see below") or code ("def f(password: str, ...)").
    if colon and _LINE_END.match(s, b) is None:
        return a
    return a, b, REDACTED


# Command-line credentials. Only where an option starts a word.
_LONG_OPTION = re.compile(r"([a-z][\w\-]*)(?:[ \t]+|=)")
_SPACES = re.compile(r"[ \t]+")


def _value_span(low: str, pos: int) -> tuple[int, int] | None:
    m = _KV_VALUE.match(low, pos)
    if m is None:
        return None
    for group in (*_QUOTED, "v"):
        if m.group(group) is not None:
            return m.span(group)
    return None


def _option_start(low: str, start: int) -> bool:
    return start == 0 or low[start - 1] in " \t\"'=("


def _after_colon(low: str, span: tuple[int, int] | None) -> _Hit:
    """user:password (curl -u / --user): the password."""
    if span is None:
        return None
    colon = low.find(":", *span)
    return None if colon == -1 or colon + 1 == span[1] else (colon + 1, span[1], REDACTED)


def _at_long_option(s: str, low: str, start: int, end: int, floor: int) -> _Hit:
    """--password X, --token X, --api-key X; curl --user user:password."""
    if not _option_start(low, start):
        return None
    m = _LONG_OPTION.match(low, end)
    if m is None:
        return None
    span = _value_span(low, m.end())
    if low[m.start(1) : m.end(1)] in ("user", "proxy-user"):
        return _after_colon(low, span)
    if span is None or _kind_of_name(s[m.start(1) : m.end(1)]) != _SECRET:
        return None
    a, b = span
    if b == a or low[a] == "-" or low[a:b] in _NOT_SECRET_VALUES:
        return None
    return a, b, REDACTED


def _at_user_option(s: str, low: str, start: int, end: int, floor: int) -> _Hit:
    """curl -u user:password."""
    if not _option_start(low, start):
        return None
    spaces = _SPACES.match(low, end)
    return _after_colon(low, _value_span(low, spaces.end() if spaces else end))


def _at_mysql_password(s: str, low: str, start: int, end: int, floor: int) -> _Hit:
    """mysql -pSECRET (the password joined to -p), in a mysql or mariadb command."""
    if not _option_start(low, start):
        return None
    if low.rfind("mysql", floor, start) == -1 and low.rfind("mariadb", floor, start) == -1:
        return None
    span = _value_span(low, end)
    return None if span is None or span[0] == span[1] else (*span, REDACTED)


_AT = {"-----begin ": _at_pem, "bearer": _at_auth_scheme, "basic": _at_auth_scheme}
_AT.update({"://": _at_url, "?": _at_query, "&": _at_query})
_AT.update({"--": _at_long_option, "-u": _at_user_option, "-p": _at_mysql_password})


def _redact_shapes(s: str) -> str:
    parts: list[str] = []
    last = 0
    for m in _SHAPES.finditer(s):
        token = m.group()
        if token[0] == "k" and token[1] == "-" and not any(c.isdigit() for c in token):
            continue  # "sk-folding-cube-container" (CSS), not a key: keys have digits
        start = m.start() - _SHAPE_BACK.get(token[0], 0)
        parts.append(s[last:start])
        parts.append(REDACTED)
        last = m.end()
    if not parts:
        return s
    parts.append(s[last:])
    return "".join(parts)


def _scan(s: str) -> str:
    low = s.lower()
    if len(low) != len(s):  # a few characters lower-case to two ("İ"): ASCII only
        low = s.translate(_ASCII_LOWER)
    parts: list[str] = []
    last = pos = 0
    while (m := _ANCHOR(low, pos)) is not None:
        start = m.start()
        hit = _AT.get(m.group(), _at_name)(s, low, start, m.end(), last)
        if hit is None:
            pos = start + 1
            continue
        if type(hit) is int:  # nothing to hide; where to look on
            pos = hit
            continue
        a, b, replacement = hit
        parts.append(s[last:a])
        parts.append(replacement)
        last = pos = b
    if parts:
        parts.append(s[last:])
        s = "".join(parts)
    return _redact_shapes(s)


def _redact_str(s: str, limit: int | None) -> str:
    if limit is not None and len(s) > limit:
        head = _redact_str(s[: limit + _CLIP_MARGIN], None)
        return f"{head[:limit]}…[clipped, {len(s)} chars]"
    if len(s) < 8 or _GATE(s) is None:
        return s
    return _scan(s)


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
                if len(v) < 8 or (_GATE(v) is None and (limit is None or len(v) <= limit)):
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

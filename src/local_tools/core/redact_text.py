"""Secrets inside strings: the scanner behind ``redact`` for string values.

``KEY=value``, ``"key": "value"`` and ``key: value`` with a secret-named key,
``Authorization: <scheme> ...``, ``Bearer ...``, ``scheme://user:password@host``,
``?token=...``, webhook URLs, command-line credentials, PEM private keys and
well-known token shapes. Kept apart from ``redact`` (which walks dicts and lists)
because it is a self-contained text scanner with its own regexes and handlers.
"""

from __future__ import annotations

import re

from local_tools.core.secret_names import (
    _SECRET,
    _kind_of_name,
    _normalize,
    is_secret_header,
)

REDACTED = "[REDACTED]"

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}

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
        if isinstance(hit, int):  # nothing to hide; where to look on
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

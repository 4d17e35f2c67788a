"""What a command runs in: which shell, which environment, how its output is decoded.

The environment is built from a short allow-list of the host's variables, not the
whole of it: API keys and tokens in our own environment are not the model's to
read. Variables that make tools wait for a human (pagers, credential prompts,
editors) are set so they don't; `CI=true` makes many tools quieter and non-interactive.
"""

from __future__ import annotations

import codecs
import os
import shutil
import sys
from collections.abc import Mapping
from functools import lru_cache

from local_tools.core.errors import InvalidInput

__all__ = ["build_environment", "decode_output", "shell_argv"]

# Kept from the host: what programs need to find themselves, the user and the locale.
_POSIX_KEEP = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ",
    "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
    "VIRTUAL_ENV", "CONDA_PREFIX", "JAVA_HOME", "GOPATH", "GOROOT", "CARGO_HOME",
    "RUSTUP_HOME", "NVM_DIR", "PYENV_ROOT", "SSL_CERT_FILE", "SSL_CERT_DIR",
)  # fmt: skip
_WINDOWS_KEEP = (
    "PATH", "PATHEXT", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "TEMP", "TMP",
    "USERPROFILE", "USERNAME", "USERDOMAIN", "HOMEDRIVE", "HOMEPATH", "APPDATA",
    "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)", "COMMONPROGRAMFILES",
    "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "OS",
)  # fmt: skip
# Nobody is at a terminal: no pager, no prompt, no colour codes, no editor.
NON_INTERACTIVE = {
    "CI": "true",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "DEBIAN_FRONTEND": "noninteractive",
    "PYTHONUNBUFFERED": "1",  # a REPL driven by process_input answers at once
    "PIP_NO_INPUT": "1",
    "npm_config_yes": "true",
}
MAX_ENV_BYTES = 128 * 1024  # what the model may add; Linux allows ~2 MB in total


def build_environment(
    extra: Mapping[str, str],
    *,
    host: Mapping[str, str] | None = None,
    platform: str = sys.platform,
) -> dict[str, str]:
    """The host's allow-listed variables + the non-interactive ones + the caller's `extra`."""
    check_variables(extra)
    env = _host_part(platform) if host is None else _allowed(host, platform)
    env.update(NON_INTERACTIVE)
    env.update(extra)
    return env


# (os.environ's raw mapping as it was, the allow-listed part built from it, platform)
_last: tuple[dict[object, object], dict[str, str], str] | None = None


def _host_part(platform: str) -> dict[str, str]:
    """`_allowed(os.environ)`, built again only when the environment changed.

    Reading os.environ decodes every variable (tens of µs per command); its raw dict
    compares with a copy at C speed, so a change (os.environ[...] = ..., putenv via
    os.environ) is still seen on the next command."""
    global _last
    raw: dict[object, object] | None = getattr(os.environ, "_data", None)
    if raw is None:
        return _allowed(os.environ, platform)
    last = _last
    if last is not None and last[2] == platform and last[0] == raw:
        return dict(last[1])
    part = _allowed(os.environ, platform)
    _last = (dict(raw), part, platform)
    return dict(part)


def _allowed(host: Mapping[str, str], platform: str) -> dict[str, str]:
    windows = platform == "win32"
    keep = _WINDOWS_KEEP if windows else _POSIX_KEEP
    if windows:  # names are case-insensitive there: match them so
        upper = {k.upper(): v for k, v in host.items()}
        env = {k: upper[k] for k in keep if k in upper}
    else:
        env = {k: host[k] for k in keep if k in host}
        env.update({k: v for k, v in host.items() if k.startswith("LC_")})
    env.setdefault("PATH", os.defpath)
    return env


def check_variables(extra: Mapping[str, str]) -> None:
    size = 0
    for key, value in extra.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise InvalidInput(
                f"env: {key!r} is not a valid variable name or holds a NUL byte; names are "
                "non-empty and contain no '=' or NUL."
            )
        try:
            key.encode("utf-8")
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(
                f"env: {key!r} holds a lone surrogate (a broken UTF-16 escape); send valid text."
            ) from None
        size += len(key) + len(value) + 2
    if size > MAX_ENV_BYTES:
        raise InvalidInput(
            f"env: {size} bytes of variables is more than the {MAX_ENV_BYTES} allowed; pass "
            "large data in a file instead."
        )


def shell_argv(
    command: str,
    *,
    platform: str = sys.platform,
    environ: Mapping[str, str] | None = None,
    which: object = None,
    prefer: str | None = None,
) -> list[str]:
    """The argv that runs `command` through the platform shell.

    POSIX: `bash -c` when bash exists, else `sh -c`. Windows: `%COMSPEC% /C` (cmd.exe),
    or PowerShell when `prefer="powershell"` (then pwsh before Windows PowerShell).
    """
    environ = os.environ if environ is None else environ
    find = which if callable(which) else _which
    if platform == "win32":
        if prefer == "powershell":
            exe = find("pwsh") or find("powershell") or "powershell.exe"
            return [exe, "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", command]
        comspec = environ.get("COMSPEC") or environ.get("ComSpec") or "cmd.exe"
        return [comspec, "/D", "/S", "/C", command]
    bash = find("bash")
    return [bash, "-c", command] if bash else ["/bin/sh", "-c", command]


@lru_cache(maxsize=32)
def _cached_which(name: str, path: str | None) -> str | None:
    return shutil.which(name, path=path)


def _which(name: str) -> str | None:
    # Looked up for every command; PATH rarely changes, so the answer is kept per PATH.
    return _cached_which(name, os.environ.get("PATH"))


def decode_output(data: bytes, *, platform: str = sys.platform, codepage: int | None = None) -> str:
    """Text for the model: UTF-8 when it is; on Windows the console code page otherwise.

    Windows programs write in the console's OEM code page (cp437, cp850, cp936 ...)
    unless told otherwise; decoding those bytes as UTF-8 would garble every accent.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if platform == "win32":
        encoding = f"cp{codepage if codepage is not None else _console_codepage()}"
        try:
            codecs.lookup(encoding)
            return data.decode(encoding, errors="replace")
        except LookupError:
            pass
    return data.decode("utf-8", errors="replace")


def _console_codepage() -> int:
    try:
        import ctypes

        return int(ctypes.windll.kernel32.GetConsoleOutputCP()) or 437  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return 437

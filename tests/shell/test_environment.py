"""The command's shell, environment and output decoding, POSIX and Windows (by simulation)."""

from __future__ import annotations

import pytest

from local_tools.core.errors import InvalidInput
from local_tools.shell.environment import (
    MAX_ENV_BYTES,
    NON_INTERACTIVE,
    build_environment,
    decode_output,
    shell_argv,
)


def _which(found: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda name: found.get(name)


def test_posix_prefers_bash_then_sh() -> None:
    with_bash = shell_argv("ls", platform="linux", which=_which({"bash": "/usr/bin/bash"}))
    assert with_bash == ["/usr/bin/bash", "-c", "ls"]
    assert shell_argv("ls", platform="linux", which=_which({})) == ["/bin/sh", "-c", "ls"]


def test_windows_uses_comspec_or_powershell() -> None:
    env = {"COMSPEC": r"C:\Windows\system32\cmd.exe"}
    argv = shell_argv("dir", platform="win32", environ=env, which=_which({}))
    assert argv == [r"C:\Windows\system32\cmd.exe", "/D", "/S", "/C", "dir"]
    assert shell_argv("dir", platform="win32", environ={}, which=_which({}))[0] == "cmd.exe"
    ps = shell_argv(
        "Get-ChildItem", platform="win32", environ=env, prefer="powershell",
        which=_which({"pwsh": r"C:\pwsh\pwsh.exe", "powershell": "powershell.exe"}),
    )  # fmt: skip
    assert ps[0] == r"C:\pwsh\pwsh.exe"
    assert ps[-2:] == ["-Command", "Get-ChildItem"]
    assert "-NonInteractive" in ps


def test_environment_is_minimal_and_non_interactive() -> None:
    host = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "OPENAI_API_KEY": "sk-secret",
        "AWS_SECRET_ACCESS_KEY": "x",
        "PAGER": "less",
    }
    env = build_environment({"FOO": "bar"}, host=host, platform="linux")
    assert env["PATH"] == "/usr/bin"
    assert env["HOME"] == "/home/u"
    assert env["LC_ALL"] == "C.UTF-8"
    assert "OPENAI_API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["FOO"] == "bar"
    for key in ("CI", "PAGER", "GIT_PAGER", "TERM", "GIT_TERMINAL_PROMPT"):
        assert env[key] == NON_INTERACTIVE[key]
    assert env["PAGER"] == "cat"


def test_windows_environment_matches_names_case_insensitively() -> None:
    host = {"Path": r"C:\bin", "SystemRoot": r"C:\Windows", "GITHUB_TOKEN": "t"}
    env = build_environment({}, host=host, platform="win32")
    assert env["PATH"] == r"C:\bin"
    assert env["SYSTEMROOT"] == r"C:\Windows"
    assert "GITHUB_TOKEN" not in env


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"": "x"}, "not a valid variable name"),
        ({"A=B": "x"}, "not a valid variable name"),
        ({"A": "x\0y"}, "NUL"),
        ({"BIG": "x" * (MAX_ENV_BYTES + 1)}, "more than"),
    ],
)
def test_bad_variables_are_refused(extra: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        build_environment(extra, host={}, platform="linux")


def test_decoding_utf8_and_windows_code_pages() -> None:
    assert decode_output("héllo ✓".encode()) == "héllo ✓"
    # cmd.exe in a Western European console writes cp850; a Chinese one cp936.
    assert decode_output("Größe".encode("cp850"), platform="win32", codepage=850) == "Größe"
    assert decode_output("文件".encode("cp936"), platform="win32", codepage=936) == "文件"
    # On POSIX, bytes that are not UTF-8 come out with replacement characters, never raise.
    assert decode_output(b"ok \xff\xfe", platform="linux") == "ok \ufffd\ufffd"
    # An unknown code page falls back to UTF-8 with replacements.
    assert decode_output(b"\xff", platform="win32", codepage=99999) == "\ufffd"

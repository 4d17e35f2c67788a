"""Windows path rules, as pure functions over strings (ntpath semantics), so they
run on every platform."""

from __future__ import annotations

import ntpath

import pytest

from local_tools.core.errors import InvalidInput, PermissionDenied
from local_tools.security.winpath import (
    check_windows_path,
    is_windows_reserved_name,
    is_windows_system_path,
    windows_relative_to,
)


@pytest.mark.parametrize(
    ("path", "normalized"),
    [
        ("C:\\ws\\file.txt", "C:\\ws\\file.txt"),
        ("c:/ws/./a/../b.txt", "C:\\ws\\b.txt"),
        ("C:\\ws\\\\sub\\", "C:\\ws\\sub"),
        ("a/b", "a\\b"),
        ("a\\..\\b", "b"),
        (".", "."),
        ("..\\x", "..\\x"),  # stays visible so the jail refuses it
        ("\\\\server\\share\\dir\\f.txt", "\\\\server\\share\\dir\\f.txt"),
        ("//server/share/x", "\\\\server\\share\\x"),
        ("données\\日本語.txt", "données\\日本語.txt"),
        ("console.txt", "console.txt"),  # only the exact device names are reserved
        ("COM10", "COM10"),
        ("my~file.txt", "my~file.txt"),
        ("a.b.c", "a.b.c"),
        (".gitignore", ".gitignore"),
        ("C:\\ws\\..\\ws-evil\\f", "C:\\ws-evil\\f"),  # Win32 collapses '..' textually
    ],
)
def test_valid_paths_normalize(path: str, normalized: str) -> None:
    assert check_windows_path(path) == normalized


@pytest.mark.parametrize(
    "path",
    ["C:\\a\\..\\..\\b", "C:/x/./y//z/", "D:\\a\\b\\..", "\\\\srv\\sh\\a\\..\\b", "a/b/../../c"],
)
def test_normalization_matches_ntpath(path: str) -> None:
    assert check_windows_path(path) == ntpath.normpath(path)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("C:foo", "drive-relative"),
        ("C:", "drive-relative"),
        ("d:..\\x", "drive-relative"),
        ("\\foo\\bar", "no drive"),
        ("/foo", "no drive"),
        ("1:\\x", "malformed drive"),
        ("CON", "reserved"),
        ("con", "reserved"),
        ("CON.txt", "reserved"),
        ("nul", "reserved"),
        ("Nul.tar.gz", "reserved"),
        ("aux .c", "reserved"),
        ("PRN", "reserved"),
        ("com1", "reserved"),
        ("COM9.log", "reserved"),
        ("lpt1", "reserved"),
        ("LPT9.txt", "reserved"),
        ("COM¹", "reserved"),
        ("CONIN$", "reserved"),
        ("dir\\prn\\x.txt", "reserved"),
        ("C:\\ws\\aux\\x", "reserved"),
        ("file.txt:stream", "alternate data stream"),
        ("file.txt::$DATA", "alternate data stream"),
        ("C:\\ws\\a:b", "alternate data stream"),
        ("trail.", "dot or space"),
        ("trail ", "dot or space"),
        ("dir.\\x", "dot or space"),
        ("C:\\ws\\secret.txt...", "dot or space"),
        ("PROGRA~1\\x", "short name"),
        ("C:\\DOCUME~1\\x", "short name"),
        ("a<b", "characters"),
        ("a>b", "characters"),
        ("a|b", "characters"),
        ("a?b", "characters"),
        ("a*b", "characters"),
        ('a"b', "characters"),
        ("a\tb", "characters"),
        ("\\\\server", "UNC"),
        ("\\\\server\\", "UNC"),
        ("", "empty"),
        ("a\x00b", "null byte"),
        ("n" * 256, "longer than"),
    ],
)
def test_malformed_paths_are_invalid(path: str, why: str) -> None:
    with pytest.raises(InvalidInput, match=why):
        check_windows_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "\\\\?\\C:\\Windows\\system32",
        "\\\\.\\PhysicalDrive0",
        "\\\\.\\pipe\\secret",
        "//?/C:/x",
        "//./COM1",
        "\\??\\C:\\x",
        "\\\\?\\UNC\\server\\share\\x",
        "\\\\?",
    ],
)
def test_device_namespace_is_refused(path: str) -> None:
    with pytest.raises(PermissionDenied, match="device-namespace"):
        check_windows_path(path)


@pytest.mark.parametrize(
    ("path", "root", "rel"),
    [
        ("C:\\WS\\File.txt", "c:\\ws", ["File.txt"]),
        ("c:\\ws", "C:\\WS", []),
        ("C:\\ws\\a\\b", "C:\\ws", ["a", "b"]),
        ("C:\\ws-evil\\x", "C:\\ws", None),  # component-wise, not a string prefix
        ("C:\\w", "C:\\ws", None),
        ("D:\\ws\\x", "C:\\ws", None),
        ("\\\\srv\\share\\ws\\x", "C:\\ws", None),
        ("\\\\SRV\\Share\\ws\\x", "\\\\srv\\share\\ws", ["x"]),
        ("\\\\srv\\other\\ws\\x", "\\\\srv\\share\\ws", None),
        (check_windows_path("C:\\ws\\..\\ws-evil\\f"), "C:\\ws", None),
    ],
)
def test_root_containment_is_case_insensitive_and_component_wise(
    path: str, root: str, rel: list[str] | None
) -> None:
    assert windows_relative_to(path, root) == rel


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("C:\\Windows", True),
        ("C:\\WINDOWS\\System32\\drivers\\etc\\hosts", True),
        ("c:\\program files\\App\\x.dll", True),
        ("C:\\Program Files (x86)\\y", True),
        ("C:\\ProgramData\\Microsoft\\Crypto", True),
        ("C:\\ProgramData\\OtherVendor\\x", False),
        ("C:\\Windows-evil\\x", False),
        ("C:\\Users\\me\\ws\\Windows", False),
        ("D:\\Windows\\x", False),
    ],
)
def test_system_dirs(path: str, protected: bool) -> None:
    assert is_windows_system_path(path) is protected


def test_system_dirs_can_be_given() -> None:
    assert is_windows_system_path("E:\\OS\\x", ["E:\\OS"])
    assert not is_windows_system_path("C:\\Windows\\x", ["E:\\OS"])


@pytest.mark.parametrize(
    ("name", "reserved"),
    [("CON", True), ("con.txt", True), ("LpT3", True), ("nul .txt", True), ("NULL", False),
     ("CONSOLE", False), ("COM", False), ("auxiliary.c", False)],
)  # fmt: skip
def test_reserved_names(name: str, reserved: bool) -> None:
    assert is_windows_reserved_name(name) is reserved

"""``local-tools doctor``: what this machine gives the tools (jail engine, rg, sandbox)."""

from __future__ import annotations

import ctypes
import platform
import shutil
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from local_tools.toolbox import Toolbox

__all__ = ["diagnose", "landlock_abi"]

_LANDLOCK_CREATE_RULESET = 444  # same number on x86_64 and aarch64
_LANDLOCK_CREATE_RULESET_VERSION = 1


def landlock_abi() -> int | None:
    """The kernel's Landlock ABI version, or None where Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return None
    return int(abi) if abi > 0 else None


def diagnose(tb: Toolbox) -> list[tuple[str, str]]:
    from local_tools import __version__
    from local_tools.search import engine_info

    abi = landlock_abi()
    bwrap = shutil.which("bwrap")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    return [
        ("local-tools", __version__),
        ("python", f"{platform.python_version()} ({sys.executable})"),
        ("platform", f"{platform.system()} {platform.release()} {platform.machine()}"),
        ("workspace", str(tb.workspace)),
        ("config", tb.config.source or "built-in defaults"),
        ("state dir", str(tb.state_dir)),
        ("path jail", tb.jail.engine),
        ("search", engine_info()),
        ("landlock", f"ABI {abi}" if abi else "unavailable"),
        ("bubblewrap", bwrap or "not found"),
        ("browser", browser or "not found"),
        ("tools", f"{len(tb.tools())} enabled"),
    ]

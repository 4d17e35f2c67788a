"""The user's desktop: a screenshot of it (mss), a path shown in its file manager.

Plain functions over the platform; they know nothing of the tool contract and raise
the project's errors, naming the cause where there is no display to use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from local_tools.core.errors import ExecutionError, InvalidInput

__all__ = ["Capture", "capture", "display_problem", "reveal"]

OPENER_TIMEOUT = 10.0


@dataclass(frozen=True)
class Capture:
    png: bytes
    width: int
    height: int
    monitor: int  # 0: all monitors together
    monitors: int  # how many there are


def display_problem() -> str | None:
    """Why there is no graphical session to use here, or None (Linux and BSD: an X11 or
    Wayland display; macOS and Windows always have one for a logged-in user)."""
    if sys.platform in ("darwin", "win32"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return (
        "there is no display: neither DISPLAY nor WAYLAND_DISPLAY is set (a headless "
        "machine, an SSH session or a service outside the user's desktop session)"
    )


def capture(monitor: int | None = None) -> Capture:
    """The screen as PNG: one monitor (1, 2, ...) or all of them together (None or 0)."""
    problem = display_problem()
    if problem is not None:
        raise ExecutionError(f"Cannot take a screenshot: {problem}.")
    try:
        import mss
        import mss.tools
    except ImportError:
        raise ExecutionError("Screenshots need the mss package: pip install mss.") from None
    try:
        with mss.MSS() as screen:
            monitors = screen.monitors  # [all together, first, second, ...]
            index = monitor or 0
            if index >= len(monitors):
                raise InvalidInput(
                    f"There is no monitor {index}: this display has {len(monitors) - 1} "
                    "(1 to that many; 0 or none: all together)."
                )
            shot = screen.grab(monitors[index])
    except mss.ScreenShotError as exc:
        raise ExecutionError(
            f"Cannot take a screenshot: {exc} (DISPLAY={os.environ.get('DISPLAY', '')!r})."
        ) from None
    png = mss.tools.to_png(shot.rgb, shot.size)
    assert png is not None
    return Capture(png, shot.width, shot.height, index, len(monitors) - 1)


def reveal(path: Path) -> list[str]:
    """Show `path` in the platform's file manager (selected where the platform can);
    the command run. ExecutionError headless, or when there is no opener."""
    if sys.platform == "darwin":
        command = ["open", "-R", str(path)]
    elif sys.platform == "win32":
        command = ["explorer", f"/select,{path}"]
    else:
        problem = display_problem()
        if problem is not None:
            raise ExecutionError(f"Cannot open a file manager: {problem}.")
        # xdg-open cannot select a file: it opens the folder holding it.
        command = ["xdg-open", str(path if path.is_dir() else path.parent)]
    program = shutil.which(command[0])
    if program is None:
        raise ExecutionError(
            f"Cannot open a file manager: {command[0]} is not installed"
            + (" (Debian: apt-get install xdg-utils)." if command[0] == "xdg-open" else ".")
        )
    # Errors to a file, not a pipe: a file manager the opener starts would hold a pipe
    # open, and the call would wait for it to exit.
    with tempfile.TemporaryFile() as errors:
        try:
            done = subprocess.run(
                [program, *command[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                timeout=OPENER_TIMEOUT,
                start_new_session=True,  # the file manager outlives this call
            )
        except subprocess.TimeoutExpired:
            return command  # still running: a file manager that stays in the foreground
        # explorer answers 1 even when it worked.
        if done.returncode != 0 and sys.platform != "win32":
            errors.seek(0)
            detail = errors.read().decode(errors="replace").strip()[-500:] or "no detail"
            raise ExecutionError(f"{command[0]} failed (exit {done.returncode}): {detail}")
    return command

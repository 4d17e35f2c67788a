"""What a user installing local-tools gets: the sdist and wheel `python -m build` makes,
installed in a clean venv (its dependencies from the package index), run from there.

Not the editable checkout: the venv has no path to src/, so a module or a data file the
wheel leaves out fails here. The plain install has no extra, so the browser tools must
answer with the `pip install` that brings theirs and doctor must list each extra.

Slow (a build, a venv, an install: about a minute with a warm pip cache) and bounded.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from spawned_http import PRINTED

CHECKOUT = Path(__file__).resolve().parent.parent
CONSOLE_FILES = ("index.html", "console.js", "console.css", "icon.svg")

pytestmark = pytest.mark.timeout(900)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    env: dict[str, str]
    workspace: Path

    @property
    def cli(self) -> str:
        return str(self.venv / "bin" / "local-tools")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.cli, *args],
            cwd=self.workspace,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _check(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{argv[:4]} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    if sys.platform == "win32":
        pytest.skip("the venv layout below is POSIX's (bin/); CI runs Linux")
    root = tmp_path_factory.mktemp("packaging")
    dist = root / "dist"
    # sdist first, then the wheel built from the sdist: both must hold what runs.
    _check([sys.executable, "-m", "build", "--outdir", str(dist), str(CHECKOUT)], 300)
    (wheel,) = dist.glob("local_tools-*.whl")
    assert len(list(dist.glob("local_tools-*.tar.gz"))) == 1
    venv = root / "venv"
    _check([sys.executable, "-m", "venv", str(venv)], 120)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "LOCAL_TOOLS_CONFIG")
        and not k.startswith("LOCAL_TOOLS_TOKEN")
    }
    env["LOCAL_TOOLS_STATE_DIR"] = str(root / "state")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    _check([*pip, "install", str(wheel)], 600, env=env)
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello from the wheel\n")
    return Installed(wheel, venv, env, workspace)


def test_the_wheel_holds_the_package_and_its_data(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for name in CONSOLE_FILES:
        assert f"local_tools/transports/console_static/{name}" in names
    assert "local_tools/__init__.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(installed.wheel).read(entry_points).decode()
    assert "local-tools = local_tools.transports.cli:main" in text
    # Nothing of the checkout beside the package: no tests, no venvs.
    assert not [n for n in names if n.startswith(("tests/", ".venv", "src/"))]


def test_the_installed_package_is_the_wheels_not_the_checkout(installed: Installed) -> None:
    python = str(installed.venv / "bin" / "python")
    proc = subprocess.run(
        [python, "-c", "import local_tools; print(local_tools.__file__)"],
        env=installed.env,
        cwd=installed.workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    where = Path(proc.stdout.strip())
    assert where.is_relative_to(installed.venv), where
    assert not where.is_relative_to(CHECKOUT)
    # A plain install brings no extra.
    proc = subprocess.run(
        [python, "-c", "import playwright"],
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "No module named 'playwright'" in proc.stderr


def _doctor_rows(out: str) -> dict[str, str]:
    """doctor's rows: each name padded to the longest one, then its value."""
    first = out.splitlines()[0]
    column = len(first) - len(first[len("local-tools") :].lstrip())
    return {line[:column].strip(): line[column:] for line in out.splitlines() if line}


def test_doctor_runs_and_lists_each_extra_with_its_command(installed: Installed) -> None:
    proc = installed.run("doctor")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rows = _doctor_rows(proc.stdout)
    for name in ("browser", "postgres"):
        assert rows[f"extra [{name}]"].startswith(
            f"not installed: pip install 'local-tools[{name}]'"
        )
    assert rows["tools"].endswith("enabled")


def test_a_call_runs_from_the_installed_wheel(installed: Installed) -> None:
    proc = installed.run("call", "read_file", "path=a.txt")
    assert proc.returncode == 0, proc.stderr
    envelope = json.loads(proc.stdout)
    assert envelope["success"] is True
    assert envelope["output"]["content"] == "hello from the wheel\n"


def test_a_browser_tool_without_its_extra_names_the_pip_command(installed: Installed) -> None:
    proc = installed.run("call", "browser_launch")
    assert "Traceback" not in proc.stderr
    envelope = json.loads(proc.stdout)
    assert envelope["success"] is False
    assert envelope["error"]["error_code"] == "EXECUTION_ERROR", envelope
    assert "pip install 'local-tools[browser]'" in envelope["error"]["message"]


@pytest.fixture
def server(installed: Installed, tmp_path: Path) -> Iterator[str]:
    """`local-tools serve http --port 0` from the venv; its base URL; stopped with SIGINT."""
    argv = [installed.cli, "serve", "http", "--port", "0", "--workspace", str(installed.workspace)]
    stderr_path = tmp_path / "stderr.txt"
    with (
        stderr_path.open("w") as stderr,
        subprocess.Popen(
            argv,
            cwd=installed.workspace,
            env=installed.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        ) as proc,
    ):
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 60
            while True:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                assert line is not None, "the server exited: " + stderr_path.read_text()
                found = PRINTED.search(line)
                if found:
                    break
            yield found.group(1)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise AssertionError("the server did not stop on SIGINT") from None
            reader.join(timeout=5)
    assert proc.returncode == 0, stderr_path.read_text()
    assert "Traceback" not in stderr_path.read_text()


def test_serve_http_answers_health_and_serves_the_console(server: str) -> None:
    with urllib.request.urlopen(f"{server}/health", timeout=10) as resp:
        health = json.loads(resp.read())
    assert health["status"] == "ok", health
    # The console's files are package data: served from the installed wheel.
    for name in CONSOLE_FILES[1:]:
        with urllib.request.urlopen(f"{server}/console/static/{name}", timeout=10) as resp:
            assert resp.status == 200 and resp.read()

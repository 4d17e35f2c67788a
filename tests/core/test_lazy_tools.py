"""Built-in tools from the per-version manifest: a tool's module is imported with its
first use, and a lazy tool is, field for field, the tool its module defines.

Real files and fresh interpreters (a process that has imported a tool module uses it
as it is, so the lazy path is seen whole only in a new process).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from local_tools import Toolbox
from local_tools.core.lazy_tool import LazyTool, entry_of, model_paths
from local_tools.core.registry import Registry
from local_tools.core.tool import Tool
from local_tools.tools import BUILTIN, MANIFEST_NAME, builtin_tools

PACKAGE = "local_tools.tools."


def _entries() -> list[dict[str, object]]:
    return [
        entry_of(t, PACKAGE + m, attr)
        for t, (m, attr) in zip(builtin_tools(), BUILTIN, strict=True)
    ]


def _python(code: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "LOCAL_TOOLS_STATE_DIR"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_lazy_tool_loaded_is_its_modules_tool_field_for_field() -> None:
    for real, entry in zip(builtin_tools(), _entries(), strict=True):
        lazy = LazyTool(entry)
        assert not lazy.loaded
        # What listing reads comes from the entry, without importing anything.
        assert (lazy.name, lazy.description, lazy.aliases, lazy.hints, lazy.toolset) == (
            real.name,
            real.description,
            real.aliases,
            real.hints,
            real.toolset,
        )
        assert model_paths(lazy) == model_paths(real)
        assert not lazy.loaded
        assert lazy.describe() == real.describe()  # its schemas: the module is loaded
        assert lazy.loaded and lazy.target() is real
        for f in fields(Tool):
            assert getattr(lazy, f.name) is getattr(real, f.name), (real.name, f.name)
        assert lazy.is_async == real.is_async


def test_each_builtin_is_defined_under_its_own_name() -> None:
    # batch's renderer lookup and the manifest's checks rely on it.
    assert [attr for _, attr in BUILTIN] == [t.name for t in builtin_tools()]


def test_a_call_runs_with_the_codes_permission_not_the_manifests() -> None:
    entry = next(e for e in _entries() if e["name"] == "write_file")
    tampered = LazyTool({**entry, "permission": None, "description": "harmless"})
    assert tampered.permission is None  # a listing reads the manifest...
    tampered.func  # noqa: B018 - ...a call loads the module, and with it every field
    assert tampered.permission == entry["permission"] == "write:file"
    assert tampered.description != "harmless"


def test_a_plugin_reusing_a_lazy_builtin_is_not_a_duplicate(tmp_path: Path) -> None:
    entry = next(e for e in _entries() if e["name"] == "read_file")
    registry = Registry([LazyTool(entry)])
    plugins = tmp_path / ".local-tools" / "tools"
    plugins.mkdir(parents=True)
    (plugins / "mine.py").write_text(
        "from local_tools.core.tool import tool\n"
        "from local_tools.tools.read_file import read_file  # reused, not redefined\n"
        "@tool('mine', description='Mine.')\n"
        "def mine(args, ctx):\n"
        "    return {}\n"
    )
    assert registry.load_workspace_tools(tmp_path, True) == ["mine"]
    assert registry.failures == []


_START = """
import json, sys
from local_tools import Toolbox
from local_tools.transports.mcp_listing import McpDeclarations
tb = Toolbox(sys.argv[1], state_dir=sys.argv[2])
listed = tb.listed()
McpDeclarations(tb.state_dir).tools(listed)
loaded = sorted(m for m in sys.modules if m.startswith("local_tools.tools."))
lazy = sum(type(t).__name__ == "LazyTool" for t in tb.registry.all())
result = tb.run("read_file", {"path": "a.txt"})
print(json.dumps({"loaded": loaded, "lazy": lazy, "listed": [t.name for t in listed],
                  "content": result["output"]["content"]}))
"""


def test_a_new_process_imports_no_tool_module_until_a_call(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")

    first = json.loads(_python(_START, str(ws), str(state)))  # no manifest yet: it is written
    manifest = state / "cache" / MANIFEST_NAME
    assert manifest.exists() and manifest.stat().st_mode & 0o077 == 0
    assert first["lazy"] == 0 and len(first["loaded"]) > len(BUILTIN) / 2

    second = json.loads(_python(_START, str(ws), str(state)))
    assert second["lazy"] == len(BUILTIN)
    assert second["loaded"] == []  # started, listed and declared without one
    assert second["listed"] == first["listed"]
    assert second["content"] == first["content"] == "hello\n"


@pytest.mark.parametrize(
    "damage",
    [
        "not json",
        "another version",
        "a module redirected",
        "an entry missing",
        "a field missing",
        "a name changed",
        "an alias taken",
    ],
)
def test_a_damaged_or_stale_manifest_is_not_used(tmp_path: Path, damage: str) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    _python(_START, str(ws), str(state))
    manifest = state / "cache" / MANIFEST_NAME
    data = json.loads(manifest.read_text())
    if damage == "not json":
        manifest.write_text("{not json")
    else:
        if damage == "another version":
            data["fingerprint"] = "0" * 64
        elif damage == "a module redirected":
            data["tools"][0]["module"] = "os"
        elif damage == "an entry missing":
            data["tools"].pop()
        elif damage == "a name changed":
            data["tools"][0]["name"] = "grep"
        elif damage == "an alias taken":
            data["tools"][0]["aliases"] = ["grep"]
        else:
            del data["tools"][0]["hints"]
        for entry in data["tools"]:
            entry["description"] = "stale"
        manifest.write_text(json.dumps(data))
    after = json.loads(_python(_START, str(ws), str(state)))
    assert after["lazy"] == 0  # every tool imported, as with no manifest
    assert after["content"] == "hello\n"
    assert "stale" not in manifest.read_text()  # and a current one written


def test_a_toolbox_lists_the_same_lazily_or_not(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    code = (
        "import json, sys\n"
        "from local_tools import Toolbox\n"
        "tb = Toolbox(sys.argv[1], state_dir=sys.argv[2], profile='full')\n"
        "print(json.dumps(tb.tools()))\n"
    )
    state = tmp_path / "state"
    eager = _python(code, str(ws), str(state))  # writes the manifest
    lazy = _python(code, str(ws), str(state))
    assert json.loads(lazy) == json.loads(eager)
    with Toolbox(ws, state_dir=tmp_path / "other", profile="full") as tb:
        assert json.loads(eager) == json.loads(json.dumps(tb.tools()))


def test_an_edit_keeping_size_and_mtime_still_makes_a_new_fingerprint(tmp_path: Path) -> None:
    # `cp -p`, `rsync -t` or a tar bring an edited module back with its old size and
    # mtime: the caches keyed by the fingerprint must not serve the old tool.
    package = Path(__import__("local_tools").__file__).parent
    copy = tmp_path / "src" / "local_tools"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import local_tools, sys\n"
        "assert local_tools.__file__.startswith(sys.argv[1]), local_tools.__file__\n"
        "from local_tools.core.package_fingerprint import package_fingerprint\n"
        "print(package_fingerprint())\n"
    )

    def fingerprint() -> str:
        out = subprocess.run(
            [sys.executable, "-c", code, str(copy)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(copy.parent)},
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    before = fingerprint()
    assert fingerprint() == before
    module = copy / "tools" / "glob.py"
    st = module.stat()
    text = module.read_text()
    module.write_text(text.replace("Find files", "Fund files", 1))  # same size
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert module.stat().st_size == st.st_size and module.stat().st_mtime_ns == st.st_mtime_ns
    assert fingerprint() != before

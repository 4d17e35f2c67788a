"""Which language server handles a file: the built-in ones and `[lsp.NAME]` from config.

Built in: basedpyright (else pyright) for Python, typescript-language-server for
TypeScript and JavaScript, and gopls, rust-analyzer and clangd when they are installed.
`[lsp.NAME]` adds a server or changes a built-in one (same name): command, args,
extensions, root_markers, env, init_options, settings, enabled. The first server, in
order (configured ones before built-ins), that claims a file's extension and whose
command is found handles it.

Commands are looked up on PATH and beside this Python (a virtualenv's bin, where
`pip install basedpyright` puts its server even when the venv is not on PATH).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BUILTIN_SPECS", "ServerSpec", "find_command", "language_id", "server_specs"]


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()  # with the dot, lower case
    root_markers: tuple[str, ...] = (".git",)
    env: Mapping[str, str] = field(default_factory=dict)
    init_options: Mapping[str, Any] = field(default_factory=dict)
    # Answered to the server's workspace/configuration requests, by section.
    settings: Mapping[str, Any] = field(default_factory=dict)
    install: str = ""  # how to get it, said when it is missing
    language: str = ""  # the language's name for messages

    def handles(self, path: Path) -> bool:
        return path.suffix.lower() in self.extensions


_PY_MARKERS = ("pyrightconfig.json", "pyproject.toml", "setup.py", "setup.cfg", ".git")
_PY_SETTINGS = {
    # Open files only: a workspace-wide analysis of a big tree would keep a core busy
    # for minutes; `lsp diagnostics` without a path opens the files it reports.
    "python.analysis": {"diagnosticMode": "openFilesOnly", "autoSearchPaths": True},
    "basedpyright.analysis": {"diagnosticMode": "openFilesOnly", "autoSearchPaths": True},
}
_TS_EXTENSIONS = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")

BUILTIN_SPECS: tuple[ServerSpec, ...] = (
    ServerSpec(
        "basedpyright", "basedpyright-langserver", ("--stdio",), (".py", ".pyi"), _PY_MARKERS,
        settings=_PY_SETTINGS, install="pip install basedpyright (or local-tools[lsp])",
        language="Python",
    ),
    ServerSpec(
        "pyright", "pyright-langserver", ("--stdio",), (".py", ".pyi"), _PY_MARKERS,
        settings=_PY_SETTINGS, install="pip install pyright", language="Python",
    ),
    ServerSpec(
        "typescript", "typescript-language-server", ("--stdio",), _TS_EXTENSIONS,
        ("tsconfig.json", "jsconfig.json", "package.json", ".git"),
        # Never fetch @types packages from the network on our behalf.
        init_options={"disableAutomaticTypingAcquisition": True},
        install="npm install -g typescript-language-server@5 typescript@5",
        language="TypeScript/JavaScript",
    ),
    ServerSpec(
        "gopls", "gopls", (), (".go",), ("go.work", "go.mod", ".git"),
        install="go install golang.org/x/tools/gopls@latest", language="Go",
    ),
    ServerSpec(
        "rust-analyzer", "rust-analyzer", (), (".rs",), ("Cargo.toml", ".git"),
        install="rustup component add rust-analyzer", language="Rust",
    ),
    ServerSpec(
        "clangd", "clangd", (), (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh"),
        ("compile_commands.json", "compile_flags.txt", ".clangd", ".git"),
        install="apt-get install clangd", language="C/C++",
    ),
)  # fmt: skip

_LANGUAGE_IDS = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "typescriptreact", ".js": "javascript",
    ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact", ".go": "go",
    ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp",
    ".hpp": "cpp", ".hh": "cpp",
}  # fmt: skip


def language_id(path: Path) -> str:
    """LSP's languageId for a file (its extension without the dot when unknown)."""
    suffix = path.suffix.lower()
    return _LANGUAGE_IDS.get(suffix, suffix.lstrip(".") or "plaintext")


def server_specs(configured: Mapping[str, Any]) -> list[ServerSpec]:
    """The servers in the order they are tried: configured ones, then the built-ins.

    `configured` is `[lsp.NAME]` (config.LspServerConfig or a plain dict per name). A
    name of a built-in changes that one (keys not given keep the built-in's); one with
    `enabled = false` is left out.
    """
    builtins = {spec.name: spec for spec in BUILTIN_SPECS}
    ordered: list[ServerSpec] = []
    seen: set[str] = set()
    for name, entry in configured.items():
        values = entry if isinstance(entry, Mapping) else entry.model_dump(exclude_unset=True)
        seen.add(name)
        if values.get("enabled", True) is False:
            continue
        base = builtins.get(name)
        ordered.append(_merge(name, base, values))
    ordered += [spec for spec in BUILTIN_SPECS if spec.name not in seen]
    return ordered


def _merge(name: str, base: ServerSpec | None, values: Mapping[str, Any]) -> ServerSpec:
    def pick(key: str, default: Any) -> Any:
        return values.get(key, default)

    extensions = pick("extensions", base.extensions if base else ())
    return ServerSpec(
        name=name,
        command=pick("command", base.command if base else ""),
        args=tuple(pick("args", base.args if base else ())),
        extensions=tuple(e.lower() if e.startswith(".") else f".{e.lower()}" for e in extensions),
        root_markers=tuple(pick("root_markers", base.root_markers if base else (".git",))),
        env=dict(pick("env", base.env if base else {})),
        init_options=dict(pick("init_options", base.init_options if base else {})),
        settings=dict(pick("settings", base.settings if base else {})),
        install=base.install if base else f"install {name!r} or fix [lsp.{name}] command",
        language=base.language if base else name,
    )


def find_command(command: str, path: str | None = None) -> str | None:
    """The command's full path, on PATH or beside this Python; None when not found."""
    if not command:
        return None
    if os.sep in command or (os.altsep and os.altsep in command):
        candidate = Path(command).expanduser()
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    found = shutil.which(command, path=path)
    if found:
        return found
    here = Path(sys.executable).parent
    return shutil.which(command, path=str(here))


def pin_tsserver(spec: ServerSpec, command: str) -> ServerSpec:
    """typescript-language-server runs the workspace's own `node_modules/typescript`
    before its own: a checkout could plant a tsserver.js and have it run on the next
    .ts edit. Unless the config names one, pin the TypeScript that Node would resolve
    from the server's own install (what it calls its bundled version)."""
    options = dict(spec.init_options)
    tsserver = options.get("tsserver")
    if isinstance(tsserver, Mapping) and tsserver.get("path"):
        return spec
    if Path(spec.command).name != "typescript-language-server":
        return spec
    folder = Path(os.path.realpath(command)).parent
    for parent in (folder, *folder.parents):
        candidate = parent / "node_modules" / "typescript" / "lib" / "tsserver.js"
        if candidate.is_file():
            settings = dict(tsserver) if isinstance(tsserver, Mapping) else {}
            options["tsserver"] = {**settings, "path": str(candidate)}
            return dataclasses.replace(spec, init_options=options)
    return spec


def specs_for(path: Path, specs: Sequence[ServerSpec]) -> list[ServerSpec]:
    """The servers that claim this file, in order."""
    return [spec for spec in specs if spec.handles(path)]

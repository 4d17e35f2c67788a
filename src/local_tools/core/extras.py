"""The optional extras (`pip install 'local-tools[NAME]'`): which module each brings,
whether it is importable here, and the error a tool gives when it is not.

A plain install carries what the everyday tools need; a toolset whose library is large
or needs a service (Playwright for the browser, psycopg for a PostgreSQL knowledge
store) comes with its extra, and so does basedpyright, Python's language server. A tool
whose extra is missing answers EXECUTION_ERROR naming the command that brings it, never
a ModuleNotFoundError; `local-tools doctor` lists each extra.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from importlib import metadata

from local_tools.core.errors import ExecutionError

__all__ = ["EXTRAS", "Extra", "extra_status", "install_command", "require_extra"]


@dataclass(frozen=True)
class Extra:
    name: str
    module: str  # what the code imports
    distribution: str  # what pip installs (its version is shown)
    purpose: str


EXTRAS: dict[str, Extra] = {
    extra.name: extra
    for extra in (
        Extra("browser", "playwright", "playwright", "the browser_* tools"),
        Extra("postgres", "psycopg", "psycopg", "a PostgreSQL knowledge store"),
        # Listed although nothing imports it: it brings basedpyright's language server
        # (its own Node inside), which doctor's language servers rows then find.
        Extra("lsp", "basedpyright", "basedpyright", "Python diagnostics and the lsp tool"),
        # Both SDKs come together; openai stands for the pair (anthropic is checked by
        # the client that needs it).
        Extra("models", "openai", "openai", "task and compact (a model you configure)"),
    )
}


def install_command(name: str) -> str:
    return f"pip install 'local-tools[{name}]'"


def _importable(module: str) -> bool:
    # find_spec, not an import: doctor stays fast and imports nothing it does not use.
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def extra_status(name: str) -> str:
    """`installed (playwright 1.55.0)`, or `not installed: pip install ...`."""
    extra = EXTRAS[name]
    if not _importable(extra.module):
        return f"not installed: {install_command(name)} ({extra.purpose})"
    try:
        version = metadata.version(extra.distribution)
    except metadata.PackageNotFoundError:
        version = "version unknown"
    return f"installed ({extra.distribution} {version})"


def require_extra(name: str, what: str) -> None:
    """ExecutionError naming the pip command when `name`'s module cannot be imported;
    `what` says what needed it ("The browser toolset")."""
    extra = EXTRAS[name]
    try:
        __import__(extra.module)
    except ImportError as exc:
        raise ExecutionError(
            f"{what} needs {extra.module}, which is not installed here ({exc}). "
            f"Install it with: {install_command(name)}",
            details={"extra": name, "install": install_command(name)},
        ) from None

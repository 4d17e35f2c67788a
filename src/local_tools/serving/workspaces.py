"""The MCP server's Toolboxes, one per workspace (fixed by --workspace, or each client's
roots): made at first use and kept; a workspace whose config is broken keeps its error,
so every call can tell the person what to fix while the server keeps running."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

from local_tools.core.config import ConfigError
from local_tools.core.registry import DuplicateToolError, PluginError
from local_tools.toolbox import Toolbox

__all__ = ["WorkspaceToolboxes"]


class WorkspaceToolboxes:
    """Toolboxes by workspace. `fixed`: the workspace came from --workspace (the CLI
    showed its trust notice before the server started)."""

    def __init__(
        self,
        config: str | os.PathLike[str] | None,
        state_dir: str | os.PathLike[str] | None,
        *,
        fixed: bool,
        log: logging.Logger,
        profile: str | None = None,
    ) -> None:
        self._config = config
        self._profile = profile
        self._state_dir = state_dir
        self._fixed = fixed
        self._log = log
        self._toolboxes: dict[Path, Toolbox] = {}
        self._errors: dict[Path, str] = {}

    def __iter__(self) -> Iterator[Toolbox]:
        return iter(list(self._toolboxes.values()))

    def error(self, workspace: Path) -> str:
        """Why `workspace` has no Toolbox (after `load` returned None)."""
        return self._errors[workspace]

    def close(self) -> None:
        for tb in self._toolboxes.values():
            tb.close()
        self._toolboxes.clear()

    def load(self, workspace: Path) -> Toolbox | None:
        """The workspace's Toolbox, or None when its config is broken (the error is kept)."""
        if workspace in self._toolboxes:
            return self._toolboxes[workspace]
        if workspace in self._errors:
            return None
        log = self._log
        try:
            tb = Toolbox(workspace, self._config, state_dir=self._state_dir, profile=self._profile)
        except (ConfigError, DuplicateToolError, PluginError) as exc:
            # The server keeps running so every call can tell the person what is wrong.
            self._errors[workspace] = str(exc)
            log.error("local-tools: %s", exc)
            return None
        self._toolboxes[workspace] = tb
        for failure in tb.registry.failures:  # the other tools still serve
            log.error(
                "local-tools: custom tools not loaded from %s: %s", failure.source, failure.error
            )
        # A folder from the client's roots: what it left out because it is not trusted
        # (for --workspace the CLI said so before the server started).
        notice = tb.trust_notice() if not self._fixed else None
        if notice:
            log.warning("local-tools: %s", notice)
        if self._fixed:
            log.warning("workspace: %s (from --workspace)", tb.workspace)
        return tb

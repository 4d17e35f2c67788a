"""The context handed to every tool call.

Tools get what they need from here — the jail, limits, the caller, a way to ask for
extra permissions — and never from globals, so two toolboxes never share state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from local_tools.core.errors import Cancelled

if TYPE_CHECKING:
    from local_tools.core.config import Config, LimitsConfig
    from local_tools.core.resources import Resources
    from local_tools.core.runner import Runner
    from local_tools.interact.base import Asker
    from local_tools.security.jail import Jail
    from local_tools.security.policy import Policy

__all__ = ["ChangedFile", "ProgressFunc", "ToolContext", "session_owner"]

ProgressFunc = Callable[[str, "float | None"], None]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """A file a call wrote: what the runner checks for language errors afterwards."""

    path: Path  # the real path
    before: str | None  # None: the call created it
    after: str
    written_at: float  # time.monotonic() at the end of the write


@dataclass(slots=True)
class ToolContext:
    call_id: str
    user_id: str
    tool: str
    jail: Jail
    config: Config
    policy: Policy
    state_dir: Path
    spill_dir: Path
    # Per (toolbox, user, session) scratch space that outlives a call: read times for
    # the stale-file check, todos, ... Tools key it by their own name.
    session: dict[str, Any] = field(default_factory=dict)
    # One conversation of the user's, where a transport has them (an MCP HTTP
    # session); None is the user's one default session.
    session_id: str | None = None
    asker: Asker | None = None
    transport: str = "python"
    # A plain flag rather than an Event: set once by the runner, read by the tool's
    # thread; creating an Event per call would cost more than the rest of dispatch.
    cancel_requested: bool = False
    on_progress: ProgressFunc | None = None
    # The runner itself, for tools that dispatch other calls (batch, invalid).
    runner: Runner | None = None
    # The toolbox's long-lived shared things (background processes, a browser).
    resources: Resources | None = None
    # Files this call wrote (record_change), for the language-error check after it;
    # None until one is, so a call that writes nothing pays nothing.
    changed_files: list[ChangedFile] | None = None

    @property
    def workspace(self) -> Path:
        return self.jail.root

    @property
    def owner(self) -> str:
        """Who owns what a call leaves behind (a background process): the session."""
        return session_owner(self.user_id, self.session_id)

    @property
    def limits(self) -> LimitsConfig:
        return self.config.limits

    @property
    def cancelled(self) -> bool:
        return self.cancel_requested

    def cancel(self) -> None:
        self.cancel_requested = True

    def check_cancelled(self) -> None:
        """Long loops call this so a cancel or timeout stops them promptly."""
        if self.cancel_requested:
            raise Cancelled("The call was cancelled before it finished.")

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """The toolbox's `key` resource, created by `factory` on first use."""
        if self.resources is None:
            raise RuntimeError("this context has no toolbox resources")
        return self.resources.get(key, factory)

    def record_change(self, path: Path, before: str | None, after: str) -> None:
        """Note that this call wrote `after` to `path` (real) over `before`."""
        if self.changed_files is None:
            self.changed_files = []
        self.changed_files.append(ChangedFile(path, before, after, time.monotonic()))

    def progress(self, message: str, fraction: float | None = None) -> None:
        if self.on_progress is not None:
            self.on_progress(message, fraction)

    async def authorize(
        self, permission: str, subjects: Sequence[str] | None, summary: str = ""
    ) -> None:
        """Check a permission beyond the tool's declared one (e.g. a delete inside a patch)."""
        await self.policy.authorize(
            self.user_id, permission, subjects, self.asker, tool=self.tool, summary=summary
        )


def session_owner(user_id: str, session_id: str | None) -> str:
    """The key of a user's session; a tuple's repr, so no user id can pose as another
    user's session."""
    return repr((user_id, session_id))

"""The user's "allow always" answers (`Approval`), persisted as JSON by `ApprovalStore`."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_tools.core.state import write_state_file
from local_tools.security.patterns import exact_only

__all__ = ["Approval", "ApprovalStore"]

# Warnings keep the logger name they had before this module was split out of
# `policy`, so existing logging setups still see them.
log = logging.getLogger("local_tools.security.policy")


@dataclass(frozen=True)
class Approval:
    """One "allow always" answer. `subject` None approves the whole permission.

    `pattern` says the subject is a rule pattern the person picked (`npm test *`);
    otherwise it is matched verbatim, `*` and all.
    """

    user_id: str
    permission: str
    subject: str | None
    approved_at: str = ""
    pattern: bool = False

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.user_id, self.permission, self.subject)


class ApprovalStore:
    """The user's "allow always" answers, persisted as JSON.

    Give it a path outside the workspace (the lead uses the workspace state dir):
    an agent that can write the workspace must not be able to approve itself.
    `path=None` keeps approvals in memory only. A corrupt file is ignored with a
    warning rather than breaking every tool call.
    """

    FORMAT_VERSION = 1

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str, str | None], Approval] = {
            a.key: a for a in self._read()
        }
        self.version = 0  # bumped on every change so policies drop compiled rules

    def entries(self) -> list[Approval]:
        return list(self._entries.values())

    def for_user(self, user_id: str) -> list[Approval]:
        return [a for a in self._entries.values() if a.user_id == user_id]

    def users(self) -> frozenset[str]:
        return frozenset(a.user_id for a in self._entries.values())

    def approve(
        self, user_id: str, permission: str, subject: str | None, *, pattern: bool = False
    ) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        # A described subject (a command not understood) is only ever approved verbatim.
        pattern = pattern and subject is not None and not exact_only(subject)
        approval = Approval(user_id, permission, subject, stamp, pattern)
        with self._lock:
            self._merge_from_disk()  # keep what other processes approved meanwhile
            self._entries.setdefault(approval.key, approval)
            self.version += 1
            self._save()

    def revoke(self, user_id: str, permission: str, subject: str | None) -> bool:
        with self._lock:
            self._merge_from_disk()
            removed = self._entries.pop((user_id, permission, subject), None) is not None
            if removed:
                self.version += 1
                self._save()
            return removed

    def _merge_from_disk(self) -> None:
        for approval in self._read():
            self._entries.setdefault(approval.key, approval)

    def _read(self) -> list[Approval]:
        if self.path is None:
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable approvals file %s: %s", self.path, exc)
            return []
        raw = data.get("approvals") if isinstance(data, dict) else None
        if not isinstance(raw, list):
            log.warning("ignoring approvals file %s: no 'approvals' list", self.path)
            return []
        out: list[Approval] = []
        for item in raw:
            approval = _parse_approval(item)
            if approval is None:
                log.warning("ignoring malformed approval in %s: %r", self.path, item)
            else:
                out.append(approval)
        return out

    def _save(self) -> None:
        if self.path is None:
            return
        payload = {
            "version": self.FORMAT_VERSION,
            "approvals": [
                {
                    "user_id": a.user_id,
                    "permission": a.permission,
                    "subject": a.subject,
                    "approved_at": a.approved_at,
                    **({"pattern": True} if a.pattern else {}),
                }
                for a in self._entries.values()
            ],
        }
        try:
            write_state_file(self.path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            # The answer still holds for this process; losing persistence must not
            # turn an approved call into a failure.
            log.warning("could not save approvals to %s: %s", self.path, exc)


def _parse_approval(item: Any) -> Approval | None:
    if not isinstance(item, dict):
        return None
    user, perm, subject = item.get("user_id"), item.get("permission"), item.get("subject")
    stamp = item.get("approved_at", "")
    if not (isinstance(user, str) and isinstance(perm, str) and isinstance(stamp, str)):
        return None
    if subject is not None and not isinstance(subject, str):
        return None
    pattern = item.get("pattern", False)
    if not isinstance(pattern, bool):
        return None
    return Approval(user, perm, subject, stamp, pattern and subject is not None)

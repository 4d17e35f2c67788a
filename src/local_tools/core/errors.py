"""Error codes and the exception hierarchy tools raise.

    ToolError                  base; carries an ErrorCode, a model-readable message, details
    ├── PermissionDenied       PERMISSION_DENIED
    ├── NotFound               NOT_FOUND
    ├── InvalidInput           INVALID_INPUT
    ├── AlreadyExists          ALREADY_EXISTS
    ├── ToolTimeout            TIMEOUT
    ├── ExecutionError         EXECUTION_ERROR
    ├── NetworkError           NETWORK_ERROR
    ├── StorageError           IO_ERROR
    ├── Conflict               CONFLICT
    ├── Cancelled              CANCELLED
    └── UnknownTool            UNKNOWN_TOOL

Tools raise these; the runner turns every exception, these or any other, into an
error envelope. Messages are written for a model: what went wrong, what to try next.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = [
    "AlreadyExists",
    "Cancelled",
    "Conflict",
    "ErrorCode",
    "ExecutionError",
    "InvalidInput",
    "NetworkError",
    "NotFound",
    "PermissionDenied",
    "StorageError",
    "ToolError",
    "ToolTimeout",
    "UnknownTool",
]


class ErrorCode(str, Enum):
    PERMISSION_DENIED = "PERMISSION_DENIED"
    NOT_FOUND = "NOT_FOUND"
    INVALID_INPUT = "INVALID_INPUT"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    TIMEOUT = "TIMEOUT"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    NETWORK_ERROR = "NETWORK_ERROR"
    IO_ERROR = "IO_ERROR"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    CONFLICT = "CONFLICT"
    CANCELLED = "CANCELLED"
    INTERNAL_ERROR = "INTERNAL_ERROR"

    def __str__(self) -> str:
        return self.value


class ToolError(Exception):
    """A failure a tool reports on purpose; becomes an error envelope."""

    code: ErrorCode = ErrorCode.EXECUTION_ERROR

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}


class PermissionDenied(ToolError):
    code = ErrorCode.PERMISSION_DENIED


class NotFound(ToolError):
    code = ErrorCode.NOT_FOUND


class InvalidInput(ToolError):
    code = ErrorCode.INVALID_INPUT


class AlreadyExists(ToolError):
    code = ErrorCode.ALREADY_EXISTS


class ToolTimeout(ToolError):
    code = ErrorCode.TIMEOUT


class ExecutionError(ToolError):
    code = ErrorCode.EXECUTION_ERROR


class NetworkError(ToolError):
    code = ErrorCode.NETWORK_ERROR


class StorageError(ToolError):
    code = ErrorCode.IO_ERROR


class Conflict(ToolError):
    code = ErrorCode.CONFLICT


class Cancelled(ToolError):
    code = ErrorCode.CANCELLED


class UnknownTool(ToolError):
    code = ErrorCode.UNKNOWN_TOOL

"""The built-in tools, one module each.

`BUILTIN` names where each is defined, in listing order. `builtin_tools()` imports them
all; `builtin_tools(state_dir)` does so only the first time a version runs: it keeps a
manifest of what listing reads (`<state>/cache/tools-manifest.json`, keyed like the MCP
declarations by the package's files and pydantic's and Python's versions) and gives
`LazyTool`s that import their module on first use (core/lazy_tool.py). A tool module
already imported in this process is used as it is.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
from pathlib import Path

from local_tools.core.lazy_tool import LazyTool, entry_of
from local_tools.core.package_fingerprint import package_fingerprint
from local_tools.core.tool import Tool

__all__ = ["BUILTIN", "MANIFEST_NAME", "builtin_tools"]

log = logging.getLogger(__name__)

MANIFEST_NAME = "tools-manifest.json"
_PACKAGE = "local_tools.tools."

# (module under local_tools.tools, the Tool's name in it), in listing order.
BUILTIN: tuple[tuple[str, str], ...] = (
    ("read_file", "read_file"),
    ("read_many_files", "read_many_files"),
    ("write_file", "write_file"),
    ("edit", "edit"),
    ("multi_edit", "multi_edit"),
    ("apply_patch", "apply_patch"),
    ("list_dir", "list_dir"),
    ("file_stat", "file_stat"),
    ("file_delete", "file_delete"),
    ("file_move", "file_move"),
    ("file_copy", "file_copy"),
    ("glob", "glob"),
    ("grep", "grep"),
    ("lsp", "lsp"),
    ("exec_cmd", "exec_cmd"),
    ("process_output", "process_output"),
    ("process_input", "process_input"),
    ("process_kill", "process_kill"),
    ("process_list", "process_list"),
    ("checkpoint_list", "checkpoint_list"),
    ("checkpoint_diff", "checkpoint_diff"),
    ("restore", "restore"),
    ("web_fetch", "web_fetch"),
    ("http_request", "http_request"),
    ("web_search", "web_search"),
    ("question", "question"),
    ("todo_write", "todo_write"),
    ("todo_read", "todo_read"),
    ("skill", "skill"),
    ("task", "task"),
    ("compact", "compact"),
    ("find_tools", "find_tools"),
    ("call_tool", "call_tool"),
    ("save_memory", "save_memory"),
    ("save_memory", "save_insight"),
    ("save_memory", "save_issue"),
    ("save_memory", "save_learning"),
    ("query_memory", "query_memory"),
    ("promote_memory", "promote_memory"),
    ("promote_memory", "promote_to_decision"),
    ("promote_memory", "promote_to_pattern"),
    ("memory", "memory"),
    ("create_requirement", "create_requirement"),
    ("get_requirements", "get_requirements"),
    ("add_feature", "add_feature"),
    ("update_feature_status", "update_feature_status"),
    ("add_component", "add_component"),
    ("create_task", "create_task"),
    ("update_task_status", "update_task_status"),
    ("delete_project_item", "delete_project_item"),
    ("get_implementation_plan", "get_implementation_plan"),
    ("get_design_document", "get_design_document"),
    ("check_feature_coverage", "check_feature_coverage"),
    ("check_task_dependencies", "check_task_dependencies"),
    ("check_data_format", "check_data_format"),
    ("export_knowledge", "export_knowledge"),
    ("import_knowledge", "import_knowledge"),
    ("browser_launch", "browser_launch"),
    ("browser_navigate", "browser_navigate"),
    ("browser_snapshot", "browser_snapshot"),
    ("browser_click", "browser_click"),
    ("browser_type", "browser_type"),
    ("browser_scroll", "browser_scroll"),
    ("browser_hover", "browser_hover"),
    ("browser_press_key", "browser_press_key"),
    ("browser_screenshot", "browser_screenshot"),
    ("browser_get_dom", "browser_get_dom"),
    ("browser_evaluate", "browser_evaluate"),
    ("browser_wait_for", "browser_wait_for"),
    ("browser_go_back", "browser_go_back"),
    ("browser_go_forward", "browser_go_forward"),
    ("browser_reload", "browser_reload"),
    ("browser_get_state", "browser_get_state"),
    ("screenshot", "screenshot"),
    ("open_in_folder", "open_in_folder"),
    ("review_and_edit_file", "review_and_edit_file"),
    ("review_with_feedback_file", "review_with_feedback_file"),
    ("review_and_edit_content", "review_and_edit_content"),
    ("review_with_feedback_content", "review_with_feedback_content"),
    ("copy_workspace_to_project", "copy_workspace_to_project"),
    ("batch", "batch"),
    ("invalid", "invalid"),
)


def builtin_tools(state_dir: Path | None = None, *, rebuild: bool = False) -> list[Tool]:
    """Every built-in tool; lazily from the manifest in `state_dir` when it is current
    (`rebuild`: imported, and the manifest written anew)."""
    if state_dir is None:
        return _imported()
    path = state_dir / "cache" / MANIFEST_NAME
    lazy = None if rebuild else _read(path)
    if lazy is None:
        fresh = any(_PACKAGE + module not in sys.modules for module, _ in BUILTIN)
        tools = _imported()
        if fresh:  # a process that had them all imported already started no faster for it
            _write(path, tools)
        return tools
    loaded = sys.modules
    return [
        getattr(loaded[_PACKAGE + module], attr) if _PACKAGE + module in loaded else stand_in
        for (module, attr), stand_in in zip(BUILTIN, lazy, strict=True)
    ]


def _imported() -> list[Tool]:
    return [getattr(importlib.import_module(_PACKAGE + m), attr) for m, attr in BUILTIN]


def _read(path: Path) -> list[LazyTool] | None:
    """A LazyTool per manifest entry, or None when the manifest is missing, damaged or of
    another version."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["tools"] if data["fingerprint"] == package_fingerprint() else None
        if entries is None or len(entries) != len(BUILTIN):
            return None
        lazy = []
        for (module, attr), entry in zip(BUILTIN, entries, strict=True):
            # Each built-in is defined under its own name (a test holds it to that).
            if (entry["module"], entry["attr"], entry["name"]) != (_PACKAGE + module, attr, attr):
                return None
            lazy.append(LazyTool(entry))  # raises for a field missing or of a wrong type
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return lazy


def _write(path: Path, tools: list[Tool]) -> None:
    from local_tools.core.state import write_state_file

    entries = [entry_of(t, _PACKAGE + m, attr) for t, (m, attr) in zip(tools, BUILTIN, strict=True)]
    text = json.dumps({"fingerprint": package_fingerprint(), "tools": entries})
    try:
        write_state_file(path, text)
    except OSError as exc:  # a read-only state dir: the next start imports them again
        log.debug("could not write the tools manifest %s: %s", path, exc)

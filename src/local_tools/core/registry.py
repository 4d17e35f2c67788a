"""Tool lookup: exact name → case-insensitive → alias → the ``invalid`` tool.

Toolsets can be switched on and off by config. A duplicate name or alias is an
error with a hint, never a silent rename. Custom tools come from the workspace's
``.local-tools/tools/*.py`` and from the ``local_tools.tools`` entry-point group.
A custom tool file or entry point that cannot be loaded leaves the other tools
working: it is kept as a ``PluginFailure`` (for ``list``, ``doctor`` and a server's
start-up log), and a call to a tool it would have given answers UNKNOWN_TOOL with
the reason.

Workspace tool files are code from the folder, which may be someone else's (a cloned
repository): they are imported only when the workspace is trusted (core/trust.py), each
from the very bytes whose hash was trusted. An untrusted file is not imported at all
(its declared names are read from its syntax tree, never run), and a call to one of its
tools answers UNKNOWN_TOOL saying how to trust the workspace.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import logging
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict

from local_tools.core.errors import UnknownTool
from local_tools.core.lazy_tool import same_tool
from local_tools.core.tool import Tool, is_tool_name
from local_tools.core.trust import Trust, digest, trust_command

__all__ = [
    "ENTRY_POINT_GROUP",
    "DuplicateToolError",
    "PluginError",
    "PluginFailure",
    "Registry",
    "UntrustedPlugin",
]

ENTRY_POINT_GROUP = "local_tools.tools"
WORKSPACE_TOOLS_DIR = Path(".local-tools") / "tools"

log = logging.getLogger(__name__)


class DuplicateToolError(ValueError):
    """Two tools claim one name or alias."""


class PluginError(RuntimeError):
    """A custom tool file or entry point could not be loaded."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"cannot load custom tools from {source}: {reason}")
        self.source = source
        self.reason = reason


@dataclass(frozen=True)
class PluginFailure:
    """A custom tool file or entry point that failed to load, and the names it declares
    (as far as its source tells: the file's stem and its ``tool("name", aliases=...)``)."""

    source: str
    error: str
    names: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.source}: {self.error}"


@dataclass(frozen=True)
class UntrustedPlugin:
    """A workspace tool file left unimported because the workspace is not trusted (or the
    file changed since it was), the names it declares, and the command that trusts it."""

    source: str
    names: tuple[str, ...]
    how_to_trust: str

    def __str__(self) -> str:
        return f"{self.source}: not loaded, the workspace is not trusted ({self.how_to_trust})"


class Registry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: dict[str, str] = {}
        # casefolded name or alias -> canonical name
        self._index: dict[str, str] = {}
        self._enabled: list[str] = ["*"]
        self._disabled: list[str] = []
        self._enabled_cache: dict[str, bool] = {}
        # toolset -> why its tools are not listed (still callable: they say so themselves)
        self._unlisted: dict[str, str] = {}
        self._failures: list[PluginFailure] = []
        # casefolded name -> (the name as declared, its failure)
        self._failed: dict[str, tuple[str, PluginFailure]] = {}
        self._untrusted: list[UntrustedPlugin] = []
        self._untrusted_names: dict[str, tuple[str, UntrustedPlugin]] = {}
        for t in tools:
            self.add(t)

    # -- building ---------------------------------------------------------------

    def add(self, tool: Tool, *, source: str = "builtin") -> None:
        for key in (tool.name, *tool.aliases):
            folded = key.casefold()
            owner = self._index.get(folded)
            if owner is not None:
                raise DuplicateToolError(
                    f"Tool {tool.name!r} from {source} uses the name {key!r}, already taken by "
                    f"{owner!r} from {self._sources[owner]}. Rename the new tool or drop the "
                    f"alias; tools are never renamed silently."
                )
        self._tools[tool.name] = tool
        self._sources[tool.name] = source
        for key in (tool.name, *tool.aliases):
            self._index[key.casefold()] = tool.name

    def set_toolsets(self, enabled: Sequence[str], disabled: Sequence[str] = ()) -> None:
        self._enabled = list(enabled)
        self._disabled = list(disabled)
        self._enabled_cache.clear()

    def load_workspace_tools(self, workspace: Path, trust: Trust = True) -> list[str]:
        """Import ``.local-tools/tools/*.py`` and register every Tool they define.

        `trust`: True imports every file; a mapping (core/trust.py) imports a file only
        when the bytes read have the trusted hash; False imports none. A file not
        imported is recorded in ``untrusted``; one that fails to import in ``failures``;
        a name clash raises.
        """
        folder = workspace / WORKSPACE_TOOLS_DIR
        added: list[str] = []
        if not folder.is_dir():
            return added
        for path in sorted(folder.glob("*.py")):
            name = path.relative_to(workspace).as_posix()
            try:
                source = path.read_bytes()
            except OSError as exc:
                self._fail(PluginFailure(str(path), _reason(exc), (path.stem,)))
                continue
            if trust is not True and (trust is False or trust.get(name) != digest(source)):
                self._skip(UntrustedPlugin(str(path), _declared_names(path, source), ""), workspace)
                continue
            load = partial(_import_source, path, source)
            added += self._load(str(path), load, _declared_names(path, source))
        return added

    def _skip(self, plugin: UntrustedPlugin, workspace: Path) -> None:
        plugin = UntrustedPlugin(plugin.source, plugin.names, trust_command(workspace))
        self._untrusted.append(plugin)
        for name in plugin.names:
            self._untrusted_names.setdefault(name.casefold(), (name, plugin))

    @property
    def untrusted(self) -> list[UntrustedPlugin]:
        """The workspace tool files not imported because the workspace is not trusted."""
        return list(self._untrusted)

    def load_entry_points(self) -> list[str]:
        """Register the tools of the ``local_tools.tools`` entry points (failures as above)."""
        added: list[str] = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            added += self._load(f"entry point {ep.name!r} ({ep.value})", ep.load, (ep.name,))
        return added

    def _load(self, source: str, load: Callable[[], Any], names: tuple[str, ...]) -> list[str]:
        """Add the tools `load()` gives, or record why it gave none."""
        try:
            tools = _tools_in(load())
            for t in tools:
                _check_schemas(t)
        except Exception as exc:
            reason = exc.reason if isinstance(exc, PluginError) else _reason(exc)
            self._fail(PluginFailure(source, reason, names))
            return []
        added = []
        for t in tools:
            known = self._tools.get(t.name)
            if known is None or not same_tool(known, t):  # a plugin may import a tool it reuses
                self.add(t, source=source)
                added.append(t.name)
        return added

    def _fail(self, failure: PluginFailure) -> None:
        self._failures.append(failure)
        for name in failure.names:
            self._failed.setdefault(name.casefold(), (name, failure))

    @property
    def failures(self) -> list[PluginFailure]:
        """The custom tool files and entry points that failed to load, in load order."""
        return list(self._failures)

    # -- lookup -----------------------------------------------------------------

    def is_enabled(self, tool: Tool) -> bool:
        cached = self._enabled_cache.get(tool.name)
        if cached is None:
            cached = self._enabled_cache[tool.name] = self._check_enabled(tool)
        return cached

    def _check_enabled(self, tool: Tool) -> bool:
        if tool.name == "invalid":
            return True

        def hit(patterns: Sequence[str]) -> bool:
            return any(
                fnmatch.fnmatchcase(tool.toolset, p) or fnmatch.fnmatchcase(tool.name, p)
                for p in patterns
            )

        return hit(self._enabled) and not hit(self._disabled)

    def resolve(self, name: str, *, include_disabled: bool = False) -> Tool | None:
        """Exact, then case-insensitive name or alias; None when unknown (or disabled).

        A name only a custom tool that failed to load declares gives a stand-in that
        answers every call with UNKNOWN_TOOL and the reason; it is never listed.
        """
        found = self._tools.get(name)
        if found is None:
            canonical = self._index.get(name.casefold())
            found = self._tools.get(canonical) if canonical else None
        if found is None:
            failed = self._failed.get(name.casefold())
            if failed is not None:
                return _stand_in(*failed)
            untrusted = self._untrusted_names.get(name.casefold())
            return _untrusted_stand_in(*untrusted) if untrusted is not None else None
        if not include_disabled and not self.is_enabled(found):
            return None
        return found

    def closest(self, name: str) -> str | None:
        """The enabled tool `name` is a slip for, or None when no name is close.

        Close: the same name but for case and separators (`ListDir`, `websearch`), a
        typo or two (an edit distance that grows with the length: `read_fiel`), or a
        word of one tool's name only (`fetch`: web_fetch; `process` names several: no
        guess). A name far from every tool (`nosuch`) gets no guess either: a wrong
        guess sends a model to the wrong tool.
        """
        names: dict[str, str] = {}
        for t in self.enabled():
            for spelling in (t.name, *t.aliases):
                names.setdefault(_folded(spelling), t.name)
        wanted = _folded(name)
        if not wanted:
            return None
        if wanted in names:
            return names[wanted]
        owners = {
            t.name
            for t in self.enabled()
            if any(wanted in _words(spelling) for spelling in (t.name, *t.aliases))
        }
        if owners:
            return owners.pop() if len(owners) == 1 else None
        allowed = 1 if len(wanted) <= 4 else 2 if len(wanted) <= 8 else 3
        best: dict[str, int] = {}
        for spelling, tool in names.items():
            distance = _edit_distance(wanted, spelling, allowed)
            if distance <= allowed:
                best[tool] = min(distance, best.get(tool, distance))
        fewest = [tool for tool, d in best.items() if d == min(best.values())]
        return fewest[0] if len(fewest) == 1 else None

    def enabled(self) -> list[Tool]:
        return [t for t in self._tools.values() if self.is_enabled(t)]

    def set_unlisted(self, toolset: str, reason: str) -> None:
        """Keep `toolset`'s tools out of listings and the finder (they cannot work here:
        no model configured); a call by name still reaches them, and they say why."""
        self._unlisted[toolset] = reason

    def listable(self) -> list[Tool]:
        """The enabled tools that may be offered to a model."""
        return [t for t in self.enabled() if t.toolset not in self._unlisted]

    def all(self) -> list[Tool]:
        return list(self._tools.values())

    def source(self, name: str) -> str:
        return self._sources[name]


def _folded(name: str) -> str:
    """A tool name without case or separators: `List-Dir`, `list_dir` and `ListDir` meet."""
    return "".join(c for c in name.casefold() if c.isalnum())


def _words(name: str) -> list[str]:
    """The words of a name: `web_fetch` and `WebFetch` are ["web", "fetch"]."""
    spaced = "".join(f" {c}" if c.isupper() else c for c in name)
    return [_folded(word) for word in spaced.replace("_", " ").replace("-", " ").split()]


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`; any
    value above `limit` once it is certain to exceed it."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def _tools_in(obj: Any) -> list[Tool]:
    if isinstance(obj, Tool):
        return [obj]
    if isinstance(obj, ModuleType):
        found = [v for v in vars(obj).values() if isinstance(v, Tool)]
        return list({id(t): t for t in found}.values())  # one tool under two names
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _tools_in(item)]
    if callable(obj):
        return _tools_in(obj())
    raise TypeError(f"entry point gave {type(obj).__name__}, expected a Tool, list or module")


def _check_schemas(t: Tool) -> None:
    """Build the tool's schemas now: one that cannot be built would fail every listing."""
    try:
        t.parameters  # noqa: B018 - a cached property: built here, once
        t.output_schema  # noqa: B018
    except Exception as exc:
        raise PluginError(f"tool {t.name!r}", f"tool {t.name!r}: {_reason(exc)}") from exc


def _import_source(path: Path, source: bytes) -> ModuleType:
    """Run `source` (the bytes already read and checked) as the module of `path`: the
    file is not read again, so one swapped after the check is not what runs."""
    name = f"local_tools_workspace_tools.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(str(path), "not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # a trusted workspace's own tool file
    except Exception as exc:
        del sys.modules[name]
        raise PluginError(str(path), _reason(exc, path)) from exc
    return module


def _reason(exc: BaseException, path: Path | None = None) -> str:
    """``Type: message``, with the line of `path` it was raised from when there is one."""
    text = f"{type(exc).__name__}: {exc}"
    if path is not None and not isinstance(exc, SyntaxError):  # which names its line
        lines = [
            f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)
        ]
        if lines:
            text += f" (line {lines[-1]})"
    return text


def _declared_names(path: Path, source: bytes) -> tuple[str, ...]:
    """The file's stem and the names and aliases its ``tool(...)``/``Tool(...)`` calls give
    (read from the syntax tree: nothing of the file runs)."""
    names = [path.stem]
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return tuple(names)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _callee(node.func) not in ("tool", "Tool"):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        first = node.args[0] if node.args else keywords.get("name")
        aliases = keywords.get("aliases")
        values = [first, *(aliases.elts if isinstance(aliases, (ast.Tuple, ast.List)) else ())]
        names += [
            v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        ]
    return tuple(dict.fromkeys(names))


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


class _AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


def _stand_in(name: str, failure: PluginFailure) -> Tool:
    """What a call to a tool whose file failed to load finds: the reason, as UNKNOWN_TOOL."""
    return _refusing(
        name,
        f"Failed to load from {failure.source}.",
        f"The tool {name!r} is not available: it failed to load ({failure.source}: "
        f"{failure.error}). The other tools work; this one needs its code fixed first "
        "(tell the user).",
        {"failed_source": failure.source, "error": failure.error},
    )


def _untrusted_stand_in(name: str, plugin: UntrustedPlugin) -> Tool:
    """What a call to a tool of an untrusted workspace's tool file finds: how to trust it."""
    return _refusing(
        name,
        f"Not loaded from {plugin.source}: the workspace is not trusted.",
        f"The tool {name!r} is not available: it comes from {plugin.source}, and this "
        "workspace is not trusted, so its own tools are not loaded. Tell the user; after "
        f"reviewing the file they can trust the workspace with `{plugin.how_to_trust}`.",
        {"untrusted_source": plugin.source, "how_to_trust": plugin.how_to_trust},
    )


def _refusing(name: str, description: str, message: str, details: dict[str, Any]) -> Tool:
    """A tool that answers UNKNOWN_TOOL with `message`, under the name a plugin declared
    when that is a valid one (a file may declare any text; the message quotes it escaped)."""

    def refuse(args: Any, ctx: Any) -> None:
        raise UnknownTool(message, details=details)

    return Tool(
        name=name if is_tool_name(name) else "unavailable_tool",
        description=description,
        args_model=_AnyArgs,
        func=refuse,
        blocking=False,
    )

"""Parameter names other tool layers taught models, accepted without being listed.

Models trained on other agents call our tools with those agents' names: ``filePath`` or
``file_path`` for ``path`` (OpenCode, Claude Code, Gemini CLI), ``oldString`` /
``newString`` / ``replaceAll`` for the edit family, ``workdir`` for ``cwd`` and
``timeout_ms`` for a timeout (Codex). Rejecting them costs a round trip and a confused
model; listing them would double the schemas. So the runner renames them, just before
validation, to the names the schema lists:

- the camelCase spelling of any snake_case parameter (``oldString``, ``ignoreCase``);
- ``filePath`` / ``file_path`` -> ``path``, ``workdir`` -> ``cwd``;
- ``timeout_ms`` -> ``timeout``, divided by 1000 where the tool's timeout is in seconds
  (every built-in tool's is; one whose description says milliseconds takes it 1:1);
- in nested objects too (``multi_edit``'s ``edits: [{oldString, newString}]``).

An alias applies only when the tool has its target parameter and no parameter of the
alias's own name (a plugin may really take ``file_path``). A parameter given under two
names (``path`` and ``filePath``) is INVALID_INPUT naming both. After the rename every
message names the parameter as the schema does.

What applies to a tool is worked out once per arguments model from its pydantic fields
and cached; a call that uses no alias costs a dict lookup and a set test.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from pydantic import AliasChoices, BaseModel

from local_tools.core.errors import InvalidInput

if TYPE_CHECKING:
    from local_tools.core.tool import Tool

__all__ = ["WELL_KNOWN", "canonical_args", "target_name"]

# alias -> the parameter it stands for, beyond the camelCase spellings.
WELL_KNOWN: dict[str, str] = {
    "filePath": "path",
    "file_path": "path",
    "workdir": "cwd",
    "timeout_ms": "timeout",
}
_MS_ALIAS = "timeout_ms"
_IN_MS = re.compile(r"\bms\b|millisecond", re.IGNORECASE)
_IN_SECONDS = re.compile(r"\bseconds?\b|\d\s*s\b", re.IGNORECASE)


def camel(name: str) -> str:
    """``ignore_case`` -> ``ignoreCase``; a name without inner underscores unchanged."""
    head, *rest = name.split("_")
    if not rest or not head or not all(rest):
        return name  # `_x`, `x_`, `a__b`: no spelling a model would guess
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def target_name(key: str, names: Iterable[str]) -> str | None:
    """The parameter among `names` that `key` stands for, or None (not an alias here).

    For code that sees only a schema's property names (e.g. a door coercing string
    values by the schema's types before the runner renames).
    """
    known = frozenset(names)
    if key in known:
        return None
    return _alias_map(known).get(key)


@functools.lru_cache(maxsize=512)
def _alias_map(names: frozenset[str]) -> dict[str, str]:
    """alias -> target for a set of accepted names: camelCase first, then WELL_KNOWN.

    `names` is every name the model accepts; the targets are among them.
    """
    out: dict[str, str] = {}
    for name in sorted(names):
        spelled = camel(name)
        if spelled != name and spelled not in names:
            out.setdefault(spelled, name)
    for alias, target in WELL_KNOWN.items():
        if target in names and alias not in names:
            out.setdefault(alias, target)
    return out


# --------------------------------------------------------------------------- plans


@dataclass
class _Plan:
    """What to rename in one arguments model's input."""

    # alias -> (schema name it becomes, divisor of its value: 1000 for ms -> s)
    aliases: dict[str, tuple[str, float]] = field(default_factory=dict)
    # schema name -> every name the model accepts for that parameter
    accepted: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # schema name -> plan of the object(s) its value holds
    nested: dict[str, _Plan] = field(default_factory=dict)
    keys: frozenset[str] = frozenset()  # the aliases, for the no-alias fast path

    @property
    def empty(self) -> bool:
        return not self.aliases and not self.nested


_PLANS: dict[type[BaseModel], _Plan] = {}


def _plan(model: type[BaseModel], building: dict[type[BaseModel], _Plan] | None = None) -> _Plan:
    """The cached plan of `model`; published whole, so another thread never sees a
    plan half made (`building`: the plans being made, for models that nest themselves)."""
    plan = _PLANS.get(model)
    if plan is not None:
        return plan
    if building is not None and model in building:
        return building[model]
    building = {} if building is None else building
    plan = building[model] = _Plan()
    _fill(plan, model, building)
    if next(iter(building)) is model:  # the outermost call: publish them all
        _PLANS.update(building)
    return plan


def _fill(plan: _Plan, model: type[BaseModel], building: dict[type[BaseModel], _Plan]) -> None:
    by_name = bool(
        model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name")
    )
    owner: dict[str, str] = {}  # accepted name -> schema name
    seconds: set[str] = set()
    for field_name, info in model.model_fields.items():
        names = _input_names(field_name, info.alias, info.validation_alias, by_name)
        schema_name = names[0]
        plan.accepted[schema_name] = names
        for name in names:
            owner.setdefault(name, schema_name)
        if schema_name == "timeout" and _in_seconds(info.description or ""):
            seconds.add(schema_name)
        inner = _models_in(info.annotation)
        if inner is not None:
            sub = _plan(inner, building)
            if inner in building or not sub.empty:  # (one being made is not filled yet)
                plan.nested[schema_name] = sub
    for alias, target in _alias_map(frozenset(owner)).items():
        schema_name = owner[target]
        divisor = 1000.0 if alias == _MS_ALIAS and schema_name in seconds else 1.0
        plan.aliases[alias] = (schema_name, divisor)
    plan.keys = frozenset(plan.aliases)


def _in_seconds(description: str) -> bool:
    """Whether a `timeout` is in seconds: ours all are; a plugin's may say milliseconds."""
    return bool(_IN_SECONDS.search(description)) or not _IN_MS.search(description)


def _input_names(
    field_name: str, alias: str | None, validation_alias: Any, by_name: bool
) -> tuple[str, ...]:
    """The names pydantic accepts for a field, the one its schema lists first."""
    names: list[str] = []
    if isinstance(validation_alias, str):
        names.append(validation_alias)
    elif isinstance(validation_alias, AliasChoices):
        names += [c for c in validation_alias.choices if isinstance(c, str)]
    elif alias:
        names.append(alias)
    if by_name or not names:
        names.append(field_name)
    return tuple(dict.fromkeys(names))


def _models_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field's value holds: `M`, `M | None`, `list[M]` (None: not one)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType, list, tuple, set, frozenset):
        found = {m for arg in typing.get_args(annotation) if (m := _models_in(arg)) is not None}
        return found.pop() if len(found) == 1 else None
    return None


# --------------------------------------------------------------------------- renaming


def canonical_args(tool: Tool, args: Mapping[str, Any]) -> Mapping[str, Any]:
    """`args` with every alias renamed to the parameter it stands for.

    Returns `args` itself when nothing needs renaming (the common case); otherwise a
    new dict. InvalidInput when a parameter is given under two names.
    """
    plan = _PLANS.get(tool.args_model) or _plan(tool.args_model)
    if not plan.nested and plan.keys.isdisjoint(args):
        return args
    return _rename(tool.name, plan, args, "")


def _rename(tool: str, plan: _Plan, args: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    renamed: dict[str, Any] | None = None
    if not plan.keys.isdisjoint(args):
        renamed = {}
        for key, value in args.items():
            alias = plan.aliases.get(key)
            if alias is None:
                renamed[key] = value
                continue
            target, divisor = alias
            _once(tool, plan, args, key, target, where)
            renamed[target] = _scaled(value, divisor) if divisor != 1.0 else value
    for name, sub in plan.nested.items():
        source = renamed if renamed is not None else args
        value = source.get(name)
        new: Any = value
        if isinstance(value, Mapping):
            new = _rename(tool, sub, value, f"{where}{name}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if not isinstance(item, Mapping) or (not sub.nested and sub.keys.isdisjoint(item)):
                    continue  # the usual item: nothing to rename, no copy
                fixed = _rename(tool, sub, item, f"{where}{name}.{i}.")
                if fixed is not item:
                    new = list(value) if new is value else new
                    new[i] = fixed
        if new is not value:
            renamed = dict(source) if renamed is None else renamed
            renamed[name] = new
    return args if renamed is None else renamed


def _once(
    tool: str,
    plan: _Plan,
    args: Mapping[str, Any],
    key: str,
    target: str,
    where: str,
) -> None:
    """InvalidInput when `target` is also given under another name than `key`."""
    others = [n for n in plan.accepted.get(target, (target,)) if n in args]
    others += [a for a, (t, _) in plan.aliases.items() if t == target and a != key and a in args]
    if others:
        names = sorted({key, *others})
        listed = " and ".join(f"'{where}{n}'" for n in names)
        both = "both" if len(names) == 2 else "all"
        raise InvalidInput(
            f"Invalid arguments for {tool}: {listed} {both} give the parameter "
            f"'{where}{target}'; give it once, as '{target}'.",
            details={"parameter": f"{where}{target}", "names": names},
        )


def _scaled(value: Any, divisor: float) -> Any:
    """Milliseconds as seconds; a value that is no number is passed on for the error."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value / divisor
    if isinstance(value, str):
        try:
            return float(value.strip()) / divisor
        except ValueError:
            return value
    return value

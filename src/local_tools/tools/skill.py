"""skill: load a skill's instructions, or list the skills there are (engine: skills.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, field_validator

from local_tools.core.context import ToolContext
from local_tools.core.errors import ExecutionError, NotFound, ToolError
from local_tools.core.tool import Args, Hints, Output, omitted, tool
from local_tools.skills import MAX_FILES, SKILL_DIRS, Skill, SkillError, SkillSet, check_name
from local_tools.skills import discover as discover_skills

PERMISSION = "skill"
MAX_NAMES_SHOWN = 30  # in a NOT_FOUND message


class SkillArgs(Args):
    skill: str = Field(
        "",
        validation_alias=AliasChoices("skill", "name"),
        description="The skill's name (any case). Empty: list the skills.",
    )

    @field_validator("skill")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        # Blank lists: openlink sends parameters with the XML layout's newlines kept.
        return check_name(value) if value.strip() else ""


class SkillEntry(BaseModel):
    name: str = Field(description="The skill's name.")
    description: str = Field(description="What it is for and when to use it (may be empty).")
    source: str = Field(description='Where it was found: "workspace", "home" or "config".')


class SkillLoadError(BaseModel):
    name: str = Field(description="The skill folder's name.")
    path: str = Field(description="The SKILL.md (or folder) that could not be used.")
    message: str = Field(description="Why.")
    source: str = Field(description='"workspace", "home" or "config".')


class SkillOutput(Output):
    errors: list[SkillLoadError] = Field(
        description="Skills that could not be loaded (listing), or folders of this name "
        "that could not be (loading: e.g. a broken override)."
    )
    skills: list[SkillEntry] = omitted(description="Listing: the skills, by name.")
    name: str = omitted(description="Loading: the skill's name.")
    description: str = omitted(description="Loading: its description.")
    content: str = omitted(
        description="Loading: the instructions (SKILL.md without its front matter)."
    )
    folder: str = omitted(description="Loading: the skill's folder, absolute.")
    source: str = omitted(description='Loading: "workspace", "home" or "config".')
    skill_file: str = omitted(description="Loading: its SKILL.md, absolute.")
    files: list[str] = omitted(
        description=f"Loading: the folder's other files, relative to it (at most {MAX_FILES}).",
    )
    more_files: bool = omitted(description="Loading: true when files were left out.")
    note: str = omitted(
        description="Loading: how its files can be read, when read_file cannot reach them."
    )


DESCRIPTION = """Load a skill: instructions the user or the project wrote for a kind of task.

Before a task an available skill covers, call this with its name and follow the
instructions returned. The result names the skill's folder and other files (scripts,
templates): read them with read_file when the instructions refer to them. With no
name, lists the skills with their descriptions."""


def _skills(ctx: ToolContext) -> SkillSet:
    """This call's skills, found once for the permission check and the call."""
    cached = ctx.session.get("skill")
    if cached is not None and cached[0] == ctx.call_id:
        return cached[1]  # type: ignore[no-any-return]
    found = discover_skills(ctx.workspace)
    ctx.session["skill"] = (ctx.call_id, found)
    return found


def _subjects(args: SkillArgs, ctx: ToolContext) -> list[str] | None:
    """The skill's own name (a rule for "deploy" also covers a call for "DEPLOY")."""
    if not args.skill:
        return None  # listing: the generic check
    found = _skills(ctx).get(args.skill)
    return [found.name if found is not None else args.skill]


def _allowed(ctx: ToolContext) -> Callable[[str], bool]:
    """Whether the caller may load a skill: denied ones are not offered."""
    return lambda name: ctx.policy.evaluate(ctx.user_id, PERMISSION, name).action != "deny"


def _error(e: SkillError) -> dict[str, str]:
    return {"name": e.name, "path": str(e.path), "message": e.message, "source": e.scope}


def _render(out: dict[str, Any]) -> str:
    errors = out.get("errors") or []
    if "content" not in out:
        return _render_list(out.get("skills") or [], errors)
    lines = [f'<skill name="{out["name"]}" folder="{out["folder"]}">', out["content"], "</skill>"]
    if out.get("files"):
        lines.append(
            "Other files in the skill's folder (relative to it; read one with read_file when "
            "the instructions refer to it):"
        )
        lines += [f"- {f}" for f in out["files"]]
        if out.get("more_files"):
            lines.append(f"- ... more files (only the first {MAX_FILES} are listed)")
    if out.get("note"):
        lines.append(out["note"])
    lines += [f"Note: {e['path']} was not loaded: {e['message']}" for e in errors]
    return "\n".join(lines)


def _render_list(skills: list[dict[str, Any]], errors: list[dict[str, Any]]) -> str:
    if skills:
        lines = [f'Available skills ({len(skills)}); load one with skill(skill="<name>"):']
        for s in skills:
            lines.append(f"- {s['name']}: {s['description'] or '(no description)'}")
    else:
        lines = [
            "No skills found. A skill is a folder <name>/SKILL.md, or a file <name>.md, in "
            + ", ".join(SKILL_DIRS)
            + " (in the workspace or the user's home)."
        ]
    if errors:
        lines.append("Could not load:")
        lines += [f"- {e['path']}: {e['message']}" for e in errors]
    return "\n".join(lines)


@tool(
    "skill",
    args=SkillArgs,
    description=DESCRIPTION,
    permission=PERMISSION,
    aliases=("skill_invoke",),
    hints=Hints(read_only=True, idempotent=True),
    toolset="agent",
    subjects=_subjects,
    render=_render,
    output=SkillOutput,
)
def skill(args: SkillArgs, ctx: ToolContext) -> dict[str, Any]:
    found = _skills(ctx)
    allowed = _allowed(ctx)
    if not args.skill:
        return {
            "skills": [
                {"name": s.name, "description": s.description, "source": s.scope}
                for s in found
                if allowed(s.name)
            ],
            "errors": [_error(e) for e in found.errors],
        }
    loaded = found.get(args.skill)
    if loaded is None:
        raise _not_found(args.skill, found, allowed)
    return _load(loaded, found, ctx)


def _load(s: Skill, found: SkillSet, ctx: ToolContext) -> dict[str, Any]:
    files, more = found.files(s)
    out: dict[str, Any] = {
        "name": s.name,
        "description": s.description,
        "content": s.instructions,
        "folder": str(s.folder),
        "source": s.scope,
        "skill_file": str(s.skill_file),
        "files": files,
        "more_files": more,
        "errors": [_error(e) for e in found.errors_for(s.name)],
    }
    if files and not _reachable(ctx, s.folder):
        out["note"] = (
            f"The folder {s.folder} is outside the workspace, so read_file cannot open its "
            "files unless the configuration lists it in [workspace] extra_roots; ask the user "
            "to add it if the instructions need them."
        )
    return out


def _reachable(ctx: ToolContext, folder: Path) -> bool:
    try:
        ctx.jail.resolve(str(folder))
    except ToolError:
        return False
    return True


def _not_found(name: str, found: SkillSet, allowed: Callable[[str], bool]) -> ToolError:
    broken = found.errors_for(name)
    if broken:
        reasons = "; ".join(f"{e.path}: {e.message}" for e in broken)
        return ExecutionError(
            f"The skill {name!r} could not be loaded: {reasons}. Tell the user; its SKILL.md "
            "needs fixing."
        )
    names = [s.name for s in found if allowed(s.name)]
    if not names:
        return NotFound(f"No skill named {name!r}: there are no skills here. Carry on without one.")
    close = found.closest(name, names)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    shown = ", ".join(names[:MAX_NAMES_SHOWN]) + (" ..." if len(names) > MAX_NAMES_SHOWN else "")
    return NotFound(f"No skill named {name!r}.{hint} Available skills: {shown}.")

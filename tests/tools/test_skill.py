"""The skill tool and the skill loader (skills.py), on real folders.

HOME and the config dir point into the test's tmp dir, so the real user's skills
never show up here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools import Toolbox
from local_tools.core.config import ConfigError, load_config
from local_tools.skills import (
    MAX_FILES,
    MAX_SKILL_BYTES,
    FrontMatterError,
    check_name,
    discover,
    list_skills,
    parse_front_matter,
)

POSIX = sys.platform != "win32"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


def write_skill(
    base: Path, folder: str, name: str | None = None, description: str = "", body: str = ""
) -> Path:
    """`base/folder/SKILL.md` with a front matter naming it; returns the folder."""
    path = base / folder
    path.mkdir(parents=True)
    front = [f"name: {name}"] if name is not None else []
    if description:
        front.append(f"description: {description}")
    text = "---\n" + "".join(f"{line}\n" for line in front) + "---\n" + body
    (path / "SKILL.md").write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def skilled(make_toolbox: Any, workspace: Path, home: Path) -> Toolbox:
    write_skill(workspace / ".claude/skills", "deploy", "deploy", "Ship it.", "# Deploy\nRun it.\n")
    return make_toolbox()  # type: ignore[no-any-return]


# -- discovery ------------------------------------------------------------------------


def test_discovery_order_later_dirs_win(workspace: Path, home: Path) -> None:
    write_skill(workspace / ".skills", "a", "a", "from .skills")
    write_skill(workspace / ".claude/skills", "a", "a", "from .claude")
    write_skill(workspace / ".local-tools/skills", "b", "b", "workspace b")
    write_skill(home / ".claude/skills", "b", "b", "home b")
    write_skill(home / ".config/local-tools/skills", "c", "c", "config c")
    write_skill(home / ".openlink/skills", "c", "c", "home c")
    found = discover(workspace)
    assert {s.name: s.description for s in found} == {
        "a": "from .claude",
        "b": "home b",
        "c": "config c",
    }
    assert [(s.name, s.scope) for s in found] == [
        ("a", "workspace"),
        ("b", "home"),
        ("c", "config"),
    ]
    b = found.get("b")
    assert b is not None and b.folder == home / ".claude/skills/b"
    assert b.skill_file == b.folder / "SKILL.md" and b.skills_dir == home / ".claude/skills"
    assert list_skills(workspace) == [
        {"name": "a", "description": "from .claude"},
        {"name": "b", "description": "home b"},
        {"name": "c", "description": "config c"},
    ]


def test_names_match_case_insensitively(workspace: Path, home: Path) -> None:
    write_skill(workspace / ".skills", "pdf", "PDF-Tools", "old")
    write_skill(home / ".agent/skills", "other", "pdf-tools", "new")  # replaces it
    found = discover(workspace)
    assert len(found) == 1
    for name in ("pdf-tools", "PDF-TOOLS", "  Pdf-Tools\n"):
        skill = found.get(name)
        assert skill is not None and skill.description == "new", name


def test_no_skills_and_no_home(workspace: Path, tmp_path: Path) -> None:
    found = discover(workspace, home=tmp_path / "nohome", config_dir=tmp_path / "nocfg")
    assert len(found) == 0 and found.errors == []


def test_not_skills_are_skipped_silently(workspace: Path, home: Path) -> None:
    base = workspace / ".skills"
    (base / "no-skill-md").mkdir(parents=True)
    (base / "README.md").write_text("not a folder")
    write_skill(base, ".hidden", "hidden")
    write_skill(base, "ok", "ok")
    found = discover(workspace)
    assert [s.name for s in found] == ["ok"] and found.errors == []


def test_skill_file_name_any_case_and_no_front_matter(workspace: Path, home: Path) -> None:
    folder = workspace / ".skills" / "Notes"
    folder.mkdir(parents=True)
    (folder / "skill.md").write_text("Just instructions.\n")
    skill = discover(workspace).get("notes")
    assert skill is not None
    assert (skill.name, skill.description, skill.instructions) == (
        "Notes",
        "",
        "Just instructions.",
    )


# -- openlink's flat skills: <name>.md ------------------------------------------------


def test_flat_skill_without_front_matter(workspace: Path, home: Path) -> None:
    base = workspace / ".skills"
    base.mkdir()
    (base / "code-review.md").write_text("\n# Review the diff\n\nRead it twice.\n")
    skill = discover(workspace).get("code-review")
    assert skill is not None and skill.flat
    assert (skill.name, skill.description) == ("code-review", "Review the diff")
    assert skill.instructions == "# Review the diff\n\nRead it twice."
    assert skill.skill_file == base / "code-review.md" and skill.folder == base
    assert list_skills(workspace) == [{"name": "code-review", "description": "Review the diff"}]


def test_flat_skill_with_front_matter_in_every_skills_folder(workspace: Path, home: Path) -> None:
    (workspace / ".claude/skills").mkdir(parents=True)
    (workspace / ".claude/skills/pdf.md").write_text(
        "---\nname: PDF-Tools\ndescription: Fill PDF forms.\n---\nUse pypdf.\n"
    )
    (home / ".config/local-tools/skills").mkdir(parents=True)
    (home / ".config/local-tools/skills/notes.MD").write_text("Keep notes short.\n")
    found = discover(workspace)
    assert {s.name: (s.description, s.scope) for s in found} == {
        "PDF-Tools": ("Fill PDF forms.", "workspace"),
        "notes": ("Keep notes short.", "config"),
    }
    pdf = found.get("pdf-tools")
    assert pdf is not None and pdf.instructions == "Use pypdf."


def test_folder_form_wins_over_flat_form_in_one_folder(workspace: Path, home: Path) -> None:
    base = workspace / ".skills"
    write_skill(base, "deploy", "deploy", "The folder form.")
    (base / "deploy.md").write_text("The flat form.\n")  # listed after `deploy`
    write_skill(base, "b-folder", "alpha", "Folder named alpha.")
    (base / "alpha.md").write_text("Flat alpha.\n")  # listed before `b-folder`
    found = discover(workspace)
    assert {s.name: s.description for s in found} == {
        "deploy": "The folder form.",
        "alpha": "Folder named alpha.",
    }
    # A later skills folder still replaces an earlier one, whatever the form.
    (home / ".claude/skills").mkdir(parents=True)
    (home / ".claude/skills/deploy.md").write_text("Home flat deploy.\n")
    deploy = discover(workspace).get("deploy")
    assert deploy is not None and deploy.description == "Home flat deploy." and deploy.flat


def test_flat_skill_loads_through_the_tool_without_files(
    tb: Toolbox, workspace: Path, home: Path
) -> None:
    base = workspace / ".skills"
    base.mkdir()
    (base / "release.md").write_text("Tag, then push.\n")
    (base / "other.md").write_text("Another skill.\n")
    (base / "README.md").write_text("About these skills.\n")  # not a skill
    listed = ok(tb.run("skill", {}))
    assert [s["name"] for s in listed["skills"]] == ["other", "release"]
    out = ok(tb.run("skill", {"skill": "release"}))
    assert out["content"] == "Tag, then push." and out["description"] == "Tag, then push."
    assert out["skill_file"] == str(base / "release.md") and out["files"] == []


def test_a_broken_flat_skill_is_reported_by_its_name(workspace: Path, home: Path) -> None:
    base = workspace / ".skills"
    base.mkdir()
    (base / "latin1.md").write_bytes(b"caf\xe9\n")
    (base / "fine.md").write_text("Fine.\n")
    found = discover(workspace)
    assert [s.name for s in found] == ["fine"]
    assert [(e.name, e.path) for e in found.errors] == [("latin1", base / "latin1.md")]
    assert "not UTF-8" in found.errors[0].message


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_workspace_flat_skill_linking_out_is_refused(
    workspace: Path, tmp_path: Path, home: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("secret\n")
    base = workspace / ".skills"
    base.mkdir()
    (base / "thief.md").symlink_to(secret)
    found = discover(workspace)
    assert len(found) == 0
    assert [e.name for e in found.errors] == ["thief"]
    assert "outside the workspace" in found.errors[0].message


# -- front matter ---------------------------------------------------------------------


def test_front_matter_quoted_values() -> None:
    text = (
        "---\nname: \"deploy\"\ndescription: 'It''s \\n literal'\n"
        'other: "a\\tb \\u00e9"\n---\nBody\n'
    )
    fields, body = parse_front_matter(text)
    assert fields == {"name": "deploy", "description": "It's \\n literal", "other": "a\tb é"}
    assert body == "Body"


def test_front_matter_folded_and_literal_blocks() -> None:
    text = (
        "---\n"
        "name: x\n"
        "description: >\n"
        "  Use this skill when\n"
        "  deploying.\n"
        "\n"
        "  Second paragraph.\n"
        "usage: |\n"
        "  line one\n"
        "    indented\n"
        "strip: >-\n"
        "  no newline\n"
        "---\n"
        "Body\n"
    )
    fields, _ = parse_front_matter(text)
    assert fields["description"] == "Use this skill when deploying.\nSecond paragraph.\n"
    assert fields["usage"] == "line one\n  indented\n"
    assert fields["strip"] == "no newline"


def test_front_matter_plain_continuations_comments_and_nested_keys() -> None:
    text = (
        "---\r\n"
        "# a comment\r\n"
        "name: pdf # trailing comment\r\n"
        "description: Extract text from PDFs: forms,\r\n"
        "  tables and more.\r\n"
        "allowed-tools:\r\n"
        "  - Read\r\n"
        "metadata:\r\n"
        "  version: 2\r\n"
        "tags: [a, b]\r\n"
        "---\r\n"
        "Body\r\n"
    )
    fields, body = parse_front_matter(text)
    assert fields["name"] == "pdf"
    assert fields["description"] == "Extract text from PDFs: forms, tables and more."
    assert fields["allowed-tools"] is None and fields["metadata"] is None and fields["tags"] is None
    assert body == "Body"


def test_description_folded_to_one_line(workspace: Path, home: Path) -> None:
    folder = workspace / ".skills" / "x"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: |\n  one\n  two\n---\nb\n")
    skill = discover(workspace).get("x")
    assert skill is not None and skill.description == "one two"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nname: x\n", "never closed"),
        ("---\nname: x\nnot a key\n---\n", "line 3: expected 'key: value'"),
        ('---\nname: "open\n---\n', 'line 2: the " quote is never closed'),
        ("---\nname: x\n  stray\n---\n", None),  # a plain value continued: fine
        ("---\n  name: x\n---\n", "line 2: unexpected indentation"),
        ('---\nname: "x" y\n---\n', "text after the closing quote"),
        ('---\nname: "\\q"\n---\n', "bad escape"),
        ("---\nname: *alias\n---\n", "anchors, aliases and tags"),
        ("---\ndescription: |\n  a\n b\n---\n", "less indented"),
    ],
)
def test_broken_front_matter(text: str, message: str | None) -> None:
    if message is None:
        assert parse_front_matter(text)[0] == {"name": "x stray"}
        return
    with pytest.raises(FrontMatterError, match=message):
        parse_front_matter(text)


def test_a_broken_skill_is_reported_and_the_others_load(workspace: Path, home: Path) -> None:
    base = workspace / ".claude/skills"
    write_skill(base, "good", "good", "Works.")
    (base / "broken").mkdir()
    (base / "broken" / "SKILL.md").write_text("---\nname: broken\ndescription: 'unclosed\n---\n")
    (base / "listy").mkdir()
    (base / "listy" / "SKILL.md").write_text("---\nname: [a, b]\n---\n")
    (base / "bad-name").mkdir()
    (base / "bad-name" / "SKILL.md").write_text("---\nname: ../escape\n---\n")
    (base / "latin1").mkdir()
    (base / "latin1" / "SKILL.md").write_bytes(b"---\nname: caf\xe9\n---\n")
    found = discover(workspace)
    assert [s.name for s in found] == ["good"]
    errors = {e.name: e.message for e in found.errors}
    assert set(errors) == {"broken", "listy", "bad-name", "latin1"}
    assert "quote is never closed" in errors["broken"]
    assert "name must be text" in errors["listy"]
    assert "path separators" in errors["bad-name"]
    assert "not UTF-8" in errors["latin1"]
    assert all(e.path == base / e.name / "SKILL.md" for e in found.errors)


def test_oversize_skill_file(workspace: Path, home: Path, tb: Toolbox) -> None:
    folder = write_skill(workspace / ".skills", "big", "big", "Huge.")
    with (folder / "SKILL.md").open("a") as handle:
        handle.write("x" * MAX_SKILL_BYTES)
    write_skill(workspace / ".skills", "small", "small", "Fine.")
    out = ok(tb.run("skill", {}))
    assert [s["name"] for s in out["skills"]] == ["small"]
    assert "larger than 256 KB" in out["errors"][0]["message"]
    assert "larger than 256 KB" in err(tb.run("skill", {"skill": "big"}), "EXECUTION_ERROR")


# -- names ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../x", "a/b", "a\\b", "..", ".", "a..b", "x\x00y", " \n "])
def test_check_name_refuses(name: str) -> None:
    with pytest.raises(ValueError, match="a skill name"):
        check_name(name)


@pytest.mark.parametrize("name", ["../x", "a/b", "..", "x" * 200])
def test_invalid_names_are_invalid_input(skilled: Toolbox, name: str) -> None:
    message = err(skilled.run("skill", {"skill": name}), "INVALID_INPUT")
    assert "skill name" in message


def test_blank_name_lists(skilled: Toolbox) -> None:
    # openlink keeps the XML layout's newlines around a parameter's value.
    out = ok(skilled.run("skill", {"skill": "\n  \n"}))
    assert [s["name"] for s in out["skills"]] == ["deploy"]


# -- the tool -------------------------------------------------------------------------


def test_list(skilled: Toolbox, home: Path) -> None:
    write_skill(home / ".claude/skills", "notes", "notes")
    env = skilled.run("skill", {})
    out = ok(env)
    assert out == {
        "skills": [
            {"name": "deploy", "description": "Ship it.", "source": "workspace"},
            {"name": "notes", "description": "", "source": "home"},
        ],
        "errors": [],
    }
    text = skilled.render(env)
    assert "- deploy: Ship it." in text and "- notes: (no description)" in text


def test_list_empty_says_where_skills_go(tb: Toolbox, home: Path) -> None:
    env = tb.run("skill", {})
    assert ok(env) == {"skills": [], "errors": []}
    assert ".claude/skills" in tb.render(env)


def test_load_with_files(skilled: Toolbox, workspace: Path) -> None:
    folder = workspace / ".claude/skills/deploy"
    (folder / "scripts").mkdir()
    (folder / "scripts" / "go.sh").write_text("echo go\n")
    (folder / "reference.md").write_text("ref\n")
    (folder / ".secret").write_text("no\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"")
    env = skilled.run("skill", {"skill": "Deploy"})
    out = ok(env)
    assert out == {
        "name": "deploy",
        "description": "Ship it.",
        "content": "# Deploy\nRun it.",
        "folder": str(folder),
        "source": "workspace",
        "skill_file": str(folder / "SKILL.md"),
        "files": ["reference.md", "scripts/go.sh"],
        "more_files": False,
        "errors": [],
    }
    text = skilled.render(env)
    assert text.startswith(f'<skill name="deploy" folder="{folder}">\n# Deploy\nRun it.\n</skill>')
    assert "- scripts/go.sh" in text
    # The folder is in the workspace: read_file reaches the files it names.
    assert ok(skilled.run("read_file", {"path": str(folder / "scripts/go.sh")}))


def test_files_are_capped(skilled: Toolbox, workspace: Path) -> None:
    folder = workspace / ".claude/skills/deploy"
    for i in range(MAX_FILES + 5):
        (folder / f"f{i:03}.txt").write_text("")
    out = ok(skilled.run("skill", {"skill": "deploy"}))
    assert len(out["files"]) == MAX_FILES and out["more_files"] is True
    assert "more files" in skilled.render(skilled.run("skill", {"skill": "deploy"}))


def test_alias_and_name_argument(skilled: Toolbox) -> None:
    assert ok(skilled.run("skill_invoke", {"name": "deploy"}))["name"] == "deploy"


def test_unknown_name_suggests(skilled: Toolbox, workspace: Path) -> None:
    write_skill(workspace / ".skills", "pdf", "pdf")
    message = err(skilled.run("skill", {"skill": "deplyo"}), "NOT_FOUND")
    assert "Did you mean: deploy?" in message and "Available skills: deploy, pdf" in message


def test_unknown_name_with_no_skills(tb: Toolbox, home: Path) -> None:
    assert "no skills" in err(tb.run("skill", {"skill": "x"}), "NOT_FOUND")


def test_a_broken_override_is_reported_with_the_skill(skilled: Toolbox, home: Path) -> None:
    (home / ".claude/skills/deploy").mkdir(parents=True)
    (home / ".claude/skills/deploy/SKILL.md").write_text("---\nname: deploy\n")
    env = skilled.run("skill", {"skill": "deploy"})
    out = ok(env)
    assert out["source"] == "workspace"  # the broken one replaced nothing
    assert out["errors"][0]["path"] == str(home / ".claude/skills/deploy/SKILL.md")
    assert "was not loaded" in skilled.render(env)


def test_home_skill_folder_outside_the_workspace(tb: Toolbox, home: Path) -> None:
    folder = write_skill(home / ".claude/skills", "mine", "mine", "Mine.", "Do it.")
    (folder / "ref.md").write_text("r\n")
    out = ok(tb.run("skill", {"skill": "mine"}))
    assert out["folder"] == str(folder) and out["files"] == ["ref.md"]
    assert "extra_roots" in out["note"]


# -- symlinks -------------------------------------------------------------------------


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_workspace_skill_linking_out_is_refused(
    tb: Toolbox, workspace: Path, tmp_path: Path, home: Path
) -> None:
    outside = write_skill(tmp_path / "outside", "evil", "evil", "Outside.")
    base = workspace / ".claude/skills"
    base.mkdir(parents=True)
    (base / "evil").symlink_to(outside)
    write_skill(base, "fine", "fine")
    inner = write_skill(workspace / "docs", "inner", "inner", "Linked inside.")
    (base / "inner").symlink_to(inner)
    out = ok(tb.run("skill", {}))
    assert [s["name"] for s in out["skills"]] == ["fine", "inner"]
    assert out["errors"][0]["name"] == "evil"
    assert "outside the workspace" in out["errors"][0]["message"]
    assert "outside the workspace" in err(tb.run("skill", {"skill": "evil"}), "EXECUTION_ERROR")


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_workspace_skill_file_or_dir_linking_out_is_refused(
    workspace: Path, tmp_path: Path, home: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: stolen\n---\nsecret\n")
    folder = workspace / ".skills" / "thief"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to(secret)
    (tmp_path / "elsewhere").mkdir()
    write_skill(tmp_path / "elsewhere", "x", "x")
    (workspace / ".agent").mkdir()
    (workspace / ".agent" / "skills").symlink_to(tmp_path / "elsewhere")
    found = discover(workspace)
    assert len(found) == 0
    assert {e.name for e in found.errors} == {"thief", "skills"}
    assert all("outside the workspace" in e.message for e in found.errors)


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_home_skills_may_link_anywhere(workspace: Path, tmp_path: Path, home: Path) -> None:
    shared = write_skill(tmp_path / "shared", "team", "team", "Team skill.")
    (home / ".claude/skills").mkdir(parents=True)
    (home / ".claude/skills/team").symlink_to(shared)
    # the workspace links to the same folder: refused there, loaded from the home
    (workspace / ".openlink").mkdir()
    (workspace / ".openlink" / "skills").symlink_to(home / ".claude/skills")
    found = discover(workspace)
    team = found.get("team")
    assert team is not None and team.scope == "home" and team.description == "Team skill."
    assert [e.scope for e in found.errors] == ["workspace"]


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_a_link_loop_in_a_skill_is_listed_not_entered(skilled: Toolbox, workspace: Path) -> None:
    folder = workspace / ".claude/skills/deploy"
    (folder / "loop").symlink_to(folder)
    assert ok(skilled.run("skill", {"skill": "deploy"}))["files"] == ["loop"]


# -- permission -----------------------------------------------------------------------


def test_permission_rule_by_name(make_toolbox: Any, workspace: Path, home: Path) -> None:
    write_skill(workspace / ".skills", "deploy", "Deploy", "Ship it.")
    write_skill(workspace / ".skills", "notes", "notes")
    tb = make_toolbox({"permissions": {"skill": {"Deploy": "deny"}}})
    for name in ("Deploy", "deploy", "DEPLOY"):
        message = err(tb.run("skill", {"skill": name}), "PERMISSION_DENIED")
        assert '"skill" = { "Deploy" = "deny" }' in message
    assert ok(tb.run("skill", {"skill": "notes"}))["name"] == "notes"
    # A denied skill is not offered.
    assert [s["name"] for s in ok(tb.run("skill", {}))["skills"]] == ["notes"]
    assert "Deploy" not in err(tb.run("skill", {"skill": "dep"}), "NOT_FOUND")


def test_permission_skill_is_allowed_by_default_and_deniable(
    make_toolbox: Any, workspace: Path, home: Path
) -> None:
    write_skill(workspace / ".skills", "x", "x")
    assert ok(make_toolbox().run("skill", {"skill": "x"}))["name"] == "x"
    err(make_toolbox({"permissions": {"skill": "deny"}}).run("skill", {}), "PERMISSION_DENIED")


def test_config_accepts_the_skill_permission(workspace: Path) -> None:
    config = load_config({"permissions": {"skill": {"deploy": "ask"}}}, workspace)
    assert config.permissions == {"skill": {"deploy": "ask"}}
    with pytest.raises(ConfigError, match="verb:object"):
        load_config({"permissions": {"skills": "allow"}}, workspace)


# -- the README -----------------------------------------------------------------------

README = Path(__file__).parents[2] / "README.md"


def test_readme_example_skill_loads(tb: Toolbox, workspace: Path, home: Path) -> None:
    section = README.read_text(encoding="utf-8").split("### Skills", 1)[1]
    example = section.split("```markdown\n", 1)[1].split("\n```", 1)[0] + "\n"
    folder = workspace / ".claude/skills/release"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(example, encoding="utf-8")
    (folder / "scripts" / "check.sh").write_text("true\n")
    out = ok(tb.run("skill", {"skill": "Release"}))
    assert out["name"] == "release" and out["description"].startswith("Cut a release")
    assert out["content"].startswith("# Releasing") and out["files"] == ["scripts/check.sh"]

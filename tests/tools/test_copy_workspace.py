"""copy_workspace_to_project: the plan, the real run matching it, protected paths, the
deploy permission, kill -9 at any moment, an unwritable target, and bad input."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from envelopes import err, ok
from local_tools.interact.base import PermissionRequest
from local_tools.interact.terminal import TerminalAsker

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes and signals")

ALLOW = {"permissions": {"deploy": "allow"}, "deploy": {"protected": ["CNAME"]}}


def tree(root: Path) -> dict[str, str]:
    """Every entry under `root`: files by content hash, links by text, folders as such."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return out


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def project(workspace: Path) -> tuple[Path, Path]:
    build, site = workspace / "build", workspace / "site"
    write(
        build,
        {
            "index.html": "<h1>new</h1>",
            "css/site.css": "body{}",
            "js/app.js": "go()",
            "js/app.js.map": "{}",
            "notes.txt": "not for the site",
            "same.json": '{"a": 1}',
            "README.md": "workspace readme must not replace the project's",
            "fonts/a.woff2": "font",
        },
    )
    (build / "empty").mkdir()
    os.symlink("css/site.css", build / "style.css")  # stays inside: copied as a link
    os.symlink("/etc/passwd", build / "passwd.html")  # points out: skipped
    os.symlink("../../secret.html", build / "js/up.html")  # climbs out: skipped
    write(
        site,
        {
            "index.html": "<h1>old</h1>",
            "same.json": '{"a": 1}',
            "old/gone.js": "bye",
            "old/deeper/gone.css": "bye",
            "README.md": "project readme",
            "local-tools.toml": "# project config\n",
            "CNAME": "example.org",
            ".git/HEAD": "ref: refs/heads/main\n",
            ".local-tools/state": "s",
        },
    )
    (site / ".git" / "refs" / "tags").mkdir(parents=True)  # empty, and git needs it
    return build, site


def test_the_dry_run_is_the_plan_and_changes_nothing(make_toolbox: Any, project: Any) -> None:
    _, site = project
    before = tree(site)
    out = ok(
        make_toolbox(ALLOW).run("copy_workspace_to_project", {"source": "build", "target": "site"})
    )
    assert out["dry_run"] is True and out["applied"] is False
    assert tree(site) == before
    assert {e["path"] for e in out["deletes"]} == {"old/gone.js", "old/deeper/gone.css"}
    copies = {e["path"]: e["action"] for e in out["copies"]}
    assert copies == {
        "index.html": "overwrite",
        "css/site.css": "new",
        "js/app.js": "new",
        "fonts/a.woff2": "new",
    }
    skipped = {e["path"]: e["reason"] for e in out["skipped"]}
    assert skipped["js/app.js.map"] == "source map"
    assert "not on the whitelist" in skipped["notes.txt"]
    assert skipped["README.md"] == "protected in the target"
    assert "outside the target" in skipped["passwd.html"]
    assert "outside the target" in skipped["js/up.html"]
    assert out["links"] == [{"path": "style.css", "to": "css/site.css"}]
    assert out["counts"]["unchanged"] == 1 and out["counts"]["protected"] >= 5
    assert out["bytes_copied"] == sum(e["size"] for e in out["copies"])


def test_the_real_run_does_exactly_what_the_dry_run_said(make_toolbox: Any, project: Any) -> None:
    build, site = project
    before = tree(site)
    tb = make_toolbox(ALLOW)
    args = {"source": "build", "target": "site"}
    plan = ok(tb.run("copy_workspace_to_project", args))
    done = ok(tb.run("copy_workspace_to_project", {**args, "dry_run": False}))
    assert done["applied"] is True
    assert {k: v for k, v in done.items() if k not in ("dry_run", "applied")} == {
        k: v for k, v in plan.items() if k not in ("dry_run", "applied")
    }
    # The expected tree, from the plan alone.
    expected = dict(before)
    for e in plan["deletes"]:
        del expected[e["path"]]
    source = tree(build)
    for e in plan["copies"]:
        expected[e["path"]] = source[e["path"]]
    for e in plan["links"]:
        expected[e["path"]] = "-> " + e["to"]
    for folder in ("css", "js", "fonts", "empty"):
        expected[folder] = "dir"
    del expected["old"], expected["old/deeper"]  # emptied folders go too
    assert tree(site) == expected
    # Protected paths are untouched; nothing is left beside the target.
    assert (site / "README.md").read_text() == "project readme"
    assert (site / "CNAME").read_text() == "example.org"
    assert (site / ".git" / "refs" / "tags").is_dir()
    assert sorted(p.name for p in site.parent.iterdir()) == ["build", "site"]
    # Deploying again changes nothing.
    again = ok(tb.run("copy_workspace_to_project", args))
    assert again["counts"]["delete"] == again["counts"]["copy_new"] == 0
    assert again["counts"]["overwrite"] == 0


def test_the_targets_config_toml_is_never_deleted_nor_overwritten(
    make_toolbox: Any, workspace: Path
) -> None:
    build, site = workspace / "build", workspace / "site"
    # Even with .toml on the whitelist, the source's config.toml does not replace the
    # target's; the target's is kept though the source has none at the top. Only the
    # top-level one is protected: a deeper config.toml is an ordinary file.
    write(build, {"index.html": "<p>new</p>", "config.toml": "from the workspace\n"})
    write(
        site,
        {
            "index.html": "<p>old</p>",
            "config.toml": "[server]\nport = 8080\n",
            "docs/config.toml": "old docs example\n",
        },
    )
    config = {"permissions": {"deploy": "allow"}, "deploy": {"extensions": [".html", ".toml"]}}
    tb = make_toolbox(config)
    args = {"source": "build", "target": "site"}
    plan = ok(tb.run("copy_workspace_to_project", args))
    assert {e["path"]: e["reason"] for e in plan["skipped"]} == {
        "config.toml": "protected in the target"
    }
    assert "config.toml" in plan["protected"]
    assert [e["path"] for e in plan["deletes"]] == ["docs/config.toml"]
    assert [e["path"] for e in plan["copies"]] == ["index.html"]
    ok(tb.run("copy_workspace_to_project", {**args, "dry_run": False}))
    assert (site / "config.toml").read_text() == "[server]\nport = 8080\n"
    assert (site / "index.html").read_text() == "<p>new</p>"
    assert not (site / "docs" / "config.toml").exists()


def test_modes_are_kept(make_toolbox: Any, project: Any) -> None:
    build, site = project
    (build / "js" / "app.js").chmod(0o640)
    (site / "old").chmod(0o750)
    (site / "CNAME").chmod(0o600)
    ok(
        make_toolbox(ALLOW).run(
            "copy_workspace_to_project", {"source": "build", "target": "site", "dry_run": False}
        )
    )
    assert (site / "js" / "app.js").stat().st_mode & 0o777 == 0o640
    assert (site / "CNAME").stat().st_mode & 0o777 == 0o600


def test_a_new_target_is_created(make_toolbox: Any, project: Any, workspace: Path) -> None:
    out = ok(
        make_toolbox(ALLOW).run(
            "copy_workspace_to_project", {"source": "build", "target": "dist/www", "dry_run": False}
        )
    )
    assert out["counts"]["delete"] == 0
    assert (workspace / "dist/www/index.html").read_text() == "<h1>new</h1>"


def test_the_real_run_asks_with_the_plan_and_a_refusal_changes_nothing(
    make_toolbox: Any, project: Any
) -> None:
    _, site = project
    before = tree(site)
    args = {"source": "build", "target": "site", "dry_run": False}
    message = err(make_toolbox().run("copy_workspace_to_project", args), "PERMISSION_DENIED")
    assert '"deploy"' in message
    shown = io.StringIO()
    tb = make_toolbox(asker=TerminalAsker(io.StringIO("d\n"), shown))
    err(tb.run("copy_workspace_to_project", args), "PERMISSION_DENIED")
    assert tree(site) == before
    screen = shown.getvalue()
    assert "deploy" in screen and "delete 3, copy 4 (3 new, 1 overwritten)" in screen  # CNAME too
    assert "            |   delete: old/gone.js" in screen  # the plan, one path a line

    tb = make_toolbox(asker=TerminalAsker(io.StringIO("o\n"), io.StringIO()))
    assert ok(tb.run("copy_workspace_to_project", args))["applied"] is True
    assert (site / "index.html").read_text() == "<h1>new</h1>"


def test_a_change_while_the_person_reads_the_plan_stops_the_run(
    make_toolbox: Any, project: Any
) -> None:
    build, site = project
    before = tree(site)

    class PersonWhileAFileLands:  # approves, but meanwhile a build writes a new file
        async def ask(self, request: PermissionRequest) -> str:
            (build / "late.js").write_text("late")
            return "once"

    tb = make_toolbox(asker=PersonWhileAFileLands())
    args = {"source": "build", "target": "site", "dry_run": False}
    assert "changed while the plan" in err(tb.run("copy_workspace_to_project", args), "CONFLICT")
    assert tree(site) == before


def test_bad_input(make_toolbox: Any, project: Any, workspace: Path) -> None:
    tb = make_toolbox(ALLOW)
    run = lambda **a: tb.run("copy_workspace_to_project", {"dry_run": False, **a})  # noqa: E731
    before = tree(workspace)
    assert "overlap" in err(run(source="build", target="build/out"), "INVALID_INPUT")
    assert "overlap" in err(run(source="site/old", target="site"), "INVALID_INPUT")
    assert "overlap" in err(run(source="build", target="build"), "INVALID_INPUT")
    err(run(source="missing", target="site"), "NOT_FOUND")
    assert "not a directory" in err(run(source="site/CNAME", target="x"), "INVALID_INPUT")
    assert "not a folder" in err(run(source="build", target="site/CNAME"), "INVALID_INPUT")
    err(run(source="build", target="."), "INVALID_INPUT")  # the workspace root itself
    extra = workspace.parent / "served"
    extra.mkdir()
    rooted = make_toolbox({**ALLOW, "workspace": {"writable_roots": [str(extra)]}})
    args = {"source": "build", "target": str(extra), "dry_run": False}
    assert "writable root" in err(rooted.run("copy_workspace_to_project", args), "INVALID_INPUT")
    err(run(source="build", target="../elsewhere"), "PERMISSION_DENIED")
    err(tb.run("copy_workspace_to_project", {"source": "build"}), "INVALID_INPUT")
    assert tree(workspace) == before


def test_a_leftover_of_a_killed_run_is_cleaned_up(make_toolbox: Any, project: Any) -> None:
    _, site = project
    dead = subprocess.Popen(["true"])
    dead.wait()
    leftover = site.parent / f".site.deploy-{dead.pid}-00ff00ff"
    write(leftover, {"index.html": "half"})
    out = ok(
        make_toolbox(ALLOW).run(
            "copy_workspace_to_project", {"source": "build", "target": "site", "dry_run": False}
        )
    )
    assert not leftover.exists()
    assert any("interrupted deploy" in n for n in out["notes"])


# ------------------------------------------------------------------ kill -9

DEPLOY = textwrap.dedent(
    """
    import json, sys
    from local_tools import Toolbox
    tb = Toolbox(sys.argv[1], {"permissions": {"deploy": "allow"}}, state_dir=sys.argv[2])
    args = {"source": "build", "target": "site", "dry_run": False}
    tb.run("list_dir", {"path": "."})  # warm: the timed part is the deploy alone
    print("ready", flush=True)
    env = tb.run("copy_workspace_to_project", args)
    print(json.dumps(env["success"]), flush=True)
    """
)


def _big_project(ws: Path) -> None:
    for n in range(600):
        write(ws / "build", {f"pages/{n % 20}/p{n}.html": f"new {n}" * 50})
        write(ws / "site", {f"pages/{n % 20}/p{n}.html": f"old {n}", f"stale/{n}.js": "x"})
    write(ws / "site", {"README.md": "keep", ".git/HEAD": "ref"})


def test_kill_9_at_any_moment_leaves_the_old_tree_or_the_new_one(tmp_path: Path) -> None:
    template = tmp_path / "template"
    _big_project(template)
    ws, state = tmp_path / "ws", tmp_path / "state"

    def reset() -> None:
        shutil.rmtree(ws, ignore_errors=True)
        shutil.copytree(template, ws, symlinks=True)

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", DEPLOY, str(ws), str(state)], stdout=subprocess.PIPE, text=True
        )

    def ready(proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"

    reset()
    old = tree(ws / "site")
    proc = start()
    ready(proc)
    began = time.monotonic()
    assert proc.communicate(timeout=120)[0].strip() == "true"
    took = time.monotonic() - began
    new = tree(ws / "site")
    assert new != old
    outcomes = []
    for n in range(8):  # kills spread over the deploy, from its start to past its end
        reset()
        proc = start()
        ready(proc)
        time.sleep(took * 0.16 * n)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        now = tree(ws / "site")
        assert now in (old, new), f"a kill {0.16 * n:.2f} into the deploy left a mixed tree"
        outcomes.append("new" if now == new else "old")
        # The next run cleans up whatever the killed one left and finishes the job.
        assert start().communicate(timeout=120)[0].strip().endswith("true")
        assert tree(ws / "site") == new
        assert sorted(p.name for p in ws.iterdir()) == ["build", "site"]
    print("outcomes of the kills:", outcomes)


# ------------------------------------------------------------------ an unwritable target

AS_NOBODY = textwrap.dedent(
    """
    import json, sys
    from local_tools import Toolbox
    tb = Toolbox(sys.argv[1], {"permissions": {"deploy": "allow"}}, state_dir=sys.argv[2])
    args = {"source": "build", "target": "site", "dry_run": False}
    env = tb.run("copy_workspace_to_project", args)
    print(json.dumps(env))
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the deploy as another user")
def test_an_unwritable_target_file_fails_with_nothing_changed() -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv (util-linux) to run the deploy as the nobody user")
    top = Path(tempfile.mkdtemp(prefix="lt-deploy-"))
    try:
        top.chmod(0o755)
        ws, state = top / "ws", top / "state"
        write(ws, {"build/index.html": "new", "build/app.js": "new", "site/app.js": "old"})
        write(ws, {"site/locked/gone.js": "root's file"})
        for path in [ws, state, *ws.rglob("*")] if state.mkdir() is None else []:
            os.chown(path, 65534, 65534)
        locked = ws / "site" / "locked"
        os.chown(locked, 0, 0)  # a folder the deploying user may not change
        os.chown(locked / "gone.js", 0, 0)
        before = tree(ws / "site")
        probe = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-c",
                "import local_tools",
            ],
            capture_output=True,
            text=True,
        )
        if probe.returncode != 0:
            pytest.skip(f"the nobody user cannot import local_tools here: {probe.stderr[-200:]}")
        run = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-c",
                AS_NOBODY,
                str(ws),
                str(state),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        env = json.loads(run.stdout)
        assert env["error"]["error_code"] == "PERMISSION_DENIED", env
        assert (
            "locked/gone.js" in env["error"]["message"]
            and "nothing was changed" in env["error"]["message"]
        )
        assert tree(ws / "site") == before
        assert sorted(p.name for p in ws.iterdir()) == ["build", "site"]
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ------------------------------------------------------------------ attacks (from a review)


class _Person:
    """Approves the deploy; `meanwhile` runs while they read the plan, as a background
    command of the agent's could."""

    def __init__(self, meanwhile: Any) -> None:
        self.meanwhile = meanwhile

    async def ask(self, request: PermissionRequest) -> str:
        self.meanwhile()
        return "once"


def test_a_folder_swapped_for_a_symlink_during_approval_leads_nowhere(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"  # outside the workspace
    write(victim, {"proj/index.html": "<h1>mine</h1>", "proj/keep.txt": "keep"})
    write(workspace, {"a/proj/index.html": "<h1>decoy</h1>", "a/proj/keep.txt": "k"})
    write(workspace, {"build/index.html": "<h1>attacker</h1>"})

    def swap() -> None:
        (workspace / "a").rename(workspace / "a-old")
        (workspace / "a").symlink_to(victim)

    tb = make_toolbox(asker=_Person(swap))
    args = {"source": "build", "target": "a/proj", "dry_run": False}
    env = tb.run("copy_workspace_to_project", args)
    assert env["success"] is False, env
    assert tree(victim / "proj") == {
        "index.html": tree(victim / "proj")["index.html"],
        "keep.txt": tree(victim / "proj")["keep.txt"],
    }
    assert (victim / "proj" / "index.html").read_text() == "<h1>mine</h1>"


def test_a_target_swapped_for_a_symlink_during_approval_links_nothing_in(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    secrets = tmp_path / "ssh"
    write(secrets, {"id_ed25519": "KEY"})
    write(workspace, {"build/id_ed25519": "x", "build/index.html": "new", "site/id_ed25519": "y"})

    def swap() -> None:
        (workspace / "site").rename(workspace / "site-old")
        (workspace / "site").symlink_to(secrets)

    tb = make_toolbox(asker=_Person(swap))
    env = tb.run(
        "copy_workspace_to_project", {"source": "build", "target": "site", "dry_run": False}
    )
    assert env["success"] is False
    assert (workspace / "site").is_symlink()  # left as the swap made it
    assert os.stat(secrets / "id_ed25519").st_nlink == 1  # never hard-linked anywhere


def test_a_planted_backup_symlink_is_never_restored(
    make_toolbox: Any, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "repo"
    write(outside, {".git/config": "token=SECRET"})
    write(workspace, {"build/index.html": "new"})
    (workspace / ".site.deploy-old-999999-ab").symlink_to(outside)
    out = ok(
        make_toolbox(ALLOW).run(
            "copy_workspace_to_project", {"source": "build", "target": "site", "dry_run": False}
        )
    )
    assert tree(workspace / "site") == {"index.html": tree(workspace / "build")["index.html"]}
    assert out["notes"] == []
    assert (workspace / ".site.deploy-old-999999-ab").is_symlink()  # not ours: untouched


def test_a_chain_of_links_climbing_out_is_not_copied(make_toolbox: Any, workspace: Path) -> None:
    deep = workspace / "build" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "up").symlink_to("../..")  # lands on the top: fine by itself
    (deep / "pw.html").symlink_to("up/../../../etc/passwd")  # `..` after a link: out
    (deep / "ok.html").symlink_to("up/index.html")
    write(workspace, {"build/index.html": "i"})
    out = ok(
        make_toolbox(ALLOW).run(
            "copy_workspace_to_project", {"source": "build", "target": "site", "dry_run": False}
        )
    )
    skipped = {e["path"] for e in out["skipped"]}
    assert "a/b/pw.html" in skipped and not (workspace / "site/a/b/pw.html").is_symlink()
    assert (workspace / "site/a/b/ok.html").read_text() == "i"


def test_a_target_holding_a_root_or_the_state_folder_is_refused(
    make_toolbox: Any, workspace: Path
) -> None:
    write(workspace, {"build/index.html": "i", "proj/vendor/lib.js": "v", "proj/x.js": "x"})
    tb = make_toolbox({**ALLOW, "workspace": {"extra_roots": ["proj/vendor"]}})
    args = {"source": "build", "target": "proj", "dry_run": False}
    assert "contains the" in err(tb.run("copy_workspace_to_project", args), "PERMISSION_DENIED")
    assert (workspace / "proj/vendor/lib.js").exists()
    tb = make_toolbox(ALLOW, state_dir=workspace / "proj" / ".state")
    assert "state folder" in err(tb.run("copy_workspace_to_project", args), "INVALID_INPUT")
    assert "protected" in err(
        tb.run("copy_workspace_to_project", {**args, "target": ".git/x"}), "INVALID_INPUT"
    )


def test_the_file_rules_still_hold(make_toolbox: Any, workspace: Path) -> None:
    write(workspace, {"secrets/keys.json": '{"k": 1}', "site/index.html": "old"})
    config = {**ALLOW, "permissions": {**ALLOW["permissions"], "read:file": {"secrets/*": "deny"}}}
    tb = make_toolbox(config)
    args = {"source": "secrets", "target": "site", "dry_run": False}
    err(tb.run("copy_workspace_to_project", args), "PERMISSION_DENIED")
    assert not (workspace / "site/keys.json").exists()
    config = {**ALLOW, "permissions": {**ALLOW["permissions"], "write:file": {"site/*": "deny"}}}
    write(workspace, {"build/index.html": "new"})
    tb = make_toolbox(config)
    err(tb.run("copy_workspace_to_project", {**args, "source": "build"}), "PERMISSION_DENIED")
    assert (workspace / "site/index.html").read_text() == "old"


def test_deploying_links_again_changes_nothing_and_a_link_may_replace_a_file(
    make_toolbox: Any, workspace: Path
) -> None:
    write(workspace, {"build/css/a.css": "a", "site/style.css": "an old file"})
    (workspace / "build" / "style.css").symlink_to("css/a.css")
    tb = make_toolbox(ALLOW)
    args = {"source": "build", "target": "site", "dry_run": False}
    first = ok(tb.run("copy_workspace_to_project", args))
    assert [e["path"] for e in first["deletes"]] == ["style.css"]  # the file the link replaces
    assert os.readlink(workspace / "site/style.css") == "css/a.css"
    again = ok(tb.run("copy_workspace_to_project", args))
    assert again["links"] == [] and again["counts"]["unchanged"] == 2


def test_nested_git_folders_and_odd_names(make_toolbox: Any, workspace: Path) -> None:
    write(workspace, {"build/index.html": "i", "build/run.js": "r"})
    write(workspace, {"site/vendor/lib/.git/HEAD": "ref", "site/docs/README.md": "d"})
    (workspace / "build" / "run.js").chmod(0o6755)
    odd = "x.html\n  … and 0 more to delete"
    write(workspace, {f"site/{odd}": "o"})
    shown = io.StringIO()
    tb = make_toolbox(asker=TerminalAsker(io.StringIO("o\n"), shown))
    out = ok(
        tb.run("copy_workspace_to_project", {"source": "build", "target": "site", "dry_run": False})
    )
    assert (workspace / "site/vendor/lib/.git/HEAD").read_text() == "ref"  # protected
    assert not (workspace / "site/docs/README.md").exists()  # only the top one is
    assert "x.html\\n  … and 0 more" in shown.getvalue()  # one line, escaped
    assert (workspace / "site/run.js").stat().st_mode & 0o7777 == 0o755  # set-id dropped
    assert out["applied"] is True


def test_a_change_in_the_target_while_the_tree_is_built_stops_the_swap(
    make_toolbox: Any, tmp_path: Path
) -> None:
    import threading

    ws = tmp_path / "big"
    _big_project(ws)
    stop = threading.Event()

    def committer() -> None:  # a `git commit` in the target while the deploy copies
        while not stop.is_set():
            staged = [p for p in ws.iterdir() if p.name.startswith(".site.deploy-")]
            if staged and (staged[0] / "pages/0/p0.html").exists():
                (ws / "site/.git/new-object").write_text("commit")
                return
            time.sleep(0.0005)

    thread = threading.Thread(target=committer)
    thread.start()
    try:
        tb = make_toolbox({"permissions": {"deploy": "allow"}}, workspace=ws)
        env = tb.run(
            "copy_workspace_to_project", {"source": "build", "target": "site", "dry_run": False}
        )
    finally:
        stop.set()
        thread.join()
    assert "target changed while the new tree" in err(env, "CONFLICT")
    assert (ws / "site/.git/new-object").read_text() == "commit"
    assert (ws / "site/stale/0.js").exists()  # the old tree, untouched
    assert sorted(p.name for p in ws.iterdir()) == ["build", "site"]


def test_a_fifo_is_never_opened_for_copying(tmp_path: Path) -> None:
    from local_tools.deploy.tree import NotRegular, open_regular
    from local_tools.security.dirfd import Dir

    os.mkfifo(tmp_path / "pipe.js")
    folder = Dir(os.open(tmp_path, os.O_RDONLY), str(tmp_path))
    try:
        with pytest.raises(NotRegular):
            open_regular(folder, "pipe.js")  # returns at once: no writer needed
    finally:
        folder.close()

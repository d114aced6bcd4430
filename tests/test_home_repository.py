"""A home folder that is a git repository (``git init ~``, common for dotfiles).

A command acts on the folder the user names or stands in; finding the workspace
from a subfolder may widen it to the nearest repository's root, but never to a
folder refused as a workspace (the home, Desktop, Documents, Downloads, a
filesystem root): every project below such a home would be taken as the whole
home and refused, on the command line, with ``-C``, and silently in the hooks.
The home's ``.git`` is made by hand, so these run without git.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import COMMAND, write

from snapshotter.engine.gitstore.location import find_workspace


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """A home folder holding a git repository of its dotfiles, and a project with a subfolder."""
    home = tmp_path / "user"
    write(home, {".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".bashrc": "alias ll='ls -l'\n"})
    for name in ("objects", "refs/heads"):
        (home / ".git" / name).mkdir(parents=True)
    write(home, {"proj/app.py": "print('hi')\n", "proj/src/mod.py": "x = 1\n"})
    return home


def _env(user_home: Path) -> dict[str, str]:
    """The user's real situation: HOME is the repository, the store in its default place below it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SNAPSHOTTER_", "XDG_"))}
    return {**env, "HOME": str(user_home), "SNAPSHOTTER_NO_WATCHER": "1"}


def _run(user_home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = _env(user_home)
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120, stdin=subprocess.DEVNULL
    )


def test_a_project_below_a_home_repository_is_its_own_workspace(user_home: Path) -> None:
    """Standing in the project: the project is snapshotted, never the home; from its
    subfolder afterwards, the project is found by its store."""
    proj = user_home / "proj"
    made = _run(user_home, "--json", "snapshot", "-m", "first", cwd=proj)
    assert made.returncode == 0, made.stderr
    listed = _run(user_home, "--json", "status", cwd=proj / "src")
    assert listed.returncode == 0, listed.stderr
    where = _run(user_home, "--json", "where", cwd=proj / "src")
    assert where.returncode == 0, where.stderr
    assert json.loads(where.stdout)["result"]["workspace"] == str(proj.resolve())


def test_dash_c_names_a_project_below_a_home_repository(user_home: Path, tmp_path: Path) -> None:
    proj = user_home / "proj"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    made = _run(user_home, "-C", str(proj), "--json", "snapshot", "-m", "named", cwd=elsewhere)
    assert made.returncode == 0, made.stderr
    shown = _run(user_home, "-C", str(proj), "--json", "log", cwd=elsewhere)
    assert [entry["message"] for entry in json.loads(shown.stdout)["result"]] == ["named"]


def test_a_hook_below_a_home_repository_records_the_project(user_home: Path) -> None:
    """The hooks never refused out loud: they recorded nothing. Now a turn is recorded."""
    proj = user_home / "proj"
    for event, payload in (
        ("UserPromptSubmit", {"prompt": "edit it"}),
        ("PreToolUse", {"tool_use_id": "t1", "tool_name": "Edit"}),
    ):
        done = subprocess.run(
            [*COMMAND, "hook", "claude-code", event],
            input=json.dumps({"session_id": "s1", "cwd": str(proj), "hook_event_name": event, **payload}),
            capture_output=True,
            text=True,
            env=_env(user_home),
            timeout=60,
        )
        assert done.returncode == 0 and done.stderr == "", done
    shown = _run(user_home, "--json", "log", cwd=proj)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["result"], "the hook recorded nothing"
    status = _run(user_home, "--json", "hooks", "status", cwd=proj)
    assert json.loads(status.stdout)["result"]["last_failure"] is None


def test_the_workspace_is_never_widened_to_a_refused_repository_root(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(user_home))
    store_home = tmp_path / "stores"
    proj = str((user_home / "proj").resolve())
    assert find_workspace(os.path.join(proj, "src"), store_home) == os.path.join(proj, "src")
    assert find_workspace(proj, store_home) == proj
    assert find_workspace(str(user_home.resolve()), store_home) == str(user_home.resolve())  # named: taken as it is
    write(user_home, {"Documents/.git/HEAD": "ref: refs/heads/main\n", "Documents/notes/a.txt": "a\n"})
    notes = str((user_home / "Documents" / "notes").resolve())
    assert find_workspace(notes, store_home) == notes
    write(user_home, {"proj/.git/HEAD": "ref: refs/heads/main\n"})  # a repository of its own still is the root
    assert find_workspace(os.path.join(proj, "src"), store_home) == proj


def test_a_home_repositorys_rules_and_index_do_not_reach_a_project_below_it(user_home: Path) -> None:
    """A dotfiles repository in the home often ignores everything (``*``) and tracks a
    few dotfiles: its rules are about the home, not the project. Taken as the
    project's repository they made every snapshot of it silently empty."""
    write(user_home, {".gitignore": "*\n", ".git/info/exclude": "*.py\n"})
    proj = user_home / "proj"
    made = _run(user_home, "--json", "snapshot", "-m", "first", cwd=proj)
    assert made.returncode == 0, made.stderr
    shown = _run(user_home, "--json", "status", cwd=proj)
    assert shown.returncode == 0, shown.stderr
    (proj / "app.py").unlink()
    gone = _run(user_home, "--json", "status", cwd=proj)
    assert [(c["path"], c["status"]) for c in json.loads(gone.stdout)["result"]] == [("app.py", "deleted")]

"""A restore never overwrites or deletes a file the current scan does not track
(issue: 'Restore destroys files it does not track'): ignored now, default-excluded,
too large, unreadable. A whole restore keeps them and says so; restoring one by
name is refused unless the caller overrides, and then its content is saved first."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import deny_reading, git, git_env, needs_git, read_tree, write

from snapshotter import RestoreConflict, SkipReason


def kept(result: object) -> dict[str, str]:
    return {item.path: item.reason.value for item in result.kept}  # type: ignore[attr-defined]


def test_a_file_ignored_since_the_snapshot_keeps_its_edit(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"settings.local": "old\n", "app.py": "v1\n"})
    snap = make(exclude=["settings.local"])  # the caller's rule, before and after the restore alike
    everything = make()
    old = everything.snapshot()
    write(ws, {"settings.local": "my edit\n", "app.py": "v2\n"})
    result = snap.restore(old.id)
    assert (ws / "settings.local").read_text() == "my edit\n"
    assert (ws / "app.py").read_text() == "v1\n"
    assert kept(result) == {"settings.local": "ignored"}
    assert "settings.local" not in result.written_paths


def test_a_file_only_a_rule_added_after_the_target_ignores_is_restored(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Issue: x.log recorded, then edited under a new '*.log' rule; restore(A) kept
    the edit (listed as kept, ignored), status() then said modified, and undo() ok."""
    write(ws, {"x.log": "recorded\n", "app.py": "v1\n", ".gitignore": "build/\n"})
    snap = make()
    a = snap.snapshot()
    write(ws, {"x.log": "the agent's\n", ".gitignore": "build/\n*.log\n", "app.py": "v2\n"})
    result = snap.restore(a.id)
    assert (ws / "x.log").read_text() == "recorded\n" and (ws / ".gitignore").read_text() == "build/\n"
    assert kept(result) == {} and "x.log" in result.written_paths
    assert snap.status() == []
    assert result.safety_snapshot_id is not None  # it holds the agent's x.log: the restore can be taken back
    assert snap.undo().ok
    assert (ws / "x.log").read_text() == "the agent's\n" and (ws / ".gitignore").read_text() == "build/\n*.log\n"


def test_undo_after_a_checkpoint_restores_a_file_a_new_rule_hides(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"logs/x.log": "recorded\n", "app.py": "v1\n"})
    snap = make()
    snap.checkpoint()
    write(ws, {"logs/x.log": "the agent's\n", ".gitignore": "logs/\n"})
    undone = snap.undo()
    assert undone.ok and (ws / "logs/x.log").read_text() == "recorded\n" and not (ws / ".gitignore").exists()
    assert snap.status() == [] and kept(undone.restore) == {}
    assert snap.redo().ok  # and back: what the undo replaced, the hidden file included
    assert (ws / "logs/x.log").read_text() == "the agent's\n" and (ws / ".gitignore").read_text() == "logs/\n"


def test_rules_the_restore_leaves_decide_not_only_the_root_ones(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"sub/a.tmp": "a1\n", "sub/.gitignore": "*.bak\n", "keep/b.tmp": "b1\n", "keep/.gitignore": "*.tmp\n"})
    snap = make()
    first = snap.snapshot()  # keep/b.tmp is not in it: ignored already
    assert "keep/b.tmp" not in {c.path for c in snap.status()}
    write(ws, {"sub/a.tmp": "a2\n", "sub/.gitignore": "*.bak\n*.tmp\n", ".env": "SECRET=1\n"})
    result = snap.restore(first.id)
    assert (ws / "sub/a.tmp").read_text() == "a1\n"  # under sub/'s rules as the restore writes them back
    assert (ws / "keep/b.tmp").read_text() == "b1\n" and (ws / ".env").exists()
    assert kept(result) == {}


def test_a_kept_file_that_already_holds_the_targets_content_is_not_listed(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {".env": "SECRET=1\n", "a.txt": "a\n"})
    everything = make(use_default_excludes=False)
    with_secret = everything.snapshot()
    everything.close()
    write(ws, {"a.txt": "b\n"})
    result = make().restore(with_secret.id)
    assert kept(result) == {} and (ws / "a.txt").read_text() == "a\n"
    write(ws, {".env": "SECRET=2\n"})
    assert kept(make().restore(with_secret.id)) == {".env": "ignored"}
    assert (ws / ".env").read_text() == "SECRET=2\n"


def test_an_env_file_recorded_by_another_instance_is_never_replaced(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {".env": "SECRET=old\n", "a.txt": "a\n"})
    everything = make(use_default_excludes=False)
    with_secret = everything.snapshot()
    everything.close()
    write(ws, {".env": "SECRET=current\n"})
    default = make()
    result = default.restore(with_secret.id)
    assert (ws / ".env").read_text() == "SECRET=current\n"
    assert kept(result) == {".env": "ignored"}
    with pytest.raises(RestoreConflict, match=r"\.env \(ignored\)") as refused:
        default.restore(with_secret.id, files=[".env"])
    assert "overwrite_untracked=True" in str(refused.value) and "--overwrite-untracked" in refused.value.for_cli()
    assert (ws / ".env").read_text() == "SECRET=current\n"


def test_a_new_file_over_the_size_cap_is_never_replaced_by_an_old_small_one(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"data.bin": b"\1" * 10, "a.txt": "a\n"})
    snap = make(max_new_file_size=1000)
    small = snap.snapshot()
    (ws / "data.bin").unlink()
    snap.snapshot()
    write(ws, {"data.bin": b"\2" * 5000})  # new again, and too large to record
    result = snap.restore(small.id)
    assert (ws / "data.bin").read_bytes() == b"\2" * 5000
    assert kept(result) == {"data.bin": "too-large"}


def test_an_unreadable_file_is_never_overwritten(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"locked.txt": "v1\n"})
    snap = make()
    first = snap.snapshot()
    (ws / "locked.txt").unlink()
    snap.snapshot()
    write(ws, {"locked.txt": "new and private\n"})
    deny_reading(monkeypatch, "locked.txt")
    result = snap.restore(first.id)
    assert (ws / "locked.txt").read_text() == "new and private\n"
    assert kept(result) == {"locked.txt": "unreadable"}
    with pytest.raises(RestoreConflict, match="unreadable"):
        snap.restore(first.id, files=["locked.txt"], overwrite_untracked=True)  # its content cannot be saved
    assert (ws / "locked.txt").read_text() == "new and private\n"


def test_an_unreadable_file_kept_as_recorded_is_named(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The scan keeps a file it cannot read as last recorded, which may be what the
    target holds: the restore cannot tell, leaves it alone and says so."""
    write(ws, {"locked.txt": "v1\n", "a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"locked.txt": "edited, and now unreadable\n", "a.txt": "changed\n"})
    deny_reading(monkeypatch, "locked.txt")
    selected = snap.restore(first.id, files=["a.txt"])  # outside the selection: not the restore's business
    assert kept(selected) == {} and selected.written_paths == ("a.txt",)
    write(ws, {"a.txt": "changed\n"})
    result = snap.restore(first.id)
    assert kept(result) == {"locked.txt": "unreadable"}
    assert (ws / "locked.txt").read_text() == "edited, and now unreadable\n"
    assert result.written_paths == ("a.txt",) and (ws / "a.txt").read_text() == "a\n"


def test_an_ignored_file_in_the_way_after_a_missing_folder_is_kept(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The target's ``a/new.txt`` needs no look (no ``a/`` stands in the workspace),
    nor ``b.txt`` (nothing stands there): the search for untracked files in the way
    goes on past them to ``z.secret``."""
    write(ws, {"a/new.txt": "new\n", "b.txt": "b\n", "z.secret": "recorded\n"})
    everything = make()
    first = everything.snapshot()
    everything.close()
    (ws / "a/new.txt").unlink()
    (ws / "a").rmdir()
    (ws / "b.txt").unlink()
    write(ws, {"z.secret": "mine\n"})
    result = make(exclude=["*.secret"]).restore(first.id)
    assert (ws / "z.secret").read_text() == "mine\n"
    assert kept(result) == {"z.secret": "ignored"}
    assert result.written_paths == ("a/new.txt", "b.txt") and (ws / "a/new.txt").read_text() == "new\n"


def test_overwriting_untracked_files_saves_them_first(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"settings.local": "old\n", "node_modules/x/index.js": "old js\n", "a.txt": "a\n"})
    everything = make(use_default_excludes=False)
    first = everything.snapshot()
    everything.close()
    write(ws, {"settings.local": "my edit\n", "node_modules/x/index.js": "new js\n"})
    snap = make(exclude=["settings.local"])  # the caller's rule: a workspace's would not keep it (see below)
    with pytest.raises(RestoreConflict, match="settings.local"):
        snap.restore(first.id, files=["settings.local"])
    plan = snap.restore(first.id, files=["settings.local", "node_modules"], dry_run=True, overwrite_untracked=True)
    assert set(plan.written_paths) == {"settings.local", "node_modules/x/index.js"}
    assert (ws / "settings.local").read_text() == "my edit\n"  # a dry run writes nothing
    done = snap.restore(first.id, files=["settings.local", "node_modules"], overwrite_untracked=True)
    assert (ws / "settings.local").read_text() == "old\n"
    assert (ws / "node_modules/x/index.js").read_text() == "old js\n"
    assert done.safety_snapshot_id is not None
    back = snap.restore(done.safety_snapshot_id, files=["settings.local", "node_modules"], overwrite_untracked=True)
    assert (ws / "settings.local").read_text() == "my edit\n"  # the safety snapshot held the replaced content
    assert (ws / "node_modules/x/index.js").read_text() == "new js\n"
    assert back.kept == ()
    assert kept(snap.restore(first.id)) == {"node_modules/x/index.js": "ignored", "settings.local": "ignored"}
    assert (ws / "settings.local").read_text() == "my edit\n"


def test_what_is_in_the_way_inside_an_ignored_folder_is_kept_but_missing_files_are_written(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"build/a.o": "a1", "build/b.o": "b1", "src.c": "c"})
    first = make().snapshot()  # build/ is tracked: no rule yet
    snap = make(exclude=["build/"])
    write(ws, {"build/a.o": "a2"})
    (ws / "build/b.o").unlink()
    result = snap.restore(first.id)
    assert (ws / "build/a.o").read_text() == "a2"  # in the way, ignored: kept
    assert (ws / "build/b.o").read_text() == "b1"  # nothing there to lose: written
    assert kept(result) == {"build/a.o": "ignored"}
    assert SkipReason("ignored") is SkipReason.IGNORED
    write(ws, {".gitignore": "build/\n", "build/a.o": "a3"})
    assert kept(make().restore(first.id)) == {}  # a rule the restore deletes hides nothing
    assert (ws / "build/a.o").read_text() == "a1" and not (ws / ".gitignore").exists()


@needs_git
def test_git_status_is_clean_after_restoring_over_a_new_ignore_rule(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """git as the oracle: the target committed, the agent's edits made, the
    snapshot restored; git sees the commit again, nothing modified or hidden."""
    env = git_env(tmp_path)
    write(ws, {"x.log": "recorded\n", "src/y.log": "y1\n", "app.py": "v1\n"})
    git("init", "-q", cwd=ws, env=env)
    git("add", "-A", cwd=ws, env=env)
    git("commit", "-q", "-m", "A", cwd=ws, env=env)
    snap = make()
    a = snap.snapshot()
    assert a.tree_id == git("rev-parse", "HEAD^{tree}", cwd=ws, env=env).strip()
    write(ws, {"x.log": "edited\n", "src/y.log": "y2\n", "src/.gitignore": "*.log\n", ".gitignore": "x.log\n"})
    snap.restore(a.id)
    assert git("status", "--porcelain", "--ignored", cwd=ws, env=env) == ""


def test_a_symlink_only_a_rule_the_restore_takes_away_hides_is_restored(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Found by the model (--long): the rule holds for symlinks as for files."""
    import os

    os.symlink("a", ws / "keep.log")
    write(ws, {"a": "a\n"})
    snap = make()
    first = snap.snapshot()
    (ws / "keep.log").unlink()
    os.symlink("elsewhere", ws / "keep.log")
    write(ws, {".gitignore": "*.log\n"})
    result = snap.restore(first.id)
    assert os.readlink(ws / "keep.log") == "a" and kept(result) == {}
    assert snap.undo().ok and os.readlink(ws / "keep.log") == "elsewhere"


# -- rules from inside the workspace never keep a path the target holds (issue 47, item 1) ----------------

_RULE_FILES = {
    "pyproject.toml": ("pyproject.toml", '[tool.snapshotter]\nexclude = ["src/"]\n'),
    "snapshotter.toml": ("snapshotter.toml", 'exclude = ["src/"]\n'),
    "info/exclude": (".git/info/exclude", "src/\n"),
    "gitignore": (".gitignore", "src/\n"),
}


@pytest.mark.parametrize("form", sorted(_RULE_FILES))
def test_a_rule_the_agent_writes_never_keeps_its_edit_through_a_restore(
    ws: Path, home: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's repro, from the command line: snapshot `before`; the agent
    excludes src/ (in any file it can write) and edits src/app.py; a restore
    brings the recorded app.py back, and undo brings the agent's edit back."""
    from snapshotter.frontends.cli.cli import main

    base = ["-C", str(ws), "--home", str(home)]
    write(ws, {"src/app.py": "recorded\n", "README": "r\n"})
    (ws / ".git" / "info").mkdir(parents=True)
    assert main(["snapshot", *base, "--label", "before"]) == 0
    rule_file, rule = _RULE_FILES[form]
    write(ws, {rule_file: rule, "src/app.py": "the agent's\n"})
    capsys.readouterr()
    assert main(["restore", *base, "--yes", "before"]) == 0
    out = capsys.readouterr().out
    assert (ws / "src/app.py").read_text() == "recorded\n", out
    assert "keep src/app.py" not in out
    assert main(["undo", *base]) == 0
    assert (ws / "src/app.py").read_text() == "the agent's\n"
    assert (ws / rule_file).read_text() == rule


def test_a_restore_over_a_workspace_rule_saves_one_safety_snapshot(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"x.log": "recorded\n", "app.py": "v1\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"x.log": "the agent's\n", ".gitignore": "*.log\n", "app.py": "v2\n"})
    before = {info.id for info in snap.list(limit=None)}
    result = snap.restore(first.id)
    made = [info for info in snap.list(limit=None) if info.id not in before]
    assert [info.id for info in made] == [result.safety_snapshot_id]
    assert (ws / "x.log").read_text() == "recorded\n"


def test_a_folder_a_workspace_rule_hides_in_the_way_of_a_file_is_saved_then_replaced(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"n": "recorded file\n", "a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    (ws / "n").unlink()
    write(ws, {"n/x.log": "the agent's log\n", ".gitignore": "*.log\n"})
    result = snap.restore(first.id)
    assert (ws / "n").read_text() == "recorded file\n" and kept(result) == {}
    assert snap.undo().ok
    assert (ws / "n/x.log").read_text() == "the agent's log\n"


def test_a_file_a_workspace_rule_hides_in_the_way_of_a_folder_is_saved_then_replaced(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"n/x.txt": "recorded\n", "a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    import shutil

    shutil.rmtree(ws / "n")
    write(ws, {"n": "the agent's file\n", ".git/info/exclude": "n\n"})
    result = snap.restore(first.id)
    assert (ws / "n/x.txt").read_text() == "recorded\n" and kept(result) == {}
    assert snap.undo().ok
    assert (ws / "n").read_text() == "the agent's file\n"


def test_a_caller_rule_in_the_way_of_a_file_still_refuses_the_restore(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"n": "recorded file\n", "a.txt": "a\n"})
    snap = make(exclude=["*.secret"])
    first = snap.snapshot()
    (ws / "n").unlink()
    write(ws, {"n/x.secret": "mine\n"})
    with pytest.raises(RestoreConflict):
        snap.restore(first.id)
    assert (ws / "n/x.secret").read_text() == "mine\n"


def test_a_selective_restore_brings_back_a_file_a_workspace_rule_hides(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"settings.local": "old\n", "a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {".gitignore": "settings.local\n", "settings.local": "the agent's\n"})
    result = snap.restore(first.id, files=["settings.local"])
    assert (ws / "settings.local").read_text() == "old\n" and (ws / ".gitignore").exists()
    assert result.safety_snapshot_id is not None
    snap.restore(result.safety_snapshot_id, files=["settings.local"], overwrite_untracked=True)
    assert (ws / "settings.local").read_text() == "the agent's\n"


def test_a_planted_virtual_environment_marker_keeps_nothing_from_a_restore(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"src/app.py": "recorded\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"src/pyvenv.cfg": "home = /usr\n", "src/app.py": "the agent's\n"})
    result = snap.restore(first.id)
    assert (ws / "src/app.py").read_text() == "recorded\n" and kept(result) == {}
    assert snap.undo().ok and (ws / "src/app.py").read_text() == "the agent's\n"


def test_a_cap_a_workspace_file_lowers_keeps_nothing_from_a_restore(ws: Path, home: Path) -> None:
    """The agent lowers max_new_file_size and writes a new, larger file where the
    target has one: the caller's cap, not the workspace's, decides what is kept."""
    from conftest import run_command

    base = ["-C", str(ws), "--home", str(home)]
    write(ws, {"data.txt": "recorded\n"})
    assert run_command("snapshot", *base, "--label", "before").returncode == 0
    (ws / "data.txt").unlink()
    assert run_command("snapshot", *base).returncode == 0
    write(ws, {"snapshotter.toml": "max_new_file_size = 100\n", "data.txt": "the agent's\n" * 50})
    done = run_command("restore", *base, "--yes", "before")
    assert done.returncode == 0, done.stderr
    assert (ws / "data.txt").read_text() == "recorded\n", done.stdout


def test_a_snapshot_that_stops_tracking_a_path_names_the_rule_that_hides_it(
    ws: Path, make, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"src/app.py": "v1\n", "src/util.py": "u\n", "logs/x.log": "l\n", "a.txt": "a\n"})
    snap = make()
    snap.snapshot()
    write(ws, {".git/info/exclude": "src/\n", "logs/.gitignore": "*.log\n", "a.txt": "b\n"})
    with caplog.at_level("WARNING", logger="snapshotter"):
        snap.snapshot()
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "src/app.py" in text and str(ws / ".git" / "info" / "exclude") in text
    assert "logs/x.log" in text and str(ws / "logs" / ".gitignore") in text
    caplog.clear()
    with caplog.at_level("WARNING", logger="snapshotter"):
        snap.snapshot()  # said once: the previous snapshot does not track them either
        (ws / "a.txt").unlink()
        snap.snapshot()  # deleted, not hidden: nothing to say
    assert caplog.records == []


@needs_git
def test_a_workspace_settings_exclude_is_judged_as_git_judges_its_lowest_exclude_file(
    ws: Path, make, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Not the caller's policy: a .gitignore negation lifts it, as git lets one
    lift core.excludesFile; and the tree equals git's with that file."""
    from snapshotter import WorkspaceSettings

    env = git_env(tmp_path)
    write(ws, {"a.log": "a\n", "keep.log": "k\n", "d/x.log": "x\n", "d/y.txt": "y\n", "b.txt": "b\n"})
    write(ws, {".gitignore": "!keep.log\n", "d/.gitignore": "!x.log\n"})
    git("init", "-q", cwd=ws, env=env)
    excludes = tmp_path / "excludes"
    excludes.write_text("*.log\nd/y.txt\n")
    git("-c", f"core.excludesFile={excludes}", "add", "-A", cwd=ws, env=env)
    expected = git("write-tree", cwd=ws, env=env).strip()
    (ws / ".git" / "index").unlink()  # the rules alone decide: no tracked path is rescued
    settings = WorkspaceSettings(exclude=((str(ws / "pyproject.toml"), ("*.log", "d/y.txt")),))
    snap = make(workspace_settings=settings)
    info = snap.snapshot()
    assert info.tree_id == expected


def test_a_folder_in_the_way_holding_a_repository_is_refused_and_its_git_untouched(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"n": "recorded file\n", "a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    (ws / "n").unlink()
    write(ws, {"n/x.log": "log\n", "n/.git/HEAD": "ref: refs/heads/main\n", ".gitignore": "*.log\n"})
    with pytest.raises(RestoreConflict):
        snap.restore(first.id)
    assert (ws / "n/.git/HEAD").read_text() == "ref: refs/heads/main\n" and (ws / "n/x.log").read_text() == "log\n"


def test_what_the_workspace_files_add_is_kept_apart_from_the_callers(ws: Path, tmp_path: Path) -> None:
    """The front ends hand the caller's settings and the workspace files' apart:
    only the caller's rules are policy (see test_a_rule_the_agent_writes...)."""
    from snapshotter.frontends.shared import config
    from snapshotter.options import Options

    write(ws, {"pyproject.toml": '[tool.snapshotter]\nexclude = ["src/", "*.tmp"]\nmax_new_file_size = 100\n'})
    write(ws, {"snapshotter.toml": 'exclude = ["build/"]\nuse_default_excludes = true\n'})
    user = tmp_path / "user.toml"
    user.write_text('exclude = ["*.tmp"]\nuse_default_excludes = false\n')
    settings = config.resolve(str(ws), {"exclude": ["*.bak"]}, {"SNAPSHOTTER_CONFIG": str(user)})
    options = Options(**config.snapshotter_options(settings))
    assert options.exclude == ("*.tmp", "*.bak") and options.use_default_excludes is False
    assert options.workspace_settings.exclude == (
        (f"{ws / 'pyproject.toml'} [tool.snapshotter]", ("src/",)),
        (str(ws / "snapshotter.toml"), ("build/",)),
    )
    assert options.workspace_settings.default_excludes == str(ws / "snapshotter.toml")
    assert options.max_new_file_size == Options().max_new_file_size and options.new_file_cap == 100  # the default
    assert settings.value("exclude") == ["*.tmp", "src/", "build/", "*.bak"]  # `snapshotter config` shows them all
    flagged = config.resolve(
        str(ws), {"max_new_file_size": 5000}, {"SNAPSHOTTER_CONFIG": str(user), "SNAPSHOTTER_USE_DEFAULT_EXCLUDES": "0"}
    )
    later = Options(**config.snapshotter_options(flagged))  # the caller's later sources override the workspace's
    assert later.workspace_settings.max_new_file_size == 0 and later.max_new_file_size == 5000
    assert later.workspace_settings.default_excludes == "" and later.use_default_excludes is False


def test_a_path_tracked_only_for_a_restore_is_not_tracked_after_a_gc(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Found by the model (--long): gc rewrote the stat cache without the paths
    a restore had tracked whatever the rules said, so the next scan trusted a
    folder listed then and kept tracking a file the rules ignore."""
    from conftest import tree_modes

    write(ws, {"n/x.log": "recorded\n", "a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {".git/info/exclude": "*.log\n", "a.txt": "b\n"})
    snap.restore(first.id)  # x.log tracked for the restore (saved first); as recorded, so not written
    assert (ws / "n/x.log").read_text() == "recorded\n" and (ws / "a.txt").read_text() == "a\n"
    snap.gc()
    assert "n/x.log" not in tree_modes(snap, snap.snapshot().tree_id)  # info/exclude still hides it


def test_every_untracked_path_in_the_way_is_named_and_nothing_is_written(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The conflict check goes on past the paths that need no look (``a.txt``, tracked;
    ``new/q.txt``, whose folder is gone) and past the first blocked one: one refusal
    names every untracked thing in the way, and nothing is written or deleted. In the
    way: a file at the top (``top.secret``) and one under a tracked folder
    (``m/o.secret``) where the snapshot has folders, one in an untracked folder
    (``g.secret/h``), and a folder holding an untracked file where it has a file (``x``)."""
    write(ws, {"a.txt": "v1\n", "top.secret/c.txt": "c\n", "m/n.txt": "n\n", "m/o.secret/p.txt": "p\n"})
    write(ws, {"g.secret/h/i.txt": "i\n", "new/q.txt": "q\n", "x": "file\n"})
    everything = make()
    first = everything.snapshot()
    everything.close()
    for folder in ("top.secret", "m/o.secret", "g.secret/h", "new"):
        for below in sorted((ws / folder).rglob("*"), reverse=True):
            below.unlink()
        (ws / folder).rmdir()
    (ws / "x").unlink()
    write(ws, {"a.txt": "v2\n", "top.secret": "mine 1\n", "m/o.secret": "mine 2\n", "g.secret/h": "mine 3\n"})
    write(ws, {"x/y.secret": "mine 4\n"})
    snap = make(exclude=["*.secret"])
    before = read_tree(ws)
    with pytest.raises(RestoreConflict) as refused:
        snap.restore(first.id)
    for blocker in ("top.secret", "m/o.secret", "g.secret/h", "x"):
        assert str(ws / blocker) in str(refused.value)
    assert read_tree(ws) == before


def test_a_refusal_counts_the_blockers_it_does_not_name(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Five are named, the rest counted; one alone is "it", several are "them". Each
    blocker is named once, however many of the snapshot's files it blocks."""
    names = [f"f{n}.secret" for n in range(7)]
    write(ws, {f"{name}/{leaf}": "x\n" for name in names for leaf in ("x.txt", "y.txt")})
    everything = make()
    first = everything.snapshot()
    everything.close()
    for name in names:
        for leaf in ("x.txt", "y.txt"):
            (ws / name / leaf).unlink()
        (ws / name).rmdir()
        (ws / name).write_text("mine\n")
    snap = make(exclude=["*.secret"])
    with pytest.raises(RestoreConflict, match=r"; and 2 more; move them and retry$") as refused:
        snap.restore(first.id)
    clauses = str(refused.value).split("; ")  # one clause a blocker
    assert [clause.split(" is an untracked file")[0] for clause in clauses[:5]] == [str(ws / n) for n in names[:5]]
    assert clauses[5:] == ["and 2 more", "move them and retry"]
    for name in names[5:]:
        (ws / name).unlink()
    with pytest.raises(RestoreConflict) as refused:  # five: all named, none counted
        snap.restore(first.id)
    assert str(refused.value).split("; ")[5:] == ["move them and retry"]
    for name in names[1:5]:
        (ws / name).unlink()
    with pytest.raises(RestoreConflict) as refused:
        snap.restore(first.id)
    blocker = ws / "f0.secret"
    assert (
        str(refused.value)
        == f"{blocker} is an untracked file or symlink where the snapshot has a folder; move it and retry"
    )
    assert (ws / "f0.secret").read_text() == "mine\n"


def test_a_nested_folder_holding_an_untracked_file_where_the_snapshot_has_a_file_is_refused(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"sub/x": "file\n", "sub/keep.txt": "k\n"})
    everything = make()
    first = everything.snapshot()
    everything.close()
    (ws / "sub/x").unlink()
    write(ws, {"sub/x/y.secret": "mine\n", "sub/keep.txt": "changed\n"})
    before = read_tree(ws)
    with pytest.raises(
        RestoreConflict, match=r"sub/x is a folder holding untracked files where the snapshot has a file"
    ):
        make(exclude=["*.secret"]).restore(first.id)
    assert read_tree(ws) == before


def test_a_file_in_a_folder_ignored_since_the_snapshot_keeps_its_edit_at_any_depth(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"x/logs/deep/a.txt": "recorded\n", "app.py": "v1\n"})
    everything = make()
    old = everything.snapshot()
    everything.close()
    write(ws, {"x/logs/deep/a.txt": "my edit\n", "app.py": "v2\n"})
    result = make(exclude=["logs/"]).restore(old.id)
    assert (ws / "x/logs/deep/a.txt").read_text() == "my edit\n"
    assert (ws / "app.py").read_text() == "v1\n"
    assert "x/logs/deep/a.txt" not in result.written_paths


def test_a_file_only_a_nested_rule_added_after_the_target_hides_is_saved_then_restored(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """As with a root rule: the rule in ``sub/.gitignore`` hides the agent's
    ``sub/x.log`` from the scan, yet the safety snapshot holds it and undo brings it back."""
    write(ws, {"sub/x.log": "recorded\n", "sub/app.py": "v1\n"})
    snap = make()
    a = snap.snapshot()
    write(ws, {"sub/x.log": "the agent's\n", "sub/.gitignore": "*.log\n", "sub/app.py": "v2\n"})
    result = snap.restore(a.id)
    assert (ws / "sub/x.log").read_text() == "recorded\n" and not (ws / "sub/.gitignore").exists()
    assert kept(result) == {} and "sub/x.log" in result.written_paths
    assert snap.undo().ok
    assert (ws / "sub/x.log").read_text() == "the agent's\n" and (ws / "sub/.gitignore").read_text() == "*.log\n"

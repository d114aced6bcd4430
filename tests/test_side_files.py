"""Side files (settings, the user's git files, the store's own files) are read so
that nothing planted at their path can hang us or fill memory: ``fsutil.read_side_file``."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import write

import snapshotter
from snapshotter.engine.fsutil import FileTooLarge, NotARegularFile, read_side_file, read_side_text
from snapshotter.frontends.cli import cli

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="named pipes and /dev/zero are POSIX")


def test_a_regular_file_is_read_whole(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_bytes(b"a = 1\n")
    assert read_side_file(str(path)) == b"a = 1\n"
    assert read_side_text(str(path)) == "a = 1\n"


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_side_file(str(tmp_path / "nothing"))


@posix_only
def test_a_named_pipe_is_refused_at_once_not_waited_on(tmp_path):
    path = tmp_path / "pyproject.toml"
    os.mkfifo(path)
    with pytest.raises(NotARegularFile, match="named pipe"):
        read_side_file(str(path))


@posix_only
def test_a_link_to_dev_zero_is_refused_not_read_forever(tmp_path):
    path = tmp_path / "config"
    os.symlink("/dev/zero", path)
    with pytest.raises(NotARegularFile, match="device"):
        read_side_file(str(path))


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(OSError):
        read_side_file(str(tmp_path))


def test_a_file_past_the_cap_is_refused(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    with pytest.raises(FileTooLarge):
        read_side_file(str(path), cap=100)
    assert read_side_file(str(path), cap=101) == b"x" * 101


@posix_only
def test_a_symlink_is_refused_where_links_are_not_followed(tmp_path):
    (tmp_path / "real").write_bytes(b"x")
    os.symlink("real", tmp_path / "link")
    assert read_side_file(str(tmp_path / "link")) == b"x"
    with pytest.raises(OSError):
        read_side_file(str(tmp_path / "link"), follow=False)


# -- every side file the package reads, planted as a named pipe and as a link to /dev/zero --

HANG_LIMIT = 90
"""Seconds the commands of one planted file may take together before the test
calls it a hang (they take about two, a few run at once)."""
MEMORY_LIMIT = 2 << 30
"""The child's address space: reading ``/dev/zero`` whole fails at once instead
of taking the machine's memory."""

COMMANDS = (
    ("snapshot", "-m", "with a planted file"),
    ("status",),
    ("diff",),
    ("log",),
    ("restore", "--yes", "first"),
    ("undo",),
)
"""What a user runs: each must end, and either work or fail with one typed line."""

DRIVER = r"""
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from snapshotter import Snapshotter
from snapshotter.frontends.cli import cli
workspace, target, kind, commands = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
with Snapshotter(workspace, home=os.environ["SNAPSHOTTER_HOME"]) as snap:
    snap.snapshot("first", label="first")
    target = target.format(ws=workspace, store=snap.store_path, config=os.environ["SNAPSHOTTER_CONFIG"])
with open(os.path.join(workspace, "a.txt"), "w") as handle:
    handle.write("changed\n")
os.makedirs(os.path.dirname(target), exist_ok=True)
if os.path.lexists(target):
    os.unlink(target)
os.mkfifo(target) if kind == "fifo" else os.symlink("/dev/zero", target)
for line in commands:
    try:
        code = cli.run(["-C", workspace, *line.split("\t")], cli.Console.standard())
    except BaseException as exc:  # what the test reports
        code = f"untyped {type(exc).__name__}: {exc}"
    sys.stdout.write(f"\n@exit\t{line.split(chr(9))[0]}\t{code}\n")
    sys.stdout.flush()
"""
"""Takes the first snapshot, plants the file (a path with ``{ws}``, ``{store}`` or
``{config}``), then runs each command, printing ``@exit<TAB>command<TAB>code``."""


@dataclass(frozen=True)
class Planted:
    """A side file replaced by something that is not a regular file."""

    path: str
    """Where: below ``{ws}`` (the workspace), ``{store}`` (its store), or ``{config}`` (the user's config file)."""
    may_fail: bool = False
    """Commands may fail with a typed one-line error (the file is one they cannot do without)."""


SIDE_FILES = (
    # the workspace's settings, ignore and attribute files
    Planted("{ws}/pyproject.toml"),
    Planted("{ws}/snapshotter.toml"),
    Planted("{ws}/.gitignore"),
    Planted("{ws}/sub/.gitignore"),
    Planted("{ws}/.gitattributes"),
    Planted("{ws}/sub/.gitattributes"),
    # the user's git files: the workspace's repository, and one nested in it
    Planted("{ws}/.git/HEAD"),
    Planted("{ws}/.git/index"),
    Planted("{ws}/.git/commondir"),
    Planted("{ws}/.git/info/exclude"),
    Planted("{ws}/.git/info/attributes"),
    Planted("{ws}/nested/.git/index"),
    Planted("{ws}/nested/.git/commondir"),
    Planted("{ws}/linked/.git"),  # a linked worktree's or submodule's gitdir file
    # the store's own files
    Planted("{store}/config"),
    Planted("{store}/HEAD"),
    Planted("{store}/commondir"),
    Planted("{store}/shallow"),
    Planted("{store}/info/grafts"),
    Planted("{store}/objects/info/alternates"),
    Planted("{store}/packed-refs", may_fail=True),  # it may name snapshots: nothing is done without it
    Planted("{store}/refs/snapshots/0000000099"),
    Planted("{store}/refs/snapshotter/base"),
    Planted("{store}/workspace"),
    Planted("{store}/snapshotter/statcache"),
    Planted("{store}/snapshotter/generation"),
    Planted("{store}/snapshotter/nested-repositories"),
    Planted("{store}/snapshotter/line-counts"),
    Planted("{store}/snapshotter/over-limit"),
    Planted("{store}/snapshotter/last-gc"),
    Planted("{store}/snapshotter/forks.json"),
    Planted("{store}/snapshotter/lock", may_fail=True),  # no writer can take the store lock
    # the user's own config file
    Planted("{config}", may_fail=True),  # the caller's own: fix or remove it
)
KINDS = ("fifo", "dev-zero")


@dataclass(frozen=True)
class Outcome:
    """What the commands of one planted file did: exit code by command, or a hang."""

    codes: dict[str, str]
    stderr: str
    hung: bool


def _a_repository(folder: Path) -> None:
    """A git folder as git makes it, without running git (the suite passes without it)."""
    for sub in ("objects", "refs/heads", "info"):
        (folder / ".git" / sub).mkdir(parents=True, exist_ok=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


def _run_planted(root: Path, planted: Planted, kind: str) -> Outcome:
    ws = root / "ws"
    write(ws, {"a.txt": "one\n", "sub/b.txt": "two\n", "nested/c.txt": "three\n", "linked/d.txt": "four\n"})
    _a_repository(ws)
    _a_repository(ws / "nested")
    env = dict(
        os.environ,
        SNAPSHOTTER_HOME=str(root / "home"),
        SNAPSHOTTER_CONFIG=str(root / "config.toml"),
        PYTHONPATH=str(Path(snapshotter.__file__).parent.parent),
    )
    lines = ["\t".join(command) for command in COMMANDS]
    command = [sys.executable, "-c", DRIVER, str(MEMORY_LIMIT), str(ws), planted.path, kind, *lines]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=HANG_LIMIT, env=env, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as exc:
        return Outcome({}, str(exc.stderr or ""), hung=True)
    exits = [line.split("\t")[1:] for line in done.stdout.splitlines() if line.startswith("@exit\t")]
    failed = "" if done.returncode == 0 else f"the driver exited {done.returncode}\n"
    return Outcome(dict(exits), failed + done.stderr, hung=False)


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], Outcome]:
    """The outcome of every planted file this session selected, run a few at a time
    (each in its own process, under ``HANG_LIMIT``: a hang fails its case only)."""
    wanted = sorted(
        {
            (item.callspec.params["planted"], item.callspec.params["kind"])
            for item in request.session.items
            if getattr(item, "originalname", "") == "test_a_side_file_that_is_a_pipe_or_a_device_never_hangs_a_command"
        },
        key=str,
    )
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        runs = {
            (planted.path, kind): pool.submit(_run_planted, tmp_path_factory.mktemp("planted"), planted, kind)
            for planted, kind in wanted
        }
        return {key: run.result() for key, run in runs.items()}


@posix_only
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("planted", SIDE_FILES, ids=lambda p: p.path)
def test_a_side_file_that_is_a_pipe_or_a_device_never_hangs_a_command(
    planted: Planted, kind: str, outcomes: dict[tuple[str, str], Outcome]
) -> None:
    """Every file the package reads that is not snapshot content (see SECURITY.md),
    replaced by a named pipe or a link to ``/dev/zero``: every command ends, and
    works (warning at most), or, for the few files it cannot do without, fails
    with one typed line, never a traceback."""
    outcome = outcomes[(planted.path, kind)]
    assert not outcome.hung, f"hung on {planted.path} ({kind}): {outcome.stderr}"
    assert list(outcome.codes) == [command[0] for command in COMMANDS], outcome
    assert not [code for code in outcome.codes.values() if code.startswith("untyped")], outcome
    assert "Traceback" not in outcome.stderr and "the driver exited" not in outcome.stderr, outcome.stderr
    if not planted.may_fail:
        assert set(outcome.codes.values()) == {"0"}, outcome


# -- numbers in the settings files: bounded, never a traceback --

HUGE_SETTINGS = (
    "lock_timeout = 1e300",  # OverflowError: timestamp out of range, in every command
    "lock_timeout = 1e400",  # TOML's inf
    "max_age_days = 1e400",  # OverflowError: date value out of range, at retention
    "max_age_days = 900000.0",
    "max_snapshots = 99999999999999999999999",
    "max_new_file_size = 99999999999999999999999",
)


@pytest.mark.parametrize("where", ["workspace", "user"])
@pytest.mark.parametrize("line", HUGE_SETTINGS)
def test_a_huge_number_in_a_settings_file_never_breaks_a_command(tmp_path: Path, line: str, where: str) -> None:
    ws = tmp_path / "ws"
    write(ws, {"a.txt": "a\n"})
    settings = ws / "snapshotter.toml" if where == "workspace" else tmp_path / "config.toml"
    settings.write_text(line + "\n")
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "SNAPSHOTTER_CONFIG": str(tmp_path / "config.toml")}
    for command in (["snapshot", "-m", "one"], ["snapshot", "-m", "two"], ["prune"]):
        err = io.StringIO()
        assert cli.run(["-C", str(ws), *command], cli.Console(io.StringIO(), err, False, env)) == 0, err.getvalue()


@posix_only
def test_the_null_device_as_the_user_config_means_no_config(tmp_path):
    """``SNAPSHOTTER_CONFIG=/dev/null`` says "no config file", as git takes
    ``GIT_CONFIG_GLOBAL=/dev/null``; it is the user's own setting, so the null
    device is no planted file (a planted one elsewhere is still refused)."""
    from conftest import run_command

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "SNAPSHOTTER_CONFIG": os.devnull}
    done = run_command("-C", str(ws), "snapshot", env=env)
    assert done.returncode == 0, done.stderr
    listed = run_command("-C", str(ws), "log", env=env)
    assert listed.returncode == 0 and "1 file" in listed.stdout, listed.stdout + listed.stderr

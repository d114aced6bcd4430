"""Shared fixtures: real folders in temporary directories, and git as an oracle."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from snapshotter import DEFAULT_EXCLUDES, Snapshotter
from snapshotter.engine.compare.treediff import StoredTree
from snapshotter.engine.gitstore.objects import MODE_TREE, serialize_tree
from snapshotter.engine.gitstore.trailers import build_commit
from snapshotter.frontends.shared import wire

GIT = shutil.which("git")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", help="stress modes: thousands of model-test steps, 150 crash kills")


# The property tests (every @given, and test_model's state machine) draw the same
# examples in every default run: derandomized, with no example database, so a
# red run is red again when re-run, on any machine. --long explores: a new seed
# each run (or --hypothesis-seed=N), printed in the header and after a failure;
# the same seed replays the run. A test's own @settings keep these values.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("long", print_blob=True)


@pytest.hookimpl(tryfirst=True)  # before hypothesis' plugin reads --hypothesis-seed
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--long"):
        settings.load_profile("long")
        if config.getoption("hypothesis_seed") is None:
            config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**32))
    else:
        settings.load_profile("ci")
    # A suite started in the background by a non-interactive shell (CI runs its
    # no-git pass so, beside the other) inherits Ctrl-C ignored, and so would every
    # command it starts: the Ctrl-C tests would see a snapshot exit 0. Caught here,
    # it is back at its default in every child.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _guard_exit()


def _guard_exit() -> None:
    """``os._exit`` in the test process itself fails the test that made it.

    The hook client's tests make calls in this process (so mutation testing sees
    them), and a call that runs out of time leaves by ``os._exit(0)``: the suite
    would stop there with status 0 and look green. A fork of the test process
    (a hook call's child, the second core) still exits as it asks."""
    real_exit, suite = os._exit, os.getpid()

    def guarded(status: int) -> None:
        if os.getpid() != suite:
            real_exit(status)
        raise RuntimeError(f"os._exit({status}) in the test process: the suite would have stopped here")

    os._exit = guarded  # type: ignore[assignment]


def _replay(config: pytest.Config) -> str:
    return f"--long --hypothesis-seed={config.getoption('hypothesis_seed')}"


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("--long"):
        return f"property tests: seed {config.getoption('hypothesis_seed')} (replay: pytest {_replay(config)})"
    return "property tests: derandomized, the same examples every run (--long explores with a new seed)"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if config.getoption("--long") and exitstatus not in (0, 5):  # 5: no test collected
        terminalreporter.write_line(f"property tests ran with a seed; replay them with: pytest {_replay(config)}")


needs_git = pytest.mark.skipif(GIT is None, reason="git binary not on PATH (oracle tests only)")


def _second_core() -> bool:
    from snapshotter.engine.worktree import secondcore

    return secondcore.SUPPORTED


needs_second_core = pytest.mark.skipif(
    not _second_core(), reason="a second core is forked on Linux with two or more cores"
)


def alone_in_this_process(timeout: float = 10.0) -> None:
    """Wait until no other thread runs in this process, as a fork needs (see
    ``secondcore.available``): an earlier test's threads may still be ending.
    Fails, naming them, if some are still there after ``timeout`` seconds."""
    import threading

    from snapshotter.engine.worktree import secondcore

    deadline = time.monotonic() + timeout
    while not secondcore.available():
        if time.monotonic() > deadline:
            names = [thread.name for thread in threading.enumerate()]
            pytest.fail(f"other threads still run, so nothing can be forked: {names}, {os.listdir('/proc/self/task')}")
        time.sleep(0.01)


def no_child_left() -> bool:
    """Whether this process has no child process, running or unreaped."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may touch the real user data folder, or read the real user config."""
    monkeypatch.setenv("SNAPSHOTTER_HOME", str(tmp_path / "default-home"))
    monkeypatch.setenv("SNAPSHOTTER_CONFIG", str(tmp_path / "no-user-config.toml"))
    monkeypatch.setenv("SNAPSHOTTER_HOOKS_LOG", str(tmp_path / "user-state-hooks.log"))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The URL of a bare repository a real ``git daemon`` serves on the loopback
    interface (for the tests that count what a push or a fetch exchanges; they
    skip where git cannot serve)."""
    from remote_servers import bare_repository, git_daemon

    base = tmp_path / "remotes"
    base.mkdir()
    bare_repository(base / "shared.git")
    with git_daemon(base) as url:
        yield f"{url}/shared.git"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def make(ws: Path, home: Path) -> Iterator[Callable[..., Snapshotter]]:
    made: list[Snapshotter] = []

    def factory(workspace: Path | None = None, **kwargs: object) -> Snapshotter:
        kwargs.setdefault("home", home)
        snap = Snapshotter(workspace or ws, **kwargs)  # type: ignore[arg-type]
        made.append(snap)
        return snap

    yield factory
    for snap in made:
        snap.close()


SNAPSHOTTING_WRITER = """
import sys
from snapshotter import Snapshotter, Retention
ws, home, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
snap = Snapshotter(ws, home=home, retention=Retention.unlimited(), lock_timeout=120)
for i in range(count):
    with open(f"{ws}/w{i % 7}.txt", "w") as handle:
        handle.write(f"writer {i}\\n" * 50)
    snap.snapshot(f"w{i}")
"""
"""A second process taking ``count`` snapshots (argv: workspace, home, count), beside a test's own calls."""


def beside_a_writer(ws: Path, home: Path, count: int, action: Callable[[], object], pause: float = 0.05) -> None:
    """Call ``action`` over and over while another process takes ``count`` snapshots of ``ws``."""
    writer = subprocess.Popen(
        [sys.executable, "-c", SNAPSHOTTING_WRITER, str(ws), str(home), str(count)], stderr=subprocess.PIPE
    )
    try:
        while writer.poll() is None:
            action()
            time.sleep(pause)  # the lock is not fair: leave the writer a gap
    finally:
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err.decode()


CONSOLE_SCRIPT = str(Path(sys.executable).parent / "snapshotter")
COMMAND = [CONSOLE_SCRIPT] if os.path.exists(CONSOLE_SCRIPT) else [sys.executable, "-m", "snapshotter"]
"""The real ``snapshotter`` command as installed (the module where no console script is)."""


def run_command(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, **options: Any
) -> subprocess.CompletedProcess[str]:
    """``snapshotter ARGS...`` in a subprocess, with stdin closed (nobody to ask) and no NO_COLOR."""
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("NO_COLOR", None)
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        check=False,
        timeout=120,
        stdin=subprocess.DEVNULL,
        **options,
    )


def deny_reading(monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """Make files whose path ends with ``suffix`` unreadable to the walker (root
    reads anything, so permissions cannot do it in the suite)."""
    from snapshotter.engine.gitstore import objectwriter

    real_open = objectwriter.open_for_read

    def no_permission(path: str) -> int:
        if path.endswith(suffix):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path)

    monkeypatch.setattr(objectwriter, "open_for_read", no_permission)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Create files (parents too) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        path.write_bytes(data)


def read_tree(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every file and symlink below ``root`` except .git: (kind, content or target)."""
    out: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if os.path.islink(full):
                out[rel] = ("link", os.fsencode(os.readlink(full)))
            else:
                kind = "exec" if os.stat(full).st_mode & 0o100 else "file"
                out[rel] = (kind, Path(full).read_bytes())
    return out


def git_merge_file(
    tmp: Path, ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str] = ("ours", "theirs")
) -> tuple[bytes, int]:
    """``git merge-file -p`` of the three contents, its markers named ``labels``:
    (the merged output, how many conflicts git found)."""
    tmp.mkdir(parents=True, exist_ok=True)
    for name, content in (("ours", ours), ("base", base), ("theirs", theirs)):
        (tmp / name).write_bytes(content)
    assert GIT is not None
    done = subprocess.run(
        [GIT, "merge-file", "-p", "-L", labels[0], "-L", "base", "-L", labels[1], "ours", "base", "theirs"],
        cwd=tmp,
        capture_output=True,
    )
    return done.stdout, done.returncode


def contents(root: Path) -> dict[str, bytes]:
    """Every file's bytes below ``root`` (a symlink's: its target), by path."""
    return {rel: data for rel, (_, data) in read_tree(root).items()}


def git_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(tmp),
        XDG_CONFIG_HOME=str(tmp / "xdg"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    return env


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True) -> str:
    assert GIT is not None
    result = subprocess.run(
        [GIT, *args], cwd=cwd, env=env, capture_output=True, check=False, text=True, errors="surrogateescape"
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def policy_ignored(scratch: Path, policy: Sequence[str], workspace: Path, paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` (files and folders of ``workspace``) the policy alone
    ignores, as git judges it: ``git check-ignore --no-index`` in a repository of
    its own whose only rules are ``policy`` (the default excludes, then the
    caller's ``exclude=``, later lines winning), over a tree of the workspace's
    folders (so folder patterns see folders, and what lies below an ignored
    folder is ignored, as git never enters one)."""
    wanted = sorted(set(paths))
    if not policy or not wanted:
        return set()
    repo = scratch / "policy-oracle"
    env = git_env(scratch)
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        git("init", "-q", str(repo), env=env)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_bytes(b"".join(os.fsencode(line) + b"\n" for line in policy))
    for rel in wanted:
        folder = rel if (workspace / rel).is_dir() and not (workspace / rel).is_symlink() else os.path.dirname(rel)
        if folder:
            (repo / folder).mkdir(parents=True, exist_ok=True)
    stdin = b"".join(b"./" + os.fsencode(rel) + b"\0" for rel in wanted)
    assert GIT is not None
    done = subprocess.run(
        [GIT, "check-ignore", "--no-index", "-z", "--stdin"], cwd=repo, env=env, input=stdin, capture_output=True
    )
    assert done.returncode in (0, 1), done.stderr
    return {os.fsdecode(p.removeprefix(b"./")) for p in done.stdout.split(b"\0") if p}


def git_shadow_tree(workspace: Path, scratch: Path, excludes: tuple[str, ...] = DEFAULT_EXCLUDES) -> str:
    """What ``git add -A && git write-tree`` gives in a bare shadow repo, from a
    fresh index (git keeps ignored files tracked once they are in its index;
    a snapshot records what the rules say now), with ``excludes`` as the policy:
    applied over the workspace's own rules, so the paths they ignore leave the
    index (``git rm --cached``) whatever a ``.gitignore`` negation says."""
    scratch.mkdir(parents=True, exist_ok=True)
    shadow = scratch / "shadow.git"
    env = git_env(scratch)
    if not shadow.exists():
        git("init", "-q", "--bare", str(shadow), env=env)
    (shadow / "index").unlink(missing_ok=True)  # a fresh index: ignore rules apply to every file
    (shadow / "info").mkdir(exist_ok=True)
    (shadow / "info" / "exclude").write_text("")
    base = ["--git-dir", str(shadow), "--work-tree", str(workspace)]
    git(*base, "add", "-A", env=env)
    listed = git(*base, "ls-files", "-z", env=env).split("\0")
    dropped = policy_ignored(scratch, excludes, workspace, [p for p in listed if p])
    if dropped:
        assert GIT is not None
        stdin = b"".join(os.fsencode(p) + b"\0" for p in sorted(dropped))
        subprocess.run(
            [
                GIT,
                "--literal-pathspecs",
                *base,
                "rm",
                "-q",
                "--cached",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            env=env,
            input=stdin,
            check=True,
            capture_output=True,
        )
    return git(*base, "write-tree", env=env).strip()


def forge_snapshot(snap: Snapshotter, entries: list[tuple[bytes, int, bytes]], seq: int = 999) -> str:
    """Write a hostile tree and commit straight into the store, as a malicious agent could.
    An empty id in ``entries`` stands for a small blob."""
    from datetime import datetime, timezone

    store = snap._engine_ok().store
    blob = store.writer.write(b"blob", b"pwned\n")
    tree = store.writer.write(b"tree", serialize_tree([(n, m, s or blob) for n, m, s in entries]))
    commit = build_commit(
        tree, "forged", seq=seq, label=None, metadata={}, stats=(0, 0, 0), skipped=[], when=datetime.now(timezone.utc)
    )
    sha = store.write_commit(commit)
    assert store.add_snapshot_ref(seq, sha)
    return sha.hex()


def tree_modes(snap: Snapshotter, tree_id: str) -> dict[str, int]:
    """path -> git mode of every file and symlink in a stored tree."""
    tree = StoredTree(snap._engine_ok().store, bytes.fromhex(tree_id))
    out: dict[str, int] = {}
    stack: list[tuple[str, object]] = [("", tree.root())]
    while stack:
        prefix, handle = stack.pop()
        for name, (mode, _, sub) in tree.entries(handle).items():
            path = prefix + name
            if mode == MODE_TREE:
                stack.append((path + "/", sub))
            else:
                out[path] = mode
    return out


@contextmanager
def kernel_limit(path: Path, value: int) -> Iterator[None]:
    """Set a system-wide kernel limit (a file under /proc/sys) for the block, then put it back.

    Every test run on the machine shares the limit, so changes are serialised
    across processes: a second run waits, and never reads our temporary value
    as the original it must put back (two interleaved runs once left the inotify
    queue at 8 events, and every later watch-mode test fell back to full walks)."""
    import fcntl

    with open(os.path.join(tempfile.gettempdir(), "snapshotter-tests-kernel-limits.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        original = path.read_text()
        try:
            path.write_text(f"{value}\n")
            yield
        finally:
            path.write_text(original)


def plain_ids(values: Iterable[object], shown: Callable[[object], str] = repr) -> list[str]:
    """Test ids of letters, digits and ``_.=-`` only, each led by its number: an id
    holding a backslash, a bracket, a space or a slash is not found again when
    handed back to pytest by id (as mutmut does when it picks the tests of a mutant)."""
    return [f"{n}-{re.sub(r'[^A-Za-z0-9_.=-]+', '_', shown(v)).strip('_')[:40]}" for n, v in enumerate(values)]


# The hook's watcher: a short folder keeps its socket's path short; its start and end are
# seen from the store's side (its key and socket).
@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short folder: the homes below it are short unless a test makes them long (``long_home``)."""
    path = Path(tempfile.mkdtemp(prefix="hw-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def watcher_up(store: str, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if wire.read_key(store) is not None and os.path.exists(wire.address_of(store)):
            return True
        time.sleep(0.05)
    return False


def watcher_gone(store: str, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not os.path.exists(wire.address_of(store)):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def strong_hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of each block a delta encoder hashes with SHA-1 from here on
    (``deltaencode.strong_hash``, counted): a chunk unchanged in place is compared, not hashed."""
    from snapshotter.engine.gitstore import deltaencode

    hashed: list[int] = []
    strong = deltaencode.strong_hash

    def counted(block: bytes | memoryview) -> bytes:
        hashed.append(len(block))
        return strong(block)

    monkeypatch.setattr(deltaencode, "strong_hash", counted)
    return hashed


@pytest.fixture
def recorded(ws: Path, home: Path) -> Path:
    """A workspace with a store and a few snapshots."""
    with Snapshotter(ws, home=home) as snap:
        for i in range(3):
            write(ws, {f"f{i}.txt": f"{i}\n"})
            snap.snapshot(f"s{i}")
    return ws


def loosen(snap: Snapshotter) -> None:
    """Every packed object of ``snap``'s store as a loose file, and its packs
    gone: a store as git leaves one it never packed, and as snapshotter wrote
    small snapshots until every scan's new objects went to a pack. For tests
    of what is read from loose objects. A big file's chain pack (issue #53)
    stays as it is: its versions live there as deltas, never as loose files."""
    from snapshotter.engine.gitstore.bigfacts import is_chain
    from snapshotter.engine.gitstore.objects import TYPE_NAMES
    from snapshotter.engine.gitstore.packread import PackIndex

    store = snap._engine_ok().store
    bases = [base for base in store.packs.bases(again=True) if not is_chain(base)]
    for base in bases:
        for sha, _, _ in PackIndex.read(base + ".idx").entries():
            kind, content = store.read_raw(sha)  # checked against its id
            store.writer.write_stream(TYPE_NAMES[kind], len(content), [content], sha)
    store.writer.make_durable()
    for base in bases:
        for suffix in (".pack", ".idx"):
            os.remove(base + suffix)
    store.release_packs()

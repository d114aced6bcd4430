"""Non-negotiable 1: the package never starts a program, the git binary included;
and it never evaluates data (file contents, names, refs, commit messages) as code."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
from conftest import write


def test_whole_workflow_starts_no_process(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a process was started: {args!r}")

    for name in ("Popen", "run", "call", "check_call", "check_output"):
        monkeypatch.setattr(subprocess, name, forbidden)
    for name in ("system", "popen", "fork", "execv", "execve", "execvp", "spawnv", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, forbidden)
    monkeypatch.setenv("PATH", "")  # and no git to find anyway
    write(ws, {"a.txt": "a\n", "d/b.txt": "b\n"})
    snap = make()
    first = snap.snapshot("one")
    write(ws, {"a.txt": "A\n", "c.txt": "c\n"})
    assert snap.status()
    assert snap.diff(first.id)[0].patch
    second = snap.snapshot("two")
    snap.restore(first.id)
    snap.restore(second.id, files=["c.txt"])
    assert snap.list() and snap.get(first.id[:7]) == first


def test_package_source_names_no_process_api() -> None:
    import snapshotter

    root = Path(snapshotter.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        for needle in ("subprocess", "os.system", "os.popen", "Popen", "os.exec", "os.spawn"):
            assert needle not in text, f"{path.name} mentions {needle}"


def test_only_the_preload_and_the_hook_watcher_fork() -> None:
    """A fork starts no program: the copy runs one function and leaves with
    ``os._exit``. Only ``engine/worktree/secondcore.py`` (a second core) and
    ``frontends/hookclient.py`` (the watcher a hook starts) may fork, and neither executes."""
    import snapshotter

    root = Path(snapshotter.__file__).parent
    forking = sorted(path.relative_to(root).as_posix() for path in root.rglob("*.py") if "os.fork" in path.read_text())
    assert forking == ["engine/worktree/secondcore.py", "frontends/hookclient.py"]
    for name in forking:
        text = (root / name).read_text()
        assert "os._exit(" in text and "exec" not in text.replace("executed", "").replace("executing", ""), name


def test_package_never_evaluates_data_as_code() -> None:
    """No eval/exec/compile, no unpickling, no dynamic imports of names from data."""
    import ast

    import snapshotter

    root = Path(snapshotter.__file__).parent
    banned_calls = {"eval", "exec", "compile", "__import__"}  # as bare builtins (re.compile is fine)
    banned_methods = {"import_module", "literal_eval"}
    banned_modules = {"pickle", "marshal", "shelve", "dill", "yaml"}
    checked = 0
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name):
                    assert func.id not in banned_calls, f"{path.name}:{node.lineno} calls {func.id}"
                elif isinstance(func, ast.Attribute):
                    assert func.attr not in banned_methods, f"{path.name}:{node.lineno} calls {func.attr}"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names]
                if isinstance(node, ast.ImportFrom) and node.module:
                    names.append(node.module)
                for name in names:
                    assert name.split(".")[0] not in banned_modules, f"{path.name}:{node.lineno} imports {name}"
        checked += 1
    assert checked > 20


def test_pushes_and_fetches_start_no_process(ws: Path, tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """dulwich's clients for paths, git:// and smart HTTP are pure Python, and SSH
    goes through paramiko: a push and a fetch over each run with every process
    API patched to fail (the servers, started by the test, run git through the
    ``Popen`` remote_servers saved before the patch)."""
    from conftest import GIT
    from remote_servers import bare_repository, git_daemon, has_git_program, http_backend, ssh_server

    from snapshotter import Credentials

    if GIT is None:
        pytest.skip("git binary not on PATH (the server side only)")
    write(ws, {"a.txt": "a\n"})
    snap = make()
    snap.snapshot("one")
    with contextlib.ExitStack() as servers:
        remotes: list[tuple[str, Credentials | None]] = [(str(tmp_path / "plain.git"), None)]
        for kind in ("git", "http", "ssh"):
            base = tmp_path / kind
            bare_repository(base / "r.git")
            if kind == "git" and has_git_program("daemon"):
                remotes.append((f"{servers.enter_context(git_daemon(base))}/r.git", None))
            elif kind == "http" and has_git_program("http-backend"):
                url, _ = servers.enter_context(http_backend(base, "u", "p"))
                remotes.append((f"{url}/r.git", Credentials("u", "p")))
            elif kind == "ssh" and importlib.util.find_spec("paramiko") is not None:
                end = servers.enter_context(ssh_server(base, tmp_path / "keys"))
                creds = Credentials(end.user, key_file=end.key_file, known_hosts=end.known_hosts)
                remotes.append((f"ssh://{end.user}@{end.host}:{end.port}/r.git", creds))

        def forbidden(*args: object, **kwargs: object) -> None:
            raise AssertionError(f"a process was started: {args!r}")

        with monkeypatch.context() as patched:
            for name in ("Popen", "run", "call", "check_call", "check_output"):
                patched.setattr(subprocess, name, forbidden)
            for name in ("system", "popen", "fork", "execv", "execve", "execvp", "spawnv", "posix_spawn"):
                if hasattr(os, name):
                    patched.setattr(os, name, forbidden)
            patched.setenv("PATH", "")
            for number, (remote, creds) in enumerate(remotes):
                assert snap.push(remote, name="n", credentials=creds).snapshots_sent == 1, remote
                other = tmp_path / f"other{number}"
                other.mkdir()
                with make(other, home=tmp_path / f"h{number}") as there:
                    assert len(there.fetch(remote, name="n", credentials=creds).snapshots) == 1, remote
    assert len(remotes) == 4 or not all(has_git_program(p) for p in ("daemon", "http-backend"))

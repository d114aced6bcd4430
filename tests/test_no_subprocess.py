"""Non-negotiable 1: the package never starts a program, the git binary included."""

from __future__ import annotations

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
    for path in root.glob("*.py"):
        text = path.read_text()
        for needle in ("subprocess", "os.system", "os.popen", "Popen", "os.exec", "os.spawn"):
            assert needle not in text, f"{path.name} mentions {needle}"

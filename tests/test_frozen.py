"""A PyInstaller app with the ``fast`` extra, run with no git, no Python and no environment.

Slow (one PyInstaller build: 16 s here with the ``fast`` extra, 46 s with ``[test]``,
which bundles mcp), so it runs only when asked:

    pip install -e ".[fast]" pyinstaller
    SNAPSHOTTER_FROZEN=1 python -m pytest tests/test_frozen.py

The build passes PyInstaller nothing about what snapshotter needs: the hooks in
``snapshotter/frontends/_pyinstaller`` (the ``pyinstaller40`` entry point) must supply it.
``--paths`` only says where the snapshotter under test is, since PyInstaller
cannot follow setuptools' editable-install finder (pyinstaller#7524).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import snapshotter

pytestmark = [
    pytest.mark.skipif(not os.environ.get("SNAPSHOTTER_FROZEN"), reason="a PyInstaller build: SNAPSHOTTER_FROZEN=1"),
    pytest.mark.skipif(os.name != "posix", reason="runs the app under env -i"),
]

APP = Path(__file__).with_name("frozen_app.py")
BARE = ["env", "-i", "PATH=/nonexistent"]
"""No git, no Python and no variables reach the frozen app."""


def run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False, timeout=600
    )


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app, frozen one folder (``--onedir``) with the Python running this test."""
    for needed, install in (("PyInstaller", "pyinstaller"), ("isal", '".[fast]"')):
        if importlib.util.find_spec(needed) is None:
            pytest.fail(f"SNAPSHOTTER_FROZEN needs {needed}: pip install {install}")
    build = tmp_path_factory.mktemp("build")
    where = Path(snapshotter.__file__).resolve().parent.parent
    made = run(
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level=WARN",
        "--onedir",
        f"--paths={where}",
        f"--distpath={build / 'dist'}",
        f"--workpath={build / 'work'}",
        f"--specpath={build}",
        APP,
        cwd=build,
    )
    assert made.returncode == 0, made.stderr
    return build / "dist" / APP.stem / APP.stem


def report(command: list[str | Path], tmp: Path) -> dict[str, Any]:
    (tmp / "ws").mkdir(parents=True)
    (tmp / "scratch").mkdir()
    result = run(*BARE, *command, "api", tmp / "ws", tmp / "scratch")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_the_frozen_app_runs_as_python_does(frozen: Path, tmp_path: Path) -> None:
    """Snapshot, edit, status, diff, restore and verify pass in the frozen app
    (``frozen_app.py`` checks each), with the same compressor, the same modules
    and the same snapshot as the same script run by this Python."""
    bundled = report([frozen], tmp_path / "frozen")
    source = report([sys.executable, APP], tmp_path / "source")
    missing = sorted(set(source["modules"]) - set(bundled["modules"]))
    assert not missing, f"modules the frozen app could not import (is the pyinstaller40 hook installed?): {missing}"
    assert bundled["compressor"] == "isal"
    assert bundled == source


def test_the_frozen_cli(frozen: Path, tmp_path: Path) -> None:
    """``snapshotter`` commands through the frozen app: snapshot, status, diff, restore."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    (ws / "a.py").write_text("one\n")

    def cli(*args: str) -> str:
        result = run(*BARE, frozen, "cli", *args, "-C", ws, "--home", home)
        assert result.returncode == 0, result.stderr
        return result.stdout

    first = json.loads(cli("snapshot", "-m", "first", "--json"))["result"]["id"]
    (ws / "a.py").write_text("one\ntwo\n")
    (ws / "b.py").write_text("b\n")
    status = json.loads(cli("status", "--json"))["result"]
    assert {(c["path"], c["status"]) for c in status} == {("a.py", "modified"), ("b.py", "added")}
    assert cli("diff", first, "--numstat").splitlines() == ["1\t0\ta.py", "1\t0\tb.py"]
    restored = json.loads(cli("restore", first, "-y", "--json"))["result"]
    assert (restored["written"], restored["deleted"]) == (1, 1)
    assert (ws / "a.py").read_text() == "one\n" and not (ws / "b.py").exists()

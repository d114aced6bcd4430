"""The distribution as installers see it: its name, metadata, and an sdist whose tests run."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_statmatch import compiler_here

import snapshotter

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "workspace-snapshotter"


def test_the_distribution_has_its_own_name_one_version_and_a_licence() -> None:
    try:
        meta = importlib.metadata.metadata(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the project is not installed (run from an installed checkout)")
    assert meta["Version"] == snapshotter.__version__
    assert meta.get("License-Expression") == "MIT"
    assert meta.get_all("Project-URL")
    assert any(c.startswith("Programming Language :: Python :: 3.10") for c in meta.get_all("Classifier") or [])
    scripts = {e.name: e.value for e in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts.get("snapshotter") == "snapshotter.frontends.entry:main"  # a hook call skips the grammar
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_no_install_hint_names_the_unrelated_snapshotter_distribution() -> None:
    """``snapshotter`` on the package index is an unrelated rsync tool: every hint names ours."""
    wrong = re.compile(r"""pip install[^\n`&;|]*?(?<![\w-])["']?snapshotter(\[|["'\s`]|$)""", re.M)
    texts = [*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), *(ROOT / "snapshotter").rglob("*.py")]
    offenders = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in texts for m in wrong.finditer(path.read_text())]
    assert not offenders


def _built(kind: str, tmp_path: Path) -> Path:
    """The ``--sdist`` or ``--wheel`` of this checkout, built into ``tmp_path``."""
    if importlib.util.find_spec("build") is None:
        pytest.skip("the build package is not installed")
    isolation = ["--no-isolation"] if _has_modern_setuptools() else []  # else the index provides setuptools
    made = subprocess.run(
        [sys.executable, "-m", "build", kind, "--outdir", str(tmp_path / "dist"), *isolation, str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    (built,) = (tmp_path / "dist").iterdir()
    return built


def test_the_sdist_carries_what_its_tests_need(tmp_path: Path) -> None:
    sdist = _built("--sdist", tmp_path)
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        if hasattr(tarfile, "data_filter"):
            archive.extractall(tmp_path / "unpacked", filter="data")
        else:  # pragma: no cover - Pythons before the extraction filters
            archive.extractall(tmp_path / "unpacked")  # noqa: S202 - our own archive, just built
    needed = {"LICENSE", "README.md", "SECURITY.md", "pyproject.toml", "snapshotter/py.typed", *PAGE, *STAT_LOOP}
    needed |= {str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("*.py")}
    assert needed <= names, sorted(needed - names)
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=unpacked,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-2000:]
    assert "error" not in collected.stdout.lower().splitlines()[-1]


STAT_LOOP_MODULE = "snapshotter/engine/worktree/_statmatch"
STAT_LOOP = {"setup.py", f"{STAT_LOOP_MODULE}.c"}
"""The optional C stat loop and what builds it: an install from the sdist compiles it where it can."""

PAGE = {f"snapshotter/frontends/page/{name}" for name in ("index.html", "page.js", "page.css")}
"""The page of ``snapshotter ui``: package data, read with ``importlib.resources``."""


def test_the_wheel_carries_the_page_and_every_module(tmp_path: Path) -> None:
    """Every module of every wing, and the page: a folder missing from pyproject's package list fails here."""
    modules = {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "snapshotter").rglob("*.py") if "__pycache__" not in p.parts
    }
    with zipfile.ZipFile(_built("--wheel", tmp_path)) as archive:
        names = set(archive.namelist())
    assert names >= PAGE | modules, sorted((PAGE | modules) - names)
    if compiler_here():  # the build could compile it: the wheel carries it
        assert any(
            name.startswith("snapshotter/engine/worktree/_statmatch.") and name.endswith(".so") for name in names
        )


def _has_modern_setuptools() -> bool:
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        return False
    return major >= 77

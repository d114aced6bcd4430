"""Virtual environments are left out by default whatever their name: a folder
holding a ``pyvenv.cfg`` (PEP 405) is excluded like ``.venv/``, in a full walk,
a watched one and a new store's size check alike; the caller can take them in."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tree_modes, write

from snapshotter import Snapshotter

VENV = {
    "env/pyvenv.cfg": "home = /usr/bin\n",
    "env/bin/python": "#!/bin/sh\n",
    "env/lib/python3.11/site-packages/pkg/__init__.py": "x = 1\n",
}


def tracked(snap: Snapshotter) -> set[str]:
    return set(tree_modes(snap, snap.list(limit=1)[0].tree_id))


@pytest.mark.parametrize("watch", [False, True])
def test_a_folder_holding_pyvenv_cfg_is_excluded_whatever_its_name(ws: Path, make, watch: bool) -> None:  # type: ignore[no-untyped-def]
    write(ws, {**VENV, "envs/py311/pyvenv.cfg": "x\n", "envs/py311/lib/a.py": "a\n", "envs/log.txt": "log\n"})
    write(ws, {"env2/settings.py": "S = 1\n", "src/app.py": "print()\n", "pyvenv.cfg": "at the root: not a venv\n"})
    snap = make(watch=watch)
    snap.snapshot()
    assert tracked(snap) == {"envs/log.txt", "env2/settings.py", "src/app.py", "pyvenv.cfg"}
    write(ws, {"env2/pyvenv.cfg": "made a venv since\n", "env/lib/new.py": "n\n"})
    snap.snapshot()
    assert tracked(snap) == {"envs/log.txt", "src/app.py", "pyvenv.cfg"}
    assert snap.status() == []


def test_the_caller_can_take_environments_in(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {**VENV, "a.txt": "a\n"})
    snap = make(use_default_excludes=False)
    snap.snapshot()
    assert tracked(snap) == {*VENV, "a.txt"}


def test_a_restore_brings_back_what_an_environment_made_since_hides_and_keeps_the_rest(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A ``pyvenv.cfg`` is a file the agent can write: it never keeps a restore
    from bringing a recorded file back (saved first); the environment's own
    files, which no snapshot holds, stay as they are."""
    write(ws, {"env/settings.py": "recorded\n", "a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    write(ws, {**VENV, "env/settings.py": "now a venv's\n"})
    result = snap.restore(first.id)
    assert (ws / "env/settings.py").read_text() == "recorded\n" and result.kept == ()
    assert all((ws / path).read_text() == content for path, content in VENV.items())
    assert snap.undo().ok and (ws / "env/settings.py").read_text() == "now a venv's\n"

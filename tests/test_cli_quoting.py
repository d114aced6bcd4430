"""Paths the command line prints are quoted as git quotes them (``core.quotePath``):
a name with a newline, a tab, a quote, a backslash or bytes that are not
ASCII comes out in double quotes with C escapes and octal bytes, so a script
reading lines gets every path right; ``-z`` prints them raw, each ended by a
NUL, where git has ``-z``. git is the oracle; ``--json`` keeps the names as they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GIT, needs_git

from snapshotter.frontends.cli.cli import main
from snapshotter.frontends.shared.rendering import quoted

NAMES = [b"plain.txt", b"new\nline.txt", b"tab\there.txt", b'quo"te.txt', b"back\\slash.txt", "ünï.txt".encode()]
if sys.platform.startswith("linux"):
    NAMES.append(b"caf\xe9-latin1.txt")  # not UTF-8: Linux keeps the bytes


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _make(ws: Path) -> None:
    for name in NAMES:
        with open(os.path.join(os.fsencode(ws), name), "wb") as f:
            f.write(b"x\n")


def test_quoting_follows_gits_rules() -> None:
    assert quoted("plain/path.txt") == "plain/path.txt"
    assert quoted("a\nb") == '"a\\nb"'
    assert quoted('a"b\\c\td') == '"a\\"b\\\\c\\td"'
    assert quoted("é") == '"\\303\\251"'
    assert quoted(os.fsdecode(b"\xe9")) == '"\\351"'
    assert quoted("\x01\x7f") == '"\\001\\177"'


@pytest.fixture
def base(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("SNAPSHOTTER_NO_WATCHER", "1")
    (ws / "keep.txt").write_text("k\n")
    assert main(["-C", str(ws), "--home", str(home), "snapshot"]) == 0
    _make(ws)
    return ["-C", str(ws), "--home", str(home)]


def test_status_diff_and_restore_quote_what_they_print(
    ws: Path, base: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    expected = sorted(quoted(os.fsdecode(name)) for name in NAMES)
    code, out, _ = run(capsys, *base, "status")
    assert code == 0 and sorted(line.removeprefix("A ") for line in out.splitlines()) == expected
    code, out, _ = run(capsys, *base, "diff", "--stat")
    assert sorted(line.split(" | ")[0].strip() for line in out.splitlines()[:-1]) == expected
    code, out, _ = run(capsys, *base, "restore", "@", "--dry-run")
    assert sorted(line.removeprefix("delete ") for line in out.splitlines()[:-1]) == expected
    code, out, _ = run(capsys, *base, "--json", "status")  # a document keeps the names as they are
    assert sorted(c["path"] for c in json.loads(out)["result"]) == sorted(os.fsdecode(n) for n in NAMES)


def test_z_ends_each_raw_path_with_a_nul(ws: Path, base: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    capsysbinary.readouterr()
    assert main([*base, "status", "-z"]) == 0
    out = capsysbinary.readouterr().out
    assert out.endswith(b"\0") and sorted(out.split(b"\0")[:-1]) == sorted(b"A " + name for name in NAMES)


@needs_git
@pytest.mark.parametrize("shape", ["--name-status", "--numstat"])
@pytest.mark.parametrize("nul", [False, True])
def test_diff_lists_paths_as_git_does(
    ws: Path, base: list[str], capsysbinary: pytest.CaptureFixture[bytes], shape: str, nul: bool
) -> None:
    assert GIT is not None
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    git = [GIT, "-c", "core.quotePath=true", "-c", "user.name=t", "-c", "user.email=t@t"]
    scratch = ws.parent / "oracle"
    scratch.mkdir()
    (scratch / "keep.txt").write_text("k\n")
    subprocess.run([*git, "init", "-q"], cwd=scratch, check=True, env=env)
    subprocess.run([*git, "add", "-A"], cwd=scratch, check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "k"], cwd=scratch, check=True, env=env)
    _make(scratch)
    subprocess.run([*git, "add", "-A"], cwd=scratch, check=True, env=env)
    flags = [shape, *(["-z"] if nul else [])]
    expected = subprocess.run([*git, "diff", "--cached", *flags], cwd=scratch, capture_output=True, env=env).stdout
    capsysbinary.readouterr()
    assert main([*base, "diff", *flags]) == 0
    got = capsysbinary.readouterr().out
    separator = b"\0" if nul else b"\n"
    if nul and shape == "--name-status":  # "A\0path\0": pairs of fields
        pairs = lambda raw: sorted(zip(raw.split(b"\0")[::2], raw.split(b"\0")[1::2]))  # noqa: E731
        assert pairs(got) == pairs(expected)
    else:
        assert sorted(got.split(separator)) == sorted(expected.split(separator))

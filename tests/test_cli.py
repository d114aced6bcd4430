"""The minimal command line: snapshot, log, diff, restore and status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write

from snapshotter.frontends.cli.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_snapshot_log_status_diff_restore(ws: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(ws, {"a.txt": "one\n"})
    base = ["-C", str(ws), "--home", str(home)]
    code, out, _ = run(capsys, "snapshot", *base, "-m", "first", "--label", "start")
    assert code == 0 and "first" in out and "[start]" in out
    snap_id = out.split()[0]
    write(ws, {"a.txt": "two\n", "b.txt": "b\n"})
    code, out, _ = run(capsys, "status", *base)
    assert code == 0 and out.splitlines() == ["M a.txt", "A b.txt"]
    code, out, _ = run(capsys, "diff", *base)
    assert code == 0 and "-one\n+two\n" in out and "diff --git a/b.txt b/b.txt" in out
    code, out, _ = run(capsys, "diff", *base, "--numstat")
    assert out.splitlines() == ["1\t1\ta.txt", "1\t0\tb.txt"]
    code, out, _ = run(capsys, "restore", *base, "start", "--dry-run")
    assert code == 0 and "would write 1, would delete 1" in out
    assert (ws / "a.txt").read_text() == "two\n"
    code, out, err = run(capsys, "restore", *base, snap_id)  # nobody to ask (not a terminal): refused
    assert code == 2 and "Pass --yes" in err and (ws / "a.txt").read_text() == "two\n"
    code, out, _ = run(capsys, "restore", *base, snap_id, "--yes")
    assert code == 0 and "wrote 1, deleted 1" in out and "undo with" in out
    assert (ws / "a.txt").read_text() == "one\n" and not (ws / "b.txt").exists()
    code, out, _ = run(capsys, "log", *base)
    assert code == 0 and len(out.splitlines()) == 2 and "[pre-restore]" in out


def test_errors_are_one_line_with_exit_codes(ws: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["-C", str(ws), "--home", str(home)]
    code, out, err = run(capsys, "restore", *base, "nope")
    assert code == 3 and err.startswith("snapshotter: ") and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "log", "-C", str(ws / "missing"), "--home", str(home))
    assert code == 1 and "does not exist" in err and "Traceback" not in err
    code, _, err = run(capsys, "diff", *base)
    assert code == 3 and "no snapshots yet" in err
    assert main(["frobnicate"]) == 2  # a usage error: argparse's message and exit code
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_console_script_and_module_run_in_a_subprocess(ws: Path, home: Path, tmp_path: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home))
    result = subprocess.run(
        [sys.executable, "-m", "snapshotter", "snapshot", "-m", "via module"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    exe = Path(sys.executable).parent / "snapshotter"
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    result = subprocess.run([str(exe), "log"], cwd=ws, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "via module" in result.stdout


def test_a_merge_names_what_it_takes_not_a_revert(
    ws: Path, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A merge prints ``take`` for a path it gives the fork's version whole; ``revert`` is a revert's word."""
    write(ws, {"a.txt": "a\n"})
    base = ["-C", str(ws), "--home", str(home)]
    assert run(capsys, "snapshot", *base, "--label", "start")[0] == 0
    fork = tmp_path / "fork"
    assert run(capsys, "fork", *base, "start", str(fork))[0] == 0
    write(fork, {"new.txt": "from the fork\n"})
    code, out, _ = run(capsys, "merge", *base, str(fork))
    assert code == 0 and "take     new.txt" in out.splitlines() and "revert" not in out
    assert (ws / "new.txt").read_text() == "from the fork\n"


@pytest.mark.parametrize("flag", ["--stat", "--numstat", "--name-status"])
def test_a_diff_that_shows_no_patch_makes_none(
    ws: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    """``diff --stat`` (and the other summaries) print counts: making each file's patch
    text as well (for a JSON result nobody asked for) doubled a diff's line work."""
    from snapshotter.engine.compare import diff

    write(ws, {"a.txt": "one\n"})
    base = ["-C", str(ws), "--home", str(home)]
    assert run(capsys, "snapshot", *base, "-m", "first")[0] == 0
    write(ws, {"a.txt": "two\n", "b.txt": "b\n"})
    made: list[str] = []
    render = diff.render_patch
    monkeypatch.setattr(diff, "render_patch", lambda change, *rest: made.append(change.path) or render(change, *rest))
    code, out, _ = run(capsys, "diff", *base, flag)
    assert code == 0 and "a.txt" in out and made == []
    code, out, _ = run(capsys, "diff", *base, flag, "--json")  # the JSON result carries every patch
    assert code == 0 and '"patch"' in out and sorted(made) == ["a.txt", "b.txt"]

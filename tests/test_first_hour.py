"""What a new user hit in the first hour, end to end through the real console
script (``snapshotter ...`` in a subprocess): each case failed before its fix."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_command, write


@pytest.fixture
def cli(tmp_path: Path, ws: Path):  # type: ignore[no-untyped-def]
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home")}

    def run(*args: str, cwd: Path | None = None, **options: Any) -> subprocess.CompletedProcess[str]:
        return run_command(*args, cwd=cwd or ws, env={**env, **options.pop("env", {})}, **options)

    return run


def result(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)["result"]


# -- 1. no-change snapshots never evict real history ------------------------------------------


def test_read_only_tool_calls_never_evict_the_only_snapshot_of_an_earlier_state(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"app.py": "version 1\n"})
    env = {"SNAPSHOTTER_MAX_SNAPSHOTS": "8"}
    first = result(cli("--json", "snapshot", "-m", "version 1", env=env))
    write(ws, {"app.py": "version 2\n"})
    assert cli("snapshot", "-m", "version 2", env=env).returncode == 0
    for call in range(6):  # read-only calls, bracketed as the docs say: 12 snapshots of one state
        assert cli("tool", "begin", f"read-{call}", env=env).returncode == 0
        assert cli("tool", "done", f"read-{call}", env=env).returncode == 0
    listed = result(cli("--json", "log", "-n", "0", env=env))
    assert len(listed) <= 8
    assert first["id"] in {s["id"] for s in listed}, "the only snapshot of version 1 was dropped"
    assert cli("restore", "-y", first["id"], env=env).returncode == 0
    assert (ws / "app.py").read_text() == "version 1\n"


# -- 2. a failed restore never moves @; a selective restore hides no pending edit ---------------


def _without_write_override() -> None:
    """In the child: drop the capability that lets root write into any folder."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(24, 1, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_DAC_OVERRIDE
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.fixture
def unprivileged(tmp_path: Path) -> dict[str, Any]:
    """Subprocess options under which a read-only folder really refuses writes."""
    if os.name != "posix":
        pytest.skip("POSIX permissions")
    options: dict[str, Any] = {}
    if os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            pytest.skip("root writes everywhere; dropping that needs Linux capabilities")
        options = {"preexec_fn": _without_write_override}
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0o555)
    try:
        made = subprocess.run(
            [sys.executable, "-c", f"open({str(probe / 'x')!r}, 'w')"], capture_output=True, **options
        )
    finally:
        probe.chmod(0o755)
    if made.returncode == 0:
        pytest.skip("a read-only folder still takes new files here")
    return options


def test_a_failed_restore_leaves_at_and_status_as_they_were(ws: Path, cli, unprivileged: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"locked/config.txt": "good\n", "other.txt": "o\n"})
    start = result(cli("--json", "snapshot", "--label", "start", **unprivileged))
    write(ws, {"locked/config.txt": "broken by the agent\n"})
    (ws / "locked").chmod(0o555)
    try:
        failed = cli("restore", "-y", "start", **unprivileged)
        assert failed.returncode != 0, failed.stdout
        assert (ws / "locked" / "config.txt").read_text() == "broken by the agent\n"
        assert result(cli("--json", "show", "@", **unprivileged))["id"] == start["id"]  # @ did not move
        assert cli("status", **unprivileged).stdout.split() == ["M", "locked/config.txt"]
        retried = cli("restore", "-y", "@", **unprivileged)
        assert retried.returncode != 0 and "wrote 0" not in retried.stdout  # never a success that did nothing
    finally:
        (ws / "locked").chmod(0o755)
    assert cli("restore", "-y", "@").returncode == 0
    assert (ws / "locked" / "config.txt").read_text() == "good\n"


def test_a_selective_restore_or_a_revert_hides_no_other_pending_edit(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    cli("snapshot", "--label", "start")
    write(ws, {"a.txt": "a edited\n", "b.txt": "b edited\n"})
    assert cli("restore", "start", "a.txt").returncode == 0
    assert cli("status").stdout.split() == ["M", "b.txt"]
    cli("snapshot", "--label", "two")
    write(ws, {"c.txt": "c edited\n"})
    cli("snapshot", "--label", "three")
    write(ws, {"a.txt": "a pending\n"})
    assert cli("revert", "two", "three").returncode == 0  # takes c.txt back, three ways
    assert sorted(cli("status").stdout.split()) == ["M", "M", "a.txt", "c.txt"]


# -- 3. a command run in a subfolder means the workspace above it ------------------------------


def test_a_subfolder_finds_the_workspace_above_it(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"src/app.py": "v1\n", "README": "r\n"})
    cli("snapshot", "--label", "start")
    write(ws, {"src/app.py": "v2\n"})
    below = ws / "src"
    assert cli("status", cwd=below).stdout.split() == ["M", "src/app.py"]
    assert result(cli("--json", "where", cwd=below))["workspace"] == str(ws.resolve())
    assert cli("restore", "-y", "start", cwd=below).returncode == 0
    assert (below / "app.py").read_text() == "v1\n"


def test_a_subfolder_of_a_repository_means_its_root(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    write(repo, {".git/HEAD": "ref: refs/heads/main\n", "pkg/mod.py": "m\n", "top.txt": "t\n"})
    done = result(cli("--json", "snapshot", cwd=repo / "pkg"))
    assert done["files_changed"] == 2  # the whole repository, from its root
    assert result(cli("--json", "where", cwd=repo / "pkg"))["workspace"] == str(repo.resolve())


# -- 4. big files go to a remote, streamed; a snapshot that cannot go can be left out ------------


def test_a_push_sends_a_file_over_32_mib_and_it_comes_back_whole(tmp_path: Path, ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    big = os.urandom(1 << 20) * 40  # 40 MiB, over the 32 MiB an object is ever read whole
    write(ws, {"data/model.bin": big, "small.txt": "s\n"})
    assert cli("--max-new-file-size", "0", "snapshot").returncode == 0
    pushed = cli("--json", "push", str(tmp_path / "remote.git"))
    assert pushed.returncode == 0, pushed.stderr
    clone = tmp_path / "clone"
    made = cli("clone", str(tmp_path / "remote.git"), result(pushed)["name"], str(clone), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (clone / "data" / "model.bin").read_bytes() == big


def test_skip_refused_pushes_past_a_snapshot_with_a_file_over_the_limit(tmp_path: Path, ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    env = {"SNAPSHOTTER_MAX_PUSH_FILE_SIZE": "100000"}
    write(ws, {"big.bin": os.urandom(200_000), "f.txt": "1\n"})
    old = result(cli("--json", "snapshot", env=env))
    (ws / "big.bin").unlink()
    newer = result(cli("--json", "snapshot", env=env))
    refused = cli("push", str(tmp_path / "r.git"), env=env)
    assert refused.returncode == 1 and "big.bin" in refused.stderr and "--skip-refused" in refused.stderr
    sent = result(cli("--json", "push", str(tmp_path / "r.git"), "--skip-refused", env=env))
    assert sent["snapshots_sent"] == 1 and [s["id"] for s in sent["skipped"]] == [old["id"]]
    assert sent["skipped"][0]["reason"] == "too large" and newer["id"] != old["id"]


# -- 5. 0 is no cap ----------------------------------------------------------------------------


def test_max_new_file_size_0_means_no_cap(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"small.txt": "s\n", "big.bin": b"x" * (11 << 20)})
    capped = result(cli("--json", "--max-new-file-size", "1000", "snapshot"))
    assert [s["path"] for s in capped["skipped"]] == ["big.bin"]
    info = result(cli("--json", "--max-new-file-size", "0", "snapshot"))
    assert info["skipped"] == [] and info["files_changed"] == 1  # big.bin, taken in at last


# -- 6. undo takes back a restore; checkpoint is a command -------------------------------------


def test_undo_takes_back_a_restore_and_checkpoint_is_a_command(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f.txt": "one\n"})
    assert cli("checkpoint", "-m", "one").returncode == 0
    write(ws, {"f.txt": "two\n"})
    assert cli("snapshot").returncode == 0
    write(ws, {"f.txt": "three, not snapshotted\n"})
    assert cli("restore", "-y", "@~1").returncode == 0
    assert (ws / "f.txt").read_text() == "one\n"
    undone = cli("undo")
    assert undone.returncode == 0, undone.stderr
    assert (ws / "f.txt").read_text() == "three, not snapshotted\n"
    assert cli("redo").returncode == 0 and (ws / "f.txt").read_text() == "one\n"
    assert cli("undo").returncode == 0 and (ws / "f.txt").read_text() == "three, not snapshotted\n"
    assert cli("undo").returncode == 0 and (ws / "f.txt").read_text() == "one\n"  # the checkpoint


def test_a_sessions_undo_takes_back_its_restore(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f.txt": "one\n", "g.txt": "g\n"})
    cli("--session", "agent", "snapshot", "--label", "start")
    write(ws, {"f.txt": "two\n"})
    assert cli("--session", "agent", "restore", "-y", "start").returncode == 0
    write(ws, {"g.txt": "a person's edit after the restore\n"})
    assert cli("--session", "agent", "undo").returncode == 0
    assert (ws / "f.txt").read_text() == "two\n"
    assert (ws / "g.txt").read_text() == "a person's edit after the restore\n"


# -- 7. conflict markers are no success --------------------------------------------------------


def test_conflict_markers_exit_non_zero(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f.txt": "line 1\nline 2\nline 3\n"})
    cli("snapshot", "--label", "before")
    write(ws, {"f.txt": "line 1\nline 2 by the agent\nline 3\n"})
    cli("snapshot", "--label", "after")
    write(ws, {"f.txt": "line 1\nline 2 by a person\nline 3\n"})
    marked = cli("--json", "revert", "before", "after", "--conflicts", "markers")
    assert marked.returncode == 1, marked.stdout
    error = json.loads(marked.stdout)["error"]
    assert error["type"] == "ConflictMarkers" and error["result"]["marked"] == ["f.txt"]
    assert "<<<<<<<" in (ws / "f.txt").read_text()
    assert cli("revert", "before", "after", "--conflicts", "markers").returncode == 1


# -- 10. polish, as git does it ----------------------------------------------------------------


def test_refs_read_as_git_reads_them(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    for n in range(4):
        write(ws, {"f.txt": f"{n}\n", "g.txt": f"g{n}\n"})
        cli("snapshot", "--label", f"v{n}")
    ids = [s["id"] for s in reversed(result(cli("--json", "log")))]
    assert result(cli("--json", "show", "v3~2"))["id"] == ids[1]  # REF~N, from a label
    assert result(cli("--json", "show", f"{ids[3][:8]}~"))["id"] == ids[2]  # from an id prefix
    assert result(cli("--json", "show", "@~1~1"))["id"] == ids[1]
    ranged = result(cli("--json", "diff", "v0..v2"))
    assert {d["path"] for d in ranged} == {"f.txt", "g.txt"} and "-0\n+2" in ranged[0]["patch"] + ranged[1]["patch"]
    write(ws, {"f.txt": "now\n"})
    to_now = result(cli("--json", "diff", "v2.."))
    assert [d["path"] for d in to_now] == ["f.txt", "g.txt"]
    assert result(cli("--json", "revert", "v2..v3", "--dry-run"))["reverted"] == ["g.txt"]  # f.txt merged or kept


def test_diff_and_status_take_paths_without_dashes(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"src/a.py": "a\n", "src/b.py": "b\n", "top.txt": "t\n"})
    cli("snapshot", "--label", "start")
    write(ws, {"src/a.py": "a2\n", "top.txt": "t2\n"})
    assert [d["path"] for d in result(cli("--json", "diff", "src"))] == ["src/a.py"]
    assert [d["path"] for d in result(cli("--json", "diff", "start", "top.txt"))] == ["top.txt"]
    assert cli("status", "top.txt").stdout.split() == ["M", "top.txt"]
    assert cli("status", "a.py", cwd=ws / "src").stdout.split() == ["M", "src/a.py"]  # relative to where it ran
    nowhere = cli("diff", "no-such-thing")
    assert nowhere.returncode == 1 and "neither a snapshot nor a path" in nowhere.stderr


def test_usage_errors_are_json_under_json(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    bad = cli("--json", "diff", "--stat", "--numstat")
    assert bad.returncode == 2 and "not allowed with argument" in bad.stderr
    error = json.loads(bad.stdout)["error"]
    assert error["type"] == "UsageError" and error["exit_code"] == 2 and json.loads(bad.stdout)["command"] == "diff"
    plain = cli("diff", "--stat", "--numstat")
    assert plain.returncode == 2 and plain.stdout == ""


def test_counts_are_singular_where_git_says_so_and_settings_read_as_toml(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"one.txt": "1\n"})
    assert " 1 file +1 -0" in cli("snapshot").stdout
    write(ws, {"one.txt": "1\n2\n"})
    assert cli("diff", "--stat").stdout.splitlines()[-1] == " 1 file changed, 1 insertion(+)"
    settings = cli("config").stdout
    assert "use_default_excludes = true  (default)" in settings and "session = (not set)" in settings
    assert "True" not in settings and "None" not in settings and "'" not in settings
    assert "last_gc: (not set)" in cli("stats").stdout

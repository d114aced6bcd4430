"""The command line as a user meets it, through the real console script in subprocesses:
options on either side of the command, refusals where nobody can be asked, pipes,
the base, relative refs, unreadable files, settings a workspace may not weaken,
and messages in the command line's own words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import COMMAND, run_command, write


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_command(*args, cwd=cwd, env=env)


def doc(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.stdout, result.stderr
    document = json.loads(result.stdout)
    assert document["schema"] == 1
    return document


# -- 1. global options before or after the command -------------------------------------------------

_EVERY_COMMAND: list[list[str]] = [
    ["snapshot", "-m", "first", "--label", "start"],
    ["track", "-m", "second"],
    ["log"],
    ["show", "start"],
    ["status"],
    ["diff", "start"],
    ["restore", "start", "--dry-run"],
    ["restore", "start", "--yes"],
    ["turn", "begin"],
    ["turn", "end"],
    ["undo"],
    ["redo"],
    ["turn", "revert", "1"],
    ["pin", "start"],
    ["unpin", "start"],
    ["prune", "--dry-run"],
    ["gc"],
    ["stats"],
    ["verify"],
    ["where"],
    ["config"],
    ["cleanup", "--yes"],
]


@pytest.mark.parametrize("placement", ["before", "after"])
def test_every_command_takes_global_options_on_either_side(tmp_path: Path, placement: str) -> None:
    """Run from folder A with -C B: every command acts on B (and its store under --home), never on A."""
    a, b, home = tmp_path / "A", tmp_path / "B", tmp_path / "home"
    write(a, {"a.txt": "A\n"})
    write(b, {"b.txt": "B\n"})
    assert run("snapshot", "-C", str(a), "--home", str(home)).returncode == 0  # A has a store to lose
    store_a = run("where", "-C", str(a), "--home", str(home)).stdout.strip()
    global_options = ["-C", str(b), "--home", str(home), "--json"]
    for command in _EVERY_COMMAND:
        if command == ["turn", "end"]:
            write(b, {"b.txt": "B edited\n"})
        args = [*global_options, *command] if placement == "before" else [*command, *global_options]
        result = run(*args, cwd=a)
        document = doc(result)  # --json was honoured on this side
        assert result.returncode == 0, (command, result.stderr)
        name = {"track": "snapshot"}.get(command[0], command[0])
        assert document["command"] == name
        if name == "where":
            assert document["result"]["workspace"] == str(b.resolve())
        if name == "config":
            assert document["result"]["home"]["value"] == str(home)
    assert Path(store_a).is_dir(), "cleanup with -C B removed A's store"
    assert not Path(doc(run("where", "-C", str(b), "--home", str(home), "--json"))["result"]["store"]).exists()
    assert (a / "a.txt").read_text() == "A\n"


def test_debug_on_either_side_shows_the_traceback(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    assert "Traceback" in run("--debug", "log", "-C", missing).stderr
    assert "Traceback" in run("log", "--debug", "-C", missing).stderr
    plain = run("log", "-C", missing)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr and "does not exist" in plain.stderr


# -- 5 and 6. pipes, and dangerous commands where nobody can be asked ---------------------------------


def test_a_closed_pipe_ends_quietly(ws: Path, home: Path) -> None:
    write(ws, {f"folder/file-with-a-long-name-{i:05}.txt": f"{i}\n" for i in range(6000)})
    reader = subprocess.Popen(
        [*COMMAND, "status", "-C", str(ws), "--home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert reader.stdout is not None and reader.stderr is not None
    first = reader.stdout.readline()  # as `| head -1`: read one line, then go away
    reader.stdout.close()
    err = reader.stderr.read().decode()
    reader.wait(timeout=120)
    assert first.startswith(b"A folder/")
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""
    assert reader.returncode == 141  # as git, killed by SIGPIPE


def test_cleanup_and_a_full_restore_refuse_without_yes_where_nobody_can_be_asked(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "one\n"})
    base = ["-C", str(ws), "--home", str(home)]
    first = doc(run("snapshot", *base, "--json"))["result"]["id"]
    write(ws, {"a.txt": "two\n", "b.txt": "new\n"})
    refused = run("restore", first, *base)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert (ws / "a.txt").read_text() == "two\n" and (ws / "b.txt").exists()
    assert len(doc(run("log", *base, "--json"))["result"]) == 1  # not even a safety snapshot
    as_json = doc(run("cleanup", *base, "--json"))
    assert as_json["error"]["type"] == "ConfirmationRequired" and as_json["error"]["exit_code"] == 2
    store = doc(run("where", *base, "--json"))["result"]["store"]
    assert os.path.isdir(store)
    assert run("restore", first, "a.txt", *base).returncode == 0  # a selective restore is not asked
    assert (ws / "a.txt").read_text() == "one\n"
    assert run("cleanup", "-y", *base).returncode == 0 and not os.path.isdir(store)


# -- 7. a path in neither the snapshot nor the workspace --------------------------------------------


def test_restoring_a_path_that_exists_nowhere_is_an_error_before_anything_is_written(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "one\n", "src/b.py": "b\n"})
    base = ["-C", str(ws), "--home", str(home)]
    first = doc(run("snapshot", *base, "--json"))["result"]["id"]
    write(ws, {"a.txt": "two\n"})
    missing = run("restore", first, "a.txt", "nosuchfile", *base)
    assert missing.returncode == 3 and "nosuchfile is neither in snapshot" in missing.stderr
    assert "wrote" not in missing.stdout and (ws / "a.txt").read_text() == "two\n"
    assert len(doc(run("log", *base, "--json"))["result"]) == 1  # no safety snapshot either
    folder = run("restore", first, "src", *base)  # a folder of the snapshot is a path too
    assert folder.returncode == 0, folder.stderr


# -- 8 and 14. the base, relative refs, limited diffs, log and where --------------------------------


def test_status_after_a_restore_is_empty_and_refs_count_from_the_base(ws: Path, home: Path) -> None:
    base = ["-C", str(ws), "--home", str(home)]
    ids = []
    for i in range(3):
        write(ws, {"a.txt": f"version {i}\n", f"f{i}.txt": "x\n"})
        ids.append(doc(run("snapshot", *base, "-m", f"v{i}", "--json"))["result"]["id"])
    assert doc(run("show", "@", *base, "--json"))["result"]["id"] == ids[2]
    assert doc(run("show", "@~2", *base, "--json"))["result"]["id"] == ids[0]
    assert doc(run("show", "@~", *base, "--json"))["result"]["id"] == ids[1]
    too_far = run("show", "@~3", *base)
    assert too_far.returncode == 3 and "past the oldest" in too_far.stderr
    assert run("restore", "@~2", "--yes", *base).returncode == 0
    assert run("status", *base).stdout == ""  # compared with what the folder was made equal to
    assert doc(run("status", *base, "--json"))["result"] == []
    log = run("log", *base).stdout.splitlines()
    marked = [line for line in log if line[12:14] == " @"]
    assert len(marked) == 1 and marked[0].startswith(ids[0][:12])  # the base, not the newest (pre-restore)
    assert all(" file +" in line or " files +" in line for line in log)  # counts and labels, one line each
    assert log[0].startswith(ids[2][:12])  # the restore's safety snapshot is v2 itself: nothing had changed
    write(ws, {"a.txt": "edited\n", "f0.txt": "edited\n"})
    limited = doc(run("diff", "@", "--json", *base, "--", "a.txt"))["result"]
    assert [d["path"] for d in limited] == ["a.txt"]
    assert [c["path"] for c in doc(run("status", "--json", *base, "--", "f0.txt"))["result"]] == ["f0.txt"]
    everything = doc(run("diff", "--json", *base))["result"]  # no FROM: the base
    assert sorted(d["path"] for d in everything) == ["a.txt", "f0.txt"]
    pinned = run("pin", "start", *base, "--", "x")
    assert pinned.returncode == 2  # pin takes no paths


def test_where_names_the_store_without_creating_it(ws: Path, home: Path) -> None:
    base = ["-C", str(ws), "--home", str(home)]
    found = doc(run("where", *base, "--json"))["result"]
    assert found["workspace"] == str(ws.resolve()) and found["exists"] is False
    assert not os.path.exists(found["store"]) and "not created yet" in run("where", *base).stdout
    write(ws, {"a.txt": "a\n"})
    first = run("snapshot", *base)
    assert first.returncode == 0 and found["store"] in first.stderr and "snapshotter status" in first.stderr
    assert run("where", *base).stdout.strip() == found["store"]
    assert found["store"] not in run("snapshot", *base).stderr  # the hint comes once, with the first


def test_show_prints_a_summary_and_json_only_when_asked(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "1\n2\n"})
    base = ["-C", str(ws), "--home", str(home)]
    run("snapshot", "-m", "first line\n\nmore", "--label", "start", "--meta", "who=me", *base)
    shown = run("show", "start", *base).stdout
    assert not shown.lstrip().startswith("{")
    assert "label     start" in shown and "meta      who=me" in shown and "    first line" in shown
    assert "1 file, +2 -0 lines" in shown
    assert doc(run("show", "start", "--json", *base))["result"]["label"] == "start"


# -- 9. unreadable files -------------------------------------------------------------------------------


def _without_read_override() -> None:
    """In the child, before exec: drop the capabilities that let root read any file,
    so that a file with mode 000 is unreadable to it as to anyone (Linux)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.fixture
def denied(tmp_path: Path) -> dict[str, Any]:
    """Subprocess options under which chmod 000 really denies reads (skips where that cannot be had)."""
    if os.name != "posix":
        pytest.skip("POSIX permissions")
    options: dict[str, Any] = {}
    if os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            pytest.skip("root reads every file; dropping that needs Linux capabilities")
        options = {"preexec_fn": _without_read_override}
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        read = subprocess.run([sys.executable, "-c", f"open({str(probe)!r}).read()"], capture_output=True, **options)
    except OSError as exc:
        pytest.skip(f"cannot start a process without read override: {exc}")
    finally:
        probe.chmod(0o600)
    if read.returncode == 0:
        pytest.skip("a file with mode 000 is still readable here")
    return options


def test_unreadable_files_are_reported_and_kept_as_last_recorded(ws: Path, home: Path, denied: dict[str, Any]) -> None:
    write(ws, {"secret.txt": "v1\n", "open.txt": "o\n"})

    def as_user(*args: str) -> subprocess.CompletedProcess[str]:
        return run_command(*args, "-C", str(ws), "--home", str(home), **denied)

    first = as_user("snapshot", "--json")
    assert first.returncode == 0, first.stderr
    first_id = json.loads(first.stdout)["result"]["id"]
    (ws / "secret.txt").write_text("v2, unreadable\n")
    os.chmod(ws / "secret.txt", 0)
    status = json.loads(as_user("status", "--json").stdout)["result"]
    assert [(c["path"], c["status"]) for c in status] == [("secret.txt", "unreadable")]
    assert as_user("status").stdout.splitlines() == ["X secret.txt"]
    diff = json.loads(as_user("diff", first_id, "--json").stdout)["result"]
    assert [(d["path"], d["status"]) for d in diff] == [("secret.txt", "unreadable")]  # not "deleted"
    assert as_user("diff", first_id, "--numstat").stdout.splitlines() == ["-\t-\tsecret.txt"]
    second = json.loads(as_user("snapshot", "--json").stdout)["result"]
    assert {"path": "secret.txt", "reason": "unreadable"} in second["skipped"]
    os.chmod(ws / "secret.txt", 0o644)
    (ws / "secret.txt").write_text("v3\n")
    os.chmod(ws / "secret.txt", 0)
    restored = json.loads(as_user("restore", first_id, "--yes", "--json").stdout)["result"]
    assert [(k["path"], k["reason"]) for k in restored["kept"]] == [("secret.txt", "unreadable")]
    os.chmod(ws / "secret.txt", 0o644)
    assert (ws / "secret.txt").read_text() == "v3\n"  # never overwritten while unreadable
    back = as_user("restore", second["id"], "--yes", "--json")  # its secret.txt is v1, kept as last recorded
    assert json.loads(back.stdout)["result"]["deleted_paths"] == []
    assert (ws / "secret.txt").read_text() == "v1\n"


# -- 10. a file inside the workspace cannot weaken safety ---------------------------------------------


def test_workspace_files_cannot_weaken_safety(ws: Path, home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    write(
        ws,
        {
            ".env": "SECRET=1\n",
            "big.bin": b"\1" * 4000,
            "app.log": "noise\n",
            "a.txt": "a\n",
            "pyproject.toml": (
                "[tool.snapshotter]\n"
                "use_default_excludes = false\n"
                f"home = '{elsewhere}'\n"
                "allow_unsafe_root = true\n"
                "max_new_file_size = 1000000000\n"
                "max_store_bytes = 1\n"
                "max_snapshots = 2\n"
                "exclude = ['*.log']\n"
            ),
            "snapshotter.toml": "max_new_file_size = 3000\ntrust_folder_mtimes = false\nmax_age_days = 30\n",
        },
    )
    base = ["-C", str(ws), "--home", str(home)]
    result = run("snapshot", *base, "--json")
    document = doc(result)
    recorded = {s["path"]: s["reason"] for s in document["result"]["skipped"]}
    assert recorded == {"big.bin": "too-large"}  # the workspace's own lower cap holds
    for name in ("use_default_excludes", "home", "allow_unsafe_root", "max_store_bytes", "max_snapshots"):
        assert any(name in w for w in document["warnings"]), name
        assert f"warning: ignored {name}" in result.stderr
    assert not elsewhere.exists()
    settings = doc(run("config", *base, "--json"))["result"]
    assert settings["use_default_excludes"]["value"] is True and settings["home"]["source"] == "command line"
    assert settings["max_new_file_size"] == {"value": 3000, "source": str(ws / "snapshotter.toml")}
    assert settings["exclude"]["value"] == ["*.log"]
    assert settings["max_age_days"]["value"] == 30.0 and settings["trust_folder_mtimes"]["value"] is False
    assert document["result"]["files_changed"] == 3  # a.txt and the two settings files: no .env, no app.log
    assert doc(run("diff", "@", "--json", *base))["result"] == []
    write(ws, {"pyproject.toml": "[tool.snapshotter\nbroken"})  # malformed: a warning, never a failure
    broken = run("snapshot", *base)
    assert broken.returncode == 0 and "ignored" in broken.stderr and "pyproject.toml" in broken.stderr


def test_the_caller_may_weaken_safety_from_outside_the_workspace(ws: Path, home: Path, tmp_path: Path) -> None:
    user_config = tmp_path / "user.toml"
    user_config.write_text("use_default_excludes = false\n")
    write(ws, {".env": "SECRET=1\n", "a.txt": "a\n"})
    info = doc(
        run("snapshot", "-C", str(ws), "--home", str(home), "--json", env={"SNAPSHOTTER_CONFIG": str(user_config)})
    )
    assert info["result"]["files_changed"] == 2  # .env recorded: the user asked for it outside the workspace
    flagged = doc(run("config", "-C", str(ws), "--no-default-excludes", "--json"))["result"]
    assert flagged["use_default_excludes"] == {"value": False, "source": "command line"}


# -- 13. messages in the command line's words ---------------------------------------------------------


def test_errors_name_flags_and_commands_and_json_errors_public_types(ws: Path, home: Path, tmp_path: Path) -> None:
    fake_home = tmp_path / "fake-home"
    fake_home.mkdir()
    unsafe = run("snapshot", "-C", str(fake_home), "--home", str(home), env={"HOME": str(fake_home)})
    assert (
        unsafe.returncode == 1 and "--allow-unsafe-root" in unsafe.stderr and "allow_unsafe_root" not in unsafe.stderr
    )
    allowed = run(
        "snapshot", "-C", str(fake_home), "--home", str(home), "--allow-unsafe-root", env={"HOME": str(fake_home)}
    )
    assert allowed.returncode == 0, allowed.stderr
    write(ws, {f"f{i}": "x" for i in range(5)})
    capped = run("snapshot", "-C", str(ws), "--home", str(home), "--max-workspace-entries", "3")
    assert "--max-workspace-entries" in capped.stderr and "max_workspace_entries" not in capped.stderr
    a_file = ws / "f0"
    not_folder = run("log", "-C", str(a_file), "--home", str(home))
    assert not_folder.returncode == 1 and "is not a folder" in not_folder.stderr
    no_turn = doc(run("turn", "end", "-C", str(ws), "--home", str(home), "--json"))
    assert "snapshotter turn begin" in no_turn["error"]["message"] and no_turn["error"]["type"] == "InvalidInput"
    missing = doc(run("show", "nope", "-C", str(ws), "--home", str(home), "--json"))["error"]
    assert missing["type"] == "SnapshotNotFound" and "snapshotter log" in missing["message"]
    nothing = doc(run("redo", "-C", str(ws), "--home", str(home), "--json"))["error"]
    assert nothing["type"] == "NothingToDo" and not nothing["type"].startswith("_")


def test_reusing_a_label_warns_that_it_moved(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "1\n"})
    base = ["-C", str(ws), "--home", str(home)]
    first = doc(run("snapshot", "--label", "ready", "--json", *base))
    assert "warnings" not in first
    write(ws, {"a.txt": "2\n"})
    again = run("snapshot", "--label", "ready", "--json", *base)
    document = doc(again)
    assert again.returncode == 0 and "warning: label 'ready' now names the new snapshot" in again.stderr
    assert document["warnings"] == [
        f"label 'ready' now names the new snapshot; it named {first['result']['id'][:12]} before (still listed, by id)"
    ]
    assert doc(run("show", "ready", "--json", *base))["result"]["id"] == document["result"]["id"]
    assert doc(run("show", first["result"]["id"], "--json", *base))["result"]["label"] == "ready"

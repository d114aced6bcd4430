"""The git binary as the oracle: tree ids, ignore decisions, fsck and numstat agree.

Skipped where git is absent; everything else in the suite runs without git.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from conftest import git, git_env, git_shadow_tree, needs_git, write

from snapshotter import DEFAULT_EXCLUDES
from snapshotter.engine.gitstore import deflate
from snapshotter.engine.worktree.ignore import IgnoreSource, IgnoreStack, root_stack

pytestmark = needs_git

NAMES = [
    "a",
    "b",
    "build",
    "docs",
    "src",
    "x.log",
    "keep.log",
    "data.txt",
    "ünï cödé",
    "sp ace",
    "node_modules",
    ".hidden",
    "deep",
]
EXTS = ["", ".py", ".log", ".txt", ".md", ".c", ".o"]
PATTERNS = [
    "*.log",
    "!keep.log",
    "build/",
    "/docs",
    "**/deep",
    "src/**/*.o",
    "*.o",
    "!important.o",
    "a/**",
    "!a/keep*",
    "data.txt",
    "/b/",
    "x.log/",
    "**/tmp/",
    "*.md",
    "!README.md",
    "sp\\ ace",
    "[ab].txt",
    "?.py",
    "deep/**/x*",
    "**",
    "!*/",
    "!**/*.py",
    "*/",
    "docs/*.txt",
    "\\#hash",
    "trailing ",
    "ünï*",
    "/a/b/c",
    "**/b/**",
]


def random_workspace(root: Path, rng: random.Random) -> None:
    def fill(folder: Path, depth: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for _ in range(rng.randint(1, 5)):
            name = rng.choice(NAMES) + rng.choice(EXTS)
            path = folder / name
            if path.exists() or path.is_symlink():
                continue
            roll = rng.random()
            if roll < 0.25 and depth < 4:
                fill(path, depth + 1)
            elif roll < 0.32:
                os.symlink(rng.choice(["../a", "nowhere", "a.txt", "/etc/passwd"]), path)
            elif roll < 0.36:
                path.mkdir()  # an empty folder: git does not record it
            else:
                body = rng.choice(["", "x\n", "line\n" * rng.randint(1, 5), "no newline", "\0binary"])
                path.write_text(body)
                if rng.random() < 0.2:
                    path.chmod(0o755)
        if rng.random() < 0.5:
            (folder / ".gitignore").write_text("\n".join(rng.sample(PATTERNS, rng.randint(1, 5))) + "\n")

    fill(root, 0)
    prefix_siblings(root, rng)
    (root / ".env").write_text("SECRET=1\n")


PREFIX_TAILS = [".txt", ".c", "-bar", " 2", "!", "0"]
"""What a sibling's name adds to a folder's: all but the last sort before ``/``."""


def prefix_siblings(root: Path, rng: random.Random) -> None:
    """Beside about half the folders, a file or folder named as the folder plus a
    tail (``a`` + ``a.txt``): git orders a folder as if its name ended in ``/``, so
    ``a.txt`` comes first; a sort by bare name puts ``a`` first (tests/test_tree_order.py)."""
    folders = [Path(top) / name for top, names, _ in os.walk(root) for name in names]
    for folder in sorted(folders):
        if folder.is_symlink() or rng.random() < 0.5:
            continue
        sibling = folder.with_name(folder.name + rng.choice(PREFIX_TAILS))
        if sibling.exists() or sibling.is_symlink():
            continue
        if rng.random() < 0.3:
            sibling.mkdir()
            (sibling / "inner.txt").write_text("in a prefix sibling\n")
        else:
            sibling.write_text("a prefix sibling\n")


def snapshotter_tree(make, workspace: Path) -> str:  # type: ignore[no-untyped-def]
    return make(workspace).snapshot("oracle").tree_id


@pytest.mark.parametrize("seed", range(40))
def test_tree_id_matches_git_on_random_workspaces(seed: int, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / f"w{seed}"
    random_workspace(workspace, random.Random(seed))
    assert snapshotter_tree(make, workspace) == git_shadow_tree(workspace, tmp_path / "git")


def test_tree_id_matches_git_on_hand_written_cases(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(
        ws,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n/anchored.txt\nout/**\n!out/keep/\nlogs/**/*.tmp\n",
            "keep.log": "kept\n",
            "drop.log": "dropped\n",
            "anchored.txt": "ignored at root\n",
            "sub/anchored.txt": "kept below root\n",
            "sub/.gitignore": "!drop.log\n*.txt\n",
            "sub/drop.log": "re-included by the deeper file\n",
            "sub/notes.txt": "ignored by the deeper file\n",
            "build/x.c": "ignored folder\n",
            "src/build": "a file named build is not a folder\n",
            "out/a.txt": "ignored\n",
            "out/keep/b.txt": "git: out/** still excludes\n",
            "logs/a/b/c.tmp": "ignored\n",
            "logs/a/b/c.txt": "kept\n",
            "empty.txt": "",
            "unicode/ünïcödé.txt": "ü\n",
            "with space/file name.txt": "s\n",
            "pair/f": "a folder whose name is a prefix of its siblings': git sorts it as pair/\n",
            "pair.txt": "before the folder pair\n",
            "pair-2/f": "a folder before the folder pair\n",
            "pair 3": "before the folder pair\n",
            "pair0": "after the folder pair\n",
            "sub/x.c": "before the folder x\n",
            "sub/x/y.c": "y\n",
            "script.sh": "#!/bin/sh\n",
            "node_modules/pkg/index.js": "default-excluded\n",
            ".env": "SECRET=1\n",
            ".env.local": "SECRET=2\n",
            "__pycache__/m.pyc": "cache\n",
        },
    )
    (ws / "script.sh").chmod(0o755)
    os.symlink("script.sh", ws / "link")
    os.symlink("missing/target", ws / "dangling")
    os.symlink("sub", ws / "dirlink")
    (ws / "empty-folder").mkdir()
    assert snapshotter_tree(make, ws) == git_shadow_tree(ws, tmp_path / "git")


def test_workspace_info_exclude_is_honoured_like_git(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.secret": "s", "b.txt": "b", ".git/info/exclude": "*.secret\n", ".git/HEAD": "ref: x\n"})
    excludes = DEFAULT_EXCLUDES + ("*.secret",)
    assert snapshotter_tree(make, ws) == git_shadow_tree(ws, tmp_path / "git", excludes)


def test_nested_repository_files_are_recorded_without_their_git_folder(
    ws: Path,
    tmp_path: Path,
    make,  # type: ignore[no-untyped-def]
) -> None:
    write(ws, {"top.txt": "t\n", "inner/code.py": "x = 1\n", "inner/.gitignore": "*.bin\n", "inner/data.bin": "b"})
    env = git_env(tmp_path)
    git("init", "-q", str(ws / "inner"), env=env)
    git("-C", str(ws / "inner"), "add", "-A", env=env)
    git("-C", str(ws / "inner"), "commit", "-qm", "inner", env=env)
    git_dir_before = sorted(p.name for p in (ws / "inner" / ".git").iterdir())
    info = make(ws).snapshot()
    copy = tmp_path / "copy"
    shutil.copytree(ws / "inner", copy, ignore=shutil.ignore_patterns(".git"))
    expected_inner = git_shadow_tree(copy, tmp_path / "git-copy")
    listing = git("--git-dir", str(make(ws).store_path), "ls-tree", info.tree_id, env=env)
    inner_line = [line for line in listing.splitlines() if line.endswith("\tinner")]
    assert inner_line and inner_line[0].split()[1] == "tree"
    assert inner_line[0].split()[2] == expected_inner
    assert sorted(p.name for p in (ws / "inner" / ".git").iterdir()) == git_dir_before


def _our_decisions(workspace: Path, stack: IgnoreStack) -> dict[str, bool]:
    """Every path the walker judges (parents not ignored), with its verdict."""
    out: dict[str, bool] = {}
    todo = [("", workspace, stack)]
    while todo:
        rel, folder, rules = todo.pop()
        entries = list(os.scandir(folder))
        if any(e.name == ".gitignore" for e in entries):
            rules = rules.push(IgnoreSource.from_file(str(folder / ".gitignore"), rel))
        for entry in entries:
            if entry.name == ".git":
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            ignored = rules.is_ignored(path, is_dir)
            out[path] = ignored
            if is_dir and not ignored:
                todo.append((path, folder / entry.name, rules))
    return out


@pytest.mark.parametrize("seed", range(15))
def test_ignore_decisions_match_git_check_ignore(seed: int, tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    random_workspace(workspace, random.Random(1000 + seed))
    ours = _our_decisions(workspace, root_stack(str(workspace), (), True))
    shadow = tmp_path / "shadow.git"
    env = git_env(tmp_path)
    git("init", "-q", "--bare", str(shadow), env=env)
    (shadow / "info" / "exclude").write_text("\n".join(DEFAULT_EXCLUDES) + "\n")
    out = _check_ignore(shadow, workspace, sorted(ours), env)
    theirs = {p: p in out for p in ours}
    assert ours == theirs
    assert any(ours.values()) and not all(ours.values())


def _check_ignore(shadow: Path, workspace: Path, paths: list[str], env: dict[str, str]) -> set[str]:
    import subprocess

    from conftest import GIT

    assert GIT is not None
    result = subprocess.run(
        [GIT, "--git-dir", str(shadow), "--work-tree", str(workspace), "check-ignore", "--no-index", "-z", "--stdin"],
        cwd=workspace,
        env=env,
        input=b"\0".join(os.fsencode(p) for p in paths) + b"\0",
        capture_output=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return {os.fsdecode(p) for p in result.stdout.split(b"\0") if p}


def test_store_passes_git_fsck_strict(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    random_workspace(ws, random.Random(7))
    snap = make(ws)
    first = snap.snapshot("one", label="first", metadata={"session": "s1", "multi": "line\nvalue"})
    write(ws, {"new.txt": "new\n", "big.bin": os.urandom(9 << 20)})
    snap.snapshot("two")
    snap.restore(first.id)
    env = git_env(tmp_path)
    git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", env=env)
    log = git("--git-dir", snap.store_path, "log", "--all", "--format=%H %s", env=env)
    assert first.id in log


def test_numstat_matches_git_diff(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "}", "{", "", "return x", "pass"]
    files = {f"f{i}.txt": "\n".join(rng.choice(words) for _ in range(rng.randint(0, 60))) + "\n" for i in range(30)}
    files["bin.dat"] = "\0\1\2"
    write(ws, files)
    snap = make(ws)
    before = snap.snapshot()
    for i in range(30):
        lines = files[f"f{i}.txt"].splitlines()
        for _ in range(rng.randint(0, 8)):
            op = rng.random()
            at = rng.randint(0, len(lines))
            if op < 0.4:
                lines.insert(at, rng.choice(words))
            elif lines and op < 0.8:
                del lines[min(at, len(lines) - 1)]
            elif lines:
                lines[min(at, len(lines) - 1)] = rng.choice(words)
        text = "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
        (ws / f"f{i}.txt").write_text(text)
    (ws / "bin.dat").write_bytes(b"\0\3")
    (ws / "added.txt").write_text("one\ntwo\n")
    (ws / "f0.txt").unlink()
    after = snap.snapshot()
    env = git_env(tmp_path)
    out = git("--git-dir", snap.store_path, "diff", "--numstat", before.tree_id, after.tree_id, env=env)
    theirs = {}
    for line in out.splitlines():
        added, deleted, path = line.split("\t")
        theirs[path] = (added, deleted)
    ours = {
        d.path: ("-", "-") if d.binary else (str(d.additions), str(d.deletions)) for d in snap.diff(before.id, after.id)
    }
    assert ours == theirs
    total_add = sum(int(a) for a, _ in theirs.values() if a != "-")
    total_del = sum(int(d) for _, d in theirs.values() if d != "-")
    assert (after.files_changed, after.additions, after.deletions) == (len(theirs), total_add, total_del)


def test_patch_applies_with_git_apply(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "gone.txt": "bye\n", "nonl.txt": "a\nb"})
    snap = make(ws)
    before = snap.snapshot()
    write(ws, {"a.txt": "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n", "new.txt": "hello\n", "nonl.txt": "a\nc"})
    (ws / "gone.txt").unlink()
    patch = "".join(d.patch for d in snap.diff(before.id))
    copy = tmp_path / "copy"
    write(copy, {"a.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "gone.txt": "bye\n", "nonl.txt": "a\nb"})
    (tmp_path / "p.diff").write_text(patch)
    git("apply", "--check", str(tmp_path / "p.diff"), cwd=copy, env=git_env(tmp_path))
    git("apply", str(tmp_path / "p.diff"), cwd=copy, env=git_env(tmp_path))
    assert (copy / "a.txt").read_text() == (ws / "a.txt").read_text()
    assert (copy / "nonl.txt").read_text() == "a\nc"
    assert not (copy / "gone.txt").exists()


MATRIX_PATHS = [
    "X/keep",
    "X/other.txt",
    "X/sub/keep",
    "X/sub/deeper/a.c",
    "a/b/c",
    "a/x/b/c",
    "a/b.txt",
    "doc/frotz/f",
    "frotz/doc/g",
    "foo.log/y",
    "d.txt/a.txt",
    "d.txt/b.md",
    "b/b",
    "top.c",
    "lib/top.c",
    "lib/sub/top.c",
    "ünï.txt",
    "sp ace/f",
    "#hash",
    "!bang",
    "trail ",
    "q?x",
    "[x]",
    "star*",
    "deep/a/b/c/d.o",
]
MATRIX_PATTERNS = [
    ["X/**", "!X/keep"],
    ["X/**/", "!X/sub/"],
    ["X/**/*"],
    ["X/*", "!X/keep"],
    ["**/keep"],
    ["**/sub/**"],
    ["a/**/c"],
    ["a/**/b/**"],
    ["/a/b"],
    ["a/b/"],
    ["*.txt", "!d.txt"],
    ["*.txt", "!d.txt/"],
    ["*.log"],
    ["*.log", "!foo.log/"],
    ["doc/frotz/"],
    ["frotz/"],
    ["*/"],
    ["**/"],
    ["*"],
    ["**"],
    ["!*/", "*"],
    ["*", "!*/", "!*.c"],
    ["/*", "!lib/"],
    ["/*/"],
    ["lib/**/*.c"],
    ["lib/*.c"],
    ["**/*.c", "!lib/**"],
    ["\\#hash"],
    ["\\!bang"],
    ["trail\\ "],
    ["trail "],
    ["q\\?x"],
    ["\\[x\\]"],
    ["star\\*"],
    ["[xyz]*"],
    ["[!X]*"],
    ["[a-c]/"],
    ["ü*"],
    ["sp ace/"],
    ["deep/**/*.o"],
    ["deep/**"],
    ["**/b"],
    ["b/**/"],
    ["*/b"],
    ["?/b"],
    ["??/b"],
    ["a*"],
    ["X/sub", "!X/sub/keep"],
    ["X/sub/**", "!X/sub/keep"],
    ["/X/**/keep"],
]


@pytest.mark.parametrize("patterns", MATRIX_PATTERNS, ids=lambda p: "|".join(p))
def test_single_pattern_matrix_matches_git(patterns: list[str], tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    write(workspace, {p: "x\n" for p in MATRIX_PATHS})
    (workspace / ".gitignore").write_text("\n".join(patterns) + "\n")
    ours = _our_decisions(workspace, root_stack(str(workspace), (), False))
    shadow = tmp_path / "shadow.git"
    env = git_env(tmp_path)
    git("init", "-q", "--bare", str(shadow), env=env)
    out = _check_ignore(shadow, workspace, sorted(ours), env)
    assert ours == {p: p in out for p in ours}


@pytest.mark.parametrize("compressor", ["isal", "zlib"])
def test_cold_snapshot_writes_one_pack_that_git_reads(  # type: ignore[no-untyped-def]
    compressor: str, ws: Path, tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    if compressor == "zlib":
        monkeypatch.setattr(deflate, "_isal", None)
    elif deflate.backend() != "isal":
        pytest.skip("the isal package (the fast extra) is not installed")
    write(ws, {f"d{i % 7}/f{i}.txt": f"file {i}\n" * (i % 5) for i in range(300)})
    write(ws, {"dup1.txt": "same\n", "dup2.txt": "same\n"})
    (ws / "big.bin").write_bytes(random.Random(3).randbytes(1 << 20) * 9)  # streamed: over 8 MiB
    snap = make(ws)
    info = snap.snapshot()
    packs = list((Path(snap.store_path) / "objects" / "pack").glob("pack-*.pack"))
    chains = [pack for pack in packs if pack.name.startswith("pack-chain-")]  # the big file: a pack of its own
    packs = [pack for pack in packs if pack not in chains]
    assert len(packs) == 1 and packs[0].with_suffix(".idx").exists()
    assert len(chains) == 1 and chains[0].with_suffix(".idx").exists()
    assert not list((Path(snap.store_path) / "objects" / "pack").glob("tmp_*"))
    env = git_env(tmp_path)
    git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", env=env)
    assert info.tree_id == git_shadow_tree(ws, tmp_path / "git")
    removed = list(ws.glob("d3/*"))
    for path in removed:
        path.unlink()
    (ws / "d3").rmdir()
    result = snap.restore(info.id)
    assert result.written == len(removed) > 40 and (ws / "d3").is_dir()
    counted = git("--git-dir", snap.store_path, "count-objects", "-v", env=env)
    assert "in-pack: " in counted
    write(ws, {"d1/f1.txt": "edited\n", "new.txt": "x" * 5000})  # a few new objects: written loose
    loose_before = len(list((Path(snap.store_path) / "objects").glob("??/*")))
    snap.snapshot()
    assert len(list((Path(snap.store_path) / "objects").glob("??/*"))) > loose_before
    git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", env=env)


def _mutate(root: Path, rng: random.Random) -> None:
    """Random edits of the kinds an agent makes, .gitignore edits included."""
    everything = sorted(p for p in root.rglob("*") if ".git" not in p.parts)
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        target = rng.choice(everything) if everything else root
        if roll < 0.2 and target.is_file() and not target.is_symlink():
            target.write_text(target.read_text(errors="replace") + "more\n")
        elif roll < 0.35 and (target.is_file() or target.is_symlink()):
            target.unlink()
        elif roll < 0.5:
            folder = target if target.is_dir() and not target.is_symlink() else root
            (folder / ".gitignore").write_text("\n".join(rng.sample(PATTERNS, rng.randint(0, 4))) + "\n")
        elif roll < 0.6 and target.is_file() and not target.is_symlink():
            target.chmod(target.stat().st_mode ^ 0o111)
        else:
            folder = target if target.is_dir() and not target.is_symlink() else root
            (folder / (rng.choice(NAMES) + rng.choice(EXTS) + str(rng.randint(0, 9)))).write_text("new\n")


@pytest.mark.parametrize("seed", range(int(os.environ.get("SNAPSHOTTER_ORACLE_SEEDS", "12"))))
def test_tree_ids_stay_equal_to_git_across_edits(seed: int, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Stat cache, cached folder verdicts and reused subtree ids never make a snapshot drift."""
    rng = random.Random(5000 + seed)
    workspace = tmp_path / "w"
    random_workspace(workspace, rng)
    snap = make(workspace)
    for round_ in range(6):
        info = snap.snapshot(f"round {round_}")
        assert info.tree_id == git_shadow_tree(workspace, tmp_path / "git"), f"round {round_}"
        _mutate(workspace, rng)
        if round_ % 2:
            snap = make(workspace)  # a new process: caches come from disk


@needs_git
def test_crlf_files_under_text_attributes_restore_byte_for_byte(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """git stores LF for '*.bat text eol=crlf'; a snapshot keeps the bytes on disk,
    so its blob differs from git's there, and the file comes back exactly."""
    crlf = b"@echo off\r\necho one\r\n"
    write(ws, {".gitattributes": "*.bat text eol=crlf\n", "run.bat": crlf, "plain.txt": "same\n"})
    snap = make()
    first = snap.snapshot()
    env = git_env(tmp_path)
    repo = tmp_path / "repo"
    shutil.copytree(ws, repo)
    git("init", "-q", str(repo), env=env)
    git("add", "-A", cwd=repo, env=env)
    assert git("cat-file", "-p", ":run.bat", cwd=repo, env=env).encode() == b"@echo off\necho one\n"  # git converts
    ours = {d.path for d in snap.diff(first.id)}
    assert ours == set()
    (ws / "run.bat").write_bytes(b"edited\n")
    snap.restore(first.id)
    assert (ws / "run.bat").read_bytes() == crlf


ODD_NAMES = ["plain.txt", "sp ace.txt", "tab\tand space.txt", "t\tb.txt", "\u00fc.txt", 'q"x.txt', "back\\slash.txt"]
ODD_NAMES += ["nl\nname.txt"]


def test_patch_names_are_quoted_as_git_quotes_them(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A tab, a newline, a quote, a backslash or a byte above 0x7f puts a name in
    C-quoted form, as ``git diff`` writes it; a space does not."""
    write(ws, {name: "one\n" for name in ODD_NAMES} | {"old sp\u00e9.txt": "gone\n"})
    snap = make(ws)
    before = snap.snapshot()
    write(ws, {name: "two\n" for name in ODD_NAMES} | {"new sp.txt": "new\n"})
    (ws / "old sp\u00e9.txt").unlink()
    ours = "".join(d.patch for d in sorted(snap.diff(before.id), key=lambda d: d.path.encode()))
    env = git_env(tmp_path)
    repo = tmp_path / "repo"
    write(repo, {name: "one\n" for name in ODD_NAMES} | {"old sp\u00e9.txt": "gone\n"})
    git("init", "-q", str(repo), env=env)
    git("add", "-A", cwd=repo, env=env)
    git("commit", "-q", "-m", "one", cwd=repo, env=env)
    write(repo, {name: "two\n" for name in ODD_NAMES} | {"new sp.txt": "new\n"})
    (repo / "old sp\u00e9.txt").unlink()
    git("add", "-A", cwd=repo, env=env)
    theirs = git("-c", "core.quotePath=true", "diff", "--cached", "--no-renames", cwd=repo, env=env)
    assert ours == theirs


@pytest.mark.parametrize(
    "edits",
    [{"a.txt": "a\nnew\n"}, {"a.txt": ""}, {"a.txt": "x\n", "b.txt": "y\n"}, {"a.txt": "a\n", "c.bin": "\0"}],
    ids=["one insertion", "one deletion", "both", "binary only"],
)
def test_the_stat_summary_reads_as_gits(edits: dict[str, str], ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """`1 file changed`, singular and plural as git counts them, a side with nothing left out."""
    from snapshotter.frontends.shared.rendering import stat_lines

    write(ws, {"a.txt": "a\n", "b.txt": "b\n"})
    snap = make(ws)
    before = snap.snapshot()
    write(ws, edits)
    ours = stat_lines(snap.diff(before.id))[-1]
    env = git_env(tmp_path)
    repo = tmp_path / "repo"
    write(repo, {"a.txt": "a\n", "b.txt": "b\n"})
    git("init", "-q", str(repo), env=env)
    git("add", "-A", cwd=repo, env=env)
    git("commit", "-q", "-m", "one", cwd=repo, env=env)
    write(repo, edits)
    git("add", "-A", cwd=repo, env=env)
    assert ours == git("diff", "--cached", "--stat", cwd=repo, env=env).splitlines()[-1]

"""``.gitattributes`` decide what counts as binary for line counts, as in git:
``binary`` and ``-diff`` count no lines (``git diff --numstat`` prints ``-``),
``diff`` counts lines whatever the bytes. git is the oracle: ``git check-attr``
for the verdicts, ``git diff --numstat`` for the counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, git_env, needs_git, write

from snapshotter.engine.worktree.attributes import DiffAttributes

ROOT_RULES = (
    "# a comment\n"
    "[attr]nodiff -diff -merge\n"
    "*.dat binary\n"
    "gen/** -diff\n"
    "*.nul diff\n"
    "*.m nodiff\n"
    "!*.keep -diff\n"  # negated patterns are not allowed: skipped
    '"sp ace.bin" -diff\n'
    "docs/ -diff\n"  # a folder pattern never matches a file
    "*.drv diff=custom\n"
    "undo.dat !diff\n"
    "*.txt\t-diff\n"
    "plain.txt diff\n"
)
SUB_RULES = "*.txt diff\nlocal.dat diff\n[attr]ignored -diff\n*.q ignored\n"
PATHS = [
    "a.dat",
    "gen/x.c",
    "gen/deep/y.c",
    "z.nul",
    "m.m",
    "k.keep",
    "sp ace.bin",
    "docs/d.md",
    "v.drv",
    "undo.dat",
    "notes.txt",
    "plain.txt",
    "sub/notes.txt",
    "sub/local.dat",
    "sub/other.dat",
    "sub/w.q",
    "src/a.c",
]


def git_verdicts(ws: Path, env: dict[str, str]) -> dict[str, bool | None]:
    out = git("check-attr", "diff", "--", *PATHS, cwd=ws, env=env)
    verdicts: dict[str, bool | None] = {}
    for line in out.splitlines():
        path, _, state = line.rpartition(": diff: ")
        verdicts[path] = {"set": False, "unset": True}.get(state)
    return verdicts


@needs_git
def test_the_diff_attribute_is_read_as_git_check_attr_reads_it(ws: Path, tmp_path: Path) -> None:
    env = git_env(tmp_path)
    git("init", "-q", cwd=ws, env=env)
    write(ws, {".gitattributes": ROOT_RULES, "sub/.gitattributes": SUB_RULES})
    attributes = DiffAttributes(str(ws))
    ours = {path: attributes.binary(path) for path in PATHS}
    assert ours == git_verdicts(ws, env)
    assert ours["a.dat"] is True and ours["z.nul"] is False and ours["sub/notes.txt"] is False


@needs_git
def test_line_counts_match_git_diff_numstat(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    env = git_env(tmp_path)
    git("init", "-q", cwd=ws, env=env)
    text = "".join(f"line {i}\n" for i in range(20))
    files = {
        ".gitattributes": ROOT_RULES,
        "sub/.gitattributes": SUB_RULES,
        **{path: text for path in PATHS},
        "z.nul": "text\0with a nul\n" + text,
    }
    write(ws, files)
    snap = make()
    a = snap.snapshot("a")
    git("add", "-A", cwd=ws, env=env)
    git("commit", "-q", "-m", "a", cwd=ws, env=env)
    assert a.tree_id == git("rev-parse", "HEAD^{tree}", cwd=ws, env=env).strip()
    write(ws, {path: text.replace("line 3\n", "changed\n") + "more\n" for path in PATHS})
    write(ws, {"z.nul": "text\0with a nul\nchanged\n" + text})
    expected = {}
    git("add", "-A", cwd=ws, env=env)
    for line in git("diff", "--cached", "--numstat", cwd=ws, env=env).splitlines():
        added, deleted, path = line.split("\t")
        expected[path.strip('"')] = (added, deleted)
    ours = {d.path: ("-", "-") if d.binary else (str(d.additions), str(d.deletions)) for d in snap.diff()}
    assert ours == expected
    b = snap.snapshot("b")
    git("commit", "-q", "-m", "b", cwd=ws, env=env)
    between = {d.path: ("-", "-") if d.binary else (str(d.additions), str(d.deletions)) for d in snap.diff(a.id, b.id)}
    assert between == expected
    counted = [(int(x), int(y)) for x, y in expected.values() if x != "-"]
    assert (b.additions, b.deletions) == (sum(x for x, _ in counted), sum(y for _, y in counted))
    first = snap.get(a.id)  # the first snapshot's counts: every file added, the binary ones without lines
    numstat = git("diff", "--numstat", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "HEAD~1", cwd=ws, env=env)
    added = sum(int(row.split("\t")[0]) for row in numstat.splitlines() if not row.startswith("-"))
    assert first.additions == added
    patch = next(d for d in snap.diff(a.id, b.id) if d.path == "a.dat").patch
    assert "Binary files" in patch


def test_attributes_above_the_workspace_and_in_info_apply(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    write(repo, {".gitattributes": "*.gen -diff\n", "app/.keep": ""})
    (repo / ".git" / "info" / "attributes").write_text("*.log -diff\nforced.gen diff\n")
    from snapshotter.engine.worktree.gitrepo import find_repository

    found = find_repository(str(repo / "app"))
    assert found is not None and found.prefix == "app"
    attributes = DiffAttributes(str(repo / "app"), found)
    assert attributes.binary("x.gen") is True and attributes.binary("a/b.log") is True
    assert attributes.binary("forced.gen") is False and attributes.binary("x.c") is None


@pytest.mark.parametrize("content", [b"\xff\xfe\0odd", b"[attr]\n", b'"unclosed -diff\n', b"*.x -diff\n" * 3])
def test_odd_attribute_files_never_fail(ws: Path, content: bytes) -> None:
    (ws / ".gitattributes").write_bytes(content)
    assert DiffAttributes(str(ws)).binary("a.x") in (True, None)

"""Ignore lines read as git's dir.c reads them, checked against the git binary.

Every case builds a real workspace, then compares two things with git 2.39:
the verdict on every path the walker judges (``git check-ignore --no-index``)
and what a snapshot records (``git ls-files -o --exclude-standard`` from a
fresh index in a bare shadow repository). The workspace's own sources map
onto git's: its ``.git/info/exclude`` is the shadow's, and the ``.gitignore``
files are git's own. The policy (the built-in excludes, then ``exclude=``,
within one file a later line beating an earlier one) is judged by git on its
own, in a repository with no other rule; a path is ignored if either ignores
it, as no workspace file may lift a policy exclude.

The cases come from the bug reports (POSIX classes, ``[\\]]``, ``***``, lines
split where git does not split them, odd backslashes and spaces) and from git's
own t0008-ignores.sh (its setup, and the whitespace and backslash cases) and
t3001-ls-files-others-exclude.sh (all but the index-only ones), ported as data.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import GIT, git, git_env, needs_git, plain_ids, policy_ignored, tree_modes

from snapshotter import DEFAULT_EXCLUDES
from snapshotter.engine.worktree.ignore import root_stack
from snapshotter.engine.worktree.listing import has_gitignore, own_rules

pytestmark = needs_git


def _shadow(workspace: Path, scratch: Path) -> list[str]:
    """A bare shadow repository with an empty index, whose ``info/exclude`` is the
    workspace's own; the git arguments that use it."""
    shadow = scratch / "shadow.git"
    git("init", "-q", "--bare", str(shadow), env=git_env(scratch))
    (shadow / "info").mkdir(exist_ok=True)
    own = workspace / ".git" / "info" / "exclude"
    text = own.read_bytes() if own.is_file() and not own.is_symlink() else b""
    (shadow / "info" / "exclude").write_bytes(text)
    return ["--git-dir", str(shadow), "--work-tree", str(workspace)]


def _git_z(args: list[str], scratch: Path, workspace: Path, stdin: bytes = b"") -> set[str]:
    assert GIT is not None
    env = git_env(scratch)
    result = subprocess.run([GIT, *args], cwd=workspace, env=env, input=stdin, capture_output=True, check=False)
    assert result.returncode in (0, 1), result.stderr
    return {os.fsdecode(p.removeprefix(b"./")) for p in result.stdout.split(b"\0") if p}


def our_verdicts(workspace: Path, exclude: Sequence[str] = (), defaults: bool = False) -> dict[str, bool]:
    """Every path the walker judges (its parents are not ignored), with its verdict,
    through the walker's own steps (``root_stack``, then ``own_rules`` per folder)."""
    out: dict[str, bool] = {}
    todo = [("", str(workspace) + os.sep, root_stack(str(workspace), exclude, defaults))]
    while todo:
        rel, base, rules = todo.pop()
        entries = list(os.scandir(base))
        rules = own_rules(rules, has_gitignore(entries), rel, base)
        for entry in entries:
            if entry.name == ".git":
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            out[path] = ignored = rules.is_ignored(path, is_dir)
            if is_dir and not ignored:
                todo.append((path, base + entry.name + os.sep, rules))
    return out


def assert_same_as_git(
    workspace: Path,
    scratch: Path,
    make,  # type: ignore[no-untyped-def]
    exclude: Sequence[str] = (),
    defaults: bool = False,
) -> set[str]:
    """Verdicts and recorded files equal git's; returns the recorded files.

    git judges the workspace's own rules in the shadow repository, and the
    policy (the defaults, then ``exclude=``) on its own (``policy_ignored``): a
    path is ignored if either ignores it."""
    scratch.mkdir(parents=True, exist_ok=True)
    args = _shadow(workspace, scratch)
    policy = [*(DEFAULT_EXCLUDES if defaults else ()), *exclude]
    ours = our_verdicts(workspace, exclude, defaults)
    stdin = b"".join(b"./" + os.fsencode(p) + b"\0" for p in sorted(ours))  # "./": a name like ":x" is no magic
    theirs = _git_z([*args, "check-ignore", "--no-index", "-z", "--stdin"], scratch, workspace, stdin)
    theirs |= policy_ignored(scratch, policy, workspace, ours)
    wrong = {p: v for p, v in ours.items() if v != (p in theirs)}
    assert not wrong, f"verdicts differ from git (ours shown): {wrong}"
    snap = make(workspace, exclude=exclude, use_default_excludes=defaults)
    recorded = set(tree_modes(snap, snap.snapshot("oracle").tree_id))
    listed = _git_z([*args, "ls-files", "-o", "--exclude-standard", "-z"], scratch, workspace)
    listed -= policy_ignored(scratch, policy, workspace, listed)
    assert recorded == listed, f"only ours: {recorded - listed}, only git's: {listed - recorded}"
    return recorded


def build(root: Path, paths: Sequence[str], files: dict[str, bytes] | None = None) -> None:
    """Empty files at ``paths`` (parents too), then ``files`` with their content."""
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    for rel, content in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


# -- the reports: classes, brackets, stars, whitespace, line ends -----------------------------

NAMES = [
    *("a", "b", "c", "A", "Z", "0", "7", "_", "-", "!", "#", "]", "[", "\\", "^", ":", "*", "?", "**"),
    *("a]", "[]", ":]", "a-b", "ab", "a b", "a\tb", "a\x0bb", "a\x0cb", "a\rb", "a\nb", "a\x7fb", "a\x01b"),
    *("a\x1cb", "a\u0085b", "a\u2028b", "ü", "üx", "éa", "x.txt", "x.TXT", "azzz", "#a", " #a"),
    *("tab\t", "tab", "sp", "sp ", "sp  ", "notes", "notes ", "notes  ", "foo", "foo\\", "foo\\ ", "cr", "cr\r"),
    *("trailing 3 \\\\", "trailing 3 \\\\ ", "trailing 3 \\"),
]
DEEP = ["d/e/f", "d/e/x", "deep/x.txt", "deep/one/two/x.txt", "lib/bar", "lib/x/bar", "libA/bar", "w s/f"]

CASES: list[bytes] = [
    # POSIX character classes, as git's own ctype defines them (ASCII only; no \v, \f in space)
    *(b"[[:%s:]]\n" % name for name in (b"alpha", b"digit", b"alnum", b"lower", b"upper", b"punct", b"xdigit")),
    *(b"a[[:%s:]]b\n" % name for name in (b"space", b"blank", b"cntrl", b"graph", b"print")),
    b"[![:alpha:]]\n",
    b"[^[:alnum:]]\n",
    b"[[:alpha:][:digit:]_]\n",
    b"[[:bogus:]]\n",
    b"[[:alpha:]\n",
    b"[[:alpha]]\n",
    b"[[:]\n",
    # brackets
    b"[\\]]\n",
    b"[]]\n",
    b"[!]]\n",
    b"[]a]\n",
    b"[a-]\n",
    b"[-a]\n",
    b"[z-a]\n",
    b"[!a-z]\n",
    b"[\\\\]\n",
    b"[[]\n",
    b"[a\\-c]\n",
    b"[\\a-c]\n",
    b"[a-c-e]\n",
    b"a[\n",
    b"[\n",
    b"[ab\n",
    # stars
    b"***\n",
    b"***/f\n",
    b"d/***\n",
    b"d/***/x\n",
    b"lib**/bar\n",
    b"d/e**\n",
    b"deep/**\\/x.txt\n",
    b"**/\n",
    b"*/**/\n",
    # bytes, not characters: ``?`` is one byte, ü is two
    b"?\n",
    b"??\n",
    b"[!a]\n",
    b"\xc3*\n",
    b"*\xbc\n",
    # whitespace and backslashes
    b"tab\t\n",
    b"sp \n",
    b"sp\\ \n",
    b"sp\\ \\ \n",
    b"sp \\ \n",
    b"notes \\    \n",
    b"foo\\\n",
    b"foo\\\\\n",
    b"foo\\ \n",
    b"trailing 3 \\\\\\\\ \n",
    b"\\\n",
    b"!\n",
    b"/\n",
    b"//\n",
    b" #a\n",
    b"\\#a\n",
    b"#a\n",
    b"\\!\n",
    # where lines end: at \n only, one \r before it stripped
    b"a\rb\n",
    b"*\r\r\n",
    b"a\r\nb\r\n",
    b"a\x0cb\n",
    b"a\x0bb\n",
    b"a\x1cb\n",
    b"a\xc2\x85b\n",
    b"a\xe2\x80\xa8b\n",
    b"\xef\xbb\xbfa\n",
    b"a\x00zzz\n",
    b"cr\r",
    b"x.txt\r\n!a\r\n\r\n",
]


@pytest.mark.parametrize("content", CASES, ids=plain_ids(CASES))
def test_a_root_gitignore_line_reads_as_git_reads_it(content: bytes, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "w"
    build(workspace, [*NAMES, *DEEP], {".gitignore": content})
    assert_same_as_git(workspace, tmp_path / "git", make)


NESTED = [b"[[:alpha:]]\n", b"*\r\r\n", b"e**\n", b"e/**\n", b"/e\\ \n", b"[\\]]\n", b"**/x\n", b"?\n", b"!x\n*\n"]


@pytest.mark.parametrize("content", NESTED, ids=plain_ids(NESTED))
def test_a_nested_gitignore_line_reads_as_git_reads_it(content: bytes, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "w"
    build(workspace, [*NAMES, *DEEP, *("d/" + n for n in NAMES[:20])], {"d/.gitignore": content})
    assert_same_as_git(workspace, tmp_path / "git", make)


@pytest.mark.parametrize("where", ["exclude=", ".git/info/exclude"], ids=["exclude=", "info-exclude"])
def test_root_sources_read_lines_as_git_does(where: str, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "w"
    lines = ["[[:digit:]]", "tab\t", "notes \\    ", "foo\\", "trailing 3 \\\\\\\\ ", "[\\]]", "sp\\ ", "*.TXT"]
    build(workspace, [*NAMES, *DEEP])
    exclude: tuple[str, ...] = ()
    if where == "exclude=":
        exclude = tuple(lines)
    else:
        build(workspace, [], {".git/info/exclude": "\r\n".join(lines).encode() + b"\r\n"})
    recorded = assert_same_as_git(workspace, tmp_path / "git", make, exclude=exclude)
    assert {"7", "]", "tab\t", "notes  ", "trailing 3 \\\\", "sp ", "x.TXT"}.isdisjoint(recorded)
    assert {"foo", "foo\\", "tab", "notes ", "trailing 3 \\\\ ", "x.txt"} <= recorded  # ``foo\`` matches nothing


def test_a_crlf_star_cr_line_no_longer_drops_whole_folders(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The report: ``*\\r`` in a CRLF file is the pattern "names ending in CR", not ``*``."""
    workspace = tmp_path / "w"
    build(workspace, ["src/main.py", "docs/readme.md", "cr\r", "top.txt"], {".gitignore": b"*.log\r\n*\r\r\n"})
    recorded = assert_same_as_git(workspace, tmp_path / "git", make, defaults=True)
    assert recorded == {".gitignore", "src/main.py", "docs/readme.md", "top.txt"}


# -- t0008-ignores.sh ---------------------------------------------------------------------


def test_t0008_setup_matches_git(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """t0008's repository: per-folder files with comments and a blank line, negations,
    a "global" excludes file (here ``exclude=``, git's lowest source too) and
    info/exclude; the index-only parts (a submodule, files added with -f) left out."""
    workspace = tmp_path / "w"
    paths = ["not-ignored", "ignored-and-untracked", "ignored-but-in-index", "one", "per-repo", "globalone"]
    paths += ["globaltwo", "globalthree", "a/one", "a/b/on", "a/b/one", "a/b/one one", "a/b/one two"]
    paths += ['a/b/one"three', "a/b/two", "a/b/twooo", "a/b/not-ignored", "a/b/ignored-dir/foo", "a/b/four"]
    paths += ["a/b/five", "a/b/six", "a/b/seven", "a/three", "a/xthree", "a/globaltwo", "b/globaltwo", "b/x"]
    paths += ["a/not-ignored", "a/ignored-and-untracked", "a/ignored-but-in-index", "top-level-dir/f"]
    files = {
        ".gitignore": b"one\nignored-*\ntop-level-dir/\n",
        "a/.gitignore": b"two*\n*three\n",
        "a/b/.gitignore": b"four\nfive\n# this comment should affect the line numbers\nsix\nignored-dir/\n"
        b"# and so should this blank line:\n\n!on*\n!two\n",
        "a/b/ignored-dir/.gitignore": b"seven\n",
        ".git/info/exclude": b"per-repo\n",
    }
    build(workspace, paths, files)
    os.symlink("b", workspace / "a" / "symlink")
    exclude = ("globalone", "!globaltwo", "globalthree")
    recorded = assert_same_as_git(workspace, tmp_path / "git", make, exclude=exclude)
    assert {"a/b/on", "a/b/one", "a/b/one one", 'a/b/one"three', "a/b/two", "globaltwo", "a/symlink"} <= recorded
    assert {"one", "a/one", "a/b/twooo", "per-repo", "globalone", "a/b/ignored-dir/foo"}.isdisjoint(recorded)


def _whitespace_case(tmp_path: Path, make, names: list[str], ignore: bytes, where: str) -> set[str]:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "w"
    build(workspace, ["whitespace/" + n for n in names] + ["whitespace/untracked"])
    exclude: tuple[str, ...] = ()
    if where == "exclude=":  # git's -X file
        exclude = tuple(os.fsdecode(line) for line in ignore.split(b"\n")[:-1])
    else:
        build(workspace, [], {where: ignore})
    recorded = assert_same_as_git(workspace, tmp_path / "git", make, exclude=exclude)
    return {p for p in recorded if p.startswith("whitespace/")}


SOURCES = ["exclude=", ".git/info/exclude", ".gitignore"]


@pytest.mark.parametrize("where", SOURCES, ids=plain_ids(SOURCES, str))
def test_t0008_trailing_whitespace_is_ignored(where: str, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    found = _whitespace_case(tmp_path, make, ["trailing"], b"whitespace/trailing   \n", where)
    assert found == {"whitespace/untracked"}


@pytest.mark.parametrize("where", SOURCES, ids=plain_ids(SOURCES, str))
def test_t0008_quoting_allows_trailing_whitespace(where: str, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    found = _whitespace_case(tmp_path, make, ["trailing  "], b"whitespace/trailing\\ \\ \n", where)
    assert found == {"whitespace/untracked"}


@pytest.mark.parametrize("where", SOURCES, ids=plain_ids(SOURCES, str))
def test_t0008_correct_handling_of_backslashes(where: str, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    names = ["trailing 1  ", "trailing 2 \\\\", "trailing 3 \\\\", "trailing 4   \\ ", "trailing 5 \\ \\ "]
    names.append("trailing 6 \\a\\")
    ignore = (
        b"whitespace/trailing 1 \\    \n"
        b"whitespace/trailing 2 \\\\\\\\\n"
        b"whitespace/trailing 3 \\\\\\\\ \n"
        b"whitespace/trailing 4   \\\\\\    \n"
        b"whitespace/trailing 5 \\\\ \\\\\\   \n"
        b"whitespace/trailing 6 \\\\a\\\\\n"
    )
    assert _whitespace_case(tmp_path, make, names, ignore, where) == {"whitespace/untracked"}


# -- t3001-ls-files-others-exclude.sh -----------------------------------------------------

T3001_FILES = [f"{d}a.{i}" for d in ("", "one/", "one/two/", "three/") for i in range(1, 9)]
T3001_FILES += ["#ignore1", "#ignore2", "#hidden"]
T3001_EXCLUDE_FROM = (".gitignore", "\\#ignore1", "\\#ignore2*", "\\#hid*n", "output", "expect", ".gitignore")
T3001_EXCLUDE_FROM += ("*.7", "!*.8")
T3001_EXPECT = {"a.2", "a.4", "a.5", "a.8", "one/a.3", "one/a.4", "one/a.5", "one/a.7", "one/two/a.2"}
T3001_EXPECT |= {"one/two/a.3", "one/two/a.5", "one/two/a.7", "one/two/a.8", "three/a.2", "three/a.3", "three/a.4"}
T3001_EXPECT |= {"three/a.5", "three/a.8"}


@pytest.mark.parametrize("line_end", [b"\n", b"\r\n"], ids=["LF", "CRLF"])
@pytest.mark.parametrize("where", ["exclude=", ".git/info/exclude"], ids=["exclude=", "info-exclude"])
def test_t3001_various_exclude_options(line_end: bytes, where: str, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """git's first t3001 case, with its \\r\\n variant of the top .gitignore.

    git's ``--exclude=*.6`` outranks every file, as ``exclude=`` does (the
    policy): the top ``!*.6`` re-includes nothing.
    In ``.git/info/exclude``, a workspace source, ``*.6`` is the lowest rule,
    and the top ``!*.6`` re-includes the a.6 files."""
    workspace = tmp_path / "w"
    files = {
        ".gitignore": line_end.join([b"*.1", b"/*.3", b"!*.6", b""]),
        "one/.gitignore": b"*.2\ntwo/*.4\n!*.7\n*.8\n",
        "one/two/.gitignore": b"!*.2\n!*.8\n",
    }
    exclude: tuple[str, ...] = ()
    if where == "exclude=":
        exclude = ("*.6", *T3001_EXCLUDE_FROM)
    else:
        files[".git/info/exclude"] = "\n".join(("*.6", *T3001_EXCLUDE_FROM)).encode() + b"\n"
    build(workspace, T3001_FILES, files)
    recorded = assert_same_as_git(workspace, tmp_path / "git", make, exclude=exclude)
    if where == "exclude=":  # and its *.7, from git's lowest source there, now beats one/'s !*.7 too
        assert recorded == T3001_EXPECT - {"one/a.7", "one/two/a.7"}
    else:
        assert recorded == T3001_EXPECT | {"a.6", "one/a.6", "one/two/a.6", "three/a.6"}


@pytest.mark.parametrize("where", ["exclude=", ".git/info/exclude"], ids=["exclude=", "info-exclude"])
def test_t3001_status_honors_core_excludesfile(where: str, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """git's core.excludesFile case. As ``.git/info/exclude`` (git's lowest source
    too) the ``.gitignore`` negations re-include a.6 (git status's list); as
    ``exclude=`` (the policy) nothing re-includes what it excludes."""
    workspace = tmp_path / "w"
    build(workspace, [*T3001_FILES, "output", "expect"], {".gitignore": b"*.1\r\n/*.3\r\n!*.6\r\n"})
    build(workspace, [], {"one/.gitignore": b"*.2\ntwo/*.4\n!*.7\n*.8\n", "one/two/.gitignore": b"!*.2\n!*.8\n"})
    lines = ("*.[1-8]", "e*", "\\#*")
    if where == "exclude=":
        recorded = assert_same_as_git(workspace, tmp_path / "git", make, exclude=lines)
        assert {p for p in recorded if p.split("/")[-1].startswith("a.")} == set()
        assert {p.split("/")[0] for p in recorded} == {".gitignore", "one", "output"}
    else:
        build(workspace, [], {".git/info/exclude": "\n".join(lines).encode() + b"\n"})
        recorded = assert_same_as_git(workspace, tmp_path / "git", make)
        top = {p.split("/")[0] + ("/" if "/" in p else "") for p in recorded}
        assert top == {".gitignore", "a.6", "one/", "output", "three/"}  # git status's list


T3001_SINGLE = [
    (("one/",), lambda p: not p.startswith("one/")),
    (("one/two/",), lambda p: not p.startswith("one/two/")),
    (("two/",), lambda p: not p.startswith("one/two/")),  # the file "two" stays
    (("one/a.1/",), lambda p: True),
    (("a.*", "!a.1"), lambda p: p.split("/")[-1] == "a.1" or not p.split("/")[-1].startswith("a.")),
    (("one", "!one/a.1"), lambda p: not p.startswith("one/")),
    (("!one", "one/a.1"), lambda p: p != "one/a.1"),
    (("/three/a.3[abc]",), lambda p: True),
    (("**/a.1",), lambda p: p.split("/")[-1] != "a.1"),
    (("one**a.1",), lambda p: True),
]


@pytest.mark.parametrize("index", range(len(T3001_SINGLE)), ids=plain_ids([" ".join(c[0]) for c in T3001_SINGLE], str))
def test_t3001_exclude_patterns(index: int, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """t3001's --exclude cases: trailing slash, negation, excluded folders, ``**``."""
    patterns, kept = T3001_SINGLE[index]
    workspace = tmp_path / "w"
    build(workspace, [*T3001_FILES, "two"])
    recorded = assert_same_as_git(workspace, tmp_path / "git", make, exclude=patterns)
    assert recorded == {p for p in [*T3001_FILES, "two"] if kept(p)}


def test_t3001_subdirectory_ignore(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "top"
    build(workspace, ["l1/l2/l1"], {".gitignore": b"/.gitignore\nl1\n", "l1/.gitignore": b"l2\n"})
    assert assert_same_as_git(workspace, tmp_path / "git", make) == set()


# -- random lines from the tricky parts of the syntax ---------------------------------------

TOKENS = ["*", "**", "***", "?", "[", "]", "!", "^", "-", "\\", "/", "a", "b", "c", ".", " ", "\t", "\r"]
TOKENS += ["[:alpha:]", "[:digit:]", "[:space:]", "[:bogus:]", ":", "ü", "é", "\\ ", "[a-c]", "[!b]", "[]"]
NAME_CHARS = ["a", "b", "c", ".", " ", "-", "]", "[", "!", "\\", "*", "?", ":", "1", "ü", "\t", "^", "\r"]


def _random_line(rng: random.Random) -> str:
    return "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 6)))


def _random_name(rng: random.Random) -> str:
    name = "".join(rng.choice(NAME_CHARS) for _ in range(rng.randint(1, 4)))
    return name if name.strip(".") else name + "a"  # never "." or ".."


@pytest.mark.parametrize("seed", range(int(os.environ.get("SNAPSHOTTER_IGNORE_FUZZ_SEEDS", "25"))))
def test_random_lines_read_as_git_reads_them(seed: int, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    workspace = tmp_path / "w"
    folders = ["", *(_random_name(rng) for _ in range(3))]
    folders += [f"{rng.choice(folders[1:])}/{_random_name(rng)}" for _ in range(2)]
    paths = {f"{folder}/{_random_name(rng)}".lstrip("/") for folder in folders for _ in range(6)}
    paths = {p for p in paths if not any(p2.startswith(p + "/") for p2 in paths)}  # a name is a file or a folder
    build(workspace, sorted(paths))
    for folder in rng.sample(folders, 2):
        lines = [_random_line(rng) for _ in range(rng.randint(1, 5))]
        ending = rng.choice(["\n", "\r\n"])
        (workspace / folder / ".gitignore").write_bytes(ending.join(lines).encode() + ending.encode())
    assert_same_as_git(workspace, tmp_path / "git", make)


STAR_TOKENS = ["*", "*", "**/", "/**/", "a", "b", "ab", "?", "[ab]", "/", "x"]


@pytest.mark.parametrize("seed", range(int(os.environ.get("SNAPSHOTTER_STAR_FUZZ_SEEDS", "12"))))
def test_lines_with_many_wildcards_read_as_git_reads_them(seed: int, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Several wildcards per line, against names holding their fixed parts many
    times: where the matching settles for the first place a part matches, it must
    still agree with git's wildmatch."""
    rng = random.Random(seed)
    workspace = tmp_path / "w"
    paths = set()
    for _ in range(30):
        depth = rng.randint(1, 4)
        paths.add("/".join("".join(rng.choice("abx") for _ in range(rng.randint(1, 6))) for _ in range(depth)))
    paths = {p for p in paths if not any(q.startswith(p + "/") for q in paths)}
    build(workspace, sorted(paths))
    lines = ["".join(rng.choice(STAR_TOKENS) for _ in range(rng.randint(2, 7))) for _ in range(rng.randint(2, 6))]
    (workspace / ".gitignore").write_text("\n".join(lines) + "\n")
    assert_same_as_git(workspace, tmp_path / "git", make)


def test_a_gitignore_built_to_backtrack_costs_no_time(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """'*a*a*a*a*a*a*a*a*b' took 32 s for one 60-byte name (Python's regex
    backtracking): a file the agent writes must not stall every snapshot."""
    import time

    workspace = tmp_path / "w"
    build(workspace, ["a" * 200, "b" * 10 + "/" + "a" * 150, "/".join(["a"] * 200) + "/c"])
    (workspace / ".gitignore").write_text(
        "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n**/a/**/a/**/a/**/a/**/a/**/b\n*a*a*a*a*a*a*a*a*a*a*/**/c\n"
    )
    started = time.monotonic()
    make(workspace).snapshot()
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "where", [".gitignore", "sub/.gitignore", ".git/info/exclude"], ids=["gitignore", "nested", "info-exclude"]
)
def test_no_workspace_negation_lifts_the_policy(where: str, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """``!.env`` and friends, anywhere in the workspace, re-include nothing the
    defaults or ``exclude=`` exclude; the workspace's own excludes still apply."""
    workspace = tmp_path / "w"
    paths = [".env", "sub/.env", ".env.local", "sub/deep/.env.production", "cfg/.env/inner", "sub/id_rsa"]
    paths += ["node_modules/x/index.js", "app.key", "pw", "sub/pw", "src/a.py", "src/b.log", "id_rsa.pub"]
    build(workspace, paths, {where: b"!.env\n!.env.*\n!.env/\n!node_modules/\n!*.key\n!id_rsa\n!pw\n*.log\n"})
    recorded = assert_same_as_git(workspace, tmp_path / "git", make, exclude=("pw",), defaults=True)
    assert recorded & set(paths) == {"src/a.py", "id_rsa.pub"} | ({"src/b.log"} if where == "sub/.gitignore" else set())


# -- the order of lines, whichever way each is matched ---------------------------------------
# A line without a "/" is matched against the last path component alone (a literal one by a
# dict), the others against the whole path: the last matching line must still win, as in git.

ORDER_PATHS = ["id", "d/id", "d/e/f/id", "ix", "d/e/ix", "a.key", "b.key", "d/a.key", "d/e/b.key", "x1", "d/x1"]
ORDER_PATHS += ["y1", "d/e/y1", "e/g", "d/e/g", "d/e/f/g", "n/k", "d/n/k", "d/e/n/k", "lib/m", "d/lib/m", "m"]
ORDER_LINES = [
    "id",  # a literal name, lifted again by a later negation of a wildcard
    "!i*",
    "*.key",  # a wildcard, lifted for one name by a later literal negation
    "!a.key",
    "x1",  # a literal, then its own negation: the later line wins
    "!x1",
    "!y1",  # and the other way round
    "y1",
    "!g",  # a literal negation beaten by a later pattern over whole paths
    "**/e/g",
    "n/",  # a literal folder name, lifted by a later path pattern at one depth only
    "!d/n/",
    "m",  # a literal name, lifted by a later anchored path
    "!/lib/m",
    "!d/**/m",
]


@pytest.mark.parametrize(
    "where", [".gitignore", "d/.gitignore", ".git/info/exclude"], ids=["gitignore", "nested", "info-exclude"]
)
def test_the_last_matching_line_wins_whether_it_matches_the_name_or_the_path(  # type: ignore[no-untyped-def]
    where: str, tmp_path: Path, make
) -> None:
    workspace = tmp_path / "w"
    build(workspace, ORDER_PATHS, {where: "".join(line + "\n" for line in ORDER_LINES).encode()})
    assert_same_as_git(workspace, tmp_path / "git", make)


def test_the_last_matching_line_wins_in_the_callers_excludes(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The same lines as the policy (``exclude=``, over the defaults: ``id_rsa`` is a
    literal default, lifted here by a later wildcard negation of the caller's)."""
    workspace = tmp_path / "w"
    build(workspace, [*ORDER_PATHS, "id_rsa", "d/e/id_rsa", ".npmrc", "d/.npmrc"])
    exclude = (*ORDER_LINES, "!id_*", "!d/**/.npm*")
    assert_same_as_git(workspace, tmp_path / "git", make, exclude=exclude, defaults=True)


ORDER_TOKENS = ["a", "b", "ab", "a*", "*b", "?", "[ab]", "a\\*"]


@pytest.mark.parametrize("seed", range(int(os.environ.get("SNAPSHOTTER_ORDER_FUZZ_SEEDS", "8"))))
def test_random_orders_of_name_and_path_lines_judge_as_git(seed: int, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Literal names, wildcard names and path patterns, each possibly negated or for
    folders only, in random order, over names that several lines match at once."""
    rng = random.Random(seed)
    workspace = tmp_path / "w"
    names = ["a", "b", "ab", "a*", "aab", "ba"]
    paths = {"/".join(rng.choice(names) for _ in range(rng.randint(1, 4))) for _ in range(40)}
    paths = {p for p in paths if not any(q.startswith(p + "/") for q in paths)}
    lines = []
    for _ in range(rng.randint(4, 12)):
        line = rng.choice(ORDER_TOKENS)
        shape = rng.randrange(5)
        if shape == 1:
            line = f"**/{line}"
        elif shape == 2:
            line = f"{rng.choice(names)}/{line}"
        elif shape == 3:
            line = f"/{line}"
        lines.append(("!" if rng.random() < 0.4 else "") + line + ("/" if rng.random() < 0.2 else ""))
    build(workspace, sorted(paths), {".gitignore": "".join(line + "\n" for line in lines).encode()})
    assert_same_as_git(workspace, tmp_path / "git", make)

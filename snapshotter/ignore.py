"""The gitignore rules of one workspace, judged the way ``git add -A`` judges them.

Sources, lowest precedence first: :data:`DEFAULT_EXCLUDES`, the caller's
``exclude=``, the workspace's ``.git/info/exclude``, then each ``.gitignore``
from the root down. Within a source the last matching pattern wins; a deeper
``.gitignore`` beats a shallower one; a pattern is matched against the path
relative to the folder of the file it came from. The walker never enters an
excluded folder, so nothing below one can be re-included (git's rule).

pathspec parses the gitignore syntax (escapes, negation, trailing spaces,
character classes) into regular expressions. Its expressions are written for
judging a whole file path at once, where a match on any parent folder counts;
git instead judges each path component on its own after pruning. That
difference shows, e.g., with ``*.txt`` + ``!d.txt``: git ignores
``d.txt/a.txt``, pathspec does not. So we keep pathspec's translation but
require a *full* match of the path being judged (with a trailing ``/`` for
folders), after normalising the few expression shapes that only make sense as
prefixes (``X/**`` also matching ``X`` itself is pathspec issue #137).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pathspec import GitIgnoreSpec

DEFAULT_EXCLUDES: tuple[str, ...] = (
    # Version control metadata: never entered anywhere, also enforced by the walker.
    ".git",
    # Secrets: never stored in a snapshot, so never touched by a restore.
    ".env",
    ".env.*",
    # Virtual environments and dependency folders.
    ".venv/",
    "venv/",
    "node_modules/",
    # Caches and build byproducts that tools regenerate.
    "__pycache__/",
    "*.py[cod]",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".tox/",
    ".nox/",
    ".cache/",
    ".DS_Store",
    "Thumbs.db",
)
"""Built-in gitignore-style patterns applied below every other source."""

_DIR_GROUP = "(?P<ps_d>"


def _rewrite_line(line: str) -> str:
    """Spell ``X/**/`` as ``X/**/*/``: pathspec would match the folder X itself (#137)."""
    stripped = line.rstrip()
    if stripped.endswith("/**/"):
        return stripped + "*/"
    return line


def _whole_path_regex(regex: str) -> str:
    """Turn a pathspec prefix expression into one that must match a whole path."""
    if regex == ".":  # ``*`` or ``**``: everything
        return ".+"
    if regex == _DIR_GROUP + "/)":  # ``*/`` or ``**/``: every folder
        return "^(?:.+/)?[^/]+" + _DIR_GROUP + "/)"
    if regex.endswith(")") or regex.endswith("$"):
        return regex
    return regex + ".+"  # ``X/**`` gives the prefix ``^X/``: anything strictly inside X


@dataclass(frozen=True)
class _Pattern:
    regex: str
    ignore: bool  # False for a ``!`` negation


def parse_patterns(lines: Iterable[str]) -> list[_Pattern]:
    """Parse gitignore lines into whole-path patterns, in file order."""
    rewritten = [_rewrite_line(line) for line in lines]
    spec = GitIgnoreSpec.from_lines(rewritten)
    out = []
    for pattern in spec.patterns:
        if pattern.include is None or pattern.regex is None:
            continue  # blank line or comment
        out.append(_Pattern(_whole_path_regex(pattern.regex.pattern), pattern.include))
    return out


class IgnoreSource:
    """The patterns of one source, anchored at ``base`` (a folder, ``""`` = root).

    All patterns are compiled into one alternation, last pattern first, so one
    ``fullmatch`` call finds the pattern that wins for a path.
    """

    __slots__ = ("base", "fingerprint", "_prefix_len", "_regex", "_ignores")

    def __init__(self, patterns: Sequence[_Pattern], base: str = "") -> None:
        self.base = base
        described = "\0".join(f"{p.ignore}:{p.regex}" for p in patterns)
        self.fingerprint = hashlib.sha1(f"{base}\0{described}".encode("utf-8", "surrogateescape")).digest()
        """Identifies these rules, so cached decisions can be reused safely."""
        self._prefix_len = len(base) + 1 if base else 0
        ordered = list(reversed(patterns))
        alternatives = [f"(?P<p{i}>{p.regex.replace(_DIR_GROUP, '(?:')})" for i, p in enumerate(ordered)]
        self._regex = re.compile("|".join(alternatives), re.DOTALL) if alternatives else None
        self._ignores = [p.ignore for p in ordered]

    @classmethod
    def from_lines(cls, lines: Iterable[str], base: str = "") -> IgnoreSource:
        return cls(parse_patterns(lines), base)

    def __bool__(self) -> bool:
        return self._regex is not None

    def judge(self, rel_path: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no pattern matched.

        ``rel_path`` is relative to the workspace root and lies below ``base``.
        """
        if self._regex is None:
            return None
        subject = rel_path[self._prefix_len :]
        if is_dir:
            subject += "/"
        match = self._regex.fullmatch(subject)
        if match is None:
            return None
        group = match.lastgroup
        assert group is not None
        return self._ignores[int(group[1:])]


@dataclass(frozen=True)
class Forced:
    """Paths tracked whatever the ignore rules say (git keeps a file it tracks even
    where a rule ignores it), and the folders on the way to them."""

    paths: frozenset[str]
    dirs: frozenset[str]
    fingerprint: bytes

    @classmethod
    def of(cls, paths: Iterable[str]) -> Forced | None:
        """None for no paths; ``.git`` and whatever lies below one are never forced."""
        chosen = frozenset(p for p in paths if p and not any(part.lower() == ".git" for part in p.split("/")))
        if not chosen:
            return None
        dirs = {path.rpartition("/")[0] for path in chosen}
        for folder in list(dirs):
            while "/" in folder:
                folder = folder.rpartition("/")[0]
                dirs.add(folder)
        dirs.discard("")
        digest = hashlib.sha1(b"forced\0" + "\0".join(sorted(chosen)).encode("utf-8", "surrogateescape"))
        return cls(chosen, frozenset(dirs), digest.digest())


_EVERYTHING = ("*",)


class IgnoreStack:
    """The sources in force inside one folder, most specific first, and the
    paths ``forced`` to be tracked whatever they say."""

    __slots__ = ("sources", "fingerprint", "forced")

    def __init__(self, sources: tuple[IgnoreSource, ...], forced: Forced | None = None) -> None:
        self.sources = sources
        self.forced = forced
        digest = hashlib.sha1()
        for source in sources:
            digest.update(source.fingerprint)
        if forced is not None:
            digest.update(forced.fingerprint)
        self.fingerprint = digest.digest()

    def push(self, source: IgnoreSource) -> IgnoreStack:
        """The stack for a subfolder that has its own ``.gitignore``."""
        if not source:
            return self
        return IgnoreStack((source, *self.sources), self.forced)

    def with_forced(self, paths: Iterable[str]) -> IgnoreStack:
        """This stack, tracking ``paths`` (workspace-relative files) whatever the rules say."""
        forced = Forced.of(paths)
        return self if forced is None else IgnoreStack(self.sources, forced)

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        forced = self.forced
        if forced is not None and rel_path in (forced.dirs if is_dir else forced.paths):
            return False
        return self.by_rules(rel_path, is_dir)

    def by_rules(self, rel_path: str, is_dir: bool) -> bool:
        """The rules' own verdict, forced paths aside."""
        for source in self.sources:
            verdict = source.judge(rel_path, is_dir)
            if verdict is not None:
                return verdict
        return False

    def inside(self, rel_dir: str) -> IgnoreStack:
        """The stack for the entries of subfolder ``rel_dir``: a folder entered only
        because forced paths lie below it keeps everything else in it ignored, as
        the rules would have had it by not entering it at all."""
        forced = self.forced
        if forced is None or rel_dir not in forced.dirs or not self.by_rules(rel_dir, True):
            return self
        return self.push(IgnoreSource.from_lines(_EVERYTHING, rel_dir))


def read_ignore_file(path: str) -> list[str]:
    """The lines of a ``.gitignore``-style file; a symlink or unreadable file gives none.

    git does not follow a symlinked ``.gitignore`` either.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return []
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
    except OSError:
        return []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", "surrogateescape").splitlines()


def root_stack(workspace: str, exclude: Sequence[str], use_default_excludes: bool) -> IgnoreStack:
    """The sources that apply everywhere: info/exclude, then ``exclude=``, then defaults."""
    sources = [
        IgnoreSource.from_lines(read_ignore_file(os.path.join(workspace, ".git", "info", "exclude"))),
        IgnoreSource.from_lines(exclude),
    ]
    if use_default_excludes:
        sources.append(IgnoreSource.from_lines(DEFAULT_EXCLUDES))
    return IgnoreStack(tuple(s for s in sources if s))

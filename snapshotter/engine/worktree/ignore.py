"""The gitignore rules of one workspace, judged the way ``git add -A`` judges them.

Two kinds of source. The workspace's own, lowest precedence first: the
excludes of its settings files (``WorkspaceSettings``, where git reads
``core.excludesFile``), its ``.git/info/exclude`` (or its repository's), then
each ``.gitignore`` from the root down; within a source the last matching
pattern wins, a deeper ``.gitignore`` beats a shallower one, and a pattern is
matched against the path relative to the folder of the file it came from, as
in git. The agent can write every one of them, so none keeps a restore from
bringing back a path the target holds (``engine/session/in_the_way``). Above them, the
*policy*: the caller's ``exclude=`` over :data:`DEFAULT_EXCLUDES`. A path the
policy ignores is ignored whatever the workspace's files say: a file inside the
workspace, which the guarded agent can write, may add excludes but never take
one away (a ``!.env`` line re-includes nothing). Only the policy's own
negations (the caller's ``!x`` over a default) lift a policy exclude. The walker never enters an
excluded folder, so nothing below one can be re-included (git's rule), which
is also why every pattern here must match the *whole* path it judges:
``*.txt`` + ``!d.txt`` ignores ``d.txt/a.txt`` in git, because the folder
``d.txt`` is judged (and re-included) on its own before its files are.

Lines are read and translated to regular expressions as git reads and matches
them (``ignorelines``); this module reads the files, safely, and judges paths.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import re
from collections.abc import Iterable, Sequence

from snapshotter.engine.fsutil import NotARegularFile, read_side_head
from snapshotter.engine.worktree import ignorelines
from snapshotter.engine.worktree.defaults import DEFAULT_EXCLUDES
from snapshotter.engine.worktree.gitrepo import TrackedPaths, UserRepository
from snapshotter.engine.worktree.ignorelines import Pattern, byte_text, warn_once
from snapshotter.options import Options, WorkspaceSettings


class IgnoreSource:
    """The patterns of one source, anchored at ``base`` (a folder, ``""`` = root).

    One :class:`_Matcher` for files, and one for folders, which also holds the patterns
    that end in ``/``: the last matching pattern in file order wins, as in git.
    """

    __slots__ = ("base", "outer", "policy", "defaults", "origin", "fingerprint", "_prefix_len", "_files", "_dirs")

    def __init__(
        self,
        patterns: Sequence[tuple[int, Pattern]],
        base: str = "",
        origin: str = "",
        outer: str = "",
        policy: bool = False,
    ) -> None:
        """``patterns``: (line number, pattern) in file order; ``origin`` names
        the source in warnings (a path, ``exclude=``). ``outer``: for a file in a
        folder above the workspace, the workspace's path below that folder with
        a trailing ``/`` (its patterns judge paths relative to its own folder).
        ``policy``: the caller's own excludes, which tracked files do not beat."""
        self.base = base
        self.outer = outer
        self.policy = policy
        self.origin = origin
        """Where the patterns came from: a file's path, ``exclude=``, ``DEFAULT_EXCLUDES``."""
        self.defaults = False
        """The built-in excludes: they also exclude virtual environments by content (``VENV_MARKER``)."""
        self._prefix_len = len(base) + 1 if base else 0
        try:
            self._compile(patterns)
        except _COMPILE_ERRORS:
            patterns = _compilable(patterns, origin)
            self._compile(patterns)
        described = "\0".join(f"{p.ignore:d}{p.dir_only:d}{p.regex}" for _, p in patterns)
        identity = f"{base}\0{outer}\0{policy:d}\0{described}"
        self.fingerprint = hashlib.sha1(identity.encode("utf-8", "surrogateescape")).digest()
        """Identifies these rules, so cached decisions can be reused safely."""

    def _compile(self, patterns: Sequence[tuple[int, Pattern]]) -> None:
        self._dirs = _matcher(tuple(p for _, p in patterns))
        self._files = _matcher(tuple(p for _, p in patterns if not p.dir_only))

    @classmethod
    def from_bytes(
        cls, data: bytes, base: str = "", origin: str = "", outer: str = "", policy: bool = False
    ) -> IgnoreSource:
        """The patterns of an ignore file's content."""
        return cls(ignorelines.parse_source(data, origin), base, origin, outer, policy)

    @classmethod
    def from_file(cls, path: str, base: str = "", outer: str = "", follow: bool = False) -> IgnoreSource:
        """The patterns of the ignore file at ``path`` (none if it cannot be used, see
        ``read_ignore_file``; ``follow``: a symlink to it is followed)."""
        return cls.from_bytes(read_ignore_file(path, follow), base, path, outer)

    @classmethod
    def from_lines(cls, lines: Iterable[str], base: str = "", origin: str = "", policy: bool = False) -> IgnoreSource:
        """The patterns of ``lines``, each read as one line of an ignore file (so a
        ``#`` line is a comment and unescaped trailing spaces are trimmed, as in
        ``.git/info/exclude``)."""
        data = b"".join(byte_text(line).encode("latin-1") + b"\n" for line in lines)
        return cls.from_bytes(data, base, origin, policy=policy)

    def __bool__(self) -> bool:
        return bool(self._dirs.ignores)

    def judge(self, rel_path: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no pattern matched.

        ``rel_path`` is relative to the workspace root and lies below ``base``.
        """
        matcher = self._dirs if is_dir else self._files
        subject = self.outer + rel_path[self._prefix_len :] if self.outer else rel_path[self._prefix_len :]
        if not subject.isascii():  # the patterns match bytes (see ignorelines)
            subject = byte_text(subject)
        name = subject[subject.rfind("/") + 1 :]
        latest = _latest(matcher.by_path, subject, _latest(matcher.by_name, name, matcher.names.get(name, -1)))
        return None if latest < 0 else matcher.ignores[latest]


_ANY_DEPTH = "(?:.*/)?"


class _Matcher:
    """Patterns in file order, judged three ways, the latest match of the three winning (git's last matching line).
    A line with no ``/`` (but a trailing one) matches the last path component at any depth (``ignorelines`` writes
    ``(?:.*/)?`` and an expression never meeting a ``/``), so it is matched against that name alone: by dict if
    literal (``names``), else in one alternation (``by_name``). In that of whole paths (``by_path``) each would try
    every ``/`` again: every default exclude more cost each name about 1%. Shared (``_matcher``): never changed."""

    __slots__ = ("ignores", "names", "by_name", "by_path")

    def __init__(self, patterns: Sequence[Pattern]) -> None:
        self.ignores = [pattern.ignore for pattern in patterns]  # by pattern index
        self.names: dict[str, int] = {}
        split: tuple[list[tuple[int, str]], list[tuple[int, str]]] = ([], [])  # on the name, on the path
        for index, pattern in enumerate(patterns):
            rest = pattern.regex[len(_ANY_DEPTH) :] if pattern.regex.startswith(_ANY_DEPTH) else None
            if rest is None or ".*" in rest or "/" in rest.replace("[^/]", ""):  # it may meet a "/"
                split[1].append((index, pattern.regex))
            elif re.escape(literal := re.sub(r"\\(.)", r"\1", rest, flags=re.DOTALL)) == rest:
                self.names[literal] = index  # a later line with the same name replaces it
            else:
                split[0].append((index, rest))
        self.by_name, self.by_path = _descending(split[0]), _descending(split[1])


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[Pattern, ...]) -> _Matcher:
    """The matcher of ``patterns``, built once: every scan reads the same files and defaults again."""
    return _Matcher(patterns)


def _descending(patterns: list[tuple[int, str]]) -> tuple[re.Pattern[str] | None, list[int]]:
    """One alternation, latest first, and by group number the index of the pattern it belongs to."""
    regex, owners = alternation([regex for _, regex in reversed(patterns)]) if patterns else (None, [])
    return (regex, [-1] + [patterns[~owner][0] for owner in owners[1:]]) if regex else (None, [-1, -1])  # ~: reversed


def _latest(ordered: tuple[re.Pattern[str] | None, list[int]], text: str, floor: int) -> int:
    """The latest of ``floor`` and the index of the latest pattern of ``ordered`` that matches ``text``."""
    regex, owners = ordered
    match = None if regex is None or owners[1] <= floor else regex.fullmatch(text)  # group 1: the latest pattern
    return floor if match is None else max(floor, owners[match.lastindex or 0])


_INNER_GROUP = re.compile(r"\(\?P([<=])z(\d+)")


def alternation(regexes: Sequence[str]) -> tuple[re.Pattern[str], list[int]]:
    """One expression matching what any of ``regexes`` (``ignorelines``
    expressions) matches, the first of them winning, and, by group number, the
    index of the expression that group belongs to (index 0 unused). Each
    expression is one group; the groups inside one (``ignorelines._assembled``)
    are renamed after it and map to it too: the match's ``lastindex`` is always
    the expression's own group, which closes last."""
    parts: list[str] = []
    owners: list[int] = [-1]
    for number, regex in enumerate(regexes):
        inner = _INNER_GROUP.sub(f"(?P\\1p{number}z\\2", regex)
        parts.append(f"({inner})")
        owners.extend([number] * (1 + regex.count("(?P<z")))
    return re.compile("|".join(parts), re.DOTALL), owners


_COMPILE_ERRORS = (re.error, RecursionError, OverflowError, ValueError)


def _compilable(patterns: Sequence[tuple[int, Pattern]], origin: str) -> list[tuple[int, Pattern]]:
    """``patterns``, less any whose expression does not compile, each dropped with a
    warning naming its source and line.

    Every expression ``ignorelines`` writes compiles; this keeps a slip there
    from making a folder impossible to snapshot. Only called once the whole
    alternation failed, so the usual case pays no extra compilation.
    """
    kept = []
    for number, pattern in patterns:
        try:
            re.compile(pattern.regex, re.DOTALL)
        except _COMPILE_ERRORS as exc:
            key = (origin, number, pattern.regex)
            warn_once(key, "%s, line %d: ignore pattern skipped, it cannot be compiled (%s)", origin, number, exc)
            continue
        kept.append((number, pattern))
    return kept


_EVERYTHING = ("*",)


RULES_VERSION = b"policy-over-workspace/1"
"""Part of every stack's fingerprint: verdicts cached under an older way of
combining sources (the workspace's negations could lift a default) are never
reused."""


class IgnoreStack:
    """The sources in force inside one folder, most specific first, and the paths
    tracked whatever they say: ``tracked`` by the user's git index (beating the
    workspace's own rules, as in git, but not the policy: the caller's
    ``exclude=`` and the default excludes) and ``forced`` by the caller for one
    restore (beating all).

    A path is ignored if the policy ignores it, or else if the workspace's own
    sources do (see the module's docstring).

    Neither set is part of the ``fingerprint``: cached verdicts are the rules'
    alone, and which ignored names those sets keep is asked afresh each time
    (``rescues``). ``checksum`` tells when they may have changed.
    """

    __slots__ = ("sources", "fingerprint", "tracked", "forced", "excludes_environments", "_policy", "_local")

    def __init__(
        self,
        sources: tuple[IgnoreSource, ...],
        tracked: TrackedPaths | None = None,
        forced: TrackedPaths | None = None,
    ) -> None:
        self.sources = sources
        self.tracked = tracked
        self.forced = forced
        self.excludes_environments = any(source.defaults for source in sources)
        """A folder holding ``VENV_MARKER`` is excluded, whatever its name (the default excludes are in force)."""
        self._policy = tuple(source for source in sources if source.policy)
        self._local = tuple(source for source in sources if not source.policy)
        digest = hashlib.sha1(RULES_VERSION)
        for source in sources:
            digest.update(source.fingerprint)
        self.fingerprint = digest.digest()

    @property
    def checksum(self) -> bytes:
        """Identifies the tracked and forced paths (empty when there are none)."""
        if self.tracked is None and self.forced is None:
            return b""
        digest = hashlib.sha1()
        for paths in (self.tracked, self.forced):
            digest.update(paths.checksum if paths is not None else b"-")
        return digest.digest()

    def push(self, source: IgnoreSource) -> IgnoreStack:
        """The stack for a subfolder that has its own ``.gitignore``."""
        if not source:
            return self
        return IgnoreStack((source, *self.sources), self.tracked, self.forced)

    def with_tracked(self, tracked: TrackedPaths | None, forced: TrackedPaths | None = None) -> IgnoreStack:
        return self if tracked is None and forced is None else IgnoreStack(self.sources, tracked, forced)

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        return self.by_rules(rel_path, is_dir) and not self.rescues(rel_path, is_dir)

    def by_rules(self, rel_path: str, is_dir: bool) -> bool:
        """The rules' own verdict, tracked paths aside: the policy's exclude, else
        the workspace's own sources' verdict."""
        if self.by_policy(rel_path, is_dir):
            return True
        for source in self._local:
            verdict = source.judge(rel_path, is_dir)
            if verdict is not None:
                return verdict
        return False

    def by_policy(self, rel_path: str, is_dir: bool) -> bool:
        """Whether the policy (the caller's ``exclude=`` over the defaults) ignores the path."""
        for source in self._policy:
            verdict = source.judge(rel_path, is_dir)
            if verdict is not None:
                return verdict
        return False

    def ignored_by(self, rel_path: str, is_dir: bool) -> IgnoreSource | None:
        """The source whose pattern ignores the path (as :meth:`is_ignored`
        judges it), or None if it is not ignored: which rule to name."""
        if self.rescues(rel_path, is_dir):
            return None
        for sources in (self._policy, self._local):
            for source in sources:
                verdict = source.judge(rel_path, is_dir)
                if verdict is not None:
                    if verdict:
                        return source
                    break
        return None

    def rescues(self, rel_path: str, is_dir: bool) -> bool:
        """Whether a path the rules ignore is tracked all the same (a folder: some
        tracked path lies below it). The user's index never rescues what the
        policy ignores."""
        forced, tracked = self.forced, self.tracked
        if forced is not None and (forced.has_below(rel_path) if is_dir else forced.has(rel_path)):
            return True
        if tracked is None or not (tracked.has_below(rel_path) if is_dir else tracked.has(rel_path)):
            return False
        return not self.by_policy(rel_path, is_dir)

    def inside(self, rel_dir: str) -> IgnoreStack:
        """The stack for the entries of a folder the rules ignore but that holds
        tracked paths: everything else in it stays ignored, as the rules would
        have had it by not entering the folder at all."""
        return self.push(IgnoreSource.from_lines(_EVERYTHING, rel_dir))


MAX_IGNORE_FILE_BYTES = 4 << 20
"""How much of one ignore file is read. git reads a whole file; real ones are a
few KiB (the biggest templates about 100 KiB), and a bigger one would make every
name a walk judges cost milliseconds anyway. The cap keeps a hostile workspace
(a huge file, an endless device) from filling memory: past it, the lines that
end before it apply, the rest do not, and a warning says so. Keeping the first
lines beats dropping the file: those usually exclude secrets and dependency
folders, which would otherwise be snapshotted."""


def read_ignore_file(path: str, follow: bool = False) -> bytes:
    """The content of a ``.gitignore``-style file, or nothing if it cannot be used.

    Read by ``fsutil.read_side_head``: opened without following a symlink (git
    does not follow a symlinked ``.gitignore`` either) and without blocking: a
    named pipe swapped in for the file, even between the walker's listing and
    this open, would otherwise block the open forever, as it does git. Only a
    regular file is read (judged by ``fstat`` on the open descriptor, so no
    later swap matters), and at most :data:`MAX_IGNORE_FILE_BYTES` of it.
    Anything unusable is reported once as a warning on the "snapshotter"
    logger; a missing file is not. ``follow``: a symlink is followed, as git
    follows a symlinked ``.git/info/exclude`` (the user's own configuration,
    outside the workspace's files).
    """
    try:
        data, more = read_side_head(path, MAX_IGNORE_FILE_BYTES, follow)
    except NotARegularFile as exc:
        warn_once((path, "kind", exc.strerror), "%s is %s: its rules do not apply", path, exc.strerror)
        return b""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            warn_once((path, "link"), "%s is a symbolic link, which is not followed: its rules do not apply", path)
        elif exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            warn_once((path, "read", exc.errno), "cannot read %s (%s): its rules do not apply", path, exc.strerror)
        return b""
    if more:
        data = data[: data.rfind(b"\n") + 1]  # whole lines only
        limit = f"{MAX_IGNORE_FILE_BYTES / (1 << 20):g} MiB"
        try:
            now = os.stat(path)
            stamp = (now.st_size, now.st_mtime_ns)  # warned again once the file changed
        except OSError:
            stamp = (0, 0)
        warn_once((path, "size", stamp), "%s is larger than %s: only its lines before that apply", path, limit)
    return data


def root_stack(
    workspace: str,
    exclude: Sequence[str],
    use_default_excludes: bool,
    repository: UserRepository | None = None,
    settings: WorkspaceSettings | None = None,
) -> IgnoreStack:
    """The sources that apply everywhere, most specific first: the ``.gitignore``
    files from the workspace's folder up to its repository's root (when the
    workspace lies inside one), that repository's ``info/exclude``, the
    workspace's own settings files' excludes (``settings``), then the policy
    (``exclude=``, then the defaults), which is judged before them all. Only the
    policy is the caller's: every other source is a file the agent can write."""
    sources: list[IgnoreSource] = []
    if repository is not None:
        folder, inside = repository.root, repository.prefix.split("/") if repository.prefix else []
        outer: list[IgnoreSource] = []
        for depth in range(len(inside)):  # the repository's root, then each folder down to the workspace's parent
            below = "/".join(inside[depth:]) + "/"
            path = os.path.join(folder, *inside[:depth], ".gitignore")
            outer.append(IgnoreSource.from_file(path, outer=below))
        sources.extend(reversed(outer))
        sources.append(IgnoreSource.from_file(repository.exclude_path, follow=True))
    else:
        sources.append(IgnoreSource.from_file(os.path.join(workspace, ".git", "info", "exclude"), follow=True))
    if settings is not None:
        sources.extend(workspace_sources(settings, use_default_excludes))
    sources.extend(policy_stack(exclude, use_default_excludes).sources)
    return IgnoreStack(tuple(s for s in sources if s))


def option_rules(workspace: str, options: Options, repository: UserRepository | None = None) -> IgnoreStack:
    """:func:`root_stack` for these options: their policy, and the rules of the workspace's settings files."""
    return root_stack(workspace, options.exclude, options.use_default_excludes, repository, options.workspace_settings)


def leaving_out(options: Options) -> IgnoreStack:
    """What the options leave out of snapshots by name, the caller's rules and the
    workspace's settings files' alike, as one policy: what a push refuses to
    send a snapshot holding (one recorded before a rule came)."""
    settings = options.workspace_settings
    patterns = [*options.exclude, *(pattern for _, patterns in settings.exclude for pattern in patterns)]
    return policy_stack(patterns, options.use_default_excludes or bool(settings.default_excludes))


def workspace_sources(settings: WorkspaceSettings, use_default_excludes: bool) -> list[IgnoreSource]:
    """The excludes of the workspace's own settings files, each anchored at the
    root like a ``.gitignore`` there and judged as one (not policy: the agent
    can write them), below every ignore file; and the default excludes, as such
    a source too, where only such a file turned them on."""
    sources = [IgnoreSource.from_lines(patterns, origin=origin) for origin, patterns in settings.exclude]
    if settings.default_excludes and not use_default_excludes:
        defaults = IgnoreSource.from_lines(DEFAULT_EXCLUDES, origin=settings.default_excludes)
        defaults.defaults = True
        sources.append(defaults)
    return sources


def policy_stack(exclude: Sequence[str], use_default_excludes: bool) -> IgnoreStack:
    """The policy alone: the caller's ``exclude=`` over the defaults (if used),
    anchored at the workspace's root. What a snapshot may hold is judged by it
    again before a push (a snapshot recorded before the defaults grew)."""
    sources = [IgnoreSource.from_lines(exclude, origin="exclude=", policy=True)]
    if use_default_excludes:
        defaults = IgnoreSource.from_lines(DEFAULT_EXCLUDES, origin="DEFAULT_EXCLUDES", policy=True)
        defaults.defaults = True
        sources.append(defaults)
    return IgnoreStack(tuple(s for s in sources if s))

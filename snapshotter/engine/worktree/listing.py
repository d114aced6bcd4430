"""List one folder: its entries, as the walker wants them.

A folder is listed through a descriptor where the OS allows it (its files are
then ``lstat``ed relative to it, and a folder swapped for a symlink is refused),
split into subfolders and files in C-speed passes, rid of ``.git`` (no other
name is passed over: none is ours, see ``fsops``), and judged against the
ignore rules, with the verdicts
cached per folder under a digest of its rules and listing. Whether a folder
must be listed at all, or its own stat vouches for its last listing, is
``trust.py``'s call.
"""

from __future__ import annotations

import hashlib
import os

from snapshotter.engine.fsutil import DIR_FLAGS, NO_FOLLOW
from snapshotter.engine.worktree.defaults import VENV_MARKER
from snapshotter.engine.worktree.ignore import IgnoreSource, IgnoreStack
from snapshotter.engine.worktree.pathnames import git_spelling
from snapshotter.engine.worktree.statcache import Listings


def join_path(prefix: str, name: str) -> str:
    """``name`` in folder ``prefix`` (``""``: the root), as a workspace path."""
    return prefix + "/" + name if prefix else name


def has_gitignore(entries: list[os.DirEntry[str]]) -> bool:
    return any(entry.name == ".gitignore" for entry in entries)


def own_rules(rules: IgnoreStack, gitignore: bool, prefix: str, base: str) -> IgnoreStack:
    """The rules inside folder ``prefix`` (path ``base``): its parent's, plus its ``.gitignore`` if it has one."""
    if gitignore:
        return rules.push(IgnoreSource.from_file(base + ".gitignore", prefix))
    return rules


GIT_DIR_NAMES = frozenset(
    "".join(c.upper() if bit & (1 << i) else c for i, c in enumerate(".git")) for bit in range(16)
)
"""Every spelling of ``.git`` that a case-insensitive filesystem takes for it."""


def tracked_entries(
    entries: list[os.DirEntry[str]],
    prefix: str,
    rules: IgnoreStack,
    cached: Listings,
    fresh: Listings,
    hits: list[int] | None = None,
    unsafe: list[str] | None = None,
    rescued: set[str] | None = None,
    repos: list[str] | None = None,
) -> tuple[list[str], list[os.DirEntry[str]]]:
    """The entries of one folder that are not ignored: subfolder names, and files.
    ``.git`` is never among them, and other spellings git takes for it are
    left out and added to ``unsafe``. An entry the rules ignore but that is
    tracked (see ``IgnoreStack.rescues``) is kept; such subfolders go to ``rescued``.
    A folder holding a ``.git`` (a nested repository) is added to ``repos``; one
    holding a ``pyvenv.cfg`` (a virtual environment) has no entries tracked while
    the default excludes are in force.

    Judging every name against the rules is the walk's biggest cost after the
    system calls, so each folder's verdicts are cached under a digest of its
    rules and its listing (names and kinds): an unchanged folder under
    unchanged rules reuses its set of ignored names without matching.
    """
    try:  # one C-speed pass per question: this runs for every entry of every folder
        kinds: list[bool | None] = [entry.is_dir(follow_symlinks=False) for entry in entries]
    except OSError:  # the kind needed an lstat, and the entry is gone: leave it out
        kinds = [_is_dir(entry) for entry in entries]
    dirs = [entry.name for entry, kind in zip(entries, kinds) if kind]
    files = [entry for entry, kind in zip(entries, kinds) if kind is False]
    file_names = [entry.name for entry in files]
    if not (GIT_DIR_NAMES.isdisjoint(dirs) and GIT_DIR_NAMES.isdisjoint(file_names)):
        if repos is not None and prefix and (".git" in dirs or ".git" in file_names):
            repos.append(prefix)
        dirs = [name for name in dirs if name not in GIT_DIR_NAMES]
        files = [entry for entry in files if entry.name not in GIT_DIR_NAMES]
        file_names = [entry.name for entry in files]
    spelled = [name for name in dirs + file_names if (name[:1] in "gG." or not name.isascii()) and git_spelling(name)]
    if spelled:  # git~1, .g\u200cit...: git refuses to add them, and a restore would not write them
        if unsafe is not None:
            unsafe.extend(join_path(prefix, name) for name in spelled)
        dirs = [name for name in dirs if name not in spelled]
        files = [entry for entry in files if entry.name not in spelled]
        file_names = [entry.name for entry in files]
    if prefix and rules.excludes_environments and VENV_MARKER in file_names:
        return _forced_only(prefix, rules, dirs, files, rescued)  # a virtual environment: excluded by default
    names = file_names + [name + "/" for name in dirs]
    names.sort()
    ignored = _ignored(names, dirs, files, prefix, rules, cached, fresh, hits)
    if ignored and (rules.tracked is not None or rules.forced is not None):
        kept_dirs = {name for name in dirs if name in ignored and rules.rescues(join_path(prefix, name), True)}
        kept_files = {e.name for e in files if e.name in ignored and rules.rescues(join_path(prefix, e.name), False)}
        if rescued is not None:
            rescued.update(kept_dirs)
        ignored = ignored - kept_dirs - kept_files
    if ignored:
        dirs = [name for name in dirs if name not in ignored]
        files = [entry for entry in files if entry.name not in ignored]
    return dirs, files


def _forced_only(
    prefix: str, rules: IgnoreStack, dirs: list[str], files: list[os.DirEntry[str]], rescued: set[str] | None
) -> tuple[list[str], list[os.DirEntry[str]]]:
    """What a virtual environment's folder ``prefix`` holds that a restore tracks
    (``IgnoreStack.forced``): nothing else in it is. Its marker is a file the
    agent can write, so it never keeps a restore from bringing a path back."""
    forced = rules.forced
    if forced is None or not forced.has_below(prefix):
        return [], []
    kept = [name for name in dirs if forced.has_below(join_path(prefix, name))]
    if rescued is not None:
        rescued.update(kept)  # entered with everything else in them ignored
    return kept, [entry for entry in files if forced.has(join_path(prefix, entry.name))]


def _ignored(
    names: list[str],
    dirs: list[str],
    files: list[os.DirEntry[str]],
    prefix: str,
    rules: IgnoreStack,
    cached: Listings,
    fresh: Listings,
    hits: list[int] | None,
) -> frozenset[str]:
    """The names of folder ``prefix`` that the rules ignore: its cached verdicts
    if its rules and listing (``names``) are the same as then, else judged now.
    Either way they go to ``fresh``, under the digest of both."""
    key = listing_key(rules.fingerprint, names)
    record = cached.get(prefix)
    if record is not None and record[0] == key:
        ignored = record[1]
        if hits is not None:
            hits[0] += 1
    else:
        ignored = frozenset(
            [name for name in dirs if rules.by_rules(join_path(prefix, name), True)]
            + [entry.name for entry in files if rules.by_rules(join_path(prefix, entry.name), False)]
        )
    fresh[prefix] = (key, ignored)  # the rules' verdicts only: what tracked paths keep is asked afresh
    return ignored


def listing_key(fingerprint: bytes, names: list[str]) -> bytes:
    """What a folder's ignore verdicts are cached under: the digest of its rules
    and its listing (``names``: sorted, each subfolder's with a trailing ``/``)."""
    digest = hashlib.sha1(fingerprint)
    digest.update("\0".join(names).encode("utf-8", "surrogateescape"))
    return digest.digest()


def _is_dir(entry: os.DirEntry[str]) -> bool | None:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return None


LIST_BY_FD = os.scandir in os.supports_fd and hasattr(os, "O_DIRECTORY")
"""Folders are listed through descriptors, and their files ``lstat``ed relative to them."""


def open_folder(path: str, is_root: bool) -> int:
    """A descriptor for the folder at ``path`` (-1 where folders are not listed
    through descriptors); below the root, a symlink is refused, never followed.

    Listed through a descriptor that stays open while its files are ``lstat``ed,
    each call resolves one name relative to it (``fstatat``) instead of the
    whole path again: ~10% less time in the walk's system calls (measured at
    100,000 files). A subfolder swapped for a symlink since its parent was
    listed is refused, never followed.
    """
    if not LIST_BY_FD:
        return -1
    return os.open(path, DIR_FLAGS if is_root else DIR_FLAGS | NO_FOLLOW)


def list_folder(path: str, fd: int) -> list[os.DirEntry[str]]:
    """The entries of the folder at ``path``, through ``fd`` if it is one."""
    with os.scandir(fd if fd >= 0 else path) as listing:
        return list(listing)

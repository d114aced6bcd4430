"""The refs in snapshotter's namespaces, loose and packed, read and written the
way git keeps many refs (see docs/store.md, "Long histories").

A folder of numbered refs (``refs/snapshots/``, a stack) is read in number
order from either end: the loose files of the folder, listed (few: upkeep
packs them, see :meth:`RefStore.pack`), merged with the folder's range of
``packed-refs``, walked from its end or its start (``packedrefs``); a loose ref
overrides a packed one of the same name, as in git. Only names of exactly
:data:`WIDTH` digits are numbered refs (the width every writer uses, so name
order is number order); anything else in the folder is a damaged ref, which
:meth:`RefStore.everything_below` reports.

Readers take no lock. They list the loose files first and read ``packed-refs``
after, and writers put a ref in ``packed-refs`` before deleting its loose file:
a loose file gone between its listing and its read is in the ``packed-refs``
read next. Writers hold the store lock, and take git's lock files too
(``<ref>.lock``, ``packed-refs.lock``, made exclusively), so a git command run
on the store meanwhile never loses a write, and a lock file left by a killed
writer is cleared by the next holder of the store lock (``Store.recover``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping

from snapshotter.engine.fsutil import read_side_head, sync_folder, unlink_quietly
from snapshotter.engine.gitstore import packedbounds, packedrefs, packedrewrite
from snapshotter.engine.gitstore.packedrefs import LOCK_FLAGS, Changed, PackedRefs, View
from snapshotter.engine.gitstore.refnames import valid_ref_name
from snapshotter.engine.gitstore.refreading import LooseRefs
from snapshotter.engine.gitstore.storerepo import REF_FILE_CAP
from snapshotter.errors import StoreError

log = logging.getLogger("snapshotter")
WIDTH = 10
"""Digits of a numbered ref's name (``refs/snapshots/0000000042``)."""
KEPT_LOOSE = 8
"""A stack's newest entries that packing leaves loose: a pop of one deletes a file, not a line of ``packed-refs``."""
_HEX40 = re.compile(rb"[0-9a-f]{40}")

Numbered = tuple[int, "bytes | None"]
"""A numbered ref: its number, and the commit id it holds (None: damaged)."""


def number_name(base: bytes, number: int) -> bytes:
    return base + b"/%0*d" % (WIDTH, number)


def _number(name: bytes, prefix: bytes) -> int | None:
    key = name[len(prefix) :]
    return int(key) if len(key) == WIDTH and key.isdigit() and key.isascii() else None


def _id(raw: bytes | None) -> bytes | None:
    value = (raw or b"").strip()
    return bytes.fromhex(value.decode("ascii")) if _HEX40.fullmatch(value) else None


class RefStore:
    """The refs of one store (see the module's docstring)."""

    def __init__(self, store_path: str) -> None:
        self.path = store_path
        self.packed = PackedRefs(store_path)
        self._loose = LooseRefs(store_path)
        self.hot: Callable[[View], object] | None = None
        """Runs, on a version of ``packed-refs`` just written, the searches calls make (``Store``)."""

    def file_of(self, name: bytes) -> str:
        return os.path.join(self.path, *name.decode("ascii").split("/"))

    # -- reading ----------------------------------------------------------------------

    def get(self, name: bytes) -> bytes | None:
        """The raw value of ``name`` (a loose file's first line, never followed;
        else its id in ``packed-refs``), or None."""
        try:
            head, _ = read_side_head(self.file_of(name), REF_FILE_CAP, follow=False)
            return head.split(b"\n", 1)[0].rstrip(b"\r")
        except FileNotFoundError:
            pass
        except (OSError, ValueError):
            return None  # there, but no ref: damaged, and it overrides a packed one
        return self._retrying(lambda view: view.get(name))

    def _retrying(self, ask: Callable[[View], object]) -> bytes | None:
        for _ in range(5):
            try:
                found = ask(self.packed.view())
                return found if isinstance(found, bytes) else None
            except Changed:
                self.packed.forget()
        raise StoreError(f"{self.packed.path} kept changing while it was read; try again")

    def loose_numbers(self, base: bytes) -> dict[int, bytes | None]:
        """The numbered refs of ``base`` that are loose files now."""
        prefix = base + b"/"
        found: dict[int, bytes | None] = {}
        for name, raw in self._loose.read(base, dict).items():
            number = _number(name, prefix)
            if number is not None:
                found[number] = _id(raw)
        return found

    def numbered(self, base: bytes, newest_first: bool = True, beyond: int | None = None) -> Iterator[Numbered]:
        """The numbered refs of ``base`` in number order (newest first, or oldest
        first), only those past ``beyond`` in that direction (below it newest
        first, above it oldest first); lazily: a caller that stops early reads
        only what it took."""
        loose = self.loose_numbers(base)  # before packed-refs: see the module's docstring
        if beyond is not None:
            loose = {n: v for n, v in loose.items() if (n < beyond if newest_first else n > beyond)}
        pending = sorted(loose, reverse=newest_first)
        index = 0
        for number, value in self._packed_numbered(base, newest_first, beyond):
            while index < len(pending) and (pending[index] > number if newest_first else pending[index] < number):
                yield pending[index], loose[pending[index]]
                index += 1
            if number in loose:
                continue  # a loose ref overrides the packed one
            yield number, value
        for number in pending[index:]:
            yield number, loose[number]

    def _packed_numbered(self, base: bytes, newest_first: bool, beyond: int | None) -> Iterator[Numbered]:
        prefix = base + b"/"
        last = beyond
        for _ in range(5):
            try:
                view = self.packed.view()
                start, end = view.span(prefix)
                if last is not None:
                    edge = view.lower_bound(number_name(base, last + (0 if newest_first else 1)))
                    start, end = (start, min(edge, end)) if newest_first else (max(edge, start), end)
                walk = view.backward(start, end) if newest_first else view.forward(start, end)
                for name, sha, _ in walk:
                    number = _number(name, prefix)
                    if number is not None:
                        last = number
                        yield number, bytes.fromhex(sha.decode("ascii"))
                return
            except Changed:  # replaced while walked: go on in the new file from where this one stopped
                self.packed.forget()
        raise StoreError(f"{self.packed.path} kept changing while it was read; try again")

    def newest_number(self, base: bytes) -> int:
        """The highest number named in ``base`` (its ref damaged or not), 0 if none."""
        return next(self.numbered(base), (0, None))[0]

    def fingerprint(self, base: bytes) -> tuple[tuple[int, str, str], list[int]]:
        """What ``base``'s refs are now, cheaply: the length and end names of its
        range of ``packed-refs``, and the numbers of its loose refs."""
        loose = sorted(self.loose_numbers(base))  # before packed-refs
        for _ in range(5):
            try:
                length, first, last = self.packed.view().first_and_last(base + b"/")
                return (length, first.decode("ascii", "replace"), last.decode("ascii", "replace")), loose
            except Changed:
                self.packed.forget()
        raise StoreError(f"{self.packed.path} kept changing while it was read; try again")

    def everything_below(self, base: bytes) -> dict[bytes, bytes | None]:
        """Every ref below ``base`` (any name, nested ones too): name -> raw value,
        loose over packed. Reads the whole range: for verify, gc and pushes."""
        found = self._loose.read(base, dict)
        packed: dict[bytes, bytes] = {}
        for _ in range(5):
            try:
                packed = dict(self.packed.view().names(base + b"/"))
                break
            except Changed:
                self.packed.forget()
        for name, sha in packed.items():
            found.setdefault(name, sha)
        return found

    def folders(self, base: bytes) -> set[bytes]:
        """The names of the folders right below ``base`` holding a ref, loose or
        packed (the sessions below ``refs/snapshotter/sessions``): one search
        of ``packed-refs`` a folder, never a walk of every ref below."""
        names = set(self._loose.holders(base, dict))
        for _ in range(5):
            try:
                return names | folders_in(self.packed.view(), base)
            except Changed:
                self.packed.forget()
        raise StoreError(f"{self.packed.path} kept changing while it was read; try again")

    # -- writing (hold the store lock) -----------------------------------------------------

    def create(self, name: bytes, sha: bytes, durable: bool = True) -> bool:
        """Make ``name`` hold ``sha`` unless it exists (loose or packed) or another
        writer holds its lock; True if made. ``durable``: its folder is synced too."""
        path = self.file_of(name)
        return self._write(path, sha, lambda: os.path.lexists(path) or self._packed_has(name), durable)

    def put(self, name: bytes, sha: bytes) -> None:
        """Make ``name`` hold ``sha`` (a loose file, which overrides a packed line)."""
        path = self.file_of(name)
        if not self._write(path, sha, lambda: False, False):
            raise StoreError(f"{path}.lock exists: another git process is changing this ref (or one died)")

    def _packed_has(self, name: bytes) -> bool:
        return self._retrying(lambda view: view.get(name)) is not None

    def _write(self, path: str, sha: bytes, taken: Callable[[], bool], durable: bool) -> bool:
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        lock = path + ".lock"
        try:
            fd = os.open(lock, LOCK_FLAGS, 0o600)
        except FileExistsError:
            return False
        try:
            try:
                if taken():
                    unlink_quietly(lock)
                    return False
                os.write(fd, sha.hex().encode("ascii") + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(lock, path)
        except BaseException:
            unlink_quietly(lock)
            raise
        if durable:
            sync_folder(folder)
        return True

    def delete(self, wanted: Mapping[bytes, bytes | None]) -> set[bytes]:
        """Delete each ref of ``wanted`` that holds the id given (None: whatever it
        holds): ``packed-refs`` is rewritten without them first (once for all), then
        their loose files go. Returns the names deleted."""
        locks: list[str] = []
        chosen: list[bytes] = []
        try:
            for name in sorted(wanted):
                lock = self.file_of(name) + ".lock"
                try:
                    os.close(os.open(lock, LOCK_FLAGS, 0o600))
                except (FileExistsError, FileNotFoundError):
                    continue  # being written by another (or no folder: no such ref)
                locks.append(lock)
                current = self.get(name)
                expected = wanted[name]
                if current is None or (expected is not None and _id(current) != expected):
                    continue
                chosen.append(name)
            packed = [name for name in chosen if self._packed_has(name)]
            if packed:
                self._rewrite_packed(dict.fromkeys(packed))
            for name in chosen:
                unlink_quietly(self.file_of(name))
        finally:
            for lock in locks:
                unlink_quietly(lock)
        for name in chosen:
            self._remove_empty_folders(name)
        return set(chosen)

    def _remove_empty_folders(self, name: bytes) -> None:
        parts = name.split(b"/")[:-1]
        while len(parts) > 2:  # never refs/snapshots or refs/snapshotter themselves
            try:
                os.rmdir(self.file_of(b"/".join(parts)))
            except OSError:
                return
            parts.pop()

    def _rewrite_packed(self, changes: Mapping[bytes, bytes | None]) -> None:
        """``packed-refs`` with ``changes`` made (name -> id hex, None: gone),
        read afresh under its lock (a git command may have changed it); then
        the searches every call makes run once in the new file, and where they
        end is kept for the next processes (``packedbounds``)."""
        self.packed.forget()
        packedrewrite.rewrite(self.path, changes)
        self.packed.forget()
        if self.hot is None:
            return
        try:
            view = packedrefs.opened(self.packed.path)
            self.hot(view)
            packedbounds.save(self.packed.meta_dir, view.identity, view.bounds())
        except (Changed, StoreError, OSError) as exc:  # hints only: the next readers search
            log.debug("snapshotter: the bounds of packed-refs are not kept: %s", exc)

    def loose_count(self, base: bytes) -> int:
        return len(self.loose_numbers(base))

    def pack(self, bases: tuple[bytes, ...], kept_loose: Callable[[bytes], bool]) -> int:
        """Fold the loose refs below ``bases`` into ``packed-refs``, except those
        ``kept_loose`` names, and the newest :data:`KEPT_LOOSE` of each folder of
        numbered refs outside ``refs/snapshots``; returns how many were packed.
        The new ``packed-refs`` is durable before any loose file goes, and a loose
        file goes only if it still holds what was packed."""
        found: dict[bytes, bytes] = {}
        for base in bases:
            found.update(self._loose_files(base))
        for name in [name for name in found if kept_loose(name)]:
            del found[name]
        by_folder: dict[bytes, list[bytes]] = {}
        for name in found:
            folder, _, leaf = name.rpartition(b"/")
            if not name.startswith(b"refs/snapshots/") and _number(name, folder + b"/") is not None:
                by_folder.setdefault(folder, []).append(leaf)
        for folder, leaves in by_folder.items():
            for leaf in sorted(leaves)[-KEPT_LOOSE:]:
                del found[folder + b"/" + leaf]
        if not found:
            return 0
        self._rewrite_packed({name: value for name, value in found.items()})
        packed = 0
        for name, value in found.items():
            path = self.file_of(name)
            lock = path + ".lock"
            try:
                os.close(os.open(lock, LOCK_FLAGS, 0o600))
            except OSError:
                continue  # being written: it stays loose, overriding the packed line
            try:
                head, _ = read_side_head(path, REF_FILE_CAP, follow=False)
                if head.split(b"\n", 1)[0].strip() == value:
                    os.unlink(path)
                    packed += 1
            except OSError:
                pass
            finally:
                unlink_quietly(lock)
        return packed

    def _loose_files(self, base: bytes) -> dict[bytes, bytes]:
        """Every loose ref below ``base`` that holds an id: name -> its id (hex)."""
        found: dict[bytes, bytes] = {}
        top = self.file_of(base)
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
            rel = os.path.relpath(folder, top)
            for leaf in files:
                if leaf.endswith(".lock"):
                    continue
                name = base + b"/" + os.fsencode(leaf if rel == "." else f"{rel}/{leaf}".replace(os.sep, "/"))
                if not valid_ref_name(name):
                    continue
                try:
                    head, _ = read_side_head(os.path.join(folder, leaf), REF_FILE_CAP, follow=False)
                except OSError:
                    continue
                value = head.split(b"\n", 1)[0].strip()
                if _HEX40.fullmatch(value):
                    found[name] = value
        return found


def folders_in(view: View, base: bytes) -> set[bytes]:
    """The names of the folders right below ``base`` holding a ref in ``view``:
    one search a folder (to its end), never a walk of every ref below."""
    names: set[bytes] = set()
    prefix = base + b"/"
    position, end = view.span(prefix)
    while position < end:
        name, _, after = view._record(position)
        folder, slash, _ = name[len(prefix) :].partition(b"/")
        if not slash:
            position = after
            continue
        if valid_ref_name(prefix + folder):
            names.add(folder)
        position = view.lower_bound(packedrefs.prefix_end(prefix + folder + slash))
    return names

"""The store opened with dulwich, without letting its side files hang or break us
(opened only by what needs dulwich's ``Repo``: gc reading every ref, releasing packs).

The store lives in the user's home, where an agent running as the user can
write too. dulwich's ``Repo`` reads, as it opens, the ``config`` (and every
file it includes), ``commondir``, ``info/grafts``, ``shallow`` and a ``.git``
file at the root; later every loose ref, ``packed-refs`` and
``objects/info/alternates``: all with a plain ``open``, which blocks forever
on a named pipe and reads ``/dev/zero`` until memory runs out. Here each of
them is read through ``fsutil.read_side_file`` (without blocking, a regular
file only, up to a cap), or not at all:

- The ``config``: snapshotter's behaviour never depends on it (the store is
  snapshotter's own, written with the settings of :data:`STORE_CONFIG`), so
  dulwich is handed those settings, never the file. A file git could not read
  (not a regular file, too large, a ``repositoryformatversion`` it does not
  know) is reported once per process as a warning: snapshots go on, and
  ``git --git-dir`` will work again once it is fixed.
- ``commondir``, ``objects/info/alternates``: a store has neither (a fork
  shares objects by hard links, never by alternates); planted ones are not
  read, so they cannot send reads into another repository.
- ``info/grafts``, ``shallow`` and the other named files: read guarded; one
  that cannot be read is taken as absent.
- A loose ref: its first line, guarded, never through a symlink; one that
  cannot be read is taken as absent (a damaged ref, see ``refreading``).
- ``packed-refs``: guarded; it may hold snapshots' refs, so one that cannot be
  read is a :class:`StoreError` naming it, never a guess that it is empty (a
  gc would then drop what it names).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from typing import BinaryIO

from dulwich.config import ConfigFile
from dulwich.errors import PackedRefsException
from dulwich.object_store import DiskObjectStore
from dulwich.objects import ObjectID
from dulwich.refs import DiskRefsContainer, Ref, read_packed_refs, read_packed_refs_with_peeled
from dulwich.repo import Repo

from snapshotter.engine.fsutil import read_side_file, read_side_head
from snapshotter.engine.gitstore.storerepo import PACKED_REFS_CAP, REF_FILE_CAP, STORE_CONFIG, check_config
from snapshotter.errors import StoreError


def open_store_repo(path: str) -> Repo:
    """The store at ``path`` as a dulwich ``Repo`` whose reads of side files are
    guarded (see the module docstring). Raises what ``Repo`` raises for a
    folder that is no repository (``NotGitRepository``)."""
    check_config(os.path.join(path, "config"))
    return _StoreRepo(path)


class _StoreRepo(Repo):
    """A ``Repo`` reading its side files guarded (see the module docstring)."""

    def __init__(self, path: str) -> None:
        config = _store_config(os.path.join(path, "config"))
        objects = _NoAlternates.from_config(os.path.join(path, "objects"), config)
        super().__init__(path, object_store=objects, bare=True)
        self.refs = _GuardedRefs(path, path, logger=self._write_reflog)

    def get_config(self) -> ConfigFile:
        return _store_config(os.path.join(self.commondir(), "config"))

    def get_named_file(self, path: str | bytes, basedir: str | None = None) -> BinaryIO | None:
        name = (path.decode("utf-8") if isinstance(path, bytes) else path).lstrip(os.path.sep)
        if name == "commondir":
            return None  # a store has none: never let one send reads elsewhere
        try:
            return io.BytesIO(read_side_file(os.path.join(basedir or self.controldir(), name), follow=False))
        except OSError:
            return None


def _store_config(path: str) -> ConfigFile:
    config = ConfigFile.from_file(io.BytesIO(STORE_CONFIG))
    config.path = path
    return config


class _NoAlternates(DiskObjectStore):
    """The store's objects: a store never has alternates, so none is read."""

    def _read_alternate_paths(self) -> Iterator[str]:
        return iter(())


class _GuardedRefs(DiskRefsContainer):
    """dulwich's refs, with each loose ref and ``packed-refs`` read guarded."""

    _guarded_key: tuple[int, ...] | None = None

    def read_loose_ref(self, name: Ref) -> bytes | None:
        if hasattr(DiskRefsContainer, "_read_loose_ref_file"):
            return super().read_loose_ref(name)  # checks the name, then calls the reader below
        return self._read_loose_ref_file(name)  # dulwich 0.25 reads at once

    def _read_loose_ref_file(self, name: Ref) -> bytes | None:
        try:
            head, _ = read_side_head(os.fsdecode(self.refpath(name)), REF_FILE_CAP, follow=False)
        except (OSError, ValueError):
            return None
        return head.split(b"\n", 1)[0].rstrip(b"\r")  # a symbolic ref's too: ``ref: NAME``

    def get_packed_refs(self) -> dict[Ref, ObjectID]:
        path = os.path.join(os.fsdecode(self.path), "packed-refs")
        try:
            st = os.stat(path)
            key: tuple[int, ...] | None = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            key = None
        if self._packed_refs is not None and key is not None and key == self._guarded_key:
            return self._packed_refs
        try:
            data = read_side_file(path, PACKED_REFS_CAP, follow=False)
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise StoreError(
                f"cannot read {path} ({exc.strerror or exc}): it may name snapshots, so nothing is done "
                "without it; if it is not a file, remove it"
            ) from None
        packed: dict[Ref, ObjectID] = {}
        peeled: dict[Ref, ObjectID] = {}
        lines = io.BytesIO(data)
        first = lines.readline()
        try:
            if first.startswith(b"# pack-refs") and b" peeled" in first:
                for sha, name, peeled_sha in read_packed_refs_with_peeled(lines):
                    packed[name] = sha
                    if peeled_sha:
                        peeled[name] = peeled_sha
            else:
                lines.seek(0)
                for sha, name in read_packed_refs(lines):
                    packed[name] = sha
        except (ValueError, PackedRefsException) as exc:
            raise StoreError(f"{path} is damaged ({exc}); run verify") from None
        self._packed_refs, self._peeled_refs, self._guarded_key = packed, peeled, key
        return packed

"""A workspace's store: a bare git repository (where it lives: ``location``).

A ``workspace`` file inside records the canonical workspace path it belongs to. The
store is created whole in a temporary folder and renamed into place, so a crash
never leaves a half-made store under the final name. It is owner-only (0700),
never auto-gcs (``gc.auto=0``), and every snapshot is a parentless commit
pinned by ``refs/snapshots/<seq>``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
import weakref
import zlib
from collections.abc import Iterator

from dulwich import errors as dulwich_errors
from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked
from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from snapshotter.errors import StoreError
from snapshotter.fsutil import USE_CTIME, settled, sync_folder, unlink_quietly
from snapshotter.gitstore import chainappend
from snapshotter.gitstore.bigstore import BigFiles
from snapshotter.gitstore.objectstore import StoredObjects
from snapshotter.gitstore.refreading import LooseRefs

DAMAGED_OBJECT: tuple[type[Exception], ...] = (
    ValueError,
    zlib.error,
    dulwich_errors.ApplyDeltaError,
    dulwich_errors.ChecksumMismatch,
    dulwich_errors.ObjectFormatException,
)
"""What reading a damaged object raises (a missing one raises KeyError)."""
MISSING_OR_DAMAGED: tuple[type[Exception], ...] = (KeyError, *DAMAGED_OBJECT)
SNAPSHOT_REF_PREFIX = b"refs/snapshots/"
_HEX40 = re.compile(rb"[0-9a-f]{40}")
TEMP_NAME = re.compile(
    r"tmp_obj_|tmp_pack_|tmp_idx_|\.(statcache|generation|line-counts|signature)-.*\.tmp$|pack-chain-.*\.idx\.tmp$|pack-chain-\w+\.tmp$"
)
"""Temporary files writers make in the store (then rename into place)."""
_STACK_PREFIX = b"refs/snapshotter/"
STACK_NAMES = ("undo", "redo", "turns")
"""A session's stacks (the anonymous one's at the top, a named one's under ``sessions/<name>/``)."""
_BASE_REF = Ref(b"refs/snapshotter/base")
_GENERATION = "generation"
_SEQ_WIDTH = 10
_STORE_CONFIG = b"""[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = true
\tlogallrefupdates = false
\tlooseCompression = 1
[gc]
\tauto = 0
"""


class Store(StoredObjects):
    """An opened store: refs, raw object access and object writing."""

    def __init__(self, path: str, repo: Repo) -> None:
        super().__init__(os.path.join(path, "objects"))
        self.path = path
        self.repo = repo
        # Close at interpreter exit too: dulwich's __del__ on an open object store
        # prints a traceback when it runs during shutdown (a Snapshotter never closed).
        self._finalizer = weakref.finalize(self, repo.close)
        self.meta_dir = os.path.join(path, "snapshotter")
        self.big = BigFiles(
            self.packs, self.meta_dir, self.has_object, self.writer.count_written, self.blob_chunks, self.blob_size
        )
        self.writer.big = self.big
        self._refs_read: dict[bytes, tuple[tuple[int, ...], dict[int, bytes], list[str]]] = {}
        """Ref folder -> (its stamp, the numbered refs and the other names read then)."""
        self._loose_refs = LooseRefs(self.path)

    @classmethod
    def open_or_create(cls, path: str, canonical: str) -> Store:
        if not os.path.isdir(path):
            _create(path, canonical)
        recorded = _read_workspace_file(path)
        if recorded is not None and recorded != canonical:
            raise StoreError(f"store {path} belongs to {recorded}, not {canonical}; remove it or use another home")
        try:
            repo = Repo(path)
        except (NotGitRepository, OSError, ValueError, KeyError) as exc:
            raise StoreError(f"cannot open store {path} ({exc}); remove it to start afresh") from None
        store = cls(path, repo)
        store.settle_appends()  # a killed writer's half-done append: put back before anything is read
        return store

    def settle_appends(self) -> None:
        chainappend.settle(self.packs.dir, os.path.join(self.meta_dir, "lock"), self.recover)

    def release_packs(self) -> None:
        """Close every open pack (before gc deletes them: Windows cannot delete open files)."""
        super().release_packs()
        self.repo.object_store.close()

    def close(self) -> None:
        self.packs.close()
        self._finalizer()

    def write_commit(self, commit: Commit) -> bytes:
        return self.writer.write(b"commit", commit.as_raw_string())

    # -- refs --------------------------------------------------------------------

    def snapshot_refs(self) -> dict[int, bytes]:
        """Sequence number -> raw commit id, for every snapshot ref."""
        return self._numbered(SNAPSHOT_REF_PREFIX.rstrip(b"/"))[0]

    def _numbered(self, base: bytes) -> tuple[dict[int, bytes], list[str]]:
        """The refs below ``base`` named by a number and holding a commit id,
        and the names of the others (garbage, symbolic refs, foreign names).

        Each ref's raw content is read, never resolved: a symbolic ref planted
        in the store must not make one snapshot pose as another. What was read
        is kept while the ref folder and ``packed-refs`` keep their stats (see
        ``_refs_stamp``): one snapshot asks for its refs five times.
        """
        stamp, settled_then = self._refs_stamp(base)
        known = self._refs_read.get(base)
        if stamp is not None and known is not None and known[0] == stamp:
            return dict(known[1]), list(known[2])
        good, bad = self._read_numbered(base)
        if stamp is not None and settled_then:
            self._refs_read[base] = (stamp, dict(good), list(bad))
        return good, bad

    def _refs_stamp(self, base: bytes) -> tuple[tuple[int, ...] | None, bool]:
        """The stats of ``base``'s folder and of ``packed-refs``, taken before
        reading them, and whether both had settled (see ``fsutil.settled``):
        any ref created, removed or rewritten (by rename) changes one of them.
        No stamp where that cannot be told (no ctime on Windows, no folder yet)."""
        if not USE_CTIME:
            return None, False
        now = time.time_ns()
        try:
            folder = os.stat(self._ref_path(base))
        except OSError:
            return None, False
        try:
            packed: os.stat_result | None = os.stat(os.path.join(self.path, "packed-refs"))
        except FileNotFoundError:
            packed = None
        except OSError:
            return None, False
        stamp: tuple[int, ...] = (folder.st_mtime_ns, folder.st_ctime_ns, folder.st_ino)
        if packed is None:
            return stamp, settled(folder, now)
        stamp += (packed.st_mtime_ns, packed.st_ctime_ns, packed.st_ino, packed.st_size)
        return stamp, settled(folder, now) and settled(packed, now)

    def _read_numbered(self, base: bytes) -> tuple[dict[int, bytes], list[str]]:
        good: dict[int, bytes] = {}
        bad: list[str] = []
        for name, raw in self._loose_refs.read(base, self.repo.refs.get_packed_refs).items():
            key = name[len(base) + 1 :]
            value = (raw or b"").strip()
            if key.isdigit() and _HEX40.fullmatch(value):
                good[int(key)] = bytes.fromhex(value.decode("ascii"))
            else:
                bad.append(name.decode("utf-8", "replace"))
        return good, bad

    def damaged_refs(self) -> list[str]:
        """Names of refs in snapshotter's namespaces that hold no usable commit id."""
        bad = self._read_numbered(SNAPSHOT_REF_PREFIX.rstrip(b"/"))[1]  # never from memory: nested names too
        for stack in STACK_NAMES:
            bad += self._read_numbered(_STACK_PREFIX + stack.encode())[1]
            for session in self.sessions():
                bad += self._read_numbered(_STACK_PREFIX + f"sessions/{session}/{stack}".encode())[1]
        return sorted(bad)

    def sessions(self) -> list[str]:
        """The named sessions that keep stacks in this store (see ``history``)."""
        names = self._loose_refs.holders(_STACK_PREFIX + b"sessions", self.repo.refs.get_packed_refs)
        return sorted(name.decode("utf-8", "replace") for name in names if name)

    def add_snapshot_ref(self, seq: int, sha: bytes) -> bool:
        """Create ``refs/snapshots/<seq>`` if no other writer took ``seq``."""
        name = SNAPSHOT_REF_PREFIX + b"%0*d" % (_SEQ_WIDTH, seq)
        self.writer.make_durable()  # objects first: the ref must never name lost content
        try:
            added = bool(self.repo.refs.add_if_new(Ref(name), ObjectID(sha.hex().encode())))
        except FileLocked:
            return False  # another writer is creating this very ref right now
        if added:  # dulwich synced the ref file; its name in the folder too, and the snapshot is complete
            self._seal(name)
            sync_folder(os.path.dirname(self._ref_path(name)))
        return added

    def _ref_path(self, name: bytes) -> str:
        return os.path.join(self.path, *name.decode("ascii").split("/"))

    def _seal(self, name: bytes) -> None:
        """Make a ref dulwich just wrote (0644 less the umask) owner-only, with
        the folders it may have created for it."""
        if os.name != "posix":
            return
        path = self._ref_path(name)
        try:
            os.chmod(path, 0o600)
            folder = os.path.dirname(path)
            refs_root = os.path.join(self.path, "refs")
            while len(folder) > len(refs_root):
                os.chmod(folder, 0o700)
                folder = os.path.dirname(folder)
        except OSError:
            pass  # removed by another writer meanwhile: nothing to protect

    # -- stacks: undo, redo and turns, as numbered refs so they outlive the process --

    def stack(self, name: str) -> list[bytes]:
        """The commit ids on ``refs/snapshotter/<name>/``, bottom first."""
        numbered = self._numbered(_STACK_PREFIX + name.encode())[0]
        return [numbered[n] for n in sorted(numbered)]

    def _stack_numbers(self, name: str) -> list[int]:
        return sorted(self._numbered(_STACK_PREFIX + name.encode())[0])

    def push(self, name: str, sha: bytes) -> int:
        """Put ``sha`` on top of the stack; returns its number. Hold the store lock."""
        number = max(self._stack_numbers(name), default=0) + 1
        ref = self._stack_ref(name, number)
        self.repo.refs[ref] = ObjectID(sha.hex().encode())
        self._seal(ref)
        return number

    def pop(self, name: str) -> bytes | None:
        """Remove and return the top of the stack. Hold the store lock."""
        numbers = self._stack_numbers(name)
        if not numbers:
            return None
        ref = self._stack_ref(name, numbers[-1])
        value = self.repo.refs[ref]
        del self.repo.refs[ref]
        return bytes.fromhex(value.decode("ascii"))

    def clear(self, name: str) -> None:
        for number in self._stack_numbers(name):
            del self.repo.refs[self._stack_ref(name, number)]

    @staticmethod
    def _stack_ref(name: str, number: int) -> Ref:
        return Ref(_STACK_PREFIX + name.encode() + b"/%0*d" % (_SEQ_WIDTH, number))

    def drop_from_stack(self, name: str, sha: bytes) -> None:
        """Remove every entry of ``name`` that points at ``sha``."""
        value = sha.hex().encode()
        for key, current in self.repo.refs.as_dict(Ref(_STACK_PREFIX + name.encode())).items():
            if current == value:
                del self.repo.refs[Ref(_STACK_PREFIX + name.encode() + b"/" + key)]

    # -- the generation: bumped before anything is deleted from the store ----------------

    def generation(self) -> int:
        """How many times objects may have been deleted from this store (0: never).

        A cache that lets a writer skip writing an object (the stat cache's blob
        ids, its folders' tree ids, watch mode's last scan) is valid only for the
        generation it was made in: gc bumps it, under the store lock, before it
        deletes anything, so every writer (another instance, another process)
        drops such caches at its next scan instead of reusing an id gc removed.
        """
        try:
            with open(os.path.join(self.meta_dir, _GENERATION), "rb") as handle:
                text = handle.read(32).strip()
        except FileNotFoundError:
            return 0
        return int(text) if text.isdigit() else -1  # garbage: matches no cache, so every cache is dropped

    def bump_generation(self) -> int:
        """Start a new generation (hold the store lock); returns its number."""
        number = max(self.generation(), 0) + 1
        path = os.path.join(self.meta_dir, _GENERATION)
        fd, tmp = tempfile.mkstemp(dir=self.meta_dir, prefix=".generation-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(b"%d\n" % number)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        sync_folder(self.meta_dir)
        return number

    # -- the base: the snapshot the workspace was last made equal to -------------------

    def base(self) -> bytes | None:
        """The commit id ``refs/snapshotter/base`` holds (read raw, never resolved), or None."""
        raw = self.repo.refs.read_loose_ref(_BASE_REF)
        if raw is None:
            raw = self.repo.refs.get_packed_refs().get(_BASE_REF)
        value = (raw or b"").strip()
        return bytes.fromhex(value.decode("ascii")) if _HEX40.fullmatch(value) else None

    def set_base(self, sha: bytes) -> None:
        """Point the base at ``sha`` (a snapshot, a restore, undo or redo made the
        workspace equal to it). Hold the store lock."""
        self.repo.refs[_BASE_REF] = ObjectID(sha.hex().encode())
        self._seal(_BASE_REF)

    # -- pins and removal --------------------------------------------------------------

    def pinned(self) -> set[bytes]:
        refs = self.repo.refs.as_dict(Ref(_STACK_PREFIX + b"pins"))
        return {bytes.fromhex(v.decode("ascii")) for v in refs.values()}

    def set_pin(self, sha: bytes, pinned: bool) -> None:
        ref = Ref(_STACK_PREFIX + b"pins/" + sha.hex().encode())
        if pinned:
            self.repo.refs[ref] = ObjectID(sha.hex().encode())
            self._seal(ref)
        elif ref in self.repo.refs:
            del self.repo.refs[ref]

    def remove_snapshot_ref(self, seq: int, sha: bytes) -> bool:
        name = SNAPSHOT_REF_PREFIX + b"%0*d" % (_SEQ_WIDTH, seq)
        return bool(self.repo.refs.remove_if_equals(Ref(name), ObjectID(sha.hex().encode())))

    def ref_targets(self) -> set[bytes]:
        """Every commit any ref points at: the roots of what gc keeps."""
        out = set()
        for value in self.repo.refs.as_dict(Ref(b"refs")).values():
            try:
                out.add(bytes.fromhex(value.decode("ascii")))
            except ValueError:
                continue
        return out

    def iter_snapshot_ids(self) -> Iterator[tuple[int, bytes]]:
        """(seq, commit id) pairs, newest first."""
        refs = self.snapshot_refs()
        for seq in sorted(refs, reverse=True):
            yield seq, refs[seq]

    def clear_stale_ref_locks(self) -> int:
        """Remove the ``*.lock`` files a killed writer left beside refs; call it
        only while holding the store lock (every ref writer holds it too, so
        any lock file found then is stale). Returns how many were removed."""
        removed = 0
        candidates = [os.path.join(self.path, "packed-refs.lock")]
        for dirpath, _, filenames in os.walk(os.path.join(self.path, "refs")):
            candidates.extend(os.path.join(dirpath, n) for n in filenames if n.endswith(".lock"))
        for path in candidates:
            # One that stays is left for the next recovery; the operation needing it will report it.
            removed += unlink_quietly(path)
        return removed

    def recover(self) -> int:
        """Clear what a writer killed while holding the store lock left behind:
        ref locks and temporary files (objects, packs, indexes, the stat cache,
        the generation). Call it only while holding the store lock: every
        writer of those holds it, so any found then is stale. Returns how many
        files were removed."""
        removed = self.clear_stale_ref_locks()
        removed += chainappend.recover(self.packs.dir)  # before temporary files go: a journal names some
        objects_dir = os.path.join(self.path, "objects")
        folders = [objects_dir, self.packs.dir, self.meta_dir, self.big.signatures.folder, self.big.states]
        try:
            folders += [os.path.join(objects_dir, n) for n in os.listdir(objects_dir) if len(n) == 2]
        except OSError:
            pass
        for folder in folders:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if TEMP_NAME.match(name):  # one that stays is left for gc, which removes old ones too
                    removed += unlink_quietly(os.path.join(folder, name))
        return removed

    def remove(self) -> None:
        self.close()
        shutil.rmtree(self.path, ignore_errors=False)


def _create(path: str, canonical: str) -> None:
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=parent, prefix=".new-store-")
        try:
            Repo.init_bare(tmp).close()
            with open(os.path.join(tmp, "config"), "wb") as handle:
                handle.write(_STORE_CONFIG)
            with open(os.path.join(tmp, "description"), "wb") as handle:
                handle.write(b"snapshotter store for " + os.fsencode(canonical) + b"\n")
            with open(os.path.join(tmp, "workspace"), "wb") as handle:
                handle.write(os.fsencode(canonical) + b"\n")
            os.makedirs(os.path.join(tmp, "snapshotter"), mode=0o700, exist_ok=True)
            os.makedirs(os.path.join(tmp, "refs", "snapshots"), mode=0o700, exist_ok=True)
            owner_only(tmp)
            try:
                os.rename(tmp, path)
            except OSError:
                if not os.path.isdir(path):  # another process won the race: fine
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as exc:
        raise StoreError(
            f"cannot create store {path}: {exc.strerror}; check that the home folder is writable"
        ) from None


def owner_only(root: str) -> None:
    """Make ``root`` and everything below it readable by its owner only (folders
    0700, files 0600): the store holds copies of the workspace's files."""
    if os.name != "posix":
        return  # Windows: the per-user data folder's ACL already keeps others out
    os.chmod(root, 0o700)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o700)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o600)


def _read_workspace_file(path: str) -> str | None:
    try:
        with open(os.path.join(path, "workspace"), "rb") as handle:
            return os.fsdecode(handle.read().rstrip(b"\n"))
    except OSError:
        return None

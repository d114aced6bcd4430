"""A workspace's store: a bare git repository (where it lives: ``location``; how
it is made: ``making``).

A ``workspace`` file inside records the canonical workspace path it belongs to. The
store is created whole in a temporary folder and renamed into place, so a crash
never leaves a half-made store under the final name. It is owner-only (0700),
never auto-gcs (``gc.auto=0``), and every snapshot is a parentless commit
pinned by ``refs/snapshots/<seq>``.
"""

from __future__ import annotations

import os
import re
import threading
import weakref
import zlib
from collections.abc import Iterator

from dulwich import errors as dulwich_errors

from snapshotter.engine.fsutil import SMALL_FILE_CAP, open_side_file, read_side_file, unlink_quietly
from snapshotter.engine.gitstore import chainjournal, generations
from snapshotter.engine.gitstore.location import store_exists
from snapshotter.engine.gitstore.objectstore import StoredObjects
from snapshotter.engine.gitstore.packedrefs import View
from snapshotter.engine.gitstore.refstore import WIDTH, RefStore, folders_in, number_name
from snapshotter.engine.gitstore.storerepo import check_config
from snapshotter.errors import StoreError

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
SNAPSHOTS = b"refs/snapshots"
_HEX40 = re.compile(rb"[0-9a-f]{40}")
_SEQ_LINE = re.compile(rb"^Snapshot-Seq: ([0-9]{1,10})$", re.MULTILINE)
"""The number a snapshot's commit records (searched in its last paragraph: the trailers)."""
RENUMBERED = "renumbered"
"""``<commit id> <seq>`` lines: snapshots numbered here otherwise than their commits
say (fetched from a remote, copied into a fork), so their number is found at once."""
RENUMBERED_CAP = 16 << 20
TEMP_NAME = re.compile(
    r"tmp_obj_|tmp_pack_|tmp_idx_"
    r"|\.(statcache|generation|line-counts|history-index|checked|packed-refs-bounds|signature)-.*\.tmp$"
    r"|pack-chain-.*\.idx\.tmp$|pack-chain-\w+\.tmp$"
)
"""Temporary files writers make in the store (then rename into place)."""
_STACK_PREFIX = b"refs/snapshotter/"
STACK_NAMES = ("undo", "redo", "turns")
"""A session's stacks (the anonymous one's at the top, a named one's under ``sessions/<name>/``)."""
_BASE_REF = b"refs/snapshotter/base"
_PINS = b"refs/snapshotter/pins"

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:
    from dulwich.objects import Commit
    from dulwich.repo import Repo

    from snapshotter.engine.gitstore.trailers import BuiltCommit


class Store(StoredObjects):
    """An opened store: refs, raw object access and object writing."""

    def __init__(self, path: str) -> None:
        super().__init__(os.path.join(path, "objects"))
        self.path = path
        self._repo: Repo | None = None
        self._opening = threading.Lock()
        self._finalizer: weakref.finalize[[], Store] | None = None
        self.meta_dir = os.path.join(path, "snapshotter")
        self.refs = RefStore(path)
        self.refs.hot = self._searched_by_calls

    @classmethod
    def open_or_create(cls, path: str, canonical: str) -> Store:
        if not store_exists(path):
            from snapshotter.engine.gitstore.making import create  # a new store only

            create(path, canonical)
        recorded = _read_workspace_file(path)
        if recorded is not None and recorded != canonical:
            raise StoreError(f"store {path} belongs to {recorded}, not {canonical}; remove it or use another home")
        check_config(os.path.join(path, "config"))
        store = cls(path)
        store.settle_appends()  # a killed writer's half-done append: put back before anything is read
        return store

    def settle_appends(self) -> None:
        chainjournal.settle(self.packs.dir, os.path.join(self.meta_dir, "lock"), self.recover)

    @property
    def repo(self) -> Repo:
        """The store as dulwich's ``Repo`` (``guardedrepo``), opened when first asked for:
        only gc (every ref) and releasing packs need it, reading the history does not
        (issue #51: opening it loads most of dulwich)."""
        with self._opening:
            if self._repo is None:
                from dulwich.errors import NotGitRepository

                from snapshotter.engine.gitstore.guardedrepo import open_store_repo

                try:
                    repo = open_store_repo(self.path)
                except (NotGitRepository, OSError, ValueError, KeyError) as exc:
                    raise StoreError(f"cannot open store {self.path} ({exc}); remove it to start afresh") from None
                # Close at interpreter exit too: dulwich's __del__ on an open object store
                # prints a traceback when it runs during shutdown (a Snapshotter never closed).
                self._finalizer = weakref.finalize(self, repo.close)
                self._repo = repo
            return self._repo

    def release_packs(self) -> None:
        """Close every open pack (before gc deletes them: Windows cannot delete open files)."""
        super().release_packs()
        if self._repo is not None:
            self._repo.object_store.close()

    def close(self) -> None:
        self.packs.close()
        if self._finalizer is not None:
            self._finalizer()

    def write_commit(self, commit: Commit | BuiltCommit) -> bytes:
        return self.writer.write(b"commit", commit.as_raw_string())

    # -- snapshot refs (see ``refstore``: loose and packed, read from either end) --------

    def _searched_by_calls(self, view: View) -> None:
        """The folders' ends that calls search ``packed-refs`` for: the snapshots',
        the pins', the sessions' and each stack's (see ``packedbounds``)."""
        view.span(SNAPSHOTS + b"/")
        view.span(_PINS + b"/")
        stacks = [_STACK_PREFIX + name.encode() for name in STACK_NAMES]
        for session in folders_in(view, _STACK_PREFIX + b"sessions"):
            stacks += [_STACK_PREFIX + b"sessions/" + session + b"/" + name.encode() for name in STACK_NAMES]
        for base in stacks:
            view.span(base + b"/")

    def snapshot_refs(self) -> dict[int, bytes]:
        """Sequence number -> raw commit id, for every snapshot ref. Reads them
        all: for what walks every snapshot anyway (verify, gc, push)."""
        return {seq: sha for seq, sha in self.refs.numbered(SNAPSHOTS) if sha is not None}

    def iter_snapshot_ids(self, below: int | None = None) -> Iterator[tuple[int, bytes]]:
        """(seq, commit id) pairs, newest first (only those below ``below``),
        read as they are taken: a caller that stops early reads only those."""
        for seq, sha in self.refs.numbered(SNAPSHOTS, True, below):
            if sha is not None:
                yield seq, sha

    def iter_oldest_first(self, above: int | None = None) -> Iterator[tuple[int, bytes]]:
        """(seq, commit id) pairs, oldest first (only those above ``above``)."""
        for seq, sha in self.refs.numbered(SNAPSHOTS, False, above):
            if sha is not None:
                yield seq, sha

    def snapshot_id(self, seq: int) -> bytes | None:
        """The commit id ``refs/snapshots/<seq>`` holds, or None."""
        raw = (self.refs.get(number_name(SNAPSHOTS, seq)) or b"").strip()
        return bytes.fromhex(raw.decode("ascii")) if _HEX40.fullmatch(raw) else None

    def next_seq(self) -> int:
        """One past the highest snapshot number taken (a damaged ref's too: never reused)."""
        return self.refs.newest_number(SNAPSHOTS) + 1

    def seq_of(self, sha: bytes) -> int | None:
        """The sequence number of the snapshot whose commit is ``sha``, or None
        (not a snapshot here, or dropped). One ref read: a snapshot's commit
        records its number, and one numbered otherwise here (fetched, forked)
        is in the ``renumbered`` list; else every ref is read."""
        recorded = self.recorded_seq(sha)
        if recorded is None:
            return None
        if self.snapshot_id(recorded) == sha:
            return recorded
        seq = self._renumbered().get(sha)  # read only for a snapshot numbered otherwise here
        if seq is not None and self.snapshot_id(seq) == sha:
            return seq
        return next((seq for seq, found in self.iter_snapshot_ids() if found == sha), None)

    def recorded_seq(self, sha: bytes) -> int | None:
        """The number the snapshot commit ``sha`` records (None: no snapshot commit)."""
        try:
            kind, _ = self.object_header(sha)  # never a big blob read whole for this
            if kind != 1:
                return None
            _, content = self.read_raw(sha)
        except MISSING_OR_DAMAGED + (StoreError,):
            return None
        found = _SEQ_LINE.search(content.rpartition(b"\n\n")[2])
        return int(found.group(1)) if found is not None else None

    def _renumbered(self) -> dict[bytes, int]:
        try:
            data = read_side_file(os.path.join(self.meta_dir, RENUMBERED), RENUMBERED_CAP, follow=False)
        except OSError:
            return {}
        found = {}
        for line in data.split(b"\n"):
            sha, _, seq = line.partition(b" ")
            if _HEX40.fullmatch(sha) and seq.isdigit() and len(seq) <= WIDTH:
                found[bytes.fromhex(sha.decode("ascii"))] = int(seq)
        return found

    def damaged_refs(self) -> list[str]:
        """Names of refs in snapshotter's namespaces that hold no usable commit id."""
        bad = self._damaged_below(SNAPSHOTS)
        for stack in STACK_NAMES:
            bad += self._damaged_below(_STACK_PREFIX + stack.encode())
            for session in self.sessions():
                bad += self._damaged_below(_STACK_PREFIX + f"sessions/{session}/{stack}".encode())
        return sorted(bad)

    def _damaged_below(self, base: bytes) -> list[str]:
        prefix = base + b"/"
        bad = []
        for name, raw in self.refs.everything_below(base).items():
            key = name[len(prefix) :]
            good = len(key) == WIDTH and key.isdigit() and key.isascii() and _HEX40.fullmatch((raw or b"").strip())
            if not good:
                bad.append(name.decode("utf-8", "replace"))
        return bad

    def sessions(self) -> list[str]:
        """The named sessions that keep stacks in this store (see ``history``)."""
        names = self.refs.folders(_STACK_PREFIX + b"sessions")
        return sorted(name.decode("utf-8", "replace") for name in names if name)

    def add_snapshot_ref(self, seq: int, sha: bytes) -> bool:
        """Create ``refs/snapshots/<seq>`` if no other writer took ``seq``."""
        self.writer.make_durable()  # objects first: the ref must never name lost content
        added = self.refs.create(number_name(SNAPSHOTS, seq), sha)
        if added:
            self._note_number(seq, sha)
        return added

    def _note_number(self, seq: int, sha: bytes) -> None:
        """Add a snapshot numbered otherwise than its commit says to the
        ``renumbered`` list (see :meth:`seq_of`)."""
        recorded = self.recorded_seq(sha)
        if recorded is None or recorded == seq:
            return  # None: not readable yet (a batch of objects not flushed) or not a snapshot commit
        try:
            fd, _ = open_side_file(os.path.join(self.meta_dir, RENUMBERED), follow=False, append=True)
        except OSError:
            return  # a hint only: without it the number is found by reading every ref
        try:
            os.write(fd, b"%s %d\n" % (sha.hex().encode("ascii"), seq))
        except OSError:
            pass
        finally:
            os.close(fd)

    def remove_snapshot_refs(self, dropped: dict[int, bytes]) -> set[int]:
        """Delete the refs of ``dropped`` (seq -> the id each must still hold),
        ``packed-refs`` rewritten once for all; returns the numbers deleted."""
        names: dict[bytes, bytes | None] = {number_name(SNAPSHOTS, seq): sha for seq, sha in dropped.items()}
        gone = self.refs.delete(names)
        return {seq for seq in dropped if number_name(SNAPSHOTS, seq) in gone}

    def remove_snapshot_ref(self, seq: int, sha: bytes) -> bool:
        return bool(self.remove_snapshot_refs({seq: sha}))

    def snapshot_fingerprint(self) -> tuple[tuple[int, str, str], list[int]]:
        """What the snapshot refs are now, cheaply (see ``RefStore.fingerprint``)."""
        return self.refs.fingerprint(SNAPSHOTS)

    def loose_snapshot_refs(self) -> int:
        return self.refs.loose_count(SNAPSHOTS)

    def pack_refs(self) -> int:
        """Fold the loose refs into ``packed-refs`` (hold the store lock), but the
        base and each stack's newest entries; returns how many were packed."""
        return self.refs.pack((SNAPSHOTS, _STACK_PREFIX.rstrip(b"/")), lambda name: name == _BASE_REF)

    # -- stacks: undo, redo and turns, as numbered refs so they outlive the process --

    def stack(self, name: str) -> list[bytes]:
        """The commit ids on ``refs/snapshotter/<name>/``, bottom first (all of them)."""
        return [sha for _, sha in self.refs.numbered(self._stack_base(name), False) if sha is not None]

    def stack_top(self, name: str, count: int | None = None) -> list[bytes]:
        """The newest ``count`` entries of a stack (None: all), bottom first; reads only those."""
        found: list[bytes] = []
        for _, sha in self.refs.numbered(self._stack_base(name)):
            if count is not None and len(found) >= count:
                break
            if sha is not None:
                found.append(sha)
        return found[::-1]

    def iter_stack(self, name: str, newest_first: bool = True) -> Iterator[tuple[int, bytes]]:
        """(number, commit id) of a stack's entries, newest first (or oldest first), lazily."""
        for number, sha in self.refs.numbered(self._stack_base(name), newest_first):
            if sha is not None:
                yield number, sha

    @staticmethod
    def _stack_base(name: str) -> bytes:
        return _STACK_PREFIX + name.encode()

    def push(self, name: str, sha: bytes) -> int:
        """Put ``sha`` on top of the stack; returns its number. Hold the store lock."""
        base = self._stack_base(name)
        number = self.refs.newest_number(base) + 1
        self.refs.put(number_name(base, number), sha)
        return number

    def pop(self, name: str) -> bytes | None:
        """Remove and return the top of the stack. Hold the store lock."""
        base = self._stack_base(name)
        for number, sha in self.refs.numbered(base):
            self.refs.delete({number_name(base, number): sha})
            if sha is not None:
                return sha
        return None

    def clear(self, name: str) -> None:
        base = self._stack_base(name)
        self.refs.delete(dict.fromkeys(number_name(base, number) for number, _ in self.refs.numbered(base)))

    def drop_from_stack(self, name: str, sha: bytes) -> None:
        """Remove every entry of ``name`` that points at ``sha`` (reads the whole stack)."""
        self.drop_from_stacks([name], {sha})

    def drop_from_stacks(self, names: list[str], shas: set[bytes], down_to: int | None = None) -> int:
        """Remove the entries of the stacks ``names`` pointing at any of ``shas``,
        in one rewrite of ``packed-refs``; with ``down_to``, a stack is read from
        its bottom only up to its first entry that is no snapshot up to ``down_to``
        (entries are pushed in the order snapshots are taken). Returns how many went."""
        doomed: dict[bytes, bytes | None] = {}
        for name in names:
            base = self._stack_base(name)
            for number, sha in self.refs.numbered(base, False):
                if sha is not None and sha in shas:
                    doomed[number_name(base, number)] = sha
                elif down_to is not None and (sha is None or (self.seq_of(sha) or 0) > down_to):
                    break
        return len(self.refs.delete(doomed)) if doomed else 0

    # -- the generation: bumped before anything is deleted from the store ----------------

    def generation(self) -> int:
        """How many times objects may have been deleted from this store (0: never;
        see ``generations``)."""
        return generations.current(self.meta_dir)

    def bump_generation(self) -> int:
        """Start a new generation (hold the store lock); returns its number."""
        return generations.bump(self.meta_dir)

    # -- the base: the snapshot the workspace was last made equal to -------------------

    def base(self) -> bytes | None:
        """The commit id ``refs/snapshotter/base`` holds (read raw, never resolved), or None."""
        value = (self.refs.get(_BASE_REF) or b"").strip()
        return bytes.fromhex(value.decode("ascii")) if _HEX40.fullmatch(value) else None

    def set_base(self, sha: bytes) -> None:
        """Point the base at ``sha`` (a snapshot, a restore, undo or redo made the
        workspace equal to it). Hold the store lock."""
        self.refs.put(_BASE_REF, sha)

    # -- pins and removal --------------------------------------------------------------

    def pinned(self) -> set[bytes]:
        values = (raw.strip() for raw in self.refs.everything_below(_PINS).values() if raw)
        return {bytes.fromhex(value.decode("ascii")) for value in values if _HEX40.fullmatch(value)}

    def set_pin(self, sha: bytes, pinned: bool) -> None:
        ref = _PINS + b"/" + sha.hex().encode()
        if pinned:
            self.refs.put(ref, sha)
        else:
            self.refs.delete({ref: None})

    def ref_targets(self) -> set[bytes]:
        """Every commit any ref points at: the roots of what gc keeps."""
        from dulwich.refs import Ref

        out = set()
        for value in self.repo.refs.as_dict(Ref(b"refs")).values():
            try:
                out.add(bytes.fromhex(value.decode("ascii")))
            except ValueError:
                continue
        return out

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
        removed += chainjournal.recover(self.packs.dir)  # before temporary files go: a journal names some
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
        import shutil

        shutil.rmtree(self.path, ignore_errors=False)


def _read_workspace_file(path: str) -> str | None:
    """The workspace a store records (None where it cannot be read: nothing to compare)."""
    try:
        return os.fsdecode(read_side_file(os.path.join(path, "workspace"), SMALL_FILE_CAP, follow=False).rstrip(b"\n"))
    except OSError:
        return None

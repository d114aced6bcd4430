"""Long histories made fast: hook-driven agent work recorded the way the store
records it, without walking the folder at each step.

A real history of 100,000 snapshots takes hours to record (a walk, a commit and
fsyncs per snapshot). This writes the same objects, commits and refs directly
through the store's own writers (``Store.write_commit``, ``add_snapshot_ref``,
the stacks' ``push``), in packs (the first snapshot's objects loose, as a real
first snapshot writes them), with nothing synced: turns of a session
(``pre-turn:<n>`` pushed on its undo and turns stacks), each with 8 tool calls
(``tool:<id>``, one file edited, ``tool-done:<id>``) and a ``post-turn:<n>``,
sessions taking turns, timestamps spread over the past days. The folder is
then written to match the newest snapshot. Used by the tests that need
thousands of snapshots and by ``benchmarks/bench_long_history.py``; what they
time or count afterwards goes through the public API.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import trailers
from snapshotter.engine.gitstore.objects import MODE_FILE, MODE_TREE, serialize_tree
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.upkeep import consolidation

CALLS_PER_TURN = 8
SNAPSHOTS_PER_TURN = 2 + 2 * CALLS_PER_TURN


@contextlib.contextmanager
def no_fsync() -> Iterator[None]:
    """Nothing synced while a history is made (it is rebuilt if the machine dies)."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


@dataclass
class History:
    """A folder of ``folders`` x ``files`` text files and its store's history."""

    ws: Path
    home: Path
    folders: int = 20
    files: int = 50
    sessions: tuple[str, ...] = ("claude-code-aa11", "codex-bb22", "claude-code-cc33")
    days: float = 6.0
    contents: dict[tuple[int, int], bytes] = field(default_factory=dict)
    taken: int = 0
    turns: int = 0

    def path(self, folder: int, name: int) -> Path:
        return self.ws / f"d{folder:02d}" / f"f{name:03d}.txt"

    def build(self, total: int, until: datetime | None = None) -> None:
        """Record snapshots until the store holds ``total`` (more turns on what is there)."""
        until = until or datetime.now(timezone.utc)
        self.ws.mkdir(parents=True, exist_ok=True)
        with no_fsync(), Snapshotter(self.ws, home=self.home, retention=Retention.unlimited()) as snap:
            store = snap._engine_ok().store
            _Writer(self, store, until, total).run()
            for (folder, name), data in self.contents.items():
                self.path(folder, name).parent.mkdir(exist_ok=True)
                self.path(folder, name).write_bytes(data)
            pack = getattr(store, "pack_refs", None)
            if pack is not None:
                pack()
            consolidation.consolidate(store)  # the packs of each batch joined, as upkeep joins them

    def reset(self) -> None:
        shutil.rmtree(self.ws, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)
        self.contents.clear()
        self.taken = self.turns = 0


class _Writer:
    def __init__(self, history: History, store: Store, until: datetime, total: int) -> None:
        self.h, self.store, self.total = history, store, total
        self.writer = store.writer
        self.start = until - timedelta(days=history.days)
        self.step = timedelta(days=history.days) / max(total, 1)
        self.blobs: dict[tuple[int, int], bytes] = {}
        self.folder_trees: dict[int, bytes] = {}
        self.tree = b""

    def run(self) -> None:
        h = self.h
        h.taken = next(self.store.iter_snapshot_ids(), (0, b""))[0]  # after the snapshots taken since, if any
        # A store's first snapshot writes the folder's objects loose, as a real first snapshot does (its
        # object folders stay after upkeep packs them: a store of any length lists them); the rest in packs.
        with self.writer.batch() if h.taken else contextlib.nullcontext():
            if not h.contents:
                for folder in range(h.folders):
                    for name in range(h.files):
                        h.contents[folder, name] = f"line {folder}/{name}\n".encode() * 20
            for key, data in h.contents.items():
                self.blobs[key] = self.writer.write(b"blob", data)
            for folder in range(h.folders):
                self._folder_tree(folder)
            self._root_tree()
            if h.taken == 0:
                self._commit(None, None, {}, "first")
        while h.taken < self.total:
            with self.writer.batch():
                for turn in range(64):
                    if h.taken >= self.total:
                        break
                    self._turn()
                    if turn % 16 == 15:
                        self.store.pack_refs()  # as upkeep packs them (every 256 loose): no folder of refs ever
                        # holds more than a few hundred files (a folder that held 100,000 stays big on ext4)

    def _turn(self) -> None:
        h = self.h
        session = h.sessions[h.turns % len(h.sessions)]
        number = h.turns // len(h.sessions) + 1
        meta = {"agent": session.rsplit("-", 1)[0], "agent-session": session}
        stacks = f"sessions/{session}/"
        pre = self._commit(f"pre-turn:{number}", session, {**meta, "turn": str(number)}, "a prompt")
        self.store.push(stacks + "undo", pre)
        self.store.push(stacks + "turns", pre)
        for call in range(CALLS_PER_TURN):
            if h.taken + 2 > self.total:
                break
            call_id = f"toolu_{h.turns:06d}_{call}"
            self._commit(f"tool:{call_id}", session, {**meta, "tool": "Bash"}, "before Bash")
            self._edit(h.turns * CALLS_PER_TURN + call)
            self._commit(f"tool-done:{call_id}", session, meta, "after Bash")
        if h.taken < self.total:
            self._commit(f"post-turn:{number}", session, {**meta, "turn": str(number)}, "ended")
        h.turns += 1

    def _edit(self, k: int) -> None:
        h = self.h
        key = (k % h.folders, (k // h.folders) % h.files)
        h.contents[key] += f"edit {k}\n".encode()
        self.blobs[key] = self.writer.write(b"blob", h.contents[key])
        self._folder_tree(key[0])
        self._root_tree()

    def _folder_tree(self, folder: int) -> None:
        entries = [(f"f{name:03d}.txt".encode(), MODE_FILE, self.blobs[folder, name]) for name in range(self.h.files)]
        self.folder_trees[folder] = self.writer.write(b"tree", serialize_tree(sorted(entries)))

    def _root_tree(self) -> None:
        entries = [(f"d{folder:02d}".encode(), MODE_TREE, sha) for folder, sha in self.folder_trees.items()]
        self.tree = self.writer.write(b"tree", serialize_tree(sorted(entries)))

    def _commit(self, label: str | None, session: str | None, meta: dict[str, str], message: str) -> bytes:
        seq = self.h.taken + 1
        commit = trailers.build_commit(
            self.tree,
            message,
            seq=seq,
            label=label,
            metadata=meta,
            stats=(1, 1, 0),
            skipped=[],
            when=self.start + self.step * seq,
            session=session,
        )
        sha = self.store.write_commit(commit)
        if not self.store.add_snapshot_ref(seq, sha):
            raise AssertionError(f"snapshot {seq} was taken already")
        self.h.taken = seq
        if seq == self.total:
            self.store.set_base(sha)
        return sha


def remote_holds(
    bare: Path, snap: Snapshotter, url: str, name: str, listed: int | None = None, batch: int = 1000, when: int = 0
) -> None:
    """Make the bare repository ``bare`` (reached at ``url``) hold every snapshot
    of ``snap``'s store under the namespace ``name`` as pushes would have left
    it, and this store's record of having pushed them: a long history on a
    remote without a long first push. Objects come through alternates to the
    store's, with ``core.alternateRefsCommand`` off: receive-pack would
    otherwise advertise every ref of the store as a ``.have`` line, which no
    real server holding the snapshots does.

    ``listed`` None: one packed ref a snapshot (a remote before archives). A
    number: the newest ``listed`` as snapshot refs and the rest in a chain of
    archives of ``batch`` snapshots each under this store's ``archive`` ref
    (archive commits dated ``when`` onwards), the record marking them archived:
    what archiving pushes leave (docs/remotes.md, "Archives")."""
    from dulwich.objects import ShaFile
    from dulwich.repo import Repo

    from snapshotter.engine.gitstore import archives
    from snapshotter.remote import archiving, remotes

    store = snap._engine_ok().store
    (bare / "objects" / "info").mkdir(exist_ok=True)
    (bare / "objects" / "info" / "alternates").write_text(os.path.join(snap.store_path, "objects") + "\n")
    config = (bare / "config").read_text()
    if "alternateRefsCommand" not in config:
        (bare / "config").write_text(config + "[core]\n\talternateRefsCommand = true\n")
    oldest_first = [sha for _, sha in store.iter_oldest_first()]
    cut = 0 if listed is None else max(0, len(oldest_first) - listed)
    archived, kept = oldest_first[:cut], oldest_first[cut:]
    namespace = remotes.PREFIX + name.encode() + b"/"
    archive_ref = namespace + b"hosts/" + remotes.host_id(store).encode() + b"/" + archiving.ARCHIVE
    tip: bytes | None = None
    with Repo(str(bare)) as repo:
        for start in range(0, len(archived), batch):
            for kind, sha, content in archives.archive_objects(tip, archived[start : start + batch], when + start):
                repo.object_store.add_object(ShaFile.from_raw_string(kind, content, sha.hex().encode()))
                tip = sha
    for loose in [*(bare / "refs/snapshotter" / name / "snapshots").glob("*"), bare / archive_ref.decode()]:
        loose.unlink(missing_ok=True)
    held: dict[bytes, bytes] = {}
    packed = bare / "packed-refs"
    if packed.exists():
        for line in packed.read_bytes().splitlines():
            sha, _, ref = line.partition(b" ")
            if line and not line.startswith(b"#") and not ref.startswith(namespace + b"snapshots/"):
                held[ref] = sha
    held.update({namespace + b"snapshots/" + sha.hex().encode(): sha.hex().encode() for sha in kept})
    if tip is not None:
        held[archive_ref] = tip.hex().encode()
    lines = [
        b"# pack-refs with: peeled fully-peeled sorted \n",
        *(held[ref] + b" " + ref + b"\n" for ref in sorted(held)),
    ]
    packed.write_bytes(b"".join(lines))
    record = Path(remotes._pushed_file(store, remotes.Target(remotes.open_remote(url), name, None)))
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("".join(f"{sha.hex()} archived\n" for sha in archived) + "".join(f"{s.hex()}\n" for s in kept))
    (record.parent.parent / "push-state" / record.name).unlink(missing_ok=True)  # its cache, of the record replaced

"""The persistent stat cache: what each tracked path looked like when last hashed.

A file is reused without reading it only if its mode, size, mtime, ctime and
inode all match its record **and** the record is not racy: its mtime must be
strictly older than the moment the cache was written, as the filesystem's own
clock saw it (the cache file's mtime), less the clock's granularity. A file
rewritten within the same tick as the cache would otherwise look unchanged.
The rule is written in ``racy``, which names every loop that applies it.

Per folder the cache keeps the tree id and the number of tracked entries, so a
folder whose entries are all unchanged reuses its tree id without serialising;
and the names the ignore rules excluded, under a digest of the rules and the
folder's listing, so an unchanged folder is not matched against the rules again.

And per folder its shape: the folder's own (mtime, ctime, inode), the rules
inside it and its tracked subfolders, with which a walk may take a folder
unchanged without listing it again; when it may is ``trust``'s rule alone.

Records are grouped by folder (folder -> name -> record): a walk looks a file
up by its name in its folder's small table, and a folder whose files all match
hands that very table to the scan, so an unchanged folder costs no new objects.
Such tables are shared and never changed in place; ``set`` copies one first.

Every blob and tree id in the cache names an object already in the store: the
cache is saved only after the objects it names are written.

The file is a small binary format (fixed-size records plus one block of paths),
checked by a trailing CRC-32 (for a torn or damaged file, as git's index is;
whoever could forge one can write the store) and versioned; a missing, old or
corrupt cache is treated as empty: a full re-hash, never a wrong snapshot.
Loading checks the whole file and reads the folder records (tree ids, shapes,
listings) but leaves each folder's table of file records packed: ``folder``
hands out a ``PackedFolder``, a view of the bytes as loaded that decodes its
records only when one is asked for; a walk checks a trusted folder's files on
those bytes (``PackedFolder.all_match``). A save writes each run of folders
unchanged since the load from the same bytes, in one piece, and holds the
tables it packed anew packed. The folder index holds end offsets.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from snapshotter.engine.collector import collector_paused
from snapshotter.engine.fsutil import new_temp_file, read_side_file_and_stat
from snapshotter.engine.gitstore.deflate import crc32  # ISA-L's where installed: 0.5 ms, not 3.3, for 7.8 MB
from snapshotter.engine.worktree import racy
from snapshotter.engine.worktree.packedfolder import RECORD, Buffer, PackedFolder
from snapshotter.engine.worktree.packedfolder import Record as Record  # re-exported: the walk names it from here

_MAGIC = b"snapshotter-statcache\n"
_VERSION = 8  # 8: a CRC-32 trailer (7: SHA-1); 7: the folder index holds end offsets (6 held sizes)
_HEADER = struct.Struct(
    "<IIIIIIQQQq20s"
)  # version; folders, files, dirs, listings, shapes; 3 blocks; generation; tracked
_FOLDER = struct.Struct("<II")  # ends of the folder's records (in records) and names (in bytes)
_FILE = RECORD  # st_mode, size, mtime_ns, ctime_ns, inode, blob id
_DIR = struct.Struct("<I20s")  # tracked entries, tree id
_LISTING = struct.Struct("<20sI")  # digest of rules + listing, number of ignored names
_SHAPE = struct.Struct("<qqQ20s?I")  # folder's mtime_ns, ctime_ns, inode; rules fingerprint, has .gitignore, subfolders
_TRAILER = 4  # CRC-32, little-endian: 1.6 ms over 7.8 MB where SHA-1 took 6.7 ms, on each load and save
CAP = 1 << 30
"""The largest cache loaded. Measured: 7.8 MB for 100,000 files (78 bytes a
file, their folders included), so 1 GiB is some 13 million files, far past the
default cap of 200,000 entries a workspace may hold; a bigger one is dropped (a
full re-hash, never a wrong snapshot). Its magic is checked first, so a sparse
file of zeros planted there costs nothing, however large."""

Listings = dict[str, tuple[bytes, frozenset[str]]]
"""Folder -> (digest of its rules and listing, the names they ignore)."""
Shape = tuple[int, int, int, bytes, bool, tuple[str, ...]]
"""A folder as last listed: its own (mtime_ns, ctime_ns, inode), the fingerprint
of the rules inside it, whether it has a ``.gitignore``, and its tracked subfolders.
Its tracked files are the names in its table of records (see ``trust``)."""
Folder = Mapping[str, Record]
"""One folder's records by file name (a dict, or a ``PackedFolder`` as loaded);
shared between caches and scans, so never changed in place."""

_NO_RECORDS: Folder = {}


@dataclass
class _Packed:
    """The tables a load has not handed out yet: folder -> its position in
    ``ends``, the (records end, names end) of each folder in file order."""

    index: dict[str, int]
    ends: list[tuple[int, int]]
    body: bytes
    names_at: int
    """Where every folder's block of names starts in ``body``, in folder order."""
    records_at: int

    def view(self, position: int) -> tuple[bytes, int, int, int, int]:
        """Where the folder at ``position`` lies in ``body`` (``PackedFolder.view``)."""
        start, name_start = self.ends[position - 1] if position else (0, 0)
        end, name_end = self.ends[position]
        names_at = self.names_at
        return self.body, names_at + name_start, names_at + name_end, self.records_at + start * _FILE.size, end - start


@dataclass
class StatCache:
    """Folder -> name -> record (stat key, blob id), folder -> (entry count, tree
    id), folder -> (digest of its rules and listing, the names they ignore), and
    folder -> shape (see ``Shape``)."""

    tables: dict[str, Folder] = field(default_factory=dict)
    """The tables handed out so far (see ``folders``)."""
    dirs: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    listings: Listings = field(default_factory=dict)
    shapes: dict[str, Shape] = field(default_factory=dict)
    written_ns: int = 0
    """The cache file's mtime when loaded; 0 means every record is racy."""
    packed: dict[str, tuple[Folder, Buffer, Buffer]] = field(default_factory=dict, repr=False, compare=False)
    """Folder -> (table, its names and records as saved): a table that is still
    the same object is saved again from these bytes, not packed record by record
    (a ``PackedFolder`` carries its own). Pass it on to the cache that succeeds this one."""
    generation: int = 0
    """The store generation its ids were valid in (see ``Store.generation``)."""
    tracked: bytes = b""
    """The checksum of the paths tracked whatever the rules say (the user's git
    index) when it was made: when it differs, folders holding ignored names are
    listed again, since which of those names are tracked may have changed."""
    undecoded: _Packed | None = field(default=None, repr=False, compare=False)

    @property
    def folders(self) -> dict[str, Folder]:
        """Every folder's table (those not handed out yet as ``PackedFolder``s, undecoded)."""
        if self.undecoded is not None:
            for rel in list(self.undecoded.index):
                self.folder(rel)
        return self.tables

    def folder_count(self) -> int:
        """How many folders have records, without handing out any."""
        return len(self.tables) + (len(self.undecoded.index) if self.undecoded is not None else 0)

    @classmethod
    def from_paths(cls, records: dict[str, Record], dirs: dict[str, tuple[int, bytes]] | None = None) -> StatCache:
        """A cache from path -> record (tests and small tools; scans build folders directly)."""
        cache = cls()
        cache.apply(records)
        cache.dirs.update(dirs or {})
        return cache

    def folder(self, rel: str) -> Folder:
        """The records of folder ``rel`` (``""``: the root); do not change the result."""
        table = self.tables.get(rel)
        if table is not None:
            return table
        packed = self.undecoded
        if packed is None:
            return _NO_RECORDS
        position = packed.index.pop(rel, None)
        if position is None:
            return _NO_RECORDS
        table = self.tables[rel] = PackedFolder(*packed.view(position))
        return table

    def packed_view(self, rel: str) -> tuple[bytes, int, int, int, int] | None:
        """Where folder ``rel``'s records lie in packed bytes (``PackedFolder.view``),
        handing nothing out (``preloadthread`` reads while the walk hands tables out);
        None for a dict, no records, or a table handed out meanwhile."""
        table = self.tables.get(rel)
        if table is not None:
            return table.view() if type(table) is PackedFolder else None
        packed = self.undecoded
        position = packed.index.get(rel) if packed is not None else None
        return packed.view(position) if packed is not None and position is not None else None

    def apply(self, changes: Mapping[str, Record | None]) -> None:
        """Record each path's new record (None: forget it), and forget the folder
        records above every changed path and the shape of its folder (its table no
        longer holds exactly the names listed). Each folder's table is copied once."""
        tables: dict[str, dict[str, Record]] = {}
        for path, record in changes.items():
            folder, _, name = path.rpartition("/")
            table = tables.get(folder)
            if table is None:
                table = tables[folder] = dict(self.folder(folder))
                self.shapes.pop(folder, None)
                self._forget_dirs_above(path)  # the same folders for every path in this one
            if record is None:
                table.pop(name, None)
            else:
                table[name] = record
        for folder, table in tables.items():
            if table:
                self.tables[folder] = table
            else:
                self.tables.pop(folder, None)

    def paths(self) -> Iterator[tuple[str, Record]]:
        """Every (path, record)."""
        for folder, table in self.folders.items():
            prefix = folder + "/" if folder else ""
            for name, record in table.items():
                yield prefix + name, record

    def count(self) -> int:
        return sum(len(table) for table in self.folders.values())

    def size_hint(self) -> int:
        """About how many records it holds, decoding nothing: those of the file
        as loaded (handed out or not), else those handed out."""
        packed = self.undecoded
        if packed is not None and packed.ends:
            return packed.ends[-1][0]
        return sum(map(len, self.tables.values()))

    def racy_cutoff(self) -> int:
        """Records whose mtime is at or above this value must be re-hashed (``racy``)."""
        return racy.cutoff(self.written_ns)

    def _forget_dirs_above(self, path: str) -> None:
        parent = path
        while parent:
            parent = parent.rpartition("/")[0]
            self.dirs.pop(parent, None)


def load(path: str) -> StatCache:
    """Read the cache at ``path``; anything unusable gives an empty cache. Read
    guarded (``fsutil.read_side_file``): a named pipe, a device, a symlink, a
    file past :data:`CAP` or one that does not begin as a cache is unusable."""
    try:
        data, st = read_side_file_and_stat(path, CAP, follow=False, starts_with=_MAGIC)
    except OSError:
        return StatCache()
    written_ns = st.st_mtime_ns
    try:
        with collector_paused():
            return _decode(data, written_ns)
    except (ValueError, struct.error, UnicodeDecodeError):
        return StatCache()


def _decode(data: bytes, written_ns: int) -> StatCache:
    body, size = data, len(data) - _TRAILER  # not sliced off: a copy of the whole file would double the peak
    if size < len(_MAGIC) + _HEADER.size or not data.startswith(_MAGIC):
        raise ValueError("corrupt stat cache")
    if crc32(memoryview(data)[:size]).to_bytes(_TRAILER, "little") != data[size:]:
        raise ValueError("corrupt stat cache")
    offset = len(_MAGIC)
    version = struct.unpack_from("<I", body, offset)[0]
    if version != _VERSION:
        raise ValueError("old stat cache")
    header = _HEADER.unpack_from(body, offset)
    _, n_folders, n_files, n_dirs, n_listings, n_shapes, paths_len, ignored_len, subdirs_len, generation, tracked = (
        header
    )
    offset += _HEADER.size
    names = _split(body[offset : offset + paths_len])
    offset += paths_len
    ignored_names = _split(body[offset : offset + ignored_len])
    offset += ignored_len
    subdir_names = _split(body[offset : offset + subdirs_len])
    offset += subdirs_len
    if len(names) != n_folders + n_dirs + n_listings + n_shapes:
        raise ValueError("corrupt stat cache")
    end = offset + n_folders * _FOLDER.size
    ends = list(_FOLDER.iter_unpack(body[offset:end]))
    names_len = ends[-1][1] if ends else 0
    offset = end + names_len
    end = offset + n_files * _FILE.size
    if (ends[-1][0] if ends else 0) != n_files or end > size:
        raise ValueError("corrupt stat cache")
    names_at = offset - names_len
    count = name_end = 0
    nuls = body.count
    for records_end, names_end in ends:  # each folder's names: one per record, each ended by a NUL
        if records_end < count or nuls(b"\0", names_at + name_end, names_at + names_end) != records_end - count:
            raise ValueError("corrupt stat cache")  # the checksum held, so only a writer's bug gets here
        if names_end > name_end and body[names_at + names_end - 1] != 0:
            raise ValueError("corrupt stat cache")
        count, name_end = records_end, names_end
    packed = _Packed(dict(zip(names[:n_folders], range(n_folders))), ends, body, names_at, offset)
    names = names[n_folders:]
    offset, end = end, end + n_dirs * _DIR.size
    dirs: dict[str, tuple[int, bytes]] = dict(zip(names, _DIR.iter_unpack(body[offset:end])))  # (count, tree id)
    offset, end = end, end + n_listings * _LISTING.size
    listings: Listings = {}
    position = 0
    nothing: frozenset[str] = frozenset()  # most folders ignore no name: one empty set for them all
    for name, (digest, count) in zip(names[n_dirs:], _LISTING.iter_unpack(body[offset:end])):
        if count:
            listings[name] = (digest, frozenset(ignored_names[position : position + count]))
            position += count
        else:
            listings[name] = (digest, nothing)
    offset, end = end, end + n_shapes * _SHAPE.size
    shapes: dict[str, Shape] = {}
    position = 0
    for name, (mtime, ctime, inode, rules, has_gitignore, count) in zip(
        names[n_dirs + n_listings :], _SHAPE.iter_unpack(body[offset:end])
    ):
        subdirs = tuple(subdir_names[position : position + count]) if count else ()
        shapes[name] = (mtime, ctime, inode, rules, has_gitignore, subdirs)
        position += count
    if position != len(subdir_names):
        raise ValueError("corrupt stat cache")
    counts = (len(packed.index), len(dirs), len(listings), len(shapes), end)
    if counts != (n_folders, n_dirs, n_listings, n_shapes, size):
        raise ValueError("corrupt stat cache")
    tracked = tracked if tracked.strip(b"\0") else b""
    return StatCache({}, dirs, listings, shapes, written_ns, {}, generation, tracked, packed)


def _split(block: bytes) -> list[str]:
    """NUL-terminated names; each name is followed by one NUL."""
    if not block:
        return []
    return block[:-1].decode("utf-8", "surrogateescape").split("\0")


def _join(names: list[str]) -> bytes:
    return ("\0".join(names) + "\0").encode("utf-8", "surrogateescape") if names else b""


def save(path: str, cache: StatCache) -> None:
    """Write ``cache`` atomically (temp file in the same folder, then rename); never joined
    whole (a cold 100k-file cache is 7 MiB), each run of unchanged folders in one piece."""
    with collector_paused():
        parts = _encode(cache)
    crc = 0
    for part in parts:
        crc = crc32(part, crc)
    write_atomically(path, *parts, crc.to_bytes(_TRAILER, "little"))
    cache.written_ns = os.stat(path).st_mtime_ns
    _hold_packed(cache)


def write_atomically(path: str, *pieces: Buffer) -> None:
    """Write a small file of the store's own (temp file in the same folder, then rename)."""
    fd, tmp = new_temp_file(os.path.dirname(path), ".statcache-", ".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in pieces:
                handle.write(piece)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _hold_packed(cache: StatCache) -> None:
    """Hold each table just packed from a dict as the file now does (a ``PackedFolder``),
    so that the process's next walk checks it on its bytes (``all_match``), not record
    by record (about 2.7 times the cost a folder). The dicts are left as they are (a
    scan may share them); ``packed`` still knows them by identity. Names, then records,
    lie in one buffer as a load lays them out: the next save writes a run as one piece."""
    tables = cache.tables
    held = [(folder, entry) for folder, entry in cache.packed.items() if tables.get(folder) is entry[0]]
    body = b"".join([names for _, (_, names, _) in held] + [records for _, (_, _, records) in held])
    names_at = 0
    records_at = sum(len(names) for _, (_, names, _) in held)
    for folder, (table, names, records) in held:
        tables[folder] = PackedFolder(body, names_at, names_at + len(names), records_at, len(table))
        names_at += len(names)
        records_at += len(records)


Span = tuple[bytes, int, int]  # where a table saved again lies in the bytes loaded: (them, start, end)


def _coalesced(pieces: Iterable[Buffer | Span]) -> list[Buffer]:
    """The pieces to write, with each run of spans that follow one another in the
    same bytes made one view: the tables of an unchanged stretch of folders, as
    loaded, are saved again as one piece each of names and records, not two per folder."""
    out: list[Buffer] = []
    body: bytes | None = None
    start = end = 0
    for piece in pieces:
        if isinstance(piece, tuple):
            if piece[0] is body and piece[1] == end:
                end = piece[2]
                continue
            if body is not None:
                out.append(memoryview(body)[start:end])
            body, start, end = piece
            continue
        if body is not None:
            out.append(memoryview(body)[start:end])
            body = None
        out.append(piece)
    if body is not None:
        out.append(memoryview(body)[start:end])
    return out


def _encode(cache: StatCache) -> list[Buffer]:
    previous = cache.packed
    packed: dict[str, tuple[Folder, Buffer | Span, Buffer | Span]] = {}
    kept: dict[str, tuple[Folder, Buffer, Buffer]] = {}
    pack_file = _FILE.pack
    for folder, table in cache.folders.items():
        if not table:
            continue
        if type(table) is PackedFolder:  # saved from the bytes it was loaded from
            packed[folder] = (table, *table.spans())
            continue
        known = previous.get(folder)
        if known is None or known[0] is not table:  # tables never change in place: same object, same bytes
            known = (table, _join(list(table)), b"".join([pack_file(*record) for record in table.values()]))
        packed[folder] = kept[folder] = known
    cache.packed = kept
    path_block = _join(list(packed) + list(cache.dirs) + list(cache.listings) + list(cache.shapes))
    ignored = [name for _, names in cache.listings.values() for name in sorted(names)]
    ignored_block = _join(ignored)
    subdirs_block = _join([name for shape in cache.shapes.values() for name in shape[5]])
    pack_folder = _FOLDER.pack
    records_end = names_end = 0
    index: list[bytes] = []
    for table, names, _ in packed.values():
        records_end += len(table)
        names_end += names[2] - names[1] if isinstance(names, tuple) else len(names)
        index.append(pack_folder(records_end, names_end))
    pack_dir, pack_listing, pack_shape = _DIR.pack, _LISTING.pack, _SHAPE.pack
    return [
        _MAGIC,
        _HEADER.pack(
            _VERSION,
            len(packed),
            records_end,
            len(cache.dirs),
            len(cache.listings),
            len(cache.shapes),
            len(path_block),
            len(ignored_block),
            len(subdirs_block),
            cache.generation,
            cache.tracked,
        ),
        path_block,
        ignored_block,
        subdirs_block,
        b"".join(index),
        *_coalesced([names for _, names, _ in packed.values()]),
        *_coalesced([records for _, _, records in packed.values()]),
        b"".join([pack_dir(count, tree) for count, tree in cache.dirs.values()]),
        b"".join([pack_listing(digest, len(names)) for digest, names in cache.listings.values()]),
        b"".join([pack_shape(*shape[:5], len(shape[5])) for shape in cache.shapes.values()]),
    ]

"""The pack indexes whose checksum was checked whole, so the next process need not.

Loading a pack index checks its SHA-1 (``packindex.load_index``): a truncated
index, or one with offsets swapped, is rebuilt from its pack instead of
sending a read to the wrong bytes. That hash reads the whole index: 6 MB and
some 5 ms at the 200,000 objects of 100,000 snapshots, in every new process
(each CLI call, each hook call), a cost that grows with the history. A pack's
index never changes once written (a rebuilt one is a new file, renamed into
place), so the check is made once per file: its name and identity (inode,
size, mtime, ctime) are kept here, and an index found with the same identity
is trusted without the hash. Its other checks (its size against its count, its
trailer against its pack's) still run at each load, and every object read is
checked against its id (``objectstore``), so damage after the check is an
error on the object, never wrong bytes; ``verify`` checks every index whole.

A cache: written by any process (atomically, a temporary file renamed; two
writers at once may lose an entry, checked again next time), never synced, and
rebuilt by checking again when lost or damaged.
"""

from __future__ import annotations

import os

from snapshotter.engine.fsutil import new_temp_file, read_side_file, unlink_quietly

FILE_NAME = "checked-pack-indexes"
CAP = 64 << 10
Identity = tuple[int, int, int, int]


def identity(st: os.stat_result) -> Identity:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class CheckedIndexes:
    """The checked pack indexes of one store (``path``: the file keeping them)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._known: dict[str, Identity] | None = None

    def _read(self) -> dict[str, Identity]:
        if self._known is None:
            known: dict[str, Identity] = {}
            try:
                data = read_side_file(self.path, CAP, follow=False)
            except OSError:
                data = b""
            for line in data.decode("ascii", "replace").splitlines():
                parts = line.split(" ")
                if len(parts) == 5 and all(part.isdigit() and len(part) < 24 for part in parts[1:]):
                    ino, size, mtime, ctime = (int(part) for part in parts[1:])
                    known[parts[0]] = (ino, size, mtime, ctime)
            self._known = known
        return self._known

    def holds(self, name: str, found: Identity) -> bool:
        """Whether the index ``name`` (a file name) was checked whole as the file it is now."""
        return self._read().get(name) == found

    def add(self, name: str, found: Identity, present: set[str]) -> None:
        """Remember that ``name`` was checked whole; entries of indexes not in
        ``present`` (the folder's names) are forgotten."""
        known = {key: value for key, value in self._read().items() if key in present}
        known[name] = found
        self._known = known
        text = "".join(f"{key} {' '.join(map(str, value))}\n" for key, value in sorted(known.items()))
        folder = os.path.dirname(self.path)
        if not os.path.isdir(folder):
            return  # not a store's objects (a scratch folder): nothing kept
        tmp = ""
        try:
            fd, tmp = new_temp_file(folder, ".checked-", ".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("ascii"))
            os.replace(tmp, self.path)
            tmp = ""
        except OSError:
            pass  # a read-only store: checked again by the next process
        finally:
            if tmp:
                unlink_quietly(tmp)

"""An append's journal, and putting back an append a crash cut short (see ``chainappend``).

An append to a chain pack writes a journal first (``chain-append-<old name>``:
the pack's old size and the old bytes from its first free place on), then
renames the pack out of git's sight (``chain-tmp-*``) and its index aside
(``chain-old-*``). The next process to open the store after a crash
(``settle``: the store lock taken without waiting; or the next writer,
``recover``) completes an append whose new pack and index are both in place,
and otherwise puts the pack back as it was, byte for byte.

Apart from ``chainappend`` so that opening a store, and a reader missing an
object, look for a journal without loading the append's modules (reading the
history loads no writer: issue #51).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from snapshotter.engine.fsutil import read_side_file, sync_folder, unlink_quietly
from snapshotter.errors import StoreError, StoreLocked

JOURNAL = "chain-append-"
"""The journal an append writes first (``chain-append-<old pack name>``), gone when it is done."""
TMP = "chain-tmp-"
"""The pack's name while an append writes to it (out of git's sight)."""
OLD_INDEX = "chain-old-"
"""The pack's old index, set aside while an append writes."""


def appending(pack_dir: str) -> bool:
    """Whether an append is under way (or was cut short and not yet recovered)."""
    try:
        return any(name.startswith(JOURNAL) for name in os.listdir(pack_dir))
    except OSError:
        return False


def settle(pack_dir: str, lock_path: str, on_recover: Callable[[], object]) -> None:
    """Recover an append a killed writer left, if one did and no writer holds
    the store lock now (one that does is mid-append and finishes it): the lock
    is taken without waiting, with ``on_recover`` (the store's whole recovery)
    if its holder died. Readers call it too, so that a store opened after a
    crash reads every object at once, and git does."""
    if not appending(pack_dir):
        return
    from snapshotter.engine.gitstore.locking import StoreLock

    try:
        with StoreLock(lock_path, 0.0, on_recover=on_recover):
            recover(pack_dir)
    except (StoreLocked, OSError):
        pass


def recover(pack_dir: str) -> int:
    """Complete or roll back every append a killed writer left (hold the store
    lock). Returns how many journals were settled."""
    try:
        names = [name for name in os.listdir(pack_dir) if name.startswith(JOURNAL)]
    except OSError:
        return 0
    import json  # only where a journal is found

    settled = 0
    for name in names:
        path = os.path.join(pack_dir, name)
        try:
            record = json.loads(read_side_file(path, cap=1 << 20))
            if not isinstance(record, dict):
                raise ValueError("not a record")
        except (OSError, ValueError):
            unlink_quietly(path)  # torn before it was synced: nothing had been touched yet
            settled += 1
            continue
        new_base = os.path.join(pack_dir, str(record.get("new", "")))
        if os.path.exists(new_base + ".pack") and os.path.exists(new_base + ".idx"):
            unlink_quietly(os.path.join(pack_dir, OLD_INDEX + str(record.get("old", ""))))
            unlink_quietly(path)
        else:
            roll_back(pack_dir, record)
        settled += 1
    return settled


def roll_back(pack_dir: str, record: dict[str, object]) -> None:
    """Put a pack an append was cut short in back as it was, byte for byte."""
    old = str(record["old"])
    new = str(record["new"])
    size = int(str(record["size"]))
    end = int(str(record["end"]))
    tail = bytes.fromhex(str(record["tail"]))
    if end + len(tail) != size:
        raise StoreError(f"the journal of an append to {old} is damaged; the pack is left as it is")
    base = os.path.join(pack_dir, old)
    tmp_pack = os.path.join(pack_dir, TMP + old)
    kept_index = os.path.join(pack_dir, OLD_INDEX + old)
    unlink_quietly(os.path.join(pack_dir, new + ".idx"))
    unlink_quietly(os.path.join(pack_dir, new + ".idx.tmp"))
    for found in (tmp_pack, os.path.join(pack_dir, new + ".pack"), base + ".pack"):
        if os.path.exists(found):
            with open(found, "r+b") as handle:
                handle.seek(end)
                handle.write(tail)
                handle.truncate(size)
                handle.flush()
                os.fsync(handle.fileno())
            if found != base + ".pack":
                os.rename(found, base + ".pack")
            break
    if os.path.exists(kept_index):
        os.replace(kept_index, base + ".idx")
    sync_folder(pack_dir)
    unlink_quietly(os.path.join(pack_dir, JOURNAL + old))

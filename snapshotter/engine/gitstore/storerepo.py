"""The store's settings, and the caps on reading its side files (see ``guardedrepo``,
which opens the store with dulwich, each side file read through these).

Apart from ``guardedrepo`` so that what reads refs and what makes a store
loads none of dulwich's ``Repo``: reading the history never opens one (issue #51).
"""

from __future__ import annotations

import logging
import re

from snapshotter.engine.fsutil import SIDE_FILE_CAP, read_side_file

log = logging.getLogger("snapshotter")

STORE_CONFIG = b"""[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = true
\tlogallrefupdates = false
\tlooseCompression = 1
[gc]
\tauto = 0
"""
"""The settings a store is made with, and the only ones dulwich is given."""
REF_FILE_CAP = 4096
"""A loose ref holds 41 bytes (a symbolic one a name and ``ref: ``); its first
line is all that is read, and a file longer than this is no ref we wrote."""
PACKED_REFS_CAP = 64 << 20
"""``packed-refs`` (made by ``git pack-refs`` or ``git gc`` run on the store)
holds about 70 bytes a ref: 64 MiB is some 900,000 refs, far more than any
retention keeps."""
_VERSION_LINE = re.compile(rb"^[ \t]*repositoryformatversion[ \t]*=([^;#\n]*)", re.IGNORECASE | re.MULTILINE)
_warned: set[tuple[str, str]] = set()


def check_config(path: str) -> None:
    """Warn (once per process) when git could not read the store's ``config``."""
    try:
        data = read_side_file(path, SIDE_FILE_CAP, follow=False)
    except FileNotFoundError:
        problem = "missing"
    except OSError as exc:
        problem = exc.strerror or str(exc)
    else:
        found = _VERSION_LINE.search(data)
        version = found.group(1).strip() if found is not None else b"0"
        problem = "" if version in (b"0", b"1") else f"repositoryformatversion {version[:20]!r} is unknown to git"
    if problem and (path, problem) not in _warned:
        _warned.add((path, problem))
        log.warning(
            "snapshotter: the store's config %s: %s; snapshotter uses its own settings, "
            "git reads the store again once the file is fixed",
            path,
            problem,
        )

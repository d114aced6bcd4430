"""Where the ``snapshotter`` command starts (and ``python -m snapshotter``): an
agent hook call (``snapshotter hook AGENT EVENT``) goes straight to
``hookclient``, before the grammar or anything else is imported, since an
agent pays for it on every tool call; everything else to ``cli``."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not ``typing``'s: every hook call pays for this module's imports
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["hook"]:
        from snapshotter.frontends import hookclient

        return hookclient.main(words[1:])
    from snapshotter.frontends import cli

    return cli.main(words)

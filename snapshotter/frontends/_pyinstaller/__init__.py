"""PyInstaller hooks, found through the ``pyinstaller40`` entry point: a frozen app needs no flags.

PyInstaller follows Python ``import`` statements, including snapshotter's
optional ones (ISA-L in ``deflate``, dulwich's compiled helpers, watchdog), but
not imports made from inside a compiled extension. Without these hooks a frozen
app with the ``fast`` extra would bundle ISA-L, fail to load it and silently
compress with zlib. ``tests/test_frozen.py`` freezes an app and checks it.
"""

from __future__ import annotations

import os


def get_hook_dirs() -> list[str]:
    """The folder holding the ``hook-*.py`` files (the ``pyinstaller40`` ``hook-dirs`` entry point)."""
    return [os.path.dirname(__file__)]

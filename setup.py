"""The one thing pyproject.toml cannot say: an optional C extension.

``snapshotter.engine.worktree._statmatch`` is the walk's stat loop in C (see
its source). It is built where a C compiler and Python's headers are found,
and skipped otherwise (``optional=True``: the install goes on, and the same
loop runs in Python). ``SNAPSHOTTER_PURE=1`` skips it on purpose, for a wheel
that must run everywhere. Windows has no ``fstatat``: it is not built there.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup

extensions = []
if sys.platform != "win32" and os.environ.get("SNAPSHOTTER_PURE", "") in ("", "0"):
    extensions.append(
        Extension(
            "snapshotter.engine.worktree._statmatch",
            sources=["snapshotter/engine/worktree/_statmatch.c"],
            optional=True,
        )
    )

setup(ext_modules=extensions)

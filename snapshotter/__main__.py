"""``python -m snapshotter``: the same as the ``snapshotter`` command."""

import sys

from .cli import main

sys.exit(main())

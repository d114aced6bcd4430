"""``python -m snapshotter``: the same as the ``snapshotter`` command."""

import sys

from snapshotter.frontends.entry import main

sys.exit(main())

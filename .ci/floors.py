"""Print pip constraints pinning every runtime dependency to its declared floor.

CI installs the project with these constraints on the oldest supported Python,
so a floor that does not really work fails the build instead of a user's install.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the oldest supported Python: tomli is a runtime dependency there anyway
    import tomli as tomllib

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
for requirement in project["dependencies"]:
    spec, _, marker = requirement.partition(";")
    found = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(,\s*(<|!=)\s*[0-9][0-9A-Za-z.]*\s*)*", spec)
    if found is None:
        sys.exit(f"floors.py: {requirement!r} has no plain >= floor to pin")
    print(f"{found[1]}=={found[2]}" + (f" ;{marker}" if marker else ""))

"""The folder on disk: the walk, ignore rules, the user's git index (read only), the stat cache, confined writes, watch.
Knows gitstore and the leaves; must not know the store's layout (refs, snapshots, catalog)."""

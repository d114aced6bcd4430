"""The bare git store: object format, packs, reads checked against ids, the lock, snapshot commits, remotes' transport.
Knows only the leaves; must not know workspaces."""

"""Keeping a store small and sound: retention policy, gc (compaction), consolidation, verify.
Sees only gitstore and the leaves; must not know workspaces or sessions."""

"""Comparing a stored tree with another or with a scan; file diffs, git-exact line counts, hunks, three-way merge.
Knows worktree, gitstore and the leaves; must not know how trees are walked or stored beyond reading them."""

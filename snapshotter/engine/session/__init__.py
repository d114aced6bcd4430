"""One opened workspace and its store: scan, record a snapshot, compare, restore (plan, check, apply), revert.
Knows compare, worktree, gitstore and the leaves; must not know policy: no undo stacks, no error mode."""

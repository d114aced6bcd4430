"""The engine: a workspace and its store opened (session), compared (compare), walked (worktree), stored (gitstore),
kept small (upkeep); fsutil and collector are its leaves. Knows no policy (undo stacks, error mode), no front end."""

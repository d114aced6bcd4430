"""The front ends, one folder each: cli/ (the command line), hooks/ (the agent hooks), page/ (``snapshotter ui``),
mcp/ (the MCP server), watch/ (the watch server); entry.py routes a call. They use the public API only."""

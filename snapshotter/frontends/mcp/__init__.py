"""The MCP server (``snapshotter mcp``): each tool a call of the public API, answered as the command line's JSON.
Must not know the engine, nor parse command lines: it reuses the command line's commands and printing."""

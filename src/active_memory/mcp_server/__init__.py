"""An MCP server over stdio: recall, explain and list lessons for MCP clients (Cursor and others).

``active-memory mcp`` serves the repository of its working directory (or ``--repository``) from
the lesson store, read-only. The tools reuse the hooks' own recall (the same signals, matcher,
budget and ``<active_memory>`` frame) and deliver each ``id@revision`` once per conversation;
see ``docs/mcp.md``. The package is named ``mcp_server`` so it is never mistaken for the SDK's
``mcp``, which only :mod:`active_memory.mcp_server.server` imports.
"""

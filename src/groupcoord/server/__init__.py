"""The asyncio side: TCP server, per-connection loop, dispatch table, timers, lifecycle."""

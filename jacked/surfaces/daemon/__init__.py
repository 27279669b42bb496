"""The jacked daemon and its clients: one process per JACKED_HOME owns the catalog writer, the
model and the index (`server`); every CLI command, hook, `jacked mcp` and the web view asks it
over a Unix socket (`client`), or, with JACKED_DAEMON=off, answers in its own process."""

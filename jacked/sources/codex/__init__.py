"""Codex CLI (OpenAI) as a transcript source.

Codex writes one JSONL "rollout" per session to `$CODEX_HOME/sessions/YYYY/MM/DD/
rollout-<timestamp>-<uuid>.jsonl` (`CODEX_HOME` defaults to `~/.codex`) and moves archived
ones to `$CODEX_HOME/archived_sessions/`. jacked reads them whole when their size or mtime
changed (`jacked.ingest.agents`):

- `discover.py`: the rollout files, one per session id (live or archived);
- `records.py`: one line of either generation (enveloped `{timestamp, type, payload}`, or the
  bare items of early 2025) as `(kind, payload, timestamp)`; tool outputs, shell commands and
  apply_patch patches as jacked keeps them;
- `turns.py`: the turn rules for Codex (prompts counted once, batches, tokens, forks);
- `source.py`: `CodexSource`, the registry's entry;
- `mcp_config.py`: `[mcp_servers.jacked]` in `$CODEX_HOME/config.toml`.

The format as read here follows `codex-rs/protocol` (`RolloutLine`, `RolloutItem`,
`ResponseItem`, `EventMsg`) and `codex-rs/core/src/rollout/policy.rs` (which events a rollout
keeps: `exec_command_end`, `patch_apply_end` and `mcp_tool_call_end` only in "extended" mode).
"""

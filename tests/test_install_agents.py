"""`jacked install --agent codex|gemini|opencode|qwen|copilot|cursor`: `jacked mcp` registered in the other agents' own
MCP configuration through the CLI, and `uninstall --agent` takes exactly that out again."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from jacked.surfaces.install import OTHER_AGENTS
from tests.test_defaults import jacked_cmd
from kit import suite_mode


def _run(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKED_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), CODEX_HOME=str(home / ".codex"),
               GEMINI_CLI_HOME=str(home), COPILOT_HOME=str(home / ".copilot"), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               NO_COLOR="1", **suite_mode())
    return subprocess.run(jacked_cmd() + args, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("agent", OTHER_AGENTS)
def test_install_and_uninstall_for_another_agent(tmp_path: Path, agent: str) -> None:
    added = _run(["install", "--agent", agent], tmp_path)
    assert added.returncode == 0, added.stderr
    path = Path(added.stdout.strip().rsplit(": ", 1)[1])
    assert path.is_file() and path.is_relative_to(tmp_path)
    text = path.read_text()
    assert "jacked" in text and "mcp" in text
    assert not (tmp_path / ".claude" / "settings.json").exists()  # Claude Code's own files untouched
    again = _run(["install", "--agent", agent], tmp_path)  # idempotent
    assert again.returncode == 0 and path.read_text() == text
    removed = _run(["uninstall", "--agent", agent], tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert not path.exists() or "jacked" not in path.read_text()


def test_an_unknown_agent_is_one_line(tmp_path: Path) -> None:
    p = _run(["install", "--agent", "no-such-agent"], tmp_path)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "codex, gemini, opencode" in p.stderr


def test_cursor_entry_is_a_stdio_server_in_its_mcp_json(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {"other": {"command": "npx", "args": ["srv"]}}}')
    added = _run(["install", "--agent", "cursor"], tmp_path)
    assert added.returncode == 0, added.stderr
    import json
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["other"] == {"command": "npx", "args": ["srv"]}  # the user's server kept
    assert servers["jacked"]["args"][-1] == "mcp" and isinstance(servers["jacked"]["command"], str)
    assert _run(["uninstall", "--agent", "cursor"], tmp_path).returncode == 0
    assert json.loads(config.read_text()) == {"mcpServers": {"other": {"command": "npx", "args": ["srv"]}}}

"""Install / uninstall: skill, hooks, MCP; idempotent, backed up, byte-identical round trips."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_cli_history import jacked_cmd

from jacked.surfaces.install import InstallError, install, mcp_config_path, skill_source, uninstall

# Deliberately not in json.dumps(indent=2) style: a re-serialised file would differ.
SETTINGS = b"""{
    "model": "opus",
    "hooks": {
        "Stop": [ { "matcher": "", "hooks": [ { "type": "command", "command": "say done" } ] } ],
        "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "echo pre" } ] } ]
    },
    "permissions": {"allow": ["Bash(ls:*)"]},  "env": {"FOO": "1"}
}
"""
EXE = "/opt/jacked/bin/jacked"


def _ours(data: dict, event: str) -> list[dict]:
    return [h for g in data.get("hooks", {}).get(event, []) for h in g["hooks"] if "jacked" in h["command"]]


def test_round_trip_is_byte_identical(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_bytes(SETTINGS)
    (tmp_path / ".claude.json").write_bytes(b'{"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}')
    install(tmp_path, recall=True, mcp=True, exe=EXE)
    data = json.loads((tmp_path / "settings.json").read_text())
    assert _ours(data, "Stop") == [{"type": "command", "command": f"{EXE} index --hook", "async": True, "timeout": 30}]
    assert _ours(data, "SessionEnd")[0]["command"] == f"{EXE} index --hook"
    assert _ours(data, "SessionStart")[0]["command"] == f"{EXE} recall --hook"
    assert _ours(data, "UserPromptSubmit")[0]["command"] == f"{EXE} recall --hook"  # one setting: both recalls
    # the user's own hooks and settings are untouched
    assert data["hooks"]["Stop"][0] == {"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}
    assert data["hooks"]["PreToolUse"][0]["matcher"] == "Bash" and data["env"] == {"FOO": "1"}
    mcp = json.loads((tmp_path / ".claude.json").read_text())
    assert mcp["mcpServers"]["jacked"] == {"type": "stdio", "command": EXE, "args": ["mcp"], "env": {}}
    assert mcp["mcpServers"]["other"] == {"command": "x"} and mcp["numStartups"] == 3
    assert (tmp_path / "skills" / "jacked" / "SKILL.md").read_text() == skill_source()
    uninstall(tmp_path)
    assert (tmp_path / "settings.json").read_bytes() == SETTINGS
    assert (tmp_path / ".claude.json").read_bytes() == b'{"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}'
    assert not (tmp_path / "skills").exists() and not (tmp_path / "jacked-install.json").exists()


def test_install_is_idempotent_and_backs_up_before_writing(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_bytes(SETTINGS)
    first = install(tmp_path, exe=EXE)
    after = (tmp_path / "settings.json").read_bytes()
    assert len(first.backups) == 1 and Path(first.backups[0]).read_bytes() == SETTINGS
    assert oct(Path(first.backups[0]).stat().st_mode & 0o777) == "0o600"
    second = install(tmp_path, exe=EXE)
    assert second.changed == [] and second.backups == [] and (tmp_path / "settings.json").read_bytes() == after
    # a new executable path replaces jacked's entries instead of adding more
    install(tmp_path, exe="/new/place/jacked")
    data = json.loads((tmp_path / "settings.json").read_text())
    assert [h["command"] for h in _ours(data, "Stop")] == ["/new/place/jacked index --hook"]
    uninstall(tmp_path)
    assert (tmp_path / "settings.json").read_bytes() == SETTINGS


def test_no_settings_file_before_means_none_after(tmp_path: Path) -> None:
    install(tmp_path, skill=False, exe=EXE)
    assert (tmp_path / "settings.json").exists()
    uninstall(tmp_path)
    assert not (tmp_path / "settings.json").exists()


def test_user_edits_after_install_survive_uninstall(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_bytes(SETTINGS)
    install(tmp_path, exe=EXE)
    data = json.loads((tmp_path / "settings.json").read_text())
    data["theme"] = "dark"
    data["hooks"]["Stop"][-1]["hooks"].append({"type": "command", "command": "notify"})  # into jacked's group
    (tmp_path / "settings.json").write_text(json.dumps(data, indent=4))
    uninstall(tmp_path)
    left = json.loads((tmp_path / "settings.json").read_text())
    assert left["theme"] == "dark" and "SessionEnd" not in left["hooks"]
    assert not _ours(left, "Stop")
    assert {"type": "command", "command": "notify"} in [h for g in left["hooks"]["Stop"] for h in g["hooks"]]
    assert left["hooks"]["PreToolUse"] == json.loads(SETTINGS)["hooks"]["PreToolUse"]


def test_flags_and_a_broken_settings_file(tmp_path: Path) -> None:
    r = install(tmp_path, hooks=False, exe=EXE)
    assert not (tmp_path / "settings.json").exists() and (tmp_path / "skills/jacked/SKILL.md").exists()
    uninstall(tmp_path)
    (tmp_path / "settings.json").write_text('{"hooks": ')
    with pytest.raises(InstallError, match="line 1"):
        install(tmp_path, skill=False, exe=EXE)
    assert (tmp_path / "settings.json").read_text() == '{"hooks": '
    assert r.changed


def test_mcp_config_path_follows_claude_code() -> None:
    home_claude = Path.home() / ".claude"
    assert mcp_config_path(Path("/x/claude"), default_dir=home_claude) == Path("/x/claude/.claude.json")
    if not (home_claude / ".claude.json").exists():
        assert mcp_config_path(home_claude, default_dir=home_claude) == Path.home() / ".claude.json"


def run(args: list[str], claude: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(claude / "jh"), JACKED_USER_NAME="t",
               NO_COLOR="1")
    return subprocess.run(jacked_cmd() + args, capture_output=True, text=True, env=env, input=stdin, timeout=120)


def test_cli_install_uninstall_and_recall_hook(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_bytes(SETTINGS)
    p = run(["install", "--recall", "--json"], tmp_path)
    assert p.returncode == 0, p.stderr
    cmd = _ours(json.loads((tmp_path / "settings.json").read_text()), "Stop")[0]["command"]
    assert Path(cmd.split()[0]).is_absolute() and cmd.endswith("index --hook")
    # the SessionStart hook: JSON out (or nothing), exit 0 even on garbage input
    hook = run(["recall", "--hook"], tmp_path, stdin=json.dumps({"cwd": str(tmp_path), "session_id": "s"}))
    assert hook.returncode == 0 and hook.stdout == ""
    assert run(["recall", "--hook"], tmp_path, stdin="not json").returncode == 0
    assert run(["uninstall"], tmp_path).returncode == 0
    assert (tmp_path / "settings.json").read_bytes() == SETTINGS


def test_recall_hook_prints_session_start_context(tmp_path: Path) -> None:
    from kit import REAL

    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(REAL), JACKED_HOME=str(tmp_path), NO_COLOR="1")
    p = subprocess.run(jacked_cmd() + ["recall", "--hook"], input=json.dumps({"cwd": "/src/deep-manifest"}),
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and "a7da6a22" in out["additionalContext"]


def test_uninstall_says_it_restored_and_drops_spent_backups(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_bytes(SETTINGS)
    for args in (["install"], ["install", "--recall"]):  # two installs: two backups of settings.json
        assert run(args, tmp_path).returncode == 0
    assert len(list((tmp_path / "jacked-backups").iterdir())) == 2
    p = run(["uninstall"], tmp_path)
    assert p.returncode == 0, p.stderr
    settings = tmp_path / "settings.json"
    assert f"restored: {settings} (put back as it was before `jacked install`)" in p.stdout.splitlines()
    assert f"removed: {settings}" not in p.stdout
    assert "deleted 2 backups jacked made, no longer needed" in p.stdout
    assert settings.read_bytes() == SETTINGS and not (tmp_path / "jacked-backups").exists()


def test_uninstall_keeps_backups_of_a_file_the_user_changed(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_bytes(SETTINGS)
    install(tmp_path, exe=EXE)
    data = json.loads((tmp_path / "settings.json").read_text())
    data["theme"] = "dark"
    (tmp_path / "settings.json").write_text(json.dumps(data, indent=4))
    report = uninstall(tmp_path)
    assert report.actions == {str(tmp_path / "settings.json"): "edited",
                              str(tmp_path / "skills" / "jacked" / "SKILL.md"): "removed"}
    assert report.backups_removed == []
    kept = sorted(p.read_bytes() for p in (tmp_path / "jacked-backups").iterdir())
    assert SETTINGS in kept and len(kept) == 2  # the file before install, and before uninstall

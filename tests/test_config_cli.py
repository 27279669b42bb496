"""`jacked config` through the CLI: show (masked, with sources), set, reset, broken files, precedence, migrate."""
from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from test_cli_history import jacked_cmd
from kit import suite_mode


def cfg(args: list[str], claude: Path, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("JACKED_", "QDRANT_CLAUDE_"))}
    e.update(CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(claude / "home"), NO_COLOR="1", **env)
    e.update(suite_mode())
    return subprocess.run(jacked_cmd() + args, capture_output=True, text=True, env=e, timeout=120)


def shown(claude: Path, *extra: str, **env: str) -> dict:
    p = cfg(["config", "--show", "--json", *extra], claude, **env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["settings"]


def test_set_show_masks_secrets_and_names_sources(tmp_path: Path) -> None:
    key = "sk-abcdefghijklmnopqrstuvwxyz0123"
    assert cfg(["config", "set", "qdrant_api_key", key], tmp_path).returncode == 0
    assert cfg(["config", "set", "teammate_weight", "0.5"], tmp_path).returncode == 0
    path = tmp_path / "jacked.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["teammate_weight"] == 0.5
    p = cfg(["config", "--show"], tmp_path)
    assert p.returncode == 0 and key not in p.stdout + p.stderr and "****0123" in p.stdout
    s = shown(tmp_path)
    assert s["teammate_weight"] == {"value": 0.5, "source": "file", "origin": str(path)}
    assert s["qdrant_api_key"]["value"] == "****0123"
    assert s["other_repo_weight"]["source"] == "default"
    # `jacked config` alone shows too
    assert "teammate_weight" in cfg(["config"], tmp_path).stdout


def test_invalid_value_is_one_line_naming_the_key(tmp_path: Path) -> None:
    p = cfg(["config", "set", "teammate_weight", "7"], tmp_path)
    assert p.returncode == 1 and "teammate_weight" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = cfg(["config", "set", "no_such_key", "1"], tmp_path)
    assert p.returncode == 1 and "no_such_key" in p.stderr and "Traceback" not in p.stderr


def test_broken_file_is_one_line_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "jacked.json").write_text('{\n  "teammate_weight": 0.5,\n  oops\n}\n')
    os.chmod(tmp_path / "jacked.json", 0o600)  # the mode warning is tested in test_config.py
    for args in (["config", "--show"], ["status", "--json"], ["config", "set", "teammate_weight", "0.4"]):
        p = cfg(args, tmp_path)
        assert p.returncode == 1, args
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
        assert "line 3" in p.stderr, p.stderr
    # --reset still works on a broken file, keeping it as a backup
    p = cfg(["config", "--reset"], tmp_path)
    assert p.returncode == 0 and not (tmp_path / "jacked.json").exists()
    assert "oops" in (tmp_path / "jacked.json.bak").read_text()
    assert shown(tmp_path)["teammate_weight"]["source"] == "default"


def test_precedence_cli_file_env_default(tmp_path: Path) -> None:
    assert shown(tmp_path, JACKED_OTHER_REPO_WEIGHT="0.3")["other_repo_weight"]["value"] == 0.3
    cfg(["config", "set", "other_repo_weight", "0.6"], tmp_path)
    s = shown(tmp_path, JACKED_OTHER_REPO_WEIGHT="0.3")
    assert s["other_repo_weight"] == {"value": 0.6, "source": "file", "origin": str(tmp_path / "jacked.json")}
    # the CLI flag (--claude-dir) beats the environment's CLAUDE_CONFIG_DIR
    other = tmp_path / "other"
    other.mkdir()
    p = cfg(["--claude-dir", str(other), "config", "--show", "--json"], tmp_path)
    assert json.loads(p.stdout)["settings"]["claude_dir"]["source"] == "cli"


def test_env_variables_migrate_into_the_file_by_config_migrate(tmp_path: Path) -> None:
    env = {"QDRANT_CLAUDE_SESSIONS_ENDPOINT": "https://q.example.com", "JACKED_TEAMMATE_WEIGHT": "0.25"}
    p = cfg(["config", "--show", "--json"], tmp_path, **env)
    assert p.returncode == 0 and not (tmp_path / "jacked.json").exists(), "showing writes nothing"
    p = cfg(["config", "migrate", "--json"], tmp_path, **env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["migrated"] == {"qdrant_url": "QDRANT_CLAUDE_SESSIONS_ENDPOINT",
                                                "teammate_weight": "JACKED_TEAMMATE_WEIGHT"}
    data = json.loads((tmp_path / "jacked.json").read_text())
    assert data == {"qdrant_url": "https://q.example.com", "teammate_weight": 0.25}
    assert stat.S_IMODE((tmp_path / "jacked.json").stat().st_mode) == 0o600
    # afterwards the file wins over the variable
    s = shown(tmp_path, JACKED_TEAMMATE_WEIGHT="0.9")
    assert s["teammate_weight"]["value"] == 0.25 and s["teammate_weight"]["source"] == "file"
    assert "nothing to migrate" in cfg(["config", "migrate"], tmp_path, **env).stdout


def test_unset_and_reset(tmp_path: Path) -> None:
    cfg(["config", "set", "default_max_tokens", "12000"], tmp_path)
    assert shown(tmp_path)["default_max_tokens"]["value"] == 12000
    assert cfg(["config", "unset", "default_max_tokens"], tmp_path).returncode == 0
    assert shown(tmp_path)["default_max_tokens"]["source"] == "default"
    p = cfg(["config", "--reset"], tmp_path)
    assert p.returncode == 0
    assert "nothing to reset" in cfg(["config", "--reset"], tmp_path).stdout

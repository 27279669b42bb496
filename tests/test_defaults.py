"""The package's config files (jacked/defaults/, see config/README.md): the schema of
jacked.json is the one `file_schema()` generates, defaults.json holds the `Settings`
defaults, and hooks.json is what `jacked install` writes. Never touches the real ~/.claude."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema  # a dependency of mcp, itself a dependency of jacked
import pytest

from jacked.config import (
    FILE_KEYS,
    LEGACY_KEYS,
    META_KEYS,
    ConfigError,
    Settings,
    file_schema,
    load_settings,
)
from jacked.surfaces.install import hook_snippets, install
from kit import suite_mode

DEFAULTS = Path(__file__).resolve().parent.parent / "jacked" / "defaults"
REGENERATE = ('python -c "import json; from jacked.config import file_schema; '
              'print(json.dumps(file_schema(), indent=2, ensure_ascii=False))" > jacked/defaults/jacked-json.schema.json')
# Keys whose default depends on the user or the machine: not in defaults.json.
MACHINE_KEYS = {"user_name", "jacked_home"}


def jacked_cmd() -> list[str]:
    script = Path(sys.executable).parent / "jacked"
    return [str(script)] if script.exists() else [sys.executable, "-m", "jacked.surfaces.cli.main"]


def schema_text() -> str:
    return json.dumps(file_schema(), indent=2, ensure_ascii=False) + "\n"


def load(name: str) -> Any:
    return json.loads((DEFAULTS / name).read_text(encoding="utf-8"))


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load("jacked-json.schema.json"))


def errors(instance: Any) -> list[str]:
    return [e.message for e in validator().iter_errors(instance)]




def write_config(claude: Path, data: dict[str, Any]) -> Path:
    p = claude / "jacked.json"
    p.write_text(json.dumps(data))
    os.chmod(p, 0o600)
    return p


# --------------------------------------------------------------------------- the schema
def test_committed_schema_is_the_generated_one() -> None:
    committed = (DEFAULTS / "jacked-json.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(), f"jacked-json.schema.json is out of date; regenerate it: {REGENERATE}"


def test_schema_is_valid_and_lists_exactly_the_keys_the_loader_reads() -> None:
    schema = load("jacked-json.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(schema["properties"])[:len(FILE_KEYS)] == list(FILE_KEYS)  # the order `jacked config` shows
    assert set(schema["properties"]) == {*FILE_KEYS, *LEGACY_KEYS, *META_KEYS}
    for old in LEGACY_KEYS:
        assert schema["properties"][old]["deprecated"] is True
    # the loader only warns about unknown keys (test_config.py), so the schema allows them
    assert schema["additionalProperties"] is True
    assert errors({"some_future_key": 1}) == []


@pytest.mark.parametrize(("key", "value"), [
    ("backend", "cloud"), ("backend", None), ("qdrant_url", "ftp://host"), ("qdrant_url", "HTTP://host"),
    ("qdrant_url", 6333), ("qdrant_api_key", "   "), ("embedding_model", ""), ("user_name", " "),
    ("teammate_weight", 1.5), ("other_repo_weight", -0.1), ("time_decay_halflife_weeks", 0),
    ("token_safety_margin", 2), ("default_max_tokens", 99), ("default_max_tokens", 1000.5),
    ("lock_timeout_s", -1), ("jacked_home", 3), ("max_context_tokens", 10), ("exclude", 3), ("exclude", [1]),
])
def test_schema_rejects_what_jacked_rejects(claude: Path, key: str, value: Any) -> None:
    assert errors({key: value}), f"the schema accepts {key}={value!r}"
    write_config(claude, {key: value})
    with pytest.raises(ConfigError):
        Settings()


@pytest.mark.parametrize(("key", "value"), [
    ("backend", "server"), ("qdrant_url", "https://q.example:6333"), ("qdrant_url", None),
    ("qdrant_api_key", "k" * 20), ("embedding_model", "some/model"), ("user_name", "Ada"),
    ("teammate_weight", 0), ("other_repo_weight", 1), ("time_decay_halflife_weeks", 0.5),
    ("token_safety_margin", 0.25), ("default_max_tokens", 100), ("default_max_tokens", 8000.0),
    ("lock_timeout_s", 0), ("jacked_home", "~/jh"), ("jacked_home", None),
    ("qdrant_endpoint", "http://old:6333"), ("max_context_tokens", 4000), ("exclude", ["~/work/client-*"]),
])
def test_schema_accepts_what_jacked_accepts(claude: Path, key: str, value: Any) -> None:
    assert errors({key: value}) == []
    write_config(claude, {key: value})
    Settings()


# --------------------------------------------------------------------------- defaults.json
def test_defaults_json_holds_the_settings_defaults() -> None:
    data = load("defaults.json")
    assert errors(data) == []
    values = {k: v for k, v in data.items() if k not in META_KEYS}
    assert list(values) == [k for k in FILE_KEYS if k not in MACHINE_KEYS]
    for key, value in values.items():
        default = Settings.model_fields[key].default
        assert value == default and type(value) is type(default), key
    for key in MACHINE_KEYS:
        assert key in data["$comment"]
    # the schema shows the same defaults
    schema = load("jacked-json.schema.json")
    assert {k: schema["properties"][k]["default"] for k in values} == values


def test_defaults_json_as_the_config_file_loads_silently(claude: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_config(claude, load("defaults.json"))  # $schema and $comment included
    s = load_settings()
    assert capsys.readouterr().err == ""
    for key in FILE_KEYS:
        if key not in MACHINE_KEYS:
            assert getattr(s, key) == Settings.model_fields[key].default, key
            assert s.sources[key] == "file"
    assert s.home == claude / "jacked"


def test_a_file_written_by_jacked_config_set_matches_the_schema(tmp_path: Path) -> None:
    values = {
        "backend": "server", "qdrant_url": "https://q.example:6333/", "qdrant_api_key": "sk-0123456789abcdef",
        "embedding_model": "jacked/all-MiniLM-L6-v2-int8", "user_name": "Ada Lovelace", "teammate_weight": "0.5",
        "other_repo_weight": "1", "time_decay_halflife_weeks": "12", "token_safety_margin": "0.2",
        "default_max_tokens": "4000", "lock_timeout_s": "0", "jacked_home": str(tmp_path / "home"),
        "disabled_sources": "codex,gemini", "archive": "false", "hook_sync": "true",
        "anthropic_api_key": "sk-ant-api03-0123456789abcdef", "exclude": "~/work/client-*,secret-repo",
        "daemon_idle_minutes": "15", "max_segment_mb": "64",
        "prices": '{"my-model": {"input": 2, "output": 8}}',
    }
    assert set(values) == set(FILE_KEYS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JACKED_", "QDRANT_CLAUDE_"))}
    env.update(CLAUDE_CONFIG_DIR=str(tmp_path), HOME=str(tmp_path), NO_COLOR="1", **suite_mode())
    for key, value in values.items():
        p = subprocess.run(jacked_cmd() + ["config", "set", key, value], capture_output=True, text=True, env=env,
                           timeout=120)
        assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "jacked.json").read_text())
    assert set(data) == set(FILE_KEYS)
    assert data["qdrant_url"] == "https://q.example:6333" and data["teammate_weight"] == 0.5
    assert data["disabled_sources"] == ["codex", "gemini"]
    assert data["exclude"] == ["~/work/client-*", "secret-repo"]  # kept as typed: ~ is expanded when matched
    assert data["prices"] == {"my-model": {"input": 2, "output": 8}}
    assert errors(data) == []


# --------------------------------------------------------------------------- hooks.json
def test_hooks_json_is_package_data() -> None:
    text = resources.files("jacked").joinpath("defaults/hooks.json").read_text(encoding="utf-8")
    assert json.loads(text) == hook_snippets() == load("hooks.json")


def test_install_writes_exactly_the_hooks_json_snippets(tmp_path: Path) -> None:
    exe = "/opt/jacked/bin/jacked"
    snippets = json.loads(json.dumps(hook_snippets()).replace("{jacked}", exe))
    install(tmp_path, skill=False, recall=True, mcp=True, exe=exe)
    settings = json.loads((tmp_path / "settings.json").read_text())
    assert settings == {"hooks": {**snippets["index"]["hooks"], **snippets["recall"]["hooks"]}}
    assert json.loads((tmp_path / ".claude.json").read_text()) == snippets["mcp"]
    # a command of several words: the first is `command`, the others go before the snippet's args
    install(tmp_path, skill=False, hooks=False, mcp=True, exe="/usr/bin/python3 -m jacked.surfaces.cli.main")
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["jacked"]
    assert server["command"] == "/usr/bin/python3"
    assert server["args"] == ["-m", "jacked.surfaces.cli.main", *hook_snippets()["mcp"]["mcpServers"]["jacked"]["args"]]

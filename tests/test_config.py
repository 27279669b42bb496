"""Settings: the four layers, loading that writes nothing, the explicit migration, masking, file modes, errors, and the
`jacked config` library functions. Never touches the real ~/.claude."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from jacked import config
from jacked.config import (
    ConfigError,
    Settings,
    load_settings,
    migrate_config,
    reset_config,
    set_config_value,
    show_config,
)

API_KEY = "qdr-" + "9f86d081884c7d659a2f"




def write(claude: Path, data: object, mode: int = 0o600) -> Path:
    p = claude / "jacked.json"
    p.write_text(json.dumps(data) if not isinstance(data, str) else data)
    os.chmod(p, mode)
    return p


def mode_of(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


# --------------------------------------------------------------------------- defaults and the stub's API
def test_defaults(claude: Path) -> None:
    s = load_settings()
    assert s.claude_dir == claude
    assert s.home == claude / "jacked"
    assert s.projects_dir == claude / "projects"
    assert s.plans_dir == claude / "plans"
    assert s.catalog_path == claude / "jacked" / "catalog.db"
    assert s.config_path == claude / "jacked.json"
    assert (s.backend, s.qdrant_url, s.qdrant_api_key) == ("edge", None, None)
    assert s.embedding_model == config.DEFAULT_EMBEDDING_MODEL
    assert (s.teammate_weight, s.other_repo_weight, s.time_decay_halflife_weeks) == (0.8, 0.7, 35)
    assert (s.token_safety_margin, s.default_max_tokens, s.lock_timeout_s) == (0.1, 8000, 60)
    assert s.user_name and s.machine
    assert set(s.sources.values()) <= {"default", "env"}
    assert not (claude / "jacked.json").exists(), "reading must not create the file"


def test_default_model_is_the_offline_one() -> None:
    from jacked.index.embed import DEFAULT_MODEL

    assert config.DEFAULT_EMBEDDING_MODEL == DEFAULT_MODEL


def test_stub_api_still_works(claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other-claude"
    s = load_settings(claude_dir=other)
    assert s.claude_dir == other and s.home == other / "jacked"
    s = load_settings(str(other), home=tmp_path / "h", user_name="alice", machine="box")
    assert (s.home, s.user_name, s.machine) == (tmp_path / "h", "alice", "box")
    s = Settings(claude_dir=other, home=tmp_path / "h2")
    assert s.home == tmp_path / "h2" and s.catalog_path == tmp_path / "h2" / "catalog.db"
    monkeypatch.setenv("JACKED_HOME", str(tmp_path / "jh"))
    monkeypatch.setenv("JACKED_USER_NAME", "bob")
    s = load_settings()
    assert s.home == tmp_path / "jh" and s.user_name == "bob"
    assert not (claude / "jacked.json").exists(), "JACKED_HOME / JACKED_USER_NAME are not migrated"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "~/cc")
    assert load_settings().claude_dir == Path(os.environ["HOME"]) / "cc"
    assert load_settings(home=None).home == tmp_path / "jh", "None means the flag was not given"


def test_stray_env_names_are_not_read(claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pydantic-settings' stock source would read MACHINE / BACKEND into fields.
    monkeypatch.setenv("BACKEND", "server")
    monkeypatch.setenv("MACHINE", "not-this")
    monkeypatch.setenv("QDRANT_URL", "https://stray.example.com")  # the field name, unprefixed
    # JACKED_<FIELD> of the fields that are not file keys, or whose variables are named otherwise:
    # they would move the file or the home without the daemon client's `locate` knowing.
    monkeypatch.setenv("JACKED_CLAUDE_DIR", str(claude.parent / "elsewhere"))
    monkeypatch.setenv("JACKED_JACKED_HOME", str(claude.parent / "elsewhere-home"))
    monkeypatch.setenv("JACKED_MACHINE", "not-this")
    s = load_settings()
    assert s.backend == "edge" and s.machine != "not-this" and s.qdrant_url is None
    assert s.claude_dir == claude and s.home == claude / "jacked"
    from jacked.surfaces.daemon.protocol import locate

    assert locate().home == s.home


# --------------------------------------------------------------------------- precedence
def test_precedence_all_four_layers(claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().teammate_weight == 0.8
    assert Settings().sources["teammate_weight"] == "default"

    monkeypatch.setenv("JACKED_TEAMMATE_WEIGHT", "0.6")
    s = Settings()
    assert s.teammate_weight == 0.6 and s.sources["teammate_weight"] == "env"

    write(claude, {"teammate_weight": 0.5})
    s = Settings()
    assert s.teammate_weight == 0.5 and s.sources["teammate_weight"] == "file"

    s = Settings(teammate_weight=0.4)
    assert s.teammate_weight == 0.4 and s.sources["teammate_weight"] == "cli"
    s = load_settings(teammate_weight=0.3)
    assert s.teammate_weight == 0.3 and s.sources["teammate_weight"] == "cli"


def test_file_beats_env_for_every_layered_key(claude: Path, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("JACKED_BACKEND", "server")
    monkeypatch.setenv("JACKED_HOME", str(tmp_path / "env-home"))
    write(claude, {"backend": "edge", "jacked_home": str(tmp_path / "file-home")})
    s = Settings()
    assert s.backend == "edge" and s.home == tmp_path / "file-home"
    assert s.sources["jacked_home"] == "file"
    assert load_settings(home=tmp_path / "cli-home").home == tmp_path / "cli-home"


def test_jacked_variable_beats_legacy_qdrant_variable(claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_ENDPOINT", "https://legacy.example.com")
    monkeypatch.setenv("JACKED_QDRANT_URL", "https://new.example.com")
    assert Settings().qdrant_url == "https://new.example.com"


# --------------------------------------------------------------------------- loading writes nothing; migration is a step
def tree_bytes(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every path under `root` with its mode and bytes (b"" for a folder)."""
    return {str(p.relative_to(root)): (p.stat().st_mode, b"" if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def test_loading_leaves_the_folder_byte_identical(claude: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # What the loader used to migrate: environment values the file lacks, and the seed's old key names.
    write(claude, {"qdrant_endpoint": "https://old.example.com", "extra": 1})
    (claude / "projects").mkdir()
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_API_KEY", API_KEY)
    monkeypatch.setenv("JACKED_DEFAULT_MAX_TOKENS", "12000")
    before = tree_bytes(claude)
    s = load_settings()
    assert (s.qdrant_url, s.qdrant_api_key, s.default_max_tokens) == ("https://old.example.com", API_KEY, 12000)
    assert s.sources["qdrant_api_key"] == "env" and s.sources["qdrant_url"] == "file"
    assert tree_bytes(claude) == before
    assert "saved" not in capsys.readouterr().err  # the unknown key's warning only


def test_env_is_migrated_into_the_file_by_the_explicit_step(claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_ENDPOINT", "https://xyz.cloud.qdrant.io:6333/")
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_API_KEY", API_KEY)
    monkeypatch.setenv("JACKED_DEFAULT_MAX_TOKENS", "12000")
    monkeypatch.setenv("JACKED_USER_NAME", "jack")  # a per-run choice: never migrated
    assert migrate_config() == {"qdrant_url": "QDRANT_CLAUDE_SESSIONS_ENDPOINT",
                                "qdrant_api_key": "QDRANT_CLAUDE_SESSIONS_API_KEY",
                                "default_max_tokens": "JACKED_DEFAULT_MAX_TOKENS"}
    path = claude / "jacked.json"
    data = json.loads(path.read_text())
    assert data == {"qdrant_url": "https://xyz.cloud.qdrant.io:6333", "qdrant_api_key": API_KEY,
                    "default_max_tokens": 12000}
    assert mode_of(path) == 0o600
    s = load_settings()
    assert s.qdrant_url == "https://xyz.cloud.qdrant.io:6333" and s.default_max_tokens == 12000
    assert s.sources["qdrant_url"] == "file" and s.user_name == "jack"
    # Afterwards the file is the source of truth; the environment no longer wins, and a second
    # migration has nothing to do.
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_ENDPOINT", "https://changed.example.com")
    assert load_settings().qdrant_url == "https://xyz.cloud.qdrant.io:6333"
    assert migrate_config() == {}


def test_migration_keeps_keys_already_in_the_file_and_renames_old_ones(claude: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    write(claude, {"qdrant_url": "https://file.example.com", "extra": 1, "max_context_tokens": 15000})
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_ENDPOINT", "https://env.example.com")
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_API_KEY", API_KEY)
    assert migrate_config(claude) == {"default_max_tokens": "old key max_context_tokens",
                                      "qdrant_api_key": "QDRANT_CLAUDE_SESSIONS_API_KEY"}
    data = json.loads((claude / "jacked.json").read_text())
    assert data == {"qdrant_url": "https://file.example.com", "extra": 1, "default_max_tokens": 15000,
                    "qdrant_api_key": API_KEY}
    assert load_settings().qdrant_url == "https://file.example.com"


def test_no_file_without_a_claude_dir(tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "no-such-claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(missing))
    monkeypatch.setenv("QDRANT_CLAUDE_SESSIONS_ENDPOINT", "https://env.example.com")
    s = load_settings()
    assert s.qdrant_url == "https://env.example.com" and s.sources["qdrant_url"] == "env"
    assert s.sources["qdrant_url"] == "env" and s._origins["qdrant_url"] == "QDRANT_CLAUDE_SESSIONS_ENDPOINT"
    assert not missing.exists()


def test_migrating_into_an_unwritable_claude_dir_is_one_line(tmp_path: Path, claude: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0:
        # root writes through mode bits; /proc/self is a directory nobody can create files in.
        ro = Path("/proc/self")
        if not ro.is_dir():
            pytest.skip("no unwritable directory available")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(ro))
    monkeypatch.setenv("JACKED_BACKEND", "server")
    s = load_settings()
    assert s.backend == "server" and s.sources["backend"] == "env"
    with pytest.raises(ConfigError) as e:
        migrate_config()
    assert "\n" not in str(e.value) and f"cannot write {ro / 'jacked.json'}" in str(e.value)
    assert not (ro / "jacked.json").exists()


def test_invalid_env_value_names_the_variable(claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JACKED_TEAMMATE_WEIGHT", "2")
    with pytest.raises(ConfigError) as e:
        load_settings()
    msg = str(e.value)
    assert "teammate_weight" in msg and "JACKED_TEAMMATE_WEIGHT" in msg and "0 to 1" in msg
    with pytest.raises(ConfigError, match="JACKED_TEAMMATE_WEIGHT"):
        Settings()
    with pytest.raises(ConfigError, match="JACKED_TEAMMATE_WEIGHT"):
        migrate_config()
    assert not (claude / "jacked.json").exists(), "an invalid value is never migrated"


# --------------------------------------------------------------------------- secrets, modes
def test_api_key_is_masked(claude: Path) -> None:
    write(claude, {"qdrant_api_key": API_KEY, "qdrant_url": "https://q.example.com"})
    s = load_settings()
    shown = show_config(s)
    assert shown["qdrant_api_key"] == {"value": "****" + API_KEY[-4:], "source": "file",
                                       "origin": str(claude / "jacked.json")}
    assert API_KEY not in json.dumps(shown)
    assert API_KEY not in repr(s) and API_KEY not in str(s)
    assert s.qdrant_api_key == API_KEY  # in clear for the store, which sends it to the server


def test_show_config_lists_every_key_with_its_source(claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(claude, {"backend": "server"})
    monkeypatch.setenv("JACKED_EMBEDDING_MODEL", "BAAI/bge-small-en-v1.5")
    shown = show_config(Settings(default_max_tokens=20000))
    assert set(config.FILE_KEYS) <= set(shown)
    assert shown["backend"]["source"] == "file"
    assert shown["embedding_model"] == {"value": "BAAI/bge-small-en-v1.5", "source": "env",
                                        "origin": "JACKED_EMBEDDING_MODEL"}
    assert shown["default_max_tokens"]["source"] == "cli"
    assert shown["teammate_weight"] == {"value": 0.8, "source": "default", "origin": "default"}
    assert shown["claude_dir"] == {"value": str(claude), "source": "env", "origin": "CLAUDE_CONFIG_DIR"}
    assert shown["qdrant_api_key"]["value"] is None
    json.dumps(shown)  # JSON-ready for `jacked config --show --json`


def test_broad_mode_warns(claude: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(claude, {"backend": "edge"}, mode=0o644)
    load_settings()
    err = capsys.readouterr().err
    assert "0644" in err and f"chmod 600 {p}" in err
    assert len(err.strip().splitlines()) == 1


def test_private_mode_does_not_warn(claude: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(claude, {"backend": "edge"}, mode=0o600)
    load_settings()
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("content", "line", "col"),
    [('{\n  "backend": "edge",\n  "qdrant_url": \n}\n', 4, 1),
     ('{"backend": "edge",}', 1, 20),
     ("{'backend': 'edge'}", 1, 2)],
)
def test_broken_file_is_a_one_line_error_with_position(claude: Path, content: str, line: int, col: int) -> None:
    p = write(claude, content)
    with pytest.raises(ConfigError) as e:
        load_settings()
    msg = str(e.value)
    assert "\n" not in msg
    assert str(p) in msg and f"line {line}, column {col}" in msg


def test_file_must_hold_an_object(claude: Path) -> None:
    write(claude, [1, 2])
    with pytest.raises(ConfigError, match="JSON object"):
        load_settings()


def test_empty_file_is_an_empty_config(claude: Path) -> None:
    write(claude, "")
    assert load_settings().backend == "edge"


@pytest.mark.parametrize(
    ("data", "key", "allowed"),
    [({"backend": "cloud"}, "backend", "edge, server"),
     ({"teammate_weight": 1.5}, "teammate_weight", "0 to 1"),
     ({"other_repo_weight": "high"}, "other_repo_weight", "0 to 1"),
     ({"time_decay_halflife_weeks": 0}, "time_decay_halflife_weeks", "greater than 0"),
     ({"token_safety_margin": -0.1}, "token_safety_margin", "0 to 1"),
     ({"default_max_tokens": 10.5}, "default_max_tokens", "whole number"),
     ({"lock_timeout_s": -1}, "lock_timeout_s", "0 or more"),
     ({"qdrant_url": "ftp://x"}, "qdrant_url", "http"),
     ({"embedding_model": "  "}, "embedding_model", "non-empty"),
     ({"qdrant_api_key": ""}, "qdrant_api_key", "non-empty")],
)
def test_invalid_values_name_the_key_and_what_is_allowed(claude: Path, data: dict[str, object], key: str,
                                                          allowed: str) -> None:
    p = write(claude, data)
    with pytest.raises(ConfigError) as e:
        load_settings()
    msg = str(e.value)
    assert "\n" not in msg
    assert f"invalid {key}" in msg and allowed in msg and str(p) in msg


def test_invalid_cli_value(claude: Path) -> None:
    with pytest.raises(ConfigError, match="invalid backend 'cloud' on the command line"):
        load_settings(backend="cloud")
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        load_settings(colour="red")


def test_unknown_keys_warn_but_load(claude: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(claude, {"backend": "server", "default_retrieve_mode": "smart"})
    assert load_settings().backend == "server"
    err = capsys.readouterr().err
    assert "unknown key 'default_retrieve_mode'" in err


def test_legacy_keys_are_read(claude: Path) -> None:
    write(claude, {"qdrant_endpoint": "https://old.example.com", "max_context_tokens": 15000})
    s = load_settings()
    assert s.qdrant_url == "https://old.example.com" and s.default_max_tokens == 15000


# --------------------------------------------------------------------------- set / reset
def test_set_and_reset_round_trip(claude: Path) -> None:
    assert set_config_value(claude, "backend", "server") == "server"
    assert set_config_value(claude, "teammate_weight", "0.25") == 0.25
    assert set_config_value(claude, "default_max_tokens", "15000") == 15000
    assert set_config_value(claude, "qdrant_api_key", API_KEY) == "****" + API_KEY[-4:]
    assert set_config_value(claude, "jacked_home", "~/jd") == str(Path(os.environ["HOME"]) / "jd")
    path = claude / "jacked.json"
    assert mode_of(path) == 0o600
    assert json.loads(path.read_text()) == {
        "backend": "server", "teammate_weight": 0.25, "default_max_tokens": 15000, "qdrant_api_key": API_KEY,
        "jacked_home": str(Path(os.environ["HOME"]) / "jd")}
    assert [p.name for p in claude.iterdir()] == ["jacked.json"], "no temp file is left behind"
    s = load_settings()
    assert (s.backend, s.teammate_weight, s.default_max_tokens) == ("server", 0.25, 15000)
    assert s.sources["backend"] == "file" and s.home == Path(os.environ["HOME"]) / "jd"

    set_config_value(claude, "backend", None)  # unset
    assert "backend" not in json.loads(path.read_text())

    bak = reset_config(claude)
    assert bak == claude / "jacked.json.bak"
    assert not path.exists()
    assert json.loads(bak.read_text())["qdrant_api_key"] == API_KEY
    assert mode_of(bak) == 0o600
    s = load_settings()
    assert (s.backend, s.teammate_weight) == ("edge", 0.8)
    assert reset_config(claude) is None


def test_set_rejects_bad_input_and_keeps_the_file(claude: Path) -> None:
    write(claude, {"backend": "server", "custom": "kept"})
    with pytest.raises(ConfigError, match="invalid backend 'cloud': must be one of: edge, server"):
        set_config_value(claude, "backend", "cloud")
    with pytest.raises(ConfigError, match="unknown setting 'max_tokens'"):
        set_config_value(claude, "max_tokens", 5)
    with pytest.raises(ConfigError) as e:
        set_config_value(claude, "qdrant_api_key", "   ")
    assert "(hidden)" in str(e.value)
    set_config_value(claude, "lock_timeout_s", 5)
    assert json.loads((claude / "jacked.json").read_text()) == {"backend": "server", "custom": "kept",
                                                                "lock_timeout_s": 5.0}


def test_set_tightens_a_broad_mode(claude: Path) -> None:
    p = write(claude, {"backend": "edge"}, mode=0o644)
    set_config_value(claude, "backend", "server")
    assert mode_of(p) == 0o600


def test_set_creates_the_claude_dir(tmp_path: Path, claude: Path) -> None:
    d = tmp_path / "new-claude"
    set_config_value(d, "user_name", "  alice ")
    assert json.loads((d / "jacked.json").read_text()) == {"user_name": "alice"}
    assert mode_of(d / "jacked.json") == 0o600


def test_set_on_a_broken_file_says_where(claude: Path) -> None:
    write(claude, "{\n oops")
    with pytest.raises(ConfigError, match="line 2, column 2"):
        set_config_value(claude, "backend", "edge")

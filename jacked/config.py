"""Settings: where the Claude directory and jacked's data live, which backend and
model to use, and the search / retrieve knobs.

Precedence: CLI flags > `<claude dir>/jacked.json` > environment > defaults.

* The Claude directory is `--claude-dir`, else `CLAUDE_CONFIG_DIR` (Claude Code's
  own variable), else `~/.claude`. It cannot come from the file, which lives in it.
* Environment: `JACKED_<KEY>` for every file key (`JACKED_BACKEND`, ...; pydantic-settings'
  `env_prefix`); the fields whose variables are named otherwise declare them as validation
  aliases: `JACKED_HOME`, and the variables of earlier jacked releases or other programs
  (`QDRANT_CLAUDE_SESSIONS_ENDPOINT`, `QDRANT_CLAUDE_SESSIONS_API_KEY`, `ANTHROPIC_API_KEY`).
* Loading never writes a file. `migrate_config` (`jacked config migrate`) is the explicit
  step that copies environment values into the file and renames the seed's old keys.
* The file is written with mode 0600 (it may hold `qdrant_api_key`), atomically
  through a temp file and a rename; reading a file with broader permissions warns.

Library functions for `jacked config`: `show_config`, `set_config_value`,
`reset_config`, `migrate_config`, `config_path`. `file_schema()` is the JSON Schema of the
file, generated from `Settings` (committed as `jacked/defaults/jacked-json.schema.json`, next
to `defaults.json`; tests/test_defaults.py keeps both current).
"""
from __future__ import annotations

import getpass
import json
import math
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BeforeValidator,
    Field,
    PrivateAttr,
    SecretStr,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    JsonConfigSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from jacked.errors import JackedError
from jacked.util.fs import atomic_write, make_private

__all__ = [
    "ConfigError", "Settings", "load_settings", "show_config", "set_config_value", "reset_config",
    "migrate_config", "config_path", "default_claude_dir", "default_user_name", "CONFIG_FILE_NAME",
    "FILE_KEYS", "ENV_VARS", "SECRET_KEYS", "DEFAULT_EMBEDDING_MODEL", "META_KEYS", "file_schema",
]

CONFIG_FILE_NAME = "jacked.json"
DEFAULT_EMBEDDING_MODEL = "jacked/all-MiniLM-L6-v2-int8"  # = jacked.index.embed.DEFAULT_MODEL (offline)
ENV_PREFIX = "JACKED_"

# Keys allowed in jacked.json, in the order `show` lists them.
FILE_KEYS: tuple[str, ...] = (
    "backend", "qdrant_url", "qdrant_api_key", "embedding_model", "user_name", "teammate_weight",
    "other_repo_weight", "time_decay_halflife_weeks", "token_safety_margin", "default_max_tokens",
    "lock_timeout_s", "jacked_home", "disabled_sources", "archive", "hook_sync", "anthropic_api_key", "exclude",
    "daemon_idle_minutes", "max_segment_mb",
    "prices",
)
SECRET_KEYS = frozenset({"qdrant_api_key", "anthropic_api_key"})
# Names used by the seed's jacked.json; read as the new key when it is absent.
LEGACY_KEYS = {"qdrant_endpoint": "qdrant_url", "max_context_tokens": "default_max_tokens"}
# Keys for editors, not settings: `"$schema"` points at jacked-json.schema.json. Read silently.
META_KEYS = frozenset({"$schema", "$comment"})
# Left in the environment by `migrate_config`: a per-run switch (tests and evaluations point several
# runs with different homes or users at one Claude directory; once in the file they would silently
# win), or another program's secret (ANTHROPIC_API_KEY) that does not belong in jacked's file.
NOT_MIGRATED = frozenset({"jacked_home", "user_name", "archive", "hook_sync", "anthropic_api_key", "disabled_sources",
                          "daemon_idle_minutes", "exclude", "prices"})


class ConfigError(JackedError):
    """A configuration problem the user must fix; the message (one line) names the
    key or the file."""


def _warn(msg: str, level: str = "warning") -> None:
    """One line on stderr, once per process: stdout may be `--json` output."""
    if msg in _warned:
        return
    _warned.add(msg)
    print(f"jacked: {level}: {msg}", file=sys.stderr)


_warned: set[str] = set()


def default_claude_dir() -> Path:
    """`CLAUDE_CONFIG_DIR` (Claude Code's own variable), else `~/.claude`."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def default_user_name() -> str:
    """`JACKED_USER_NAME`, else `git config user.name`, else the OS user."""
    env = os.environ.get("JACKED_USER_NAME")
    if env:
        return env
    try:
        out = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=2)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return getpass.getuser()
    except Exception:  # getuser raises various errors when no user can be found
        return "unknown"


def config_path(claude_dir: Path | str | None = None) -> Path:
    """`<claude dir>/jacked.json`."""
    base = Path(claude_dir).expanduser() if claude_dir is not None else default_claude_dir()
    return base / CONFIG_FILE_NAME


# --------------------------------------------------------------------------- file I/O
def _file_values(path: Path) -> dict[str, Any]:
    """The file's known keys (legacy names mapped), {} when it does not exist.

    Raises ConfigError (one line, with line and column) for broken JSON; warns
    about unknown keys and about permissions broader than 0600.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start}); fix or remove the file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror or e})") from None
    _check_mode(path)
    if not raw.strip():
        return {}  # an empty file is an empty config
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ConfigError(_json_error(path, e)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object ({{\"key\": value, ...}}), not {type(data).__name__}")
    out: dict[str, Any] = {}
    for k, v in data.items():
        if k in META_KEYS:
            continue
        if k in LEGACY_KEYS:
            if LEGACY_KEYS[k] not in data:
                out[LEGACY_KEYS[k]] = v
            continue
        if k not in FILE_KEYS:
            _warn(f"{path}: unknown key {k!r} ignored (known keys: {', '.join(FILE_KEYS)})")
            continue
        out[k] = v
    return out


def _check_mode(path: Path) -> None:
    if os.name != "posix":
        return  # Windows has no mode bits; the user profile's ACL protects the file
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return
    if mode & 0o077:
        _warn(f"{path} is accessible to other users (mode {mode:04o}) and may hold an API key; "
              f"run: chmod 600 {path}")


def _read_raw(path: Path) -> dict[str, Any]:
    """The file as it is (all keys), for rewriting without losing anything."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ConfigError(_json_error(path, e)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object")
    return data


def _json_error(path: Path, e: json.JSONDecodeError) -> str:
    return (f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}; "
            f"fix it or run `jacked config --reset`")


def _write_file(path: Path, data: Mapping[str, Any]) -> None:
    """Write `data` as JSON with mode 0600, atomically (temp file + rename), so a
    crash never leaves a half-written config and the secret is never world-readable,
    not even for a moment."""
    text = json.dumps(dict(data), indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text.encode("utf-8"), mode=0o600, fsync=True)


# --------------------------------------------------------------------------- value types
# Checks live in the types (not in model methods) so `set_config_value` validates
# one key with exactly the rules the model uses.
def _check_url(v: str) -> str:
    v = v.strip()
    if not v.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return v.rstrip("/")


def _check_non_empty(v: str) -> str:
    v = v.strip()
    if not v:
        raise ValueError("must not be empty")
    return v




def _check_finite(v: float) -> float:
    if not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


def _expand_path(v: Path) -> Path:
    return Path(v).expanduser()


# WithJsonSchema only shapes `file_schema()`: the patterns say what the checks above accept.
UrlStr = Annotated[str, AfterValidator(_check_url), WithJsonSchema({"type": "string", "pattern": r"^\s*https?://"})]
NonEmptyStr = Annotated[str, AfterValidator(_check_non_empty), WithJsonSchema({"type": "string", "pattern": r"\S"})]
Finite = Annotated[float, AfterValidator(_check_finite)]
ExpandedPath = Annotated[Path, AfterValidator(_expand_path)]


def _split_names(v: Any) -> Any:
    # From the CLI or the environment a list comes as one string: "codex,gemini".
    return [n.strip() for n in v.split(",") if n.strip()] if isinstance(v, str) else v


NameList = Annotated[list[str], NoDecode, BeforeValidator(_split_names)]


def _json_object(value: Any) -> Any:
    """An object given as JSON text (from the environment) read as the object."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value  # the type check below names the key
    return value


PriceOverrides = Annotated[dict[str, dict[str, Any]], NoDecode, BeforeValidator(_json_object)]


# --------------------------------------------------------------------------- the sources
class _ConfigFile(JsonConfigSettingsSource):
    """`<claude dir>/jacked.json` as pydantic-settings' JSON source, read by `_file_values`: one-line
    errors with line and column, the seed's old key names, `$schema`, a warning (not a failure) for
    unknown keys and for a mode broader than 0600."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        return _file_values(Path(file_path))


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source for the file keys only: each from the variables its field
    declares (validation aliases), else `JACKED_<KEY>`. So neither JACKED_CLAUDE_DIR nor
    JACKED_JACKED_HOME exists: they would move the file or the home without the daemon client's
    `locate` (which finds the home without pydantic) knowing."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        value, key, is_complex = super().get_field_value(field, field_name)
        if field_name not in FILE_KEYS or (field.validation_alias is not None and key == field_name):
            return None, field_name, False
        return value, key, is_complex


# --------------------------------------------------------------------------- the model
class Settings(BaseSettings):
    """Resolved settings for one jacked run.

    `Settings(**cli)` reads the config file of `cli.get("claude_dir")` (or the
    default Claude directory) and the environment itself; keyword arguments are CLI
    flags and win over both (`home=` is the CLI's name of `jacked_home`). `home` is the
    resolved JACKED_HOME.
    """

    model_config = SettingsConfigDict(extra="forbid", arbitrary_types_allowed=True, env_prefix=ENV_PREFIX,
                                      env_ignore_empty=True, populate_by_name=True)

    # Each description says what the key accepts: errors and the file's JSON Schema quote it.
    claude_dir: ExpandedPath = Field(default_factory=default_claude_dir, description="a directory path")
    jacked_home: ExpandedPath | None = Field(None, validation_alias=AliasChoices("JACKED_HOME"),
                                             description="a directory path")
    user_name: NonEmptyStr = Field(default_factory=default_user_name, description="a non-empty name")
    machine: NonEmptyStr = Field(default_factory=socket.gethostname, description="a non-empty host name")
    backend: Literal["edge", "server"] = Field("edge", description="one of: edge, server")
    qdrant_url: UrlStr | None = Field(
        None, validation_alias=AliasChoices("JACKED_QDRANT_URL", "QDRANT_CLAUDE_SESSIONS_ENDPOINT"),
        description="an http:// or https:// URL")
    # A plain str (the store passes it to qdrant-client as is), kept out of repr()
    # so logging a Settings never prints it; `show_config` masks it.
    qdrant_api_key: NonEmptyStr | None = Field(
        None, repr=False, validation_alias=AliasChoices("JACKED_QDRANT_API_KEY", "QDRANT_CLAUDE_SESSIONS_API_KEY"),
        description="a non-empty string")
    embedding_model: NonEmptyStr = Field(DEFAULT_EMBEDDING_MODEL, description="a non-empty model name")
    teammate_weight: Finite = Field(0.8, ge=0, le=1, description="a number from 0 to 1")
    other_repo_weight: Finite = Field(0.7, ge=0, le=1, description="a number from 0 to 1")
    time_decay_halflife_weeks: Finite = Field(35.0, gt=0, description="a number of weeks greater than 0")
    token_safety_margin: Finite = Field(0.1, ge=0, le=1,
                                        description="a number from 0 to 1 (0.1 = count 10% more tokens)")
    default_max_tokens: int = Field(8000, ge=100, description="a whole number of tokens, at least 100")
    lock_timeout_s: Finite = Field(60.0, ge=0, description="a number of seconds, 0 or more")
    # Transcript sources (jacked.sources.registry) not to read; each other one is read when its folder exists.
    # pydantic copies a mutable default per instance.
    disabled_sources: NameList = Field([], description=(
        'agents not to read besides Claude Code, e.g. ["codex", "gemini"] (or "codex,gemini"): '
        "codex, gemini, opencode, aider, qwen, cline, roo, kilo, copilot, cursor, continue, openhands"))
    archive: bool = Field(True, description=(
        "true or false: keep a compressed copy of every transcript read (JACKED_HOME/archive)"))
    hook_sync: bool = Field(False, description=(  # no effect: read so that older jacked.json files still load
        "true or false; no effect any more (the daemon queues a hook's work; without one the hook indexes "
        "before returning), read so older jacked.json files load"))
    anthropic_api_key: NonEmptyStr | None = Field(
        None, repr=False, validation_alias=AliasChoices("JACKED_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
        description="an Anthropic API key, for `jacked summarize --llm api`")
    # Sessions never kept (jacked.ingest.privacy): forgotten as they are scanned.
    exclude: NameList = Field([], description=(
        'globs of projects and paths whose sessions jacked never keeps, e.g. ["~/work/client-*", '
        '"secret-repo"] (or "~/a,~/b"): a glob with / matches the session\'s cwd or transcript path '
        "(~ expanded; a folder covers all below it), one without / the repo name"))
    # The daemon (jacked.surfaces.daemon) exits after this long without a request.
    daemon_idle_minutes: Finite = Field(30.0, gt=0, description="a number of minutes greater than 0")
    # Largest index segment the optimiser builds: bounds its memory; smaller segments cost
    # searches more graph walks (docs/performance.md).
    max_segment_mb: int = Field(128, ge=8, le=4096, description="a whole number of MB from 8 to 4096")
    # Model prices over the shipped table (jacked.query.prices): checked when costs are asked for.
    prices: PriceOverrides = Field({}, description=(
        'model prices in USD per million tokens, added to or replacing the shipped table, e.g. '
        '{"my-model": {"input": 3, "output": 15, "cache_creation": 3.75, "cache_read": 0.3}} '
        "(kinds: input, output, cache_creation, cache_creation_1h, cache_read; long_context: the same "
        "above 200,000 input tokens)"))

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    def __init__(self, **values: Any) -> None:
        cli = {k: v for k, v in values.items() if v is not None}
        if "home" in cli:
            cli["jacked_home"] = cli.pop("home")
        path = config_path(cli.get("claude_dir"))
        # Read here too (the JSON source reads it for the values): a broken file fails before the
        # sources are built, and the keys it holds say where each value came from.
        file_values = _file_values(path)
        try:
            super().__init__(**cli)
        except ValidationError as e:
            raise ConfigError(_explain(e, cli, file_values, path)) from None
        for key in ("claude_dir", "machine", *FILE_KEYS):
            env_name = _env_name(key)
            if key in cli:
                self._sources[key], self._origins[key] = "cli", "command line"
            elif key in file_values:
                self._sources[key], self._origins[key] = "file", str(path)
            elif env_name is not None:
                self._sources[key], self._origins[key] = "env", env_name
            else:
                self._sources[key], self._origins[key] = "default", "default"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: CLI > file > environment. No dotenv and no secrets dir: a stray .env in the
        # working directory must not change where jacked writes.
        claude_dir = getattr(init_settings, "init_kwargs", {}).get("claude_dir")
        return (init_settings, _ConfigFile(settings_cls, config_path(claude_dir)), _Environment(settings_cls))

    @model_validator(mode="after")
    def _resolve_home(self) -> Settings:
        if self.jacked_home is None:
            self.jacked_home = self.claude_dir / "jacked"
        return self

    # ---- derived paths
    @property
    def home(self) -> Path:
        """JACKED_HOME: `jacked_home` (CLI, file, environment), else `<claude dir>/jacked`."""
        return self.jacked_home if self.jacked_home is not None else self.claude_dir / "jacked"

    @property
    def projects_dir(self) -> Path:
        return self.claude_dir / "projects"

    @property
    def plans_dir(self) -> Path:
        return self.claude_dir / "plans"

    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.db"

    @property
    def config_path(self) -> Path:
        return self.claude_dir / CONFIG_FILE_NAME

    @property
    def sources(self) -> dict[str, str]:
        """Where each setting came from: cli, file, env or default."""
        return dict(self._sources)

    def make_home(self) -> Path:
        """JACKED_HOME, made (owner-only) if missing; one line naming where its path came from when
        it cannot be made (a file in the way, no permission)."""
        try:
            make_private(self.home)
        except OSError as e:
            named = {"env": "JACKED_HOME", "file": f"jacked_home in {self.config_path}", "cli": "--home"}.get(
                self._sources.get("jacked_home", ""), "JACKED_HOME (default: <claude dir>/jacked)")
            why = "a file is in the way" if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror or e
            raise ConfigError(f"{named} {self.home}: cannot make this folder ({why}): "
                              "point it at a folder you can write") from None
        return self.home


def _env_names(key: str) -> tuple[str, ...]:
    """The variables of a setting, first found wins: its field's validation aliases, else JACKED_<KEY>."""
    if key == "claude_dir":
        return ("CLAUDE_CONFIG_DIR",)
    alias = Settings.model_fields[key].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    return (ENV_PREFIX + key.upper(),)


def _env_name(key: str) -> str | None:
    """The variable a setting's value comes from, when the environment gives it (empty counts as unset)."""
    if key != "claude_dir" and key not in FILE_KEYS:
        return None
    return next((name for name in _env_names(key) if os.environ.get(name)), None)


def _accepts(key: str) -> str:
    """What a setting accepts, in words: its field's description."""
    field = Settings.model_fields.get(key)
    return field.description or "valid" if field is not None else "valid"


# Environment variables per file key, first found wins (derived from the fields).
ENV_VARS: dict[str, tuple[str, ...]] = {k: _env_names(k) for k in FILE_KEYS}
_KEY_OF_ALIAS = {name: key for key, names in ENV_VARS.items() for name in names}


def load_settings(claude_dir: Path | str | None = None, **overrides: object) -> Settings:
    """Settings for this run; `claude_dir` and `overrides` come from CLI flags
    (None means the flag was not given). Reads only: nothing is written."""
    kwargs: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
    if claude_dir is not None:
        kwargs["claude_dir"] = Path(claude_dir)
    return Settings(**kwargs)


# --------------------------------------------------------------------------- errors
def _explain(e: ValidationError, cli: Mapping[str, Any], file_values: Mapping[str, Any], path: Path) -> str:
    parts = []
    for err in e.errors():
        loc = err.get("loc") or ("?",)
        key = _KEY_OF_ALIAS.get(str(loc[0]), str(loc[0]))
        if err.get("type") == "extra_forbidden":
            parts.append(f"unknown setting {key!r} (known: {', '.join(FILE_KEYS)})")
            continue
        env_name = _env_name(key)
        if key in cli:
            origin = "on the command line"
        elif key in file_values:
            origin = f"in {path}"
        elif env_name is not None:
            origin = f"from environment variable {env_name}"
        else:
            origin = "(default)"
        shown = "(hidden)" if key in SECRET_KEYS else repr(err.get("input"))
        parts.append(f"invalid {key} {shown} {origin}: must be {_accepts(key)}")
    return "; ".join(parts)


def _validate_value(key: str, value: Any, origin: str) -> Any:
    """`value` converted to the type of `key` (strings from a CLI or env are
    parsed), or ConfigError naming the key and what it accepts."""
    if key not in FILE_KEYS:
        raise ConfigError(f"unknown setting {key!r} (known: {', '.join(FILE_KEYS)})")
    try:
        v = _ADAPTERS[key].validate_python(value)
    except (ValidationError, ValueError) as e:
        shown = "(hidden)" if key in SECRET_KEYS else repr(value)
        where = f" {origin}" if origin else ""
        raise ConfigError(f"invalid {key} {shown}{where}: must be {_accepts(key)}") from e
    return v


def _adapter_for(key: str) -> TypeAdapter[Any]:
    info = Settings.model_fields[key]
    annotation: Any = info.annotation
    if not info.metadata:
        return TypeAdapter(annotation)
    typ: Any = Annotated[annotation, *info.metadata]  # the field's ge/le bounds
    return TypeAdapter(typ)


_ADAPTERS: dict[str, TypeAdapter[Any]] = {k: _adapter_for(k) for k in FILE_KEYS}


def _to_file_value(v: Any) -> Any:
    if isinstance(v, SecretStr):
        return v.get_secret_value()
    if isinstance(v, Path):
        return str(v)
    return v


# --------------------------------------------------------------------------- `jacked config`
def _mask(secret: str) -> str:
    # Enough to tell two keys apart, never enough to use one.
    return "****" + secret[-4:] if len(secret) >= 12 else "****"


def show_config(settings: Settings) -> dict[str, dict[str, Any]]:
    """Every setting with its value and where it came from, secrets masked:
    `{key: {"value": ..., "source": "cli"|"file"|"env"|"default", "origin": ...}}`
    (origin: the file path or the environment variable)."""
    out: dict[str, dict[str, Any]] = {}
    for key in ("claude_dir", *FILE_KEYS, "machine"):
        v: Any = getattr(settings, key)
        if key in SECRET_KEYS and v is not None:
            v = _mask(v.get_secret_value() if isinstance(v, SecretStr) else str(v))
        else:
            v = _to_file_value(v)
        src = settings._sources.get(key, "default")
        out[key] = {"value": v, "source": src, "origin": settings._origins.get(key, src)}
    return out


def set_config_value(claude_dir: Path | str | None, key: str, value: Any) -> Any:
    """Validate `value` for `key` (strings are converted: "0.5" -> 0.5), write it
    into the config file (0600, atomic) and return the stored value. `value=None`
    removes the key. Other keys, unknown ones included, are kept as they are."""
    key = LEGACY_KEYS.get(key, key)
    path = config_path(claude_dir)
    if key not in FILE_KEYS:
        raise ConfigError(f"unknown setting {key!r} (known: {', '.join(FILE_KEYS)})")
    current = _read_raw(path)
    for old, new in LEGACY_KEYS.items():
        if new == key:
            current.pop(old, None)
    if value is None:
        current.pop(key, None)
        stored = None
    else:
        if isinstance(value, str):
            value = value.strip()
        stored = _to_file_value(_validate_value(key, value, ""))
        current[key] = stored
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_file(path, current)
    return _mask(stored) if key in SECRET_KEYS and isinstance(stored, str) else stored


def reset_config(claude_dir: Path | str | None = None) -> Path | None:
    """Remove the config file, keeping it as `jacked.json.bak` (replacing an older
    backup); returns the backup's path, or None when there was no file."""
    path = config_path(claude_dir)
    if not path.exists():
        return None
    bak = path.with_name(path.name + ".bak")
    os.replace(path, bak)  # a rename keeps the 0600 mode
    return bak


def migrate_config(claude_dir: Path | str | None = None) -> dict[str, str]:
    """The explicit step loading never takes (`jacked config migrate`): write the environment's values
    into the config file for the keys it lacks (not the per-run ones of NOT_MIGRATED), and the seed's
    old key names as the new ones. Returns {key: where its value came from}; the file (0600, atomic)
    is only written when that is not empty."""
    path = config_path(claude_dir)
    current = _read_raw(path)
    moved: dict[str, str] = {}
    for old, new in LEGACY_KEYS.items():
        if old in current and new not in current:
            current[new] = current.pop(old)
            moved[new] = f"old key {old}"
    for key in FILE_KEYS:
        name = _env_name(key)
        if key in NOT_MIGRATED or key in current or name is None:
            continue
        value = _validate_value(key, os.environ[name].strip(), f"from environment variable {name}")
        current[key] = _to_file_value(value)
        moved[key] = name
    if moved:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write_file(path, current)
        except OSError as e:
            raise ConfigError(f"cannot write {path} ({e.strerror or e}); the environment's values still "
                              "apply on every run") from None
    return moved


# --------------------------------------------------------------------------- the file's JSON Schema
# Defaults that depend on the machine or the user, so the model has none to show.
_COMPUTED_DEFAULTS = {
    "user_name": "JACKED_USER_NAME, else `git config user.name`, else the OS user",
    "jacked_home": "<claude dir>/jacked (null means the same)",
}


def file_schema() -> dict[str, Any]:
    """The JSON Schema of `jacked.json`: the `Settings` fields of FILE_KEYS (types, bounds,
    defaults) plus the legacy names and the `$schema`/`$comment` keys the loader accepts.
    Unknown keys are allowed, as the loader only warns about them (and
    `set_config_value` keeps them)."""
    model = Settings.model_json_schema(by_alias=False)
    fields = model["properties"]
    props: dict[str, Any] = {}
    for key in FILE_KEYS:
        prop = {k: v for k, v in fields[key].items() if k not in ("title", "description")}
        note = f"; default: {_COMPUTED_DEFAULTS[key]}" if key in _COMPUTED_DEFAULTS else ""
        props[key] = {"description": f"{_accepts(key)}{note}", **prop}
    for old, new in LEGACY_KEYS.items():
        prop = {k: v for k, v in props[new].items() if k not in ("default", "description")}
        props[old] = {"description": f"old name of {new}, read when {new} is absent", "deprecated": True, **prop}
    props["$schema"] = {"description": "the schema for editors (ignored by jacked)", "type": "string"}
    props["$comment"] = {"description": "a note (ignored by jacked)", "type": "string"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Generated by jacked.config.file_schema(); tests/test_defaults.py checks it is current.",
        "title": CONFIG_FILE_NAME,
        "description": (f"jacked's settings, <claude dir>/{CONFIG_FILE_NAME} (mode 0600). Precedence: CLI flags > "
                        f"this file > environment (JACKED_<KEY>) > defaults. Unknown keys are ignored "
                        f"with a warning."),
        "type": "object",
        "properties": props,
        "additionalProperties": True,
    }

"""What the daemon and its clients share: where the daemon lives, which build it runs, and how the
service's answers travel over its socket.

Light on purpose (standard library only): every CLI command, hook and `jacked mcp` imports it.
The wire format is JSON; Python values JSON has no word for (a dataclass, a tuple, a Path, a
datetime, a dict with non-string keys) travel tagged, so a client gets back the very objects an
in-process call returns and formats them the same way.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Bumped when a request or answer changes shape; a client and a daemon that differ restart the daemon.
PROTOCOL_VERSION = 1
#: The environment switch: `off` answers in the client's own process (tests, CI, no sockets).
DAEMON_ENV = "JACKED_DAEMON"
#: The Linux limit on a socket path (`sun_path`), less its terminating NUL.
_SUN_PATH_MAX = 107


def daemon_enabled(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Whether surfaces should talk to the daemon (anything but JACKED_DAEMON=off/0/false/no)."""
    value = (os.environ if environ is None else environ).get(DAEMON_ENV, "").strip().lower()
    return value not in ("off", "0", "false", "no")


@dataclasses.dataclass(frozen=True)
class DaemonPaths:
    """The daemon's files inside one JACKED_HOME."""

    home: Path

    @property
    def dir(self) -> Path:
        return self.home / "daemon"

    @property
    def socket(self) -> Path:
        return self.dir / "jacked.sock"

    @property
    def lock(self) -> Path:
        """Held (flock) by the running daemon for its whole life: whoever holds it is the daemon."""
        return self.dir / "daemon.lock"

    @property
    def start_lock(self) -> Path:
        """Held by a client while it starts a daemon, so racing clients start one between them."""
        return self.dir / "start.lock"

    @property
    def pid(self) -> Path:
        return self.dir / "daemon.pid"

    @property
    def log(self) -> Path:
        return self.home / "logs" / "daemon.log"

    @property
    def queue(self) -> Path:
        """Write requests accepted but not done yet, one file each (replayed after a crash)."""
        return self.dir / "queue"


@contextlib.contextmanager
def socket_address(paths: DaemonPaths) -> Iterator[str]:
    """The path to bind or connect the daemon's socket by: its own, or, when that is longer than a
    socket address may be (a deep JACKED_HOME), the same file through its folder open in
    `/proc/self/fd` for as long as the block runs."""
    if len(str(paths.socket).encode()) <= _SUN_PATH_MAX:
        yield str(paths.socket)
        return
    folder = os.open(paths.dir, os.O_RDONLY)
    try:
        yield f"/proc/self/fd/{folder}/{paths.socket.name}"
    finally:
        os.close(folder)


def write_queue_entry(paths: DaemonPaths, target: str) -> Path:
    """Put a session to index on the daemon's queue, durably (written, fsynced, renamed into place,
    the folder fsynced): it is on disk before a hook returns, whatever the daemon is doing, and a
    daemon indexes what its queue holds in the order of the names."""
    import json
    import secrets
    import time

    paths.queue.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.json"
    tmp = paths.queue / f".{name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, json.dumps({"target": target}).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    final = paths.queue / name
    tmp.replace(final)
    folder = os.open(paths.queue, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return final


def daemon_alive(paths: DaemonPaths) -> bool:
    """Whether a daemon holds the home's lock (it runs, even if too busy to answer just now)."""
    import fcntl

    try:
        fd = os.open(paths.lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the lock if it was taken here
    return False


def build_id() -> str:
    """The version of the jacked code installed: its version and the newest modification time of its
    modules. A client whose build differs from the daemon's restarts it (after `pip install -U`, or an
    edit of an editable install)."""
    import jacked

    root = Path(jacked.__file__).parent
    newest = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(e.path)
                elif e.name.endswith(".py"):
                    newest = max(newest, e.stat().st_mtime_ns)
    return f"{jacked.__version__}+{PROTOCOL_VERSION}.{newest}"


#: Variables the settings and the sources read besides JACKED_*, QDRANT_*, XDG_* and *_HOME.
_SETTINGS_VARS = frozenset({"CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "HOME", "USER", "LOGNAME"})
#: Switches of the client's own, not settings.
_CLIENT_VARS = frozenset({DAEMON_ENV, "JACKED_TEST_DAEMON"})


@dataclasses.dataclass(frozen=True)
class Where:
    """Which daemon a client asks: the JACKED_HOME, and a digest of what its settings are made of."""

    home: Path
    fingerprint: str
    claude_dir: Path
    claude_dir_given: bool = False  # by `--claude-dir` (passed on to the daemon it starts)


def locate(claude_dir: str | os.PathLike[str] | None = None,
           environ: dict[str, str] | os._Environ[str] | None = None) -> Where:
    """The JACKED_HOME and settings digest for a `--claude-dir` (None: not given) and an environment,
    without loading the settings: a client asks the daemon of that home, and only a daemon started
    from the same variables, flag and `jacked.json` (the digest) answers it. The `jacked_home` of
    `<claude dir>/jacked.json`, else JACKED_HOME, else `<claude dir>/jacked` (as `jacked.config` says)."""
    env = os.environ if environ is None else environ
    base = Path(claude_dir).expanduser().absolute() if claude_dir is not None else (
        Path(env["CLAUDE_CONFIG_DIR"].strip()).expanduser() if env.get("CLAUDE_CONFIG_DIR", "").strip()
        else Path(env.get("HOME") or Path.home()) / ".claude")
    try:
        config = (base / "jacked.json").read_bytes()
    except OSError:
        config = b""
    home: Path | None = None
    if config:  # the file wins over the environment, as everywhere in jacked's settings
        import json

        try:
            value = json.loads(config).get("jacked_home")
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, str) and value.strip():
            home = Path(value.strip()).expanduser()
    if home is None and env.get("JACKED_HOME", "").strip():
        home = Path(env["JACKED_HOME"].strip()).expanduser()
    digest = hashlib.blake2b(digest_size=12)
    for key in sorted(env):
        if key in _CLIENT_VARS:
            continue
        if (key.startswith(("JACKED_", "QDRANT_", "XDG_")) or key.endswith("_HOME") or key in _SETTINGS_VARS):
            digest.update(f"{key}={env[key]}\0".encode("utf-8", "surrogatepass"))
    digest.update(f"--claude-dir={base if claude_dir is not None else ''}\0".encode("utf-8", "surrogatepass"))
    digest.update(config)
    return Where(home if home is not None else base / "jacked", digest.hexdigest(), base, claude_dir is not None)


# ---------------------------------------------------------------------------------------- codec
_DC, _TUPLE, _PATH, _DT, _DATE, _SET, _MAP = ("__dc__", "__tuple__", "__path__", "__datetime__", "__date__",
                                               "__set__", "__map__")
_TAGS = frozenset({_DC, _TUPLE, _PATH, _DT, _DATE, _SET, _MAP})


def encode(obj: Any) -> Any:
    """`obj` as plain JSON values, tagging what JSON cannot say (see `decode`)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj) and not (len(obj) == 1 and next(iter(obj)) in _TAGS):
            return {k: encode(v) for k, v in obj.items()}
        return {_MAP: [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {_TUPLE: [encode(v) for v in obj]}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        return {_DC: f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, Path):
        return {_PATH: str(obj)}
    if isinstance(obj, dt.datetime):
        return {_DT: obj.isoformat()}
    if isinstance(obj, dt.date):
        return {_DATE: obj.isoformat()}
    if isinstance(obj, (set, frozenset)):
        return {_SET: [encode(v) for v in obj]}
    raise TypeError(f"cannot send a {type(obj).__name__} over the daemon's socket")


def decode(obj: Any) -> Any:
    """The value `encode` was given back (dataclasses are rebuilt from their module, imported here)."""
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if _DC in obj and "fields" in obj and len(obj) == 2:
        module, _, qualname = obj[_DC].partition(":")
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        inst = cls.__new__(cls)
        for name, value in obj["fields"].items():
            object.__setattr__(inst, name, decode(value))
        return inst
    if len(obj) == 1:
        tag, value = next(iter(obj.items()))
        if tag == _TUPLE:
            return tuple(decode(v) for v in value)
        if tag == _MAP:
            return {decode(k): decode(v) for k, v in value}
        if tag == _PATH:
            return Path(value)
        if tag == _DT:
            return dt.datetime.fromisoformat(value)
        if tag == _DATE:
            return dt.date.fromisoformat(value)
        if tag == _SET:
            return {decode(v) for v in value}
    return {k: decode(v) for k, v in obj.items()}

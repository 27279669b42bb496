"""Data files jacked loads (model, tokenizer, BPE ranks), checked against pinned sha256s.

A damaged file must stop jacked with one line naming it and the command that repairs it,
never give a wrong embedding or token count. Hashing the 23 MB model at every process start
would cost every `jacked search` and hook, so a verdict is remembered per file identity
(path, size, mtime, ctime, inode) in a small JSON file the caller names, and in memory.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from pathlib import Path

from jacked.errors import JackedError

__all__ = ["DATA_DIR", "DataFileError", "sha256_of", "verify_file"]

#: The data files shipped inside jacked (see its README.md for sources and licences).
DATA_DIR: Path = Path(__file__).resolve().parents[1] / "data"

_CHUNK = 1 << 20


class DataFileError(JackedError, RuntimeError):
    """A data file is missing or does not match its pinned sha256; the message names the repair."""


_verified: dict[str, tuple[int, ...]] = {}  # path -> identity whose content matched, this process
_lock = threading.Lock()


def sha256_of(path: Path) -> str:
    """The hex sha256 of the file at `path`."""
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _identity(st: os.stat_result) -> tuple[int, ...]:
    # ctime as well as mtime: a write that restores the mtime still moves the ctime.
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _read_verdicts(store: Path) -> dict[str, list[int | str]]:
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_verdict(store: Path, key: str, value: list[int | str]) -> None:
    """Add one verdict; a store that cannot be written (read-only JACKED_HOME) only costs a re-hash."""
    # Files gone since (a model folder deleted to repair it) are dropped, so the store stays small.
    verdicts = {k: v for k, v in _read_verdicts(store).items() if os.path.exists(k)}
    verdicts[key] = value
    tmp = store.with_name(f".{store.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, store)
    except OSError:
        tmp.unlink(missing_ok=True)


def verify_file(path: Path, sha256: str, repair: str, verdicts: Path | None = None) -> None:
    """Raise `DataFileError` unless the file at `path` has the sha256 `sha256`.

    `repair` is the command that brings the file back, quoted in the message. `verdicts`: a JSON
    file remembering files that matched, by identity, so that an unchanged file is hashed once
    rather than at every process start (a changed file has another identity and is hashed again).
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise DataFileError(f"{path} is missing ({exc.strerror or type(exc).__name__}): "
                            f"repair with `{repair}`") from exc
    key = str(Path(path).absolute())
    ident = _identity(st)
    with _lock:
        if _verified.get(key) == ident:
            return
    stored = _read_verdicts(verdicts).get(key) if verdicts is not None else None
    if stored != [*ident, sha256]:
        try:
            actual = sha256_of(path)
        except OSError as exc:
            raise DataFileError(f"{path} cannot be read ({exc.strerror or type(exc).__name__}): "
                                f"repair with `{repair}`") from exc
        if actual != sha256:
            raise DataFileError(f"{path} is damaged (its sha256 is {actual[:12]}..., not the pinned "
                                f"{sha256[:12]}...): repair with `{repair}`")
        if verdicts is not None:
            _write_verdict(verdicts, key, [*ident, sha256])
    with _lock:
        _verified[key] = ident

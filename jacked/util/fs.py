"""Files written whole or not at all: a temp file beside the target, then a rename."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_output(path: Path, mode: int = 0o600, fsync: bool = False) -> Iterator[BinaryIO]:
    """A binary file object whose content replaces `path` only when the block succeeds.

    The temp file is created 0600 (mkstemp), so a secret is never readable by others even for
    a moment; `mode` is applied before the rename. `fsync` makes the content durable first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: Path, data: bytes, mode: int = 0o600, fsync: bool = False) -> None:
    """Replace `path` with `data` atomically (see `atomic_output`)."""
    with atomic_output(path, mode, fsync) as fh:
        fh.write(data)

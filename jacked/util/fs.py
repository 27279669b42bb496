"""Files written whole or not at all: a temp file beside the target, then a rename."""
from __future__ import annotations

import os
import stat
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


def make_private(directory: Path) -> None:
    """`directory` (created if missing) and the files directly in it readable by their owner only.

    jacked's home holds a copy of every transcript and all that was learned from them: under a
    usual umask of 022 SQLite and the index would leave them world-readable. Files deeper down
    are covered by the directory's own mode. Paths owned by someone else are left alone.
    """
    if read_only_dir(directory):
        return  # nothing can be tightened there, and nothing new will be written
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    for path in (directory, *directory.iterdir()):
        _tighten(path)
    marker = directory / OWNER_ONLY_MARKER
    if not marker.exists():
        # Once per home: files an older jacked left deeper down with group or other bits (an index
        # file written 0644, say) are tightened too; afterwards the top level is enough.
        for root, dirs, files in os.walk(directory):
            for name in (*dirs, *files):
                _tighten(Path(root, name))
        with suppress(OSError):
            marker.touch(mode=0o600)


OWNER_ONLY_MARKER = ".owner-only"


def _tighten(path: Path) -> None:
    with suppress(OSError):
        st = path.lstat()
        if st.st_uid == os.getuid() and not path.is_symlink() and st.st_mode & 0o077:
            path.chmod(st.st_mode & 0o700)


def read_only_dir(directory: Path) -> bool:
    """Whether `directory` exists and this process cannot write in it (a read-only mount, or no
    write permission): jacked then only reads what is there."""
    return directory.is_dir() and not os.access(directory, os.W_OK)


def copy_tree_sparse(source: Path, target: Path) -> None:
    """Copy the folder `source` to `target` (made), keeping files' holes: an index's memory-mapped
    files are mostly preallocated holes (an Edge shard of 1.3 MB on disk spans 244 MB). Only
    folders and regular files are copied: a socket cannot be, and opening a named pipe would wait
    for a writer forever."""
    import shutil

    shutil.copytree(source, target, copy_function=_copy_sparse, ignore=_not_files)


def _not_files(folder: str, names: list[str]) -> list[str]:
    """The entries of `folder` that are neither folders nor regular files (sockets, pipes, devices)."""
    def special(name: str) -> bool:
        try:
            mode = os.stat(os.path.join(folder, name)).st_mode
        except OSError:
            return False  # a dangling link: copytree reports it as it always has
        return not (stat.S_ISDIR(mode) or stat.S_ISREG(mode))

    return [name for name in names if special(name)]


def _copy_sparse(source: str, target: str) -> None:
    if not hasattr(os, "SEEK_DATA"):
        import shutil

        shutil.copyfile(source, target)
        return
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        offset = 0
        while offset < size:
            try:
                data = os.lseek(src.fileno(), offset, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            hole = os.lseek(src.fileno(), data, os.SEEK_HOLE)
            src.seek(data)
            dst.seek(data)
            while data < hole:
                chunk = src.read(min(1 << 20, hole - data))
                if not chunk:
                    break
                dst.write(chunk)
                data += len(chunk)
            offset = hole
        dst.truncate(size)

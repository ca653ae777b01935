"""Writing a file so that a crash leaves the old one: write a temporary beside it, fsync, rename.

Used by ``fw.save`` for both its formats (Oarlock's safetensors checkpoint and Paddle's pickle).
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
from collections.abc import Iterator
from typing import BinaryIO


@contextlib.contextmanager
def atomic_write(path: str) -> Iterator[BinaryIO]:
    """Open a temporary beside ``path`` for writing; on a clean exit it is fsynced and renamed
    onto ``path`` (and the folder fsynced), on an error removed. Temporaries that earlier saves
    of ``path`` left behind, whose process is gone, are removed first.

    Example::

        >>> import os, tempfile
        >>> from framework._src.atomic_file import atomic_write
        >>> p = os.path.join(tempfile.mkdtemp(), "f.bin")
        >>> with atomic_write(p) as f:
        ...     _ = f.write(b"abc")
        >>> open(p, "rb").read()
        b'abc'
    """
    folder, name = os.path.split(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    for old in stale_temporaries(path):
        try:
            os.unlink(old)
        except OSError:
            pass
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
    )  # umask applies
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # some filesystems cannot fsync a folder; the rename is still atomic
        pass


def stale_temporaries(path: str) -> list[str]:
    """Temporaries of earlier saves of ``path`` whose process is gone."""
    folder, name = os.path.split(os.path.abspath(path))
    stale = []
    for tmp in glob.glob(os.path.join(glob.escape(folder), f".{glob.escape(name)}.tmp-*")):
        pid = os.path.basename(tmp)[len(name) + 6 :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            stale.append(tmp)
    return stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True

"""The fusion pass's answers and the emitted kernel sources kept across processes: one signed
index file per kernel cache.

Growing the fusion groups of a program asks the compiler, for each candidate group, whether
it lowers and how many passes its kernel makes (:meth:`framework.compiler.fused.Backend.check`:
two traces and an emitted kernel). A model's forward, its backward and its optimizer update ask
hundreds of such questions, the same ones in every process; a warm first step spent most of
its time on them. Each answer is kept here by a digest of the question (the group's text, the
device, whether the kernel was asked for), in a file of the kernel cache folder named after
what the answers depend on (the core's sources, by path, size and modification time, and the
``OARLOCK_*`` settings), read once per process and written back, merged with what other
processes added meanwhile, when the process ends. The source emitted for a loop-IR program
(:func:`framework.compiler.eager.make_kernel`) is kept there too, by the program's text, the
language and the emitter's settings: the kernel cache's key is the source, so a warm process
finds its binaries without emitting.

The file is trusted as the kernel cache's entries are (:mod:`framework.compiler.cache`): it
starts with a magic line and an HMAC-SHA256 of its contents under the user's cache secret,
is read only as a regular private file, and a file that fails these checks is ignored and
rewritten. ``OARLOCK_FUSION_ANSWERS=0`` turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .cache import cache_dir, cache_secret, check_private, read_regular

MAGIC = b"oarlock-fusion-answers-1\n"
#: a file past this many bytes starts over with this process's answers (answers of groups no
#: longer made pile up)
MAX_BYTES = 16 << 20
_ROOTS = ("framework", "adapter_api")


def enabled() -> bool:
    return os.environ.get("OARLOCK_FUSION_ANSWERS", "1").strip().lower() not in ("0", "false", "off", "no")


def _fingerprint() -> str:
    """What the answers depend on: every source file of the core (path, size, modification
    time; a few milliseconds) and the ``OARLOCK_*`` settings other than paths."""
    h = hashlib.sha256()
    top = Path(__file__).resolve().parents[2]
    for root in _ROOTS:
        for folder, dirs, files in os.walk(top / root):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(folder, name))
                    h.update(
                        f"{os.path.relpath(os.path.join(folder, name), top)} {st.st_size} {st.st_mtime_ns}\n".encode()
                    )
    skip = ("OARLOCK_CACHE_DIR", "OARLOCK_CACHE_KEY_FILE", "OARLOCK_COMPILE_LOG_DIR", "OARLOCK_PRINT_IR")
    skip += ("OARLOCK_FUSION_ANSWERS", "OARLOCK_COMPILE_BACKGROUND", "OARLOCK_CACHE_LOCK_TIMEOUT")
    for k in sorted(os.environ):
        if k.startswith("OARLOCK_") and k not in skip:
            h.update(f"{k}={os.environ[k]}\n".encode())
    return h.hexdigest()[:24]


def question(*parts: str) -> str:
    """The digest a question is kept under."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0\1")
    return h.hexdigest()[:32]


class AnswerFile:
    """Answers (JSON values) by question digest, loaded from the cache folder on first use
    and saved at exit when new ones came (:func:`save`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, Any] | None = None
        self._new: dict[str, Any] = {}
        self._path: Path | None = None
        self._env: str | None = None  #: ``OARLOCK_CACHE_DIR`` when the answers were read

    def path(self) -> Path:
        if self._path is None:
            self._path = cache_dir() / f"fusion-answers-{_fingerprint()}.bin"
        return self._path

    def get(self, key: str) -> Any:
        answers = self._answers
        if answers is None or os.environ.get("OARLOCK_CACHE_DIR") != self._env:
            answers = self._load()
        return answers.get(key)

    def _load(self) -> dict[str, Any]:
        """Read the file of the current cache folder (the answers of another folder, read
        before ``OARLOCK_CACHE_DIR`` changed, are saved there first)."""
        env = os.environ.get("OARLOCK_CACHE_DIR")
        if self._answers is not None and self._new and env != self._env:
            self.save()
        with self._lock:
            if self._answers is None or env != self._env:
                self._env, self._path, self._new = env, None, {}
                self._answers = self._read() if enabled() else {}
            return self._answers

    def put(self, key: str, value: Any) -> None:
        if not enabled():
            return
        self.get(key)  # loaded first, so a save merges rather than replaces
        with self._lock:
            assert self._answers is not None
            self._answers[key] = value
            self._new[key] = value

    def _read(self) -> dict[str, Any]:
        """The answers on disk; {} when there are none or the file is not sound."""
        try:
            path = self.path()
            check_private(path.parent)
            data, _ = read_regular(path)
            if data is None or not data.startswith(MAGIC):
                return {}
            mac, body = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
            if not hmac.compare_digest(mac, hmac.new(cache_secret(), body, hashlib.sha256).digest()):
                return {}
            got = json.loads(body)
        except (OSError, ValueError, UnicodeDecodeError, Exception):  # noqa: BLE001 — a cache: never fatal
            return {}
        return got if isinstance(got, dict) else {}

    def save(self) -> None:
        """Write the answers back (merged with the file's, which another process may have
        grown), atomically; nothing when no new answer came or the folder is not usable."""
        with self._lock:
            if not self._new:
                return
            new, self._new = self._new, {}
        try:
            path = self.path()
            folder = path.parent
            if not folder.is_dir():  # no kernel was cached there (or the folder is gone)
                return
            check_private(folder)
            merged = self._read()
            merged.update(new)
            body = json.dumps(merged, separators=(",", ":")).encode()
            if len(body) > MAX_BYTES:
                body = json.dumps(new, separators=(",", ":")).encode()
            mac = hmac.new(cache_secret(), body, hashlib.sha256).digest()
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + mac + body)
                os.replace(tmp, path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            _drop_stale(folder, path)
        except Exception:  # noqa: BLE001 — a cache that cannot be written is only slower next time
            return

    def forget(self) -> None:
        """Drop what was read and not saved (the next question reads the file again)."""
        with self._lock:
            self._answers, self._new, self._path, self._env = None, {}, None, None


#: a file of answers for other sources (an older checkout) unused this long is removed
STALE_S = 7 * 24 * 3600


def _drop_stale(folder: Path, keep: Path) -> None:
    """Remove the files of answers that no process wrote for :data:`STALE_S` seconds (every
    edit of the core's sources starts a new file; other checkouts may share the folder)."""
    now = time.time()
    for other in folder.glob("fusion-answers-*.bin"):
        with contextlib.suppress(OSError):
            if other != keep and now - other.lstat().st_mtime > STALE_S:
                other.unlink()


#: the answers of the fusion pass's backend (:class:`framework.compiler.fused.Backend`)
FUSION = AnswerFile()
atexit.register(FUSION.save)

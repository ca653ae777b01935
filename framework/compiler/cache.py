"""The program cache: compiled binaries in memory and on disk, keyed by content.

Key: sha256 of the source, the compiler's language and identity, the entry point and the
options. Disk entries live under the platformdirs user cache dir (``OARLOCK_CACHE_DIR``
overrides it). Concurrent processes building one kernel take a file lock and write through a
temp file + ``os.replace``, so a reader never sees half a binary.

The cache only loads what it can vouch for: each entry starts with a header holding the key
it was built for, the length of the binary and an HMAC-SHA256 of the header and the binary
under a secret of the user's (:func:`cache_secret`: 32 random bytes in a 0600 file under the
user's config dir, outside the cache folder; ``OARLOCK_CACHE_KEY_FILE`` overrides the path), and
all three are checked before the binary reaches the plugin (no ``dlopen`` of a truncated,
foreign or forged file: whoever can write the cache folder but not read the key cannot make an
entry that loads). An entry is read only if it is a regular file (not a link, a FIFO or a
device) of at most 1 GiB, opened without blocking. A bad entry is rebuilt with a one-line
warning naming the file. The folder is the user's alone: created 0700, and a folder that
another user owns, or that the group or others may write, is refused (whoever can write it
could run code in every training process).

Builders of one entry take a lock (``<entry>.lock``, ``flock``) and write their pid and host
into it; a process that waits for it says after a few seconds who holds it
(:class:`CacheLockWarning`) and gives up after ``OARLOCK_CACHE_LOCK_TIMEOUT`` seconds (default
600) with :class:`CacheLockError`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import re
import secrets
import socket
import stat
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from filelock import FileLock

from adapter_api import CompileError, Compiler
from adapter_api import ProgramCache as _ProgramCacheContract

from .._src import env

try:
    import fcntl
except ImportError:  # Windows: filelock's msvcrt lock, without the holder's name
    fcntl = None  # type: ignore[assignment]

#: The first bytes of every cache entry; then the key (64 hex digits), the binary's length
#: (8 bytes, little endian) and the HMAC-SHA256 (32 bytes) of all that and the binary under the
#: user's cache secret, then the binary.
MAGIC = b"oarlock-kernel-cache-3\n"
_HEAD = len(MAGIC) + 64 + 8 + 32
#: the largest entry read (a binary of one translation unit is a few MB)
MAX_ENTRY_BYTES = 1 << 30
_SECRETS: dict[str, bytes] = {}
#: how every version's magic starts (an entry of an older version is rebuilt, said once)
_FAMILY = b"oarlock-kernel-cache-"
_OLDER_SAID: list[bool] = []


class CacheFolderError(CompileError):
    """The kernel cache folder is not private to the user, so nothing in it is trusted."""


class CacheEntryWarning(UserWarning):
    """A damaged or foreign kernel cache entry was found and rebuilt."""


class CacheLockWarning(UserWarning):
    """Another process holds the lock of a kernel cache entry this one waits for."""


class CacheLockError(CompileError):
    """The lock of a kernel cache entry was held past ``OARLOCK_CACHE_LOCK_TIMEOUT``."""


def secret_path() -> Path:
    """The file of the cache secret: ``$OARLOCK_CACHE_KEY_FILE`` or ``kernel-cache.key`` in the
    user config dir (kept out of the cache folder, which other tools may copy or share)."""
    env_path = os.environ.get("OARLOCK_CACHE_KEY_FILE")
    if env_path:
        return Path(env_path)
    return Path(platformdirs.user_config_dir("oarlock")) / "kernel-cache.key"


def cache_secret() -> bytes:
    """The user's cache secret (32 bytes), made on first use as a 0600 file; a key file that is
    not a private regular file of 32 bytes is refused with :class:`CacheFolderError`."""
    path = secret_path()
    got = _SECRETS.get(str(path))
    if got is not None:
        return got
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")
        try:
            os.write(fd, secrets.token_bytes(32))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # atomic, and never over a key another process made first
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError as exc:
        if not path.exists():
            raise CacheFolderError(
                f"[kernel cache] cannot create the cache key '{path}' ({exc.strerror}); set OARLOCK_CACHE_KEY_FILE "
                "to a path in a private folder you can write"
            ) from None
    _SECRETS[str(path)] = got = _read_secret(path)
    return got


def _read_secret(path: Path) -> bytes:
    fix = "remove it (a new key is made; cached kernels are rebuilt once) or set OARLOCK_CACHE_KEY_FILE"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise CacheFolderError(
            f"[kernel cache] cannot read the cache key '{path}' ({exc.strerror}); {fix}"
        ) from None
    try:
        st = os.fstat(fd)
        uid = getattr(os, "getuid", lambda: None)()
        problem = ""
        if not stat.S_ISREG(st.st_mode):
            problem = "is not a regular file"
        elif uid is not None and st.st_uid != uid:
            problem = f"belongs to uid {st.st_uid}, not to you"
        elif os.name == "posix" and st.st_mode & 0o077:
            problem = f"may be read or written by others (mode {stat.S_IMODE(st.st_mode):04o})"
        elif st.st_size != 32:
            problem = f"holds {st.st_size} bytes, not 32"
        if problem:
            raise CacheFolderError(
                f"[kernel cache] the cache key '{path}' {problem}, so kernels signed with it cannot be trusted; {fix}"
            )
        return os.read(fd, 32)
    finally:
        os.close(fd)


def cache_dir() -> Path:
    """Where binaries are stored: ``$OARLOCK_CACHE_DIR`` or the user cache dir."""
    env_dir = os.environ.get("OARLOCK_CACHE_DIR")
    if env_dir:
        return Path(env_dir)
    return Path(platformdirs.user_cache_dir("oarlock")) / "kernels"


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    compiles: int = 0
    rebuilt: int = 0


def program_key(compiler: Compiler, source: str, entry: str, options: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for part in (
        compiler.language,
        f"{type(compiler).__module__}.{type(compiler).__qualname__}",
        compiler.identity(),
        entry,
        "\0".join(options),
        source,
    ):
        h.update(part.encode())
        h.update(b"\0\1")
    return h.hexdigest()


def _mac(secret: bytes, head: bytes, binary: bytes) -> bytes:
    m = hmac.new(secret, head, hashlib.sha256)
    m.update(binary)
    return m.digest()


def pack_entry(key: str, binary: bytes, secret: bytes | None = None) -> bytes:
    """A cache entry: header (magic, key, length, HMAC under ``secret``, default the user's
    :func:`cache_secret`) then the binary."""
    head = MAGIC + key.encode() + len(binary).to_bytes(8, "little")
    return head + _mac(cache_secret() if secret is None else secret, head, binary) + binary


def unpack_entry(data: bytes, key: str, secret: bytes | None = None) -> tuple[bytes | None, str]:
    """(the binary, "") when ``data`` is a sound entry for ``key`` signed with ``secret``
    (default the user's :func:`cache_secret`), else (None, what is wrong)."""
    if len(data) < _HEAD or not data.startswith(MAGIC):
        return (
            None,
            f"it is {len(data)} bytes without a valid header (damaged, or written by an older Oarlock)",
        )
    at = len(MAGIC)
    if data[at : at + 64] != key.encode():
        return None, "it was built for another source or options (its recorded key differs)"
    n = int.from_bytes(data[at + 64 : at + 72], "little")
    body = data[_HEAD:]
    if len(body) != n:
        return (
            None,
            f"it is truncated or padded: the header says {n} bytes of binary, the file has {len(body)}",
        )
    want = _mac(cache_secret() if secret is None else secret, data[: at + 72], body)
    if not hmac.compare_digest(want, data[at + 72 : _HEAD]):
        return None, "its HMAC does not match (damaged, forged, or signed with another user's cache key)"
    return body, ""


def check_private(folder: Path) -> None:
    """Refuse a cache folder that someone else could write."""
    try:
        st = os.stat(folder)
    except OSError:
        return
    uid = getattr(os, "getuid", lambda: None)()
    fix = (
        f"fix it with `chmod 700 '{folder}'` (and make sure it is yours), or point OARLOCK_CACHE_DIR "
        f"at a private folder"
    )
    if uid is not None and st.st_uid != uid:
        raise CacheFolderError(
            f"[kernel cache] the folder '{folder}' belongs to uid {st.st_uid}, not to you (uid {uid}); compiled "
            f"kernels in it could run someone else's code, so it is not used; {fix}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = " and ".join(
            w for w, bit in (("its group", stat.S_IWGRP), ("others", stat.S_IWOTH)) if st.st_mode & bit
        )
        raise CacheFolderError(
            f"[kernel cache] the folder '{folder}' is writable by {who} "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); whoever can write it could run code in every training process, "
            f"so it is not used; {fix}"
        )


class ProgramCache(_ProgramCacheContract):
    """Compile-once access to programs: memory, then disk, then the plugin's compiler (the
    contract's :class:`adapter_api.ProgramCache`, handed to plugins for their own sources)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self._dir = Path(directory) if directory is not None else None
        self._mem: dict[tuple[int, str], Any] = {}
        self._lock = threading.Lock()
        self._locks: dict[tuple[int, str], threading.Lock] = {}
        self.stats = CacheStats()

    @property
    def directory(self) -> Path:
        return self._dir if self._dir is not None else cache_dir()

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.bin"

    def get(self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...] = ()) -> Any:
        """The loaded program for ``source``; builds it at most once per machine."""
        key = program_key(compiler, source, entry, tuple(options))
        mk = (id(compiler), key)
        prog = self._mem.get(mk)
        if prog is not None:
            self.stats.memory_hits += 1
            return prog
        with self._key_lock(mk):  # one build per key; other keys build meanwhile (threads)
            prog = self._mem.get(mk)
            if prog is None:
                prog = self._mem[mk] = self._load(compiler, source, entry, tuple(options), key)
            else:
                self.stats.memory_hits += 1
        return prog

    def _key_lock(self, mk: tuple[int, str]) -> threading.Lock:
        """The lock of one entry (made once, under the cache's own lock)."""
        with self._lock:
            lock = self._locks.get(mk)
            if lock is None:
                lock = self._locks[mk] = threading.Lock()
            return lock

    def get_batch(
        self, compiler: Compiler, source: str, entries: tuple[str, ...], options: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Every entry of one translation unit, built once (one key, one disk entry) and
        loaded entry by entry from the same binary."""
        key = program_key(compiler, source, "\0".join(entries), tuple(options))
        mk = (id(compiler), key)
        progs = self._mem.get(mk)
        if progs is not None:
            self.stats.memory_hits += 1
            return progs
        with self._key_lock(mk):
            progs = self._mem.get(mk)
            if progs is None:
                binary, _ = self._binary(compiler, source, entries[0], tuple(options), key, len(entries))
                progs = self._mem[mk] = {e: compiler.load(binary, e) for e in entries}
        return progs

    def has(self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...] = ()) -> bool:
        """Whether :meth:`get` would find ``source``'s program without compiling it: in memory,
        or an entry on disk (checked when it is read)."""
        return self._holds(compiler, program_key(compiler, source, entry, tuple(options)))

    def has_batch(
        self, compiler: Compiler, source: str, entries: tuple[str, ...], options: tuple[str, ...] = ()
    ) -> bool:
        """:meth:`has` for :meth:`get_batch`."""
        return self._holds(compiler, program_key(compiler, source, "\0".join(entries), tuple(options)))

    def _holds(self, compiler: Compiler, key: str) -> bool:
        return (id(compiler), key) in self._mem or self.path(key).is_file()

    def remember(
        self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...], program: Any
    ) -> None:
        """Keep ``program`` (built elsewhere: a part of a unit, unit.py) as what :meth:`get` of
        ``source``'s ``entry`` gives in this process, so that lookup builds nothing."""
        key = program_key(compiler, source, entry, tuple(options))
        with self._lock:
            self._mem.setdefault((id(compiler), key), program)

    def _load(self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...], key: str) -> Any:
        binary, cached = self._binary(compiler, source, entry, options, key)
        if not cached:
            return compiler.load(binary, entry)
        try:
            return compiler.load(binary, entry)
        except Exception as exc:  # noqa: BLE001 — a sound entry the plugin cannot load: rebuild once
            path = self.path(key)
            self._discard(path, f"the plugin could not load it ({type(exc).__name__}: {exc})")
            binary, _ = self._binary(compiler, source, entry, options, key)
            return compiler.load(binary, entry)

    def _discard(self, path: Path, why: str) -> None:
        self.stats.rebuilt += 1
        warnings.warn(
            f"[kernel cache] the entry '{path}' is not usable: {why}; rebuilding it",
            CacheEntryWarning,
            stacklevel=4,
        )
        with contextlib.suppress(OSError):
            path.unlink()

    def _cached(self, path: Path, key: str) -> bytes | None:
        data, why = read_regular(path)
        if data is None:
            if why:
                self._discard(path, why)
            return None
        if data.startswith(_FAMILY) and not data.startswith(MAGIC):
            # an entry of an older Oarlock (unsigned): rebuilt, said once per process, not per entry
            if not _OLDER_SAID:
                _OLDER_SAID.append(True)
                warnings.warn(
                    f"[kernel cache] entries in '{self.directory}' were written by an older Oarlock (without the "
                    "signature this one checks); each is rebuilt once as it is used",
                    CacheEntryWarning,
                    stacklevel=3,
                )
            self.stats.rebuilt += 1
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        binary, why = unpack_entry(data, key)
        if binary is None:
            self._discard(path, why)
            return None
        self.stats.disk_hits += 1
        return binary

    def _folder(self, path: Path) -> bool:
        """Make (0700) and check the entry's folders; False when they cannot be created."""
        for folder in (self.directory, path.parent):
            try:
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError:
                if not folder.is_dir():
                    return False
            check_private(folder)
        return True

    def _binary(
        self,
        compiler: Compiler,
        source: str,
        entry: str,
        options: tuple[str, ...],
        key: str,
        kernels: int = 1,
    ) -> tuple[bytes, bool]:
        """(the binary, whether it came from disk)."""
        path = self.path(key)
        if not self._folder(path):  # no cache folder to be had: build in memory only
            return self._build(compiler, source, entry, options, kernels), False
        data = self._cached(path, key)
        if data is not None:
            return data, True
        try:
            lock: Any = EntryLock(Path(str(path) + ".lock"))
            lock.acquire()
        except OSError:
            lock = None  # read-only cache dir: build in memory only
        if lock is None:
            return self._build(compiler, source, entry, options, kernels), False
        try:
            data = self._cached(path, key)  # another process may have built it while we waited
            if data is not None:
                return data, True
            data = self._build(compiler, source, entry, options, kernels)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(pack_entry(key, data))
                os.replace(tmp, path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        finally:
            lock.release()
        return data, False

    def _build(
        self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...], kernels: int = 1
    ) -> bytes:
        self.stats.compiles += 1
        # a build that takes over PROGRESS_AFTER seconds says so on stderr (once, while it runs;
        # inside a batch of parallel builds the batch says it once for all)
        timer = None
        for batch in _BATCHES:
            batch[0] = True
        if not _BATCHES:
            timer = threading.Timer(PROGRESS_AFTER, _progress, (compiler.language, kernels))
            timer.daemon = True
            timer.start()
        try:
            return compiler.compile(source, entry, options)
        except CompileError as exc:
            raise CompileError(compile_error_message(compiler.language, entry, str(exc), source)) from exc
        finally:
            if timer is not None:
                timer.cancel()

    def clear_memory(self) -> None:
        self._mem.clear()


#: seconds a build may take before a progress line goes to stderr
PROGRESS_AFTER = 1.0


def _progress(language: str, kernels: int, tail: str = "", end: str = "\n") -> None:
    """The progress line (``tail`` after it; on a terminal it is rewritten in place)."""
    what = "1 kernel" if kernels == 1 else f"{kernels} kernels"
    lead = "\r\033[K" if end == "" or tail.startswith(" done") else ""
    print(f"{lead}[compiler] compiling {what} ({language})…{tail}", end=end, file=sys.stderr, flush=True)


#: batches of builds running in parallel (:func:`build_batch`), each a one-element list that
#: says whether a build in it compiled: their builds say nothing each
_BATCHES: list[list[bool]] = []


@contextlib.contextmanager
def build_batch(language: str, kernels: int) -> Iterator[Callable[[int], None]]:
    """Builds run in parallel inside: one progress line for the batch when it compiles for
    over :data:`PROGRESS_AFTER` seconds ("compiling 21 kernels (c)…"), none per build (a batch
    that only loads from the disk cache says nothing). It yields ``done(n)``, to call as ``n``
    kernels are ready: on a terminal the line is then rewritten in place ("… 7/21") and ends
    with the batch's time; elsewhere (a log file) it is written once."""
    state = [False]
    _BATCHES.append(state)
    lock = threading.Lock()
    shown: list[float] = []  # when the line was shown
    count = [0]
    start = time.monotonic()
    tty = _stderr_is_tty()

    def say() -> None:
        if state[0]:
            with lock:
                shown.append(time.monotonic())
                _progress(language, kernels, f" {count[0]}/{kernels}" if tty else "", end="" if tty else "\n")

    def done(n: int = 1) -> None:
        with lock:
            count[0] += n
            if shown and tty:
                _progress(language, kernels, f" {count[0]}/{kernels}", end="")

    timer = threading.Timer(PROGRESS_AFTER, say)
    timer.daemon = True
    timer.start()
    try:
        yield done
    finally:
        timer.cancel()
        _BATCHES.remove(state)
        with lock:
            if shown and tty:
                _progress(language, kernels, f" done in {time.monotonic() - start:.1f} s")


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def read_regular(path: Path) -> tuple[bytes | None, str]:
    """(the entry's bytes, "") or (None, why it is not read; "" when there is none). Only a
    regular file is read (a FIFO or a device would block or never end), opened without
    blocking or following a link, and only up to :data:`MAX_ENTRY_BYTES`."""
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            return None, "it is a symbolic link, not a regular file"
        return None, ""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = {
                stat.S_IFIFO: "a FIFO",
                stat.S_IFCHR: "a character device",
                stat.S_IFBLK: "a block device",
            }
            return (
                None,
                f"it is {kind.get(stat.S_IFMT(st.st_mode), 'not a regular file')}, not a regular file",
            )
        if st.st_size > MAX_ENTRY_BYTES:
            return None, f"it is {st.st_size} bytes, more than the {MAX_ENTRY_BYTES} an entry may hold"
        chunks, left = [], st.st_size
        while left > 0:
            b = os.read(fd, min(left, 1 << 24))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks), ""
    except OSError:
        return None, ""
    finally:
        os.close(fd)


class EntryLock:
    """An exclusive lock on ``path`` (``flock``) with the holder's pid and host written in it.

    A waiter says after a few seconds who holds it (:class:`CacheLockWarning`, once) and
    raises :class:`CacheLockError` after ``OARLOCK_CACHE_LOCK_TIMEOUT`` seconds (default 600).
    A holder that dies releases the lock with its file descriptor."""

    POLL_S = 0.05

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._fallback: Any = None

    def acquire(self) -> None:
        timeout = env.number("OARLOCK_CACHE_LOCK_TIMEOUT", 600.0)
        if fcntl is None:
            self._fallback = FileLock(str(self.path), timeout=timeout)
            self._fallback.acquire()
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        start = time.monotonic()
        notice = min(3.0, timeout / 2)
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                if waited >= timeout:
                    holder = self.holder(fd)
                    os.close(fd)
                    raise CacheLockError(
                        f"[kernel cache] gave up after {waited:.0f} s waiting for the lock '{self.path}', held by "
                        f"{holder}; if that process hangs, end it; OARLOCK_CACHE_LOCK_TIMEOUT sets the wait"
                    ) from None
                if not told and waited >= notice:
                    told = True
                    warnings.warn(
                        f"[kernel cache] waiting for the lock '{self.path}', held by {self.holder(fd)} (building "
                        f"the same kernel); waiting up to {timeout:.0f} s (OARLOCK_CACHE_LOCK_TIMEOUT)",
                        CacheLockWarning,
                        stacklevel=5,
                    )
                time.sleep(self.POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(
            fd, f"pid {os.getpid()} on host {socket.gethostname()} since {time.time():.0f}\n".encode(), 0
        )
        self._fd = fd

    @staticmethod
    def holder(fd: int) -> str:
        """Who holds the lock, as its holder wrote it."""
        try:
            text = os.pread(fd, 200, 0).decode(errors="replace").strip()
        except OSError:
            text = ""
        m = re.fullmatch(r"pid (\d+) on host (\S+) since (\d+)", text)
        if not m:
            return "a process that has not written its name yet"
        return f"pid {m.group(1)} on host {m.group(2)} (for {max(0, time.time() - int(m.group(3))):.0f} s)"

    def release(self) -> None:
        if self._fallback is not None:
            self._fallback.release()
            return
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing releases the flock
            self._fd = None


_LINE_PATTERNS = (
    re.compile(r":(\d+):\d+:\s*(?:fatal )?error"),  # gcc, clang: file:12:5: error
    re.compile(r"error:\s*\S+\.(?:cl|c|cu):(\d+):\d+:"),  # PoCL: error: file.cl:12:5: ...
    re.compile(r"\((\d+)\):\s*error"),  # NVRTC: kernel.cu(12): error
    re.compile(r":(\d+):\s*error"),
)


def failing_line(log: str) -> int | None:
    """The first source line a compiler log blames, if it names one."""
    for pat in _LINE_PATTERNS:
        m = pat.search(log)
        if m:
            return int(m.group(1))
    return None


def source_excerpt(source: str, line: int | None, context: int = 4) -> str:
    """``source`` around ``line`` with numbered lines, the line itself marked with ``>>``."""
    lines = source.splitlines()
    if line is None or not 1 <= line <= len(lines):
        lo, hi = 1, min(len(lines), 2 * context + 1)
    else:
        lo, hi = max(1, line - context), min(len(lines), line + context)
    width = len(str(hi))
    return "\n".join(
        f"{'>>' if i == line else '  '} {i:>{width}} | {lines[i - 1]}" for i in range(lo, hi + 1)
    )


def compile_error_message(language: str, entry: str, log: str, source: str) -> str:
    line = failing_line(log)
    where = f"line {line}" if line is not None else "the start (the log names no line)"
    return (
        f"[compiler] the {language} compiler rejected generated kernel '{entry}' at {where}; "
        f"this is a bug in the generator or the plugin's compiler, report it with the text below, "
        f"or set OARLOCK_COMPILE=0 to use the decomposition\n"
        f"--- compiler log ---\n{log.strip()}\n"
        f"--- generated source around {where} ---\n{source_excerpt(source, line)}"
    )

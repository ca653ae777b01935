"""The program cache: compiled binaries in memory and on disk, keyed by content.

Key: sha256 of the source, the compiler's language and identity, the entry point and the
options. Disk entries live under the platformdirs user cache dir (``OARLOCK_CACHE_DIR``
overrides it). Concurrent processes building one kernel take a file lock and write through a
temp file + ``os.replace``, so a reader never sees half a binary.

The cache only loads what it can vouch for: each entry starts with a header holding the key
it was built for, the length of the binary and its SHA-256, and all three are checked before
the binary reaches the plugin (no ``dlopen`` of a truncated or foreign file). A bad entry is
rebuilt with a warning naming the file. The folder is the user's alone: created 0700, and a
folder that another user owns, or that the group or others may write, is refused (whoever
can write it could run code in every training process).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapter_api import CompileError, Compiler
from adapter_api import ProgramCache as _ProgramCacheContract

#: The first bytes of every cache entry; then the key (64 hex digits), the binary's length
#: (8 bytes, little endian) and its SHA-256 (32 bytes), then the binary.
MAGIC = b"oarlock-kernel-cache-2\n"
_HEAD = len(MAGIC) + 64 + 8 + 32


class CacheFolderError(CompileError):
    """The kernel cache folder is not private to the user, so nothing in it is trusted."""


class CacheEntryWarning(UserWarning):
    """A damaged or foreign kernel cache entry was found and rebuilt."""


def cache_dir() -> Path:
    """Where binaries are stored: ``$OARLOCK_CACHE_DIR`` or the user cache dir."""
    env = os.environ.get("OARLOCK_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

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


def pack_entry(key: str, binary: bytes) -> bytes:
    """A cache entry: header (magic, key, length, SHA-256) then the binary."""
    return MAGIC + key.encode() + len(binary).to_bytes(8, "little") + hashlib.sha256(binary).digest() + binary


def unpack_entry(data: bytes, key: str) -> tuple[bytes | None, str]:
    """(the binary, "") when ``data`` is a sound entry for ``key``, else (None, what is wrong)."""
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
    if hashlib.sha256(body).digest() != data[at + 72 : _HEAD]:
        return None, "its binary does not match the SHA-256 in its header"
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
        with self._lock:
            prog = self._mem.get(mk)
            if prog is None:
                prog = self._mem[mk] = self._load(compiler, source, entry, tuple(options), key)
            else:
                self.stats.memory_hits += 1
        return prog

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
        with self._lock:
            progs = self._mem.get(mk)
            if progs is None:
                binary, _ = self._binary(compiler, source, entries[0], tuple(options), key, len(entries))
                progs = self._mem[mk] = {e: compiler.load(binary, e) for e in entries}
        return progs

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
        data = _read(path)
        if data is None:
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
            from filelock import FileLock

            lock: Any = FileLock(str(path) + ".lock", timeout=600)
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
        # a build that takes over PROGRESS_AFTER seconds says so on stderr (once, while it runs)
        timer = threading.Timer(PROGRESS_AFTER, _progress, (compiler.language, kernels))
        timer.daemon = True
        timer.start()
        try:
            return compiler.compile(source, entry, options)
        except CompileError as exc:
            raise CompileError(compile_error_message(compiler.language, entry, str(exc), source)) from exc
        finally:
            timer.cancel()

    def clear_memory(self) -> None:
        self._mem.clear()


#: seconds a build may take before a progress line goes to stderr
PROGRESS_AFTER = 1.0


def _progress(language: str, kernels: int) -> None:
    what = "1 kernel" if kernels == 1 else f"{kernels} kernels"
    print(f"[compiler] compiling {what} ({language})…", file=sys.stderr, flush=True)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


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

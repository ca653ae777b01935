"""The program cache: compiled binaries in memory and on disk, keyed by content.

Key: sha256 of the source, the compiler's language and identity, the entry point and the
options. Disk entries live under the platformdirs user cache dir (``OARLOCK_CACHE_DIR``
overrides it). Concurrent processes building one kernel take a file lock and write through a
temp file + ``os.replace``, so a reader never sees half a binary.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapter_api import CompileError, Compiler


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


def program_key(compiler: Compiler, source: str, entry: str, options: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for part in (compiler.language, compiler.identity(), entry, "\0".join(options), source):
        h.update(part.encode())
        h.update(b"\0\1")
    return h.hexdigest()


class ProgramCache:
    """Compile-once access to programs: memory, then disk, then the plugin's compiler."""

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
                binary = self._binary(compiler, source, entry, tuple(options), key)
                prog = self._mem[mk] = compiler.load(binary, entry)
            else:
                self.stats.memory_hits += 1
        return prog

    def _binary(self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...], key: str) -> bytes:
        path = self.path(key)
        data = _read(path)
        if data is not None:
            self.stats.disk_hits += 1
            return data
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            from filelock import FileLock

            lock: Any = FileLock(str(path) + ".lock", timeout=600)
        except OSError:
            lock = None  # read-only cache dir: build in memory only
        if lock is None:
            return self._build(compiler, source, entry, options)
        with lock:
            data = _read(path)  # another process may have built it while we waited
            if data is not None:
                self.stats.disk_hits += 1
                return data
            data = self._build(compiler, source, entry, options)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        return data

    def _build(self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...]) -> bytes:
        self.stats.compiles += 1
        try:
            return compiler.compile(source, entry, options)
        except CompileError as exc:
            raise CompileError(compile_error_message(compiler.language, entry, str(exc), source)) from exc

    def clear_memory(self) -> None:
        self._mem.clear()


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

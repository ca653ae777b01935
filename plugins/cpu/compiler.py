"""Compile access for the CPU plugin: C99 built by the system C compiler, loaded with cffi.

``compile`` runs ``$CC`` (else ``cc``, ``gcc``, ``clang``) with ``-O3 -march=native -fopenmp``
into a shared library and returns its bytes, prefixed by the C declaration of the entry point
(read from the source) so ``load`` can give cffi the signature. When glibc's vector math
library is present, generated kernels get SIMD ``expf``/``logf``/... through it.

Without a C compiler ``compile`` raises ``CompileError`` saying so; the core then runs the
decomposition.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import warnings
from typing import Any

import numpy as np

from adapter_api import CompileError, Compiler, KernelError, ProgramCache

_HEADER = b"OARLOCK-C1\n"
_BASE_FLAGS = (
    "-O3",
    "-march=native",
    "-std=gnu11",
    "-fPIC",
    "-shared",
    "-fno-math-errno",
    "-fno-trapping-math",
)


@functools.cache
def find_cc() -> str | None:
    """The C compiler to use, or None. ``$CC``, when set, is the only one tried."""
    cc = os.environ.get("CC")
    for name in (cc,) if cc else ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


@functools.cache
def _probe(cc: str, *flags: str) -> bool:
    """Whether ``cc`` accepts ``flags`` for a trivial OpenMP library."""
    with tempfile.TemporaryDirectory(prefix="oarlock-cc-") as d:
        src = os.path.join(d, "p.c")
        with open(src, "w") as f:
            f.write("#include <math.h>\nfloat f(float x) { return expf(x); }\n")
        r = subprocess.run(
            [cc, *_BASE_FLAGS, *flags, src, "-o", os.path.join(d, "p.so")], capture_output=True, text=True
        )
        return r.returncode == 0


@functools.cache
def _version(cc: str) -> str:
    try:
        r = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.splitlines()[0] if r.stdout else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.cache
def cpu_info() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo ("model name", "cpu family", "flags"...),
    read once; {} where there is no such file."""
    out: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor is enough
                key, _, value = line.partition(":")
                out.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return out


@functools.cache
def _march() -> str:
    """A hash of this CPU's feature flags (read once: ``identity()`` is on launch paths)."""
    flags = cpu_info().get("flags")
    return hashlib.sha256(flags.encode()).hexdigest()[:16] if flags else os.uname().machine


def cpu_has(flag: str) -> bool:
    """Whether this CPU lists ``flag`` (``avx512f``...) in /proc/cpuinfo: what ``-march=native``
    builds for (False where there is no such file)."""
    return flag in cpu_info().get("flags", "").split()


class CPUCompiler(Compiler):
    """Builds generated C for the host CPU.

    Example::

        c = CPUCompiler()
        src = "void scale(float* y, const float* x, long n) { for (long i = 0; i < n; i++) y[i] = 2 * x[i]; }"
        prog = c.load(c.compile(src, "scale"), "scale")
        c.launch(prog, [y, x, np.int64(n)], (n,), None, None)
    """

    language = "c"

    def __init__(self, runtime: Any = None, index: int = 0) -> None:
        from .threads import apply

        apply()  # OMP_NUM_THREADS / OMP_WAIT_POLICY before a kernel loads libgomp (threads.py)
        self.runtime = runtime
        self._libs: list[Any] = []

    def _cc(self) -> str:
        cc = find_cc()
        if cc is None:
            raise CompileError(
                f"[cpu] no C compiler found (looked for {os.environ.get('CC') or 'cc, gcc, clang'}), so "
                f"generated kernels cannot be built; install one (apt install gcc) or set CC to one; until "
                f"then composites run as their decomposition"
            )
        return cc

    def flags(self) -> tuple[str, ...]:
        cc = self._cc()
        flags = ["-fopenmp"] if _probe(cc, "-fopenmp") else []
        if _probe(cc, *flags, "-DOARLOCK_VECTOR_MATH", "-lmvec", "-lm"):
            flags += ["-DOARLOCK_VECTOR_MATH", "-lmvec"]
        return (*_BASE_FLAGS, *flags, "-lm")

    def identity(self) -> str:
        cc = self._cc()
        return f"{cc} {_version(cc)} | {' '.join(self.flags())} | cpu {_march()}"

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        cc = self._cc()
        decl = _declaration(source, entry)
        with tempfile.TemporaryDirectory(prefix="oarlock-cc-") as d:
            src = os.path.join(d, f"{entry}.c")
            lib = os.path.join(d, f"{entry}.so")
            with open(src, "w") as f:
                f.write(source)
            r = subprocess.run([cc, src, *self.flags(), *options, "-o", lib], capture_output=True, text=True)
            if r.returncode != 0:
                raise CompileError(
                    f"[cpu] {os.path.basename(cc)} could not compile kernel '{entry}' (exit {r.returncode}); "
                    f"fix the source (compiler log below)\n{r.stderr}"
                )
            with open(lib, "rb") as f:
                return _HEADER + decl.encode() + b"\0" + f.read()

    def load(self, binary: bytes, entry: str) -> Any:
        import cffi

        if not binary.startswith(_HEADER):
            raise CompileError(
                f"[cpu] the binary of '{entry}' is not from CPUCompiler.compile; clear the kernel cache"
            )
        decl, lib = binary[len(_HEADER) :].split(b"\0", 1)
        ffi = cffi.FFI()
        ffi.cdef(decl.decode() + ";")
        fd, path = tempfile.mkstemp(prefix=f"oarlock-{entry}-", suffix=".so")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(lib)
            handle = ffi.dlopen(path)
        finally:
            os.unlink(path)  # the mapping stays valid after the file is gone
        fn = getattr(handle, entry)
        self._libs.append((ffi, handle))
        return _CProgram(ffi, fn, entry)

    def launch(
        self, program: Any, args: list[Any], grid: tuple[int, ...], local: tuple[int, ...] | None, stream: Any
    ) -> None:
        call = [program.arg(i, a) for i, a in enumerate(args)]
        if stream is None:
            program.fn(*call)
        else:
            f = stream.submit(program.fn, *call)
            if f is not None:  # None: the stream captures (the call is recorded, not run)
                f.result()

    def bind(
        self, program: Any, args: list[Any], grid: tuple[int, ...], local: tuple[int, ...] | None, stream: Any
    ) -> Any:
        """:meth:`launch` with the pointers cast once: a bound cffi call."""
        call = [program.arg(i, a) for i, a in enumerate(args)]
        fn = program.fn
        if stream is None:
            bound = functools.partial(fn, *call)
            bound.keep = args  # type: ignore[attr-defined]  # the arrays the pointers point into
            return bound

        def submit(keep: list[Any] = args) -> None:  # keep: the arrays the pointers point into
            f = stream.submit(fn, *call)
            if f is not None:  # None: the stream captures (the call is recorded, not run)
                f.result()

        return submit


class _CProgram:
    __slots__ = ("ffi", "fn", "entry", "keep")

    def __init__(self, ffi: Any, fn: Any, entry: str) -> None:
        self.ffi, self.fn, self.entry = ffi, fn, entry

    def arg(self, i: int, a: Any) -> Any:
        if isinstance(a, np.ndarray):
            return pointer(self.ffi, a)
        if isinstance(a, np.generic):
            return a.item()
        raise KernelError(
            f"[cpu] launch argument {i} of '{self.entry}' is {type(a).__name__}; pass numpy "
            f"arrays (the tensors' native views) and numpy scalars"
        )


def pointer(ffi: Any, x: np.ndarray) -> Any:
    """``x``'s first element as a ``void *``: through ``from_buffer`` for a C-contiguous array
    or the transpose of one (~0.2 us), else its address (``__array_interface__``, ~1.1 us)."""
    if x.flags.c_contiguous:
        return ffi.cast("void *", ffi.from_buffer(x))
    if x.flags.f_contiguous:
        return ffi.cast("void *", ffi.from_buffer(x.T))
    return ffi.cast("void *", x.__array_interface__["data"][0])


def _declaration(source: str, entry: str) -> str:
    m = re.search(
        r"(?:^|\n)\s*((?:[A-Za-z_][\w]*\s+)+\**\s*" + re.escape(entry) + r"\s*\([^)]*\))\s*\{", source
    )
    if m is None:
        raise CompileError(
            f"[cpu] cannot find the definition of '{entry}' in the source; define it as "
            f"'void {entry}(...) {{ ... }}' at top level"
        )
    decl = " ".join(re.sub(r"\brestrict\b|\b__restrict__\b", "", m.group(1)).split())
    import cffi

    try:  # the declaration is what load() gives cffi: a type only the source defines fails there
        cffi.FFI().cdef(decl + ";")
    except cffi.CDefError as exc:
        raise CompileError(
            f"[cpu] cffi cannot read the declaration of '{entry}' ({decl}): {exc}; declare its "
            f"parameters with C's own types (void * for a pointer to a macro's type)"
        ) from None
    return decl


_OWN_LOCK = threading.Lock()
_OWN: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Any] = {}  # -> programs, or None
#: the core's kernel cache (``registry.program_cache``), kept by :func:`register_compiler`
_PROGRAM_CACHE: ProgramCache | None = None


def own_programs(path: Any, entries: tuple[str, ...], options: tuple[str, ...], what: str) -> Any:
    """The plugin's own C (``attention.c``, ``layout.c``): the programs of ``entries`` in the
    file at ``path``, built once per process through the core's kernel cache (verified entries
    on disk, keyed by the source, the compiler and the CPU; built without it where the core
    offers none), or None when they do not build (no C compiler: warned once, naming ``what``
    runs in numpy instead)."""
    key = (str(path), entries, options)
    if key in _OWN:
        return _OWN[key]
    with _OWN_LOCK:
        if key not in _OWN:
            try:
                cache, comp, source = _PROGRAM_CACHE, CPUCompiler(), open(path).read()
                if cache is None:
                    _OWN[key] = tuple(comp.load(comp.compile(source, e, options), e) for e in entries)
                else:
                    _OWN[key] = tuple(cache.get(comp, source, e, options) for e in entries)
            except (CompileError, OSError) as exc:
                warnings.warn(
                    f"[cpu] the {what} kernel does not build ({exc}); {what} runs in numpy", stacklevel=3
                )
                _OWN[key] = None
    return _OWN[key]


def own_program(path: Any, entry: str, options: tuple[str, ...], what: str) -> Any:
    """:func:`own_programs` for one entry: its program, or None."""
    progs = own_programs(path, (entry,), options, what)
    return None if progs is None else progs[0]


def float_options(dtype: Any) -> tuple[str, ...]:
    """The options building the plugin's own C for a float dtype: its ``T`` is float, or
    double with ``-DT_DOUBLE``."""
    return ("-DT_DOUBLE",) if np.dtype(dtype) == np.float64 else ()


def register_compiler(registry: Any) -> None:
    """Register compile access for "cpu", and keep the core's kernel cache for the plugin's own C."""
    global _PROGRAM_CACHE
    registry.add_compiler("cpu", CPUCompiler)
    _PROGRAM_CACHE = getattr(registry, "program_cache", None)

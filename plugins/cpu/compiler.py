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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adapter_api import CompileError, Compiler, KernelError, ProgramCache, native

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
    """The C compiler to use, or None (``adapter_api.native.find_cc``, asked once)."""
    return native.find_cc()


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


@dataclass(frozen=True)
class CCFacts:
    """What the flags and the cache key need to know of a C compiler: its ``--version`` line
    and whether it builds OpenMP and links glibc's vector math (``-lmvec``)."""

    version: str
    openmp: bool
    vector_math: bool

    def encode(self) -> bytes:
        return f"{self.version}\n{int(self.openmp)}\n{int(self.vector_math)}".encode()

    @classmethod
    def decode(cls, data: bytes) -> CCFacts:
        version, openmp, vector_math = data.decode().split("\n")
        return cls(version, openmp == "1", vector_math == "1")


def _probe_facts(cc: str) -> CCFacts:
    """Ask ``cc``: three compiler processes at once (the vector-math probe is tried with
    OpenMP and kept when OpenMP builds, else tried again without)."""
    from concurrent.futures import ThreadPoolExecutor

    vm = ("-DOARLOCK_VECTOR_MATH", "-lmvec", "-lm")
    with ThreadPoolExecutor(3) as pool:
        version = pool.submit(_version, cc)
        omp = pool.submit(_probe, cc, "-fopenmp")
        vm_omp = pool.submit(_probe, cc, "-fopenmp", *vm)
        openmp = omp.result()
        vector_math = vm_omp.result() if openmp else _probe(cc, *vm)
        return CCFacts(version.result(), openmp, vector_math)


class _FactsCompiler(Compiler):
    """The probes of one C compiler as a "program" of the core's kernel cache: asked once per
    machine, then read from the cache (verified like any entry) instead of running the compiler
    three times in every process. Its identity is the compiler's path, size and modification
    time (no process started to tell them)."""

    language = "c"

    def __init__(self, cc: str) -> None:
        self.cc = cc

    def identity(self) -> str:
        real = os.path.realpath(self.cc)
        st = os.stat(real)
        return f"{self.cc} -> {real} {st.st_size} {st.st_mtime_ns} | probes of {_BASE_FLAGS}"

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        return _probe_facts(self.cc).encode()

    def load(self, binary: bytes, entry: str) -> CCFacts:
        try:
            return CCFacts.decode(binary)
        except ValueError:
            raise CompileError(f"[cpu] the cached facts of {self.cc} are not readable") from None


_FACTS_LOCK = threading.Lock()
_FACTS: dict[str, CCFacts] = {}


def cc_facts(cc: str) -> CCFacts:
    """The version and flag probes of ``cc``: once per process (one thread asks, the others
    wait), through the core's kernel cache when the plugin has it (so once per machine).
    Installing libgomp or glibc's libmvec after a first run does not change what a cached
    answer says: clear the kernel cache then.

    Example::

        facts = cc_facts(find_cc())
        flags = ["-fopenmp"] if facts.openmp else []
    """
    got = _FACTS.get(cc)
    if got is not None:
        return got
    with _FACTS_LOCK:
        got = _FACTS.get(cc)
        if got is None:
            got = None
            if _PROGRAM_CACHE is not None:
                try:
                    got = _PROGRAM_CACHE.get(_FactsCompiler(cc), "cc facts 1", "facts")
                except (CompileError, OSError):
                    got = None  # a cache folder it may not use: ask the compiler (the builds say why)
            if not isinstance(got, CCFacts):
                got = _probe_facts(cc)
            _FACTS[cc] = got
    return got


#: what the precompiled header holds: the intrinsics header, a third of a small kernel's build
_PCH_TEXT = "/* oarlock precompiled header */\n#include <immintrin.h>\n"
#: the flags that only the link step reads (a header is compiled without them)
_LINK_ONLY = ("-shared", "-lmvec", "-lm")


def pch_enabled() -> bool:
    """``OARLOCK_CC_PCH`` (default on): whether kernels that include ``immintrin.h`` are built
    against a precompiled header (GCC only)."""
    return os.environ.get("OARLOCK_CC_PCH", "1").strip().lower() not in ("0", "false", "off", "no")


class _PCHCompiler(Compiler):
    """GCC's precompiled ``immintrin.h`` as a "program" of the core's kernel cache: built once
    per machine, compiler and flag set, kept as a verified entry (a ``.gch`` is code the
    compiler trusts: it is only ever read back through the cache's signature check). ``load``
    writes it into this process's private folder and returns the header path to ``-include``
    (GCC uses the ``.gch`` beside it when it matches the build's flags, the text otherwise)."""

    language = "c"

    def __init__(self, cc: str, flags: tuple[str, ...]) -> None:
        self.cc = cc
        self.flags = tuple(f for f in flags if f not in _LINK_ONLY)

    def identity(self) -> str:
        real = os.path.realpath(self.cc)
        st = os.stat(real)
        return (
            f"pch {self.cc} -> {real} {st.st_size} {st.st_mtime_ns} | {' '.join(self.flags)} | cpu {_march()}"
        )

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        with tempfile.TemporaryDirectory(prefix="oarlock-pch-") as d:
            hdr = os.path.join(d, "oarlock_pch.h")
            with open(hdr, "w") as f:
                f.write(source)
            r = subprocess.run(
                [self.cc, *self.flags, "-x", "c-header", hdr, "-o", hdr + ".gch"],
                capture_output=True,
                text=True,
            )
            if r.returncode != 0:
                raise CompileError(
                    f"[cpu] {os.path.basename(self.cc)} could not precompile immintrin.h\n{r.stderr}"
                )
            with open(hdr + ".gch", "rb") as f:
                return f.read()

    def load(self, binary: bytes, entry: str) -> str:
        d = _private_dir()
        name = f"pch-{hashlib.sha256(self.identity().encode()).hexdigest()[:16]}.h"
        hdr = os.path.join(d, name)
        with open(hdr + ".gch", "wb") as f:
            f.write(binary)
        with open(hdr, "w") as f:
            f.write(_PCH_TEXT)
        return hdr


def _is_gcc(cc: str) -> bool:
    """Whether ``cc`` is GCC (its version line or the file it links to says so; clang reads
    ``.gch`` files of its own format)."""
    version = cc_facts(cc).version.lower()
    return "clang" not in version and ("gcc" in version or "gcc" in os.path.basename(os.path.realpath(cc)))


@functools.cache
def _private_dir() -> str:
    """A folder of this process (mode 0700), removed at exit."""
    import atexit

    d = tempfile.mkdtemp(prefix="oarlock-cc-")
    atexit.register(shutil.rmtree, d, True)
    return d


_PCH_LOCK = threading.Lock()
_PCH: dict[tuple[str, tuple[str, ...]], str | None] = {}


def precompiled_header(cc: str, flags: tuple[str, ...]) -> str | None:
    """The header path to ``-include`` for a kernel that includes ``immintrin.h`` (its ``.gch``
    beside it), or None: ``OARLOCK_CC_PCH=0``, not GCC, no kernel cache, or it did not build
    (then kernels parse the header as before). Once per process and flag set; the first
    builder waits for it, the others for the first.

    Example::

        pch = precompiled_header(find_cc(), CPUCompiler().flags())
        cmd = [find_cc(), *(("-include", pch) if pch else ()), "k.c", "-o", "k.so"]
    """
    if not pch_enabled() or _PROGRAM_CACHE is None:
        return None
    key = (cc, flags)
    if key in _PCH:
        return _PCH[key]
    with _PCH_LOCK:
        if key not in _PCH:
            got = None
            if _is_gcc(cc):
                try:
                    got = _PROGRAM_CACHE.get(_PCHCompiler(cc, flags), _PCH_TEXT, "pch")
                except (CompileError, OSError):
                    got = None
            _PCH[key] = got
    return _PCH[key]


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
        self._loaded: dict[bytes, tuple[Any, Any]] = {}
        self._load_lock = threading.Lock()

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
        facts = cc_facts(self._cc())
        flags = ["-fopenmp"] if facts.openmp else []
        if facts.vector_math:
            flags += ["-DOARLOCK_VECTOR_MATH", "-lmvec"]
        return (*_BASE_FLAGS, *flags, "-lm")

    def identity(self) -> str:
        cc = self._cc()
        return f"{cc} {cc_facts(cc).version} | {' '.join(self.flags())} | cpu {_march()}"

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        cc = self._cc()
        decl = ";".join(_declarations(source, entry))
        pch = precompiled_header(cc, self.flags()) if "<immintrin.h>" in source else None
        pre = ("-include", pch) if pch else ()
        with tempfile.TemporaryDirectory(prefix="oarlock-cc-") as d:
            src = os.path.join(d, f"{entry}.c")
            lib = os.path.join(d, f"{entry}.so")
            with open(src, "w") as f:
                f.write(source)
            r = subprocess.run(
                [cc, *pre, src, *self.flags(), *options, "-o", lib], capture_output=True, text=True
            )
            if r.returncode != 0:
                raise CompileError(
                    f"[cpu] {os.path.basename(cc)} could not compile kernel '{entry}' (exit {r.returncode}); "
                    f"fix the source (compiler log below)\n{r.stderr}"
                )
            with open(lib, "rb") as f:
                return _HEADER + decl.encode() + b"\0" + f.read()

    def own_builds(self, ops: Any = ()) -> list[Any]:
        """The plugin's own C that ``ops`` will ask for, not loaded yet (:func:`own_builds`)."""
        return own_builds(ops)

    def load(self, binary: bytes, entry: str) -> Any:
        import cffi

        if not binary.startswith(_HEADER):
            raise CompileError(
                f"[cpu] the binary of '{entry}' is not from CPUCompiler.compile; clear the kernel cache"
            )
        digest = hashlib.sha256(binary).digest()
        with self._load_lock:  # the entries of one binary share its library (loaded once)
            loaded = self._loaded.get(digest)
            if loaded is None:
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
                loaded = self._loaded[digest] = (ffi, handle)
                self._libs.append(loaded)
        ffi, handle = loaded
        try:
            fn = getattr(handle, entry)
        except AttributeError:
            raise CompileError(
                f"[cpu] the library built for '{entry}' does not declare it; clear the kernel cache"
            ) from None
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


_DEFINITION = re.compile(r"(?:^|\n)[ \t]*((?:[A-Za-z_]\w*\s+)+\**\s*([A-Za-z_]\w*)\s*\([^)]*\))\s*\{")


def _declarations(source: str, entry: str) -> list[str]:
    """The declaration of ``entry`` (:func:`_declaration`), then those of the source's other
    top-level functions that are not ``static`` and that cffi reads: one build of a file of
    several entries loads each of them (:meth:`ProgramCache.get_batch`)."""
    import cffi

    first = _declaration(source, entry)
    out = [first]
    for m in _DEFINITION.finditer(source):
        head, name = m.group(1), m.group(2)
        if name == entry or "static" in head.split() or head.split()[0] in ("else", "return"):
            continue
        decl = " ".join(re.sub(r"\brestrict\b|\b__restrict__\b", "", head).split())
        try:
            cffi.FFI().cdef(decl + ";")
        except cffi.CDefError:
            continue
        out.append(decl)
    return out


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
_OWN_LOCKS: dict[tuple[str, tuple[str, ...], tuple[str, ...]], threading.Lock] = {}
_OWN: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Any] = {}  # -> programs, or None
#: builds of :func:`own_builds` the core runs in the background (``queued()``), not landed yet
_QUEUED: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
_TRIED: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
_LATER: list[Any] = []
#: the core's kernel cache (``registry.program_cache``), kept by :func:`register_compiler`
_PROGRAM_CACHE: ProgramCache | None = None


def own_programs(
    path: Any, entries: tuple[str, ...], options: tuple[str, ...], what: str, wait: bool = True
) -> Any:
    """The plugin's own C (``attention.c``, ``layout.c``): the programs of ``entries`` in the
    file at ``path``, built once per process through the core's kernel cache (verified entries
    on disk, keyed by the source, the compiler and the CPU; built without it where the core
    offers none), or None when they do not build (no C compiler: warned once, naming ``what``
    runs in numpy instead). Each file and option set builds under its own lock: one caller
    never waits for another's build (:meth:`CPUCompiler.own_builds` hands the core several to build at once).

    None too while the build runs in the background (:func:`own_builds`' ``queued()``), and,
    with ``wait=False`` (a caller whose numpy path gives the same bits), while a build this
    call started on a thread of the plugin runs (when the cache does not hold it)."""
    key = (str(path), entries, options)
    if key in _OWN:
        return _OWN[key]
    if key in _QUEUED:  # being built in the background: the caller's numpy path meanwhile
        return None
    if not wait and key not in _TRIED and not _cached(path, entries, options):
        with _OWN_LOCK:
            if key not in _QUEUED and key not in _OWN:
                _QUEUED.add(key)
                _TRIED.add(key)  # once: a build that fails there is tried again here, and warns
                _later().submit(_prebuild_one, path, entries, options, what)
        return own_programs(path, entries, options, what)
    return _build_own(key, path, entries, options, what)


def _later() -> Any:
    """The plugin's thread for the builds of ``own_programs(wait=False)`` (made once)."""
    if not _LATER:
        from concurrent.futures import ThreadPoolExecutor

        _LATER.append(ThreadPoolExecutor(1, thread_name_prefix="oarlock-cpu-build"))
    return _LATER[0]


def _build_own(
    key: tuple[str, tuple[str, ...], tuple[str, ...]],
    path: Any,
    entries: tuple[str, ...],
    options: tuple[str, ...],
    what: str,
    quiet: bool = False,
) -> Any:
    """:func:`own_programs` past its checks; ``quiet``: a build that fails says nothing and is
    not kept (the first use tries again and warns)."""
    with _OWN_LOCK:
        lock = _OWN_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _OWN:
            try:
                with open(path) as f:
                    source = f.read()
                cache, comp = _PROGRAM_CACHE, CPUCompiler()
                if cache is None:  # one build for all the entries of the file
                    binary = comp.compile(source, entries[0], options)
                    _OWN[key] = tuple(comp.load(binary, e) for e in entries)
                else:
                    progs = cache.get_batch(comp, source, entries, options)
                    _OWN[key] = tuple(progs[e] for e in entries)
            except (CompileError, OSError) as exc:
                if quiet:
                    return None
                warnings.warn(
                    f"[cpu] the {what} kernel does not build ({exc}); {what} runs in numpy", stacklevel=4
                )
                _OWN[key] = None
    return _OWN[key]


#: the plugin's own C, as (file beside this one, entries, float options or not, what, the ops
#: whose first run builds it): :meth:`CPUCompiler.own_builds` hands the core the builds a new
#: program's ops will ask for
PREBUILT_OWN: tuple[tuple[str, tuple[str, ...], bool, str, frozenset[str]], ...] = (
    ("gemm.c", ("gemm_rows",), True, "split product", frozenset({"matmul", "matmul_t"})),
    (
        "layout.c",
        ("permute_runs", "concat_rows"),
        False,
        "permute and concat",
        frozenset({"permute", "concat"}),
    ),
    (
        "attention.c",
        # both vector widths and the bfloat16 entries: one build (attention.ENTRIES)
        ("attn_fwd", "attn_bwd", "attn_fwd_wide", "attn_bwd_wide", "attn_fwd_bf16", "attn_bwd_bf16"),
        True,
        "fused attention",
        frozenset({"attention", "attention_grad"}),
    ),
    (
        "index.c",
        ("scatter_add_rows", "gather_rows", "where_select"),
        True,
        "scatter_add, gather and where",
        frozenset({"scatter_add", "gather", "where"}),
    ),
    (
        "conv_nchwc.c",
        # float32 only: conv_nchwc.OPTIONS, ()
        ("conv_nchwc", "to_nchwc", "from_nchwc", "pool_nchwc", "maxpool_nchwc"),
        False,
        "blocked conv2d",
        frozenset({"conv2d_nchwc", "to_nchwc", "from_nchwc", "global_pool_nchwc", "max_pool2d_nchwc"}),
    ),
)


#: the files of the plugin's own C with several entries: one build (one compiler process, one
#: cache entry) loads them all
FILE_ENTRIES: dict[str, tuple[str, ...]] = {
    name: entries for name, entries, *_ in PREBUILT_OWN if len(entries) > 1
}


def own_builds(ops: Any = ()) -> list[Any]:
    """The builds of :data:`PREBUILT_OWN` that ``ops`` (``(op name, dtype)`` pairs of the
    programs about to run) will ask for and that are not loaded yet, each a zero-argument call
    (``OARLOCK_PREBUILD_OWN=0``: none). A build that fails here says nothing: the first use
    warns and runs numpy. Each call also has ``kernels`` (its entries, for the progress line),
    ``cached()`` (whether the kernel cache holds its binary: it would compile nothing) and
    ``queued()``, which the core calls when it runs the build in the background: until it has
    landed, the plugin's users take their numpy path instead of waiting for it.

    Example::

        for build in own_builds({("matmul", np.dtype("float32"))}):
            build()  # gemm.c's gemm_rows, through the kernel cache
    """
    if _PROGRAM_CACHE is None or os.environ.get("OARLOCK_PREBUILD_OWN", "1").strip().lower() in (
        "0",
        "false",
        "off",
        "no",
    ):
        return []
    out = []
    for name, entries, typed, what, users in PREBUILT_OWN:
        dtypes = {np.dtype(dt) for op, dt in ops if op in users}
        if typed:
            dtypes &= {np.dtype(np.float32), np.dtype(np.float64)}
        options = {own_options(name, dt if typed else None) for dt in dtypes}
        path = Path(__file__).with_name(name)  # as the modules name their sources: the same key
        for opts in sorted(options):
            key = (str(path), entries, opts)
            if key not in _OWN:
                call = functools.partial(_prebuild_one, path, entries, opts, what)
                call.kernels = len(entries)  # type: ignore[attr-defined]  # for the core's progress line
                call.cached = functools.partial(_cached, path, entries, opts)  # type: ignore[attr-defined]
                call.queued = functools.partial(_QUEUED.add, key)  # type: ignore[attr-defined]
                out.append(call)
    return out


def _cached(path: Any, entries: tuple[str, ...], options: tuple[str, ...]) -> bool:
    """Whether the core's kernel cache holds the build of ``entries`` of the file at ``path``."""
    has = getattr(_PROGRAM_CACHE, "has_batch", None)
    if has is None or find_cc() is None:
        return True  # nothing to tell (or nothing to compile with): load or fail now, as before
    try:
        with open(path) as f:
            source = f.read()
        return bool(has(CPUCompiler(), source, entries, options))
    except (CompileError, OSError):
        return True


def _prebuild_one(path: Any, entries: tuple[str, ...], options: tuple[str, ...], what: str) -> None:
    key = (str(path), entries, options)
    try:
        _build_own(key, path, entries, options, what, quiet=True)
    finally:
        _QUEUED.discard(key)


def own_program(path: Any, entry: str, options: tuple[str, ...], what: str, wait: bool = True) -> Any:
    """:func:`own_programs` for one entry: its program, or None. A file of several entries
    (:data:`FILE_ENTRIES`) is built once for all of them."""
    entries = FILE_ENTRIES.get(os.path.basename(str(path)), (entry,))
    if entry not in entries:
        entries = (entry,)
    progs = own_programs(path, entries, options, what, wait)
    return None if progs is None else progs[entries.index(entry)]


def own_options(name: str, dtype: Any = None) -> tuple[str, ...]:
    """The options building the plugin's C file ``name`` (of :data:`PREBUILT_OWN`) for
    ``dtype`` (None: a file not built per dtype): :func:`float_options`, and for
    ``attention.c`` ``-DATTN_NARROW_ONLY`` where its wide vectors do not pay
    (:func:`attention_wide`).

    >>> own_options("attention.c", "float64")[0]
    '-DT_DOUBLE'
    """
    opts = () if dtype is None else float_options(dtype)
    if name == "attention.c" and not attention_wide():
        opts += ("-DATTN_NARROW_ONLY",)
    return opts


def attention_wide() -> bool:
    """Whether attention.c's AVX-512 variant is built and run: ``OARLOCK_CPU_ATTENTION_WIDE``
    (``1``/``0``), else where the CPU has AVX-512 and is not an AMD family 25 (Zen 4, which
    runs 512-bit vectors in two halves: the tiny Llama's 64 heads of 64 x 16, one thread,
    forward 0.256 ms AVX2 against 0.310 wide, backward 0.600 against 0.640; on Zen 5 the wide
    variant gained 10 to 35%, attention.py). Without it the library is half as long to build.
    """
    raw = os.environ.get("OARLOCK_CPU_ATTENTION_WIDE", "").strip()
    if raw in ("0", "1"):
        return raw == "1"
    info = cpu_info()
    zen4 = info.get("vendor_id") == "AuthenticAMD" and info.get("cpu family") == "25"
    return cpu_has("avx512f") and not zen4


def float_options(dtype: Any) -> tuple[str, ...]:
    """The options building the plugin's own C for a float dtype: its ``T`` is float, or
    double with ``-DT_DOUBLE``."""
    return ("-DT_DOUBLE",) if np.dtype(dtype) == np.float64 else ()


def register_compiler(registry: Any) -> None:
    """Register compile access for "cpu", and keep the core's kernel cache for the plugin's own C."""
    global _PROGRAM_CACHE
    registry.add_compiler("cpu", CPUCompiler)
    cache = getattr(registry, "program_cache", None)
    if cache is not None or _PROGRAM_CACHE is None:
        # NOTE: a registry without a kernel cache (a second registration into a bare Registry,
        # as a tool listing the plugin's kernels does) leaves the core's cache in place: without
        # it the plugin's own C was built on the caller's thread instead of in the background
        _PROGRAM_CACHE = cache

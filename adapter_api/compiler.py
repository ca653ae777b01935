"""Compile access: the fourth interface. The core generates kernel source in the plugin's
language; the plugin builds it and launches it.

Calling convention of generated kernels
---------------------------------------
Each generated program is one kernel function, ``entry``, with parameters in this order:
the inputs ``in0, in1, ...`` (const pointers to their element type), then the outputs
``out0, out1, ...``, then the row count ``rows`` last (``int64_t`` in C; ``long`` in OpenCL C;
``long long`` in CUDA). Every tensor is contiguous and viewed as ``rows`` rows of a row length
``N`` baked into the source as a constant, so one binary serves every batch size. Generated
primitives have a symbolic row length: they take ``n`` after ``rows`` (same type), so one
binary serves every shape.
:meth:`Compiler.launch` gets ``args`` in that order: native views (see
``DeviceRuntime.view``; on a host device these are numpy arrays, whose data pointer is the
argument, already offset to the tensor's first element) and numpy scalars (``np.int64(rows)``).
``grid`` is ``(rows,)`` for language ``"c"`` (the function loops over rows itself) and
``(rows * local,)`` with ``local = (L,)`` for ``"opencl-c"`` and ``"cuda"`` (one work-group
of ``L`` items per row).

Flags the generated source expects: C is C99 with ``#pragma omp parallel for`` over rows and
``#pragma omp simd`` along them (build with OpenMP, e.g. ``-fopenmp``, or the pragmas are
ignored and it runs on one thread), ``<math.h>`` functions (link ``-lm``), and optionally
``-DOARLOCK_VECTOR_MATH`` with glibc's ``-lmvec`` for SIMD ``expf``/``logf``; OpenCL C and
CUDA need no flags. ``options`` passed to :meth:`Compiler.compile` come from the core and are
part of the cache key.

Kernel cache
------------
The core caches the bytes :meth:`Compiler.compile` returns, in memory and on disk (under the
user cache folder, ``oarlock/kernels``; ``$OARLOCK_CACHE_DIR`` overrides it), keyed by a
SHA-256 of the language, the compiler's class (module and name: the plugin's identity, so two
plugins whose :meth:`Compiler.identity` strings agree never load each other's binaries),
:meth:`Compiler.identity`, the entry, the options and the source; it turns them back into a
program with :meth:`Compiler.load`. A plugin therefore never caches anything itself; it makes
``identity()`` change whenever compiled output would (compiler version, target, flags).

Sources a plugin writes itself (hand-written C or OpenCL C beside its kernels) go through the
same cache: the core hands it over as ``registry.program_cache`` (a :class:`ProgramCache`) when
the plugin registers, and the plugin builds them with its own compiler through it, so they too
are compiled once per machine and verified when loaded. A plugin never imports the core for
that.

Example::

    class CLCompiler(Compiler):
        language = "opencl-c"
        def identity(self):   return f"{self.device.name} {self.device.driver_version}"
        def compile(self, source, entry, options):
            return cl.Program(self.ctx, source).build(options).binaries[0]
        def load(self, binary, entry):
            return getattr(cl.Program(self.ctx, [self.device], [binary]).build(), entry)
        def launch(self, program, args, grid, local, stream):
            program(stream, grid, local, *args)
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any


class Compiler:
    """Builds and launches generated kernels for one device type.

    Created lazily by the core as ``factory(runtime, device_index)``.
    """

    #: "c", "opencl-c" or "cuda": which emitter the core uses for this device.
    language: str = ""
    #: the most arguments one launch takes (None: the language's own limit). The core cuts a
    #: kernel that merges many fusion groups so that it needs no more.
    max_args: int | None = None

    def identity(self) -> str:
        """A string that changes whenever compiled output would (compiler version, target)."""
        raise NotImplementedError("need identity")

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        """Build ``source`` and return a binary the core can store and :meth:`load` later.

        Raise :class:`adapter_api.CompileError` with the compiler's log on failure; the core
        adds the generated source around the failing line.
        """
        raise NotImplementedError("need compile")

    def load(self, binary: bytes, entry: str) -> Any:
        """Turn a binary from :meth:`compile` into a launchable program for ``entry``."""
        raise NotImplementedError("need load")

    def launch(
        self, program: Any, args: list[Any], grid: tuple[int, ...], local: tuple[int, ...] | None, stream: Any
    ) -> None:
        """Run ``program``. ``args`` are native views (see ``DeviceRuntime.view``) and numpy
        scalars (``np.int64``, ``np.float32``) in the kernel's parameter order. ``grid`` is
        the global work size (CPU: the number of independent rows the C function loops over)."""
        raise NotImplementedError("need launch")

    def bind(
        self, program: Any, args: list[Any], grid: tuple[int, ...], local: tuple[int, ...] | None, stream: Any
    ) -> Callable[[], None] | None:
        """Optional fast path: a zero-argument call that does what :meth:`launch` with these
        arguments does, its arguments converted once (CPU: data pointers cast once; OpenCL:
        ``set_args`` once). The core binds a kernel of a program once and calls the result on
        every run, binding again when an argument's memory changes; the arrays in ``args``
        stay alive while the call is held. ``None`` (the default) makes the core call
        :meth:`launch` each time."""
        return None

    def own_builds(self, ops: Collection[tuple[str, Any]] = ()) -> list[Callable[[], Any]]:
        """Optional: builds of the plugin's own sources (through ``registry.program_cache``)
        that ``ops``, the ``(op name, numpy dtype)`` pairs of programs about to run their
        first time, will ask for and that are not loaded yet, each a zero-argument call. The
        core runs them in its worker threads beside those programs' kernel builds (with a cold
        cache, several compiler processes at once instead of one by one at their first use); a
        call may say how many kernels it builds in an attribute ``kernels`` (default 1), for
        the core's progress line. ``[]`` (the default): none.
        """
        return []


class ProgramCache:
    """The core's kernel cache, for sources a plugin builds itself: compile once per machine,
    then memory and disk (see *Kernel cache* above: keyed by the compiler's class, identity,
    the entry, the options and the source; an entry is verified before it loads).

    The core implements it and hands it to every plugin as ``registry.program_cache`` when the
    plugin registers (it may be None: a core without one, where the plugin builds without a
    cache or does without its own sources). Keep it, and build through it when the sources are
    first needed, not while registering (registering is cheap and touches no device).

    Example::

        @hookimpl
        def oarlock_register(registry):
            global CACHE
            CACHE = registry.program_cache

        def my_program():               # on first use
            return CACHE.get(MyCompiler(), open(SOURCE).read(), "my_kernel", ("-DT_DOUBLE",))
    """

    def get(self, compiler: Compiler, source: str, entry: str, options: tuple[str, ...] = ()) -> Any:
        """The program :meth:`Compiler.load` gives for ``entry`` of ``source`` built by
        ``compiler`` with ``options``: from memory, else from disk, else built and stored.
        Raises :class:`adapter_api.CompileError` (the compiler's log and the source around the
        failing line) when it does not build."""
        raise NotImplementedError("need get")

    def get_batch(
        self, compiler: Compiler, source: str, entries: tuple[str, ...], options: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Every entry of one source built once (one binary, one disk entry): ``{entry: program}``."""
        raise NotImplementedError("need get_batch")

"""Compile access for OpenCL C: the core generates kernels, this builds and launches them."""

from __future__ import annotations

import functools
import hashlib
import warnings
import weakref
from typing import Any

import numpy as np
import pyopencl as cl

from adapter_api import CompileError, Compiler, KernelError

from .errors import build_error, check
from .runtime import CLView, OpenCLRuntime, Recorder, _enqueue, _set_args


class OpenCLCompiler(Compiler):
    """Builds OpenCL C for one device of an :class:`OpenCLRuntime`.

    Kernel parameters: each tensor is one ``__global T*`` parameter (the view's byte offset is
    applied before the launch), each scalar is a numpy scalar of the parameter's C type::

        src = "__kernel void axpy(__global float* y, __global const float* x, float a, long n)"
              " { long i = get_global_id(0); if (i < n) y[i] += a * x[i]; }"
        c = OpenCLCompiler(runtime, 0)
        prg = c.load(c.compile(src, "axpy"), "axpy")
        c.launch(prg, [y_view, x_view, np.float32(2), np.int64(n)], (n,), None, stream)
    """

    language = "opencl-c"

    def __init__(self, runtime: OpenCLRuntime, index: int) -> None:
        self.runtime = runtime
        self.dev = runtime.device(index)
        self._programs: dict[bytes, cl.Program] = {}

    def identity(self) -> str:
        d = self.dev.device
        return (
            f"{self.dev.name} | {d.platform.name} {d.platform.version} | driver "
            f"{d.driver_version} | pyopencl {cl.VERSION_TEXT}"
        )

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        prg = cl.Program(self.dev.context, source)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.CompilerWarning)
                prg.build(options=list(options), devices=[self.dev.device])
        except cl.Error as exc:
            raise build_error(exc, prg, f"kernel '{entry}'", self.dev.device, CompileError) from exc
        if entry not in prg.kernel_names.split(";"):
            raise CompileError(
                f"[opencl] the source builds, but has no kernel '{entry}'; kernels: "
                f"{prg.kernel_names!r}; declare it with __kernel"
            )
        return bytes(prg.binaries[0])

    def load(self, binary: bytes, entry: str) -> cl.Kernel:
        # NOTE: a batch of kernels is one binary loaded once per entry: build it once
        key = hashlib.sha256(binary).digest()
        prg = self._programs.get(key)
        if prg is None:
            prg = cl.Program(self.dev.context, [self.dev.device], [binary])
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    prg.build()
            except cl.Error as exc:
                raise build_error(
                    exc, prg, f"kernel '{entry}' (from binary)", self.dev.device, CompileError
                ) from exc
            self._programs[key] = prg
        with check(f"loading kernel '{entry}'", self.dev.name):
            return cl.Kernel(prg, entry)

    def launch(
        self,
        program: cl.Kernel,
        args: list[Any],
        grid: tuple[int, ...],
        local: tuple[int, ...] | None,
        stream: Any,
    ) -> None:
        q = stream if stream is not None else self.dev.queue
        staged: list[tuple[CLView, cl.Buffer]] = []
        native = self._natives(q, args, staged)
        if native is None:
            bad = next(
                a
                for a in args
                if not isinstance(a, CLView | np.generic | cl.MemoryObjectHolder) and a is not None
            )
            raise KernelError(
                f"[opencl] launch argument {bad!r} ({type(bad).__name__}) is not a "
                f"view or a numpy scalar; pass np.int64(...) / np.float32(...)"
            )
        grid, lo = _geometry(grid, local)
        with check(f"launching '{program.function_name}'", self.dev.name):
            if any(a is None for a in native):
                program(q, grid, lo, *native)
            else:  # the plugin's fast argument setters (pyopencl's generic set_arg is slow)
                self.dev.launch(q, program, grid, lo, *native)
            # NOTE: views at offsets the device cannot address directly ran on a staged copy;
            # copy it back (inputs come back unchanged).
            for view, buf in staged:
                cl.enqueue_copy(q, view.buffer, buf, byte_count=view.nbytes, dst_offset=view.offset)

    def bind(
        self,
        program: cl.Kernel,
        args: list[Any],
        grid: tuple[int, ...],
        local: tuple[int, ...] | None,
        stream: Any,
    ) -> Any:
        """:meth:`launch` as one enqueue: a private kernel object of ``program`` (from a
        pool) whose arguments are set here, once. Declines (None) where a view needs a staged
        copy (an offset the device cannot address) or an argument is not one it takes."""
        q = stream if stream is not None else self.dev.queue
        if type(q) is Recorder:
            return None
        staged: list[Any] = []
        native = self._natives(q, args, staged)
        if native is None or staged or any(a is None for a in native):
            return None
        grid, lo = _geometry(grid, local)
        pool = getattr(program, "oarlock_pool", None)  # private kernels of this program, free
        if pool is None:
            pool = program.oarlock_pool = []
        with check(f"binding '{program.function_name}'", self.dev.name):
            pk = pool.pop() if pool else cl.Kernel(program.program, program.function_name)
            _set_args(pk, tuple(native))
        call = functools.partial(_enqueue, q, pk, grid, lo)
        call.keep = (native, args, program)  # type: ignore[attr-defined]  # a kernel holds no buffers
        weakref.finalize(call, pool.append, pk)
        return call

    def _natives(self, q: Any, args: list[Any], staged: list) -> list[Any] | None:
        """The arguments as the kernel takes them (a view's buffer or sub-buffer, staged when
        its offset is not addressable), or None when one is neither a view nor a scalar."""
        native: list[Any] = []
        for a in args:
            if isinstance(a, CLView):
                native.append(self._buffer(q, a, staged))
            elif isinstance(a, np.generic | cl.MemoryObjectHolder) or a is None:
                native.append(a)
            else:
                return None
        return native

    def _buffer(self, q: Any, view: CLView, staged: list) -> Any:
        if view.offset == 0:
            return view.buffer
        align = self.dev.device.mem_base_addr_align // 8
        if view.offset % align == 0:
            return view.buffer.get_sub_region(view.offset, max(1, view.nbytes))
        buf = self.dev.temp(view.nbytes)
        if view.nbytes:
            cl.enqueue_copy(q, buf, view.buffer, byte_count=view.nbytes, src_offset=view.offset)
        staged.append((view, buf))
        return buf


def _geometry(
    grid: tuple[int, ...], local: tuple[int, ...] | None
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """The global size rounded up to whole work-groups, and the local size (as tuples)."""
    if local is None:
        return tuple(grid), None
    return tuple(-(-g // lo) * lo for g, lo in zip(grid, local)), tuple(local)

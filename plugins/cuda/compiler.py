"""Compile access for CUDA: NVRTC builds the core's generated CUDA C++, cupy loads and launches it.

Generated kernels are ``extern "C" __global__`` functions. :meth:`CUDACompiler.compile` returns
a cubin for the device's architecture (SASS, no driver JIT and no "PTX newer than the driver"
failure), or PTX when the GPU is newer than NVRTC knows; the core caches those bytes on disk.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np

from adapter_api import CompileError, Compiler, OpArgumentError

from .errors import import_cupy, vendor_errors


def _nvrtc() -> Any:
    import_cupy()
    from cupy_backends.cuda.libs import nvrtc

    return nvrtc


class CUDACompiler(Compiler):
    """NVRTC compile, cupy module load, cupy launch.

    Created by the core as ``CUDACompiler(runtime, device_index)``. ``arch`` (``"90"``)
    overrides the target read from the device, which lets the compiler run without a GPU.

    Example::

        cc = CUDACompiler(runtime, 0)
        binary = cc.compile(source, "scale", ())
        fn = cc.load(binary, "scale")
        cc.launch(fn, [x, np.float32(2.0), np.int64(n)], (n,), None, stream)
    """

    language = "cuda"

    def __init__(self, runtime: Any = None, device_index: int = 0, arch: str | None = None) -> None:
        self.runtime = runtime
        self.device_index = device_index
        self._arch = arch
        self._modules: dict[bytes, Any] = {}

    # -- target -------------------------------------------------------------------------
    def arch(self) -> str:
        """Compute capability as digits (``"90"`` for an H100/H200)."""
        if self._arch is None:
            cp = import_cupy()
            with vendor_errors("read the compute capability", device=self.device_index):
                self._arch = str(cp.cuda.Device(self.device_index).compute_capability)
        return self._arch

    def target(self) -> tuple[str, str]:
        """(NVRTC ``-arch`` option, ``"cubin"`` or ``"ptx"``)."""
        arch = int(self.arch())
        with vendor_errors("list NVRTC architectures"):
            supported = [int(a) for a in _nvrtc().getSupportedArchs()]
        if arch in supported:
            return f"-arch=sm_{arch}", "cubin"
        # A GPU newer than this NVRTC: emit PTX for the newest architecture it knows; the
        # driver compiles it for the device.
        older = [a for a in supported if a <= arch]
        return f"-arch=compute_{max(older) if older else min(supported)}", "ptx"

    def identity(self) -> str:
        cp = import_cupy()
        major, minor = _nvrtc().getVersion()
        option, kind = self.target()
        return f"nvrtc {major}.{minor} {option} {kind} cupy {cp.__version__}"

    # -- compile / load / launch --------------------------------------------------------
    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        nvrtc = _nvrtc()
        cp = import_cupy()
        option, kind = self.target()
        opts = (option, "--std=c++17", *include_options(cp), *options)
        with vendor_errors("create an NVRTC program"):
            prog = nvrtc.createProgram(source, f"{entry}.cu", (), ())
        try:
            try:
                nvrtc.compileProgram(prog, opts)
            except nvrtc.NVRTCError as exc:
                log = nvrtc.getProgramLog(prog)
                raise CompileError(
                    f"[cuda] NVRTC could not compile kernel '{entry}' for {option}, {exc}; "
                    f"fix the source (compiler log below)\n{log}"
                ) from exc
            with vendor_errors(f"read the {kind} of '{entry}'"):
                return bytes(nvrtc.getCUBIN(prog) if kind == "cubin" else nvrtc.getPTX(prog))
        finally:
            nvrtc.destroyProgram(prog)

    def load(self, binary: bytes, entry: str) -> Any:
        cp = import_cupy()
        if not binary.startswith(b"\x7fELF") and not binary.endswith(b"\0"):
            binary = binary + b"\0"  # the driver reads PTX as a C string
        with cp.cuda.Device(self.device_index):
            # NOTE: a batch of kernels is one module loaded once per entry: load it once
            key = hashlib.sha256(binary).digest()
            module = self._modules.get(key)
            if module is None:
                module = cp.cuda.function.Module()
                with vendor_errors(
                    f"load the module of '{entry}'",
                    "clear the kernel cache and retry",
                    device=self.device_index,
                ):
                    module.load(binary)
                self._modules[key] = module
            try:
                return module.get_function(entry)
            except Exception as exc:
                raise CompileError(
                    f"[cuda] kernel '{entry}' is not in the compiled module, {type(exc).__name__}: {exc}; "
                    'declare it extern "C" __global__ with that name'
                ) from exc

    def launch(
        self, program: Any, args: list[Any], grid: tuple[int, ...], local: tuple[int, ...] | None, stream: Any
    ) -> None:
        for i, a in enumerate(args):
            if isinstance(a, (bool, int, float)):
                raise OpArgumentError(
                    f"[cuda] launch argument {i} is a Python {type(a).__name__} ({a!r}); pass a numpy "
                    "scalar such as np.int64 or np.float32 so the kernel parameter type is explicit"
                )
        threads, block = launch_shape(grid, local)
        if 0 in threads:
            return
        blocks = tuple((t + b - 1) // b for t, b in zip(threads, block))
        cp = import_cupy()
        with (
            cp.cuda.Device(self.device_index),
            vendor_errors("launch a generated kernel", device=self.device_index),
        ):
            if stream is None:
                stream = (
                    self.runtime.default_stream(self.device_index)
                    if self.runtime
                    else cp.cuda.get_current_stream()
                )
            program(blocks, block, tuple(args), stream=stream)


def include_options(cp: Any) -> tuple[str, ...]:
    """``-I`` options for cupy's headers and the CUDA headers (``cuda_fp16.h``, ``cuda_bf16.h``):
    the toolkit cupy found, else the ``nvidia-*`` pip wheels."""
    dirs = [os.path.join(os.path.dirname(cp.__file__), "_core", "include")]
    try:
        cuda_path = cp.cuda.get_cuda_path()
    except Exception:  # noqa: BLE001 — no toolkit is fine, NVRTC has its builtins
        cuda_path = None
    roots = [cuda_path, os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME")]
    found = [
        os.path.join(r, "include")
        for r in roots
        if r and os.path.isfile(os.path.join(r, "include", "cuda_fp16.h"))
    ]
    if found:
        dirs.append(found[0])
    else:
        try:
            import nvidia

            for root in nvidia.__path__:
                for sub in sorted(os.listdir(root)):
                    inc = os.path.join(root, sub, "include")
                    if os.path.isfile(os.path.join(inc, "cuda_fp16.h")):
                        dirs.append(inc)
        except Exception:  # noqa: BLE001
            pass
    return tuple(f"-I{d}" for d in dirs)


def launch_shape(
    grid: tuple[int, ...], local: tuple[int, ...] | None
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Global work size and block size as 3-tuples. Without ``local``: 256 threads along x."""
    if not 1 <= len(grid) <= 3:
        raise OpArgumentError(
            f"[cuda] launch grid must have 1 to 3 dimensions, got {grid!r}; pass (n,), (x, y) or (x, y, z)"
        )
    threads = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    if local is None:
        block = (max(1, min(256, threads[0])), 1, 1)
    else:
        block = tuple(int(v) for v in local) + (1,) * (3 - len(local))
    if int(np.prod(block)) > 1024:
        raise OpArgumentError(f"[cuda] block of {block} has more than 1024 threads; use a smaller local size")
    return threads, block  # type: ignore[return-value]

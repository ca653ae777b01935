"""Compile access: the fourth interface. The core generates kernel source in the plugin's
language; the plugin builds it and launches it.

The core caches the bytes :meth:`Compiler.compile` returns, on disk, keyed by a hash of the
source, :meth:`Compiler.identity` and the options, and turns them back into a program with
:meth:`Compiler.load`. A plugin therefore never caches anything itself.

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

from typing import Any


class Compiler:
    """Builds and launches generated kernels for one device type.

    Created lazily by the core as ``factory(runtime, device_index)``.
    """

    #: "c", "opencl-c" or "cuda": which emitter the core uses for this device.
    language: str = ""

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

    def launch(self, program: Any, args: list[Any], grid: tuple[int, ...], local: tuple[int, ...] | None, stream: Any) -> None:
        """Run ``program``. ``args`` are native views (see ``DeviceRuntime.view``) and numpy
        scalars (``np.int64``, ``np.float32``) in the kernel's parameter order. ``grid`` is
        the global work size (CPU: the number of independent rows the C function loops over)."""
        raise NotImplementedError("need launch")

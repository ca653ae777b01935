"""What a plugin registers: the object handed to its ``oarlock_register`` hook.

Registering is cheap bookkeeping: no device is touched until the core first uses one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .compiler import ProgramCache

#: A kernel: ``fn(ctx, outs, ins, **attrs)``. ``outs`` and ``ins`` are lists of native views
#: (see ``DeviceRuntime.view``) of contiguous buffers the core allocated; the kernel writes
#: its results into ``outs`` and returns nothing. A kernel may raise
#: ``adapter_api.KernelNotFoundError`` for an attribute combination it does not support (a
#: cast to a dtype the device cannot hold, say); the core then treats it as missing.
Kernel = Callable[..., None]

#: A kernel's binder (optional, for static programs): ``bind(ctx, outs, ins, **attrs)``
#: returns a zero-argument callable that does what ``fn(ctx, outs, ins, **attrs)`` does for
#: exactly these arrays, and may do it faster (a numpy ufunc with its arrays and ``out``
#: already bound, say). The executor binds each instruction of a static program once and
#: binds again only when an array changes, so the per-call work the binder removes (context
#: tests, attribute unpacking, dtype checks) is never paid on the hot path. The callable must
#: launch on ``ctx.stream`` as the kernel would; return None to decline (the executor then
#: calls ``fn``). Memory the binder allocates for the call (scratch) belongs to the callable:
#: the executor keeps a callable alive while anything may still run it (a captured graph
#: included), so freeing that memory when the callable dies is safe.
Binder = Callable[..., Callable[[], None] | None]


@dataclass
class KernelContext:
    """Passed to every kernel call."""

    device_index: int
    stream: Any
    runtime: Any


@dataclass
class KernelEntry:
    """One registered kernel for one (op, device type, dtype)."""

    fn: Kernel
    plugin: str
    broadcast: bool = False  #: accepts inputs broadcastable to the output shape
    bind: Binder | None = None  #: optional fast path for static programs (see :data:`Binder`)
    #: registered with ``override=True`` for a device type another plugin owns
    override: bool = False


@dataclass
class Registry:
    """Collects what plugins register. One instance is shared by all plugins; ``plugin`` is
    set by the core while each plugin's hook runs, so every entry knows where it came from."""

    runtimes: dict[str, tuple[str, Callable[[], Any]]] = field(default_factory=dict)
    kernels: dict[tuple[str, str, np.dtype], KernelEntry] = field(default_factory=dict)
    communicators: dict[str, tuple[str, Callable[..., Any]]] = field(default_factory=dict)
    compilers: dict[str, tuple[str, Callable[..., Any]]] = field(default_factory=dict)
    #: kernels, compilers and communicators registered with ``override=True`` for a device type
    #: another plugin owns: ``(plugin, what, device_type)``, what ``oarlock devices`` lists
    overrides: list[tuple[str, str, str]] = field(default_factory=list)
    plugin: str = "?"
    #: the core's kernel cache (:class:`adapter_api.ProgramCache`), for sources a plugin builds
    #: itself; set by the core before any plugin registers (None: the core offers none)
    program_cache: ProgramCache | None = None

    def add_runtime(self, device_type: str, factory: Callable[[], Any]) -> None:
        """Register the :class:`DeviceRuntime` (class or factory) for ``device_type``."""
        if not device_type.isidentifier() or ":" in device_type:
            raise ValueError(
                f"[registry] plugin '{self.plugin}': device type must be a plain name such as "
                f"'opencl', got {device_type!r}"
            )
        if device_type in self.runtimes:
            other = self.runtimes[device_type][0]
            raise ValueError(
                f"[registry] plugin '{self.plugin}' registers device type '{device_type}', "
                f"already registered by plugin '{other}'; pick another name or uninstall one"
            )
        self.runtimes[device_type] = (self.plugin, factory)

    def _owned(self, what: str, device_type: str, override: bool) -> bool:
        """Whether this plugin may register ``what`` for ``device_type``: the device type is its
        own (it registered the runtime), or the registration says ``override=True`` (recorded).
        Returns True for an override."""
        owner = self.runtimes.get(device_type, ("", None))[0]
        if owner == self.plugin:
            return False
        if not override:
            whose = f"owned by plugin '{owner}'" if owner else "which no plugin has registered (yet)"
            raise ValueError(
                f"[registry] plugin '{self.plugin}' registers {what} for device type '{device_type}', "
                f"{whose}; a plugin registers only for the device types whose runtime it registers "
                f"(call add_runtime first), or declares the replacement with override=True (then "
                f"`oarlock devices` lists it)"
            )
        entry = (self.plugin, what, device_type)
        if entry not in self.overrides:
            self.overrides.append(entry)
        return True

    def add_kernel(
        self,
        op: str,
        device_type: str,
        dtypes: Iterable[Any],
        fn: Kernel,
        *,
        broadcast: bool = False,
        bind: Binder | None = None,
        override: bool = False,
    ) -> None:
        """Register ``fn`` as the kernel of ``op`` on ``device_type`` for each dtype in
        ``dtypes``: the op's dispatch dtype, which is the dtype of its first tensor input,
        except ``where`` (the dtype of ``x``, its second input: the condition is always bool)
        and ops with no tensor input (the dtype of the output); ``PrimitiveSpec.key_input``
        says which. A later registration replaces an earlier one.

        With ``broadcast=True`` elementwise kernels receive inputs of the output's rank whose
        sizes are equal to the output's or 1; otherwise the core expands them first.

        ``bind`` (optional) is the kernel's fast path for static programs: see :data:`Binder`.

        A plugin registers kernels only for the device types it owns (whose runtime it
        registered); ``override=True`` declares a kernel for another plugin's device type,
        which ``oarlock devices`` and ``fw.plugins()`` then list, and which the owner's own
        registration, loaded before or after, does not replace. Anything else raises
        ``ValueError`` naming both plugins.
        """
        dtypes = [np.dtype(dt) for dt in dtypes]
        over = self._owned(f"kernel '{op}' ({', '.join(d.name for d in dtypes)})", device_type, override)
        for dt in dtypes:
            old = self.kernels.get((op, device_type, dt))
            if old is not None and old.override and not over and old.plugin != self.plugin:
                continue  # a declared override stays, whichever plugin loaded first
            self.kernels[(op, device_type, dt)] = KernelEntry(fn, self.plugin, broadcast, bind, over)

    def add_communicator(
        self, device_type: str, factory: Callable[..., Any], *, override: bool = False
    ) -> None:
        """Register the :class:`Communicator` class (or factory) for ``device_type``, a device
        type this plugin owns (or with ``override=True``, as :meth:`add_kernel`)."""
        self._owned("a communicator", device_type, override)
        self.communicators[device_type] = (self.plugin, factory)

    def add_compiler(self, device_type: str, factory: Callable[..., Any], *, override: bool = False) -> None:
        """Register the :class:`Compiler` class (or factory) for ``device_type``, a device type
        this plugin owns (or with ``override=True``, as :meth:`add_kernel`); the core calls
        ``factory(runtime, device_index)`` the first time it compiles for that device (one
        compiler per device index)."""
        self._owned("a compiler", device_type, override)
        self.compilers[device_type] = (self.plugin, factory)

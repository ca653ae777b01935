"""Dispatch: find the kernel for (op, device type, dtype), allocate outputs, call it.

A primitive with no registered kernel may get one from a :data:`KERNEL_SOURCES` entry (the
compiler's generated primitives); one with no kernel at all falls back to the CPU plugin (copy in, run, copy out)
with one warning per (op, device type) and counters in ``fw.fallback_stats()``;
``OARLOCK_STRICT_KERNELS=1`` (or ``fw.set_strict_kernels(True)``) makes it an error.
"""

from __future__ import annotations

import contextvars
import math
import warnings
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import (
    DeviceMismatchError,
    KernelContext,
    KernelEntry,
    KernelError,
    KernelNotFoundError,
    OarlockError,
    takes_attr,
)

from . import device as _dev
from . import dtypes as _dt
from . import env
from . import fastcall as _fastcall
from . import plugins as _plugins
from .opdef import OPS
from .plugins import host
from .tensor import Tensor

if TYPE_CHECKING:
    from .opdef import OpDef

_KCACHE: dict[tuple[str, str, np.dtype], KernelEntry | None] = {}
#: the dispatch decision of :func:`run` for (op, device name, key dtype): the registered (or
#: generated) kernel and the device's state; kernels only (a fallback decides each call).
#: Cleared with the kernel cache (a plugin registered) and on a stream change (the state).
_DECIDED: dict[tuple[OpDef, str, np.dtype], tuple[KernelEntry, _DeviceState]] = {}
_MISS = object()
_FALLBACKS: Counter[tuple[str, str]] = Counter()
_WARNED: set[tuple[str, str]] = set()
#: Strict mode: a missing kernel is an error instead of a CPU fallback. A context variable (each
#: thread starts from OARLOCK_STRICT_KERNELS); ``fw.set_strict_kernels`` sets it.
_STRICT_DEFAULT: bool = env.flag("OARLOCK_STRICT_KERNELS")
STRICT_KERNELS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "oarlock_strict_kernels", default=_STRICT_DEFAULT
)
CPU = "cpu"

#: Debug mode: every output is filled with a poison before its kernel runs, so an element the
#: kernel never writes shows (as NaN, or an unlikely integer) instead of passing with whatever
#: the memory held before. A context variable (each thread starts from
#: ``OARLOCK_POISON_OUTPUTS``); ``framework.testing.poison_outputs`` sets it, and the
#: conformance runner turns it on in every case.
_POISON_DEFAULT: bool = env.flag("OARLOCK_POISON_OUTPUTS")
POISON_OUTPUTS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "oarlock_poison_outputs", default=_POISON_DEFAULT
)
#: the poison bytes: 0xFF makes a NaN of every floating dtype (a payload real arithmetic
#: does not produce); 0xA5 an integer far from sample values, and a bool that is neither 0 nor 1
POISON_FLOAT_BYTE = 0xFF
POISON_INT_BYTE = 0xA5


def poison_byte(dtype: np.dtype) -> int:
    """The byte :data:`POISON_OUTPUTS` fills outputs of ``dtype`` with."""
    return POISON_FLOAT_BYTE if dtype.kind == "f" or dtype.name == "bfloat16" else POISON_INT_BYTE


class FallbackWarning(UserWarning):
    """Warned once per (op, device type) run on the CPU plugin because the device's plugin lacks the kernel.

    A ``UserWarning``; :func:`fallback_stats` counts the fallbacks, and
    ``fw.set_strict_kernels(True)`` (or ``OARLOCK_STRICT_KERNELS=1``) makes them errors.

    Example:
        >>> import framework as fw, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("error", fw.FallbackWarning)  # a fallback would raise here
        ...     (fw.ones([2]) + 1).tolist()
        [2.0, 2.0]
    """


def clear_kernel_cache() -> None:
    _KCACHE.clear()
    _TAKES.clear()
    _STATE.clear()
    _DECIDED.clear()
    _forget_plans()


def _forget_plans() -> None:
    """Drop the fast path's cached plans (``fastcall.c``), which hold kernels and device state."""
    mod = _fastcall.LOADED[0]
    if mod is not None:
        mod.invalidate()


_plugins.on_registry_change(clear_kernel_cache)


def set_strict_kernels(flag: bool) -> None:
    """Make an op without a kernel on the device an error instead of a CPU fallback (or allow it again).

    The flag is per thread (a context variable); it starts from ``OARLOCK_STRICT_KERNELS``.
    With it set, a missing kernel raises :class:`KernelNotFoundError`.

    Args:
        flag (bool): True: strict; False: fall back to the CPU plugin with a
            :class:`FallbackWarning`.

    Example:
        >>> import framework as fw
        >>> fw.set_strict_kernels(True)
        >>> (fw.ones([2]) * 3).tolist()  # the cpu plugin has the kernel
        [3.0, 3.0]
        >>> fw.set_strict_kernels(False)
    """
    STRICT_KERNELS.set(bool(flag))


def fallback_stats() -> dict[str, int]:
    """How many times each op fell back to the CPU plugin since start (or :func:`reset_fallback_stats`).

    Returns:
        dict[str, int]: ``{"op@device_type": count}``, sorted; empty when every op found a
        kernel on its device.

    Example:
        >>> import framework as fw
        >>> fw.reset_fallback_stats()
        >>> _ = fw.ones([2]) + 1  # the cpu plugin has every kernel: no fallback
        >>> fw.fallback_stats()
        {}
    """
    return {f"{op}@{dt}": n for (op, dt), n in sorted(_FALLBACKS.items())}


def reset_fallback_stats() -> None:
    """Clear the CPU-fallback counts of :func:`fallback_stats` (and warn again on the next fallback).

    Example:
        >>> import framework as fw
        >>> fw.reset_fallback_stats()
        >>> fw.fallback_stats()
        {}
    """
    _FALLBACKS.clear()
    _WARNED.clear()


#: Where kernels come from when the device's plugin registers none: ``fn(op, device_type,
#: dtype) -> KernelEntry | None``. ``framework.compiler`` adds one (generated primitives for a
#: plugin with compile access), so the order is registered kernel, generated, CPU fallback.
KERNEL_SOURCES: list[Callable[[str, str, np.dtype], KernelEntry | None]] = []


#: Interceptors of ops on distributed tensors: ``fn(op, ins, attrs) -> outs | None``.
#: ``framework.distributed`` registers one when it makes its first distributed tensor (a
#: tensor whose class sets ``_dist``); :func:`intercept` hands it every op with such an input.
#: The engine knows no distributed type: with no interceptor registered the cost is one test.
INTERCEPTORS: list[Callable[[OpDef, list[Any], dict[str, Any]], Any]] = []


def intercept(op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> Any:
    """The interceptor's result when an input of ``op`` is distributed, else None (for a
    composite the interceptor may return None too: its decomposition runs, op by op)."""
    for t in ins:
        if getattr(t, "_dist", False):
            return INTERCEPTORS[0](op, ins, attrs)
    return None


def find_kernel(op: str, device_type: str, dtype: np.dtype) -> KernelEntry | None:
    key = (op, device_type, dtype)
    try:
        return _KCACHE[key]
    except KeyError:
        e = host().registry.kernels.get(key)
        for source in KERNEL_SOURCES if e is None else ():
            e = source(op, device_type, dtype)
            if e is not None:
                break
        _KCACHE[key] = e
        return e


def kernel_takes(op: str, attr: str, device_type: str, dtype: np.dtype) -> bool:
    """Whether the kernel ``op`` runs on ``device_type`` for ``dtype`` takes ``attr``, an
    attribute added to the contract after 1.0 (``adapter_api.ATTRS_SINCE``): its plugin declares
    that contract or a newer one. No kernel (the cpu plugin's fallback) or one the core
    generated (no plugin record): True."""
    key = (op, attr, device_type, dtype)
    hit = _TAKES.get(key)
    if hit is None:  # looked up once per kernel, as find_kernel's entries are (cleared with them)
        entry = find_kernel(op, device_type, dtype)
        rec = host().records.get(entry.plugin) if entry is not None else None
        hit = _TAKES[key] = takes_attr(rec.contract if rec is not None else None, op, attr)
    return hit


_TAKES: dict[tuple[str, str, str, np.dtype], bool] = {}


class _DeviceState:
    """What every op on one device needs, looked up once: allocator, runtime, kernel context."""

    __slots__ = ("alloc", "runtime", "ctx", "view")

    def __init__(self, dev: _dev.Device) -> None:
        dt = _dev.device_type(dev.type)
        self.alloc = dt.allocator(dev.index)
        self.runtime = dt.runtime
        self.view = dt.runtime.view
        self.ctx = KernelContext(dev.index, dt.stream(dev.index), dt.runtime)


#: by the device's name: a str key hashes in C (a Device's ``__hash__`` is a Python call per op)
_STATE: dict[str, _DeviceState] = {}
_dev.on_stream_change(_STATE.clear)
_dev.on_stream_change(_DECIDED.clear)
_dev.on_stream_change(_forget_plans)


def state(dev: _dev.Device) -> _DeviceState:
    s = _STATE.get(dev._name)
    if s is None:
        s = _STATE[dev._name] = _DeviceState(dev)
    return s


def context(dev: _dev.Device) -> KernelContext:
    return state(dev).ctx


def check_same_device(op: str, ins: list[Tensor]) -> _dev.Device:
    dev = ins[0].device
    for i, t in enumerate(ins):
        if t.device is not dev and t.device != dev:
            raise DeviceMismatchError(
                f"[{op}] input 0 is on {dev} but input {i} is on {t.device}; move one with "
                f"x.to('{dev}') so all inputs of one op are on one device"
            )
    return dev


_tuple_eq, _tuple_ne = tuple.__eq__, tuple.__ne__


def run(
    op: OpDef,
    ins: list[Tensor],
    attrs: dict[str, Any],
    dev: _dev.Device | None = None,
    metas: list | None = None,
) -> list[Tensor]:
    """Run primitive ``op`` on ``ins`` (already promoted to the op's dtypes). Ops without
    tensor inputs pass ``dev``; ``metas`` overrides the shape rule (``arange``)."""
    if dev is None:
        dev = ins[0].device
        for t in ins:
            if t.device is not dev:
                dev = check_same_device(op.name, ins)
                break
    if metas is None:
        metas = op.infer(ins, attrs)
    key_dtype = ins[op.spec.key_input if op.spec else 0].dtype if ins else metas[0][1]  # where: x's dtype
    decided = _DECIDED.get((op, dev._name, key_dtype))
    if decided is None:
        entry = _KCACHE.get((op.name, dev.type, key_dtype), _MISS)
        if entry is _MISS:
            entry = find_kernel(op.name, dev.type, key_dtype)
        if entry is None:
            return _fallback(op, ins, attrs, dev, key_dtype, metas)
        decided = _DECIDED[(op, dev._name, key_dtype)] = (entry, _STATE.get(dev._name) or state(dev))
    entry, st = decided
    if op.elementwise:
        shape = metas[0][0]
        # NOTE: inputs of the output's shape (the common case, often the same object) need
        # nothing; tuple.__ne__ skips Size's list-aware comparison (a Python call) on this path
        for t in ins:
            if t.shape is not shape and _tuple_ne(t.shape, shape):
                if not entry.broadcast:
                    ins = [u if _tuple_eq(u.shape, shape) else op_expand(u, shape) for u in ins]
                else:  # a kernel that broadcasts: each input of the output's rank
                    rank = len(shape)
                    for u in ins:
                        if len(u.shape) != rank:
                            ins = _to_rank(ins, rank)
                            break
                break
    if len(metas) == 1:
        shape, dtype = metas[0]
        o = Tensor._make(st.alloc.malloc(math.prod(shape) * dtype.itemsize), 0, shape, dtype, dev)
        o._nv = st.view(o._block.handle, 0, shape, dtype)
        outs = [o]
        nouts = [o._nv]
    else:
        malloc = st.alloc.malloc
        view = st.view
        outs = []
        nouts = []
        for shape, dtype in metas:
            o = Tensor._make(malloc(math.prod(shape) * dtype.itemsize), 0, shape, dtype, dev)
            o._nv = nv = view(o._block.handle, 0, shape, dtype)
            outs.append(o)
            nouts.append(nv)
    if POISON_OUTPUTS.get():
        for o in outs:
            nbytes = math.prod(o.shape) * o.dtype.itemsize
            if nbytes:
                st.runtime.memset(
                    dev.index, o._block.handle, o._offset, poison_byte(o.dtype), nbytes, st.ctx.stream
                )
    try:
        nins = []  # NOTE: a loop, not a comprehension (one Python frame less per op)
        for t in ins:
            nins.append(t._nv if t._nv is not None else t.native())
        entry.fn(st.ctx, nouts, nins, **attrs)
    except Exception as exc:  # noqa: BLE001 — handled as the contract says (kernel_failed)
        return kernel_failed(op, entry, ins, attrs, dev, key_dtype, metas, exc)
    return outs


def kernel_failed(
    op: OpDef,
    entry: KernelEntry,
    ins: list[Tensor],
    attrs: dict[str, Any],
    dev: _dev.Device,
    key_dtype: np.dtype,
    metas: list,
    exc: Exception,
) -> list[Tensor]:
    """What a kernel's exception means: declined attributes (``KernelNotFoundError``, e.g. a
    cast to a dtype the device cannot hold) fall back; the core's own errors pass; any other
    (a vendor kernel's failure) becomes a ``KernelError`` naming the op, plugin and inputs."""
    if isinstance(exc, KernelNotFoundError):
        return _fallback(op, ins, attrs, dev, key_dtype, metas)
    if isinstance(exc, OarlockError):
        raise exc
    shapes = ", ".join(f"{t.dtype}{list(t.shape)}" for t in ins)
    raise KernelError(
        f"[{op.name}] kernel of plugin '{entry.plugin}' failed on {dev} for inputs ({shapes}), "
        f"attrs {attrs}: {type(exc).__name__}: {exc}; report it to the plugin's vendor, or run "
        f"on another device"
    ) from exc


# -- the C fast path of binary operators (fastcall.c) ----------------------------------------
def fast_binary_plan(op: OpDef, x: Tensor, y: Tensor, out_of: int = 0) -> tuple | None:
    """What ``fastcall.c`` needs to run ``op(x, y)`` (one dtype, device and shape, no mode
    active; the other operand of the shape of ``(x, y)[out_of]``, or of its rank for a kernel
    that broadcasts: a scalar's constant, on the left for ``2.0 - x``) as :func:`run` would,
    cached there per (op, dtype, device) until :func:`clear_kernel_cache` or a stream change:
    ``(entry, kernel, allocator, its malloc, view, kernel context, output dtype, its item size)``; None where :func:`run` does more than look up the
    kernel, allocate one output of the inputs' shape and call it (no kernel: the fallback
    decides each call; a shape rule that raises or gives another shape)."""
    if not op.elementwise or op.kind != "primitive":
        return None
    try:
        metas = op.infer([x, y], {})
    except Exception:  # noqa: BLE001 — the Python path raises it, with its message
        return None
    full, other = (x, y) if out_of == 0 else (y, x)
    if len(metas) != 1 or _tuple_ne(tuple(metas[0][0]), tuple(full.shape)):
        return None
    dtype = metas[0][1]
    key_dtype = (x, y)[op.spec.key_input if op.spec else 0].dtype
    entry = find_kernel(op.name, x.device.type, key_dtype)
    if entry is None:
        return None
    if _tuple_ne(tuple(other.shape), tuple(full.shape)) and not (
        entry.broadcast and len(other.shape) == len(full.shape)
    ):
        return None  # run would expand the other operand first
    st = state(x.device)
    return (entry, entry.fn, st.alloc, st.alloc.malloc, st.view, st.ctx, dtype, dtype.itemsize)


def fast_unary_plan(op: OpDef, x: Tensor) -> tuple | None:
    """:func:`fast_binary_plan` of a unary element-wise primitive ``op(x)``: the output of x's
    shape, or None (the Python path)."""
    if not op.elementwise or op.kind != "primitive":
        return None
    try:
        metas = op.infer([x], {})
    except Exception:  # noqa: BLE001 — the Python path raises it, with its message
        return None
    if len(metas) != 1 or _tuple_ne(tuple(metas[0][0]), tuple(x.shape)):
        return None
    entry = find_kernel(op.name, x.device.type, x.dtype)
    if entry is None:
        return None
    dtype = metas[0][1]
    st = state(x.device)
    return (entry, entry.fn, st.alloc, st.alloc.malloc, st.view, st.ctx, dtype, dtype.itemsize)


def fast_failed(op: OpDef, plan: tuple, ins: list[Tensor], exc: Exception) -> list[Tensor]:
    """The fast path's kernel raised ``exc``: the same handling as in :func:`run`."""
    dev = ins[0].device
    return kernel_failed(op, plan[0], ins, {}, dev, ins[0].dtype, op.infer(ins, {}), exc)


def _to_rank(ins: list[Tensor], rank: int) -> list[Tensor]:
    """The inputs of an element-wise kernel that broadcasts, each of the output's ``rank``."""
    return [u if len(u.shape) == rank else u._reshaped((1,) * (rank - len(u.shape)) + u.shape) for u in ins]


def op_expand(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    if len(t.shape) < len(shape):
        t = t._reshaped((1,) * (len(shape) - len(t.shape)) + t.shape)
    return run(OPS["expand"], [t], {"shape": tuple(shape)})[0]


def _fallback(
    op: OpDef, ins: list[Tensor], attrs: dict[str, Any], dev: _dev.Device, dtype: np.dtype, metas: list
) -> list[Tensor]:
    key = (op.name, dev.type)
    if _dt.is_float8(dtype) and find_kernel(op.name, CPU, dtype) is None:
        raise KernelNotFoundError(_dt.storage_only_error(op.name, dtype))
    if dev.type == CPU or find_kernel(op.name, CPU, dtype) is None:
        where = "" if dev.type == CPU else " nor on the cpu plugin"
        raise KernelNotFoundError(
            f"[{op.name}] no kernel for dtype {dtype} on {dev}{where}; cast the input to a supported "
            f"dtype, or use a device whose plugin registers it (see `oarlock devices`)"
        )
    if STRICT_KERNELS.get():
        raise KernelNotFoundError(
            f"[{op.name}] the '{dev.type}' plugin registers no kernel for dtype {dtype}, and strict "
            f"mode (OARLOCK_STRICT_KERNELS=1) forbids the CPU fallback; register the kernel or turn strict mode off"
        )
    _FALLBACKS[key] += 1
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(
            f"[{op.name}] no kernel on '{dev.type}' for dtype {dtype}; running it on the cpu plugin "
            f"(copy in, run, copy out). fw.fallback_stats() counts these.",
            FallbackWarning,
            stacklevel=4,
        )
    cpu = _dev.parse(CPU)
    outs = run(op, [_to_cpu(t, cpu) for t in ins], attrs, cpu, metas)
    return [copy_to(o, dev) for o in outs]


def _to_cpu(t: Tensor, cpu: _dev.Device) -> Tensor:
    from .tensor import from_numpy_copy

    return from_numpy_copy(t.numpy(), cpu)


def copy_to(t: Tensor, dev: _dev.Device) -> Tensor:
    """Copy a tensor to another device through the host (no graph recorded)."""
    from .tensor import from_numpy_copy

    return from_numpy_copy(t.numpy(), dev)

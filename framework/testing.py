"""Testing a device the way the conformance suite does: run one op, compare, look inside.

The public harness behind ``oarlock conformance`` (and what a vendor's own tests can use):

* **Tolerances** — one table per dtype (:data:`TOLERANCES`, :func:`tolerance`) for results
  rounded once from a wider computation, and one for gradients checked against finite
  differences (:data:`GRADIENT_TOLERANCES`). The conformance tiers, the OpenCL kernel tests and
  the core's device tests all read these.
* **Comparison** — :func:`compare` gives the count of wrong elements, the largest absolute and
  relative error among finite ones, NaN/infinity mismatches and the first wrong index;
  :func:`assert_close` raises :class:`CheckFailure` with that report and short "expected" /
  "got" texts.
* **Running ops** — :func:`put` places numpy data on a device, optionally inside a larger
  buffer (an offset view, guard bytes around it); :func:`run_op` runs an op by name through
  the public path (dispatch, autograd, fused/generated/decomposed for composites);
  :func:`run_primitive` runs a primitive through the dispatcher only; :func:`run_kernel_guarded`
  calls the device's own kernel with outputs surrounded by guard bytes and fails when the
  kernel wrote outside them.
* **Introspection** — :func:`parse_device`, :func:`runtime_of`, :func:`registry`,
  :func:`plugin_of`, :func:`find_kernel`, :func:`clear_kernel_cache`, :func:`op_names`, plus
  the counters :func:`fallback_stats` and :func:`op_path_stats`.

>>> import numpy as np
>>> from framework import testing
>>> x = testing.put(np.arange(4, dtype=np.float32), "cpu", offset_elems=3)  # an offset view
>>> (y,) = testing.run_kernel_guarded("neg", [x], {}, "cpu")
>>> testing.assert_close(y.numpy(), -np.arange(4, dtype=np.float32), **testing.tolerance("float32").kw, what="neg")
>>> testing.compare(np.float32([1, 2.5]), np.float32([1, 2]), 1e-5, 1e-6).first_index
(1,)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from adapter_api import KernelEntry, Registry

from ._src import device as _dev
from ._src import dispatch as _dispatch
from ._src.dispatch import fallback_stats, reset_fallback_stats
from ._src.ops import base as _base
from ._src.ops.base import path_stats as op_path_stats
from ._src.plugins import host as _host
from ._src.tensor import Tensor

__all__ = [
    "GRADIENT_TOLERANCES",
    "GUARD_BYTE",
    "TOLERANCES",
    "CheckFailure",
    "Comparison",
    "RuntimeHandle",
    "Tolerance",
    "assert_close",
    "clear_kernel_cache",
    "compare",
    "fallback_stats",
    "find_kernel",
    "finite_difference",
    "gradient_by_decomposition",
    "gradient_tolerance",
    "op_names",
    "op_path_stats",
    "parse_device",
    "plugin_of",
    "poison_outputs",
    "put",
    "registry",
    "reset_fallback_stats",
    "run_kernel_guarded",
    "run_op",
    "run_primitive",
    "runtime_of",
    "tolerance",
    "unwritten",
]


# -- tolerances ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tolerance:
    """Allowed error ``atol + rtol * |expected|``; ``kw`` spreads it into :func:`assert_close`."""

    rtol: float
    atol: float

    @property
    def kw(self) -> dict[str, float]:
        return {"rtol": self.rtol, "atol": self.atol}

    def scaled(self, scale: float) -> Tolerance:
        return Tolerance(self.rtol * scale, self.atol * scale)


#: Base tolerance per floating dtype: about two units in the last place (a result rounded once
#: from a wider computation is within one). Integers and bools compare exactly.
TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-12, 1e-14),
    "float32": Tolerance(1e-5, 1e-6),
    "float16": Tolerance(2e-3, 1e-3),
    "bfloat16": Tolerance(1.6e-2, 1e-2),
}

#: Tolerance per dtype the device differentiates in, for an autograd gradient compared with
#: central finite differences of a float64 reference (the differences carry their own error).
GRADIENT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-6, 1e-7),
    "float32": Tolerance(2e-3, 2e-4),
}


def _dtype_name(dtype: Any) -> str:
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def tolerance(dtype: Any, scale: float = 1.0) -> Tolerance:
    """The value tolerance of ``dtype`` times ``scale`` (ops that round several times ask for
    more); ``Tolerance(0, 0)`` — exact — for integers and bool.

    >>> tolerance("float16")
    Tolerance(rtol=0.002, atol=0.001)
    >>> tolerance("int32", 10)
    Tolerance(rtol=0.0, atol=0.0)
    """
    t = TOLERANCES.get(_dtype_name(dtype))
    return Tolerance(0.0, 0.0) if t is None else t.scaled(scale)


def gradient_tolerance(dtype: Any, scale: float = 1.0) -> Tolerance:
    """The finite-difference gradient tolerance of float32 or float64, times ``scale``."""
    name = _dtype_name(dtype)
    if name not in GRADIENT_TOLERANCES:
        raise ValueError(
            f"[testing] gradients are checked in {sorted(GRADIENT_TOLERANCES)}, got dtype {name!r}; "
            f"differentiate in float32 or float64"
        )
    return GRADIENT_TOLERANCES[name].scaled(scale)


# -- comparison ------------------------------------------------------------------------------
class CheckFailure(AssertionError):
    """A check found a wrong value (not a crash). ``expected`` and ``got`` are short texts
    that reports show side by side."""

    def __init__(self, message: str, expected: Any = None, got: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.expected = None if expected is None else _show(expected)
        self.got = None if got is None else _show(got)


def _show(v: Any) -> str:
    if isinstance(v, np.ndarray):
        with np.printoptions(precision=8, threshold=24, edgeitems=4, linewidth=100):
            return f"{v.dtype}{list(v.shape)} {np.array2string(v, separator=', ')}"
    return str(v)


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found. ``ok`` when every element is within tolerance.

    ``max_abs_error`` / ``max_rel_error`` are over the finite elements (both finite in got and
    expected) — over all of them, not only the wrong ones; ``first_index`` is the first wrong
    element's index (None when all are right)."""

    ok: bool
    size: int
    wrong: int
    wrong_finite: int
    nan_mismatches: int
    inf_mismatches: int
    max_abs_error: float
    max_rel_error: float
    worst_wrong_error: float
    first_index: tuple[int, ...] | None
    rtol: float
    atol: float
    exact: bool

    def describe(self) -> str:
        """``"3 of 12 elements wrong; ..."`` (empty when ``ok``)."""
        if self.ok:
            return ""
        if self.exact:
            detail = "values differ (exact comparison)"
        else:
            parts = []
            if self.wrong_finite:
                parts.append(f"{self.wrong_finite} finite off by up to {self.worst_wrong_error:.3g}")
            if self.nan_mismatches:
                parts.append(
                    f"{self.nan_mismatches} NaN where a number was expected or a number where NaN was"
                )
            if self.inf_mismatches:
                parts.append(f"{self.inf_mismatches} infinity mismatched (wrong sign, or infinite vs finite)")
            detail = f"{'; '.join(parts)} (rtol {self.rtol:g}, atol {self.atol:g}; max rel error {self.max_rel_error:.3g})"
        return f"{self.wrong} of {self.size} elements wrong; {detail}"


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def _floating(d: np.dtype) -> bool:
    return d.kind == "f" or d.name == "bfloat16"


def compare(got: Any, expected: Any, rtol: float, atol: float, magnitude: Any = None) -> Comparison:
    """Compare values of equal shape. NaN must match NaN, infinities must match exactly;
    floats may differ by ``atol + rtol * (|expected| + magnitude)`` (``magnitude``: a bound on
    what was summed into each element, for sums and matmuls). Integers, bools, and floats with
    ``rtol == atol == 0`` and no ``magnitude`` compare exactly (NaN equal to NaN)."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        raise ValueError(
            f"[testing] compare: shapes differ, got {got.shape}, expected {expected.shape}; "
            f"use assert_close to report it as a failed check"
        )
    floating = _floating(got.dtype) and _floating(expected.dtype)
    exact = not floating or (rtol == 0 and atol == 0 and magnitude is None)
    if got.size == 0:
        return Comparison(True, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, None, rtol, atol, exact)
    if floating:
        g, e = _f64(got), _f64(expected)
    else:
        g, e = got, expected
    nan_g = np.isnan(g) if floating else np.zeros(g.shape, bool)
    nan_e = np.isnan(e) if floating else np.zeros(e.shape, bool)
    inf_g = np.isinf(g) if floating else np.zeros(g.shape, bool)
    inf_e = np.isinf(e) if floating else np.zeros(e.shape, bool)
    fin = ~(nan_g | nan_e | inf_g | inf_e)
    with np.errstate(invalid="ignore", over="ignore"):
        gf, ef = g.astype(np.float64), e.astype(np.float64)
        err = np.where(fin, np.abs(gf - ef), 0.0)
        rel = np.divide(err, np.abs(ef), out=np.where(err > 0, np.inf, 0.0), where=fin & (ef != 0))
    if exact:
        bad = ~((g == e) | (nan_g & nan_e))
    else:
        allowed = atol + rtol * np.abs(e)
        if magnitude is not None:
            allowed = allowed + rtol * np.broadcast_to(np.asarray(magnitude, np.float64), e.shape)
        bad = (nan_g != nan_e) | (inf_e & (g != e)) | (inf_g & ~inf_e) | (fin & (err > allowed))
    bad = np.asarray(bad)
    wrong = int(bad.sum())
    wrong_fin = bad & fin
    first = None
    if wrong:
        first = tuple(int(i) for i in np.argwhere(bad)[0]) if got.ndim else ()
    nan_mis = int((bad & (nan_g != nan_e)).sum())
    return Comparison(
        ok=wrong == 0,
        size=int(got.size),
        wrong=wrong,
        wrong_finite=int(wrong_fin.sum()),
        nan_mismatches=nan_mis,
        inf_mismatches=int((bad & ~fin).sum()) - nan_mis,
        max_abs_error=float(err.max()),
        max_rel_error=float(rel.max()),
        worst_wrong_error=float(err[wrong_fin].max()) if wrong_fin.any() else 0.0,
        first_index=first,
        rtol=rtol,
        atol=atol,
        exact=exact,
    )


def assert_close(
    got: Any,
    expected: Any,
    rtol: float,
    atol: float,
    what: str,
    magnitude: Any = None,
) -> None:
    """Shape, dtype, then values as :func:`compare`; raise :class:`CheckFailure` naming
    ``what``, the count of wrong elements, the errors and the first wrong index with both values."""
    got = got.numpy() if isinstance(got, Tensor) else np.asarray(got)
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise CheckFailure(f"{what}: shape {got.shape}, expected {expected.shape}", expected.shape, got.shape)
    if got.dtype != expected.dtype:
        raise CheckFailure(f"{what}: dtype {got.dtype}, expected {expected.dtype}", expected.dtype, got.dtype)
    c = compare(got, expected, rtol, atol, magnitude)
    if c.ok:
        return
    first = c.first_index or ()
    raise CheckFailure(
        f"{what}: {c.describe()}; first at index {first}: got {got[first]!r}, expected {expected[first]!r}",
        expected,
        got,
    )


def finite_difference(
    fn: Callable[..., Any], xs: Sequence[np.ndarray], i: int, w: np.ndarray, eps: float = 1e-6
) -> np.ndarray:
    """d/dx_i of ``sum(fn(*xs) * w)`` by central differences in float64 (the reference an
    autograd gradient is compared with)."""
    x = np.array(xs[i], np.float64)
    g = np.zeros_like(x)
    flat = x.reshape(-1)
    gflat = g.reshape(-1)
    args = list(xs)
    args[i] = x
    for j in range(flat.size):
        old = flat[j]
        h = eps * max(1.0, abs(old))
        flat[j] = old + h
        up = float(np.sum(np.asarray(fn(*args), np.float64) * w))
        flat[j] = old - h
        down = float(np.sum(np.asarray(fn(*args), np.float64) * w))
        flat[j] = old
        gflat[j] = (up - down) / (2 * h)
    return g


# -- devices and the registry ----------------------------------------------------------------
class RuntimeHandle(NamedTuple):
    """A device's plugin runtime (the :class:`adapter_api.DeviceRuntime`), its index and the
    stream kernels run on now."""

    runtime: Any
    index: int
    stream: Any


def parse_device(name: Any, check: bool = True) -> _dev.Device:
    """``"opencl:1"``, ``"cpu"`` or a Device as a :class:`framework.Device`; with ``check``, a
    device that does not exist raises the readable :class:`framework.DeviceError`."""
    return _dev.parse(name, check=check)


def runtime_of(device: Any) -> RuntimeHandle:
    """The plugin runtime behind ``device``, for checks that call it directly (copies at byte
    offsets, memset, streams)."""
    d = _dev.parse(device)
    t = _dev.device_type(d.type)
    return RuntimeHandle(t.runtime, d.index, t.stream(d.index))


def registry() -> Registry:
    """The live :class:`adapter_api.Registry` every loaded plugin registered into (runtimes,
    kernels, compilers, communicators). After changing its kernels, call
    :func:`clear_kernel_cache`."""
    return _host().registry


def plugin_of(device_type: str) -> str | None:
    """The name of the plugin that registered ``device_type`` (None: no such device type)."""
    return _host().plugin_of(device_type)


def find_kernel(op: str, device: Any, dtype: Any) -> KernelEntry | None:
    """The kernel ``device``'s plugin registered for ``op`` under ``dtype``, or None (then the
    op falls back to the CPU plugin, or runs as its decomposition if a composite)."""
    return _dispatch.find_kernel(op, _dev.parse(device, check=False).type, np.dtype(dtype))


def kernel_takes(op: str, attr: str, device: Any, dtype: Any) -> bool:
    """Whether ``device``'s kernel for ``op`` under ``dtype`` takes ``attr``, an attribute the
    contract added after 1.0 (``adapter_api.ATTRS_SINCE``): the core passes it only to a plugin
    declaring that contract version or newer (the conformance suite samples it only there).

    Example:
        >>> from framework.testing import kernel_takes
        >>> kernel_takes("gather", "wrap", "cpu", "float32")
        True
    """
    return _dispatch.kernel_takes(op, attr, _dev.parse(device, check=False).type, np.dtype(dtype))


def clear_kernel_cache() -> None:
    """Forget the dispatcher's kernel lookups (after adding or removing registry kernels)."""
    _dispatch.clear_kernel_cache()


@contextlib.contextmanager
def kernels_removed(*ops: str) -> Iterator[None]:
    """Inside, the registry holds no kernel of ``ops`` (any device, any dtype): composites run
    their generated kernel or decomposition, as on a plugin that never registered them. The
    kernels are back, and the dispatcher's lookups cleared, on the way out."""
    reg = registry().kernels
    saved = {key: reg.pop(key) for key in list(reg) if key[0] in ops}
    clear_kernel_cache()
    try:
        yield
    finally:
        reg.update(saved)
        clear_kernel_cache()


@contextlib.contextmanager
def gradient_by_decomposition(*ops: str) -> Iterator[None]:
    """Inside, the composites ``ops`` are differentiated through their decomposition (re-run
    under autograd, its tape walked back) instead of their own gradient rule: the reference a
    rule's test compares against, and the old path a benchmark times. The rules are back on
    the way out.

    >>> import framework as fw
    >>> from framework import testing
    >>> x = fw.randn([1, 2, 5, 5]); x.stop_gradient = False
    >>> w = fw.randn([3, 2, 3, 3]); w.stop_gradient = False
    >>> (gx_rule,) = fw.grad(fw.nn.functional.conv2d(x, w, padding=1).sum(), [x])
    >>> with testing.gradient_by_decomposition("conv2d"):
    ...     (gx_dec,) = fw.grad(fw.nn.functional.conv2d(x, w, padding=1).sum(), [x])
    >>> bool(np.allclose(gx_rule.numpy(), gx_dec.numpy(), atol=1e-5))
    True
    """
    found = [_op(name) for name in ops]
    for op in found:
        if op.kind != "composite":
            raise ValueError(
                f"[testing] gradient_by_decomposition: {op.name!r} is a {op.kind}, not a composite"
            )
    saved = [op.grad for op in found]
    for op in found:
        op.grad = _base._grad_by_decomposition
    try:
        yield
    finally:
        for op, rule in zip(found, saved):
            op.grad = rule


def op_names(kind: str | None = None) -> list[str]:
    """Every op the core defines, sorted; ``kind`` ``"primitive"`` or ``"composite"`` picks one kind."""
    return sorted(n for n, op in _base.OPS.items() if kind is None or op.kind == kind)


def _op(name: str) -> Any:
    op = _base.OPS.get(name)
    if op is None:
        raise KeyError(f"[testing] no op named {name!r}; see framework.testing.op_names()")
    return op


# -- running ops ---------------------------------------------------------------------------
def poison_outputs(flag: bool = True) -> None:
    """Fill every op's output with a poison before its kernel runs (or stop), in this thread.

    Floating outputs are filled with ``0xFF`` bytes (a NaN in every float dtype), integer and
    bool outputs with ``0xA5`` bytes, so an element a kernel never writes shows as a wrong
    value instead of passing with what the memory held. ``OARLOCK_POISON_OUTPUTS=1`` turns it
    on for a whole process; the conformance runner turns it on in every case.

    Args:
        flag (bool): True: poison; False: leave outputs as allocated.

    Example:
        >>> import framework as fw
        >>> from framework import testing
        >>> testing.poison_outputs(True)
        >>> fw.exp(fw.zeros([2])).tolist()  # a kernel that writes every element is unaffected
        [1.0, 1.0]
        >>> testing.poison_outputs(False)
    """
    _dispatch.POISON_OUTPUTS.set(bool(flag))


def unwritten(got: np.ndarray, expected: np.ndarray | None = None) -> np.ndarray:
    """A mask of the elements of ``got`` that still hold the :func:`poison_outputs` bytes.

    Elements where ``expected`` is NaN (a floating poison is a NaN with every bit set, which a
    kernel may compute) or holds the same bytes are left out.

    Example:
        >>> import numpy as np
        >>> from framework import testing
        >>> got = np.array([1.0, np.nan, 3.0], np.float32)
        >>> got.view(np.uint32)[1] = 0xFFFFFFFF  # as poison_outputs leaves an unwritten element
        >>> testing.unwritten(got).tolist()
        [False, True, False]
    """
    got = np.array(got, copy=True, order="C")
    byte = _dispatch.poison_byte(got.dtype)

    def poisoned(a: np.ndarray) -> np.ndarray:
        raw = a.reshape(-1).view(np.uint8).reshape(a.size, a.dtype.itemsize)
        return np.all(raw == byte, axis=1).reshape(a.shape)

    mask = poisoned(got)
    if expected is not None:
        e = np.array(np.broadcast_to(np.asarray(expected, got.dtype), got.shape), order="C")
        mask &= ~poisoned(e)
        if _floating(got.dtype):
            mask &= ~np.isnan(e.astype(np.float64))
    return mask


#: The byte pattern around guarded buffers: a kernel that reads it gives visibly wrong values,
#: one that writes over it is caught.
GUARD_BYTE = 0x7F


def _guarded_block(dev: _dev.Device, nbytes: int, pad: int) -> Any:
    block = _dev.allocator_of(dev).malloc(nbytes + 2 * pad)
    dt = _dev.device_type(dev.type)
    fill = np.full(nbytes + 2 * pad, GUARD_BYTE, np.uint8)
    dt.runtime.copy_h2d(dev.index, block.handle, 0, fill, dt.stream(dev.index), True)
    return block


def put(arr: Any, device: Any, offset_elems: int = 0) -> Tensor:
    """A tensor holding ``arr`` on ``device``. With ``offset_elems`` it starts that many elements
    into a larger buffer whose rest holds :data:`GUARD_BYTE` (the kernel then sees a view with
    a non-zero byte offset, and reading outside it gives wrong values)."""
    arr = np.array(arr, copy=True, order="C")
    if offset_elems == 0:
        from . import to_tensor

        return to_tensor(arr, dtype=arr.dtype, device=device)
    dev = _dev.parse(device)
    pad = offset_elems * arr.dtype.itemsize
    block = _guarded_block(dev, arr.nbytes, pad)
    if arr.nbytes:
        dt = _dev.device_type(dev.type)
        dt.runtime.copy_h2d(dev.index, block.handle, pad, arr, dt.stream(dev.index), True)
    return Tensor._make(block, pad, tuple(arr.shape), arr.dtype, dev)


def run_op(name: str, ins: Sequence[Tensor], attrs: dict[str, Any] | None = None) -> list[Tensor]:
    """Run the op ``name`` on tensors as the user API does, recording it for autograd when an
    input needs a gradient: a primitive through dispatch; a composite through its fused
    kernel, its generated kernel or its decomposition. Attributes are the op's normalised
    ones (sorted non-negative ``axes``, tuples for shapes), as in :mod:`adapter_api.primitives`."""
    op = _op(name)
    ins, attrs = list(ins), dict(attrs or {})
    if op.kind == "primitive":
        return _base.apply(op, ins, attrs)
    out = _base.call(op, ins, attrs)
    return [out] if isinstance(out, Tensor) else list(out)


def run_primitive(name: str, ins: Sequence[Tensor], attrs: dict[str, Any], device: Any) -> list[Tensor]:
    """Run one primitive through the dispatcher only (the device's kernel, or the CPU
    fallback), without autograd. ``arange`` takes its length as ``attrs["n"]``."""
    op = _op(name)
    dev = _dev.parse(device)
    if name == "arange":
        a = dict(attrs)
        n = a.pop("n")
        return _dispatch.run(op, [], a, dev, [((n,), a["dtype"])])
    if not ins:
        return _dispatch.run(op, [], dict(attrs), dev)
    return _dispatch.run(op, list(ins), dict(attrs))


def run_kernel_guarded(
    name: str, ins: Sequence[Tensor], attrs: dict[str, Any], device: Any, pad: int = 64
) -> list[Tensor]:
    """Call the device's own kernel for primitive ``name`` with each output placed ``pad`` bytes
    into a buffer filled with :data:`GUARD_BYTE`; raise :class:`CheckFailure` when the kernel
    wrote outside its outputs. Without a kernel for the dtype, runs :func:`run_primitive`
    (the dispatcher decides: CPU fallback)."""
    op = _op(name)
    dev = _dev.parse(device)
    ins = list(ins)
    a = dict(attrs)
    if name == "arange":
        n = a.pop("n")
        metas = [((n,), a["dtype"])]
    else:
        metas = op.infer(ins, a)
    entry = _dispatch.find_kernel(
        name, dev.type, ins[op.spec.key_input].dtype if ins else np.dtype(metas[0][1])
    )
    if entry is None:
        return run_primitive(name, ins, attrs, device)
    if op.elementwise and not entry.broadcast:
        ins = [t if t.shape == metas[0][0] else _dispatch.op_expand(t, metas[0][0]) for t in ins]
    elif op.elementwise:
        rank = len(metas[0][0])
        ins = [
            t if len(t.shape) == rank else t._reshaped((1,) * (rank - len(t.shape)) + t.shape) for t in ins
        ]
    outs, blocks = [], []
    for shape, dtype in metas:
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        block = _guarded_block(dev, nbytes, pad)
        blocks.append((block, nbytes))
        outs.append(Tensor._make(block, pad, tuple(shape), np.dtype(dtype), dev))
    entry.fn(_dispatch.context(dev), [o.native() for o in outs], [t.native() for t in ins], **a)
    dt = _dev.device_type(dev.type)
    for block, nbytes in blocks:
        raw = np.empty(nbytes + 2 * pad, np.uint8)
        dt.runtime.copy_d2h(dev.index, raw, block.handle, 0, dt.stream(dev.index), True)
        guard = np.concatenate([raw[:pad], raw[pad + nbytes :]])
        bad = np.flatnonzero(guard != GUARD_BYTE)
        if bad.size:
            where = "before" if bad[0] < pad else "after"
            raise CheckFailure(
                f"[{name}] the kernel wrote {bad.size} bytes outside its {nbytes}-byte output (first {where} it): "
                f"it corrupts the memory of other tensors; check the kernel's index bounds",
                f"guard bytes {hex(GUARD_BYTE)}",
                f"{[hex(int(v)) for v in guard[bad[:8]]]}",
            )
    return outs

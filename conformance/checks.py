"""Comparing device results with references, and putting numpy data on a device.

A failed check raises :class:`CheckFailure` carrying short "expected" and "got" texts that the
reports show side by side.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class CheckFailure(AssertionError):
    """A conformance check found a wrong value (not a crash)."""

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


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def assert_close(
    got: np.ndarray,
    expected: np.ndarray,
    rtol: float,
    atol: float,
    what: str,
    magnitude: np.ndarray | None = None,
) -> None:
    """Shape, dtype and values; NaN must match NaN and infinities must match exactly.

    For floats the allowed error is ``atol + rtol * (|expected| + magnitude)``.
    """
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise CheckFailure(f"{what}: shape {got.shape}, expected {expected.shape}", expected.shape, got.shape)
    if got.dtype != expected.dtype:
        raise CheckFailure(f"{what}: dtype {got.dtype}, expected {expected.dtype}", expected.dtype, got.dtype)
    if got.size == 0:
        return
    floating = got.dtype.kind == "f" or got.dtype.name == "bfloat16"
    if not floating or (rtol == 0 and atol == 0 and magnitude is None):
        if floating:
            same = (_f64(got) == _f64(expected)) | (np.isnan(_f64(got)) & np.isnan(_f64(expected)))
        else:
            same = got == expected
        if not np.all(same):
            _fail(what, got, expected, ~same, "values differ (exact comparison)")
        return
    g, e = _f64(got), _f64(expected)
    nan_g, nan_e = np.isnan(g), np.isnan(e)
    bad = nan_g != nan_e
    inf_e = np.isinf(e)
    bad |= inf_e & (g != e)
    bad |= np.isinf(g) & ~inf_e
    fin = ~(nan_e | inf_e | nan_g | np.isinf(g))
    allowed = atol + rtol * np.abs(e)
    if magnitude is not None:
        allowed = allowed + rtol * np.broadcast_to(np.asarray(magnitude, np.float64), e.shape)
    with np.errstate(invalid="ignore"):
        bad |= fin & (np.abs(g - e) > allowed)
    if np.any(bad):
        parts = []
        wrong_fin = bad & fin
        if wrong_fin.any():
            with np.errstate(invalid="ignore", over="ignore"):
                worst = float(np.abs(g - e)[wrong_fin].max())
            parts.append(f"{int(wrong_fin.sum())} finite off by up to {worst:.3g}")
        n_nan = int((bad & (nan_g != nan_e)).sum())
        if n_nan:
            parts.append(f"{n_nan} NaN where a number was expected or a number where NaN was")
        n_inf = int((bad & ~fin & ~(nan_g != nan_e)).sum())
        if n_inf:
            parts.append(f"{n_inf} infinity mismatched (wrong sign, or infinite vs finite)")
        _fail(what, got, expected, bad, f"{'; '.join(parts)} (rtol {rtol:g}, atol {atol:g})")


def _fail(what: str, got: np.ndarray, expected: np.ndarray, bad: np.ndarray, detail: str) -> None:
    idx = np.argwhere(bad)
    n = len(idx)
    first = tuple(int(i) for i in idx[0]) if n and got.ndim else ()
    g0 = got[first] if got.ndim else got[()]
    e0 = expected[first] if expected.ndim else expected[()]
    raise CheckFailure(
        f"{what}: {n} of {got.size} elements wrong; {detail}; first at index {first}: got {g0!r}, expected {e0!r}",
        expected,
        got,
    )


# -- device side -----------------------------------------------------------------------------
def put(arr: np.ndarray, device: Any, offset_elems: int = 0) -> Any:
    """A tensor holding ``arr`` on ``device``; with ``offset_elems`` it starts that many elements
    into a larger buffer (the kernel then sees a view with a non-zero byte offset)."""
    import framework as fw
    from framework._src import device as _dev
    from framework._src.tensor import Tensor

    arr = np.array(arr, copy=True, order="C")
    if offset_elems == 0:
        return fw.to_tensor(arr, dtype=arr.dtype, device=device)
    dev = _dev.parse(device)
    pad = offset_elems * arr.dtype.itemsize
    block = _dev.allocator_of(dev).malloc(arr.nbytes + 2 * pad)
    dt = _dev.device_type(dev.type)
    # NOTE: fill the guard bytes around the data with a pattern, so a kernel that reads
    # outside its view gives visibly wrong results.
    guard = np.full(pad, 0x7F, np.uint8)
    dt.runtime.copy_h2d(dev.index, block.handle, 0, guard, dt.stream(dev.index), True)
    dt.runtime.copy_h2d(dev.index, block.handle, pad + arr.nbytes, guard, dt.stream(dev.index), True)
    if arr.nbytes:
        dt.runtime.copy_h2d(dev.index, block.handle, pad, arr, dt.stream(dev.index), True)
    return Tensor._make(block, pad, tuple(arr.shape), arr.dtype, dev)


def run_primitive(name: str, ins: list[Any], attrs: dict[str, Any], device: Any) -> list[Any]:
    """Run one primitive through the dispatcher (the kernel, or the CPU fallback)."""
    from framework._src import device as _dev
    from framework._src import dispatch
    from framework._src.ops.base import OPS

    op = OPS[name]
    dev = _dev.parse(device)
    if name == "arange":
        a = dict(attrs)
        n = a.pop("n")
        return dispatch.run(op, [], a, dev, [((n,), a["dtype"])])
    if not ins:
        return dispatch.run(op, [], attrs, dev)
    return dispatch.run(op, ins, attrs)


GUARD_BYTE = 0x7F


def _guarded_block(dev: Any, nbytes: int, pad: int) -> Any:
    from framework._src import device as _dev

    block = _dev.allocator_of(dev).malloc(nbytes + 2 * pad)
    dt = _dev.device_type(dev.type)
    fill = np.full(nbytes + 2 * pad, GUARD_BYTE, np.uint8)
    dt.runtime.copy_h2d(dev.index, block.handle, 0, fill, dt.stream(dev.index), True)
    return block


def run_kernel_guarded(name: str, ins: list[Any], attrs: dict[str, Any], device: Any, pad: int = 64) -> list[Any]:
    """Call the device's own kernel for ``name`` with outputs placed ``pad`` bytes into buffers
    filled with a guard pattern, and fail when the kernel wrote outside its outputs.

    Falls back to :func:`run_primitive` when the device has no kernel (the dispatcher decides).
    """
    from framework._src import device as _dev
    from framework._src import dispatch
    from framework._src.ops.base import OPS
    from framework._src.tensor import Tensor

    op = OPS[name]
    dev = _dev.parse(device)
    a = dict(attrs)
    if name == "arange":
        n = a.pop("n")
        metas = [((n,), a["dtype"])]
    else:
        metas = op.infer(ins, a)
    entry = dispatch.find_kernel(name, dev.type, ins[op.spec.key_input].dtype if ins else metas[0][1])
    if entry is None:
        return run_primitive(name, ins, attrs, device)
    if op.elementwise and not entry.broadcast:
        ins = [t if t.shape == metas[0][0] else dispatch.op_expand(t, metas[0][0]) for t in ins]
    elif op.elementwise:
        rank = len(metas[0][0])
        ins = [t if len(t.shape) == rank else t._reshaped((1,) * (rank - len(t.shape)) + t.shape) for t in ins]
    outs, blocks = [], []
    for shape, dtype in metas:
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        block = _guarded_block(dev, nbytes, pad)
        blocks.append((block, nbytes))
        outs.append(Tensor._make(block, pad, tuple(shape), np.dtype(dtype), dev))
    entry.fn(dispatch.context(dev), [o.native() for o in outs], [t.native() for t in ins], **a)
    dt = _dev.device_type(dev.type)
    for block, nbytes in blocks:
        raw = np.empty(nbytes + 2 * pad, np.uint8)
        dt.runtime.copy_d2h(dev.index, raw, block.handle, 0, dt.stream(dev.index), True)
        guard = np.concatenate([raw[:pad], raw[pad + nbytes :]])
        bad = np.flatnonzero(guard != GUARD_BYTE)
        if bad.size:
            where = ["before" if i < pad else "after" for i in bad[:1]][0]
            raise CheckFailure(
                f"[{name}] the kernel wrote {bad.size} bytes outside its {nbytes}-byte output (first {where} it): "
                f"it corrupts the memory of other tensors", f"guard bytes {hex(GUARD_BYTE)}",
                f"{[hex(int(v)) for v in guard[bad[:8]]]}")
    return outs


def fallbacks() -> dict[str, int]:
    import framework as fw

    return fw.fallback_stats()


def finite_difference(fn: Any, xs: list[np.ndarray], i: int, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d/dx_i of sum(fn(*xs) * w), central differences in float64."""
    x = xs[i].astype(np.float64)
    g = np.zeros_like(x)
    flat = x.reshape(-1)
    gflat = g.reshape(-1)
    for j in range(flat.size):
        old = flat[j]
        h = eps * max(1.0, abs(old))
        flat[j] = old + h
        args = [x if k == i else xs[k] for k in range(len(xs))]
        up = float(np.sum(np.asarray(fn(*args), np.float64) * w))
        flat[j] = old - h
        args = [x if k == i else xs[k] for k in range(len(xs))]
        down = float(np.sum(np.asarray(fn(*args), np.float64) * w))
        flat[j] = old
        gflat[j] = (up - down) / (2 * h)
    return g


def is_finite_number(v: float) -> bool:
    return isinstance(v, float) and math.isfinite(v)

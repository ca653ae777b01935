"""The discrete Fourier transforms behind ``fw.fft`` (issue 40): three host ops, each one OpDef
with its gradient beside it, computed with numpy's pocketfft and copied to the input's device
(a documented fallback: no plugin registers them).

- ``fft_c2c``: complex to complex over ``axes`` (``forward`` or inverse);
- ``fft_r2c``: real to the one-sided complex spectrum (the last axis becomes ``n // 2 + 1``);
- ``fft_c2r``: the one-sided spectrum back to ``last`` real samples.

``norm`` is Paddle's (and numpy's): "backward" scales the inverse by 1/n, "forward" the
forward transform, "ortho" both by 1/sqrt(n). Lengths (``n``, ``s``) are applied before the
transform by cropping or zero-padding with device ops, so the ops themselves take none.
Gradients follow the conjugate Wirtinger convention: the adjoint of each transform (the
opposite direction with the dual norm), as PyTorch's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import autograd
from .. import dtypes as _dt
from ..tensor import Tensor, to_tensor
from . import complex as CX
from . import math as M
from .base import OPS, OpDef
from .shape import pad_raw, slice_raw

NORMS = ("backward", "ortho", "forward")
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _run(op: OpDef, x: Tensor, out_dtype: np.dtype, fn: Any, attrs: dict[str, Any]) -> Tensor:
    out = to_tensor(np.ascontiguousarray(fn(x.numpy())).astype(out_dtype), device=x.device)
    if autograd.is_grad_enabled() and not x.stop_gradient:
        autograd.record(op, [x], attrs, [out])
    return out


# -- complex to complex ------------------------------------------------------------------------
def _g_c2c(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    a = n.attrs
    return [c2c(g[0], a["axes"], _DUAL[a["norm"]], not a["forward"])]


FFT_C2C = OPS["fft_c2c"] = OpDef("fft_c2c", "host", None, _g_c2c, doc="complex DFT over axes")


def c2c(x: Tensor, axes: tuple[int, ...], norm: str, forward: bool) -> Tensor:
    """The DFT (``forward``) or its inverse of a complex ``x`` over ``axes``."""
    f = np.fft.fftn if forward else np.fft.ifftn
    attrs = {"axes": axes, "norm": norm, "forward": forward}
    return _run(FFT_C2C, x, x.dtype, lambda a: f(a, axes=axes, norm=norm), attrs)


# -- real to one-sided complex ------------------------------------------------------------------
def _g_r2c(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    # the adjoint: the one-sided gradient zero-padded to the full length, transformed back, real part
    a = n.attrs
    x = n.inputs[0]
    last = a["axes"][-1]
    full = x.shape[last]
    gz = _resize(g[0], last, full)
    return [CX.real(c2c(gz, a["axes"], _DUAL[a["norm"]], False))]


FFT_R2C = OPS["fft_r2c"] = OpDef("fft_r2c", "host", None, _g_r2c, doc="real to one-sided complex DFT")


def r2c(x: Tensor, axes: tuple[int, ...], norm: str) -> Tensor:
    """The one-sided DFT of a real ``x`` over ``axes`` (the last of them halved)."""
    attrs = {"axes": axes, "norm": norm}
    return _run(FFT_R2C, x, _dt.complex_of(x.dtype), lambda a: np.fft.rfftn(a, axes=axes, norm=norm), attrs)


# -- one-sided complex to real ------------------------------------------------------------------
def _g_c2r(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    # the adjoint (PyTorch's rule): the one-sided DFT of g, the bins that stand for two doubled
    a = n.attrs
    half = n.inputs[0].shape[a["axes"][-1]]
    gi = r2c(g[0], a["axes"], _DUAL[a["norm"]])
    twice = a["last"] - half  # the bins 1 .. last - half have a mirror image
    if twice <= 0:
        return [gi]
    w = np.ones(half, dtype=_dt.real_of(gi.dtype))
    w[1 : 1 + twice] = 2.0
    shape = [1] * gi.ndim
    shape[a["axes"][-1]] = half
    return [M.multiply(gi, to_tensor(w.reshape(shape), device=gi.device))]


FFT_C2R = OPS["fft_c2r"] = OpDef("fft_c2r", "host", None, _g_c2r, doc="one-sided complex to real DFT")


def c2r(x: Tensor, axes: tuple[int, ...], norm: str, last: int) -> Tensor:
    """The real inverse DFT of a one-sided spectrum ``x`` over ``axes``: ``last`` samples on the last axis."""
    shape = [x.shape[a] for a in axes[:-1]] + [last]
    attrs = {"axes": axes, "norm": norm, "last": last}
    return _run(
        FFT_C2R, x, _dt.real_of(x.dtype), lambda a: np.fft.irfftn(a, s=shape, axes=axes, norm=norm), attrs
    )


# -- argument handling ------------------------------------------------------------------------
def _resize(x: Tensor, axis: int, size: int) -> Tensor:
    """``x`` cropped or zero-padded to ``size`` along ``axis`` (device ops: differentiable)."""
    have = x.shape[axis]
    if have > size:
        stops = list(x.shape)
        stops[axis] = size
        return slice_raw(x, (0,) * x.ndim, tuple(stops), (1,) * x.ndim)
    if have < size:
        pads = [(0, 0)] * x.ndim
        pads[axis] = (0, size - have)
        return pad_raw(x, tuple(pads), 0.0)
    return x


def check_norm(api: str, norm: Any) -> str:
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise OpArgumentError(f"[{api}] norm must be one of {', '.join(NORMS)}, got {norm!r}")
    return norm


def as_complex_input(api: str, x: Any) -> Tensor:
    """``x`` as a complex tensor (real ones cast: complex64 for float32 and integers, complex128 for float64)."""
    if not isinstance(x, Tensor):
        raise OpArgumentError(
            f"[{api}] x must be a Tensor, got {type(x).__name__}; wrap data with fw.to_tensor"
        )
    if x.dtype.kind == "c":
        return x
    if x.dtype == _dt.bool_:
        raise OpArgumentError(f"[{api}] expected a numeric tensor, got bool")
    return M.cast(x, _dt.complex_of(x.dtype if _dt.is_floating(x.dtype) else _dt.get_default_dtype()))


def as_real_input(api: str, x: Any) -> Tensor:
    """``x`` as a float32/float64 tensor; complex is an error (the one-sided transforms take real input)."""
    if not isinstance(x, Tensor):
        raise OpArgumentError(
            f"[{api}] x must be a Tensor, got {type(x).__name__}; wrap data with fw.to_tensor"
        )
    if x.dtype.kind == "c":
        raise OpArgumentError(
            f"[{api}] expected a real tensor, got {x.dtype}; use the complex transform (fft)"
        )
    if x.dtype == _dt.bool_:
        raise OpArgumentError(f"[{api}] expected a numeric tensor, got bool")
    if x.dtype not in (_dt.float32, _dt.float64):
        x = M.cast(x, _dt.get_default_dtype() if not _dt.is_floating(x.dtype) else _dt.float32)
    return x


def axes_and_sizes(api: str, x: Tensor, s: Any, axes: Any, default_axes: tuple[int, ...] | None) -> tuple:
    """Normalised ``axes`` (a tuple of distinct non-negative ints) and ``s`` (a list, or None)."""
    nd = x.ndim
    if axes is None:
        axes = (
            default_axes
            if default_axes is not None
            else (tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd)))
        )
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(axes)
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not -nd <= a < nd:
            raise OpArgumentError(f"[{api}] axis {a!r} is out of range for a tensor with {nd} dimensions")
        out.append(int(a) % nd)
    if len(set(out)) != len(out) or not out:
        raise OpArgumentError(f"[{api}] axes must be distinct and not empty, got {list(axes)}")
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if len(s) != len(out):
            raise OpArgumentError(f"[{api}] s has {len(s)} sizes for {len(out)} axes; give one per axis")
        for v in s:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise OpArgumentError(f"[{api}] each size in n/s must be a positive int, got {v!r}")
    return tuple(out), s


def resize_all(x: Tensor, axes: tuple[int, ...], sizes: list[int] | None) -> Tensor:
    if sizes is not None:
        for a, n in zip(axes, sizes):
            x = _resize(x, a, int(n))
    return x


def resize(x: Tensor, axis: int, size: int) -> Tensor:
    return _resize(x, axis, size)

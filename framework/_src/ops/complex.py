"""Complex tensors (complex64, complex128; issue 40): the views between a complex tensor and its
float pairs, and the complex parts, each one OpDef.

``as_real`` and ``as_complex`` are views (they share storage: a complex64 element is two
float32, real part first); everything else is a decomposition into them and real ops, so it
runs wherever those run and is differentiated through them. Gradients follow the conjugate
Wirtinger convention Paddle and PyTorch use: the gradient of a complex tensor is
``dL/dRe + i dL/dIm`` (for ``y = x * w``, ``x``'s gradient is ``g * conj(w)``).

>>> import framework as fw
>>> z = fw.complex(fw.to_tensor([1.0, 0.0]), fw.to_tensor([2.0, -1.0]))
>>> z.dtype, fw.real(z).tolist(), fw.imag(fw.conj(z)).tolist()
(dtype('complex64'), [1.0, 0.0], [-2.0, 1.0])
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .. import autograd
from .. import dtypes as _dt
from ..tensor import Tensor, to_tensor
from . import math as M
from . import shape as S
from .base import OPS, broadcast_shapes, call, composite
from .views import AS_COMPLEX, AS_REAL, _as_complex_view, _as_real_view  # noqa: F401  (the two views' records)


def _tensor(name: str, x: Any, what: str = "x") -> Tensor:
    if not isinstance(x, Tensor):
        raise OpArgumentError(
            f"[{name}] {what} must be a Tensor, got {type(x).__name__}; wrap data with fw.to_tensor"
        )
    return x


def _complex_input(name: str, x: Any) -> Tensor:
    x = _tensor(name, x)
    if x.dtype.kind != "c":
        raise OpArgumentError(f"[{name}] expected a complex64 or complex128 tensor, got {x.dtype}")
    return x


# -- the two views: as_real and as_complex live in views.py (the in-place writes below indexing use them)


def as_real(x: Tensor, name: str | None = None) -> Tensor:
    """The float pairs of a complex tensor: ``[..., 2]``, the real part first (a view: it shares storage).

    Args:
        x (Tensor): complex64 or complex128.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: float32 (float64) of shape ``x.shape + [2]``; differentiable.

    Example:
        >>> import framework as fw
        >>> fw.as_real(fw.to_tensor([1 + 2j, 3 - 4j])).tolist()
        [[1.0, 2.0], [3.0, -4.0]]
    """
    return _as_real_view(_complex_input("as_real", x))


def as_complex(x: Tensor, name: str | None = None) -> Tensor:
    """A complex tensor from float pairs: the last dim (of size 2) is (real, imag) (a view: it shares storage).

    Args:
        x (Tensor): float32 or float64 of shape ``[..., 2]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: complex64 (complex128) of shape ``x.shape[:-1]``; differentiable.

    Example:
        >>> import framework as fw
        >>> fw.as_complex(fw.to_tensor([[1.0, 2.0], [3.0, -4.0]]))
        Tensor(shape=[2], dtype=complex64, device=cpu:0,
               [(1.00000000+2.00000000j), (3.00000000-4.00000000j)])
    """
    x = _tensor("as_complex", x)
    if x.dtype not in (_dt.float32, _dt.float64):
        raise OpArgumentError(f"[as_complex] expected a float32 or float64 tensor, got {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise OpArgumentError(
            f"[as_complex] the last dim of x must be 2 (real, imag), got shape {list(x.shape)}"
        )
    return _as_complex_view(x)


# -- the parts ----------------------------------------------------------------------------------
def _part(x: Tensor, k: int) -> Tensor:
    r = _as_real_view(x)
    nd = r.ndim
    part = S.slice_raw(r, (0,) * (nd - 1) + (k,), r.shape[:-1] + (k + 1,), (1,) * nd)
    return part.reshape(x.shape)


@composite("real")
def real_decomposition(x: Tensor) -> Tensor:
    """The real part: ``as_real(x)[..., 0]``."""
    return _part(x, 0)


@composite("imag")
def imag_decomposition(x: Tensor) -> Tensor:
    """The imaginary part: ``as_real(x)[..., 1]``."""
    return _part(x, 1)


def _g_conj(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    return [conj(g[0])]


@composite("conj", grad=_g_conj)
def conj_decomposition(x: Tensor) -> Tensor:
    """The complex conjugate: the float pairs times (1, -1); its gradient is the conjugate of g."""
    r = _as_real_view(x)
    return _as_complex_view(M.multiply(r, to_tensor([1.0, -1.0], dtype=r.dtype, device=r.device)))


@composite("complex")
def complex_decomposition(re: Tensor, im: Tensor) -> Tensor:
    """``re + i im``: the two stacked on a last dim, viewed as complex."""
    return _as_complex_view(S.stack([re, im], axis=-1))


def _g_abs(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    r = _as_real_view(n.inputs[0])  # not detached: under create_graph the gradient depends on x
    a = M.sqrt(M.sum(M.multiply(r, r), axis=-1))
    scale = M.where(a > 0.0, M.divide(g[0], M.where(a > 0.0, a, M.ones_like(a))), M.zeros_like(a))
    return [_as_complex_view(M.multiply(r, scale.unsqueeze(-1)))]


@composite("abs_complex", grad=_g_abs)
def abs_complex_decomposition(x: Tensor) -> Tensor:
    """``|x| = sqrt(re^2 + im^2)``, a real tensor; gradient ``g x / |x|`` (0 at 0, as Paddle)."""
    r = _as_real_view(x)
    big = M.max(M.abs(r), axis=-1, keepdim=True)  # scaled: no overflow for |re|, |im| near the max
    safe = M.where(big > 0.0, big, M.ones_like(big))
    s = M.divide(r, safe)
    return M.multiply(M.sqrt(M.sum(M.multiply(s, s), axis=-1)), big.squeeze(-1))


@composite("angle")
def angle_decomposition(x: Tensor) -> Tensor:
    """The argument of each element, ``atan2(imag, real)``, in (-pi, pi]."""
    return call(OPS["atan2"], [_part(x, 1), _part(x, 0)], {})  # atan2: defined by the composites


# -- the user functions ----------------------------------------------------------------------------
def real(x: Tensor) -> Tensor:
    """The real part of a complex ``x`` (float32 for complex64, float64 for complex128)."""
    return call(OPS["real"], [_complex_input("real", x)], {})


def imag(x: Tensor) -> Tensor:
    """The imaginary part of a complex ``x``."""
    return call(OPS["imag"], [_complex_input("imag", x)], {})


def conj(x: Tensor) -> Tensor:
    """The complex conjugate of a complex ``x``."""
    return call(OPS["conj"], [_complex_input("conj", x)], {})


def abs(x: Tensor) -> Tensor:  # noqa: A001
    """``|x|`` of a complex ``x``: a real tensor."""
    return call(OPS["abs_complex"], [_complex_input("abs", x)], {})


def angle(x: Tensor) -> Tensor:
    """The argument of a complex ``x``: a real tensor in (-pi, pi]."""
    return call(OPS["angle"], [_complex_input("angle", x)], {})


def complex(real: Tensor, imag: Tensor, name: str | None = None) -> Tensor:  # noqa: A001
    """A complex tensor from its real and imaginary parts (they broadcast together).

    Args:
        real (Tensor): float32 or float64.
        imag (Tensor): float32 or float64; the result is complex128 if either is float64.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: complex64 or complex128 of the broadcast shape; differentiable.

    Example:
        >>> import framework as fw
        >>> fw.complex(fw.to_tensor([1.0, 2.0]), fw.to_tensor(3.0))
        Tensor(shape=[2], dtype=complex64, device=cpu:0,
               [(1.00000000+3.00000000j), (2.00000000+3.00000000j)])
    """
    re, im = _tensor("complex", real, "real"), _tensor("complex", imag, "imag")
    for what, t in (("real", re), ("imag", im)):
        if t.dtype not in (_dt.float32, _dt.float64):
            raise OpArgumentError(f"[complex] {what} must be float32 or float64, got {t.dtype}")
    d = _dt.promote(re.dtype, im.dtype)
    shape = broadcast_shapes("complex", re.shape, im.shape)
    re, im = re.astype(d), im.astype(d)
    re = re if re.shape == shape else re.expand(shape)
    im = im if im.shape == shape else im.expand(shape)
    return call(OPS["complex"], [re, im], {})


def polar(abs: Tensor, angle: Tensor, name: str | None = None) -> Tensor:  # noqa: A002
    """The complex numbers of modulus ``abs`` and argument ``angle``: ``abs * (cos(angle) + i sin(angle))``.

    Args:
        abs (Tensor): float32 or float64, the moduli.
        angle (Tensor): float32 or float64, the arguments (radians).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: complex64 or complex128; differentiable.

    Example:
        >>> import framework as fw
        >>> fw.polar(fw.to_tensor([2.0]), fw.to_tensor([0.0])).tolist()
        [(2+0j)]
    """
    r, t = _tensor("polar", abs, "abs"), _tensor("polar", angle, "angle")
    return complex(M.multiply(r, M.cos(t)), M.multiply(r, M.sin(t)))


def sgn(x: Tensor) -> Tensor:
    """``x / |x|`` of a complex ``x`` (0 where ``x`` is 0): the complex sign."""
    x = _complex_input("sgn", x)
    a = abs(x)
    scale = M.where(a > 0.0, M.divide(M.ones_like(a), M.where(a > 0.0, a, M.ones_like(a))), M.zeros_like(a))
    return _as_complex_view(M.multiply(_as_real_view(x), scale.unsqueeze(-1)))


def conj_if_complex(t: Tensor) -> Tensor:
    """``conj(t)`` for a complex ``t``, ``t`` itself otherwise (the gradient rules' helper)."""
    return call(OPS["conj"], [t], {}) if t.dtype.kind == "c" else t

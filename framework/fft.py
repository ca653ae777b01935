"""``fw.fft`` (Paddle's ``paddle.fft``): the real-valued parts — ``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift``.

The transforms themselves (``fft``, ``ifft``, ``rfft``, ``irfft``, ``fft2``, ``fftn``, ``hfft``...)
produce or take complex tensors, and Oarlock's adapter contract has no complex dtype (no
plugin holds one), so they are absent: asking for one raises an ``AttributeError`` that says
so. The sample frequencies and shifts are plain real tensors and work on every device.

>>> import framework as fw
>>> fw.fft.fftfreq(4, d=0.5).tolist()
[0.0, 0.5, -1.0, -0.5]
>>> fw.fft.fftshift(fw.arange(5)).tolist()
[3, 4, 0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapter_api import OpArgumentError

from ._src.dtypes import get_default_dtype
from ._src.ops import creation as _C
from ._src.ops.composites.manipulation import roll
from ._src.tensor import Tensor

__all__ = ["fftfreq", "fftshift", "ifftshift", "rfftfreq"]

#: Paddle's transforms, each needing complex tensors
_COMPLEX = frozenset(
    "fft ifft rfft irfft hfft ihfft fft2 ifft2 rfft2 irfft2 hfft2 ihfft2 fftn ifftn rfftn irfftn hfftn ihfftn".split()
)


def _count(n: Any, fn: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise OpArgumentError(f"[{fn}] n must be a positive int, got {n!r}")
    return n


def fftfreq(n: int, d: float = 1.0, dtype: Any = None, name: str | None = None) -> Tensor:
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``: ``[0, 1, ..., -1] / (d n)``.

    Example:
        >>> import framework as fw
        >>> fw.fft.fftfreq(5).tolist()
        [0.0, 0.20000000298023224, 0.4000000059604645, -0.4000000059604645, -0.20000000298023224]
    """
    n = _count(n, "fftfreq")
    k = _C.arange(0, n, dtype=dtype or get_default_dtype())
    k = k - (k >= (n + 1) // 2).astype(k.dtype) * n
    return k / (float(d) * n)


def rfftfreq(n: int, d: float = 1.0, dtype: Any = None, name: str | None = None) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point real DFT: ``[0, 1, ..., n // 2] / (d n)``.

    Example:
        >>> import framework as fw
        >>> fw.fft.rfftfreq(4, d=0.5).tolist()
        [0.0, 0.5, 1.0]
    """
    n = _count(n, "rfftfreq")
    return _C.arange(0, n // 2 + 1, dtype=dtype or get_default_dtype()) / (float(d) * n)


def _axes(x: Tensor, axes: int | Sequence[int] | None) -> list[int]:
    if axes is None:
        return list(range(x.ndim))
    return [axes] if isinstance(axes, int) else list(axes)


def fftshift(x: Tensor, axes: int | Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """Move the zero frequency to the centre: roll each axis in ``axes`` (default all) by half its length.

    Example:
        >>> import framework as fw
        >>> fw.fft.fftshift(fw.fft.fftfreq(4)).tolist()
        [-0.5, -0.25, 0.0, 0.25]
    """
    ax = _axes(x, axes)
    return roll(x, [x.shape[a] // 2 for a in ax], ax)


def ifftshift(x: Tensor, axes: int | Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """The inverse of :func:`fftshift` (differs from it for odd lengths).

    Example:
        >>> import framework as fw
        >>> fw.fft.ifftshift(fw.fft.fftshift(fw.arange(5))).tolist()
        [0, 1, 2, 3, 4]
    """
    ax = _axes(x, axes)
    return roll(x, [-(x.shape[a] // 2) for a in ax], ax)


def __getattr__(name: str) -> Any:
    if name in _COMPLEX:
        raise AttributeError(
            f"[fft] fw.fft.{name} is not available: it produces or takes complex tensors, and Oarlock's adapter "
            f"contract has no complex dtype; fftfreq, rfftfreq, fftshift and ifftshift are here"
        )
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")

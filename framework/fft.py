"""``fw.fft`` (Paddle's ``paddle.fft``): the discrete Fourier transforms and their helpers.

The transforms (``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` and their ``2`` and
``n`` forms) run on the host with numpy's pocketfft and copy the result to the input's device
(a documented fallback: no plugin registers them); complex results are complex64 (complex128
for float64 and complex128 input), real ones float32 (float64). ``norm`` is "backward" (the
inverse scaled by 1/n, the default), "forward" or "ortho". Every transform is differentiable
(the conjugate Wirtinger convention, as Paddle's). The sample frequencies and shifts are plain
real tensors and work on every device.

>>> import framework as fw
>>> fw.fft.fft(fw.to_tensor([1.0, 2.0, 3.0, 4.0])).tolist()
[(10+0j), (-2+2j), (-2+0j), (-2-2j)]
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
from ._src.ops import complex as _CX
from ._src.ops import creation as _C
from ._src.ops import spectral as _S
from ._src.ops.composites.manipulation import roll
from ._src.tensor import Tensor

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "hfft2",
    "hfftn",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "ihfft2",
    "ihfftn",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]


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


_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _c2c(api: str, x: Any, s: Any, axes: Any, norm: Any, forward: bool) -> Tensor:
    norm = _S.check_norm(api, norm)
    x = _S.as_complex_input(api, x)
    ax, sizes = _S.axes_and_sizes(api, x, s, axes, None)
    return _S.c2c(_S.resize_all(x, ax, sizes), ax, norm, forward)


def _r2c(api: str, x: Any, s: Any, axes: Any, norm: Any) -> Tensor:
    norm = _S.check_norm(api, norm)
    x = _S.as_real_input(api, x)
    ax, sizes = _S.axes_and_sizes(api, x, s, axes, None)
    return _S.r2c(_S.resize_all(x, ax, sizes), ax, norm)


def _c2r(api: str, x: Any, s: Any, axes: Any, norm: Any) -> Tensor:
    norm = _S.check_norm(api, norm)
    x = _S.as_complex_input(api, x)
    ax, sizes = _S.axes_and_sizes(api, x, s, axes, None)
    last = int(sizes[-1]) if sizes else 2 * (x.shape[ax[-1]] - 1)
    if last < 1:
        raise OpArgumentError(
            f"[{api}] the output length along axis {ax[-1]} must be positive: give n (s), the input has "
            f"{x.shape[ax[-1]]} bins there"
        )
    if sizes:
        x = _S.resize_all(x, ax[:-1], sizes[:-1])
    return _S.c2r(_S.resize(x, ax[-1], last // 2 + 1), ax, norm, last)


def _hermitian(api: str, x: Any, s: Any, axes: Any, norm: Any) -> Tensor:
    """numpy's hfft: the real transform of the conjugate, the norm's direction swapped."""
    norm = _S.check_norm(api, norm)
    return _c2r(api, _CX.conj(_S.as_complex_input(api, x)), s, axes, _SWAP[norm])


def _ihermitian(api: str, x: Any, s: Any, axes: Any, norm: Any) -> Tensor:
    norm = _S.check_norm(api, norm)
    return _CX.conj(_r2c(api, x, s, axes, _SWAP[norm]))


def _one(n: Any) -> list[int] | None:
    return None if n is None else [n]


def fft(
    x: Tensor, n: int | None = None, axis: int = -1, norm: str = "backward", name: str | None = None
) -> Tensor:
    """The one-dimensional DFT of ``x`` along ``axis``.

    Args:
        x (Tensor): real or complex; real input is taken as complex.
        n (int, optional): the length: ``x`` is cropped or zero-padded to it first.
        axis (int): the axis to transform.
        norm (str): "backward" (no scaling), "forward" (1/n) or "ortho" (1/sqrt(n)).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: complex64 (complex128 for float64 and complex128 input).

    Example:
        >>> import framework as fw
        >>> fw.fft.fft(fw.to_tensor([1.0, 0.0, 0.0, 0.0]), n=2).tolist()
        [(1+0j), (1+0j)]
    """
    return _c2c("fft", x, _one(n), axis, norm, True)


def ifft(
    x: Tensor, n: int | None = None, axis: int = -1, norm: str = "backward", name: str | None = None
) -> Tensor:
    """The one-dimensional inverse DFT of ``x`` along ``axis`` (scaled by 1/n with the default norm).

    Example:
        >>> import framework as fw
        >>> fw.fft.ifft(fw.fft.fft(fw.to_tensor([1.0, 2.0]))).tolist()
        [(1+0j), (2+0j)]
    """
    return _c2c("ifft", x, _one(n), axis, norm, False)


def rfft(
    x: Tensor, n: int | None = None, axis: int = -1, norm: str = "backward", name: str | None = None
) -> Tensor:
    """The DFT of a real ``x`` along ``axis``, its ``n // 2 + 1`` non-negative frequencies.

    Example:
        >>> import framework as fw
        >>> fw.fft.rfft(fw.to_tensor([1.0, 2.0, 3.0, 4.0])).tolist()
        [(10+0j), (-2+2j), (-2+0j)]
    """
    return _r2c("rfft", x, _one(n), axis, norm)


def irfft(
    x: Tensor, n: int | None = None, axis: int = -1, norm: str = "backward", name: str | None = None
) -> Tensor:
    """The real inverse of :func:`rfft`: ``n`` real samples (default ``2 * (x.shape[axis] - 1)``).

    Example:
        >>> import framework as fw
        >>> fw.fft.irfft(fw.fft.rfft(fw.to_tensor([1.0, 2.0, 3.0, 4.0]))).tolist()
        [1.0, 2.0, 3.0, 4.0]
    """
    return _c2r("irfft", x, _one(n), axis, norm)


def hfft(
    x: Tensor, n: int | None = None, axis: int = -1, norm: str = "backward", name: str | None = None
) -> Tensor:
    """The DFT of a Hermitian-symmetric signal given by its first half: ``n`` real values.

    Example:
        >>> import framework as fw
        >>> fw.fft.hfft(fw.to_tensor([1.0, 2.0, 3.0]), n=4).tolist()
        [8.0, -2.0, 0.0, -2.0]
    """
    return _hermitian("hfft", x, _one(n), axis, norm)


def ihfft(
    x: Tensor, n: int | None = None, axis: int = -1, norm: str = "backward", name: str | None = None
) -> Tensor:
    """The inverse of :func:`hfft`: the first half of the inverse DFT of a real ``x``.

    Example:
        >>> import framework as fw
        >>> fw.fft.ihfft(fw.to_tensor([8.0, -2.0, 0.0, -2.0])).tolist()
        [(1-0j), (2-0j), (3-0j)]
    """
    return _ihermitian("ihfft", x, _one(n), axis, norm)


def fft2(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The two-dimensional DFT over ``axes`` (:func:`fftn` on two axes).

    Example:
        >>> import framework as fw
        >>> fw.fft.fft2(fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [[(10+0j), (-2+0j)], [(-4+0j), 0j]]
    """
    return _c2c("fft2", x, s, axes, norm, True)


def ifft2(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The two-dimensional inverse DFT over ``axes``.

    Example:
        >>> import framework as fw
        >>> fw.fft.ifft2(fw.to_tensor([[4.0, 0.0], [0.0, 0.0]])).tolist()
        [[(1+0j), (1+0j)], [(1+0j), (1+0j)]]
    """
    return _c2c("ifft2", x, s, axes, norm, False)


def rfft2(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The two-dimensional DFT of a real ``x``, one-sided on the last axis.

    Example:
        >>> import framework as fw
        >>> fw.fft.rfft2(fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [[(10+0j), (-2+0j)], [(-4+0j), 0j]]
    """
    return _r2c("rfft2", x, s, axes, norm)


def irfft2(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The real inverse of :func:`rfft2`.

    Example:
        >>> import framework as fw
        >>> fw.fft.irfft2(fw.fft.rfft2(fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]))).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    return _c2r("irfft2", x, s, axes, norm)


def hfft2(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The two-dimensional :func:`hfft`: real output from a Hermitian half-spectrum.

    Example:
        >>> import framework as fw
        >>> fw.fft.hfft2(fw.to_tensor([[1.0, 0.0], [0.0, 0.0]])).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _hermitian("hfft2", x, s, axes, norm)


def ihfft2(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The inverse of :func:`hfft2`, from a real ``x``.

    Example:
        >>> import framework as fw
        >>> fw.fft.ihfft2(fw.to_tensor([[1.0, 1.0], [1.0, 1.0]])).tolist()
        [[(1-0j), -0j], [-0j, -0j]]
    """
    return _ihermitian("ihfft2", x, s, axes, norm)


def fftn(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The N-dimensional DFT over ``axes`` (default all, or the last ``len(s)``).

    Args:
        x (Tensor): real or complex; real input is taken as complex.
        s (list[int], optional): the length per axis: ``x`` is cropped or zero-padded to it first.
        axes (list[int], optional): the axes to transform.
        norm (str): "backward" (no scaling), "forward" (1/n) or "ortho" (1/sqrt(n)).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: complex64 (complex128 for float64 and complex128 input).

    Example:
        >>> import framework as fw
        >>> fw.fft.fftn(fw.ones([2, 2])).tolist()
        [[(4+0j), 0j], [0j, 0j]]
    """
    return _c2c("fftn", x, s, axes, norm, True)


def ifftn(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The N-dimensional inverse DFT over ``axes``.

    Example:
        >>> import framework as fw
        >>> fw.fft.ifftn(fw.to_tensor([[4.0, 0.0], [0.0, 0.0]])).tolist()
        [[(1+0j), (1+0j)], [(1+0j), (1+0j)]]
    """
    return _c2c("ifftn", x, s, axes, norm, False)


def rfftn(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The N-dimensional DFT of a real ``x``, one-sided on the last axis.

    Example:
        >>> import framework as fw
        >>> fw.fft.rfftn(fw.ones([2, 2])).tolist()
        [[(4+0j), 0j], [0j, 0j]]
    """
    return _r2c("rfftn", x, s, axes, norm)


def irfftn(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The real inverse of :func:`rfftn`.

    Example:
        >>> import framework as fw
        >>> fw.fft.irfftn(fw.fft.rfftn(fw.ones([2, 2]))).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _c2r("irfftn", x, s, axes, norm)


def hfftn(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The N-dimensional :func:`hfft`.

    Example:
        >>> import framework as fw
        >>> fw.fft.hfftn(fw.to_tensor([[1.0, 0.0], [0.0, 0.0]])).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _hermitian("hfftn", x, s, axes, norm)


def ihfftn(
    x: Tensor,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    name: str | None = None,
) -> Tensor:
    """The inverse of :func:`hfftn`, from a real ``x``.

    Example:
        >>> import framework as fw
        >>> fw.fft.ihfftn(fw.ones([2, 2])).tolist()
        [[(1-0j), -0j], [-0j, -0j]]
    """
    return _ihermitian("ihfftn", x, s, axes, norm)

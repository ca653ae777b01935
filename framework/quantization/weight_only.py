"""Better int4 (and int8) weight-only quantisers than one abs-max scale per group: what the
``method``, ``asymmetric`` and ``calibration`` arguments of
:func:`~framework.quantization.weight_only_quantize` run.

- ``"absmax"``: Paddle's ``weight_quantize`` (``scale = abs-max / qmax``), unchanged.
- ``"search"``: per group and output channel, the clipping range is shrunk by each ratio of a
  grid (1.0 down to ``min_ratio``) and the one with the least squared reconstruction error is
  kept (the clip search of AWQ and llama.cpp). With calibration data the error of input row
  ``t`` is weighted by ``E[x_t^2]`` (activation-aware).
- ``"gptq"``: GPTQ (Frantar et al. 2022): the columns of each output channel are quantised
  one input row at a time and the rounding error of each is spread over the rows not yet
  quantised through the inverse of the layer's input Hessian ``H = sum x^T x`` (from
  calibration data run through the float model); a group's scale (and zero point) is taken
  from the updated weights when the group starts.

``asymmetric=True`` stores ``u = clip(round(w / s) + z, 0, 2^b - 1)`` with ``s = (hi - lo) /
(2^b - 1)`` and an integer zero point ``z = round(-lo / s)``; the weight keeps
``q = u - 2^(b-1)`` (so the packed int4 / int8 bytes and the ``weight_only_linear`` kernels are
the symmetric ones) and ``w = s * q + c`` with a float offset ``c = s * (2^(b-1) - z)`` per
group and channel: :class:`AsymmetricWeightOnlyLinear` passes ``c`` to
``weight_only_linear`` as ``weight_offset`` (the cpu kernel adds each group's sum of ``x``
times ``c`` in the product's pass; the decomposition adds it by one small product).
Symmetric values are ``round(w / s)`` with halves away from zero, clipped to ``+-qmax``
(``qmax`` 7 or 127), as ``weight_quantize`` writes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.ops.composites.quant import weight_only_linear
from .._src.tensor import Tensor, to_tensor
from ..nn.common import Linear
from ..nn.layer import Layer
from ..nn.quant import WeightOnlyLinear

_BITS = {"int8": 8, "int4": 4}
METHODS = ("absmax", "search", "gptq")


def _round_away(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _group_bounds(k: int, group_size: int) -> list[tuple[int, int]]:
    g = k if group_size == -1 else group_size
    return [(lo, min(lo + g, k)) for lo in range(0, k, g)]


def _params(b: np.ndarray, bits: int, asymmetric: bool, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point ``[n]`` of the rows ``b`` ``[g, n]`` clipped to ``ratio`` of their
    range (the zero point is 0 for symmetric)."""
    if asymmetric:
        levels = 2**bits - 1
        hi, lo = np.maximum(b.max(0) * ratio, 0.0), np.minimum(b.min(0) * ratio, 0.0)
        s = (hi - lo) / levels
        s = np.where(s == 0, 1.0, s)
        return s, np.clip(_round_away(-lo / s), 0, levels)
    qmax = 2 ** (bits - 1) - 1
    s = np.abs(b).max(0) * ratio / qmax
    return np.where(s == 0, 1.0, s), np.zeros(b.shape[1])


def _quantise(b: np.ndarray, s: np.ndarray, z: np.ndarray, bits: int, asymmetric: bool) -> np.ndarray:
    """Stored integers ``q`` (``u - 2^(b-1)`` for asymmetric) of the rows ``b`` ``[g, n]``."""
    if asymmetric:
        half = 2 ** (bits - 1)
        return np.clip(_round_away(b / s) + z, 0, 2 * half - 1) - half
    qmax = 2 ** (bits - 1) - 1
    return np.clip(_round_away(b / s), -qmax, qmax)


def _dequantised(q: np.ndarray, s: np.ndarray, z: np.ndarray, bits: int, asymmetric: bool) -> np.ndarray:
    return (q + (2 ** (bits - 1) - z if asymmetric else 0.0)) * s


def _best_params(
    b: np.ndarray, bits: int, asymmetric: bool, ratios: np.ndarray, row_weight: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The clipping ratio of ``ratios`` with the least (row-weighted) squared error, per channel."""
    best_s = best_z = None
    best_err = np.full(b.shape[1], np.inf)
    for r in ratios:
        s, z = _params(b, bits, asymmetric, float(r))
        e = np.square(_dequantised(_quantise(b, s, z, bits, asymmetric), s, z, bits, asymmetric) - b)
        err = (e if row_weight is None else e * row_weight[:, None]).sum(0)
        if best_s is None:
            best_s, best_z = s, z
        better = err < best_err
        best_s, best_z = np.where(better, s, best_s), np.where(better, z, best_z)
        best_err = np.minimum(err, best_err)
    assert best_s is not None and best_z is not None
    return best_s, best_z


def quantize_groups(
    w: np.ndarray,
    bits: int = 4,
    group_size: int = -1,
    asymmetric: bool = False,
    method: str = "search",
    hessian: np.ndarray | None = None,
    grid: int = 20,
    min_ratio: float = 0.5,
    damp: float = 0.01,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Quantise a float weight ``w`` ``[k, n]`` (``in_features, out_features``) group-wise.

    Args:
        w: the weight.
        bits: 4 or 8.
        group_size: input rows per scale (``-1``: one group, a scale per output channel).
        asymmetric: a zero point per group and channel (see the module docstring).
        method: ``"absmax"``, ``"search"`` or ``"gptq"``.
        hessian: ``[k, k]`` ``sum x^T x`` of the layer's inputs: required by ``"gptq"``; for
            ``"search"`` its diagonal weights the error of each input row.
        grid, min_ratio: the clipping ratios ``linspace(1, min_ratio, grid)`` of ``"search"``.
        damp: ``"gptq"`` adds ``damp * mean(diag H)`` to the diagonal.

    Returns:
        ``q`` ``[n, k]`` int8 (values in ``[-2^(b-1), 2^(b-1) - 1]``, unpacked), ``scale``
        ``[groups, n]`` float64, and the offset ``c`` ``[groups, n]`` float64 (None when
        symmetric): the dequantised weight is ``(q * scale + c)`` spread over the groups, transposed.

    Example:
        >>> import numpy as np
        >>> from framework.quantization.weight_only import quantize_groups
        >>> w = np.random.default_rng(0).standard_normal((64, 8))
        >>> q, s, c = quantize_groups(w, 4, 32, asymmetric=True)
        >>> q.shape, s.shape, c.shape, int(q.min()) >= -8, int(q.max()) <= 7
        ((8, 64), (2, 8), (2, 8), True, True)
    """
    if method not in METHODS:
        raise OpArgumentError(f"[quantize_groups] method must be one of {METHODS}, got {method!r}")
    if bits not in (4, 8):
        raise OpArgumentError(f"[quantize_groups] bits must be 4 or 8, got {bits!r}")
    w = np.asarray(w, np.float64)
    if w.ndim != 2:
        raise OpArgumentError(
            f"[quantize_groups] w must be 2-d [in_features, out_features], got shape {w.shape}"
        )
    k, n = w.shape
    if method == "gptq" and (hessian is None or np.shape(hessian) != (k, k)):
        raise OpArgumentError(
            f"[quantize_groups] method 'gptq' needs the inputs' hessian [{k}, {k}] (calibration data), "
            f"got {None if hessian is None else np.shape(hessian)}"
        )
    bounds = _group_bounds(k, group_size)
    ratios = np.linspace(1.0, min_ratio, grid) if method == "search" else np.array([1.0])
    q = np.empty((k, n))
    scale, zero = np.empty((len(bounds), n)), np.empty((len(bounds), n))
    if method != "gptq":
        diag = None if hessian is None else np.diag(np.asarray(hessian, np.float64))
        for g, (lo, hi) in enumerate(bounds):
            b = w[lo:hi]
            s, z = _best_params(b, bits, asymmetric, ratios, None if diag is None else diag[lo:hi])
            q[lo:hi], scale[g], zero[g] = _quantise(b, s, z, bits, asymmetric), s, z
    else:
        _gptq(w.copy(), np.asarray(hessian, np.float64), bits, asymmetric, bounds, damp, q, scale, zero)
    offset = (2 ** (bits - 1) - zero) * scale if asymmetric else None
    return q.T.astype(np.int8), scale, offset


def _gptq(
    w: np.ndarray,
    h: np.ndarray,
    bits: int,
    asymmetric: bool,
    bounds: list[tuple[int, int]],
    damp: float,
    q: np.ndarray,
    scale: np.ndarray,
    zero: np.ndarray,
) -> None:
    """GPTQ over the rows of ``w`` ``[k, n]`` in order, writing ``q``, ``scale``, ``zero``."""
    k = w.shape[0]
    h = h.copy()
    dead = np.diag(h) == 0  # an input that is always zero: its weight does not matter
    h[dead, dead] = 1.0
    w[dead] = 0.0
    h += damp * np.mean(np.diag(h)) * np.eye(k)
    u = np.linalg.cholesky(np.linalg.inv(h)).T  # upper: row t holds the updates rows > t receive
    starts = {lo: g for g, (lo, _) in enumerate(bounds)}
    s = z = np.zeros(w.shape[1])
    for t in range(k):
        if t in starts:
            g = starts[t]
            lo, hi = bounds[g]
            s, z = _params(w[lo:hi], bits, asymmetric, 1.0)
            scale[g], zero[g] = s, z
        qt = _quantise(w[t : t + 1], s, z, bits, asymmetric)[0]
        q[t] = qt
        err = (w[t] - _dequantised(qt, s, z, bits, asymmetric)) / u[t, t]
        w[t + 1 :] -= np.outer(u[t, t + 1 :], err)


def pack_int4_numpy(q: np.ndarray) -> np.ndarray:
    """``[n, k]`` int4 values (int8) -> ``[n / 2, k]`` bytes, channel ``2j`` in the low nibble."""
    lo = q[0::2].astype(np.int16) & 15
    hi = (q[1::2].astype(np.int16) & 15) << 4
    return (lo | hi).astype(np.uint8).view(np.int8)


class AsymmetricWeightOnlyLinear(WeightOnlyLinear):
    """A :class:`~framework.nn.quant.WeightOnlyLinear` with a zero point per group: the stored
    integers ``q = u - 2^(b-1)`` and the offsets ``c = (2^(b-1) - z) * s`` ``[groups, n]`` run
    through one ``weight_only_linear`` (``weight_offset=c``: the cpu kernel adds each group's
    sum of ``x`` times ``c`` in the product's pass). Build it with
    ``weight_only_quantize(..., asymmetric=True)``.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import weight_only_quantize
        >>> m = weight_only_quantize(fw.nn.Sequential(fw.nn.Linear(64, 8)), "int4", group_size=32, asymmetric=True)
        >>> type(m[0]).__name__, m[0].weight_offset.shape, m(fw.ones([2, 64])).shape
        ('AsymmetricWeightOnlyLinear', (2, 8), (2, 8))
    """

    def forward(self, x: Tensor) -> Tensor:
        return weight_only_linear(
            x,
            self.weight,
            self.bias,
            self.weight_scale,
            self.weight_dtype,
            group_size=self.group_size,
            weight_offset=self.weight_offset,
        )


def quantized_linear(
    linear: Linear,
    weight_dtype: str,
    group_size: int,
    method: str,
    asymmetric: bool,
    hessian: np.ndarray | None,
) -> WeightOnlyLinear:
    """The weight-only layer of ``linear`` quantised by ``method`` (see the module docstring)."""
    layer_cls = AsymmetricWeightOnlyLinear if asymmetric else WeightOnlyLinear
    layer = layer_cls(linear, weight_dtype, group_size)  # Paddle's abs-max buffers, then replaced
    if method == "absmax" and not asymmetric:
        return layer
    w = linear.weight.detach().numpy()
    dt = w.dtype
    q, s, c = quantize_groups(w, _BITS[weight_dtype], group_size, asymmetric, method, hessian)
    packed = pack_int4_numpy(q) if weight_dtype == "int4" else q
    dev = layer.weight.device
    layer.weight = to_tensor(packed, device=dev)
    layer.weight_scale = to_tensor((s[0] if group_size == -1 else s).astype(dt), device=dev)
    if asymmetric:
        assert c is not None
        layer.register_buffer("weight_offset", to_tensor(c.astype(dt), device=dev))
    return layer


def input_hessians(model: Layer, calibration: Iterable[Any], names: set[str]) -> dict[str, np.ndarray]:
    """``sum x^T x`` (float64) of the inputs each ``nn.Linear`` named in ``names`` sees while
    ``model`` runs on each calibration batch (a tensor, or a tuple of the forward's arguments)."""
    from .._src.autograd import no_grad

    acc: dict[str, np.ndarray] = {}
    handles = []
    for name, layer in model.named_sublayers():
        if name in names and isinstance(layer, Linear):

            def hook(lay: Layer, inputs: tuple, name: str = name) -> None:
                x = inputs[0].numpy()
                x = x.reshape(-1, x.shape[-1]).astype(np.float64)
                acc[name] = acc.get(name, 0.0) + x.T @ x

            handles.append(layer.register_forward_pre_hook(hook))
    try:
        with no_grad():
            for batch in calibration:
                model(*batch) if isinstance(batch, (tuple, list)) else model(batch)
    finally:
        for hd in handles:
            hd.remove()
    if not acc:
        raise OpArgumentError(
            "[weight_only_quantize] the calibration data reached no nn.Linear; pass batches the model's "
            "forward takes (a tensor or a tuple of its arguments each)"
        )
    return acc


__all__ = ["METHODS", "AsymmetricWeightOnlyLinear", "input_hessians", "quantize_groups", "quantized_linear"]

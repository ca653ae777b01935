"""Float8 (the storage dtypes of ``dtypes.FLOAT8_DTYPES``): the scaled product
``scaled_matmul`` and the OCP spec's saturating conversion ``float8_saturate``.

A float8 tensor is storage only (arithmetic on it is refused, naming the op); what computes
with it is ``scaled_matmul``, a composite defined by its decomposition: dequantise both
operands to float32 (``a * scale_a``, ``b * scale_b``; float8 -> float32 is exact), one float32
product (float64 for a float64 result), then one rounding to ``out_dtype``. A plugin with float8 tensor cores may register a
fused ``scaled_matmul`` kernel under the same name.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import math as M
from ..base import OPS, call, composite
from ._common import tensor_arg
from .activation import gelu, relu


def _scaled_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = ins[0], ins[1]
    return [((a.shape[0], b.shape[1]), attrs["out_dtype"])]


def _scaled_flops(ins: list[tuple[int, ...]], outs: list[tuple[int, ...]], attrs: dict[str, Any]) -> float:
    return 2.0 * math.prod(outs[0]) * ins[0][-1]


@composite(
    "scaled_matmul",
    infer=_scaled_infer,
    flops=_scaled_flops,
    amp="allow",
    no_sharding="decomposes into casts, products by the scales and a matmul, which have their rules",
)
def scaled_matmul_decomposition(
    a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, out_dtype: np.dtype = _dt.float32
) -> Tensor:
    """``cast((a * scale_a) @ (b * scale_b), out_dtype)`` with the operands dequantised to
    float32 (float64 for a float64 result)."""
    wide = _dt.float64 if out_dtype == _dt.float64 else _dt.float32
    x = M.cast(a, wide) * M.cast(scale_a, wide)
    y = M.cast(b, wide) * M.cast(scale_b, wide)
    return M.cast(M.matmul(x, y), out_dtype)


OPS[
    "scaled_matmul"
].no_grad = "its operands are float8 storage, which carries no gradient (as torch's _scaled_mm)"


def _scale_arg(name: str, s: Any, what: str, ok: tuple[tuple[int, ...], ...]) -> Tensor:
    s = tensor_arg(name, s, what)
    if tuple(s.shape) not in ok or s.dtype != _dt.float32:
        shapes = " or ".join(str(list(o)) for o in ok)
        raise OpArgumentError(
            f"[{name}] {what} must be a float32 tensor of shape {shapes} (per tensor, or per row of a / "
            f"column of b), got {list(s.shape)} {s.dtype}"
        )
    return s


def scaled_matmul(
    a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, out_dtype: Any = "float32"
) -> Tensor:
    """``(a * scale_a) @ (b * scale_b)`` for float8 ``a`` ``[m, k]`` and ``b`` ``[k, n]``, computed
    in float32 (float64 for a float64 result) and rounded once to ``out_dtype`` (torch's
    ``_scaled_mm``).

    Args:
        a (Tensor): ``[m, k]``, a float8 dtype (``fw.float8_e4m3fn`` and the others).
        b (Tensor): ``[k, n]``, a float8 dtype (it may differ from ``a``'s: e4m3 x e5m2).
        scale_a (Tensor): float32, ``[]`` or ``[1]`` (per tensor) or ``[m, 1]`` (per row).
        scale_b (Tensor): float32, ``[]`` or ``[1]`` (per tensor) or ``[1, n]`` (per column).
        out_dtype (str | np.dtype): float32, float16, bfloat16 or float64.

    Returns:
        Tensor: ``[m, n]`` of ``out_dtype``; not differentiable (float8 inputs).

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import scaled_matmul
        >>> a = fw.to_tensor([[1.0, 2.0]]).astype(fw.float8_e4m3fn)
        >>> b = fw.to_tensor([[3.0], [0.5]]).astype(fw.float8_e5m2)
        >>> scaled_matmul(a, b, fw.to_tensor(0.5), fw.to_tensor(2.0)).tolist()
        [[4.0]]
    """
    name = "scaled_matmul"
    a, b = tensor_arg(name, a, "a"), tensor_arg(name, b, "b")
    for what, t in (("a", a), ("b", b)):
        if not _dt.is_float8(t.dtype) or t.ndim != 2:
            raise OpArgumentError(
                f"[{name}] {what} must be a 2-d float8 tensor ({', '.join(map(str, _dt.FLOAT8_DTYPES))}), "
                f"got {list(t.shape)} {t.dtype}; cast it with x.astype('float8_e4m3fn')"
            )
    if a.shape[1] != b.shape[0]:
        raise OpArgumentError(f"[{name}] a {list(a.shape)} and b {list(b.shape)}: the inner sizes differ")
    m, n = a.shape[0], b.shape[1]
    sa = _scale_arg(name, scale_a, "scale_a", ((), (1,), (m, 1)))
    sb = _scale_arg(name, scale_b, "scale_b", ((), (1,), (1, n)))
    d = _dt.as_dtype(out_dtype, name)
    if d not in _dt.FLOAT_DTYPES:
        raise OpArgumentError(
            f"[{name}] out_dtype must be one of {[str(f) for f in _dt.FLOAT_DTYPES]}, got {d}"
        )
    return call(OPS[name], [a, b, sa, sb], {"out_dtype": d})


def float8_saturate(x: Tensor, dtype: Any) -> Tensor:
    """``x`` converted to a float8 ``dtype`` in the OCP spec's saturating mode: values beyond the
    largest finite one (infinities included) become it, with their sign; NaN stays NaN; the
    rest round to nearest even, as ``x.astype(dtype)`` (which is not saturating: it gives NaN,
    or inf for e5m2, as ml_dtypes and torch do). ONNX ``Cast`` with ``saturate=1`` is this.

    Args:
        x (Tensor): a float tensor.
        dtype (str | np.dtype): a float8 dtype.

    Returns:
        Tensor: of ``dtype``.

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import float8_saturate
        >>> x = fw.to_tensor([500.0, -float("inf"), 0.3])
        >>> float8_saturate(x, fw.float8_e4m3fn).astype("float32").tolist()
        [448.0, -448.0, 0.3125]
    """
    x = tensor_arg("float8_saturate", x)
    d = _dt.as_dtype(dtype, "float8_saturate")
    if not _dt.is_float8(d) or not _dt.is_floating(x.dtype) or _dt.is_float8(x.dtype):
        raise OpArgumentError(
            f"[float8_saturate] converts a float tensor to a float8 dtype, got {x.dtype} -> {d}; "
            f"float8 dtypes: {', '.join(map(str, _dt.FLOAT8_DTYPES))}"
        )
    big = float(ml_dtypes.finfo(d).max)
    return M.cast(M.clip(x, -big, big), d)


#: the epilogues of Paddle's fp8_fp8_half_gemm_fused
_FP8_GEMM_ACTS = ("identity", "relu", "gelu")


def fp8_fp8_half_gemm_fused(
    x: Tensor,
    y: Tensor,
    transpose_x: bool = False,
    transpose_y: bool = False,
    bias: Tensor | None = None,
    scale: float = 1.0,
    output_dtype: str = "float16",
    act: str = "identity",
    name: str | None = None,
) -> Tensor:
    """``act(scale * (x @ y) + bias)`` of float8 ``x`` and ``y``, rounded once to float16 or
    bfloat16 (Paddle's ``paddle.tensor.linalg.fp8_fp8_half_gemm_fused``, which Paddle runs on
    CUDA only; here a composite on every device).

    The operands are widened to float32 (exact for float8), multiplied, scaled, biased and
    activated in float32, then rounded to ``output_dtype``: one rounding, as a cuBLASLt
    epilogue does.

    Args:
        x (Tensor): ``[..., m, k]`` (``[..., k, m]`` with ``transpose_x``), float8.
        y (Tensor): ``[..., k, n]`` (``[..., n, k]`` with ``transpose_y``), float8.
        transpose_x (bool): use ``x``'s last two dims swapped.
        transpose_y (bool): use ``y``'s last two dims swapped.
        bias (Tensor, optional): ``[n]``, added after the scale.
        scale (float): multiplies the product.
        output_dtype (str): ``"float16"`` or ``"bfloat16"``.
        act (str): ``"identity"``, ``"relu"`` or ``"gelu"`` (erf form).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., m, n]`` of ``output_dtype``; not differentiable (float8 inputs).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0]]).astype("float8_e4m3fn")
        >>> y = fw.to_tensor([[3.0], [-0.5]]).astype("float8_e4m3fn")
        >>> out = fw.tensor.linalg.fp8_fp8_half_gemm_fused(x, y, scale=2.0, bias=fw.to_tensor([1.0]), act="relu")
        >>> out.dtype, out.tolist()
        (dtype('float16'), [[5.0]])
    """
    op = "fp8_fp8_half_gemm_fused"
    x, y = tensor_arg(op, x, "x"), tensor_arg(op, y, "y")
    for what, t in (("x", x), ("y", y)):
        if not _dt.is_float8(t.dtype) or t.ndim < 2:
            raise OpArgumentError(
                f"[{op}] {what} must be a float8 tensor of at least 2 dims, got {list(t.shape)} {t.dtype}; "
                "cast it with x.astype('float8_e4m3fn')"
            )
    if output_dtype not in ("float16", "bfloat16"):
        raise OpArgumentError(f"[{op}] output_dtype must be 'float16' or 'bfloat16', got {output_dtype!r}")
    if act not in _FP8_GEMM_ACTS:
        raise OpArgumentError(f"[{op}] act must be one of {list(_FP8_GEMM_ACTS)}, got {act!r}")
    a, b = M.cast(x, _dt.float32), M.cast(y, _dt.float32)
    out = M.matmul(a, b, transpose_x=transpose_x, transpose_y=transpose_y)
    if scale != 1.0:
        out = out * float(scale)
    if bias is not None:
        bias = tensor_arg(op, bias, "bias")
        if tuple(bias.shape) != (out.shape[-1],):
            raise OpArgumentError(f"[{op}] bias must be of shape [{out.shape[-1]}], got {list(bias.shape)}")
        out = out + M.cast(bias, _dt.float32)
    if act != "identity":
        out = (relu if act == "relu" else gelu)(out)
    return M.cast(out, _dt.as_dtype(output_dtype, op))

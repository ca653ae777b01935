"""``summary`` (a table of layers, output shapes and parameter counts) and ``flops``
(multiply-accumulates of Linear and convolution layers), both from one forward pass with
forward hooks on every leaf layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.autograd import no_grad
from .._src.ops import creation as _C
from .._src.tensor import Tensor


def _inputs(name: str, input_size: Any, dtypes: Any, input: Any) -> list[Tensor]:
    from ..static import InputSpec

    if input is not None:
        return list(input) if isinstance(input, (list, tuple)) else [input]
    if input_size is None:
        raise OpArgumentError(
            f"[{name}] pass input_size (a shape, a list of shapes or InputSpecs) or input (tensors)"
        )
    many = (
        isinstance(input_size, (list, tuple))
        and input_size
        and isinstance(input_size[0], (tuple, list, InputSpec))
    )
    sizes = list(input_size) if many else [input_size]
    dts = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes] * len(sizes)
    out = []
    for s, d in zip(sizes, dts):
        if isinstance(s, InputSpec):
            shape, d = (
                tuple(v if isinstance(v, int) and v >= 0 else 1 for v in s.shape),
                s.dtype,
            )  # unknown dims: 1
        else:
            shape = tuple(1 if v is None or v == -1 else int(v) for v in s)
        out.append(_C.ones(shape, dtype=d or "float32"))
    return out


def _leaves(net: Any) -> list[tuple[str, Any]]:
    return [(n, m) for n, m in net.named_sublayers() if not list(m.children())] or [(type(net).__name__, net)]


def _run_with_hooks(net: Any, inputs: list[Tensor], hook: Callable[[str, Any, tuple, Any], None]) -> None:
    handles = []
    for n, m in _leaves(net):
        handles.append(m.register_forward_post_hook(lambda layer, ins, out, n=n: hook(n, layer, ins, out)))
    was_training = net.training
    net.eval()
    try:
        with no_grad():
            net(*inputs)
    finally:
        for h in handles:
            h.remove()
        net.train(was_training)


def _shape(out: Any) -> Any:
    if isinstance(out, Tensor):
        return list(out.shape)
    if isinstance(out, (list, tuple)):
        return [_shape(o) for o in out]
    return "-"


def summary(net: Any, input_size: Any = None, dtypes: Any = None, input: Any = None) -> dict[str, int]:
    """Print a table of ``net``'s leaf layers (name, type, output shape, parameters) and the totals.

    Args:
        net (Layer): the network.
        input_size (list[int] | tuple[int] | list, optional): the input shape (or one per
            input); unknown dims (None/-1) become 1.
        dtypes (str | list[str], optional): the input dtypes; default float32.
        input (Tensor | list[Tensor], optional): inputs to run instead of ``input_size``.

    Returns:
        dict[str, int]: ``{"total_params": n, "trainable_params": m}``.

    Example:
        >>> import framework as fw
        >>> info = fw.summary(fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.ReLU()), (2, 4))
        -----------------------------------------------
        Layer  Type    Output Shape         Param #
        ===============================================
        0      Linear  [2, 8]                    40
        1      ReLU    [2, 8]                     0
        ===============================================
        Total params: 40
        Trainable params: 40
        Non-trainable params: 0
        -----------------------------------------------
        >>> info
        {'total_params': 40, 'trainable_params': 40}
    """
    inputs = _inputs("summary", input_size, dtypes, input)
    rows: list[tuple[str, str, str, int]] = []

    def hook(name: str, layer: Any, ins: tuple, out: Any) -> None:
        n = sum(int(np.prod(p.shape)) for p in layer.parameters(include_sublayers=False))
        rows.append((name, type(layer).__name__, str(_shape(out)), n))

    _run_with_hooks(net, inputs, hook)
    params = net.parameters()
    total = sum(int(np.prod(p.shape)) for p in params)
    trainable = sum(int(np.prod(p.shape)) for p in params if not p.stop_gradient)
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
        for i, h in enumerate(("Layer", "Type", "Output Shape"))
    ]
    line = "-" * (sum(widths) + 24)
    print(line)
    print(f"{'Layer':<{widths[0]}}  {'Type':<{widths[1]}}  {'Output Shape':<{widths[2]}}  {'Param #':>14}")
    print("=" * len(line))
    for name, typ, shp, n in rows:
        print(f"{name:<{widths[0]}}  {typ:<{widths[1]}}  {shp:<{widths[2]}}  {n:>14,}")
    print("=" * len(line))
    print(
        f"Total params: {total:,}\nTrainable params: {trainable:,}\nNon-trainable params: {total - trainable:,}"
    )
    print(line)
    return {"total_params": total, "trainable_params": trainable}


def _numel(t: Any) -> int:
    return int(np.prod(t.shape)) if isinstance(t, Tensor) else 0


def _count(layer: Any, ins: tuple, out: Any) -> int:
    """Multiply-accumulates of one leaf layer's forward (Paddle's counting rules)."""
    kind = type(layer).__name__
    if kind == "Linear":
        return layer.weight.shape[0] * _numel(out)
    if kind in ("Conv1D", "Conv2D", "Conv3D"):
        per_out = int(np.prod(layer.weight.shape[1:])) + (
            1 if getattr(layer, "bias", None) is not None else 0
        )
        return per_out * _numel(out)
    if kind in ("Conv1DTranspose", "Conv2DTranspose"):
        # every input pixel is scattered through the whole (C_out/groups, k...) kernel
        per_in = int(np.prod(layer.weight.shape[1:]))
        return per_in * _numel(ins[0]) + (_numel(out) if getattr(layer, "bias", None) is not None else 0)
    if kind == "Bilinear":
        return int(np.prod(layer.weight.shape)) * (_numel(out) // layer.weight.shape[0])
    if kind in ("BatchNorm1D", "BatchNorm2D", "SyncBatchNorm", "LayerNorm", "GroupNorm", "InstanceNorm2D"):
        return 2 * _numel(out)
    return 0


def flops(
    net: Any,
    input_size: Any,
    custom_ops: dict[type, Callable[..., int]] | None = None,
    print_detail: bool = False,
) -> int:
    """The multiply-accumulates of one forward pass of ``net`` at ``input_size``; prints the totals.

    Linear counts in x out per row; convolutions the kernel volume x C_in/groups per output
    (+ 1 with a bias), transposed convolutions and Bilinear likewise, normalisation layers 2 per
    element; activations and pools count 0. Work done outside layers (a bare ``fw.matmul`` in
    ``forward``) is not counted, as in Paddle.

    Args:
        net (Layer): the network.
        input_size (list[int] | list[list[int]]): the input shape (or one per input).
        custom_ops (dict, optional): ``{layer type: fn(layer, inputs, output) -> int}``.
        print_detail (bool): also print one row per layer.

    Returns:
        int: the total.

    Example:
        >>> import framework as fw
        >>> fw.flops(fw.nn.Linear(4, 8), [2, 4])
        Total Flops: 64     Total Params: 40
        64
    """
    inputs = _inputs("flops", input_size, None, None)
    custom = custom_ops or {}
    rows: list[tuple[str, str, int]] = []

    def hook(name: str, layer: Any, ins: tuple, out: Any) -> None:
        fn = custom.get(type(layer))
        rows.append((name, type(layer).__name__, int(fn(layer, ins, out)) if fn else _count(layer, ins, out)))

    _run_with_hooks(net, inputs, hook)
    total = sum(r[2] for r in rows)
    if print_detail:
        for name, typ, n in rows:
            print(f"{name:<30} {typ:<20} {n:>14,}")
    print(f"Total Flops: {total}     Total Params: {sum(int(np.prod(p.shape)) for p in net.parameters())}")
    return total

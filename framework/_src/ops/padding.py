"""Padding (Paddle's ``nn.functional.pad`` and ``zeropad2d``): a constant pad is the ``pad``
primitive; reflect, replicate and circular are slices, flips and a concat of the input's own
entries. Built on :mod:`.shape` (a floor above it: import-linter's ops layers)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ..tensor import Tensor
from .shape import concat, expand, flip, pad_raw, slice_raw

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(
    x: Tensor,
    pad: Any,
    mode: str = "constant",
    value: float = 0.0,
    data_format: str | None = None,
    pad_from_left_axis: bool = True,
    name: str | None = None,
) -> Tensor:
    """Pad ``x`` (Paddle's ``nn.functional.pad``).

    With ``mode="constant"`` and a ``pad`` list that is not ``2 * (ndim - 2)`` long, ``pad``
    holds (before, after) pairs: from the FIRST dim when it covers every dim (and
    ``pad_from_left_axis``), else from the last dim backwards. Otherwise (another mode, or
    ``2 * (ndim - 2)`` entries) ``x`` is 3-, 4- or 5-d and ``pad`` covers its spatial dims of
    ``data_format``, from the last one backwards: ``[left, right, top, bottom, front, back]``.

    Args:
        x (Tensor): the input.
        pad (list[int] | Tensor): non-negative sizes, as above.
        mode (str): ``"constant"``, ``"reflect"`` (mirror without the edge), ``"replicate"``
            (repeat the edge) or ``"circular"`` (wrap around).
        value (float): the value put in the padding (``"constant"`` only).
        data_format (str, optional): ``NCL``/``NLC``, ``NCHW``/``NHWC``, ``NCDHW``/``NDHWC``;
            default channels-first for ``x``'s rank.
        pad_from_left_axis (bool): see above.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the padded tensor.

    Example:
        >>> import framework as fw
        >>> import framework.nn.functional as F
        >>> F.pad(fw.to_tensor([[1, 2], [3, 4]]), [1, 0])
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[0, 1, 2],
                [0, 3, 4]])
        >>> F.pad(fw.to_tensor([[1, 2]]), [1, 0, 0, 2]).tolist()
        [[0, 0, 0, 0], [1, 2, 0, 0]]
        >>> F.pad(fw.to_tensor([[[1.0, 2.0, 3.0]]]), [2, 1], mode="reflect").tolist()
        [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]]
    """
    if mode not in _PAD_MODES:
        raise OpArgumentError(f"[pad] mode must be one of {_PAD_MODES}, got {mode!r}")
    pad = [int(p) for p in (pad.tolist() if isinstance(pad, Tensor) else pad)]
    nd = x.ndim
    if any(p < 0 for p in pad) or len(pad) % 2:
        raise OpArgumentError(f"[pad] pad must hold pairs of non-negative sizes, got {pad}")
    pairs = [(0, 0)] * nd
    if mode == "constant" and len(pad) != 2 * (nd - 2):
        if len(pad) > 2 * nd:
            raise OpArgumentError(f"[pad] pad must hold pairs for at most {nd} dims, got {pad}")
        if len(pad) == 2 * nd and pad_from_left_axis:
            pairs = [(pad[2 * d], pad[2 * d + 1]) for d in range(nd)]
        else:
            for i in range(len(pad) // 2):
                pairs[nd - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        return pad_raw(x, tuple(pairs), value)
    if nd not in (3, 4, 5) or len(pad) != 2 * (nd - 2):
        raise OpArgumentError(
            f"[pad] mode {mode!r} pads the spatial dims of a 3-, 4- or 5-d x, 2 sizes each; got x of "
            f"shape {x.shape} and pad {pad}"
        )
    fmt = data_format or {3: "NCL", 4: "NCHW", 5: "NCDHW"}[nd]
    if len(fmt) != nd or fmt[0] != "N" or "C" not in (fmt[1], fmt[-1]):
        raise OpArgumentError(f"[pad] data_format {data_format!r} does not fit x of rank {nd}")
    spatial = list(range(1, nd - 1)) if fmt[-1] == "C" else list(range(2, nd))
    for i, d in enumerate(reversed(spatial)):
        pairs[d] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        return pad_raw(x, tuple(pairs), value)
    for d, (before, after) in enumerate(pairs):
        if before or after:
            x = _pad_edges(x, d, before, after, mode)
    return x


def zeropad2d(x: Tensor, padding: Any, data_format: str = "NCHW", name: str | None = None) -> Tensor:
    """Zero-pad the H and W dims of a 4-d ``x``: ``padding`` is ``[left, right, top, bottom]``.

    Args:
        x (Tensor): NCHW (or NHWC) input.
        padding (list[int] | Tensor | int): the four sizes (an int: all four).
        data_format (str): ``"NCHW"`` or ``"NHWC"``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the padded tensor.

    Example:
        >>> import framework as fw
        >>> import framework.nn.functional as F
        >>> F.zeropad2d(fw.ones([1, 1, 1, 2]), [1, 0, 0, 1]).tolist()
        [[[[0.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]]
    """
    if isinstance(padding, int):
        padding = [padding] * 4
    return pad(x, padding, "constant", 0.0, data_format)


def _pad_edges(x: Tensor, d: int, before: int, after: int, mode: str) -> Tensor:
    """``x`` padded along dim ``d`` by copies of its own entries (reflect, replicate, circular)."""
    n = x.shape[d]
    limit = n - 1 if mode == "reflect" else n
    if max(before, after) > limit or n == 0:
        raise OpArgumentError(
            f"[pad] mode {mode!r} pads at most {limit} along a dim of size {n}, got ({before}, {after})"
        )

    def part(lo: int, hi: int) -> Tensor:
        starts, stops = [0] * x.ndim, list(x.shape)
        starts[d], stops[d] = lo, hi
        return slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim)

    def edge(lo: int, count: int) -> Tensor:
        shape = list(x.shape)
        shape[d] = count
        return expand(part(lo, lo + 1), shape)

    pieces = []
    if before:
        pieces.append(
            flip(part(1, before + 1), d)
            if mode == "reflect"
            else edge(0, before)
            if mode == "replicate"
            else part(n - before, n)
        )
    pieces.append(x)
    if after:
        pieces.append(
            flip(part(n - 1 - after, n - 1), d)
            if mode == "reflect"
            else edge(n - 1, after)
            if mode == "replicate"
            else part(0, after)
        )
    return concat(pieces, axis=d)

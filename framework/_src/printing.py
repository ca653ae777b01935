"""``fw.set_printoptions``: how tensors print (``repr`` formats values with numpy)."""

from __future__ import annotations

import numpy as np

from adapter_api import OpArgumentError


def set_printoptions(
    precision: int | None = None,
    threshold: int | None = None,
    edgeitems: int | None = None,
    sci_mode: bool | None = None,
    linewidth: int | None = None,
) -> None:
    """Set how tensors print; tensors print through numpy, so numpy's print options change too.

    Args:
        precision (int, optional): digits after the point.
        threshold (int, optional): the element count above which the middle is elided.
        edgeitems (int, optional): the items kept at each edge when eliding.
        sci_mode (bool, optional): scientific notation on (True) or off.
        linewidth (int, optional): characters per line.

    Example:
        >>> import framework as fw
        >>> fw.set_printoptions(precision=2)
        >>> fw.to_tensor([1 / 3, 2 / 3])
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0.33, 0.67])
        >>> fw.set_printoptions(precision=8)
    """
    opts: dict[str, object] = {}
    for key, v in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if v is not None:
            if not isinstance(v, int) or v < 0:
                raise OpArgumentError(f"[set_printoptions] {key} must be a non-negative int, got {v!r}")
            opts[key] = v
    if sci_mode is not None:
        opts["floatmode"] = "maxprec"
        opts["formatter"] = (
            {
                "float_kind": (
                    lambda x: np.format_float_scientific(
                        x, precision=opts.get("precision", np.get_printoptions()["precision"])
                    )
                )
            }
            if sci_mode
            else None
        )
    np.set_printoptions(**opts)

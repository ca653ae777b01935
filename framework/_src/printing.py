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
    """Digits after the point, the element count above which the middle is elided, the items
    kept at each edge, scientific notation on/off, and the line width. Tensors print through
    numpy, so this sets numpy's print options too."""
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

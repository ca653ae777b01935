"""Converters of ONNX ops whose output shape depends on their input's values: ``NonZero``,
``Unique``, ``NonMaxSuppression``, ``Compress``.

A program of fixed shapes cannot hold such an output, so these ops are computed while the
program is built, from inputs known then: constants, folded shape arithmetic, or graph inputs
given by value (the program is then specialised on each value, see docs/onnx.md). An input
computed at run time gets an error naming the op and why.
"""

from __future__ import annotations

import numpy as np

import framework as fw

from ._registry import Node, converter


def _known(n: Node, i: int, what: str) -> np.ndarray:
    """Input ``i`` as a value known when the program is built, or an error saying why it must be."""
    from ..jit.trace import TracedTensor

    v = n.inputs[i]
    if isinstance(v, TracedTensor):
        raise n.error(
            f"the shape of its output depends on the values of input {i} ('{n.proto.input[i]}', {what}), which is "
            "computed at run time: a program of fixed shapes cannot hold it",
            "compute that input from constants or graph inputs (they are then taken by value), "
            "or cut the model before this node",
        )
    return n.const(i)


@converter("NonZero", consts=(0,))
def _nonzero(n: Node) -> fw.Tensor:
    x = _known(n, 0, "the tensor whose non-zero entries it lists")
    return fw.to_tensor(np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1), device=n.device)


@converter("Compress", consts=(1,))
def _compress(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    cond = _known(n, 1, "the condition").reshape(-1).astype(bool)
    ax = n.attr("axis")
    if ax is None:
        x, ax = x.reshape([-1]), 0
    ax = ax + x.ndim if ax < 0 else ax
    keep = np.nonzero(cond[: x.shape[ax]])[0].astype(np.int64)
    return fw.gather(x, fw.to_tensor(keep, device=n.device), axis=ax)


@converter("Unique", consts=(0,))
def _unique(n: Node) -> list[fw.Tensor]:
    x = _known(n, 0, "the tensor whose unique entries it lists")
    ax = n.attr("axis")
    y, first, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=ax
    )
    inverse = inverse.reshape(-1)
    if not n.attr("sorted", 1):  # in the order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        y = np.take(y, order, axis=0 if ax is None else ax)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    outs = [y, first, inverse, counts]
    return [
        fw.to_tensor(np.ascontiguousarray(a if k == 0 else a.astype(np.int64)), device=n.device)
        for k, a in enumerate(outs[: len(n.proto.output)])
    ]


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two corner boxes (y1, x1, y2, x2), either corner order."""
    ay1, ay2 = sorted((a[0], a[2]))
    ax1, ax2 = sorted((a[1], a[3]))
    by1, by2 = sorted((b[0], b[2]))
    bx1, bx2 = sorted((b[1], b[3]))
    inter = max(0.0, min(ay2, by2) - max(ay1, by1)) * max(0.0, min(ax2, bx2) - max(ax1, bx1))
    union = (ay2 - ay1) * (ax2 - ax1) + (by2 - by1) * (bx2 - bx1) - inter
    return float(inter / union) if union > 0 else 0.0


@converter("NonMaxSuppression", consts=(0, 1, 2, 3, 4))
def _nms(n: Node) -> fw.Tensor:
    boxes = _known(n, 0, "the boxes").astype(np.float64)
    scores = _known(n, 1, "the scores").astype(np.float64)
    limit = int(n.const(2).reshape(-1)[0]) if n.has(2) else 0
    iou_max = float(n.const(3).reshape(-1)[0]) if n.has(3) else 0.0
    score_min = float(n.const(4).reshape(-1)[0]) if n.has(4) else None
    if n.attr("center_point_box", 0):  # (xc, yc, w, h) to corners (y1, x1, y2, x2)
        xc, yc, w, h = (boxes[..., i] for i in range(4))
        boxes = np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    picked = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [i for i in np.argsort(-s, kind="stable") if score_min is None or s[i] > score_min]
            kept: list[int] = []
            for i in order:
                if len(kept) >= limit:
                    break
                if all(_iou(boxes[b, i], boxes[b, j]) <= iou_max for j in kept):
                    kept.append(i)
            picked += [[b, c, i] for i in kept]
    return fw.to_tensor(np.array(picked, dtype=np.int64).reshape(-1, 3), device=n.device)

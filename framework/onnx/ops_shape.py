"""Converters of ONNX's shape and data-movement ops: reshape, slice, gather, concat, pad..."""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as fw

from ._registry import Node, converter


@converter("Constant")
def _constant(n: Node) -> np.ndarray:
    a = n.attrs
    if "value" in a:
        return np.asarray(a["value"])
    for key, dt in (("value_float", np.float32), ("value_int", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype=dt)
    for key, dt in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype=dt)
    raise n.error(f"attributes {sorted(a)} are not a value Oarlock imports", "use value= (a tensor)")


@converter("Shape")
def _shape(n: Node) -> np.ndarray:
    s = np.asarray(n.inputs[0].shape, dtype=np.int64)
    r = len(s)
    start, end = n.attr("start", 0), n.attr("end", r)
    return s[max(0, start + r if start < 0 else start) : max(0, end + r if end < 0 else end)]


@converter("Size")
def _size(n: Node) -> np.ndarray:
    return np.asarray(int(np.prod(n.inputs[0].shape)), dtype=np.int64)


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


@converter("Reshape", consts=(1,))
def _reshape(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    shape = n.ints(1, "shape")
    if not n.attr("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    elif 0 in shape:  # allowzero: a 0 is a size (fw.reshape, as Paddle, reads 0 as "keep")
        return fw.zeros(shape, dtype=x.dtype, device=n.device)
    return fw.reshape(x, shape)


@converter("Flatten")
def _flatten(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    ax = _axis(n.attr("axis", 1), x.ndim)
    lead = int(np.prod(x.shape[:ax]))
    return fw.reshape(x, [lead, int(np.prod(x.shape[ax:]))])


@converter("Transpose")
def _transpose(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    perm = n.attr("perm", list(range(x.ndim))[::-1])
    return fw.transpose(x, list(perm))


@converter("Squeeze", consts=(1,))
def _squeeze(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    axes = n.ints(1, "axes")
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    axes = {_axis(a, x.ndim) for a in axes}
    return fw.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])


@converter("Unsqueeze", consts=(1,))
def _unsqueeze(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    axes = n.ints(1, "axes")
    r = x.ndim + len(axes)
    axes = sorted(_axis(a, r) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return fw.reshape(x, shape)


@converter("Concat")
def _concat(n: Node) -> fw.Tensor:
    ts = [t for t in n.all_tensors() if 0 not in t.shape or t.ndim != 1] or n.all_tensors()[:1]
    return fw.concat(ts, axis=n.attr("axis"))


@converter("Split", consts=(1,))
def _split(n: Node) -> list[fw.Tensor]:
    x = n.tensor(0)
    ax = _axis(n.attr("axis", 0), x.ndim)
    sizes = n.ints(1, "split")
    if sizes is None:
        k = n.attr("num_outputs", len(n.proto.output))
        step = -(-x.shape[ax] // k)
        sizes = [min(step, x.shape[ax] - i * step) for i in range(k)]
    return list(fw.split(x, sizes, axis=ax))


@converter("Slice", consts=(1, 2, 3, 4))
def _slice(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    starts, ends = n.ints(1, "starts"), n.ints(2, "ends")
    axes = n.ints(3, "axes", list(range(len(starts))))
    steps = n.ints(4, None, [1] * len(starts))
    sl_axes, sl_s, sl_e, sl_st = [], [], [], []
    for a, s, e, st in zip(axes, starts, ends, steps):
        a = _axis(a, x.ndim)
        dim = x.shape[a]
        s, e, _ = slice(s, e, st).indices(dim)
        if not len(range(s, e, st)):
            shape = list(x.shape)
            shape[a] = 0
            return fw.zeros(shape, dtype=x.dtype, device=n.device)
        if st < 0:  # a negative step: the flipped axis, sliced forward
            x = fw.flip(x, [a])
            s, e, st = dim - 1 - s, dim - 1 - e, -st
        sl_axes.append(a)
        sl_s.append(s)
        sl_e.append(e)
        sl_st.append(st)
    return fw.strided_slice(x, sl_axes, sl_s, sl_e, sl_st) if sl_axes else x


@converter("Gather", consts=())
def _gather(n: Node) -> fw.Tensor:
    x, idx = n.tensor(0), n.inputs[1]
    ax = _axis(n.attr("axis", 0), x.ndim)
    if isinstance(idx, np.ndarray):
        idx = np.where(idx < 0, idx + x.shape[ax], idx).astype(np.int64)
        flat = fw.to_tensor(idx.reshape(-1), device=n.device)
        ishape = idx.shape
    else:
        ishape = tuple(idx.shape)
        idx = fw.where(
            fw.less_than(idx, fw.zeros_like(idx)), fw.add(idx, fw.full_like(idx, x.shape[ax])), idx
        )
        flat = fw.reshape(idx, [-1]).astype("int64")
    g = fw.gather(x, flat, axis=ax)
    return fw.reshape(g, [*x.shape[:ax], *ishape, *x.shape[ax + 1 :]])


@converter("GatherElements")
def _gather_elements(n: Node) -> fw.Tensor:
    x, idx = n.tensor(0), n.tensor(1)
    ax = _axis(n.attr("axis", 0), x.ndim)
    idx = fw.where(fw.less_than(idx, fw.zeros_like(idx)), fw.add(idx, fw.full_like(idx, x.shape[ax])), idx)
    return fw.take_along_axis(x, idx.astype("int64"), ax, broadcast=False)


@converter("GatherND")
def _gather_nd(n: Node) -> fw.Tensor:
    x, idx, b = n.tensor(0), n.tensor(1).astype("int64"), n.attr("batch_dims", 0)
    if not b:
        return fw.gather_nd(x, idx)
    # the batch dims flattened into one, whose index leads every index tuple
    batch = [int(d) for d in x.shape[:b]]
    nb = int(np.prod(batch))
    xf = x.reshape([nb, *x.shape[b:]])
    idf = idx.reshape([nb, *idx.shape[b:]])
    lead = np.arange(nb, dtype=np.int64).reshape([nb] + [1] * (idf.ndim - 1))
    lead = fw.expand(fw.to_tensor(lead, device=n.device), [*idf.shape[:-1], 1])
    out = fw.gather_nd(xf, fw.concat([lead, idf], axis=-1))
    return out.reshape([*batch, *out.shape[1:]])


#: the most updates a mul/max/min scatter takes: it combines them in as many rounds (each a
#: gather and a scatter) as the most updates one position may receive, which is not known
#: while the program is built, so it is the number of updates
_MAX_ROUNDS = 1024


def _scatter_flat(n: Node, x: fw.Tensor, pos: fw.Tensor, vals: fw.Tensor, red: str) -> fw.Tensor:
    """``x`` with the 1-D ``vals`` combined into its flat positions ``pos`` by ``red``."""
    flat = x.reshape([-1])
    combine = {"mul": fw.multiply, "max": fw.maximum, "min": fw.minimum}[red]
    m, size = pos.shape[0], flat.shape[0]
    if m > _MAX_ROUNDS:
        raise n.error(
            f"reduction={red!r} over {m} updates is not imported (at most {_MAX_ROUNDS})",
            "use reduction 'add' or 'none', or split the scatter",
        )
    # round r applies each update that is the r-th to its position; a spare slot at the
    # end takes the writes of the updates not in the round
    same = fw.equal(pos.reshape([m, 1]), pos.reshape([1, m]))
    earlier = fw.tril(fw.ones([m, m], dtype="int64", device=n.device), -1)
    occ = fw.sum(fw.multiply(same.astype("int64"), earlier), axis=1)
    cur = fw.concat([flat, flat[:1]], axis=0)
    spare = fw.full_like(pos, size)
    for r in range(m):
        here = fw.where(fw.equal(occ, fw.full_like(occ, r)), pos, spare)
        cur = fw.scatter(cur, here, combine(fw.gather(cur, here, axis=0), vals), overwrite=True)
    return cur[:size].reshape(x.shape)


@converter("ScatterElements", "Scatter")
def _scatter_elements(n: Node) -> fw.Tensor:
    x, idx, upd = n.tensor(0), n.tensor(1), n.tensor(2)
    ax = _axis(n.attr("axis", 0), x.ndim)
    idx = fw.where(fw.less_than(idx, fw.zeros_like(idx)), fw.add(idx, fw.full_like(idx, x.shape[ax])), idx)
    red = n.attr("reduction", "none")
    if red in ("none", "add"):
        return fw.put_along_axis(
            x, idx.astype("int64"), upd, ax, reduce="assign" if red == "none" else "add", broadcast=False
        )
    # flat positions of every update: its own index along ``ax``, its place elsewhere
    strides = np.cumprod([1, *x.shape[::-1]])[::-1][1:]
    pos = idx.astype("int64") * int(strides[ax])
    for d in range(x.ndim):
        if d != ax:
            shape = [1] * x.ndim
            shape[d] = idx.shape[d]
            step = np.arange(idx.shape[d], dtype=np.int64).reshape(shape) * strides[d]
            pos = fw.add(pos, fw.to_tensor(step, device=n.device))
    return _scatter_flat(n, x, pos.reshape([-1]), upd.reshape([-1]), red)


@converter("ScatterND")
def _scatter_nd(n: Node) -> fw.Tensor:
    x, idx, upd = n.tensor(0), n.tensor(1).astype("int64"), n.tensor(2)
    red = n.attr("reduction", "none")
    if red == "add":
        return fw.scatter_nd_add(x, idx, upd)
    if red == "none":
        # assign: clear the target elements, then add the updates (indices are unique in ONNX)
        mask = fw.scatter_nd_add(fw.zeros_like(x), idx, fw.ones_like(upd))
        return fw.add(
            fw.where(fw.greater_than(mask, fw.zeros_like(mask)), fw.zeros_like(x), x),
            fw.scatter_nd_add(fw.zeros_like(x), idx, upd),
        )
    k = idx.shape[-1]
    inner = int(np.prod(x.shape[k:], dtype=np.int64))
    strides = np.cumprod([1, *x.shape[:k][::-1]])[::-1][1:] * inner
    idx = fw.where(
        fw.less_than(idx, fw.zeros_like(idx)),
        fw.add(idx, fw.to_tensor(np.asarray(x.shape[:k], np.int64), device=n.device)),
        idx,
    )
    start = fw.sum(fw.multiply(idx, fw.to_tensor(strides.astype(np.int64), device=n.device)), axis=-1)
    pos = fw.add(
        start.reshape([-1, 1]), fw.to_tensor(np.arange(inner, dtype=np.int64).reshape(1, -1), device=n.device)
    )
    return _scatter_flat(n, x, pos.reshape([-1]), upd.reshape([-1]), red)


@converter("Expand", consts=(1,))
def _expand(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    shape = n.ints(1)
    out = list(np.broadcast_shapes(tuple(x.shape), tuple(shape)))
    return fw.expand(x, out) if tuple(out) != tuple(x.shape) else x


@converter("Tile", consts=(1,))
def _tile(n: Node) -> fw.Tensor:
    return fw.tile(n.tensor(0), n.ints(1))


@converter("Pad", consts=(1, 3))
def _pad(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    pads = n.ints(1, "pads")
    value: Any = n.inputs[2] if n.has(2) else None
    if isinstance(value, np.ndarray):
        value = float(value.reshape(-1)[0]) if value.size else float(n.attr("value", 0.0))
    elif value is None:
        value = float(n.attr("value", 0.0))
    r = x.ndim
    axes = n.ints(3, None, list(range(r)))
    axes = [_axis(a, r) for a in axes]
    k = len(axes)
    full = [0] * (2 * r)
    for j, a in enumerate(axes):
        full[2 * a], full[2 * a + 1] = pads[j], pads[j + k]
    mode = n.attr("mode", "constant")
    if any(p < 0 for p in full):  # negative pads crop
        x = _slice_crop(x, full)
        full = [max(p, 0) for p in full]
    if not any(full):
        return x
    if mode == "constant" and not isinstance(value, float):
        # a value computed at run time: pad with 0, then put it where the mask says padding
        inside = fw.pad(fw.ones_like(x), full, mode="constant", value=0.0)
        v = value.reshape([]).astype(x.dtype)
        return fw.where(
            fw.greater_than(inside, fw.zeros_like(inside)), fw.pad(x, full, mode="constant", value=0.0), v
        )
    if mode == "constant":
        return fw.pad(x, full, mode="constant", value=value)
    for a in range(r):  # edge, reflect, wrap: a gather of source indices per padded axis
        lo, hi = full[2 * a], full[2 * a + 1]
        if lo or hi:
            d = x.shape[a]
            i = np.arange(-lo, d + hi)
            if mode == "edge":
                i = np.clip(i, 0, d - 1)
            elif mode == "wrap":
                i = np.mod(i, d)
            else:  # reflect (the edge not repeated)
                period = 2 * (d - 1) if d > 1 else 1
                i = np.mod(i, period)
                i = np.where(i >= d, period - i, i)
            x = fw.gather(x, fw.to_tensor(i.astype(np.int64), device=n.device), axis=a)
    return x


def _slice_crop(x: fw.Tensor, full: list[int]) -> fw.Tensor:
    axes, starts, ends = [], [], []
    for a in range(x.ndim):
        lo, hi = full[2 * a], full[2 * a + 1]
        if lo < 0 or hi < 0:
            axes.append(a)
            starts.append(-lo if lo < 0 else 0)
            ends.append(x.shape[a] + hi if hi < 0 else x.shape[a])
    return fw.slice(x, axes, starts, ends)


@converter("ConstantOfShape", consts=(0,))
def _constant_of_shape(n: Node) -> fw.Tensor:
    shape = n.ints(0)
    v = n.attr("value")
    v = np.zeros(1, np.float32) if v is None else np.asarray(v).reshape(-1)
    return fw.full(shape, v[0].item(), dtype=v.dtype, device=n.device)


@converter("Range", consts=(0, 1, 2))
def _range(n: Node) -> fw.Tensor:
    s, e, d = (n.const(i).reshape(()) for i in range(3))
    dt = np.result_type(s, e, d)
    count = max(int(np.ceil((e - s) / d)), 0)
    return fw.to_tensor((s + d * np.arange(count)).astype(dt), device=n.device)


@converter("EyeLike")
def _eye_like(n: Node) -> fw.Tensor:
    x = n.inputs[0]
    from ._model import np_dtype

    dt = np_dtype(n.attr("dtype"), "EyeLike") if "dtype" in n.attrs else x.dtype
    return fw.to_tensor(np.eye(x.shape[0], x.shape[1], k=n.attr("k", 0), dtype=dt), device=n.device)


@converter("Trilu", consts=(1,))
def _trilu(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    k = int(n.const(1).reshape(())) if n.has(1) else 0
    return fw.triu(x, k) if n.attr("upper", 1) else fw.tril(x, k)


@converter("DepthToSpace")
def _depth_to_space(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    b, c, h, w = x.shape
    bs = n.attr("blocksize")
    if n.attr("mode", "DCR") == "DCR":
        t = fw.reshape(x, [b, bs, bs, c // bs**2, h, w])
        t = fw.transpose(t, [0, 3, 4, 1, 5, 2])
    else:
        t = fw.reshape(x, [b, c // bs**2, bs, bs, h, w])
        t = fw.transpose(t, [0, 1, 4, 2, 5, 3])
    return fw.reshape(t, [b, c // bs**2, h * bs, w * bs])


@converter("SpaceToDepth")
def _space_to_depth(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    b, c, h, w = x.shape
    bs = n.attr("blocksize")
    t = fw.reshape(x, [b, c, h // bs, bs, w // bs, bs])
    t = fw.transpose(t, [0, 1, 3, 5, 2, 4] if n.attr("mode", "DCR") == "CRD" else [0, 3, 5, 1, 2, 4])
    return fw.reshape(t, [b, c * bs * bs, h // bs, w // bs])


@converter("OneHot", consts=(1, 2))
def _one_hot(n: Node) -> fw.Tensor:
    idx, depth, values = n.tensor(0), int(n.const(1).reshape(-1)[0]), n.const(2)
    ax = n.attr("axis", -1)
    idx = fw.where(fw.less_than(idx, fw.zeros_like(idx)), fw.add(idx, fw.full_like(idx, depth)), idx)
    # equality with 0..depth-1: an index out of range is all off, as ONNX says
    classes = fw.to_tensor(np.arange(depth, dtype=np.int64), device=n.device)
    oh = fw.equal(fw.unsqueeze(idx.astype("int64"), -1), classes).astype("float32")
    r = oh.ndim
    ax = _axis(ax, r)
    if ax != r - 1:
        perm = list(range(r - 1))
        perm.insert(ax, r - 1)
        oh = fw.transpose(oh, perm)
    off, on = (float(v) for v in values.reshape(-1))
    y = fw.add(fw.multiply(oh, fw.full([], on - off, device=n.device)), fw.full([], off, device=n.device))
    return y.astype(values.dtype)

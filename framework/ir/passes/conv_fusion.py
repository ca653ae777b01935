"""``conv_nchwc``: convolutions with their epilogue fused, in the blocked layout NCHWc, for
inference programs on a device that registers a ``conv2d_nchwc`` kernel.

Four rewrites, run to a fixpoint:

- **epilogue** (``ConvEpilogue``): ``conv2d(x, w)`` (one group) followed by an add of one value
  per output channel (a bias, or the shift of a BatchNorm that ``conv_fold`` folded), then
  optionally an add of another value of the output's type (a residual), then optionally
  ``relu``, each the only reader of the one before, becomes
  ``from_nchwc(conv2d_nchwc(x, w, b, r) {relu})``: the output is written once, in the blocked
  layout, with the bias, residual and relu applied as the kernel stores it. The ops are
  applied in the same order as before (conv, + b, + r, relu), so only the convolution's own
  summation order can differ. A weight ``mul(w0, s)`` read by the conv alone, ``s`` one value
  per output channel (``conv_fold``'s folded BatchNorm scale), becomes the operands ``w0`` and
  ``s`` (``weight_scale``): the kernel multiplies as it packs the weights (the same rounding),
  and a kernel that keeps its packing finds the same ``w0`` and ``s`` each run.
- **blocked input** (``BlockedInput``): a ``conv2d_nchwc`` that reads ``from_nchwc(z)`` reads
  ``z`` itself (``blocked_input``): consecutive convolutions hand each other blocked values.
- **layout round trip** (``LayoutRoundTrip``): ``to_nchwc(from_nchwc(z))`` is ``z`` (a residual
  that comes from a blocked convolution). Exact: ``from_nchwc`` drops only channels that are
  zero (``z`` written by ``conv2d_nchwc`` or ``to_nchwc``, or no channels past C), which
  ``to_nchwc`` puts back.
- **global pooling** (``BlockedGlobalPool``, ``BlockedGlobalMax``): ``sum`` or ``max`` over
  the pixels (axes 2 and 3) of ``from_nchwc(z)`` becomes ``global_pool_nchwc(z)``, which reads
  the blocked value as it is and writes the plain (N, C, 1, 1) (the global average pool at the
  end of a ResNet: the importer writes it as that sum times 1 / (H * W)). Up to the order of
  the sum's additions.
- **max pooling** (``BlockedMaxPool``, ``BlockedMaxPoolOp``): a windowed max pool of
  ``from_nchwc(z)`` becomes ``from_nchwc(max_pool2d_nchwc(z))`` (a ResNet's 3x3 stride 2 pool
  after its stem), so the convolutions after it read the blocked value. The program holds the
  pool as ``max_pool2d`` or as its decomposition: ``pad`` (the importer's -FLT_MAX, or -inf)
  of the pixels, one strided ``slice`` per kernel offset, each ``reshape`` to a new axis 2,
  ``concat`` on it and ``max`` over it. Exact: the padding is never a window's max where it
  is -inf, or where ``z`` is a ``conv2d_nchwc`` with relu (values >= 0 or NaN) and the fill is
  not above 0, each window holding a pixel (padding less than the kernel).

What is left of the layout changes stands at the edges of the blocked region: the first
convolution reads the program's NCHW value (``blocked_input=False``: a first layer of three
channels is not padded to a block), and a ``from_nchwc`` stays where another op reads the
value.

The pass is in the ``inference`` level only (``fw.onnx.load(..., passes="inference")``): a
training program keeps ``conv2d``, whose gradient rule has its own kernels.

>>> from framework import ir
>>> from framework.ir import passes
>>> p = ir.parse_program(
...     "module @f(%0: tensor<[1, 16, 4, 4], float32, cpu>) -> (tensor<[1, 16, 4, 4], float32, cpu>) {\\n"
...     "  %1 = builtin.parameter {name = \\"w\\"} : tensor<[16, 16, 3, 3], float32, cpu>\\n"
...     "  %2 = op.conv2d(%0, %1) {dilation = (1, 1), groups = 1, padding = ((1, 1), (1, 1)), "
...     "stride = (1, 1)} : tensor<[1, 16, 4, 4], float32, cpu>\\n"
...     "  %3 = builtin.parameter {name = \\"b\\"} : tensor<[1, 16, 1, 1], float32, cpu>\\n"
...     "  %4 = op.add(%2, %3) : tensor<[1, 16, 4, 4], float32, cpu>\\n"
...     "  %5 = op.relu(%4) : tensor<[1, 16, 4, 4], float32, cpu>\\n"
...     "  builtin.return(%5)\\n"
...     "}\\n")
>>> _ = passes.optimize(p, ["conv_nchwc"])
>>> [op.name for op in p.block.ops if op.name.startswith("op.")]
['op.reshape', 'op.conv2d_nchwc', 'op.from_nchwc']
"""

from __future__ import annotations

from ..._src import device as _dev
from ..._src import dispatch
from ..core import Operation, Program, TensorType, Value
from .manager import Pass, PassContext, register_pass
from .rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from .traits import returned

#: channels per block (framework/_src/ops/composites/conv_fused.py's BLOCK)
BLOCK = 16


def _has_kernel(rewriter: PatternRewriter, t: TensorType, op: str = "conv2d_nchwc") -> bool:
    dev = _dev.parse(rewriter.ctx.device or t.device)
    return dispatch.find_kernel(op, dev.type, t.dtype) is not None


def _only_reader(v: Value) -> Operation | None:
    """The one op that reads ``v`` (once), or None."""
    if len(v.uses) != 1:
        return None
    return v.uses[0][0]


def _per_channel(v: Value, out: TensorType) -> bool:
    t, o = v.type, out.shape[1]
    return isinstance(t, TensorType) and t.dtype == out.dtype and t.shape in ((1, o, 1, 1), (o, 1, 1))


def _blocked_type(t: TensorType) -> TensorType:
    n, c, h, w = t.shape
    return TensorType((n, -(-c // BLOCK), h, w, BLOCK), t.dtype, t.device)


def _scaled_weight(w: Value, o: int) -> tuple[Value, Value] | None:
    """(w0, s) where ``w`` is ``mul(w0, s)`` read by the conv alone, ``s`` one value per output
    channel of shape (O, 1, 1, 1) (``conv_fold``'s folded BatchNorm scale), else None."""
    m = w.defining_op
    if m is None or m.name != "op.mul" or _only_reader(w) is None or returned(m):
        return None
    for w0, s in (m.operands, m.operands[::-1]):
        if w0.type == w.type and isinstance(s.type, TensorType) and s.type.dtype == w.type.dtype:
            if s.type.shape == (o, 1, 1, 1):
                return w0, s
    return None


class ConvEpilogue(RewritePattern):
    """``relu?(conv2d(x, w) + b (+ r))`` -> ``from_nchwc(conv2d_nchwc(x, w, b, r))``."""

    root = "op.conv2d"
    name = "conv_epilogue"

    def _epilogue(self, conv: Operation) -> tuple[Value, Value | None, bool, Operation] | None:
        """(bias, residual, relu, last op of the chain), or None where no bias add follows."""
        out = conv.result.type
        v = conv.result
        add = _only_reader(v)
        if add is None or returned(conv) or add.name != "op.add" or add.result.type != out:
            return None
        bias = add.operands[1] if add.operands[0] is v else add.operands[0]
        if bias is v or not _per_channel(bias, out):
            return None
        last, residual, relu = add, None, False
        nxt = None if returned(last) else _only_reader(last.result)
        if nxt is not None and nxt.name == "op.add" and nxt.result.type == out:
            other = nxt.operands[1] if nxt.operands[0] is last.result else nxt.operands[0]
            if other is not last.result and other.type == out:
                last, residual = nxt, other
                nxt = None if returned(last) else _only_reader(last.result)
        if nxt is not None and nxt.name == "op.relu" and nxt.result.type == out:
            last, relu = nxt, True
        return bias, residual, relu, last

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        out = op.result.type
        if len(op.operands) != 2 or not isinstance(out, TensorType) or out.rank != 4:
            return False
        x, w = op.operands
        if op.attrs.get("groups") != 1 or str(out.dtype) != "float32" or not isinstance(out.shape[1], int):
            return False
        if not isinstance(w.type, TensorType) or not all(isinstance(d, int) for d in w.type.shape):
            return False
        if not _has_kernel(rewriter, out):
            return False
        found = self._epilogue(op)
        if found is None:
            return False
        bias, residual, relu, last = found
        o = out.shape[1]
        blocked = _blocked_type(out)

        def make(name: str, operands: list[Value], t: TensorType, attrs: dict | None = None) -> Value:
            return rewriter.create(name, operands, [t], attrs, before=last).results[0]

        vec = TensorType((o,), out.dtype, out.device)
        b = make("op.reshape", [bias], vec, {"shape": (o,)})
        operands = [x, w, b]
        scaled = _scaled_weight(w, o)
        if scaled is not None:  # the folded scale multiplied in as the kernel packs the weights
            operands = [x, scaled[0], b, make("op.reshape", [scaled[1]], vec, {"shape": (o,)})]
        if residual is not None:
            operands.append(make("op.to_nchwc", [residual], blocked, {"block": BLOCK}))
        attrs = {
            "stride": op.attrs["stride"],
            "padding": op.attrs["padding"],
            "dilation": op.attrs["dilation"],
            "relu": relu,
            "blocked_input": False,
        }
        if scaled is not None:
            attrs["weight_scale"] = True
        y = make("op.conv2d_nchwc", operands, blocked, attrs)
        rewriter.replace_op(last, [make("op.from_nchwc", [y], out, {"channels": o})])
        return True


#: ops whose blocked result holds zeros in its channels past C
_ZERO_PADDED = ("op.conv2d_nchwc", "op.to_nchwc", "op.max_pool2d_nchwc")


def _zero_padded(z: Value, c: int) -> bool:
    """``z``'s channels past ``c`` are zero: ``c`` a whole number of blocks, or ``z`` written by
    an op that zeroes them."""
    return c % BLOCK == 0 or (z.defining_op is not None and z.defining_op.name in _ZERO_PADDED)


class BlockedInput(RewritePattern):
    """``conv2d_nchwc(from_nchwc(z), ...)`` -> ``conv2d_nchwc(z, ..., blocked_input=True)``."""

    root = "op.conv2d_nchwc"
    name = "conv_blocked_input"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        x = op.operands[0]
        src = x.defining_op
        if op.attrs.get("blocked_input") or src is None or src.name != "op.from_nchwc":
            return False
        z = src.operands[0]
        if z.type.shape[-1] != BLOCK:
            return False
        attrs = dict(op.attrs, blocked_input=True)
        new = rewriter.create(op.name, [z, *op.operands[1:]], [op.result.type], attrs, before=op)
        rewriter.replace_op(op, [new.result])
        return True


class LayoutRoundTrip(RewritePattern):
    """``to_nchwc(from_nchwc(z))`` -> ``z`` where the types agree."""

    root = "op.to_nchwc"
    name = "nchwc_round_trip"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        src = op.operands[0].defining_op
        if src is None or src.name != "op.from_nchwc" or returned(op):
            return False
        z = src.operands[0]
        if z.type != op.result.type:
            return False
        # exact where z's channels past C are zero: C a whole number of blocks, or z written by
        # an op that zeroes them
        if not _zero_padded(z, op.operands[0].type.shape[1]):
            return False
        rewriter.replace_op(op, [z])
        return True


class BlockedGlobalPool(RewritePattern):
    """``sum(from_nchwc(z), axes=(2, 3))`` -> ``global_pool_nchwc(z) {reduce = "sum"}``."""

    root = "op.sum"
    name = "nchwc_global_pool"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        src = op.operands[0].defining_op
        if src is None or src.name != "op.from_nchwc" or tuple(op.attrs.get("axes", ())) != (2, 3):
            return False
        z, out = src.operands[0], op.result.type
        if z.type.shape[-1] != BLOCK or not isinstance(out, TensorType) or out.dtype != z.type.dtype:
            return False
        if not _has_kernel(rewriter, out, "global_pool_nchwc"):
            return False
        attrs = {
            "channels": src.attrs["channels"],
            "reduce": self.root[3:],
            "keepdim": bool(op.attrs["keepdim"]),
        }
        new = rewriter.create("op.global_pool_nchwc", [z], [out], attrs, before=op)
        rewriter.replace_op(op, [new.result])
        return True


class BlockedGlobalMax(BlockedGlobalPool):
    """``max(from_nchwc(z), axes=(2, 3))`` -> ``global_pool_nchwc(z) {reduce = "max"}``."""

    root = "op.max"
    name = "nchwc_global_max"


class BlockedMaxPoolOp(RewritePattern):
    """``max_pool2d(from_nchwc(z))`` -> ``from_nchwc(max_pool2d_nchwc(z))``."""

    root = "op.max_pool2d"
    name = "nchwc_max_pool_op"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        a = op.attrs
        return _rewrite_pool(op, op.operands[0], a["kernel_size"], a["stride"], a["padding"], rewriter)


class BlockedMaxPool(RewritePattern):
    """The decomposition of ``max_pool2d`` (``max(concat(reshape(slice(pad(from_nchwc(z)))) ...,
    axis 2), axes=(2,))``) -> ``from_nchwc(max_pool2d_nchwc(z))``."""

    root = "op.max"
    name = "nchwc_max_pool"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        cat = op.operands[0].defining_op
        if tuple(op.attrs.get("axes", ())) != (2,) or op.attrs.get("keepdim") or cat is None:
            return False
        if cat.name != "op.concat" or cat.attrs.get("axis") != 2:
            return False
        src, offsets, steps = None, set(), set()
        for v in cat.operands:
            r = v.defining_op
            sl = None if r is None or r.name != "op.reshape" else r.operands[0].defining_op
            if sl is None or sl.name != "op.slice" or r.result.type.shape[2] != 1:
                return False
            if r.result.type.shape[:2] + r.result.type.shape[3:] != sl.result.type.shape:
                return False
            starts, stepv = tuple(sl.attrs["starts"]), tuple(sl.attrs["steps"])
            if starts[:2] != (0, 0) or stepv[:2] != (1, 1) or (src is not None and sl.operands[0] is not src):
                return False
            src = sl.operands[0]
            offsets.add(starts[2:])
            steps.add(stepv[2:])
        if src is None or len(steps) != 1 or len(offsets) != len(cat.operands):
            return False
        kh, kw = max(o[0] for o in offsets) + 1, max(o[1] for o in offsets) + 1
        if offsets != {(i, j) for i in range(kh) for j in range(kw)}:
            return False
        # the pads before: their fills, summed
        pads, fills, x = [0, 0, 0, 0], [], src
        while x.defining_op is not None and x.defining_op.name == "op.pad":
            pad = x.defining_op
            p = tuple(tuple(q) for q in pad.attrs["pads"])
            if len(p) != 4 or p[0] != (0, 0) or p[1] != (0, 0):
                return False
            for i, q in enumerate((p[2][0], p[2][1], p[3][0], p[3][1])):
                pads[i] += q
            fills.append(float(pad.attrs.get("value", 0.0)))
            x = pad.operands[0]
        padding = ((pads[0], pads[1]), (pads[2], pads[3]))
        return _rewrite_pool(op, x, (kh, kw), steps.pop(), padding, rewriter, fills)


def _rewrite_pool(
    op: Operation,
    x: Value,
    kernel_size: tuple,
    stride: tuple,
    padding: tuple,
    rewriter: PatternRewriter,
    fills: list[float] | None = None,
) -> bool:
    """Replace ``op``, the max pool of ``x`` (plain), by ``from_nchwc(max_pool2d_nchwc(z))``
    where ``x`` is ``from_nchwc(z)`` and the padding (``fills``: the pads' values, none
    -inf) is never a window's max; False where it does not apply."""
    src, out = x.defining_op, op.result.type
    if src is None or src.name != "op.from_nchwc":
        return False
    z, c = src.operands[0], src.attrs["channels"]
    if z.type.shape[-1] != BLOCK or not isinstance(out, TensorType) or out.dtype != z.type.dtype:
        return False
    if not _zero_padded(z, c) or any(max(p) >= k for p, k in zip(padding, kernel_size)):
        return False
    sizes = z.type.shape[2:4]
    if not all(isinstance(d, int) for d in sizes) or tuple(out.shape[2:]) != tuple(
        (d + sum(p) - k) // st + 1 for d, p, k, st in zip(sizes, padding, kernel_size, stride)
    ):  # the pool's windows: all of those of the padded image, as max_pool2d_nchwc's
        return False
    if any(f != float("-inf") for f in fills or ()):
        zdef = z.defining_op  # a relu's values (>= 0 or NaN) are never below a fill <= 0
        relu = zdef is not None and zdef.name == "op.conv2d_nchwc" and zdef.attrs.get("relu")
        if not relu or max(fills or ()) > 0:
            return False
    if not _has_kernel(rewriter, out, "max_pool2d_nchwc"):
        return False
    n, cb, _, _, _ = z.type.shape
    blocked = TensorType((n, cb, *out.shape[2:], BLOCK), out.dtype, out.device)
    attrs = {"channels": c, "kernel_size": tuple(kernel_size), "stride": tuple(stride), "padding": padding}
    y = rewriter.create("op.max_pool2d_nchwc", [z], [blocked], attrs, before=op).results[0]
    back = rewriter.create("op.from_nchwc", [y], [out], {"channels": c}, before=op).results[0]
    rewriter.replace_op(op, [back])
    return True


def to_nchwc(program: Program, ctx: PassContext) -> int:
    """Rewrite the program's convolutions and their epilogues into the blocked layout; returns
    the number of rewrites."""
    patterns = [
        ConvEpilogue(),
        BlockedInput(),
        LayoutRoundTrip(),
        BlockedGlobalPool(),
        BlockedGlobalMax(),
        BlockedMaxPool(),
        BlockedMaxPoolOp(),
    ]
    return apply_patterns_greedily(program, patterns, ctx).rewrites


class ConvNchwc(Pass):
    name = "conv_nchwc"

    def run(self, program: Program, ctx: PassContext) -> int:
        return to_nchwc(program, ctx)


register_pass("conv_nchwc", ConvNchwc)

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
        zdef = z.defining_op
        whole = op.operands[0].type.shape[1] % BLOCK == 0
        if not whole and (zdef is None or zdef.name not in ("op.conv2d_nchwc", "op.to_nchwc")):
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


def to_nchwc(program: Program, ctx: PassContext) -> int:
    """Rewrite the program's convolutions and their epilogues into the blocked layout; returns
    the number of rewrites."""
    patterns = [ConvEpilogue(), BlockedInput(), LayoutRoundTrip(), BlockedGlobalPool(), BlockedGlobalMax()]
    return apply_patterns_greedily(program, patterns, ctx).rewrites


class ConvNchwc(Pass):
    name = "conv_nchwc"

    def run(self, program: Program, ctx: PassContext) -> int:
        return to_nchwc(program, ctx)


register_pass("conv_nchwc", ConvNchwc)

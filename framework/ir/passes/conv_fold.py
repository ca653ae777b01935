"""Fold a per-channel affine chain that follows a convolution into its weight: an inference
BatchNorm (``(y - mean) * scale * rsqrt(var + eps) + bias``, as the ONNX importer and
``batch_norm(training=False)`` write it) after ``conv2d(x, w)`` becomes
``conv2d(x, w * a) + c``, one convolution and one per-channel add, where ``a`` and ``c`` are
computed from the parameters in the program (a few ops on vectors of one value per channel:
a parameter changed after tracing still counts, as ONNX Runtime's fold at session creation
would not).

The chain is the ops ``add``, ``sub`` (the convolution's side first) and ``mul`` each of
whose other operand is one value per output channel (shape ``(1, O, 1, 1)`` or ``(O, 1, 1)``)
computed from parameters and constants only; it ends at the first other op, a value with
another reader, or a program output. Not exact: ``(x * w) * a`` rounds differently from
``x * (w * a)`` (differences of a few ulps, as in every runtime that folds BatchNorm), so the
pass is not in ``O2``: it is in the ``inference`` level (``fw.onnx.load(..., passes="inference")``).

Not on by default: the ``inference`` level runs it, then ``conv_nchwc`` (conv_fusion.py), which
takes the per-channel add it leaves into the convolution's kernel where the device has one (on
cpu: docs/benchmarks.md, "Issue 41, third pass"). Alone, without that kernel, it does not pay
at one thread: the compiler already runs the BatchNorm's sub, mul and add in the one fused pass
over the images that its add (and a residual add) make, and the fold adds two small kernels per
conv to every run.

>>> from framework import ir
>>> from framework.ir import passes
>>> p = ir.parse_program(
...     "module @f(%0: tensor<[1, 2, 4, 4], float32, cpu>) -> (tensor<[1, 3, 4, 4], float32, cpu>) {\\n"
...     "  %1 = builtin.parameter {name = \\"w\\"} : tensor<[3, 2, 1, 1], float32, cpu>\\n"
...     "  %2 = op.conv2d(%0, %1) {dilation = (1, 1), groups = 1, padding = ((0, 0), (0, 0)), "
...     "stride = (1, 1)} : tensor<[1, 3, 4, 4], float32, cpu>\\n"
...     "  %3 = builtin.parameter {name = \\"s\\"} : tensor<[1, 3, 1, 1], float32, cpu>\\n"
...     "  %4 = op.mul(%2, %3) : tensor<[1, 3, 4, 4], float32, cpu>\\n"
...     "  builtin.return(%4)\\n"
...     "}\\n")
>>> _ = passes.optimize(p, ["conv_fold"])
>>> [op.name for op in p.block.ops if op.name.startswith("op.")]
['op.reshape', 'op.mul', 'op.conv2d']
"""

from __future__ import annotations

from ..core import Operation, Program, TensorType, Value
from .manager import Pass, PassContext, register_pass
from .rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from .traits import random, removable, returned

_CHAIN = ("op.add", "op.sub", "op.mul")


def _from_parameters(v: Value, seen: dict[Value, bool]) -> bool:
    """``v`` is computed from parameters and constants only (no program input, nothing random)."""
    if v in seen:
        return seen[v]
    d = v.defining_op
    ok = False
    if d is not None:
        if d.name in ("builtin.parameter", "builtin.constant"):
            ok = True
        elif d.name.startswith("op.") and not d.regions and removable(d) and not random(d):
            ok = all(_from_parameters(o, seen) for o in d.operands)
    seen[v] = ok
    return ok


def _per_channel(v: Value, out: TensorType) -> bool:
    t = v.type
    o = out.shape[1]
    return (
        isinstance(t, TensorType)
        and t.dtype == out.dtype
        and isinstance(o, int)
        and t.shape in ((1, o, 1, 1), (o, 1, 1))
    )


class ConvAffineFold(RewritePattern):
    """``conv2d(x, w)`` followed by per-channel ``add``/``sub``/``mul`` -> ``conv2d(x, w * a) + c``."""

    root = "op.conv2d"
    name = "conv_affine_fold"

    def _chain(self, conv: Operation) -> list[tuple[str, Value, Operation]]:
        out = conv.result.type
        seen: dict[Value, bool] = {}
        chain: list[tuple[str, Value, Operation]] = []
        v = conv.result
        while len(v.uses) == 1 and not (chain and returned(chain[-1][2])):
            user, idx = v.uses[0]
            if user.name not in _CHAIN or len(user.operands) != 2 or user.result.type != out:
                break
            if user.name == "op.sub" and idx != 0:
                break  # c - y: not worth a negation
            other = user.operands[1 - idx]
            if other is v or not _per_channel(other, out) or not _from_parameters(other, seen):
                break
            chain.append((user.name, other, user))
            v = user.result
        return chain

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        if len(op.operands) != 2 or not isinstance(op.result.type, TensorType) or returned(op):
            return False
        out = op.result.type
        if out.rank != 4 or not isinstance(out.shape[1], int):
            return False
        chain = self._chain(op)
        # a lone add is what this pass leaves behind: rewriting it again would never end
        if not chain or (len(chain) == 1 and chain[0][0] != "op.mul"):
            return False
        root = chain[-1][2]
        o = out.shape[1]
        chan = TensorType((1, o, 1, 1), out.dtype, out.device)

        def make(name: str, operands: list[Value], t: TensorType, attrs: dict | None = None) -> Value:
            return rewriter.create(name, operands, [t], attrs, before=root).results[0]

        scale: Value | None = None
        shift: Value | None = None
        for kind, v, _ in chain:
            if v.type.shape != chan.shape:
                v = make("op.reshape", [v], chan, {"shape": chan.shape})
            if kind == "op.mul":
                scale = v if scale is None else make("op.mul", [scale, v], chan)
                shift = None if shift is None else make("op.mul", [shift, v], chan)
            elif kind == "op.add":
                shift = v if shift is None else make("op.add", [shift, v], chan)
            else:
                shift = make("op.neg", [v], chan) if shift is None else make("op.sub", [shift, v], chan)
        x, w = op.operands
        if scale is not None:
            wt = w.type
            col = make(
                "op.reshape",
                [scale],
                TensorType((o, 1, 1, 1), out.dtype, out.device),
                {"shape": (o, 1, 1, 1)},
            )
            w = make("op.mul", [w, col], wt)
        y = make("op.conv2d", [x, w], out, dict(op.attrs))
        if shift is not None:
            y = make("op.add", [y, shift], out)
        rewriter.replace_op(root, [y])
        return True


def fold_conv_affine(program: Program, ctx: PassContext) -> int:
    """Fold every per-channel affine chain after a ``conv2d`` into it; returns the number of
    chains folded."""
    return apply_patterns_greedily(program, [ConvAffineFold()], ctx).rewrites


class ConvFold(Pass):
    name = "conv_fold"

    def run(self, program: Program, ctx: PassContext) -> int:
        return fold_conv_affine(program, ctx)


register_pass("conv_fold", ConvFold)

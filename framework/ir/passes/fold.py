"""Constant folding: an op whose operands are all constants is run once, at pass time,
through the eager kernel of its device (the same kernel the executor would call), and its
result becomes a ``builtin.constant``: inline (``value``) for one element, else a named
constant added to the pass context's constants.

Not folded: program outputs (each run returns a fresh tensor), random ops, ops with symbolic shapes or attributes, creation ops (no operands)
of more than one element (a filled tensor is cheaper to make than to store), results of more
than :data:`FOLD_LIMIT` elements, and host/transfer ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._src import autograd, dispatch
from ..._src import device as _dev
from ..._src.ops import base
from ..._src.tensor import Tensor, from_numpy_copy
from ..core import Operation, Program, TensorType, has_symbols
from ..dialects import lookup
from .manager import Pass, PassContext, register_pass
from .traits import random, removable, returned

#: the largest result (elements) folding makes
FOLD_LIMIT = 1 << 20


def _foldable(op: Operation) -> bool:
    if not op.name.startswith("op.") or random(op) or not removable(op) or len(op.results) != 1:
        return False
    if returned(op):
        return False  # an output is a fresh tensor each run, never the program's constant
    d = lookup(op.name).opdef
    if d is None or d.kind not in ("primitive", "composite", "view"):
        return False
    if any(v.defining_op is None or v.defining_op.name != "builtin.constant" for v in op.operands):
        return False
    t = op.result.type
    if not isinstance(t, TensorType) or not t.is_static or has_symbols(tuple(op.attrs.values())):
        return False
    n = math.prod(t.shape)
    if n > FOLD_LIMIT or (not op.operands and n != 1):
        return False
    return all(isinstance(v.type, TensorType) and v.type.is_static for v in op.operands)


def constant_tensor(op: Operation, ctx: PassContext) -> Tensor | None:
    """The tensor a ``builtin.constant`` holds, on its type's device (None: not given)."""
    t = op.result.type
    dev = _dev.parse(t.device)
    if "value" in op.attrs:
        return from_numpy_copy(np.full(t.shape, op.attrs["value"], dtype=t.dtype), dev)
    src = ctx.constants.get(op.attrs.get("name"))
    if src is None:
        return None
    if isinstance(src, Tensor):
        return src if src.device == dev else src.to(dev)
    return from_numpy_copy(np.asarray(src, dtype=t.dtype), dev)


def _scalar(arr: np.ndarray) -> Any:
    x = arr.reshape(())
    if arr.dtype == np.bool_:
        return bool(x)
    if arr.dtype.kind in "iu":
        return int(x)
    return float(x)


def _evaluate(op: Operation, ins: list[Tensor]) -> Tensor:
    d = lookup(op.name).opdef
    assert d is not None
    attrs = dict(op.attrs)
    t = op.result.type
    with autograd.no_grad():
        if d.kind == "view":
            return ins[0].reshape(tuple(attrs["shape"]))
        if d.kind == "composite":
            r = base.call(d, ins, attrs)
            return r if isinstance(r, Tensor) else list(r)[0]
        return dispatch.run(d, ins, attrs, None if ins else _dev.parse(t.device))[0]


def fold_constants(program: Program, ctx: PassContext) -> int:
    """Fold every foldable op (in program order, so chains fold in one sweep); returns the
    number of ops folded."""
    folded = 0
    names = {op.attrs.get("name") for op in program.walk() if op.name == "builtin.constant"} | set(
        ctx.constants
    )
    for op in list(program.block.ops):
        if op.parent is None or not _foldable(op):
            continue
        ins = [constant_tensor(v.defining_op, ctx) for v in op.operands]  # type: ignore[arg-type]
        if any(t is None for t in ins):
            continue
        out = _evaluate(op, ins)  # type: ignore[arg-type]
        t = op.result.type
        arr = out.numpy()
        if tuple(arr.shape) != tuple(t.shape) or arr.dtype != t.dtype:
            continue  # the kernel disagrees with the type: leave the op for the verifier to report
        if arr.size == 1 and arr.dtype.kind in "biuf" or arr.dtype.name == "bfloat16" and arr.size == 1:
            attrs: dict[str, Any] = {"value": _scalar(arr)}
        else:
            k = len(names)
            while f"folded_{k}" in names:
                k += 1
            name = f"folded_{k}"
            names.add(name)
            ctx.constants[name] = out if out.device == _dev.parse(t.device) else out.to(t.device)
            attrs = {"name": name}
        block = op.parent
        assert block is not None
        const = Operation("builtin.constant", [], [t], attrs)
        block.insert_op(block.ops.index(op), const)
        op.result.replace_all_uses_with(const.result)
        op.erase()
        folded += 1
    return folded


class ConstantFolding(Pass):
    name = "fold"

    def run(self, program: Program, ctx: PassContext) -> int:
        return fold_constants(program, ctx)


register_pass("fold", ConstantFolding)

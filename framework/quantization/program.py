"""Quantisation on the program: rewrite rules and a pass over a saved program.

- :data:`QUANT_FUSION` (declarative rules, :mod:`framework.ir.passes.drr`): the int8
  dequantisation a traced ``weight_only_linear`` decomposes into (``cast`` of the int8
  weight, ``permute``, multiply by the per-channel or spread group-wise scale) followed by
  its ``matmul`` becomes one ``op.weight_only_linear`` where the device's plugin registers
  a kernel for it. They join the ``fuse`` pass's rules (``framework.ir.passes.rules.FUSION``)
  when this module is imported, so ``to_static`` and ``fw.jit.save`` apply them at level O2.
  (Traced on a device with the kernel, the op is recorded whole and no rule is needed; the
  int4 unpacking reads its high nibble twice, which a DRR source cannot match, so int4
  programs traced without the kernel keep their decomposition.)
- :func:`quantize_program`: post-training weight-only quantisation of a *saved* program, no
  Python model needed: each float ``matmul`` by a 2-d parameter becomes
  ``weight_only_linear`` by an int8 (or int4) parameter quantised once, at pass time, and
  each ``weight_quantize`` of a parameter is replaced by its results (quantise-once
  constants); the float weights no op reads any more are dropped from the weights file.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.ops.composites.quant import weight_quantize
from .._src.tensor import Tensor, to_tensor
from ..ir import verify
from ..ir.core import Operation, TensorType
from ..ir.passes import rules as _rules
from ..ir.passes.dce import eliminate_dead_code
from ..ir.passes.drr import Attr, Match, Pat, Res, Rule, Var, has_kernel
from ..ir.passes.manager import PassContext
from ..ir.passes.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..jit.io import read_program, write_program
from .weight_only import _BITS, pack_int4_numpy, quantize_groups


def _int8_dequant(m: Match) -> bool:
    w, s, x = m.type("w"), m.type("s"), m.type("x")
    return (
        w.rank == 2
        and w.dtype == np.int8
        and x.rank == 2
        and s.dtype == x.dtype == m.type("out").dtype  # (a cast to another float would promote the mul)
    )


def _per_channel(m: Match) -> bool:
    return m.type("s").rank == 1 and m.type("s").shape[0] == m.type("w").shape[0]


def _whole_groups(m: Match) -> bool:
    s, w, e = m.type("s"), m.type("w"), m["e"]
    return s.rank == 2 and s.shape[1] == w.shape[0] and e[0] * e[1] == w.shape[1] and e[0] == s.shape[0]


def _dequant(scale: Pat | Var) -> Pat:
    return Pat("mul", Pat("permute", Pat("cast", Var("w")), perm=(1, 0)), scale)


QUANT_FUSION = [
    Rule(
        "dequant_matmul_to_weight_only_linear",
        source=Pat("matmul", Var("x"), _dequant(Pat("reshape", Var("s")))),
        result=Res("weight_only_linear", "x", "w", "s", weight_dtype="int8", group_size=-1),
        where=[_int8_dequant, _per_channel, has_kernel("weight_only_linear")],
    ),
    Rule(
        "dequant_groups_matmul_to_weight_only_linear",
        source=Pat(
            "matmul",
            Var("x"),
            _dequant(Pat("reshape", Pat("expand", Pat("reshape", Var("s")), shape=Attr("e")))),
        ),
        result=Res("weight_only_linear", "x", "w", "s", weight_dtype="int8", group_size=lambda m: m["e"][1]),
        where=[_int8_dequant, _whole_groups, has_kernel("weight_only_linear")],
    ),
]


for _rule in QUANT_FUSION:
    if _rule not in _rules.FUSION:
        _rules.FUSION.append(_rule)


# -- quantising a saved program -----------------------------------------------------------------
class _QuantizeWeights(RewritePattern):
    """``matmul(x, parameter)`` -> ``weight_only_linear(x, q, scale)`` with ``q`` and ``scale``
    new parameters quantised once here; ``weight_quantize(parameter)`` -> its two results."""

    root = None

    def __init__(
        self,
        params: dict[str, Tensor],
        weight_dtype: str,
        group_size: int,
        skip: tuple[str, ...],
        head: tuple[str | None, str] = (None, ""),
        method: str = "absmax",
        asymmetric: bool = False,
    ) -> None:
        self.params, self.weight_dtype, self.group_size, self.skip = params, weight_dtype, group_size, skip
        self.head, self.head_dtype = head  # the output head's parameter and its dtype
        self.method, self.asymmetric = method, asymmetric
        self.quantized: list[str] = []

    def _parameter(self, rw: PatternRewriter, name: str, t: Tensor, dev: str, before: Operation) -> Any:
        self.params[name] = t
        ty = TensorType(tuple(t.shape), np.dtype(t.dtype), dev)
        return rw.create("builtin.parameter", [], [ty], {"name": name}, before=before).results[0]

    def _quantize(self, name: str, algo: str, group_size: int) -> tuple[Tensor, Tensor]:
        return weight_quantize(self.params[name], algo, group_size=group_size)

    def match_and_rewrite(self, op: Operation, rw: PatternRewriter) -> bool:
        if op.name == "op.weight_quantize":
            return self._fold_quantize(op, rw)
        if op.name != "op.matmul" or op.attrs or len(op.operands) != 2:
            return False
        x, w = op.operands
        d = w.defining_op
        if d is None or d.name != "builtin.parameter" or d.attrs["name"] in self.skip:
            return False
        name, t = d.attrs["name"], w.type
        if (
            name not in self.params
            or t.rank != 2
            or np.dtype(t.dtype).kind != "f"
            or x.type.dtype != t.dtype
            or any(user.name != "op.matmul" or i != 1 for user, i in w.uses)  # e.g. a tied embedding
        ):
            return False
        dtype, group, plain = (
            self.weight_dtype,
            self.group_size,
            self.method == "absmax" and not self.asymmetric,
        )
        if name == self.head and self.head_dtype != dtype:  # the head: abs-max, per channel unless int4
            dtype, group, plain = self.head_dtype, (group if self.head_dtype == "int4" else -1), True
        if dtype == "int4" and t.shape[1] % 2:
            return False
        offset = None
        if plain:
            q, s = self._quantize(name, "weight_only_" + dtype, group)
        else:  # the clip search and / or zero points of weight_only_quantize, data-free
            w = self.params[name].numpy()
            qi, sc, c = quantize_groups(w, _BITS[dtype], group, self.asymmetric, self.method, None)
            dev = self.params[name].device
            q = to_tensor(pack_int4_numpy(qi) if dtype == "int4" else qi, device=dev)
            s = to_tensor((sc[0] if group == -1 else sc).astype(w.dtype), device=dev)
            offset = None if c is None else to_tensor(c.astype(w.dtype), device=dev)
        qv = self._parameter(rw, name + ".qweight", q, t.device, op)
        sv = self._parameter(rw, name + ".qscale", s, t.device, op)
        ins, attrs = [x, qv, sv], {"group_size": group, "weight_dtype": dtype}
        if offset is not None:
            ins.append(self._parameter(rw, name + ".qoffset", offset, t.device, op))
            attrs["zero_point"] = True
        new = rw.create("op.weight_only_linear", ins, [op.result.type], attrs, before=op)
        rw.replace_op(op, [new.results[0]])
        self.quantized.append(name)
        return True

    def _fold_quantize(self, op: Operation, rw: PatternRewriter) -> bool:
        d = op.operands[0].defining_op
        if d is None or d.name != "builtin.parameter" or d.attrs["name"] not in self.params:
            return False
        name = d.attrs["name"]
        algo, g = op.attrs["algo"], op.attrs["group_size"]
        q, s = self._quantize(name, algo, g)
        dev = op.operands[0].type.device
        tag = f"{name}.{algo}.g{g}"
        qv = self._parameter(rw, tag + ".qweight", q, dev, op)
        sv = self._parameter(rw, tag + ".qscale", s, dev, op)
        rw.replace_op(op, [qv, sv])
        self.quantized.append(name)
        return True


def _output_head(program: Any, params: dict[str, Tensor]) -> str | None:
    """The parameter of the program's last ``matmul`` whose columns are as many as the rows of
    a parameter some ``gather`` reads along axis 0 (an embedding table): the output head."""

    def param(v: Any) -> str | None:
        d = v.defining_op
        return d.attrs["name"] if d is not None and d.name == "builtin.parameter" else None

    vocabs, heads = set(), []
    for op in program.walk():
        if op.name == "op.gather" and op.attrs.get("axis") == 0:
            name = param(op.operands[0])
            if name in params:
                vocabs.add(params[name].shape[0])
        elif op.name == "op.matmul" and len(op.operands) == 2:
            name = param(op.operands[1])
            if name in params and len(params[name].shape) == 2:
                heads.append((name, params[name].shape[1]))
    found = [n for n, cols in heads if cols in vocabs]
    return found[-1] if found else None


def quantize_program(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    weight_dtype: str = "int8",
    group_size: int = -1,
    skip: tuple[str, ...] = (),
    method: str = "absmax",
    asymmetric: bool = False,
    sensitive_dtype: str | None = None,
) -> dict[str, Any]:
    """Weight-only quantise the program ``fw.jit.save`` wrote at ``src`` and write the result
    at ``dst`` (both paths without suffix): every ``matmul`` by a float 2-d parameter (but the
    parameters named in ``skip``) runs as ``weight_only_linear`` by its int8 / int4 weight,
    quantised once here.

    ``method`` (``"absmax"`` or ``"search"``: the clip search) and ``asymmetric`` (a zero point
    per group, passed to the kernel as ``weight_offset``) are those of
    :func:`~framework.quantization.weight_only_quantize`, data-free (GPTQ needs the inputs of
    each product: quantise the model with ``weight_only_quantize`` before saving). The output
    head (the last product by a parameter whose columns match the rows of a table the program
    gathers from: a language model's ``lm_head``) gets ``sensitive_dtype``: by default int8
    per channel when ``weight_dtype`` is ``"int4"``, as ``weight_only_quantize`` keeps it.

    Returns:
        dict: ``quantized`` (the parameter names), ``bytes_before`` and ``bytes_after`` (the
        weights files).

    Example:
        >>> import os, tempfile, numpy as np, framework as fw
        >>> from framework.quantization import quantize_program
        >>> d = tempfile.TemporaryDirectory()
        >>> src, dst = os.path.join(d.name, "fp32"), os.path.join(d.name, "int8")
        >>> fw.jit.save(fw.nn.Linear(64, 32), src, input_spec=[fw.static.InputSpec([None, 64])])
        >>> quantize_program(src, dst)["quantized"]
        ['weight']
        >>> fw.jit.load(dst)(fw.ones([1, 64])).shape
        (1, 32)
        >>> d.cleanup()
    """
    if weight_dtype not in ("int8", "int4"):
        raise OpArgumentError(
            f"[quantize_program] weight_dtype must be 'int8' or 'int4', got {weight_dtype!r}"
        )
    if method not in ("absmax", "search"):
        raise OpArgumentError(
            f"[quantize_program] method must be 'absmax' or 'search', got {method!r} (GPTQ needs the inputs of "
            f"each product: use weight_only_quantize on the model before saving)"
        )
    if sensitive_dtype is None:
        sensitive_dtype = "int8" if weight_dtype == "int4" else weight_dtype
    src, dst = os.fspath(src), os.fspath(dst)
    program, params, constants, structure, names = read_program(src, "cpu")
    head = (_output_head(program, params), sensitive_dtype)
    pattern = _QuantizeWeights(dict(params), weight_dtype, group_size, tuple(skip), head, method, asymmetric)
    ctx = PassContext(constants, "cpu")
    apply_patterns_greedily(program, [pattern], ctx)
    eliminate_dead_code(program, ctx)
    verify(program)
    read = {op.attrs["name"] for op in program.walk() if op.name == "builtin.parameter"}
    kept = {n: t for n, t in pattern.params.items() if n in read}
    write_program(dst, program, kept, ctx.constants, structure, names)
    return {
        "quantized": pattern.quantized,
        "bytes_before": os.path.getsize(src + ".safetensors"),
        "bytes_after": os.path.getsize(dst + ".safetensors"),
    }


__all__ = ["QUANT_FUSION", "quantize_program"]

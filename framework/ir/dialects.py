"""Dialects: which operation names exist, their traits and their shape inference.

- ``builtin``: ``parameter`` (a weight, by name), ``constant`` (a tensor baked into the
  program: a scalar inline as ``value``, a larger one by ``name``), ``return``.
- ``cf`` (control flow): ``cond`` (an operand, the predicate, and two regions: then, else),
  ``while`` (operands: the initial loop values; regions: cond and body, whose block arguments
  are the loop-carried values) and ``yield`` (the terminator of their blocks). Their regions
  may read values of enclosing blocks (captured, not passed). See :mod:`framework.ir.control`.
- ``kernel`` (lowered for one device by :mod:`framework.ir.passes.lower`): ``kernel.<op>``
  (the op with the kernel chosen for it in ``kernel.*`` attributes; ``kernel.fused.g<id>`` for
  a fusion group), ``kernel.expand`` (broadcasting made explicit) and ``kernel.eager`` (an op
  run through the dispatcher; ``kernel.op`` names it). Each takes its traits, result count and
  shape rule from the op it lowers, with the trait ``kernel`` added.
- ``op``: one operation per :class:`OpDef` in ``framework._src.ops.base.OPS``, generated, not
  written twice. Its traits come from the OpDef (``elementwise``, ``side_effect_free``,
  ``commutative``, ``random``, ``primitive`` / ``composite`` / ``view``) and its shape
  inference is the OpDef's ``infer``.

An op not in the table is an error of the verifier and the parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._src.ops import base
from .._src.tensor import Tensor
from .core import IRError, Operation, resolve

#: ops that change state beyond their results (none of the pure op set today; random bits are
#: counter-based, a function of their attributes)
_SIDE_EFFECTS: frozenset[str] = frozenset()


@dataclass(frozen=True)
class OpInfo:
    """What the IR knows of one operation name."""

    name: str
    traits: frozenset[str]
    #: the OpDef behind an ``op.*`` operation (None for builtin ones)
    opdef: base.OpDef | None = None
    #: number of results, when fixed
    results: int | None = 1
    attrs: tuple[str, ...] = field(default=())

    def has(self, trait: str) -> bool:
        return trait in self.traits


class _NoData:
    """Storage stand-in for the tensors shape inference is called with: no values to read."""

    __slots__ = ()

    @property
    def handle(self) -> Any:
        raise IRError(
            "[ir] shape inference read a tensor's values; an OpDef.infer must use shapes and dtypes only"
        )


def meta_tensor(shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
    """A tensor with a shape and dtype and no storage, for ``OpDef.infer``."""
    from .._src import device as _dev

    return Tensor._make(_NoData(), 0, tuple(shape), np.dtype(dtype), _dev.parse("cpu"))  # type: ignore[arg-type]


def infer_shapes(op: Operation, binding: Mapping[str, int]) -> list[tuple[tuple[int, ...], np.dtype]] | None:
    """The (shape, dtype) of each result of ``op`` under ``binding``, by its OpDef's rule, or
    None when the op has no rule (builtin ops, views, host ops)."""
    info = lookup(op.name)
    d = info.opdef
    if op.name == "kernel.eager":
        d = lookup(str(op.attrs.get("kernel.op"))).opdef
    if d is not None and d.name == "arange":
        return None  # the length is the caller's (eager: the metas given; a program: the type)
    if d is None or d.infer is None:
        if d is not None and d.kind == "view":  # reshape: the shape attribute
            return [(tuple(resolve(op.attrs["shape"], binding)), op.operands[0].type.dtype)]
        return None
    ins = [meta_tensor(v.type.concrete(binding), v.type.dtype) for v in op.operands]
    attrs = {k: resolve(v, binding) for k, v in op.attrs.items() if not k.startswith("kernel.")}
    if d.name == "full":
        attrs["device"] = None
    return [(tuple(s), np.dtype(t)) for s, t in d.infer(ins, attrs)]


_TABLE: dict[str, OpInfo] = {}


def _builtin() -> None:
    pure = frozenset({"side_effect_free"})
    _TABLE["builtin.parameter"] = OpInfo("builtin.parameter", pure, attrs=("name",))
    _TABLE["builtin.constant"] = OpInfo("builtin.constant", pure | {"constant_like"})
    _TABLE["builtin.return"] = OpInfo("builtin.return", frozenset({"terminator"}), results=0)
    _TABLE["cf.cond"] = OpInfo("cf.cond", frozenset({"regions"}), results=None)
    _TABLE["cf.while"] = OpInfo("cf.while", frozenset({"regions"}), results=None)
    _TABLE["cf.yield"] = OpInfo("cf.yield", frozenset({"terminator"}), results=0)


def _generated() -> None:
    for name, d in base.OPS.items():
        traits = {d.kind}
        if d.elementwise:
            traits.add("elementwise")
        if name not in _SIDE_EFFECTS:
            traits.add("side_effect_free")
        if d.commutative:
            traits.add("commutative")
        if d.random:
            traits.add("random")
        if d.infer is not None:
            traits.add("infer_shape")
        if d.grad is not None:
            traits.add("gradient")
        if d.lower is not None:
            traits.add("lowering")
        nres = 1 if d.kind in ("primitive", "view") else None
        _TABLE["op." + name] = OpInfo("op." + name, frozenset(traits), d, nres)


def lookup(name: str) -> OpInfo:
    """The :class:`OpInfo` of an operation name; an unknown name is an :class:`IRError`."""
    if not _TABLE:
        _builtin()
        _generated()
    info = _TABLE.get(name)
    if info is None and name.startswith("kernel."):
        info = _kernel(name)
    if info is None and name.startswith("op.") and name[3:] in base.OPS:  # an op defined after the table
        _generated()
        info = _TABLE.get(name)
    if info is None:
        raise IRError(
            f"[ir] unknown operation '{name}'; expected builtin.parameter/constant/return, "
            f"cf.cond/while/yield, kernel.<name>/kernel.eager or "
            f"op.<name> of a defined op (framework._src.ops OPS)"
        )
    return info


def _kernel(name: str) -> OpInfo | None:
    """The kernel dialect's entry for ``name``: ``kernel.eager`` (any op, through the
    dispatcher; its results are counted by the op it runs) or ``kernel.X``, which lowers
    ``op.X`` (``fused.g<id>`` for ``kernel.fused.g<id>``)."""
    if name == "kernel.eager":
        info = OpInfo(name, frozenset({"kernel", "eager"}), None, None, ("kernel.op", "kernel.reason"))
    else:
        rest = name[len("kernel.") :]
        try:
            of = lookup(rest if rest.startswith("fused.") else "op." + rest)
        except IRError:
            return None
        info = OpInfo(name, of.traits | {"kernel"}, of.opdef, of.results, of.attrs)
    _TABLE[name] = info
    return info


def register(info: OpInfo) -> None:
    """Add an operation name made at run time (a fusion group's ``fused.<id>``: its OpDef is
    not in the op table, so it never reaches the eager API or the conformance tiers)."""
    ops()  # the builtin and generated entries first
    _TABLE[info.name] = info


def ops() -> dict[str, OpInfo]:
    """Every known operation name and its info (ops defined after the table was first made,
    e.g. by a module imported later, included)."""
    lookup("builtin.return")
    if any("op." + name not in _TABLE for name in base.OPS):
        _generated()
    return dict(_TABLE)

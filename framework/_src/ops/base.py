"""One op, one definition: :class:`OpDef` holds the schema, the shape/dtype rule, the
gradient rule and (for composites) the decomposition. Eager dispatch, autograd, tracing and
code generation all read it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from adapter_api import PRIMITIVES

from .. import amp as _amp
from .. import autograd, dispatch, env
from ..tensor import Tensor

Meta = tuple[tuple[int, ...], Any]


@dataclass(frozen=True, slots=True)
class Lowering:
    """How an op becomes a value of the compiler's loop IR (``framework.compiler.ir``).

    ``role`` is ``"expr"`` (an element-wise value, spelled by ``c``), ``"cast"``, ``"reduce"``
    (along the row) or ``"pass"`` (a broadcast or copy: the value itself). ``c`` is the value
    in the C family (C, OpenCL C, CUDA C): ``{0}``, ``{1}``, ``{2}`` are the operands,
    ``{fn:exp}`` the math function for the value's type (``expf`` or ``exp``), ``{one}`` and
    ``{zero}`` the literals of that type. ``costly`` marks a value worth keeping in memory
    between passes rather than recomputing it. An emitter may still spell an op its own way
    (``Emitter.native``: OpenCL's ``rsqrt``)."""

    role: str = "expr"
    c: str = ""
    costly: bool = False


class OpDef:
    """The definition of one operator."""

    __slots__ = ("name", "kind", "infer", "grad", "elementwise", "decomposition", "doc", "spec", "lower", "__dict__")

    def __init__(
        self,
        name: str,
        kind: str,
        infer: Callable[[list[Tensor], dict[str, Any]], list[Meta]] | None = None,
        grad: Callable[..., list[Tensor | None]] | None = None,
        elementwise: bool = False,
        decomposition: Callable[..., Any] | None = None,
        doc: str = "",
        lower: Lowering | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.infer = infer
        self.grad = grad
        self.elementwise = elementwise
        self.decomposition = decomposition
        self.doc = doc
        self.spec = PRIMITIVES.get(name)
        #: the lowering to the compiler's loop IR, or None (the op ends a fusion group)
        self.lower = lower

    #: why a primitive has no gradient rule ("" when it has one)
    no_grad: str = ""

    def __repr__(self) -> str:
        return f"<OpDef {self.kind} {self.name}>"


#: Every op the core defines, by name.
OPS: dict[str, OpDef] = {}


def primitive(name: str, infer: Callable[..., list[Meta]], grad: Callable[..., Any] | None = None, *,
              elementwise: bool = False, lower: Lowering | str | None = None, no_grad: str = "") -> OpDef:
    """Define a primitive: its shape/dtype rule, its gradient rule (or ``no_grad``, saying why
    it has none), and ``lower``, its :class:`Lowering` (a string is the ``c`` of an element-wise
    one; an element-wise primitive must have one)."""
    if name not in PRIMITIVES:
        raise ValueError(f"'{name}' is not in adapter_api.PRIMITIVES")
    if (grad is None) == (not no_grad):
        raise ValueError(f"primitive '{name}': give a gradient rule or no_grad='why it has none', not both")
    if elementwise and lower is None:
        raise ValueError(f"primitive '{name}' is element-wise: give its lowering to the loop IR (lower=...)")
    if isinstance(lower, str):
        lower = Lowering(c=lower)
    op = OPS[name] = OpDef(name, "primitive", infer, grad, elementwise, lower=lower)
    op.no_grad = no_grad
    return op


#: When set, ``apply`` hands every primitive to this callable instead of running it
#: (tracing for the compiler and ``jit``): fn(op, ins, attrs) -> outs.
TRACER: list[Callable[[OpDef, list[Tensor], dict[str, Any]], list[Tensor]] | None] = [None]


def apply(op: OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> list[Tensor]:
    """Run a primitive and record it for autograd when an input needs a gradient."""
    if _amp.POLICY.get() is not None:  # fw.amp.auto_cast: the op's allow/deny list picks the dtype
        ins = _amp.cast_inputs(op.name, ins)
    tracer = TRACER[0]
    # NOTE: a tracer records with autograd too, so gradient rules can be traced like forwards
    outs = dispatch.run(op, ins, attrs) if tracer is None else tracer(op, ins, attrs)
    if autograd.GRAD_ENABLED.get() and op.grad is not None:
        for t in ins:
            if not t.stop_gradient:
                autograd.record(op, ins, attrs, outs)
                break
    return outs


def apply1(op: OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> Tensor:
    return apply(op, ins, attrs)[0]


# -- composites -----------------------------------------------------------------------------
#: counters of which path each composite took: {(op, device type): {path: n}}
PATHS: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"fused": 0, "generated": 0, "decomposed": 0})

#: Generated-kernel providers (framework.compiler registers one): fn(op, ins, attrs) -> outs | None.
#: A provider that returns outputs has recorded them for autograd when needed.
GENERATORS: list[Callable[[OpDef, list[Tensor], dict[str, Any]], list[Tensor] | None]] = []


def _compile_enabled() -> bool:
    return env.flag("OARLOCK_COMPILE", True)


def composite(
    name: str,
    infer: Callable[..., list[Meta]] | None = None,
    grad: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], OpDef]:
    """Define a composite op by its decomposition (a function of tensors and attrs).

    ``infer`` lets a plugin's fused kernel (registered under ``name``) or a generated kernel
    replace the decomposition; ``grad`` is an explicit gradient rule used then (without it the
    decomposition is re-run under autograd to differentiate).
    """

    def wrap(fn: Callable[..., Any]) -> OpDef:
        op = OPS[name] = OpDef(name, "composite", infer, grad or _grad_by_decomposition, False, fn, fn.__doc__ or "")
        return op

    return wrap


def call(op: OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> Any:
    """Run a composite: registered fused kernel, then generated kernel, then decomposition."""
    if _amp.POLICY.get() is not None:
        ins = _amp.cast_inputs(op.name, ins)
    dev = ins[0].device
    if op.infer is not None:
        entry = dispatch.find_kernel(op.name, dev.type, ins[0].dtype)
        if entry is not None:
            PATHS[(op.name, dev.type)]["fused"] += 1
            return _finish(apply(op, ins, attrs))
        if GENERATORS and _compile_enabled():
            for gen in GENERATORS:
                outs = gen(op, ins, attrs)
                if outs is not None:  # the generator records autograd itself (its own backward)
                    PATHS[(op.name, dev.type)]["generated"] += 1
                    return _finish(outs)
    PATHS[(op.name, dev.type)]["decomposed"] += 1
    assert op.decomposition is not None
    if op.grad is not _grad_by_decomposition and TRACER[0] is None and autograd.GRAD_ENABLED.get() and any(not t.stop_gradient for t in ins):
        # An explicit gradient rule is cheaper than the tape of the decomposition: run the
        # decomposition untaped and record the composite as one node.
        with autograd.no_grad():
            out = op.decomposition(*ins, **attrs)
        outs = [out] if isinstance(out, Tensor) else list(out)
        if not any(o is t for o in outs for t in ins):  # an input passed through keeps its own graph
            autograd.record(op, ins, attrs, outs)
            return out
    return op.decomposition(*ins, **attrs)


def _finish(outs: list[Tensor]) -> Any:
    return outs[0] if len(outs) == 1 else tuple(outs)


def _grad_by_decomposition(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
    """Differentiate a fused/generated composite by re-running its decomposition."""
    from . import creation

    assert node.inputs is not None and node.op.decomposition is not None
    leaves = [t.detach() for t in node.inputs]
    for t, src in zip(leaves, node.inputs):
        t.stop_gradient = src.stop_gradient
    with autograd.enable_grad():
        outs = node.op.decomposition(*leaves, **node.attrs)
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    pairs = [(o, g if g is not None else creation.zeros_like(o)) for o, g in zip(outs, gouts) if not o.stop_gradient]
    wanted = [t for t in leaves if not t.stop_gradient]
    if not pairs or not wanted:
        return [None] * len(leaves)
    res = autograd.grad([p[0] for p in pairs], wanted, [p[1] for p in pairs], allow_unused=True,
                        create_graph=autograd.is_grad_enabled())
    it = iter(res)
    return [next(it) if not t.stop_gradient else None for t in leaves]


def path_stats() -> dict[str, dict[str, int]]:
    """Which path each composite took so far: ``{"softmax@cpu": {"fused": 0, ...}}``."""
    return {f"{op}@{dt}": dict(v) for (op, dt), v in sorted(PATHS.items())}

"""Defining ops (:func:`primitive`, :func:`composite`) and running them (:func:`apply`,
:func:`call`). The definition itself, :class:`~framework._src.opdef.OpDef`, lives one floor
down (the engine runs OpDefs without knowing any op); eager dispatch, autograd, tracing and
code generation all read it.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import PRIMITIVES, OpArgumentError

from .. import allocator as _allocator
from .. import amp as _amp
from .. import autograd, dispatch, env
from .. import fastcall as _fastcall
from .. import profiling as _profiling
from .. import tensor as _tensor
from ..opdef import AMP_CLASSES, OPS, Identity, Lowering, Meta, OpDef, SpmdRule
from ..tensor import Tensor
from . import sharding as _sharding

if TYPE_CHECKING:
    from ..device import Device

__all__ = [
    "LATER",
    "OPS",
    "Identity",
    "Lowering",
    "Meta",
    "OpDef",
    "SpmdRule",
    "apply",
    "apply1",
    "attach_grad",
    "broadcast_shapes",
    "call",
    "composite",
    "full_tensor",
    "primitive",
    "tracing",
]


def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcast of two shapes; a mismatch is an error naming ``op`` (shape rules use it)."""
    if a == b:
        return a
    if len(a) == len(b):  # fast path: one side is all ones (a cached scalar constant)
        if b and max(b) == 1 and min(b) == 1:
            return a
        if a and max(a) == 1 and min(a) == 1:
            return b
    a, b = tuple(a), tuple(b)
    cached = not _tensor.OWN_SIZES  # a traced dynamic dim equals its plain int: not cached
    got = _BROADCASTS.get((a, b)) if cached else None
    if got is not None:
        return got
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise OpArgumentError(
                f"[{op}] shapes {a} and {b} cannot be broadcast: dimension {i - n} is {x} vs {y}; "
                f"make them equal or 1"
            )
    if not cached:
        return tuple(out)
    if len(_BROADCASTS) > 4096:
        _BROADCASTS.clear()
    got = _BROADCASTS[(a, b)] = tuple(out)
    return got


#: (a, b) -> their broadcast shape, for the pairs that broadcast (an eager step meets the
#: same few again and again; the general rule took ~3 us a call)
_BROADCASTS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}


def full_tensor(shape: tuple[int, ...], value: Any, dtype: np.dtype, dev: Device) -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (checked): a buffer, or while tracing a
    constant of the program."""
    tracer = TRACER.get()
    if tracer is not None:  # traced: a constant of the program, not a buffer
        return tracer(OPS["full"], [], {"shape": shape, "value": value, "dtype": dtype, "device": dev})[0]
    return fill_buffer(shape, value, dtype, dev)


def fill_buffer(shape: tuple[int, ...], value: Any, dtype: np.dtype, dev: Device) -> Tensor:
    """A real buffer filled with ``value``, even while tracing."""
    if dtype.kind in "iu" and isinstance(value, float) and not math.isfinite(value):
        raise OpArgumentError(f"[full] cannot fill an integer tensor ({dtype}) with {value}")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = int(value)
        if not info.min <= v <= info.max:
            raise OpArgumentError(f"[full] value {value} does not fit in {dtype} ({info.min}..{info.max})")
    return dispatch.run(OPS["full"], [], {"shape": shape, "value": value, "dtype": dtype}, dev)[0]


def primitive(
    name: str,
    infer: Callable[..., list[Meta]],
    grad: Callable[..., Any] | None = None,
    *,
    elementwise: bool = False,
    lower: Lowering | str | None = None,
    no_grad: str = "",
    **facts: Any,
) -> OpDef:
    """Define a primitive: its shape/dtype rule, its gradient rule (or ``no_grad``, saying why
    it has none), and ``lower``, its :class:`Lowering` (a string is the ``c`` of an element-wise
    one; an element-wise primitive must have one). ``facts`` are the OpDef's other fields
    (:func:`with_facts`); an element-wise primitive's sharding rule is the element-wise one
    unless it says otherwise."""
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
    if elementwise and "sharding" not in facts and "no_sharding" not in facts:
        facts["sharding"] = _sharding.elementwise()
    return with_facts(op, **facts)


#: the OpDef fields ``primitive``/``composite`` take as keywords, and what each must be
_FACTS: dict[str, Callable[[Any], bool]] = {
    "family": lambda v: v in ("", "unary", "binary", "compare", "reduce"),
    "commutative": lambda v: isinstance(v, bool),
    "random": lambda v: isinstance(v, bool),
    "identity": lambda v: v is None or isinstance(v, Identity),
    "amp": lambda v: v in AMP_CLASSES,
    "sharding": lambda v: v is None or callable(v),
    "no_sharding": lambda v: isinstance(v, str),
    "flops": lambda v: v is None or callable(v),
    # a composite's: one element-wise value, or its decomposition traced (opdef.Lowering)
    "lower": lambda v: isinstance(v, Lowering) and v.role in ("expr", "decompose"),
}


def with_facts(op: OpDef, **facts: Any) -> OpDef:
    """Set the OpDef's other fields (family, commutative, random, identity, amp,
    sharding, no_sharding, flops, a composite's lower; see :class:`OpDef`), each checked.

    >>> import framework
    >>> from framework._src.ops.base import OPS
    >>> OPS["softmax"].amp, OPS["exp"].amp
    ('deny', 'deny')
    """
    for key, value in facts.items():
        check = _FACTS.get(key)
        if check is None:
            raise ValueError(
                f"[ops] op '{op.name}': unknown OpDef field '{key}'; expected one of {sorted(_FACTS)}"
            )
        if not check(value):
            raise ValueError(f"[ops] op '{op.name}': OpDef field {key}={value!r} is not valid")
        setattr(op, key, value)
    return op


class _Later:
    """The gradient rule of a primitive that a later module attaches (:func:`attach_grad`): the
    rules are written with ops defined after the primitives (``ops.primitive_grads``)."""

    def __repr__(self) -> str:
        return "LATER"

    def __call__(self, node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
        raise RuntimeError(f"[autograd] the gradient rule of '{node.op.name}' was never attached")


#: ``primitive(name, infer, LATER, ...)``: the gradient rule is attached later (:func:`attach_grad`)
LATER = _Later()


def attach_grad(name: str, rule: Callable[..., Any]) -> None:
    """Give primitive ``name``, defined with ``grad=LATER``, its gradient rule."""
    op = OPS[name]
    if op.grad is not LATER:
        raise ValueError(f"primitive '{name}' was not defined with grad=LATER (its gradient: {op.grad!r})")
    op.grad = rule


#: When set, ``apply`` hands every primitive to this callable instead of running it
#: (tracing for the compiler and ``jit``): fn(op, ins, attrs) -> outs.
TRACER: contextvars.ContextVar[Callable[[OpDef, list[Tensor], dict[str, Any]], list[Tensor]] | None] = (
    contextvars.ContextVar("oarlock_tracer", default=None)
)


@contextlib.contextmanager
def tracing(
    tracer: Callable[[OpDef, list[Tensor], dict[str, Any]], list[Tensor]], what: str
) -> Iterator[None]:
    """Hand every primitive run in this context (thread, task) to ``tracer`` instead of a
    kernel; ``what`` names the tracer in the error for a nested trace."""
    if TRACER.get() is not None:
        raise OpArgumentError(
            f"[{what}] a function is already being traced in this context "
            f"(nested to_static or compiler tracing)"
        )
    token = TRACER.set(tracer)
    try:
        yield
    finally:
        TRACER.reset(token)


def apply(op: OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> list[Tensor]:
    """Run a primitive and record it for autograd when an input needs a gradient."""
    if dispatch.INTERCEPTORS:  # a distributed tensor exists: its ops run by sharding rules
        outs = dispatch.intercept(op, ins, attrs)
        if outs is not None:
            return outs
    if _amp.POLICY.get() is not None:  # fw.amp.auto_cast: the op's allow/deny list picks the dtype
        ins = _amp.cast_inputs(op.name, ins)
    tracer = TRACER.get()
    if _profiling.ACTIVE:  # fw.profiler: the op's span (the only cost of the profiler when off)
        return _profiled_apply(op, ins, attrs, tracer)
    # NOTE: a tracer records with autograd too, so gradient rules can be traced like forwards
    outs = dispatch.run(op, ins, attrs) if tracer is None else tracer(op, ins, attrs)
    if autograd.GRAD_ENABLED.get() and op.grad is not None:
        for t in ins:
            if not t.stop_gradient:
                autograd.record(op, ins, attrs, outs)
                break
    return outs


#: (op, device type, dtype) -> the kernel's name in the profile, ``plugin/op/dtype``
_KERNEL_NAMES: dict[tuple[str, str, Any], str] = {}


def _profiled_apply(op: OpDef, ins: list[Tensor], attrs: dict[str, Any], tracer: Any) -> list[Tensor]:
    """:func:`apply` under ``fw.profiler``: a host span around the op (its kernel and its
    autograd record) and, on a device the profiler times, a device span of its kernel named
    as the plugin registered it (``plugin/op/dtype``); both carry the details the recording
    asks for (input shapes, flops), and allocations meanwhile are the op's."""
    rec = _profiling.current()
    assert rec is not None
    t0 = _profiling.now()
    ev0 = ctx = None
    dev_type = ""
    if tracer is None and ins:
        dev = ins[0].device
        dev_type = dev.type
        ctx = dispatch.context(dev)
        ev0 = rec.begin_launch(ctx, dev_type)
    outer, rec.cur = rec.cur, op.name
    try:
        outs = dispatch.run(op, ins, attrs) if tracer is None else tracer(op, ins, attrs)
    finally:
        rec.cur = outer
    args = rec.op_args(op, ins, outs if tracer is None else None, attrs) if rec.shapes or rec.flops else None
    if ev0 is not None:
        rec.end_launch(ctx, dev_type, ev0, kernel_name(op, dev_type, ins), args)
    if autograd.GRAD_ENABLED.get() and op.grad is not None:
        for t in ins:
            if not t.stop_gradient:
                autograd.record(op, ins, attrs, outs)
                break
    rec.span(
        _profiling.OPERATOR if tracer is None else _profiling.TRACED, op.name, t0, _profiling.now(), args
    )
    return outs


def kernel_name(op: OpDef, dev_type: str, ins: list[Any]) -> str:
    """The name of the kernel ``op`` runs on ``ins`` in the profile, ``plugin/op/dtype``
    (``cpu-fallback/...`` where the device's plugin has none)."""
    dtype = ins[op.spec.key_input if op.spec else 0].dtype
    key = (op.name, dev_type, dtype)
    kname = _KERNEL_NAMES.get(key)
    if kname is None:
        entry = dispatch.find_kernel(*key)
        plugin = entry.plugin if entry is not None else "cpu-fallback"
        kname = _KERNEL_NAMES[key] = f"{plugin}/{op.name}/{dtype}"
    return kname


def apply1(op: OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> Tensor:
    return apply(op, ins, attrs)[0]


def fast_binary(op: OpDef, slow: Callable[..., Tensor], **how: Any) -> Callable[..., Tensor]:
    """``slow`` (a binary op's function, ``slow(x, y)``) with the plain eager case run in C
    (``_src/fastcall.c``): two tensors of one dtype, device and shape (not distributed), no AMP
    policy, tracer, profiler or poison mode, and no gradient to record; anything else calls
    ``slow``. Where the extension cannot be built, ``slow`` itself (``fastcall.status()``).
    ``how``: ``resolver`` (the op's own plan for two tensors, in place of
    ``dispatch.fast_binary_plan``: ``divide`` takes only floating dtypes), ``reflected``
    (``slow(x, v)`` computes ``v op x``: ``__radd__`` and the like, a float ``v`` in C) and
    ``unary`` (``slow(x)``: ``__neg__``; its own ``resolver``, called ``(op, x, x)``)."""
    mod = _fastcall.load()
    return slow if mod is None else fast_binary_of(mod, op, slow, **how)


def fast_binary_of(mod: Any, op: OpDef, slow: Callable[..., Tensor], **how: Any) -> Callable[..., Tensor]:
    """:func:`fast_binary` with the extension ``mod`` at hand (also once a background build of
    it lands: ``fastcall.when_ready``)."""
    if not _FAST_CONFIGURED:
        mod.configure(
            Tensor,
            dispatch.fast_binary_plan,
            dispatch.fast_failed,
            dispatch.INTERCEPTORS,
            vars(_profiling),
            (_amp.POLICY, TRACER, dispatch.POISON_OUTPUTS),
            autograd.GRAD_ENABLED,
            _allocator.CachingAllocator,
            _allocator.Block,
            vars(_allocator),
        )
        # a dying tensor's block goes back to the pool in C too (allocator.Block.__del__)
        _allocator.Block.__del__ = mod.BlockRelease(_allocator.Block.__del__)  # type: ignore[method-assign]
        _FAST_CONFIGURED.append(True)
    f = mod.FastBinary(op, slow, **how)
    f.__doc__, f.__name__, f.__qualname__, f.__wrapped__ = (
        slow.__doc__,
        slow.__name__,
        slow.__qualname__,
        slow,
    )
    return f


_FAST_CONFIGURED: list[bool] = []


def fast_scalars(
    resolver: Callable[[OpDef, Tensor, float], tuple | None],
    constants: dict[tuple[Any, ...], Tensor],
    make_constant: Callable[..., Tensor],
) -> None:
    """Let the fast binary operators run ``x op v`` for a Python float ``v`` in C too:
    ``resolver(op, x, v, reflected)`` is the plan (``dispatch.fast_binary_plan`` with ``v``'s
    constant, on the left when ``reflected``: ``v - x``), None where the scalar is not of x's
    dtype; the constant comes from ``constants`` (the elementwise ops' cache, keyed ``(type, value, dtype.num, device name, ndim)``) or
    ``make_constant(value, dtype, device, ndim)``."""
    mod = _fastcall.load()
    if mod is not None and _FAST_CONFIGURED:
        mod.configure_scalars(resolver, constants, make_constant)


# -- composites -----------------------------------------------------------------------------
#: counters of which path each composite took: {(op, device type): {path: n}}
PATHS: dict[tuple[str, str], dict[str, int]] = defaultdict(
    lambda: {"fused": 0, "generated": 0, "decomposed": 0}
)

#: Generated-kernel providers (framework.compiler registers one): fn(op, ins, attrs) -> outs | None.
#: A provider that returns outputs has recorded them for autograd when needed.
GENERATORS: list[Callable[[OpDef, list[Tensor], dict[str, Any]], list[Tensor] | None]] = []


def _compile_enabled() -> bool:
    return env.flag("OARLOCK_COMPILE", True)


_DECOMPOSES = "a composite: its decomposition runs, each op in it by its own rule"


def composite(
    name: str,
    infer: Callable[..., list[Meta]] | None = None,
    grad: Callable[..., Any] | None = None,
    grad_kernel: str | None = None,
    **facts: Any,
) -> Callable[[Callable[..., Any]], OpDef]:
    """Define a composite op by its decomposition (a function of tensors and attrs).

    ``infer`` lets a plugin's fused kernel (registered under ``name``) or a generated kernel
    replace the decomposition; ``grad`` is an explicit gradient rule used then (without it the
    decomposition is re-run under autograd to differentiate). ``grad_kernel`` names the op
    the rule is worth it for: where neither this op nor that one has a kernel, eager mode
    differentiates the decomposition's tape instead (the rule may recompute what the tape
    keeps, e.g. attention's weights). ``facts`` are the OpDef's other fields
    (:func:`with_facts`); without a sharding rule a composite's decomposition runs on
    distributed inputs, each op it is made of following its own rule.
    """
    facts.setdefault("no_sharding", "" if facts.get("sharding") else _DECOMPOSES)

    def wrap(fn: Callable[..., Any]) -> OpDef:
        op = OPS[name] = OpDef(
            name, "composite", infer, grad or _grad_by_decomposition, False, fn, fn.__doc__ or ""
        )
        op.grad_kernel = grad_kernel
        return with_facts(op, **facts)

    return wrap


def call(op: OpDef, ins: list[Tensor], attrs: dict[str, Any], _in_span: bool = False) -> Any:
    """Run a composite: registered fused kernel, then generated kernel, then decomposition
    (on distributed inputs: the interceptor's rule, else the decomposition)."""
    if _profiling.ACTIVE and not _in_span:  # fw.profiler: one span around the composite
        rec = _profiling.current()
        t0 = _profiling.now()
        out = call(op, ins, attrs, True)
        if rec is not None:  # its input shapes; its flops are those of the ops it ran
            args = rec.op_args(op, ins, None, attrs) if rec.shapes else None
            rec.span(_profiling.COMPOSITE, op.name, t0, _profiling.now(), args)
        return out
    if dispatch.INTERCEPTORS and any(getattr(t, "_dist", False) for t in ins):
        out = dispatch.intercept(op, ins, attrs)
        return op.decomposition(*ins, **attrs) if out is None else out
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
    if (
        op.grad is not _grad_by_decomposition
        and autograd.GRAD_ENABLED.get()
        and any(not t.stop_gradient for t in ins)
        and (
            op.grad_kernel is None or dispatch.find_kernel(op.grad_kernel, dev.type, ins[0].dtype) is not None
        )
    ):
        # An explicit gradient rule is cheaper than the tape of the decomposition: run the
        # decomposition untaped and record the composite as one node. Tracing too, so a
        # program's backward is eager's (erfinv's tape through where(|x| == 1, x * inf, y)
        # gives 0 * inf = NaN where its rule gives the gradient).
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
    """Differentiate a fused/generated composite by re-running its decomposition.

    A first-order backward re-runs it on detached copies of the inputs (a small tape of its
    own, freed at once). Under ``create_graph`` it re-runs on the inputs themselves and the
    walk back stops at them (``stop_at_inputs``): the gradients are then recorded as functions
    of the inputs, so a second ``grad`` through them (a Hessian) sees that dependence.
    """
    assert node.inputs is not None and node.op.decomposition is not None
    create_graph = autograd.is_grad_enabled()
    if create_graph:
        leaves = list(node.inputs)
    else:
        leaves = [t.detach() for t in node.inputs]
        for t, src in zip(leaves, node.inputs):
            t.stop_gradient = src.stop_gradient
    with autograd.enable_grad():
        outs = node.op.decomposition(*leaves, **node.attrs)
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    pairs = [
        (o, g if g is not None else full_tensor(o.shape, 0, o.dtype, o.device))
        for o, g in zip(outs, gouts)
        if not o.stop_gradient
    ]
    # one gradient per distinct tensor (op(x, x) takes the whole of x's at its first place)
    first: dict[int, int] = {}
    for i, t in enumerate(leaves):
        if not t.stop_gradient:
            first.setdefault(id(t), i)
    if not pairs or not first:
        return [None] * len(leaves)
    wanted = [leaves[i] for i in first.values()]
    res = autograd.run_backward(
        [p[0] for p in pairs],
        [p[1] for p in pairs],
        retain_graph=create_graph,
        create_graph=create_graph,
        inputs=wanted,
        allow_unused=True,
        stop_at_inputs=True,
    )
    assert res is not None
    got = dict(zip(first.values(), res))
    return [got.get(i) for i in range(len(leaves))]


def path_stats() -> dict[str, dict[str, int]]:
    """Which way each composite op ran so far: a fused kernel, a generated one, or its decomposition.

    Returns:
        dict[str, dict[str, int]]: ``{"op@device_type": {"fused": n, "generated": n,
        "decomposed": n}}``, sorted.

    Example:
        >>> import framework as fw
        >>> before = sum(fw.op_path_stats().get("softmax@cpu", {}).values())
        >>> _ = fw.nn.functional.softmax(fw.ones([2, 3]))
        >>> sum(fw.op_path_stats()["softmax@cpu"].values()) - before
        1
    """
    return {f"{op}@{dt}": dict(v) for (op, dt), v in sorted(PATHS.items())}

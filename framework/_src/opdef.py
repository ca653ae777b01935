"""One op, one definition: :class:`OpDef` holds everything the system knows about an op, and
every floor reads it from there (none keeps a table of its own):

============================  =====================================================  =============================
field                         what it says                                           read by
============================  =====================================================  =============================
``name``, ``kind``, ``spec``  the op; primitive / composite / view / host; the        everyone; plugins (schema)
                              contract's schema of a primitive
``infer``                     the shape/dtype rule                                   dispatch, tracing, the IR
``grad`` / ``no_grad``        the gradient rule, or why there is none                autograd, jit's autodiff
``decomposition``             a composite's body in terms of other ops               eager, tracing, the compiler
``elementwise``               one output element per input element (broadcasting)    dispatch, fusion, the IR
``lower``                     the loop-IR lowering (:class:`Lowering`: the C           the compiler and its emitters
                              spelling, and integer and bool spellings)
``family``                    the generated primitives built with it in one unit     the compiler's generated
                              ("unary", "binary", "compare", "reduce")               primitives
``identity``                  the constant that leaves the other operand unchanged   the IR's canonical rules and
                              bit for bit (:class:`Identity`, :func:`folds_to`)       the compiler's loop-IR folds
``commutative``               operands may be swapped                                the IR (CSE, DRR matching)
``random``                    draws random bits: two equal calls are two draws        the IR (CSE, folding)
``amp``                       "allow" (low precision), "deny" (float32) or ""         ``fw.amp.auto_cast``
``sharding``                  the SPMD rule (:class:`SpmdRule`), or ``no_sharding``  auto-parallel
                              saying why it runs replicated
``flops``                     the arithmetic of one call (:meth:`OpDef.cost` adds    auto-parallel's planner,
                              the bytes moved)                                       cost models, fw.profiler
============================  =====================================================  =============================

This module is the engine's floor: it knows no op; ``ops/`` defines them into :data:`OPS`,
and a test (tests/test_op_completeness.py) names any op that lacks a field a consumer needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from adapter_api import PRIMITIVES

if TYPE_CHECKING:
    from .tensor import Tensor

Meta = tuple[tuple[int, ...], Any]


@dataclass(frozen=True, slots=True)
class Lowering:
    """How an op becomes a value of the compiler's loop IR (``framework.compiler.loop_ir``).

    ``role`` is ``"expr"`` (an element-wise value, spelled by ``c``), ``"cast"``, ``"reduce"``
    (along the row), ``"take"`` (a gather by index) or ``"pass"`` (a broadcast or copy: the
    value itself). ``c`` is the value in the C family (C, OpenCL C, CUDA C): ``{0}``, ``{1}``,
    ``{2}`` are the operands, ``{fn:exp}`` the math function for the value's type (``expf`` or
    ``exp``), ``{one}`` and ``{zero}`` the literals of that type. ``costly`` marks a value
    worth keeping in memory between passes rather than recomputing it. An emitter may still
    spell an op its own way (``Emitter.native``: OpenCL's ``rsqrt``). A composite op may have
    role ``"expr"`` (one value, spelled by ``c``: relu) or ``"decompose"``: it is element-wise
    and the compiler traces its decomposition (gelu, silu...), so a fusion group may hold it.

    ``c_int``, ``c_uint`` and ``c_bool`` spell the op for integer, unsigned and bool operands
    where ``c`` does not read right for them (numpy's rules: integers wrap modulo 2**bits,
    which C's signed arithmetic does not promise): ``{T}`` is the operands' C type and ``{U}``
    an unsigned type as wide (at least 32 bits). Empty: ``c`` serves (``c_uint``: ``c_int``)."""

    role: str = "expr"
    c: str = ""
    costly: bool = False
    c_int: str = ""
    c_uint: str = ""
    c_bool: str = ""

    def spelling(self, dtype: np.dtype) -> str:
        """The template for operands of ``dtype`` (its integer or bool form where it has one).

        >>> from framework._src.opdef import OPS
        >>> OPS["add"].lower.spelling(np.dtype("bool"))
        '({0} || {1})'
        """
        if dtype == np.bool_:
            return self.c_bool or self.c
        if dtype.kind == "u":
            return self.c_uint or self.c_int or self.c
        if dtype.kind == "i":
            return self.c_int or self.c
        return self.c


@dataclass(frozen=True, slots=True)
class Identity:
    """``x op value`` is ``x``, bit for bit, for every ``x`` (``value op x`` too when
    ``both``). For floats the sign of a zero counts: ``x + (-0.0)`` is ``x`` but ``x + 0.0`` is
    not (it turns ``-0.0`` into ``+0.0``), so ``add``'s identity is ``-0.0`` and ``sub``'s is
    ``0.0``; :func:`folds_to` answers for any constant and dtype."""

    value: float
    both: bool = False


class SpmdRule(NamedTuple):
    """One op's sharding rule for given inputs and attrs (Paddle's SPMD rules), in the
    einsum-like notation of ``framework.distributed.auto_parallel.rules``: ``rule`` is
    ``"inputs->output | kept"``; ``linear`` says how partial values pass ("all": add,
    "one": multiply and matmul, "first": divide, ""); ``reduce`` what a contracted letter
    reduces with; ``local_attrs(global_attrs, local_inputs, out_shape_here)`` the attrs on
    local shards, when the op's attrs name global sizes; ``local`` names a local strategy of
    the distributed layer (``"rows"``: a vocabulary-parallel lookup)."""

    rule: str
    linear: str = ""
    reduce: str = ""
    local_attrs: Callable[[dict[str, Any], list[Any], list[int]], dict[str, Any]] | None = None
    local: str = ""


class Cost(NamedTuple):
    """The arithmetic (``flops``) and the memory traffic (``bytes``: inputs read and outputs
    written once) of one call of an op."""

    flops: float
    bytes: float


#: the AMP classes an op may be in (``OpDef.amp``)
AMP_CLASSES = ("allow", "deny", "")


class OpDef:
    """The definition of one operator (see the module docstring for what each field says
    and who reads it).

    >>> import framework
    >>> from framework._src.opdef import OPS
    >>> d = OPS["add"]
    >>> d.kind, d.commutative, d.amp, d.identity
    ('primitive', True, '', Identity(value=-0.0, both=True))
    """

    __slots__ = (
        "name",
        "kind",
        "infer",
        "grad",
        "elementwise",
        "decomposition",
        "doc",
        "spec",
        "lower",
        "__dict__",
    )

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
    #: a composite's explicit gradient rule is used in eager mode only where this op (or the
    #: composite itself) has a kernel; None: always (``ops.base.composite``)
    grad_kernel: str | None = None
    #: the generated primitives built together with this one in one translation unit
    #: ("unary", "binary", "compare", "reduce"; ``framework.compiler.primitives``): the first
    #: use of a family builds every op of it the plugin lacks; "" for none
    family: str = ""
    #: the operands may be swapped without changing the result (CSE sorts them, DRR tries both)
    commutative: bool = False
    #: the result is a draw of random bits: never merged by CSE or folded, so two dropout masks
    #: stay two even when their attributes agree
    random: bool = False
    #: the constant that leaves the other operand unchanged (:class:`Identity`), or None
    identity: Identity | None = None
    #: ``fw.amp.auto_cast``'s class: "allow" (runs in the low dtype under O1 and O2), "deny"
    #: (kept in float32: precision-sensitive), "" (the inputs' dtype under O1, low under O2)
    amp: str = ""
    #: ``fn(attrs, inputs) -> SpmdRule | None``: the sharding rule for these inputs (global
    #: shapes and dtypes), or None for these inputs; None: see ``no_sharding``
    sharding: Callable[[dict[str, Any], list[Any]], SpmdRule | None] | None = None
    #: why an op with no sharding rule needs none: a composite decomposes into ops that have
    #: theirs; a primitive runs replicated (every input gathered), which this says is right
    no_sharding: str = ""
    #: ``fn(input shapes, output shapes, attrs) -> float``: the floating-point operations of
    #: one call (``ops/cost.py``): products, attention, convolutions, and one per element for
    #: element-wise arithmetic and reductions; None: no arithmetic (data movement, compares)
    flops: Callable[[list[tuple[int, ...]], list[tuple[int, ...]], dict[str, Any]], float] | None = None

    def cost(self, ins: list[Meta], outs: list[Meta], attrs: dict[str, Any]) -> Cost:
        """The :class:`Cost` of one call on inputs and outputs of these (shape, dtype).

        >>> import framework
        >>> from framework._src.opdef import OPS
        >>> OPS["matmul"].cost([((2, 3), "float32"), ((3, 4), "float32")], [((2, 4), "float32")], {})
        Cost(flops=48.0, bytes=104.0)
        """
        moved = sum(math.prod(s) * np.dtype(d).itemsize for s, d in (*ins, *outs))
        shapes = [tuple(s) for s, _ in ins], [tuple(s) for s, _ in outs]
        flops = 0.0 if self.flops is None else float(self.flops(*shapes, attrs))
        return Cost(flops, float(moved))

    def __repr__(self) -> str:
        return f"<OpDef {self.kind} {self.name}>"


def folds_to(op: OpDef, value: Any, dtype: np.dtype, side: int = 1, no_signed_zeros: bool = False) -> bool:
    """Whether ``x op value`` (``side=1``; ``value op x`` for ``side=0``) is ``x`` bit for bit,
    for ``x`` of ``dtype``: the one place that decides such a fold, read by the IR's canonical
    rules and by the compiler's loop IR. ``no_signed_zeros`` allows a fold that turns ``-0.0``
    into ``+0.0`` (``x + 0.0``).

    >>> import framework
    >>> from framework._src.opdef import OPS, folds_to
    >>> f32 = np.dtype("float32")
    >>> folds_to(OPS["add"], -0.0, f32), folds_to(OPS["add"], 0.0, f32), folds_to(OPS["mul"], 1.0, f32, side=0)
    (True, False, True)
    >>> folds_to(OPS["add"], 0, np.dtype("int32")), folds_to(OPS["add"], 0.0, f32, no_signed_zeros=True)
    (True, True)
    """
    ident = op.identity
    if ident is None or (side == 0 and not ident.both) or isinstance(value, bool) and dtype.kind != "b":
        return False
    try:
        if value != ident.value:
            return False
    except (TypeError, ValueError):  # an array, a string: no fold
        return False
    if np.dtype(dtype).kind in "iub" or no_signed_zeros or ident.value != 0:
        return True
    return bool(np.signbit(value)) == bool(np.signbit(ident.value))


#: Every op the core defines, by name.
OPS: dict[str, OpDef] = {}

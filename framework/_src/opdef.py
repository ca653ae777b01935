"""One op, one definition: :class:`OpDef` holds the schema (the contract's, for primitives),
the shape/dtype rule, the gradient rule (or why there is none), the decomposition of a
composite and the lowering to the compiler's loop IR. This module is the engine's floor: it
knows no op; ``ops/`` defines them into :data:`OPS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapter_api import PRIMITIVES

if TYPE_CHECKING:
    from .tensor import Tensor

Meta = tuple[tuple[int, ...], Any]


@dataclass(frozen=True, slots=True)
class Lowering:
    """How an op becomes a value of the compiler's loop IR (``framework.compiler.loop_ir``).

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

    def __repr__(self) -> str:
        return f"<OpDef {self.kind} {self.name}>"


#: Every op the core defines, by name.
OPS: dict[str, OpDef] = {}

"""The converter table's machinery: one record per ``pd_op`` op, the context a record sees.

A record is a function ``(ctx, inputs, attrs) -> outputs`` registered with :func:`lowering`
under the op's name. ``inputs`` are the op's operands in Paddle's order: a
:class:`framework.Tensor` (a value computed by the program), a numpy array (a value known
when the program is read: ``pd_op.full``, ``pd_op.full_int_array``, the shape of a tensor, or
an op over such values only), a list of these (a ``builtin.combine``) or None (an absent
optional operand). It returns one value, or a tuple with one entry per result (None for a
result Oarlock does not compute; reading it is an error naming the op).

A record calls Oarlock's public API (``fw.*``, ``fw.nn.functional``): traced, those calls
record op-dialect operations whose shapes come from the OpDefs, so the table holds no shape
rules of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._src.tensor import Tensor
from .program import PaddleFormatError, PdOp, RawAttr

Lowering = Callable[["Ctx", list[Any], dict[str, Any]], Any]

#: op name (``pd_op.conv2d``) → its lowering
TABLE: dict[str, Lowering] = {}


def lowering(*names: str) -> Callable[[Lowering], Lowering]:
    """Register ``fn`` as the lowering of the ``pd_op`` ops ``names`` (without ``pd_op.``)."""

    def add(fn: Lowering) -> Lowering:
        for n in names:
            TABLE["pd_op." + n] = fn
        return fn

    return add


class LoweringError(PaddleFormatError):
    """A Paddle program uses an op, or a form of an op, that Oarlock cannot run."""


class Ctx:
    """What a lowering sees: the op (its name and where it is), the device, helpers to take
    operands as tensors or as values known when the program is read."""

    def __init__(self, op: PdOp, device: Any) -> None:
        self.op = op
        self.device = device

    def fail(self, what: str, hint: str = "") -> LoweringError:
        tail = f"; {hint}" if hint else ""
        return LoweringError(
            f"[jit.load] Paddle program op '{self.op.name}' (at {self.op.where}) {what}{tail}"
        )

    def tensor(self, v: Any, what: str = "an operand") -> Tensor:
        """``v`` as a tensor on the program's device (a known value becomes a constant)."""
        if isinstance(v, Tensor):
            return v
        if isinstance(v, np.ndarray):
            from ... import to_tensor

            return to_tensor(v, dtype=v.dtype, device=self.device)
        raise self.fail(f"takes a tensor for {what}, got {type(v).__name__}")

    def known(self, v: Any, what: str) -> np.ndarray:
        """``v`` as a value known when the program is read (a shape, an axis, a kernel size)."""
        if isinstance(v, np.ndarray):
            return v
        if isinstance(v, list) and all(isinstance(x, np.ndarray) for x in v):
            return np.array([np.asarray(x).reshape(()) for x in v])
        raise self.fail(
            f"takes {what} from a value computed at run time; Oarlock takes it only as a "
            f"constant of the program (pd_op.full_int_array, pd_op.full, a shape)",
            "save the model with this argument as a Python value",
        )

    def ints(self, v: Any, what: str) -> list[int]:
        return [int(x) for x in np.asarray(self.known(v, what)).reshape(-1)]

    def scalar(self, v: Any, what: str) -> float:
        a = np.asarray(self.known(v, what)).reshape(-1)
        if a.size != 1:
            raise self.fail(f"takes one number for {what}, got {a.size}")
        return a[0].item()

    def attr(self, attrs: dict[str, Any], name: str, default: Any = None) -> Any:
        v = attrs.get(name, default)
        if isinstance(v, RawAttr):
            raise self.fail(f"has attribute '{name}' of kind {v.kind}, which Oarlock does not read")
        return v


def axes(ctx: Ctx, v: Any, what: str = "the axes") -> list[int] | None:
    """An axis operand: None for all axes (an empty list, Paddle's spelling of all)."""
    ax = ctx.ints(v, what)
    return ax or None


def norm_axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


def sizes(seq: Sequence[int], shape: Sequence[int]) -> list[int]:
    """A Paddle shape list: ``0`` copies the input's dim at that place."""
    return [shape[i] if d == 0 and i < len(shape) else d for i, d in enumerate(seq)]

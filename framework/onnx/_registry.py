"""The converter table: one record per ONNX op, and the node view a converter reads.

A converter turns one ONNX node into Oarlock ops: ``fn(node) -> output or list of outputs``,
where ``node`` is a :class:`Node` (its attributes, its inputs as tensors or as constants, the
model's opset). Run while ``to_static`` traces, the ops a converter calls are recorded into
the program's op dialect; run eagerly, they compute. ``consts`` names the inputs a converter
needs as values known when the program is built (a shape, axes, pads): they come from
initializers, ``Constant`` nodes, folded ``Shape`` arithmetic, or graph inputs given by value
(the program is then specialised on them, as ONNX Runtime re-plans for a new shape).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapter_api import OarlockError

from .._src.tensor import Tensor


class OnnxImportError(OarlockError):
    """An ONNX model cannot be imported: an op, an attribute or a dtype Oarlock does not handle.

    The message names the node (its op type and name), what came and what to do.

    >>> import onnx, onnx.helper as h
    >>> import framework as fw
    >>> g = h.make_graph([h.make_node("NoSuchOp", ["x"], ["y"])], "g",
    ...     [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
    ...     [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    >>> try:
    ...     fw.onnx.load(h.make_model(g))
    ... except fw.onnx.OnnxImportError as e:
    ...     print("NoSuchOp" in str(e))
    True
    """


@dataclass(frozen=True)
class Converter:
    """How one ONNX op becomes Oarlock ops."""

    op_type: str
    fn: Callable[[Node], Any]
    #: input positions that must be known when the program is built
    consts: tuple[int, ...] = ()
    #: the op's domain ("" is ONNX's default domain, ai.onnx)
    domain: str = ""
    #: the input positions a node needs by value, read from the node (ops whose need depends
    #: on their attributes or outputs, as a Loop with scan outputs); ``consts`` otherwise
    node_consts: Callable[[Any], tuple[int, ...]] | None = None

    def consts_of(self, proto: Any) -> tuple[int, ...]:
        """The input positions ``proto`` (one node of this op) needs by value."""
        return self.node_consts(proto) if self.node_consts is not None else self.consts


CONVERTERS: dict[tuple[str, str], Converter] = {}


def converter(
    *op_types: str,
    consts: Sequence[int] = (),
    domain: str = "",
    node_consts: Callable[[Any], tuple[int, ...]] | None = None,
) -> Callable[[Any], Any]:
    """Register ``fn`` as the converter of ``op_types`` (one record per op)."""

    def deco(fn: Callable[[Node], Any]) -> Callable[[Node], Any]:
        for t in op_types:
            if (domain, t) in CONVERTERS:
                raise RuntimeError(f"[onnx] two converters for {t!r}")
            CONVERTERS[(domain, t)] = Converter(t, fn, tuple(consts), domain, node_consts)
        return fn

    return deco


def lookup(op_type: str, domain: str = "") -> Converter | None:
    """The converter of an ONNX op, or None."""
    return CONVERTERS.get(("" if domain == "ai.onnx" else domain, op_type))


class Node:
    """One ONNX node as its converter sees it.

    ``inputs[i]`` is a :class:`Tensor`, a numpy array (a value known when the program is
    built) or None (an omitted optional input). ``scope`` maps every name visible to the node
    to its value: a control-flow op's subgraphs read the enclosing graph's values from it.
    """

    __slots__ = ("proto", "inputs", "opset", "attrs", "device", "graph", "scope")

    def __init__(
        self,
        proto: Any,
        inputs: list[Any],
        opset: int,
        attrs: dict[str, Any],
        device: Any,
        graph: Any,
        scope: dict[str, Any] | None = None,
    ):
        self.proto = proto
        self.inputs = inputs
        self.opset = opset
        self.attrs = attrs
        self.device = device
        self.graph = graph
        self.scope = scope if scope is not None else {}

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    def where(self) -> str:
        name = f" '{self.proto.name}'" if self.proto.name else ""
        return f"{self.proto.op_type}{name}"

    def error(self, what: str, fix: str = "") -> OnnxImportError:
        return OnnxImportError(f"[onnx] {self.where()}: {what}" + (f"; {fix}" if fix else ""))

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def has(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def const(self, i: int, default: Any = None) -> np.ndarray | None:
        """Input ``i`` as a numpy array (it must be known when the program is built)."""
        if not self.has(i):
            return default
        v = self.inputs[i]
        if isinstance(v, np.ndarray):
            return v
        from ..jit.trace import TracedTensor

        if isinstance(v, TracedTensor):
            raise self.error(
                f"input {i} ('{self.proto.input[i]}') must be known when the program is built (a shape, "
                f"axes, pads), but it is computed at run time",
                "make it an initializer or a Constant, or feed it as a graph input by value",
            )
        return v.numpy()

    def ints(self, i: int, attr: str | None = None, default: Any = None) -> list[int] | None:
        """Input ``i`` as a list of ints, or (older opsets) the attribute ``attr``."""
        if self.has(i):
            return [int(x) for x in np.asarray(self.const(i)).reshape(-1)]
        if attr is not None and attr in self.attrs:
            return [int(x) for x in self.attrs[attr]]
        return default

    def tensor(self, i: int, dtype: Any = None) -> Tensor | None:
        """Input ``i`` as a tensor on the model's device (a constant becomes one)."""
        if not self.has(i):
            return None
        v = self.inputs[i]
        if isinstance(v, np.ndarray):
            from .. import to_tensor

            v = to_tensor(v if dtype is None else v.astype(dtype), device=self.device)
        elif dtype is not None and v.dtype != np.dtype(dtype):
            v = v.astype(dtype)
        return v

    def all_tensors(self) -> list[Tensor]:
        return [self.tensor(i) for i in range(len(self.inputs)) if self.has(i)]

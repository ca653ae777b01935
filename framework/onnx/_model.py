"""An ONNX model as an Oarlock Layer whose forward is a traced program.

:class:`OnnxModel` holds the graph and the initializers: floating-point initializers become
:class:`~framework.nn.Parameter` (so the model can be fine-tuned: gradients flow through the
imported program), the others (shapes, axes, indices) stay constants known when the program is
built. Its forward walks the graph in order and hands each node to its converter
(:mod:`._registry`); ``to_static`` records what the converters call into a program of the op
dialect, which the usual passes optimise and the executor runs on the model's device. Dims
that the model names (``dim_param``) or leaves open are symbolic dims of the program.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from adapter_api import OarlockError

from .. import nn
from .._src import autograd
from .._src import device as _dev
from .._src.ops import base
from .._src.tensor import Tensor
from ._registry import Node, OnnxImportError, lookup

MIN_OPSET = 1


def read_model(model: Any, base_dir: str | None = None) -> Any:
    """A ``ModelProto`` from a path or a ``ModelProto``, its external data loaded."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise OnnxImportError(f"[onnx] no model file at {path!r}; pass the path of a .onnx file")
        return onnx.load(path, load_external_data=True)
    if isinstance(model, bytes):
        return onnx.load_from_string(model)
    if not isinstance(model, onnx.ModelProto):
        raise OnnxImportError(
            f"[onnx] load() expects a path, bytes or an onnx.ModelProto, got {type(model).__name__}"
        )
    if any(uses_external_data(t) for t in model.graph.initializer):
        if base_dir is None:
            raise OnnxImportError(
                "[onnx] the model keeps initializers in external data files; pass base_dir= (the "
                "folder of those files) or load it from its path"
            )
        load_external_data_for_model(model, base_dir)
    return model


def np_dtype(elem_type: int, what: str) -> np.dtype:
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        raise OnnxImportError(
            f"[onnx] {what} has ONNX element type {elem_type}, which Oarlock does not hold"
        ) from None


def _dims(vi: Any) -> tuple[int | str | None, ...]:
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        raise OnnxImportError(
            f"[onnx] graph input '{vi.name}' has no shape (its rank is unknown); give it one"
        )
    out: list[int | str | None] = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            out.append(re.sub(r"\W", "_", d.dim_param))
        else:
            out.append(None)
    return tuple(out)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import AttributeProto, helper, numpy_helper

    out = {}
    for a in node.attribute:
        if a.type == AttributeProto.TENSOR:
            out[a.name] = numpy_helper.to_array(a.t)
        elif a.type == AttributeProto.GRAPH:
            out[a.name] = a.g
        else:
            v = helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else v
            if isinstance(v, list) and v and isinstance(v[0], bytes):
                out[a.name] = [s.decode() for s in v]
    return out


@contextlib.contextmanager
def _eager() -> Iterator[None]:
    """Run ops for their values even while a program is being traced (constant folding)."""
    token = base.TRACER.set(None)
    try:
        with autograd.no_grad():
            yield
    finally:
        base.TRACER.reset(token)


#: ops whose result differs from run to run: never folded into a constant
_RANDOM = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
}


class OnnxModel(nn.Layer):
    """An imported ONNX model: a Layer whose forward runs the model as a program.

    Made by :func:`framework.onnx.load`. Call it with one tensor per graph input (in the
    graph's order); it returns a tensor, or a tuple when the graph has several outputs.
    Floating-point initializers are its parameters (``named_parameters()``: fine-tune it
    with any optimizer; BatchNormalization's running mean and variance are parameters with
    ``trainable=False``). ``program()`` is the traced program for its input specs.

    >>> import numpy as np, onnx, onnx.helper as h
    >>> import framework as fw
    >>> g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",
    ...     [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 3])],
    ...     [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 3])])
    >>> m = fw.onnx.load(h.make_model(g))
    >>> m(fw.to_tensor([[-1.0, 0.0, 2.0]])).tolist()
    [[0.0, 0.0, 2.0]]
    >>> print(m.program())  # doctest: +ELLIPSIS
    module @g(%0: tensor<[N, 3], float32, cpu...>) -> ...
    """

    def __init__(
        self, proto: Any, device: Any = None, static: bool = True, passes: Any = "O2", compile: bool = True
    ) -> None:
        super().__init__()
        graph = proto.graph
        self.proto = proto
        self.opset = 0
        for imp in proto.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = int(imp.version)
        missing = sorted(
            {
                f"{n.domain + '.' if n.domain else ''}{n.op_type}"
                for n in all_nodes(graph)
                if lookup(n.op_type, n.domain) is None
            }
        )
        if missing:
            raise OnnxImportError(
                f"[onnx] no converter for the ONNX op(s) {missing}; the ops Oarlock imports are listed by "
                f"fw.onnx.supported_ops()"
            )
        if self.opset < MIN_OPSET:
            raise OnnxImportError(
                f"[onnx] the model uses opset {self.opset}; Oarlock imports opset {MIN_OPSET} and later "
                f"(tested from 13): convert it with onnx.version_converter.convert_version(model, 13)"
            )
        self.device = _dev.parse(device) if device is not None else _dev.get_device()
        self._consts: dict[str, np.ndarray] = {}
        self._param_of: dict[str, str] = {}
        from onnx import numpy_helper

        from .. import to_tensor

        # running statistics are state, not weights: a fine-tuning optimizer leaves them
        stats = {
            n.input[i]
            for n in graph.node
            if n.op_type == "BatchNormalization"
            for i in (3, 4)
            if i < len(n.input)
        }
        for init in graph.initializer:
            arr = numpy_helper.to_array(init)
            if arr.dtype.kind == "f" and arr.dtype.itemsize >= 2:
                key = re.sub(r"\W", "_", init.name) or "p"
                while key in self._parameters:
                    key += "_"
                t = to_tensor(np.ascontiguousarray(arr), device=self.device)
                p = nn.Parameter.from_tensor(t, trainable=init.name not in stats)
                self.add_parameter(key, p)
                self._param_of[init.name] = key
            else:
                self._consts[init.name] = arr
        inits = {i.name for i in graph.initializer}
        self.input_infos = [vi for vi in graph.input if vi.name not in inits]
        self.output_names = [o.name for o in graph.output]
        self.input_names = [vi.name for vi in self.input_infos]
        self.input_dtypes = [
            np_dtype(vi.type.tensor_type.elem_type, f"input '{vi.name}'") for vi in self.input_infos
        ]
        self.input_dims = [_dims(vi) for vi in self.input_infos]
        #: graph inputs a converter needs by value (a Reshape's shape fed as an input)
        self.value_inputs = self._value_inputs(graph)
        self.static = static
        self.passes = passes
        self.compile = compile
        self._programs: dict[Any, Any] = {}
        #: the value-input keys whose programs are traced per input shape
        self._by_shape: set[Any] = set()

    def _value_inputs(self, graph: Any) -> list[str]:
        """The graph inputs taken by value: those a converter needs known when the program is
        built (a Reshape's shape fed as an input), the small inputs (64 elements at most) such
        a value is computed from (a trip count computed from a start and a limit), and the
        small integer or bool inputs an ``If``'s predicate is computed from (a sample rate that
        picks a branch): the program is specialised on them, and only the branch they pick is
        converted."""
        names = set(self.input_names)
        small = {
            n
            for n, dims in zip(self.input_names, self.input_dims)
            if all(isinstance(d, int) for d in dims) and int(np.prod(dims)) <= 64
        }
        flags = {n for n, dt in zip(self.input_names, self.input_dtypes) if dt.kind in "biu"}
        producer = {o: node for node in all_nodes(graph) for o in node.output if o}

        def sources(name: str, allowed: set[str]) -> set[str]:
            """The graph inputs ``name`` is computed from by value (not through Shape/Size), if
            they are all ``allowed`` (else none: specialising on some would not fix it)."""
            found, seen, stack = set(), set(), [name]
            while stack:
                v = stack.pop()
                if v in seen:
                    continue
                seen.add(v)
                if v in names:
                    found.add(v)
                    continue
                p = producer.get(v)
                if p is not None and p.op_type not in ("Shape", "Size"):
                    stack.extend(i for i in p.input if i)
                    # a control-flow node's outputs depend on what its subgraphs read
                    stack.extend(i for sub in _subgraphs(p) for m in all_nodes(sub) for i in m.input if i)
            return found if found <= allowed else set()

        out: set[str] = set()
        for n in all_nodes(graph):
            conv = lookup(n.op_type, n.domain)
            for i in conv.consts_of(n):  # type: ignore[union-attr]
                if i < len(n.input) and n.input[i]:
                    out |= {n.input[i]} if n.input[i] in names else sources(n.input[i], small)
            if n.op_type == "If" and n.input and n.input[0]:
                out |= sources(n.input[0], small & flags)
        return [n for n in self.input_names if n in out]

    # -- running ---------------------------------------------------------------------------
    def _static_fn(self, frozen: tuple[Any, ...], shapes: tuple[tuple[int, ...], ...] | None = None) -> Any:
        """The program for the inputs given by value ``frozen``: over the model's dims (named
        and open ones symbolic), or over ``shapes`` (one program per shape)."""
        key = frozen if shapes is None else (frozen, shapes)
        fn = self._programs.get(key)
        if fn is None:
            from ..jit.api import StaticFunction
            from ..static import InputSpec

            values = {
                n: np.frombuffer(b, dtype=d).reshape(s) for n, (b, d, s) in zip(self.value_inputs, frozen)
            }
            specs = [
                InputSpec(list(d), dtype=t, name=n)
                for n, d, t in zip(self.input_names, self.input_dims, self.input_dtypes)
                if n not in values
            ]
            if shapes is not None:
                specs = [InputSpec(list(d), dtype=s.dtype, name=s.name) for s, d in zip(specs, shapes)]

            def forward(*tensors: Tensor) -> Any:
                return self.interpret(tensors, values)

            forward.__name__ = re.sub(r"\W", "_", self.proto.graph.name or "onnx_model")
            if not forward.__name__.isidentifier():
                forward.__name__ = "onnx_model"
            backend = "CINN" if self.compile else None
            fn = StaticFunction(forward, specs, self, full_graph=True, passes=self.passes, backend=backend)
            self._programs[key] = fn
        return fn

    def _split(self, inputs: Sequence[Any]) -> tuple[list[Tensor], tuple[Any, ...]]:
        from .. import to_tensor

        if len(inputs) != len(self.input_names):
            raise OnnxImportError(
                f"[onnx] the model takes {len(self.input_names)} input(s) {self.input_names}, got {len(inputs)}"
            )
        tensors, frozen = [], []
        for name, dt, v in zip(self.input_names, self.input_dtypes, inputs):
            if name in self.value_inputs:
                # a copy in C order (np.ascontiguousarray would make a 0-d value 1-d)
                a = np.array(v.numpy() if isinstance(v, Tensor) else np.asarray(v, dtype=dt), order="C")
                # the dtype itself: its .str is "<V2" for bfloat16, which loses the type
                frozen.append((a.tobytes(), a.dtype, a.shape))
            else:
                t = v if isinstance(v, Tensor) else to_tensor(np.asarray(v, dtype=dt), device=self.device)
                tensors.append(t)
        return tensors, tuple(frozen)

    def forward(self, *inputs: Any) -> Any:
        tensors, frozen = self._split(inputs)
        if self.static:
            if frozen not in self._by_shape:
                try:
                    return self._static_fn(frozen)(*tensors)
                except OarlockError as e:
                    # the symbolic dims are traced at small probe sizes, which a model may not
                    # take (a convolution over a dynamic length): trace it per shape instead
                    self._by_shape.add(frozen)
                    warnings.warn(
                        f"[onnx] {self.proto.graph.name or 'the model'} does not trace over its dynamic dims "
                        f"({str(e).splitlines()[0][:200]}); it is traced for each input shape",
                        stacklevel=2,
                    )
            return self._static_fn(frozen, tuple(tuple(t.shape) for t in tensors))(*tensors)
        values = {n: np.frombuffer(b, dtype=d).reshape(s) for n, (b, d, s) in zip(self.value_inputs, frozen)}
        return self.interpret(tensors, values)

    def program(self, *value_inputs: Any) -> Any:
        """The traced program (:class:`framework.ir.Program`) for the model's input specs;
        ``value_inputs``: the values of the inputs the model needs by value, if any."""
        frozen = tuple(
            (a.tobytes(), a.dtype, a.shape) for a in (np.array(v, order="C") for v in value_inputs)
        )
        fn = self._static_fn(frozen)
        specs = [
            (tuple(d if isinstance(d, int) else (d or f"s{k}") for d in dims), dt)
            for k, (dims, dt) in enumerate(
                (d, t)
                for n, d, t in zip(self.input_names, self.input_dims, self.input_dtypes)
                if n not in self.value_inputs
            )
        ]
        return fn.get_concrete_program(specs, self.device).program

    # -- the graph walk --------------------------------------------------------------------
    def interpret(self, tensors: Sequence[Tensor], values: dict[str, np.ndarray]) -> Any:
        """Run the graph on ``tensors`` (the runtime inputs) and ``values`` (inputs given by value)."""
        env: dict[str, Any] = dict(self._consts)
        env.update({k: getattr(self, p) for k, p in self._param_of.items()})
        it = iter(tensors)
        for n in self.input_names:
            env[n] = values[n] if n in values else next(it)
        outs = run_graph(self.proto.graph, env, self.opset, self.device)
        from .. import to_tensor

        res = [o if isinstance(o, Tensor) else to_tensor(o, device=self.device) for o in outs]
        return res[0] if len(res) == 1 else tuple(res)


def _subgraphs(node: Any) -> Iterator[Any]:
    """The subgraphs of ``node`` (If's branches, Loop's and Scan's body)."""
    from onnx import AttributeProto

    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            yield a.g
        elif a.type == AttributeProto.GRAPHS:
            yield from a.graphs


def all_nodes(graph: Any) -> Iterator[Any]:
    """Every node of ``graph`` and of its nodes' subgraphs (If's branches, Loop's body)."""
    for node in graph.node:
        yield node
        for g in _subgraphs(node):
            yield from all_nodes(g)


def run_graph(graph: Any, env: dict[str, Any], opset: int, device: Any) -> list[Any]:
    """Convert every node of ``graph`` in order; ``env`` maps names to tensors or constants
    (and receives the results). Returns the graph's outputs."""
    for node in graph.node:
        conv = lookup(node.op_type, node.domain)
        if conv is None:
            raise OnnxImportError(
                f"[onnx] no converter for the ONNX op {node.op_type!r} (node '{node.name}')"
            )
        ins = []
        for name in node.input:
            if not name:
                ins.append(None)
            elif name not in env:
                raise OnnxImportError(
                    f"[onnx] node {node.op_type} '{node.name}' reads '{name}', which no earlier node or input "
                    f"defines; the graph must be topologically sorted"
                )
            else:
                ins.append(env[name])
        attrs = _attrs(node)
        n = Node(node, ins, opset, attrs, device, graph, env)
        # a node with subgraphs reads the enclosing scope: its converter decides what folds
        subgraphs = any(a.type in (5, 10) for a in node.attribute)  # AttributeProto.GRAPH, GRAPHS
        fold = (
            node.op_type not in _RANDOM
            and not subgraphs
            and all(v is None or isinstance(v, np.ndarray) for v in ins)
        )
        if fold and ins:  # every input known: compute it now (shape arithmetic)
            with _eager():
                cpu = _dev.parse("cpu")
                n.device = cpu
                res = conv.fn(n)
        else:
            res = conv.fn(n)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        for name, r in zip(node.output, res):
            if name:
                if fold and isinstance(r, Tensor):
                    with _eager():
                        r = r.numpy()
                env[name] = r
    missing = [o.name for o in graph.output if o.name not in env]
    if missing:
        raise OnnxImportError(f"[onnx] graph outputs {missing} are not computed by any node")
    return [env[o.name] for o in graph.output]

"""``InferenceSession``: an imported ONNX model with ONNX Runtime's call shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._src import autograd
from ._registry import OnnxImportError


@dataclass(frozen=True)
class NodeArg:
    """A graph input or output as ONNX Runtime describes it: name, shape (ints, dim names or
    None) and type (``"tensor(float)"``)."""

    name: str
    shape: list[Any]
    type: str


_ORT_TYPE = {
    "float32": "float",
    "float64": "double",
    "float16": "float16",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "bool": "bool",
}


def _arg(vi: Any) -> NodeArg:
    from onnx import helper

    t = vi.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
    dt = np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type)).name
    return NodeArg(vi.name, dims, f"tensor({_ORT_TYPE.get(dt, dt)})")


class InferenceSession:
    """Run an ONNX model on an Oarlock device with ``onnxruntime.InferenceSession``'s calls.

    ``providers`` is accepted for ONNX Runtime's signature: ``"CPUExecutionProvider"`` means
    the cpu device; ``device=`` names any Oarlock device (``"opencl"``) and wins over it.

    >>> import numpy as np, onnx, onnx.helper as h
    >>> import framework as fw
    >>> g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",
    ...     [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N"])],
    ...     [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N"])])
    >>> s = fw.onnx.InferenceSession(h.make_model(g), device="cpu")
    >>> [(i.name, i.shape, i.type) for i in s.get_inputs()]
    [('x', ['N'], 'tensor(float)')]
    >>> s.run(["y"], {"x": np.array([-1.0, 3.0], np.float32)})[0].tolist()
    [0.0, 3.0]
    """

    def __init__(
        self,
        path_or_bytes: Any,
        sess_options: Any = None,
        providers: Sequence[Any] | None = None,
        device: Any = None,
        **kwargs: Any,
    ) -> None:
        from . import load

        if device is None and providers:
            first = providers[0][0] if isinstance(providers[0], tuple) else providers[0]
            if first not in ("CPUExecutionProvider",):
                raise OnnxImportError(
                    f"[onnx] InferenceSession: provider {first!r} is ONNX Runtime's; Oarlock runs on its own "
                    f"devices: pass device='opencl' (or any device fw.devices() lists)"
                )
            device = "cpu"
        self.model = load(path_or_bytes, device=device, **kwargs)
        graph = self.model.proto.graph
        self._inputs = [_arg(vi) for vi in self.model.input_infos]
        self._outputs = [_arg(vi) for vi in graph.output]

    def get_inputs(self) -> list[NodeArg]:
        """The graph's inputs (initializers excluded), in order."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The graph's outputs, in order."""
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        """The device the session runs on, as a one-element list."""
        return [str(self.model.device)]

    def run(
        self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any], run_options: Any = None
    ) -> list[np.ndarray]:
        """Run the model: ``input_feed`` maps each input name to an array; returns numpy arrays
        for ``output_names`` (None: every output)."""
        names = [i.name for i in self._inputs]
        unknown = sorted(set(input_feed) - set(names))
        missing = [n for n in names if n not in input_feed]
        if unknown or missing:
            raise OnnxImportError(
                f"[onnx] InferenceSession.run: inputs {names} expected; missing {missing}, unknown {unknown}"
            )
        with autograd.no_grad():
            res = self.model(*[input_feed[n] for n in names])
        res = list(res) if isinstance(res, tuple) else [res]
        by_name = dict(zip((o.name for o in self._outputs), res))
        want = [o.name for o in self._outputs] if output_names is None else list(output_names)
        bad = [w for w in want if w not in by_name]
        if bad:
            raise OnnxImportError(
                f"[onnx] InferenceSession.run: no outputs {bad}; the model's are {list(by_name)}"
            )
        return [by_name[w].numpy() for w in want]

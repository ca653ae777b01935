"""ONNX models in and out of Oarlock: imported as programs, exported from programs.

:func:`export` writes a Layer or a to_static function to an ONNX file (Paddle's
``paddle.onnx.export``).

:func:`load` turns an ONNX model into an :class:`OnnxModel`, a Layer whose forward is a
program of Oarlock's IR (traced through one converter per ONNX op, verified, optimised by the
usual passes and run by the executor on the model's device); :class:`InferenceSession` is the
same with ONNX Runtime's call shape, for drop-in use.

>>> import numpy as np, onnx, onnx.helper as h
>>> import framework as fw
>>> g = h.make_graph([h.make_node("Add", ["a", "b"], ["c"])], "add",
...     [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [2]) for n in "ab"],
...     [h.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [2])])
>>> sess = fw.onnx.InferenceSession(h.make_model(g).SerializeToString())
>>> sess.run(None, {"a": np.ones(2, np.float32), "b": np.ones(2, np.float32)})[0].tolist()
[2.0, 2.0]

The importer reads opsets 13 to the latest the installed ``onnx`` knows (older ones where the
converters handle their attribute forms); docs/onnx.md lists the ops.
"""

from __future__ import annotations

from typing import Any

from ._registry import OnnxImportError
from .export import ExportError, export

_LOADED = [False]


def _converters() -> None:
    """Register the converters (on first use: ``import framework`` stays light)."""
    if not _LOADED[0]:
        from . import (  # noqa: F401
            ops_control,
            ops_dynamic,
            ops_elementwise,
            ops_loss,
            ops_nn,
            ops_quant,
            ops_reduce,
            ops_resize,
            ops_rnn,
            ops_shape,
        )

        _LOADED[0] = True


def load(
    model: Any,
    device: Any = None,
    base_dir: str | None = None,
    static: bool = True,
    passes: Any = "O2",
    compile: bool = True,
) -> Any:
    """Import an ONNX model (a path, bytes or an ``onnx.ModelProto``) as an :class:`OnnxModel`.

    Args:
        model: the ``.onnx`` file (external data files are read from its folder), its bytes,
            or a ``ModelProto``.
        device: where the parameters live and the program runs (default: the current device).
        base_dir: the folder of external data files, for a ``ModelProto`` that uses them.
        static: True (default) runs the model as a traced program; False runs the converters
            eagerly (for debugging a conversion).
        passes: the optimisation level of the program (``"O2"``, ``"O1"``, ``"O0"``, None).
        compile: True (default) lets the compiler fuse the program's ops into generated
            kernels (as ``to_static(backend="CINN")``); False runs them one by one.

    Example:
        >>> import onnx, onnx.helper as h
        >>> import framework as fw
        >>> g = h.make_graph([h.make_node("Exp", ["x"], ["y"])], "g",
        ...     [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        ...     [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
        >>> fw.onnx.load(h.make_model(g))(fw.zeros([1])).tolist()
        [1.0]
    """
    _converters()
    from ._model import OnnxModel, read_model

    return OnnxModel(
        read_model(model, base_dir), device=device, static=static, passes=passes, compile=compile
    )


def supported_ops() -> list[str]:
    """The ONNX op types the importer converts.

    >>> import framework as fw
    >>> "Conv" in fw.onnx.supported_ops()
    True
    """
    _converters()
    from ._registry import CONVERTERS

    return sorted(t for (_, t) in CONVERTERS)


def __getattr__(name: str) -> Any:
    if name in ("OnnxModel", "InferenceSession"):
        _converters()
        from ._model import OnnxModel
        from .session import InferenceSession

        return {"OnnxModel": OnnxModel, "InferenceSession": InferenceSession}[name]
    raise AttributeError(f"module 'framework.onnx' has no attribute {name!r}")


__all__ = [
    "ExportError",
    "InferenceSession",
    "OnnxImportError",
    "OnnxModel",
    "export",
    "load",
    "supported_ops",
]

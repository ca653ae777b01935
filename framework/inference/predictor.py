"""``create_predictor`` and the ``Predictor`` with its input and output handles, spelled as
Paddle's ``paddle.inference``. A predictor loads the files ``fw.jit.save`` wrote (the
program's text form and its weights: parsed, never executed) or those Paddle 3's
``paddle.jit.save`` wrote (``.json`` and ``.pdiparams``, read by
:mod:`framework.jit.paddle_format`) onto the configured device and runs the program through
the executor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import autograd
from .._src import device as _dev
from .._src.tensor import Tensor
from ..jit import paddle_format
from ..jit.io import ProgramFileError, load
from .config import Config


class InferTensor:
    """An input or output of a :class:`Predictor` (Paddle's ``paddle.inference.Tensor``)."""

    def __init__(self, predictor: Predictor, name: str, index: int, is_input: bool) -> None:
        self._p = predictor
        self._name = name
        self._index = index
        self._input = is_input

    @property
    def name(self) -> str:
        return self._name

    def copy_from_cpu(self, data: Any) -> None:
        """Set this input from a host array (its dtype must be the program's)."""
        if not self._input:
            raise OpArgumentError(f"[inference] '{self._name}' is an output; copy_from_cpu sets inputs")
        arr = np.ascontiguousarray(np.asarray(data))
        want = self._p._input_types[self._index]
        fixed = [d for d in want.shape]
        if (
            arr.dtype != want.dtype
            or arr.ndim != want.rank
            or any(isinstance(d, int) and d >= 0 and d != n for d, n in zip(fixed, arr.shape))
        ):
            raise OpArgumentError(
                f"[inference] input '{self._name}' takes {want.dtype} of rank {want.rank} "
                f"({[str(d) for d in want.shape]}), got {arr.dtype}{list(arr.shape)}; convert it "
                f"with array.astype(...) / reshape"
            )
        from .._src.tensor import from_numpy_copy

        self._p._inputs[self._index] = from_numpy_copy(arr, self._p.device)

    def share_external_data(self, tensor: Tensor) -> None:
        """Set this input from a tensor already on the predictor's device (no copy)."""
        if not isinstance(tensor, Tensor) or tensor.device != self._p.device:
            raise OpArgumentError(
                f"[inference] share_external_data for '{self._name}' takes a Tensor on "
                f"{self._p.device}, got {getattr(tensor, 'device', type(tensor).__name__)}"
            )
        self._p._inputs[self._index] = tensor

    def reshape(self, shape: Sequence[int]) -> None:
        """Accepted for Paddle's spelling: the shape comes with ``copy_from_cpu``."""

    def copy_to_cpu(self) -> np.ndarray:
        """This output of the last :meth:`Predictor.run` as a host array."""
        return self._tensor().numpy()

    def shape(self) -> list[int]:
        if self._input:
            t = self._p._inputs[self._index]
            if t is None:
                return [int(d) if isinstance(d, int) else -1 for d in self._p._input_types[self._index].shape]
            return list(t.shape)
        return list(self._tensor().shape)

    def type(self) -> np.dtype:
        return self._p._input_types[self._index].dtype if self._input else self._tensor().dtype

    def _tensor(self) -> Tensor:
        outs = self._p._outputs
        if outs is None:
            raise OpArgumentError(
                f"[inference] output '{self._name}' has no value yet; call predictor.run() first"
            )
        return outs[self._index]


class Predictor:
    """Runs a saved program; made by :func:`create_predictor`."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.device = _dev.parse(config.device())
        if config._path.endswith(".pdmodel") and config._paddle is None:
            raise paddle_format.PaddleFormatError(
                f"[inference] '{config._path}' is a Paddle 2 program (a ProgramDesc protobuf), which "
                f"Oarlock does not read; save the model with Paddle 3's paddle.jit.save (it writes "
                f"<prefix>.json and <prefix>.pdiparams)"
            )
        if config._paddle is not None:
            prog_file, params_file = config._paddle
            layer: Any = paddle_format.load(prog_file, self.device, params_file, optimize=config.ir_optim())
            self._input_types = list(layer.input_types)
            self._output_names = list(layer.output_names)
        else:
            layer = load(config._path, device=self.device)
            self._input_types = [v.type for v in layer.program.inputs]
            self._output_names = [f"out{k}" for k in range(len(layer.program.outputs))]
        self._layer = layer
        self._input_names = list(layer.input_names)
        self._inputs: list[Tensor | None] = [None] * len(self._input_names)
        self._outputs: list[Tensor] | None = None

    def get_input_names(self) -> list[str]:
        return list(self._input_names)

    def get_output_names(self) -> list[str]:
        return list(self._output_names)

    def get_input_handle(self, name: str) -> InferTensor:
        return InferTensor(self, name, self._find(name, self._input_names, "input"), True)

    def get_output_handle(self, name: str) -> InferTensor:
        return InferTensor(self, name, self._find(name, self._output_names, "output"), False)

    @staticmethod
    def _find(name: str, names: list[str], what: str) -> int:
        try:
            return names.index(name)
        except ValueError:
            raise OpArgumentError(
                f"[inference] no {what} named {name!r}; the program's {what}s are {names}"
            ) from None

    def run(self, inputs: Sequence[Any] | None = None) -> list[Tensor] | None:
        """Run the program on the inputs set through the handles; or, as Paddle's newer
        form, on ``inputs`` (arrays or tensors, in input order), returning the outputs."""
        if inputs is not None:
            if len(inputs) != len(self._input_names):
                raise OpArgumentError(
                    f"[inference] run takes {len(self._input_names)} inputs "
                    f"({self._input_names}), got {len(inputs)}"
                )
            for name, x in zip(self._input_names, inputs):
                h = self.get_input_handle(name)
                if isinstance(x, Tensor):
                    h.share_external_data(x)
                else:
                    h.copy_from_cpu(x)
        missing = [n for n, t in zip(self._input_names, self._inputs) if t is None]
        if missing:
            raise OpArgumentError(
                f"[inference] inputs {missing} were not set; call "
                f"get_input_handle(name).copy_from_cpu(array) before run()"
            )
        with autograd.no_grad():
            res = self._layer(*self._inputs)
        self._outputs = [res] if isinstance(res, Tensor) else list(res)
        return list(self._outputs) if inputs is not None else None

    def clone(self) -> Predictor:
        """Another predictor on the same files and device (Paddle's ``clone``)."""
        return Predictor(self.config)


def create_predictor(config: Config) -> Predictor:
    """A :class:`Predictor` for ``config`` (Paddle's ``paddle.inference.create_predictor``);
    a missing or damaged file raises :class:`framework.jit.ProgramFileError` (or, for files
    Paddle wrote, :class:`framework.jit.paddle_format.PaddleFormatError`, which also names an
    op Oarlock cannot run)."""
    if not isinstance(config, Config):
        raise TypeError(
            f"[inference] create_predictor takes a fw.inference.Config, got {type(config).__name__}"
        )
    return Predictor(config)


__all__ = ["Config", "InferTensor", "Predictor", "ProgramFileError", "create_predictor"]

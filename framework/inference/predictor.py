"""``Config``, ``create_predictor`` and the ``Predictor`` with its input and output handles,
spelled as Paddle's ``paddle.inference``. A predictor loads the files ``fw.jit.save`` wrote
(the program's text form and its weights: parsed, never executed) onto the configured device
and runs the program through the executor."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import autograd
from .._src import device as _dev
from .._src.tensor import Tensor
from ..jit.io import PROGRAM_SUFFIX, ProgramFileError, TranslatedLayer, load

#: the program file names Paddle code passes (``model.pdmodel``, ``model.json``): read as the
#: prefix fw.jit.save wrote when that prefix's program exists
_PADDLE_PROGRAM_SUFFIXES = (".pdmodel", ".json")


class Config:
    """Where the saved program is and where to run it.

    ``Config(path)`` takes the path given to ``fw.jit.save`` (``path.oarlock`` and
    ``path.safetensors`` beside it); Paddle's two-file form ``Config(prog_file,
    params_file)`` is accepted when the two share that prefix."""

    def __init__(
        self, path: str | os.PathLike[str], params_file: str | os.PathLike[str] | None = None
    ) -> None:
        path = os.fspath(path)
        if path.endswith(PROGRAM_SUFFIX):
            path = path[: -len(PROGRAM_SUFFIX)]
        for paddle_suffix in _PADDLE_PROGRAM_SUFFIXES:  # Paddle's file names for the same prefix
            if path.endswith(paddle_suffix) and os.path.exists(path[: -len(paddle_suffix)] + PROGRAM_SUFFIX):
                path = path[: -len(paddle_suffix)]
        if params_file is not None:
            pf = os.fspath(params_file)
            if os.path.splitext(pf)[0] != path:
                raise ValueError(
                    f"[inference] Config: the program '{path}{PROGRAM_SUFFIX}' and the weights '{pf}' "
                    f"must share a prefix, as fw.jit.save writes them"
                )
        self._path = path
        self._device = "cpu"
        self._threads = 1
        self._ir_optim = True
        self._memory_optim = False
        self._glog_info = True
        self._mkldnn = False

    # -- Paddle's tuning switches: accepted, each says what it does here -------------------
    def set_cpu_math_library_num_threads(self, cpu_math_library_num_threads: int) -> None:
        """Recorded (:meth:`cpu_math_library_num_threads`); the cpu plugin sizes its own
        thread pools, from ``OMP_NUM_THREADS`` set before the process starts.

        Example:
            >>> import framework as fw, os, tempfile
            >>> folder = tempfile.TemporaryDirectory()
            >>> path = os.path.join(folder.name, "m")
            >>> fw.jit.save(fw.nn.Linear(2, 1), path, input_spec=[fw.static.InputSpec([None, 2])])
            >>> config = fw.inference.Config(path + ".oarlock", path + ".safetensors")
            >>> config.set_cpu_math_library_num_threads(4)
            >>> config.disable_glog_info(); config.switch_ir_optim(True); config.enable_memory_optim()
            >>> config.enable_mkldnn()
            >>> config.cpu_math_library_num_threads(), config.ir_optim()
            (4, True)
            >>> fw.inference.create_predictor(config).get_input_names()
            ['x0']
            >>> folder.cleanup()
        """
        n = int(cpu_math_library_num_threads)
        if n < 1:
            raise ValueError(
                f"[inference] Config.set_cpu_math_library_num_threads takes a count >= 1, got {n}"
            )
        self._threads = n

    def cpu_math_library_num_threads(self) -> int:
        """The count given to :meth:`set_cpu_math_library_num_threads` (default 1)."""
        return self._threads

    def disable_glog_info(self) -> None:
        """Accepted: Oarlock writes no glog output; its warnings go through Python's ``warnings``."""
        self._glog_info = False

    def glog_info_disabled(self) -> bool:
        """Whether :meth:`disable_glog_info` was called."""
        return not self._glog_info

    def switch_ir_optim(self, x: bool = True) -> None:
        """Recorded (:meth:`ir_optim`): ``fw.jit.save`` already ran the optimisation passes on the
        saved program, and the predictor runs it as saved either way."""
        self._ir_optim = bool(x)

    def ir_optim(self) -> bool:
        """The value given to :meth:`switch_ir_optim` (default True)."""
        return self._ir_optim

    def enable_memory_optim(self, x: bool = True) -> None:
        """Accepted: the executor always plans buffer reuse for a program (``framework.ir.memory_plan``)."""
        self._memory_optim = bool(x)

    def enable_mkldnn(self) -> None:
        """Accepted: no oneDNN here; the cpu plugin runs its own kernels and BLAS."""
        self._mkldnn = True

    def mkldnn_enabled(self) -> bool:
        """Whether :meth:`enable_mkldnn` was called (it changes nothing here)."""
        return self._mkldnn

    # -- device ---------------------------------------------------------------------------
    def set_device(self, device: str) -> None:
        """Run on ``device`` (``"cpu"``, ``"opencl"``, ``"cuda:1"``...); checked when the
        predictor is created."""
        if not isinstance(device, str):
            raise TypeError(
                f"[inference] Config.set_device takes a device name such as 'opencl:0', got {device!r}"
            )
        self._device = device

    def device(self) -> str:
        return self._device

    def enable_use_gpu(self, memory_pool_init_size_mb: int = 100, device_id: int = 0) -> None:
        """Paddle's spelling of ``set_device(f"cuda:{device_id}")`` (the pool size is the
        device allocator's business here)."""
        self._device = f"cuda:{int(device_id)}"

    def enable_custom_device(self, device_type: str, device_id: int = 0) -> None:
        """Paddle's spelling for a plugin device: ``set_device(f"{device_type}:{device_id}")``."""
        self._device = f"{device_type}:{int(device_id)}"

    def disable_gpu(self) -> None:
        self._device = "cpu"

    def use_gpu(self) -> bool:
        return self._device.split(":")[0] == "cuda"

    # -- files ----------------------------------------------------------------------------
    def model_dir(self) -> str:
        return os.path.dirname(self._path)

    def prog_file(self) -> str:
        return self._path + PROGRAM_SUFFIX

    def params_file(self) -> str:
        from ..jit.io import WEIGHTS_SUFFIX

        return self._path + WEIGHTS_SUFFIX

    def summary(self) -> str:
        return f"program: {self.prog_file()}\nweights: {self.params_file()}\ndevice: {self._device}"

    def __repr__(self) -> str:
        return f"Config({self._path!r}, device={self._device!r})"


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
        if arr.dtype != want.dtype or arr.ndim != want.rank:
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
        self._layer: TranslatedLayer = load(config._path, device=self.device)
        prog = self._layer.program
        self._input_names = list(self._layer.input_names)
        self._input_types = [v.type for v in prog.inputs]
        self._output_names = [f"out{k}" for k in range(len(prog.outputs))]
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
    a missing or damaged file raises :class:`framework.jit.ProgramFileError`."""
    if not isinstance(config, Config):
        raise TypeError(
            f"[inference] create_predictor takes a fw.inference.Config, got {type(config).__name__}"
        )
    return Predictor(config)


__all__ = ["Config", "InferTensor", "Predictor", "ProgramFileError", "create_predictor"]

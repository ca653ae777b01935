"""``Config``: which saved model to serve, on which device, and Paddle's tuning switches
(each accepted and documented as to what it does here)."""

from __future__ import annotations

import os

from ..jit.io import PROGRAM_SUFFIX, WEIGHTS_SUFFIX

#: what Paddle 3's ``paddle.jit.save`` writes: the program (PIR as JSON) and the weights
PADDLE_PROGRAM, PADDLE_PARAMS = ".json", ".pdiparams"
#: Paddle 2's program file (a ProgramDesc protobuf), accepted as a name for Oarlock's prefix
LEGACY_PROGRAM = ".pdmodel"


class Config:
    """Where the saved model is and where to run it (Paddle's ``paddle.inference.Config``).

    - ``Config(path)``: the path given to ``fw.jit.save`` (``path.oarlock`` and
      ``path.safetensors`` beside it), or to Paddle 3's ``paddle.jit.save`` (``path.json`` and
      ``path.pdiparams``);
    - ``Config(prog_file, params_file)``: Paddle's two-file form — ``model.json`` and
      ``model.pdiparams`` written by Paddle, or ``path.oarlock`` and ``path.safetensors``.

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

    def __init__(
        self, path: str | os.PathLike[str] | None = None, params_file: str | os.PathLike[str] | None = None
    ) -> None:
        self._path = ""
        #: (program, weights) of a model written by Paddle, or None for one fw.jit.save wrote
        self._paddle: tuple[str, str] | None = None
        self._device = "cpu"
        self._threads = 1
        self._ir_optim = True
        self._memory_optim = False
        self._glog_info = True
        self._mkldnn = False
        self._profile = False
        self._deleted_passes: list[str] = []
        if path is not None:
            self.set_model(path, params_file)

    def set_model(
        self, path: str | os.PathLike[str], params_file: str | os.PathLike[str] | None = None
    ) -> None:
        """Point at a saved model (the forms of the constructor; Paddle's ``set_model``)."""
        path = os.fspath(path)
        self._paddle = None
        if path.endswith(PROGRAM_SUFFIX):
            path = path[: -len(PROGRAM_SUFFIX)]
        for suffix in (PADDLE_PROGRAM, LEGACY_PROGRAM):
            prefix = path[: -len(suffix)]
            if path.endswith(suffix) and os.path.exists(prefix + PROGRAM_SUFFIX):
                path = prefix  # Paddle's file name for the prefix fw.jit.save wrote
        if not os.path.exists(path + PROGRAM_SUFFIX):
            if path.endswith(PADDLE_PROGRAM):
                prefix = path[: -len(PADDLE_PROGRAM)]
                self._paddle = (path, os.fspath(params_file) if params_file else prefix + PADDLE_PARAMS)
            elif os.path.exists(path + PADDLE_PROGRAM):
                self._paddle = (
                    path + PADDLE_PROGRAM,
                    os.fspath(params_file) if params_file else path + PADDLE_PARAMS,
                )
        if self._paddle is None and params_file is not None and not path.endswith(LEGACY_PROGRAM):
            pf = os.fspath(params_file)
            if os.path.splitext(pf)[0] != path:
                raise ValueError(
                    f"[inference] Config: the program '{path}{PROGRAM_SUFFIX}' and the weights '{pf}' "
                    f"must share a prefix, as fw.jit.save writes them"
                )
        self._path = path

    def set_prog_file(self, prog_file: str | os.PathLike[str]) -> None:
        """Paddle's spelling: the program file, with the weights beside it."""
        self.set_model(prog_file)

    def set_params_file(self, params_file: str | os.PathLike[str]) -> None:
        """Paddle's spelling: the weights file of the program set before."""
        if self._paddle is not None:
            self._paddle = (self._paddle[0], os.fspath(params_file))
        else:
            self.set_model(self._path, params_file)

    # -- Paddle's tuning switches: accepted, each says what it does here -------------------
    def set_cpu_math_library_num_threads(self, cpu_math_library_num_threads: int) -> None:
        """Recorded (:meth:`cpu_math_library_num_threads`); the cpu plugin sizes its own
        thread pools, from ``OMP_NUM_THREADS`` set before the process starts."""
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
        """On (the default), the program is optimised when it is loaded: Oarlock's passes
        (folding, CSE, DRR rewrites, dead code) and the compiler's fusion groups. Off
        (``False``) is recorded (:meth:`ir_optim`); the passes of ``fw.jit.save`` and of the
        tracer of a Paddle model still ran, so the program runs as optimised either way."""
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

    def disable_mkldnn(self) -> None:
        """Accepted (see :meth:`enable_mkldnn`)."""
        self._mkldnn = False

    def mkldnn_enabled(self) -> bool:
        """Whether :meth:`enable_mkldnn` was called (it changes nothing here)."""
        return self._mkldnn

    def set_mkldnn_cache_capacity(self, capacity: int = 0) -> None:
        """Accepted: the executor keeps one lowered program per input-shape guard set."""

    def switch_use_feed_fetch_ops(self, x: bool = True) -> None:
        """Accepted: inputs and outputs go through the handles (no feed/fetch ops either way)."""

    def switch_specify_input_names(self, x: bool = True) -> None:
        """Accepted: inputs are always found by their names (``get_input_handle(name)``)."""

    def enable_new_ir(self, x: bool = True) -> None:
        """Accepted: programs are always Oarlock's IR (Paddle's PIR files are read into it)."""

    def enable_new_executor(self, x: bool = True) -> None:
        """Accepted: programs always run on Oarlock's executor."""

    def set_optim_cache_dir(self, opt_cache_dir: str) -> None:
        """Accepted: generated kernels are cached on disk by content hash (the compiler's cache)."""

    def enable_profile(self) -> None:
        """Recorded (:meth:`profile_enabled`); profile a run with ``fw.profiler``."""
        self._profile = True

    def profile_enabled(self) -> bool:
        return self._profile

    def delete_pass(self, pass_name: str) -> None:
        """Recorded (:meth:`deleted_passes`): Paddle's pass names are not Oarlock's; run a
        model with ``OARLOCK_COMPILE=0`` to leave out the compiler's fusion."""
        self._deleted_passes.append(str(pass_name))

    def deleted_passes(self) -> list[str]:
        return list(self._deleted_passes)

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
    def is_paddle_model(self) -> bool:
        """Whether the model was written by Paddle (``.json`` + ``.pdiparams``)."""
        return self._paddle is not None

    def model_dir(self) -> str:
        return os.path.dirname(self.prog_file())

    def prog_file(self) -> str:
        return self._paddle[0] if self._paddle else self._path + PROGRAM_SUFFIX

    def params_file(self) -> str:
        return self._paddle[1] if self._paddle else self._path + WEIGHTS_SUFFIX

    def summary(self) -> str:
        return f"program: {self.prog_file()}\nweights: {self.params_file()}\ndevice: {self._device}"

    def __repr__(self) -> str:
        return f"Config({self.prog_file()!r}, device={self._device!r})"

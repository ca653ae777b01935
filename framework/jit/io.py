"""``jit.save`` / ``jit.load``: a program and its weights, for inference on any device.

``save(layer, path, input_spec)`` writes two files:

- ``path.oarlock``: the program's text form (:mod:`framework.ir.text`) under a versioned
  header: ``// oarlock-program <version>``, ``// sha256 <digest of the rest>`` and
  ``// returns tensor|tuple``; the rest starts with ``// inputs <name> ...`` (the
  InputSpec names, ``x0``, ``x1``... where none is given: what a Predictor calls them);
- ``path.safetensors``: the parameters and named constants, with ``fw.save`` (checksummed).

``load(path, device)`` checks the header, the digest and the weights' checksum, parses the
program with the hand-written parser and verifies it: nothing in either file is executed.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np

from adapter_api import OarlockError

from .._src import autograd, dispatch
from .._src import device as _dev
from .._src.io import CheckpointError
from .._src.io import load as _load_weights
from .._src.io import save as _save_weights
from .._src.tensor import Tensor
from ..ir import (
    Executor,
    IRError,
    Operation,
    Program,
    SymDim,
    TensorType,
    parse_program,
    print_program,
    verify,
)
from ..ir import passes as _passes
from ..nn import Layer, Parameter
from ..static import InputSpec
from .api import StaticFunction
from .trace import TracingError

FORMAT_VERSION = 1
_MAGIC = "// oarlock-program "
_INPUTS = "// inputs "
PROGRAM_SUFFIX = ".oarlock"
WEIGHTS_SUFFIX = ".safetensors"


class ProgramFileError(OarlockError):
    """A saved program is missing, damaged, truncated or of another version."""


def save(
    layer: Any,
    path: str | os.PathLike[str],
    input_spec: list[InputSpec] | None = None,
    format: str = "oarlock",
    **configs: Any,
) -> None:
    """Trace ``layer`` (a Layer or a ``to_static`` function) for ``input_spec`` and write
    ``path.oarlock`` and ``path.safetensors`` (Paddle's ``paddle.jit.save``); with
    ``format="paddle"``, Paddle 3's inference files ``path.json`` and ``path.pdiparams``
    (:mod:`framework.jit.paddle_format.export`), which real Paddle loads.

    The program is traced on the device of the layer's parameters (the current device for a
    layer without any); ``load`` may put it on any device."""
    if configs:
        raise TypeError(f"[jit.save] unexpected arguments {sorted(configs)}; expected input_spec=, format=")
    if format not in ("oarlock", "paddle"):
        raise ValueError(f"[jit.save] format={format!r}; expected 'oarlock' or 'paddle'")
    path = os.fspath(path)
    cp, names = trace_for_save(layer, input_spec)
    if format == "paddle":
        from .paddle_format.export import write_paddle_program

        write_paddle_program(
            path, cp.program, dict(cp.params), dict(cp.constants), names, type(layer).__name__
        )
        return
    write_program(path, cp.program, dict(cp.params), dict(cp.constants), cp.structure, names)


def trace_for_save(layer: Any, input_spec: list[InputSpec] | None) -> tuple[Any, list[str]]:
    """The concrete program of ``layer`` for ``input_spec`` (a ``None`` dim becomes a symbol)
    and the inputs' names: what :func:`save` writes, in either format."""
    if isinstance(layer, Layer):
        fwd = layer.forward
        sf = fwd if isinstance(fwd, StaticFunction) else StaticFunction(fwd, input_spec, layer)
        params = layer.parameters()
    elif isinstance(layer, StaticFunction):
        sf, params = layer, []
    else:
        raise TypeError(f"[jit.save] expected a Layer or a to_static function, got {type(layer).__name__}")
    spec = input_spec if input_spec is not None else sf.input_spec
    if not spec:
        raise ValueError(
            "[jit.save] give input_spec=[fw.static.InputSpec(shape, dtype), ...] (or to_static with one): "
            "the program's inputs must be known to trace it"
        )
    dev = params[0].device if params else _dev.get_device()
    dims = [tuple(f"s{k}_{j}" if d is None else d for j, d in enumerate(s.shape)) for k, s in enumerate(spec)]
    saved, sf.input_spec = sf.input_spec, list(spec)
    try:
        with autograd.no_grad():
            cp = sf.get_concrete_program([(d, s.dtype) for d, s in zip(dims, spec)], dev)
    except TracingError as exc:
        raise TracingError(
            f"[jit.save] the program cannot serve the dynamic dims of {input_spec}: {exc}; give "
            f"static sizes in input_spec for those dims"
        ) from None
    finally:
        sf.input_spec = saved
    names = [s.name if s.name and s.name.isidentifier() else f"x{k}" for k, s in enumerate(spec)]
    if len(set(names)) != len(names):
        raise ValueError(f"[jit.save] the input names {names} repeat; give each InputSpec its own name=")
    return cp, names


def write_program(
    path: str,
    program: Program,
    params: dict[str, Tensor],
    constants: dict[str, Tensor],
    structure: str,
    input_names: list[str],
) -> None:
    """Write ``path.oarlock`` and ``path.safetensors`` for a program and its weights (what
    :func:`save` writes after tracing; a pass over a saved program writes its result so)."""
    body = f"{_INPUTS}{' '.join(input_names)}\n{print_program(program)}"
    digest = hashlib.sha256(body.encode()).hexdigest()
    text = f"{_MAGIC}{FORMAT_VERSION}\n// sha256 {digest}\n// returns {structure}\n{body}"
    _save_weights({"params": dict(params), "constants": dict(constants)}, path + WEIGHTS_SUFFIX)
    tmp = path + PROGRAM_SUFFIX + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path + PROGRAM_SUFFIX)


def _read_program(path: str) -> tuple[Program, str, list[str]]:
    file = path + PROGRAM_SUFFIX
    try:
        with open(file, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProgramFileError(
            f"[jit.load] no program at '{file}'; give the path passed to fw.jit.save (without suffix)"
        ) from None
    except UnicodeDecodeError:
        raise ProgramFileError(f"[jit.load] '{file}' is not text: not a saved program, or damaged") from None
    lines = text.split("\n", 3)
    if len(lines) < 4 or not lines[0].startswith(_MAGIC):
        raise ProgramFileError(
            f"[jit.load] '{file}' does not start with '{_MAGIC}<version>': not a saved program, or truncated"
        )
    version = lines[0][len(_MAGIC) :].strip()
    if version != str(FORMAT_VERSION):
        raise ProgramFileError(
            f"[jit.load] '{file}' is program format {version!r}; this Oarlock reads format "
            f"{FORMAT_VERSION}. Save it again with this version"
        )
    if not lines[1].startswith("// sha256 ") or not lines[2].startswith("// returns "):
        raise ProgramFileError(
            f"[jit.load] '{file}' has a damaged header (sha256 and returns lines); restore the file"
        )
    body = lines[3]
    if hashlib.sha256(body.encode()).hexdigest() != lines[1][len("// sha256 ") :].strip():
        raise ProgramFileError(
            f"[jit.load] '{file}' does not match its checksum: it is truncated or was changed "
            f"after saving; save it again or restore it"
        )
    structure = lines[2][len("// returns ") :].strip()
    if structure not in ("tensor", "tuple"):
        raise ProgramFileError(f"[jit.load] '{file}' says it returns {structure!r}; expected tensor or tuple")
    names: list[str] | None = None
    if body.startswith(_INPUTS):
        first, _, body = body.partition("\n")
        names = first[len(_INPUTS) :].split()
    try:
        prog = parse_program(body)
        verify(prog)
    except IRError as exc:
        raise ProgramFileError(f"[jit.load] '{file}' is not a valid program: {exc}") from None
    if names is None:
        names = [f"x{k}" for k in range(len(prog.inputs))]
    if len(names) != len(prog.inputs) or not all(n.isidentifier() for n in names):
        raise ProgramFileError(
            f"[jit.load] '{file}' names inputs {names[:8]} for a program of {len(prog.inputs)} inputs"
        )
    return prog, structure, names


def retarget(program: Program, device: str) -> Program:
    """A copy of ``program`` with every value's type on ``device``, its ops in the form that
    device's plugin takes (:func:`for_contract`)."""
    p = parse_program(print_program(program))
    for v in p.values():
        if isinstance(v.type, TensorType):
            v.type = v.type.with_device(device)
    for_contract(p, _dev.parse(device, check=False).type)
    return p


def for_contract(program: Program, device_type: str) -> int:
    r"""Rewrite, in place, the ops of ``program`` whose attributes a plugin of ``device_type``
    does not take (``adapter_api.ATTRS_SINCE``) as tracing on that device records them: a
    contract-1.2 ``gather {wrap = true}`` (saved on cpu) becomes ``fw.gather``'s fallback for
    an older plugin, the index wrapped by ``lt``/``add``/``where`` before a plain gather (the
    plugin's kernel would be called with ``wrap`` and fail). Returns how many were rewritten.

    Example:
        >>> import framework as fw
        >>> from framework import ir
        >>> p = ir.parse_program(
        ...     "module @f(%0: tensor<[6, 3], float32, cpu>, %1: tensor<[4], int64, cpu>) -> "
        ...     "(tensor<[4, 3], float32, cpu>) {\n"
        ...     "  %2 = op.gather(%0, %1) {axis = 0, wrap = true} : tensor<[4, 3], float32, cpu>\n"
        ...     "  builtin.return(%2)\n}")
        >>> for_contract(p, "cpu")  # cpu's gather takes wrap (contract 1.2)
        0
    """
    done = 0
    for op in list(program.walk()):
        if op.name != "op.gather" or not op.attrs.get("wrap"):
            continue
        if not dispatch.kernel_takes("gather", "wrap", device_type, op.operands[0].type.dtype):
            _wrap_before_gather(op)
            done += 1
    return done


def _wrap_before_gather(op: Operation) -> None:
    """``op`` (a ``gather {wrap = true}``) reads its index wrapped by element-wise ops and
    loses ``wrap``: the ops ``fw.gather`` records for a plugin of contract < 1.2."""
    from .symbolic import _rebuild_scalar

    x, idx = op.operands
    blk, it, xt = op.parent, idx.type, x.type
    assert blk is not None and isinstance(it, TensorType) and isinstance(xt, TensorType)
    at = blk.ops.index(op)
    new: list[Operation] = []

    def add(name: str, ins: list[Any], ty: TensorType, attrs: dict[str, Any]) -> Operation:
        o = blk.insert_op(at + len(new), Operation(name, ins, [ty], attrs))
        new.append(o)
        return o

    one = TensorType((1,), it.dtype, it.device)
    zero = add("builtin.constant", [], one, {"value": 0})
    neg = add("op.lt", [idx, zero.result], TensorType(it.shape, np.dtype(bool), it.device), {})
    n = xt.shape[op.attrs["axis"]]
    size = add("builtin.constant", [], one, {"value": n if isinstance(n, int) else 0})
    if isinstance(n, SymDim):  # a dynamic dim: counted at run time, as a trace does
        k, grown = _rebuild_scalar(size, n, 1)
        new[-1:] = blk.ops[k : k + grown + 1]
        size = new[-1]
    moved = add("op.add", [idx, size.result], it, {})
    wrapped = add("op.where", [neg.result, moved.result, idx], it, {})
    op.set_operand(1, wrapped.result)
    op.attrs = {k: v for k, v in op.attrs.items() if k != "wrap"}


class TranslatedLayer(Layer):
    """A loaded program as a Layer: call it with tensors on the device of its parameters
    (``layer.to(device)`` moves them; the program is lowered again for the new device)."""

    def __init__(
        self,
        program: Program,
        params: dict[str, Tensor],
        constants: dict[str, Tensor],
        structure: str,
        input_names: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.program = program
        #: the inputs' names (the InputSpec names given to save)
        self.input_names = list(input_names or [f"x{k}" for k in range(len(program.inputs))])
        self._structure = structure
        self._param_names: dict[str, str] = {}
        for name, t in params.items():
            p = Parameter.from_tensor(t, trainable=False)
            key = name.replace(".", "_")
            self.add_parameter(key, p)
            self._param_names[name] = key
        self._constants = dict(constants)
        self._executors: dict[_dev.Device, Executor] = {}
        self.eval()

    def _executor(self, dev: _dev.Device) -> Executor:
        ex = self._executors.get(dev)
        if ex is None:
            params = {n: getattr(self, k) for n, k in self._param_names.items()}
            consts = {n: t.numpy() for n, t in self._constants.items()}
            prog = _passes.fuse_program(
                retarget(self.program, str(dev)), dev, consts
            )  # OARLOCK_COMPILE=0: unfused
            ex = self._executors[dev] = Executor(prog, dev, params, consts)
        return ex

    def forward(self, *inputs: Tensor) -> Any:
        if not inputs or not isinstance(inputs[0], Tensor):
            raise TypeError(f"[jit.load] the loaded program takes {len(self.program.inputs)} tensors")
        with autograd.no_grad():
            outs = self._executor(inputs[0].device)(*inputs)
        return outs[0] if self._structure == "tensor" else tuple(outs)


def load(path: str | os.PathLike[str], device: Any = None, **configs: Any) -> Layer:
    """Load what :func:`save` wrote onto ``device`` (the current device by default); the
    result is a Layer that runs the program (Paddle's ``paddle.jit.load``). A model written
    by Paddle 3's ``paddle.jit.save`` (``path.json``, ``path.pdiparams``) loads too, as a
    :class:`framework.jit.paddle_format.PaddleModel`."""
    if configs:
        raise TypeError(f"[jit.load] unexpected arguments {sorted(configs)}; expected device=")
    path = os.fspath(path)
    from . import paddle_format  # here: its op table reads framework's functions at import

    if paddle_format.is_paddle_model(path) and not os.path.exists(path + PROGRAM_SUFFIX):
        return paddle_format.load(path, device)  # written by Paddle 3's paddle.jit.save
    prog, structure, input_names = _read_program(path)
    dev = _dev.get_device() if device is None else _dev.parse(device)
    try:
        weights = _load_weights(path + WEIGHTS_SUFFIX, device=dev)
    except CheckpointError as exc:
        raise ProgramFileError(f"[jit.load] the weights of '{path}' cannot be read: {exc}") from None
    if not isinstance(weights, dict) or set(weights) != {"params", "constants"}:
        raise ProgramFileError(
            f"[jit.load] '{path}{WEIGHTS_SUFFIX}' is not the weights file of a saved program"
        )
    names = {op.attrs["name"] for op in prog.walk() if op.name == "builtin.parameter"}
    missing = names - set(weights["params"])
    if missing:
        raise ProgramFileError(
            f"[jit.load] the weights of '{path}' lack parameters {sorted(missing)[:5]} the program reads"
        )
    return TranslatedLayer(prog, dict(weights["params"]), dict(weights["constants"]), structure, input_names)


def read_program(
    path: str | os.PathLike[str], device: Any = "cpu"
) -> tuple[Program, dict[str, Tensor], dict[str, Tensor], str, list[str]]:
    """What :func:`write_program` wrote, checked as :func:`load` checks it: the program, its
    parameters and named constants (on ``device``), what it returns and its input names."""
    layer = load(path, device)
    params = {n: getattr(layer, k) for n, k in layer._param_names.items()}
    return layer.program, params, dict(layer._constants), layer._structure, list(layer.input_names)

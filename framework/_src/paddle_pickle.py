"""Paddle's checkpoint files (``.pdparams``, ``.pdopt``): a pickle of numpy arrays, read safely.

Real Paddle's ``paddle.save`` writes a protocol-4 pickle: a state dict becomes a dict of numpy
arrays plus a ``"StructuredToParameterName@@"`` table of Paddle's internal names, and a tensor
elsewhere in a nesting becomes a ``(name, ndarray)`` pair. :func:`load` reads such files through
an unpickler that admits only what rebuilds numpy arrays and plain containers; any other global
the file asks for is refused by name, so a crafted file cannot run code. :func:`save` writes the
same layout, which real ``paddle.load`` reads. bfloat16 travels as its raw bits in a uint16
array, as Paddle writes it (Paddle has no uint16 dtype).
"""

from __future__ import annotations

import io
import os
import pickle
from typing import Any

import numpy as np

from . import device as _dev
from . import dtypes as _dt
from .atomic_file import atomic_write
from .tensor import Tensor, from_numpy_copy

#: The file suffixes that mean Paddle's pickle format to ``fw.save``.
SUFFIXES = (".pdparams", ".pdopt", ".pkl")
_NAME_TABLE = "StructuredToParameterName@@"
#: The globals a numpy-array pickle needs (both numpy 1.x and 2.x module paths), and the
#: containers Paddle writes; nothing else is admitted.
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("collections", "OrderedDict"),
    ("builtins", "tuple"),  # paddle.save writes a tensor as tuple((name, ndarray))
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "slice"),
}


class _Refused(pickle.UnpicklingError):
    """The file asked for something a checkpoint of arrays never needs."""


class _ArrayUnpickler(pickle.Unpickler):
    def __init__(self, f: io.BufferedIOBase, path: str) -> None:
        super().__init__(f)
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise _Refused(
            f"[load] '{self._path}' asks for the global '{module}.{name}', which a Paddle checkpoint of numpy "
            f"arrays never needs; refused (only numpy arrays, scalars, strings and containers load)"
        )

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused(f"[load] '{self._path}' holds a persistent reference {pid!r}; refused")


def is_pickle(path: str) -> bool:
    """Whether the file at ``path`` starts like a pickle of protocol 2 or newer (and not like a
    safetensors file whose 8-byte header length happens to begin ``80 02`` .. ``80 05``: its
    ninth byte is the header's ``{`` and the length fits the file)."""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return False
    if len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") <= size - 8:
        return False
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


class PaddleFileError(ValueError):
    """A Paddle pickle checkpoint that cannot be read safely (``fw.load`` raises it as a CheckpointError)."""


def load(path: str, device: Any = None, return_numpy: bool = False) -> Any:
    """The object in a Paddle pickle checkpoint, its arrays as tensors on ``device`` (or numpy).

    ``(name, ndarray)`` pairs (how ``paddle.save`` writes a tensor inside a nesting) become
    tensors, and Paddle's internal name table is dropped, as ``paddle.load`` does.
    """
    try:
        with open(path, "rb") as f:
            obj = _ArrayUnpickler(f, path).load()
    except _Refused as exc:
        raise PaddleFileError(str(exc)) from None
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
    ) as exc:
        raise PaddleFileError(
            f"[load] '{path}' is a damaged or truncated Paddle pickle ({type(exc).__name__}: {exc}); "
            f"save it again with paddle.save"
        ) from None
    dev = None if return_numpy else (_dev.get_device() if device is None else _dev.parse(device))

    def build(node: Any) -> Any:
        if isinstance(node, np.ndarray):
            if node.dtype == object:
                raise PaddleFileError(f"[load] '{path}' holds an array of Python objects; refused")
            if node.dtype == np.uint16:  # Paddle has no uint16: it stores bfloat16 as its raw bits
                node = node.view(_dt.bfloat16)
            return node if return_numpy else from_numpy_copy(np.ascontiguousarray(node), dev)
        if isinstance(node, np.generic):
            return node.item()
        if (
            isinstance(node, tuple)
            and len(node) == 2
            and isinstance(node[0], str)
            and isinstance(node[1], np.ndarray)
        ):
            return build(node[1])
        if isinstance(node, dict):
            return {k: build(v) for k, v in node.items() if k != _NAME_TABLE}
        if isinstance(node, (list, tuple)):
            return type(node)(build(v) for v in node)
        return node

    return build(obj)


def _plain(node: Any, path: str) -> Any:
    """``node`` with every tensor as a numpy array (the layout ``paddle.load`` reads)."""
    if isinstance(node, Tensor):
        node = np.ascontiguousarray(node.numpy())
    if isinstance(node, np.ndarray):
        return node.view(np.uint16) if node.dtype == _dt.bfloat16 else node  # Paddle's bfloat16: raw bits
    if isinstance(node, dict):
        return {k: _plain(v, path) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(_plain(v, path) for v in node)
    if node is None or isinstance(node, (bool, int, float, str, bytes, np.generic)):
        return node
    raise PaddleFileError(
        f"[save] cannot write a {type(node).__name__} to the Paddle checkpoint '{path}'; pass tensors, "
        f"numpy arrays, numbers, strings and dicts/lists of them"
    )


def save(obj: Any, path: str, protocol: int = 4) -> None:
    """Write ``obj`` to ``path`` as ``paddle.save`` does: a pickle with tensors as numpy arrays.

    The file is written beside ``path`` and renamed into place, so a crash leaves the old file.
    """
    data = pickle.dumps(_plain(obj, path), protocol=protocol)
    with atomic_write(path) as f:
        f.write(data)

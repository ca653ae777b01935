"""Checkpoints: ``fw.save`` / ``fw.load`` in the safetensors format, never pickle.

A checkpoint holds tensors and plain values (ints, floats, strings, bools, None, lists) in
any nesting of dicts: ``{"model": model.state_dict(), "optim": opt.state_dict(), "step": 7}``.
Tensors are stored under dotted keys (``model.fc.weight``); the nesting and the plain values
go in the header's metadata, with a SHA-256 of the tensor data so a corrupted file is
refused rather than loaded as garbage. Writing is atomic: a temporary file in the same
folder, fsync, rename (then fsync of the folder), so a crash leaves the old file or the new
one, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Any

import numpy as np

from adapter_api import OarlockError, OpArgumentError

from . import device as _dev
from . import dtypes as _dt
from .tensor import Tensor, from_numpy_copy

FORMAT = "oarlock-checkpoint-1"
_FROM_ST = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64", "I32": "int32",
    "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "U16": "uint16", "U32": "uint32", "U64": "uint64",
}


class CheckpointError(OarlockError, ValueError):
    """A checkpoint file is missing, truncated, corrupted or not a checkpoint."""


def _flatten(obj: Any, prefix: str, tensors: dict[str, np.ndarray], path: str) -> Any:
    """The JSON tree of ``obj`` with each tensor replaced by ``{"__tensor__": key}``."""
    if isinstance(obj, Tensor):
        key = prefix or "tensor"
        if key in tensors:
            raise OpArgumentError(f"[save] two entries flatten to the same key '{key}' in {path}; rename one")
        tensors[key] = np.ascontiguousarray(obj.numpy())
        return {"__tensor__": key}
    if isinstance(obj, np.ndarray):
        key = prefix or "tensor"
        tensors[key] = np.ascontiguousarray(obj)
        return {"__tensor__": key, "numpy": True}
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise OpArgumentError(f"[save] dict keys must be str or int, got {type(k).__name__} {k!r}")
            out[str(k)] = _flatten(v, f"{prefix}.{k}" if prefix else str(k), tensors, path)
        return {"__dict__": out}
    if isinstance(obj, (list, tuple)):
        return {"__list__": [_flatten(v, f"{prefix}.{i}" if prefix else str(i), tensors, path) for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    raise OpArgumentError(
        f"[save] cannot save a {type(obj).__name__} at '{prefix}' (only tensors, numbers, strings, None and "
        f"lists/dicts of them are stored; no pickle)"
    )


def _digest(tensors: list[tuple[str, np.ndarray | bytes]]) -> str:
    h = hashlib.sha256()
    for k, a in tensors:
        h.update(k.encode())
        h.update(memoryview(a if isinstance(a, (bytes, bytearray)) else a.reshape(-1).view(np.uint8)))
    return h.hexdigest()


def save(obj: Any, path: str | os.PathLike[str], **kwargs: Any) -> None:
    """Write ``obj`` (a tensor, or a dict/list nesting of tensors and plain values) to
    ``path`` atomically in safetensors format.

    >>> import framework as fw, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> fw.save({"w": fw.ones([2]), "step": 3}, p)
    >>> fw.load(p)["step"]
    3
    """
    from safetensors import TensorSpec, serialize

    path = os.fspath(path)
    tensors: dict[str, np.ndarray] = {}
    tree = _flatten(obj, "", tensors, path)
    items = sorted(tensors.items())
    meta = {"format": FORMAT, "tree": json.dumps(tree), "sha256": _digest(items)}
    specs = {
        k: TensorSpec(dtype=a.dtype.name, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes) for k, a in items
    }
    data = bytes(serialize(specs, metadata=meta))
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".safetensors", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # some filesystems cannot fsync a folder; the rename is still atomic
        pass


def _header_metadata(path: str, raw: bytes) -> dict[str, str]:
    if len(raw) < 8:
        raise CheckpointError(f"[load] '{path}' is too short to be a safetensors file ({len(raw)} bytes); it is truncated or not a checkpoint")
    n = int.from_bytes(raw[:8], "little")
    if n > len(raw) - 8:
        raise CheckpointError(f"[load] '{path}' is truncated: its header says {n} bytes, the file has {len(raw) - 8} after the length field")
    try:
        header = json.loads(raw[8 : 8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"[load] '{path}' has a corrupted safetensors header ({exc}); the file is damaged") from None
    return header.get("__metadata__") or {}


def load(path: str | os.PathLike[str], device: Any = None, return_numpy: bool = False, **kwargs: Any) -> Any:
    """Read a checkpoint written by :func:`save` (or any safetensors file: then a flat dict
    of tensors) onto ``device`` (the current device by default)."""
    from safetensors import SafetensorError, deserialize

    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise CheckpointError(f"[load] no checkpoint at '{path}'; check the path") from None
    meta = _header_metadata(path, raw)
    try:
        entries = deserialize(raw)
    except SafetensorError as exc:
        raise CheckpointError(f"[load] '{path}' is not a valid safetensors file ({exc}); it is truncated or corrupted") from None
    arrays: dict[str, np.ndarray] = {}
    for name, e in entries:
        dt = _FROM_ST.get(e["dtype"])
        if dt is None:
            raise CheckpointError(f"[load] '{path}': tensor '{name}' has unsupported dtype {e['dtype']}")
        arrays[name] = np.frombuffer(bytes(e["data"]), dtype=_dt.as_dtype(dt) if dt in _dt._BY_NAME else np.dtype(dt)).reshape(e["shape"])
    if meta.get("format") == FORMAT:
        want = meta.get("sha256")
        got = _digest(sorted(arrays.items()))
        if want != got:
            raise CheckpointError(
                f"[load] '{path}' is corrupted: the tensor data does not match the checksum written with it "
                f"(sha256 {got[:12]}... != {str(want)[:12]}...); restore it from a backup"
            )
    dev = None if return_numpy else (_dev.get_device() if device is None else _dev.parse(device))

    def tensor(key: str, as_numpy: bool = False) -> Any:
        if key not in arrays:
            raise CheckpointError(f"[load] '{path}' names tensor '{key}' in its metadata but does not hold it; the file is damaged")
        a = arrays[key]
        return a.copy() if (return_numpy or as_numpy) else from_numpy_copy(a, dev)

    if meta.get("format") != FORMAT:
        return {k: tensor(k) for k in arrays}
    try:
        tree = json.loads(meta["tree"])
    except (KeyError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"[load] '{path}' has a damaged structure record ({exc})") from None

    def build(node: Any) -> Any:
        if isinstance(node, dict):
            if "__tensor__" in node:
                return tensor(node["__tensor__"], node.get("numpy", False))
            if "__dict__" in node:
                return {k: build(v) for k, v in node["__dict__"].items()}
            if "__list__" in node:
                return [build(v) for v in node["__list__"]]
        return node

    return build(tree)

"""Checkpoints: ``fw.save`` / ``fw.load`` in the safetensors format, and Paddle's pickles.

A path ending ``.pdparams``, ``.pdopt`` or ``.pkl`` is written in ``paddle.save``'s format, and a
pickle written by real Paddle loads through a restricted unpickler that admits only numpy
arrays, scalars, strings and containers (``framework/_src/paddle_pickle.py``); everything else
is the safetensors format below.

A checkpoint holds tensors and plain values (ints, floats, strings, bools, None, lists) in
any nesting of dicts: ``{"model": model.state_dict(), "optim": opt.state_dict(), "step": 7}``.
Tensors are stored under dotted keys (``model.fc.weight``); the nesting and the plain values
go in the header's metadata, with a SHA-256 over the whole file (header and tensor data)
except the 64 hex digits of the checksum itself, so a corrupted byte anywhere is refused
rather than loaded as garbage.

Tensors stream: ``save`` copies one tensor at a time to the host and writes it, ``load``
reads one tensor at a time and moves it to the device, so the host memory in use beyond the
result stays near the largest tensor. Writing is atomic: a temporary file beside the target
(``.NAME.tmp-PID-XXXX``), fsync, rename, fsync of the folder, so a crash leaves the old file
or the new one, never half of one; the temporaries of a save that was killed are removed by
the next save of the same path. Files get the permissions the umask allows (like ``open``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, BinaryIO

import numpy as np

from adapter_api import OarlockError, OpArgumentError

from . import device as _dev
from . import dtypes as _dt
from . import paddle_pickle as _paddle_pickle
from .atomic_file import atomic_write
from .tensor import Tensor, from_numpy_copy

FORMAT = "oarlock-checkpoint-2"
#: The metadata keys only an Oarlock checkpoint has: any one of them present (or a format record
#: naming oarlock) makes a file ours, and then all must be intact (one damaged key cannot turn the
#: checksum off). Other tools write ``format`` too (``"pt"``): such a file is not ours.
_OUR_KEYS = ("tree", "sha256")
_FROM_ST = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
    "U16": "uint16",
    "U32": "uint32",
    "U64": "uint64",
    "F8_E4M3": "float8_e4m3fn",  # the safetensors names of the OCP float8 types
    "F8_E5M2": "float8_e5m2",
}
_TO_ST = {v: k for k, v in _FROM_ST.items()}
#: Written before issue 18: its checksum covers the tensor data only (still read and checked).
_FORMAT_1 = "oarlock-checkpoint-1"
_PLACEHOLDER = "0" * 64
_CHUNK = 64 << 20  # bytes hashed/written per step for very large tensors
#: no array is this large (numpy's own limit is 2**63 bytes, counting every dim as at least 1)
_MAX_BYTES = 2**62


class CheckpointError(OarlockError, ValueError):
    """A checkpoint file is missing, truncated, corrupted or not a checkpoint.

    An :class:`OarlockError` and a ``ValueError``; :func:`load` raises it with the path and what
    to do.

    Example:
        >>> import framework as fw, os, tempfile
        >>> try:
        ...     fw.load(os.path.join(tempfile.gettempdir(), "no-such-checkpoint.safetensors"))
        ... except fw.CheckpointError as e:
        ...     print(e)
        [load] no checkpoint at '...no-such-checkpoint.safetensors'; check the path
    """


def _short(shape: tuple[int, ...]) -> str:
    """A shape for a message, its huge dims kept short."""
    return "(" + ", ".join(str(d) if d < 10**12 else f"~2**{d.bit_length() - 1}" for d in shape) + ")"


def _flatten(obj: Any, prefix: str, tensors: dict[str, Tensor | np.ndarray], path: str) -> Any:
    """The JSON tree of ``obj`` with each tensor replaced by ``{"__tensor__": key}``."""
    if isinstance(obj, (Tensor, np.ndarray)):
        key = prefix or "tensor"
        if key in tensors:
            raise OpArgumentError(f"[save] two entries flatten to the same key '{key}' in {path}; rename one")
        tensors[key] = obj
        return {"__tensor__": key, "numpy": True} if isinstance(obj, np.ndarray) else {"__tensor__": key}
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise OpArgumentError(f"[save] dict keys must be str or int, got {type(k).__name__} {k!r}")
            out[str(k)] = _flatten(v, f"{prefix}.{k}" if prefix else str(k), tensors, path)
        return {"__dict__": out}
    if isinstance(obj, (list, tuple)):
        return {
            "__list__": [
                _flatten(v, f"{prefix}.{i}" if prefix else str(i), tensors, path) for i, v in enumerate(obj)
            ]
        }
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    raise OpArgumentError(
        f"[save] cannot save a {type(obj).__name__} at '{prefix}' (only tensors, numbers, strings, None and "
        f"lists/dicts of them are stored; no pickle)"
    )


def _digest_1(tensors: list[tuple[str, np.ndarray]]) -> str:
    """The checksum of format 1: each key and its data, in key order."""
    h = hashlib.sha256()
    for k, a in tensors:
        h.update(k.encode())
        h.update(memoryview(np.ascontiguousarray(a).reshape(-1).view(np.uint8)))
    return h.hexdigest()


def _header_bytes(items: list[tuple[str, Tensor | np.ndarray]], meta: dict[str, str]) -> bytes:
    """The safetensors header (length prefix, JSON padded with spaces to 8 bytes)."""
    entries: dict[str, Any] = {"__metadata__": meta}
    offset = 0
    for k, a in items:
        dt = np.dtype(a.dtype)
        st = _TO_ST.get(dt.name)
        if st is None:
            raise OpArgumentError(f"[save] tensor '{k}' has dtype {dt}, which safetensors cannot store")
        nbytes = math.prod(a.shape) * dt.itemsize
        entries[k] = {"dtype": st, "shape": list(a.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    js = json.dumps(entries, separators=(",", ":")).encode()
    js += b" " * (-(8 + len(js)) % 8)
    return len(js).to_bytes(8, "little") + js


def _host_bytes(a: Tensor | np.ndarray) -> memoryview:
    arr = a.numpy() if isinstance(a, Tensor) else a
    return memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))


def save(obj: Any, path: str | os.PathLike[str], **kwargs: Any) -> None:
    """Write ``obj`` to ``path`` in safetensors format, atomically, one tensor at a time.

    The file is written beside ``path`` and renamed into place, with a checksum that
    :func:`load` verifies; no pickle is involved. A path ending ``.pdparams``, ``.pdopt`` or
    ``.pkl`` is written as ``paddle.save`` writes it instead (a pickle of numpy arrays, which real
    ``paddle.load`` reads; no checksum).

    Args:
        obj: a tensor, or a dict/list nesting of tensors, numpy arrays, numbers, strings and None.
        path (str | os.PathLike): the file to write; its folder is created.
        **kwargs: Paddle's options (``protocol``...); ignored.

    Example:
        >>> import framework as fw, os, tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> p = os.path.join(folder.name, "ckpt.safetensors")
        >>> fw.save({"w": fw.ones([2]), "step": 3}, p)
        >>> fw.load(p)["step"]
        3
        >>> folder.cleanup()
    """
    path = os.fspath(path)
    if path.endswith(_paddle_pickle.SUFFIXES):  # Paddle's format, which real paddle.load reads
        try:
            return _paddle_pickle.save(obj, path, protocol=kwargs.get("protocol", 4))
        except _paddle_pickle.PaddleFileError as exc:
            raise CheckpointError(str(exc)) from None
    tensors: dict[str, Tensor | np.ndarray] = {}
    try:
        tree = _flatten(obj, "", tensors, path)
    except RecursionError:
        raise OpArgumentError(
            f"[save] the object saved to '{path}' nests dicts/lists deeper than Python can follow (or holds "
            "itself); flatten it"
        ) from None
    items = sorted(tensors.items())
    header = _header_bytes(items, {"format": FORMAT, "tree": json.dumps(tree), "sha256": _PLACEHOLDER})
    mark = header.index(_PLACEHOLDER.encode())
    with atomic_write(path) as f:
        h = hashlib.sha256(header)
        f.write(header)
        for _, a in items:
            data = _host_bytes(a)
            for i in range(0, len(data), _CHUNK):
                h.update(data[i : i + _CHUNK])
                f.write(data[i : i + _CHUNK])
            del data
        f.seek(mark)
        f.write(h.hexdigest().encode())


def _not_ours(path: str, raw: bytes) -> CheckpointError:
    kind = ""
    if raw.startswith(b"PK\x03\x04"):
        kind = " (it is a zip archive, as torch.save writes: load it with torch and pass the tensors to fw.to_tensor)"
    elif raw[:1] == b"\x80":
        kind = " (it looks like a Python pickle of protocol 0/1, which Oarlock does not load)"
    return CheckpointError(
        f"[load] '{path}' is not an Oarlock checkpoint (nor a safetensors file){kind}; its first bytes are "
        f"{raw[:8]!r}; pass a file written by fw.save"
    )


def _read_header(path: str, f: BinaryIO, size: int) -> tuple[int, bytes, dict[str, Any]]:
    """(data start, raw header, parsed header) of an open safetensors file of ``size`` bytes."""
    first = f.read(9)
    if len(first) < 9:
        raise CheckpointError(
            f"[load] '{path}' is too short to be a checkpoint ({size} bytes); it is truncated or not a checkpoint"
        )
    if first[8:9] != b"{":
        raise _not_ours(path, first)
    n = int.from_bytes(first[:8], "little")
    if n > size - 8:
        raise CheckpointError(
            f"[load] '{path}' is truncated: its header says {n} bytes, the file has {size - 8} after the length field"
        )
    raw = first[8:] + f.read(n - 1)
    try:
        header = json.loads(raw)
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(
            f"[load] '{path}' has a corrupted safetensors header ({exc}); the file is damaged"
        ) from None
    except RecursionError:
        raise CheckpointError(
            f"[load] '{path}' has a safetensors header nested deeper than Python can follow; the file is "
            "damaged or forged"
        ) from None
    return 8 + n, raw, header


def _entries(
    path: str, header: dict[str, Any], data_len: int
) -> list[tuple[str, np.dtype, tuple[int, ...], int, int]]:
    """Validated (name, dtype, shape, begin, end) of every tensor, in file order."""
    out = []
    for name, e in header.items():
        if name == "__metadata__":
            continue
        try:
            dt = _FROM_ST[e["dtype"]]
            shape = tuple(int(s) for s in e["shape"])
            begin, end = (int(v) for v in e["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(
                f"[load] '{path}': the header entry of tensor '{name}' is damaged ({e!r})"
            ) from None
        dtype = _dt.as_dtype(dt) if dt in _dt._BY_NAME else np.dtype(dt)
        if math.prod(max(s, 1) for s in shape) * dtype.itemsize >= _MAX_BYTES:
            raise CheckpointError(
                f"[load] '{path}': tensor '{name}' claims shape {_short(shape)}, more than any array can hold; "
                "the file is damaged or forged"
            )
        if min(shape, default=0) < 0 or end - begin != math.prod(shape) * dtype.itemsize:
            raise CheckpointError(
                f"[load] '{path}': tensor '{name}' has shape {shape} of {dt} but {end - begin} bytes; the file is damaged"
            )
        out.append((name, dtype, shape, begin, end))
    out.sort(key=lambda t: (t[3], t[4]))
    pos = 0
    for name, _, _, begin, end in out:
        if begin != pos:
            raise CheckpointError(
                f"[load] '{path}': tensor '{name}' starts at byte {begin} of the data, expected {pos}; the file is damaged"
            )
        pos = end
    if pos != data_len:
        what = "truncated" if pos > data_len else "damaged"
        raise CheckpointError(
            f"[load] '{path}' is {what}: its tensors need {pos} bytes of data, the file has {data_len}"
        )
    return out


def load(
    path: str | os.PathLike[str],
    device: Any = None,
    return_numpy: bool = False,
    verify: bool = True,
    **kwargs: Any,
) -> Any:
    """Read a checkpoint written by :func:`save` onto a device, one tensor at a time.

    A damaged file raises :class:`CheckpointError`, and so does a file without Oarlock's
    checksum (its ``__metadata__`` removed, or a safetensors file written by another tool)
    unless ``verify=False``: then any safetensors file reads as a flat dict of tensors.

    Args:
        path (str | os.PathLike): the file.
        device (str | Device, optional): where the tensors go; default the current device.
        return_numpy (bool): give numpy arrays instead of tensors.
        verify (bool): refuse a file that carries no Oarlock checksum (the default); False
            accepts one, for safetensors files from elsewhere that you trust.
        **kwargs: Paddle's options; ignored.

    Returns:
        The object saved, its tensors on ``device``.

    Example:
        >>> import framework as fw, os, tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> p = os.path.join(folder.name, "ckpt.safetensors")
        >>> fw.save({"w": fw.to_tensor([1.0, 2.0]), "layers": [1, 2]}, p)
        >>> state = fw.load(p)
        >>> state["w"]
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1., 2.])
        >>> state["layers"], type(fw.load(p, return_numpy=True)["w"]).__name__
        ([1, 2], 'ndarray')
        >>> folder.cleanup()
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise CheckpointError(
            f"[load] '{path}' is a directory, not a checkpoint; pass the checkpoint file inside it"
        )
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise CheckpointError(f"[load] no checkpoint at '{path}'; check the path") from None
    except OSError as exc:
        raise CheckpointError(f"[load] cannot open '{path}': {exc.strerror}") from None
    if _paddle_pickle.is_pickle(path):  # paddle.save's files, through the restricted unpickler
        f.close()
        try:
            return _paddle_pickle.load(path, device, return_numpy)
        except _paddle_pickle.PaddleFileError as exc:
            raise CheckpointError(str(exc)) from None
    dev = None if return_numpy else (_dev.get_device() if device is None else _dev.parse(device))
    with f:
        size = os.fstat(f.fileno()).st_size
        start, raw, header = _read_header(path, f, size)
        meta = header.get("__metadata__") or {}
        ours = isinstance(meta, dict) and (
            any(k in meta for k in _OUR_KEYS) or "oarlock" in str(meta.get("format", ""))
        )
        legacy = ours and meta.get("format") == _FORMAT_1
        if not ours and verify:
            raise CheckpointError(
                f"[load] '{path}' carries no Oarlock checksum (its __metadata__ is "
                f"{'missing' if '__metadata__' not in header else 'not ours'}): it was not written by fw.save, or "
                "its records were removed, so its contents cannot be vouched for; for a safetensors file from "
                "another tool that you trust, pass fw.load(path, verify=False)"
            )
        if ours and (
            meta.get("format") not in (FORMAT, _FORMAT_1)
            or not isinstance(meta.get("sha256"), str)
            or "tree" not in meta
        ):
            raise CheckpointError(
                f"[load] '{path}' is a damaged Oarlock checkpoint: its format record is {meta.get('format')!r} "
                f"(expected {FORMAT!r}) and its checksum and structure records must be present; restore it from a backup"
            )
        h = None
        want = meta.get("sha256") if ours else None
        if ours and not legacy:
            quoted = json.dumps(want).encode()
            if len(want) != 64 or raw.count(quoted) != 1:
                raise CheckpointError(
                    f"[load] '{path}' is corrupted: its checksum record {want[:16]!r} is damaged; restore it from a backup"
                )
            h = hashlib.sha256(
                (start - 8).to_bytes(8, "little") + raw.replace(quoted, json.dumps(_PLACEHOLDER).encode())
            )
        entries = _entries(path, header, size - start)
        values: dict[str, Any] = {}
        host: dict[str, np.ndarray] = {}  # only for format 1, whose checksum is by sorted key
        for name, dtype, shape, begin, end in entries:
            buf = np.empty(end - begin, np.uint8)
            if f.readinto(memoryview(buf)) != end - begin:
                raise CheckpointError(f"[load] '{path}' is truncated inside tensor '{name}'")
            if h is not None:
                h.update(buf)
            if dtype == np.bool_ and buf.size and int(buf.max()) > 1:
                bad = int(np.flatnonzero(buf > 1)[0])
                raise CheckpointError(
                    f"[load] '{path}': bool tensor '{name}' holds the byte {int(buf[bad])} at element {bad}; a bool "
                    "is stored as 0 or 1, so the file is damaged or forged"
                )
            a = buf.view(dtype).reshape(shape)
            values[name] = a if return_numpy else from_numpy_copy(a, dev)
            if legacy:
                host[name] = a
            del buf, a
        if legacy and _digest_1(sorted(host.items())) != want:
            raise CheckpointError(
                f"[load] '{path}' is corrupted: its tensor data does not match the checksum written with it; restore it from a backup"
            )
        if h is not None and h.hexdigest() != want:
            raise CheckpointError(
                f"[load] '{path}' is corrupted: its bytes do not match the checksum written with it "
                f"(sha256 {h.hexdigest()[:12]}... != {want[:12]}...); restore it from a backup"
            )
    if not ours:
        return values

    def tensor(key: str, as_numpy: bool) -> Any:
        if key not in values:
            raise CheckpointError(
                f"[load] '{path}' names tensor '{key}' in its metadata but does not hold it; the file is damaged"
            )
        v = values[key]
        if as_numpy and not return_numpy:
            return v.numpy()
        return v

    def build(node: Any) -> Any:
        if isinstance(node, dict):
            if "__tensor__" in node:
                return tensor(node["__tensor__"], node.get("numpy", False))
            if "__dict__" in node:
                return {k: build(v) for k, v in node["__dict__"].items()}
            if "__list__" in node:
                return [build(v) for v in node["__list__"]]
        return node

    try:
        return build(json.loads(meta["tree"]))
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"[load] '{path}' has a damaged structure record ({exc})") from None
    except RecursionError:
        raise CheckpointError(
            f"[load] '{path}' has a structure record nested deeper than Python can follow; the file is damaged "
            "or forged (fw.save refuses such nesting)"
        ) from None

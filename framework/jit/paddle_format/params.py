"""The ``.pdiparams`` file: Paddle's combined parameter file, read with our own parser.

What ``paddle.jit.save`` writes (``save_combine``): the persistable values of the program,
sorted by name, one after another, each as Paddle's dense-tensor record:

- ``uint32`` version (0);
- ``uint64`` LoD level count, then per level an ``uint64`` byte size and that many bytes of
  ``uint64`` offsets (inference weights have none);
- ``uint32`` tensor version (0);
- ``int32`` size of a ``TensorDesc`` protobuf message, then the message (field 1: data type
  as a varint enum; field 2: the dims as int64, packed or not);
- the raw little-endian data, ``prod(dims) * itemsize`` bytes.

The file holds no names: the names come from the program (its ``builtin.parameter`` ops),
sorted as Paddle sorted them when writing.

>>> import numpy as np, io
>>> from framework.jit.paddle_format.params import read_tensors
>>> rec = (b"\\0" * 4 + b"\\0" * 8 + b"\\0" * 4 + (4).to_bytes(4, "little") + bytes([8, 5, 16, 2])
...        + np.array([1.5, -2.0], "<f4").tobytes())
>>> read_tensors(io.BytesIO(rec), "mem", 1)[0].tolist()
[1.5, -2.0]
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

import numpy as np

from .program import PaddleFormatError

#: Paddle's ``VarType.Type`` numbers for dense tensor data types (framework.proto)
VAR_TYPES: dict[int, np.dtype] = {
    0: np.dtype(np.bool_),
    1: np.dtype("<i2"),
    2: np.dtype("<i4"),
    3: np.dtype("<i8"),
    4: np.dtype("<f2"),
    5: np.dtype("<f4"),
    6: np.dtype("<f8"),
    20: np.dtype(np.uint8),
    21: np.dtype(np.int8),
    23: np.dtype("<c8"),
    24: np.dtype("<c16"),
}
_BF16 = 22


def _dtype(code: int, where: str) -> np.dtype:
    if code == _BF16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    dt = VAR_TYPES.get(code)
    if dt is None:
        raise PaddleFormatError(
            f"[jit.load] {where} has data type code {code}, which Oarlock does not read "
            f"(known: {sorted(VAR_TYPES) + [_BF16]}); save the model in float32"
        )
    return dt


def _varint(buf: bytes, pos: int, where: str) -> tuple[int, int]:
    out = shift = 0
    while True:
        if pos >= len(buf):
            raise PaddleFormatError(f"[jit.load] {where}: a tensor description ends inside a number")
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def parse_tensor_desc(buf: bytes, where: str) -> tuple[np.dtype, tuple[int, ...]]:
    """The (dtype, dims) of a ``TensorDesc`` protobuf message."""
    code: int | None = None
    dims: list[int] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos, where)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = _varint(buf, pos, where)
            if field == 1:
                code = v
            elif field == 2:
                dims.append(_signed(v))
        elif wire == 2:
            n, pos = _varint(buf, pos, where)
            end = pos + n
            if field == 2:  # packed dims
                while pos < end:
                    v, pos = _varint(buf, pos, where)
                    dims.append(_signed(v))
            pos = end
        else:
            raise PaddleFormatError(
                f"[jit.load] {where}: a tensor description has wire type {wire} for field {field}; "
                f"the file is damaged or not a .pdiparams file"
            )
    if code is None:
        raise PaddleFormatError(f"[jit.load] {where}: a tensor description has no data type")
    if any(d < 0 for d in dims):
        raise PaddleFormatError(f"[jit.load] {where}: a saved tensor has dims {dims}")
    return _dtype(code, where), tuple(dims)


def _read(f: BinaryIO, n: int, where: str, what: str) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise PaddleFormatError(
            f"[jit.load] {where} ends inside {what} ({len(b)} of {n} bytes): truncated, or it "
            f"belongs to another program"
        )
    return b


def read_tensor(f: BinaryIO, where: str) -> np.ndarray:
    """One dense-tensor record from ``f``."""
    (version,) = struct.unpack("<I", _read(f, 4, where, "a tensor's version"))
    if version != 0:
        raise PaddleFormatError(
            f"[jit.load] {where}: a tensor record of version {version}; Paddle writes version 0"
        )
    (levels,) = struct.unpack("<Q", _read(f, 8, where, "the LoD level count"))
    for _ in range(levels):  # LoD offsets: not used for dense weights
        (size,) = struct.unpack("<Q", _read(f, 8, where, "a LoD level size"))
        _read(f, size, where, "a LoD level")
    (tversion,) = struct.unpack("<I", _read(f, 4, where, "the tensor version"))
    if tversion != 0:
        raise PaddleFormatError(f"[jit.load] {where}: tensor version {tversion}; Paddle writes 0")
    (size,) = struct.unpack("<i", _read(f, 4, where, "the description size"))
    if not 0 < size < 1 << 20:
        raise PaddleFormatError(f"[jit.load] {where}: a tensor description of {size} bytes; damaged")
    dtype, dims = parse_tensor_desc(_read(f, size, where, "a tensor description"), where)
    count = int(np.prod(dims, dtype=np.int64))
    data = _read(f, count * dtype.itemsize, where, f"a tensor of dims {list(dims)}")
    return np.frombuffer(data, dtype=dtype).reshape(dims).copy()


def read_tensors(f: BinaryIO, where: str, count: int) -> list[np.ndarray]:
    """``count`` records, then the end of the file (more bytes are an error)."""
    out = [read_tensor(f, where) for _ in range(count)]
    if f.read(1):
        raise PaddleFormatError(
            f"[jit.load] {where} holds more than the {count} tensors its program names; the "
            f"weights belong to another program"
        )
    return out


def read_params(path: str | os.PathLike[str], names: list[str]) -> dict[str, np.ndarray]:
    """The tensors of a ``.pdiparams`` file by name: ``names`` are the program's persistable
    values; the file holds them in sorted order.

    Example:
        >>> from framework.jit.paddle_format import read_params
        >>> read_params("missing.pdiparams", ["w"])  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        PaddleFormatError: [jit.load] no weights at 'missing.pdiparams' ...
    """
    path = os.fspath(path)
    order = sorted(names)
    if not order:
        return {}
    try:
        with open(path, "rb") as f:
            arrays = read_tensors(f, f"'{path}'", len(order))
    except FileNotFoundError:
        raise PaddleFormatError(
            f"[jit.load] no weights at '{path}'; paddle.jit.save writes <prefix>.pdiparams beside "
            f"<prefix>.json"
        ) from None
    return dict(zip(order, arrays))

"""``fw.MmapStorage``: a file's bytes mapped into memory, read back as tensors (Paddle's)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import dtypes as _dt
from .._src.tensor import Tensor, to_tensor


class MmapStorage:
    """The first ``nbytes`` of a file, memory-mapped read-only; :meth:`get_slice` reads tensors.

    Args:
        filename (str): the file.
        nbytes (int): how many of its bytes to map (at most its size).

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> import framework as fw
        >>> path = os.path.join(tempfile.mkdtemp(), "t.bin")
        >>> np.arange(6, dtype=np.float32).tofile(path)
        >>> fw.MmapStorage(path, 24).get_slice("float32", 0, 6).tolist()
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    """

    def __init__(self, filename: str, nbytes: int) -> None:
        size = os.path.getsize(filename)
        if not 0 < int(nbytes) <= size:
            raise OpArgumentError(
                f"[MmapStorage] nbytes must be in (0, {size}] (the size of {filename!r}), got {nbytes}"
            )
        self.filename, self.nbytes = filename, int(nbytes)
        self._map = np.memmap(filename, dtype=np.uint8, mode="r", shape=(self.nbytes,))

    def get_slice(self, dtype: Any = "uint8", start: int = 0, stop: int = -1, step: int = 1) -> Tensor:
        """``(stop - start) // step`` consecutive items of ``dtype`` read from byte ``start``, as a
        1-d tensor (Paddle 3.3's reading of these arguments: ``start`` counts bytes, and ``step``
        shortens the count rather than skipping items).

        Args:
            dtype (str | np.dtype): the item type.
            start (int): the byte to start at.
            stop (int): with ``start`` and ``step``, gives the item count; -1: to the end.
            step (int): divides the count.

        Returns:
            Tensor: a new tensor on the current device.
        """
        d = _dt.as_dtype(dtype, "MmapStorage.get_slice")
        if start < 0 or step < 1:
            raise OpArgumentError(
                f"[MmapStorage.get_slice] start must be >= 0 and step >= 1, got {start}, {step}"
            )
        avail = (self.nbytes - start) // d.itemsize
        n = avail if stop == -1 else (stop - start) // step
        if not 0 <= n <= avail:
            raise OpArgumentError(
                f"[MmapStorage.get_slice] {n} {d} items from byte {start} run past the {self.nbytes} mapped bytes"
            )
        return to_tensor(np.array(self._map[start : start + n * d.itemsize].view(d)))

"""InputSpec: the shape, dtype and name of one program input."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import dtypes as _dt

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class InputSpec:
    """One input of a static program, as in Paddle.

    ``shape`` holds ints for static dims and ``None`` or ``-1`` for a dynamic one (the
    program then serves every size there); a string names a dynamic dim, so two inputs can
    say they share it (``InputSpec(["batch", 784])``).

    >>> from framework.static import InputSpec
    >>> InputSpec(shape=[None, 784], dtype="float32")
    InputSpec(shape=(None, 784), dtype=float32, name=None)
    """

    def __init__(
        self,
        shape: Sequence[int | str | None],
        dtype: Any = "float32",
        name: str | None = None,
        stop_gradient: bool = True,
    ) -> None:
        if isinstance(shape, (int, str)) or shape is None:
            raise OpArgumentError(f"[InputSpec] shape must be a list of dims, got {shape!r}")
        dims: list[int | str | None] = []
        for d in shape:
            if d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool) and int(d) == -1):
                dims.append(None)
            elif isinstance(d, str):
                if not _NAME.match(d):
                    raise OpArgumentError(f"[InputSpec] a named dim must be an identifier, got {d!r}")
                dims.append(d)
            elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and int(d) >= 0:
                dims.append(int(d))
            else:
                raise OpArgumentError(
                    f"[InputSpec] each dim is an int >= 0, None/-1 (dynamic) or a name; got {d!r} in {list(shape)}"
                )
        self.shape = tuple(dims)
        self.dtype = _dt.as_dtype(dtype, "InputSpec")
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> InputSpec:
        """The spec of an example tensor (every dim static)."""
        return cls(tuple(tensor.shape), tensor.dtype, name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InputSpec) and (self.shape, self.dtype, self.name) == (
            other.shape,
            other.dtype,
            other.name,
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self) -> str:
        return f"InputSpec(shape={self.shape}, dtype={self.dtype}, name={self.name!r})"

"""``fw.tensor``: ``fw.tensor(data)`` makes a tensor, and ``fw.tensor.math.X`` is Paddle's module path.

Paddle code reaches functions through ``paddle.tensor``'s submodules (``paddle.tensor.math``,
``manipulation``, ``creation``, ``linalg``, ``logic``, ``search``, ``stat``, ``random``,
``attribute``, ``einsum``, ``ops``, ``array``, ``compat_softmax``); here each submodule gives
the same function as the top-level name (``fw.tensor.manipulation.reshape is fw.reshape``), or
``fw.linalg``'s, or the Tensor method of that name, or one of the few Paddle keeps here only
(``gaussian``, ``fill_constant``, ``top_p_sampling``...). A Paddle name Oarlock does not have
raises an ``AttributeError`` saying so; tests/test_paddle_names_missing.py lists those, each
with its reason. Called, ``fw.tensor`` is :func:`to_tensor`.

>>> import framework as fw
>>> fw.tensor([1.0, 2.0]).tolist()
[1.0, 2.0]
>>> fw.tensor.manipulation.reshape is fw.reshape, fw.tensor.linalg.svd is fw.linalg.svd
(True, True)
>>> import framework.tensor.math as tm
>>> tm.add(fw.ones([1]), fw.ones([1])).tolist()
[2.0]
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .._src.ops.composites import float8 as _float8
from .._src.ops.composites import norm as _norm
from .._src.ops.composites import random_fills as _random_fills
from .._src.ops.composites import sampling as _sampling
from .._src.ops.composites import tensor_array as _tensor_array
from .._src.tensor import Tensor, to_tensor
from . import _creation
from ._names import NAMES

#: Paddle names that ``framework``'s top level does not give (most are ``paddle.tensor``-only
#: in Paddle too): Oarlock's function for each, found before the top level's
_HERE: dict[str, Any] = {
    "fill_constant": _creation.fill_constant,
    "create_global_var": _creation.create_global_var,
    "create_parameter": _creation.create_parameter,
    "tensor": _creation.tensor,
    "dtype_tensor_factory": _creation.dtype_tensor_factory,
    "gaussian": _random_fills.gaussian,
    "gaussian_": _random_fills.gaussian_,
    "log_normal": _random_fills.log_normal_sample,
    "uniform_random_batch_size_like": _random_fills.uniform_random_batch_size_like,
    "softmax": _norm.softmax_compat,  # paddle.softmax is torch's (dim=None: 0 or 1 by rank)
    "top_p_sampling": _sampling.top_p_sampling,
    "fp8_fp8_half_gemm_fused": _float8.fp8_fp8_half_gemm_fused,
}

__all__ = sorted(NAMES)


class _PaddleSubmodule(types.ModuleType):
    """One ``paddle.tensor.<sub>``: its Paddle names, each resolved to Oarlock's function when it has one."""

    def __init__(self, sub: str, names: tuple[str, ...]) -> None:
        super().__init__(
            f"{__name__}.{sub}", f"Paddle's paddle.tensor.{sub} names, resolved to Oarlock's functions."
        )
        self._sub, self._names = sub, frozenset(names)

    @staticmethod
    def _find(name: str) -> Any:
        if name in _HERE:
            return _HERE[name]
        root = sys.modules["framework"]
        for space in (root, root.linalg, _tensor_array):
            fn = getattr(space, name, None)
            if callable(fn) and not isinstance(fn, types.ModuleType):
                return fn
        # a name Oarlock has only as a Tensor method (``repeat``, ``split_with_sizes``...):
        # the method, called with the tensor first, is Paddle's function
        fn = getattr(Tensor, name, None)
        return fn if callable(fn) else None

    def __getattr__(self, name: str) -> Any:
        fn = self._find(name) if name in self.__dict__.get("_names", ()) else None
        if fn is None:
            raise AttributeError(
                f"[tensor] paddle.tensor.{self._sub}.{name} is not in Oarlock"
                + (
                    ""
                    if name in self.__dict__.get("_names", ())
                    else f" (nor a name of paddle.tensor.{self._sub})"
                )
            )
        return fn

    def __dir__(self) -> list[str]:
        return sorted(n for n in self._names if self._find(n) is not None)


for _sub, _names in NAMES.items():
    _mod = _PaddleSubmodule(_sub, _names)
    sys.modules[_mod.__name__] = _mod
    globals()[_sub] = _mod


def __getattr__(name: str) -> Any:
    """``fw.tensor.<name>``: a Paddle name of any ``paddle.tensor`` submodule (``create_tensor``)."""
    for sub, names in NAMES.items():
        if name in names:
            return getattr(globals()[sub], name)
    raise AttributeError(f"[tensor] paddle.tensor.{name} is not a name of paddle.tensor")


class _TensorModule(types.ModuleType):
    """``fw.tensor`` is this module and also ``fw.tensor(data, ...)`` (:func:`to_tensor`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return to_tensor(*args, **kwargs)


sys.modules[__name__].__class__ = _TensorModule

"""Dynamic to static (Paddle's ``paddle.jit``): functions and Layers traced into programs.

A traced program (:mod:`framework.ir`) runs with the executor, and is saved and loaded for
inference.

>>> import framework as fw
>>> net = fw.jit.to_static(fw.nn.Linear(784, 10), input_spec=[fw.static.InputSpec([None, 784])])
>>> with fw.no_grad():
...     net(fw.ones([2, 784])).shape
(2, 10)
"""

from __future__ import annotations

from . import control  # noqa: F401 — registers how the to_static tracer records fw.static.nn.cond/while_loop
from .api import ConcreteProgram, StaticFunction, graph_breaks, to_static
from .convert_ops import ConversionError
from .graph_break import GraphBreak
from .io import ProgramFileError, TranslatedLayer, load, save
from .memory import memory_report
from .trace import GraphBreakError, TracedValueError, TracingError

_traced_call = StaticFunction.__call__
_TO_STATIC = [True]


def _call(self: StaticFunction, *args: object, **kwargs: object) -> object:
    if not _TO_STATIC[0]:
        return self._fn(*args, **kwargs)  # enable_to_static(False): run the Python as written
    return _traced_call(self, *args, **kwargs)


StaticFunction.__call__ = _call  # type: ignore[method-assign]  (h-d2s: fold into StaticFunction.__call__)


def enable_to_static(enable_to_static_bool: bool) -> None:
    """Turn ``to_static`` on or off for the whole process (Paddle's ``paddle.jit.enable_to_static``).

    Off, every ``to_static`` function and Layer runs its Python eagerly, as written (for
    debugging); on again, they trace and run programs. ``jit.save`` still traces.

    Args:
        enable_to_static_bool (bool): True to trace (the default state), False to run eagerly.

    Example:
        >>> import framework as fw
        >>> f = fw.jit.to_static(lambda x: x * 2)
        >>> fw.jit.enable_to_static(False)
        >>> f(fw.ones([2])).tolist()
        [2.0, 2.0]
        >>> fw.jit.enable_to_static(True)
    """
    if not isinstance(enable_to_static_bool, bool):
        raise TypeError(f"[enable_to_static] expected a bool, got {type(enable_to_static_bool).__name__}")
    _TO_STATIC[0] = enable_to_static_bool


__all__ = [
    "ConcreteProgram",
    "ConversionError",
    "GraphBreak",
    "GraphBreakError",
    "enable_to_static",
    "ProgramFileError",
    "StaticFunction",
    "TracedValueError",
    "TracingError",
    "TranslatedLayer",
    "graph_breaks",
    "load",
    "memory_report",
    "save",
    "to_static",
]

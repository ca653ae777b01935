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
from .api import ConcreteProgram, StaticFunction, enable_to_static, graph_breaks, to_static
from .convert_ops import ConversionError
from .graph_break import GraphBreak
from .io import ProgramFileError, TranslatedLayer, load, save
from .memory import memory_report
from .split import Split
from .trace import GraphBreakError, TracedValueError, TracingError

__all__ = [
    "ConcreteProgram",
    "ConversionError",
    "GraphBreak",
    "GraphBreakError",
    "enable_to_static",
    "ProgramFileError",
    "Split",
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

"""Models saved by Paddle 3's ``paddle.jit.save``, run by Oarlock on any device.

``paddle.jit.save(layer, prefix, input_spec)`` (Paddle 3, PIR) writes ``prefix.json`` (the
program: PIR serialised as JSON, see :mod:`.program`) and ``prefix.pdiparams`` (the weights,
see :mod:`.params`). ``fw.jit.load(prefix)`` and ``fw.inference.Config(prefix + ".json",
prefix + ".pdiparams")`` read both with Oarlock's own parsers (no Paddle needed), lower each
``pd_op`` op to Oarlock's op dialect through a converter table (one record per ``pd_op``
op, :mod:`.lower_math` and :mod:`.lower_nn`), and run the result as a traced program on the
chosen device. An op without a lowering is named in the error, with where it sits; a whole
model's missing ops are listed by :func:`unsupported_ops`.

>>> from framework.jit import paddle_format
>>> "pd_op.conv2d" in paddle_format.TABLE and "pd_op.batch_norm_" in paddle_format.TABLE
True
"""

from __future__ import annotations

from .loader import PaddleModel, check_supported, is_paddle_model, load, unsupported_ops
from .params import read_params
from .program import PaddleFormatError, PdOp, PdProgram, read_program
from .table import TABLE, LoweringError, lowering

__all__ = [
    "LoweringError",
    "PaddleFormatError",
    "PaddleModel",
    "PdOp",
    "PdProgram",
    "TABLE",
    "check_supported",
    "is_paddle_model",
    "load",
    "lowering",
    "read_params",
    "read_program",
    "unsupported_ops",
]

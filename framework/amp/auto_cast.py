"""``auto_cast``: run white-listed ops in float16/bfloat16 and black-listed ones in float32."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from adapter_api import OpArgumentError

from .._src import amp as _amp
from .._src import dtypes as _dt

_LEVELS = ("O0", "OD", "O1", "O2")


def _low_dtype(dtype: Any) -> Any:
    d = _dt.as_dtype(dtype, "auto_cast")
    if d not in (_dt.float16, _dt.bfloat16):
        raise OpArgumentError(f"[auto_cast] dtype must be 'float16' or 'bfloat16', got {dtype!r}")
    return d


@contextmanager
def auto_cast(
    enable: bool = True,
    custom_white_list: Iterable[str] | None = None,
    custom_black_list: Iterable[str] | None = None,
    level: str = "O1",
    dtype: str = "float16",
    use_promote: bool = True,
) -> Iterator[None]:
    """Mixed precision for the ops run inside the block (Paddle's ``paddle.amp.auto_cast``).

    ``O1``: ops on the allow list (matmul, linear, convolutions, attention) run in ``dtype``;
    ops on the deny list (exp, log, pow, sums, softmax, norms) run in float32; the rest run in
    the dtype of their inputs. ``O2``: every op not on the deny list runs in ``dtype``
    (parameters are usually cast beforehand by :func:`decorate`). ``O0``/``OD`` or
    ``enable=False``: no casting. ``custom_white_list``/``custom_black_list`` add op names.

    >>> import framework as fw
    >>> with fw.amp.auto_cast(dtype="bfloat16"):
    ...     y = fw.matmul(fw.ones([2, 3]), fw.ones([3, 2]))
    >>> str(y.dtype)
    'bfloat16'
    """
    if level not in _LEVELS:
        raise OpArgumentError(f"[auto_cast] level must be one of {_LEVELS}, got {level!r}")
    low = _low_dtype(dtype)
    white, black = set(custom_white_list or ()), set(custom_black_list or ())
    both = white & black
    if both:
        raise OpArgumentError(
            f"[auto_cast] ops {sorted(both)} are in both custom_white_list and custom_black_list"
        )
    if not enable or level in ("O0", "OD"):
        token = _amp.POLICY.set(None)
    else:
        allow = (_amp.op_class("allow") | white) - black
        deny = (_amp.op_class("deny") | black) - white
        token = _amp.POLICY.set(_amp.AmpPolicy(level, low, frozenset(allow), frozenset(deny)))
    try:
        yield
    finally:
        _amp.POLICY.reset(token)


amp_guard = auto_cast


def white_list() -> dict[str, frozenset[str]]:
    """The default op lists, from the OpDefs' AMP classes: ``{"allow": ..., "deny": ...}``."""
    return {"allow": _amp.op_class("allow"), "deny": _amp.op_class("deny")}

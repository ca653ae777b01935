"""Unique names (Paddle's ``paddle.utils.unique_name``): ``generate("fc")`` gives ``fc_0``, ``fc_1``...

>>> import framework as fw
>>> with fw.utils.unique_name.guard():
...     fw.utils.unique_name.generate("fc"), fw.utils.unique_name.generate("fc")
('fc_0', 'fc_1')
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["UniqueNameGenerator", "generate", "guard", "switch"]


class UniqueNameGenerator:
    """Counts per key: ``generator("fc")`` gives ``prefix + "fc_0"``, then ``"fc_1"``...

    Example:
        >>> import framework as fw
        >>> g = fw.utils.unique_name.UniqueNameGenerator("net/")
        >>> g("w"), g("w"), g("b")
        ('net/w_0', 'net/w_1', 'net/b_0')
    """

    def __init__(self, prefix: str | None = None) -> None:
        self.prefix = prefix or ""
        self.ids: dict[str, int] = {}

    def __call__(self, key: str) -> str:
        n = self.ids.get(key, 0)
        self.ids[key] = n + 1
        return f"{self.prefix}{key}_{n}"


_GLOBAL = UniqueNameGenerator()
_current: contextvars.ContextVar[UniqueNameGenerator | None] = contextvars.ContextVar(
    "oarlock_unique_name", default=None
)


def _generator() -> UniqueNameGenerator:
    g = _current.get()
    return _GLOBAL if g is None else g


def generate(key: str) -> str:
    """A name ``key_N`` not given before by the current generator.

    Example:
        >>> import framework as fw
        >>> with fw.utils.unique_name.guard():
        ...     fw.utils.unique_name.generate("linear")
        'linear_0'
    """
    return _generator()(key)


def switch(new_generator: UniqueNameGenerator | None = None) -> UniqueNameGenerator:
    """Make ``new_generator`` (default a fresh one) current; returns the one it replaces.

    Example:
        >>> import framework as fw
        >>> old = fw.utils.unique_name.switch()
        >>> fw.utils.unique_name.generate("x")
        'x_0'
        >>> _ = fw.utils.unique_name.switch(old)
    """
    old = _generator()
    _current.set(new_generator if new_generator is not None else UniqueNameGenerator())
    return old


@contextlib.contextmanager
def guard(new_generator: str | UniqueNameGenerator | None = None) -> Iterator[None]:
    """A block with its own generator (a prefix string, a generator, or a fresh one).

    Example:
        >>> import framework as fw
        >>> with fw.utils.unique_name.guard("block/"):
        ...     fw.utils.unique_name.generate("w")
        'block/w_0'
    """
    gen = (
        UniqueNameGenerator(new_generator)
        if isinstance(new_generator, str) or new_generator is None
        else new_generator
    )
    token = _current.set(gen)
    try:
        yield
    finally:
        _current.reset(token)

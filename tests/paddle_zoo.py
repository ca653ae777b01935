"""Paddle's own model-zoo files run on Oarlock: the source of ``paddle/vision/models/*.py`` from
the installed Paddle wheel, read unchanged and executed as modules in which ``paddle`` means
``framework``.

Nothing is copied into the repository: each file is read from site-packages at test time. The
modules get an ``__import__`` of their own that answers ``import paddle`` / ``from paddle.x import
y`` / ``from ..ops import z`` with the matching ``framework`` module, except the zoo's own files
(``paddle.vision.models.*``), which are loaded from the wheel the same way. Real Paddle stays
importable in the same process as the oracle.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import os
import types
from typing import Any

import framework as fw

_ZOO = "paddle.vision.models"
_CACHE: dict[str, types.ModuleType] = {}


def zoo_dir() -> str | None:
    """The directory of the installed wheel's model zoo (None without Paddle)."""
    spec = importlib.util.find_spec("paddle")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = os.path.join(list(spec.submodule_search_locations)[0], "vision", "models")
    return d if os.path.isdir(d) else None


def _framework_module(name: str) -> types.ModuleType:
    """``paddle.a.b`` -> ``framework.a.b``; Paddle's ``base.param_attr`` and
    ``utils.download`` fall back to small stand-ins while framework has none."""
    target = "framework" + name[len("paddle") :]
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError:
        pass
    if name == "paddle.base.param_attr":
        m = types.ModuleType(target)
        m.ParamAttr = _ParamAttr
        return m
    if name == "paddle.utils.download":
        m = types.ModuleType(target)

        def get_weights_path_from_url(url: str, md5sum: str | None = None) -> str:
            raise RuntimeError(f"[paddle_zoo] pretrained weights are not downloaded ({url})")

        m.get_weights_path_from_url = get_weights_path_from_url
        return m
    if name in ("paddle.base", "paddle.utils"):
        return types.ModuleType(target)
    raise ModuleNotFoundError(f"[paddle_zoo] Paddle's model zoo imports {name}; framework has no {target}")


class _ParamAttr:
    """What the zoo reads of ``paddle.ParamAttr``: an initializer and a learning rate."""

    def __init__(self, name: Any = None, initializer: Any = None, learning_rate: float = 1.0, **kw: Any):
        self.name, self.initializer, self.learning_rate = name, initializer, learning_rate
        self.trainable = kw.get("trainable", True)


def _resolve(name: str, package: str | None, level: int) -> str:
    if level == 0:
        return name
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{name}" if name else base


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    full = _resolve(name, (globals or {}).get("__package__"), level)
    if full != "paddle" and not full.startswith("paddle."):
        return builtins.__import__(name, globals, locals, fromlist, level)
    mod = _module(full)
    if fromlist:
        for item in fromlist:
            if not hasattr(mod, item) and full == _ZOO:
                setattr(mod, item, _module(f"{full}.{item}"))
        return mod
    if level:
        return mod
    return _module("paddle")


def _module(full: str) -> types.ModuleType:
    if full.startswith(_ZOO + "."):
        return load(full[len(_ZOO) + 1 :])
    if full == _ZOO:
        pkg = _CACHE.get(_ZOO)
        if pkg is None:
            pkg = _CACHE[_ZOO] = types.ModuleType(_ZOO)
            pkg.__path__ = []
        return pkg
    return _framework_module(full)


def load(name: str) -> types.ModuleType:
    """The zoo's module ``name`` (e.g. ``"resnet"``), executed with ``paddle`` = ``framework``."""
    full = f"{_ZOO}.{name}"
    if full in _CACHE:
        return _CACHE[full]
    d = zoo_dir()
    if d is None:
        raise RuntimeError("[paddle_zoo] Paddle is not installed")
    path = os.path.join(d, f"{name}.py")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    mod = types.ModuleType(full)
    mod.__file__, mod.__package__ = path, _ZOO
    mod.__builtins__ = {**builtins.__dict__, "__import__": _import}
    _CACHE[full] = mod
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


assert fw  # framework must import before the zoo is run on it

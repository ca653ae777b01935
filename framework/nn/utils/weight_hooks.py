"""Reparametrised weights (Paddle's ``paddle.nn.utils.weight_norm`` / ``spectral_norm``).

Each replaces a layer's parameter by others and recomputes it before every forward (a forward
pre-hook), so autograd reaches the new parameters through the recomputation.
"""

from __future__ import annotations

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from ..._src.ops import math as M
from ..._src.ops import random as _R
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ..layer import Layer, Parameter


def _norm_except(v: Tensor, dim: int | None) -> Tensor:
    """The L2 norm of ``v`` over every axis but ``dim`` (all axes for None), keeping dims."""
    if dim is None:
        return M.sqrt(M.sum(v * v))
    axes = [a for a in range(v.ndim) if a != dim]
    return M.sqrt(M.sum(v * v, axis=axes, keepdim=True)) if axes else M.abs(v)


class _WeightNorm:
    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, dim

    def compute(self, layer: Layer) -> Tensor:
        g, v = getattr(layer, self.name + "_g"), getattr(layer, self.name + "_v")
        if self.dim is None:
            return v * (g / _norm_except(v, None))
        shape = [1] * v.ndim
        shape[self.dim] = v.shape[self.dim]
        return v * (S.reshape(g, shape) / _norm_except(v, self.dim))

    def __call__(self, layer: Layer, inputs: tuple) -> None:
        object.__setattr__(layer, self.name, self.compute(layer))


def _param(layer: Layer, name: str, fn: str) -> Parameter:
    p = layer._parameters.get(name)
    if not isinstance(p, Parameter):
        raise OpArgumentError(
            f"[{fn}] {type(layer).__name__} has no parameter '{name}' (it has {sorted(layer._parameters)})"
        )
    return p


def weight_norm(layer: Layer, name: str = "weight", dim: int | None = 0) -> Layer:
    """Reparametrise ``layer.<name>`` as ``g * v / ||v||`` (Paddle's ``weight_norm``).

    The parameter is replaced by ``<name>_g`` (the norms, one per index of ``dim``; a scalar
    for ``dim=None``) and ``<name>_v`` (the direction), the state dict's names in Paddle;
    ``<name>`` is recomputed from them before each forward.

    Args:
        layer (Layer): the layer.
        name (str): the parameter.
        dim (int | None): the axis whose slices keep their own norm; None: one norm for all.

    Returns:
        Layer: ``layer``.

    Example:
        >>> import framework as fw
        >>> lin = fw.nn.utils.weight_norm(fw.nn.Linear(3, 4))
        >>> sorted(lin.state_dict())
        ['bias', 'weight_g', 'weight_v']
        >>> lin(fw.ones([2, 3])).shape
        (2, 4)
    """
    w = _param(layer, name, "weight_norm")
    if dim is not None:
        if not -w.ndim <= dim < w.ndim:
            raise OpArgumentError(f"[weight_norm] dim must be in [-{w.ndim}, {w.ndim}) or None, got {dim}")
        dim %= w.ndim
    hook = _WeightNorm(name, dim)
    with no_grad():
        g = _norm_except(w, dim)
        g = S.reshape(g, [w.shape[dim]] if dim is not None else [])
    del layer._parameters[name]
    layer.add_parameter(name + "_v", Parameter.from_tensor(w.detach()))  # Paddle's order: v, then g
    layer.add_parameter(name + "_g", Parameter.from_tensor(g.detach()))
    handle = layer.register_forward_pre_hook(hook)
    layer.__dict__.setdefault("_weight_norm_hooks", {})[name] = (hook, handle)
    object.__setattr__(layer, name, hook.compute(layer))
    return layer


def remove_weight_norm(layer: Layer, name: str = "weight") -> Layer:
    """Undo :func:`weight_norm`: ``<name>`` is a parameter again, holding ``g * v / ||v||``.

    Example:
        >>> import framework as fw
        >>> lin = fw.nn.utils.weight_norm(fw.nn.Linear(3, 4))
        >>> sorted(fw.nn.utils.remove_weight_norm(lin).state_dict())
        ['bias', 'weight']
    """
    hooks = layer.__dict__.get("_weight_norm_hooks", {})
    if name not in hooks:
        raise OpArgumentError(
            f"[remove_weight_norm] weight_norm was not applied to '{name}' of {type(layer).__name__}"
        )
    hook, handle = hooks.pop(name)
    with no_grad():
        w = hook.compute(layer).detach()
    handle.remove()
    del layer._parameters[name + "_g"], layer._parameters[name + "_v"]
    layer.__dict__.pop(name, None)
    layer.add_parameter(name, Parameter.from_tensor(w))
    return layer


class _SpectralNorm:
    def __init__(self, name: str, n_power_iterations: int, eps: float, dim: int) -> None:
        self.name, self.n, self.eps, self.dim = name, n_power_iterations, eps, dim

    def _matrix(self, w: Tensor) -> Tensor:
        if self.dim != 0:
            w = S.transpose(w, [self.dim] + [a for a in range(w.ndim) if a != self.dim])
        return S.reshape(w, [w.shape[0], -1])

    def _normalize(self, x: Tensor) -> Tensor:
        return x / (M.sqrt(M.sum(x * x)) + self.eps)

    def compute(self, layer: Layer, update: bool) -> Tensor:
        w = getattr(layer, self.name + "_orig")
        u, v = layer._buffers[self.name + "_u"], layer._buffers[self.name + "_v"]
        mat = self._matrix(w)
        if update:
            with no_grad():
                for _ in range(self.n):
                    v = self._normalize(M.matmul(mat, u, transpose_x=True))
                    u = self._normalize(M.matmul(mat, v))
                layer._buffers[self.name + "_u"].set_value(u)
                layer._buffers[self.name + "_v"].set_value(v)
        sigma = M.sum(u * M.matmul(mat, v))
        return w / sigma

    def __call__(self, layer: Layer, inputs: tuple) -> None:
        object.__setattr__(layer, self.name, self.compute(layer, layer.training))


def spectral_norm(
    layer: Layer,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Layer:
    """Divide ``layer.<name>`` by its largest singular value, estimated by power iteration
    (Paddle's ``spectral_norm``).

    The parameter becomes ``<name>_orig``; buffers ``<name>_u`` and ``<name>_v`` hold the
    singular vectors' estimates, advanced ``n_power_iterations`` steps per forward in training
    mode. The weight is seen as a matrix with axis ``dim`` first (default 1 for Linear and the
    transposed convolutions, else 0).

    Args:
        layer (Layer): the layer.
        name (str): the parameter.
        n_power_iterations (int): power-iteration steps per training forward.
        eps (float): added to norms.
        dim (int, optional): the weight's output axis.

    Returns:
        Layer: ``layer``.

    Example:
        >>> import framework as fw, numpy as np
        >>> _ = fw.seed(0)
        >>> lin = fw.nn.utils.spectral_norm(fw.nn.Linear(3, 4), n_power_iterations=50)
        >>> _ = lin(fw.ones([1, 3]))
        >>> round(float(np.linalg.svd(lin.weight.numpy(), compute_uv=False)[0]), 4)
        1.0
    """
    w = _param(layer, name, "spectral_norm")
    if dim is None:
        dim = (
            1
            if type(layer).__name__ in ("Linear", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose")
            else 0
        )
    if not isinstance(n_power_iterations, int) or n_power_iterations < 1:
        raise OpArgumentError(
            f"[spectral_norm] n_power_iterations must be a positive int, got {n_power_iterations!r}"
        )
    hook = _SpectralNorm(name, n_power_iterations, float(eps), dim % w.ndim)
    h = hook._matrix(w)
    del layer._parameters[name]
    layer.add_parameter(name + "_orig", w)
    with no_grad():
        u = hook._normalize(_R.normal(0.0, 1.0, [h.shape[0]], dtype=w.dtype))
        v = hook._normalize(_R.normal(0.0, 1.0, [h.shape[1]], dtype=w.dtype))
    layer.register_buffer(name + "_u", u.to(w.device))
    layer.register_buffer(name + "_v", v.to(w.device))
    layer.register_forward_pre_hook(hook)
    object.__setattr__(layer, name, hook.compute(layer, False))
    return layer

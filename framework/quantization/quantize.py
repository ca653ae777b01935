"""``QAT`` and ``PTQ`` (Paddle's ``paddle.quantization``): ``quantize`` puts quanters or
observers around every ``nn.Linear`` the config covers; ``convert`` turns the result into a
model of :class:`~framework.quantization.layers.QuantizedLinear` (int8 weights quantised once)
that ``fw.jit.save`` writes and the Predictor serves. :func:`weight_only_quantize` is the
weight-only path (int8 or int4 weights, float activations)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from adapter_api import OpArgumentError

from ..nn.common import Embedding, Linear
from ..nn.layer import Layer
from ..nn.quant import WeightOnlyEmbedding, WeightOnlyLinear
from .base import BaseObserver, BaseQuanter
from .config import QuantConfig
from .layers import QuantedLinear, QuantizedLinear
from .weight_only import METHODS, input_hessians, quantized_linear


def _replace(model: Layer, make: Any, prefix: str = "") -> int:
    """Replace each sublayer ``make(layer, full_name)`` answers with a layer for; returns the count."""
    count = 0
    for name, child in list(model.named_children()):
        full = f"{prefix}.{name}" if prefix else name
        new = make(child, full)
        if new is not None:
            model._sub_layers[name] = new
            count += 1
        else:
            count += _replace(child, make, full)
    return count


class Quantization:
    """What QAT and PTQ share: the config, ``quantize`` and ``convert``."""

    def __init__(self, config: QuantConfig) -> None:
        if not isinstance(config, QuantConfig):
            raise OpArgumentError(
                f"[{type(self).__name__}] expects a QuantConfig, got {type(config).__name__}"
            )
        self._config = config

    def quantize(self, model: Layer, inplace: bool = False) -> Layer:
        """A copy of ``model`` (or ``model`` itself with ``inplace``) with every ``nn.Linear``
        the config covers replaced by a :class:`QuantedLinear`."""
        if not isinstance(model, Layer):
            raise OpArgumentError(
                f"[{type(self).__name__}] quantize expects a Layer, got {type(model).__name__}"
            )
        model = model if inplace else copy.deepcopy(model)

        def make(layer: Layer, name: str) -> Layer | None:
            if not isinstance(layer, Linear):
                return None
            cfg = self._config._config_of(layer, name)
            if cfg.activation is None and cfg.weight is None:
                return None
            act = None if cfg.activation is None else cfg.activation._instance(layer)
            wq = None if cfg.weight is None else cfg.weight._instance(layer)
            return QuantedLinear(layer, act, wq)

        _replace(model, make)
        return model

    def convert(self, model: Layer, inplace: bool = False, remain_weight: bool = False) -> Layer:
        """Each :class:`QuantedLinear` becomes a :class:`QuantizedLinear`: its weight quantised
        once to int8 with the weight quanter's scale (kept float with ``remain_weight``), its
        input quantised with the activation quanter's scale.

        Example:
            >>> import framework as fw
            >>> from framework.quantization import PTQ, QuantConfig
            >>> from framework.quantization.observers import AbsmaxObserver
            >>> ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver(quant_axis=1)))
            >>> model = ptq.quantize(fw.nn.Sequential(fw.nn.Linear(4, 2)))
            >>> _ = model(fw.randn([8, 4]))  # calibration
            >>> ptq.convert(model)[0].weight.dtype
            dtype('int8')
        """
        model = model if inplace else copy.deepcopy(model)

        def make(layer: Layer, name: str) -> Layer | None:
            if not isinstance(layer, QuantedLinear):
                return None
            aq, wq = layer.activation_quanter, layer.weight_quanter
            for q in (aq, wq):
                if isinstance(q, BaseObserver):
                    q.cal_thresholds()
            a_scale = _scale_of(aq, name, "activation")
            w_scale = None if wq is None or remain_weight else _scale_of(wq, name, "weight")
            bits = wq.bit_length() if wq is not None else 8
            a_bits = aq.bit_length() if aq is not None else 8
            axis = wq.quant_axis() if wq is not None else -1
            return QuantizedLinear(layer, a_scale, w_scale, bits, a_bits, axis)

        _replace(model, make)
        return model


def _scale_of(q: BaseQuanter | None, name: str, what: str) -> Any:
    if q is None:
        return None
    s = q.scales()
    if s is None:
        raise RuntimeError(
            f"[quantization] the {what} quanter of layer '{name}' saw no data, so it has no scale; "
            "run the prepared model on calibration data before convert"
        )
    return s


class QAT(Quantization):
    """Quantisation-aware training: ``quantize`` inserts fake quanters (straight-through
    gradients), the model trains as usual, ``convert`` makes the int8 model.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import QAT, QuantConfig
        >>> from framework.quantization.quanters import FakeQuanterWithAbsMaxObserver
        >>> q = FakeQuanterWithAbsMaxObserver()
        >>> model = QAT(QuantConfig(activation=q, weight=q)).quantize(fw.nn.Sequential(fw.nn.Linear(4, 2)))
        >>> loss = model(fw.randn([8, 4])).square().mean(); loss.backward()
        >>> model[0].weight.grad is not None
        True
    """


class PTQ(Quantization):
    """Post-training quantisation: ``quantize`` inserts observers, the model runs on
    calibration data (eval mode), ``convert`` makes the int8 model.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import PTQ, QuantConfig
        >>> from framework.quantization.observers import HistObserver
        >>> ptq = PTQ(QuantConfig(activation=HistObserver(), weight=None))
        >>> type(ptq.quantize(fw.nn.Sequential(fw.nn.Linear(4, 2)))[0]).__name__
        'QuantedLinear'
    """


def weight_only_quantize(
    model: Layer,
    weight_dtype: str = "int8",
    group_size: int = -1,
    skip: tuple[str, ...] = (),
    inplace: bool = False,
    embedding: bool = False,
    *,
    method: str = "absmax",
    asymmetric: bool = False,
    calibration: Iterable[Any] | None = None,
    sensitive_dtype: str | None = None,
) -> Layer:
    """Replace every ``nn.Linear`` (but those whose full name is in ``skip``) with a
    :class:`~framework.nn.quant.WeightOnlyLinear`: weights int8, int4 two a byte, or fp8
    (float8_e4m3fn), with per-channel (``group_size=-1``) or group-wise scales; activations
    stay float. With ``embedding=True`` every ``nn.Embedding`` becomes a
    :class:`~framework.nn.quant.WeightOnlyEmbedding` too (scales per token row, or per group
    of ``group_size`` dims).

    How the linear weights are quantised (:mod:`framework.quantization.weight_only`):
    ``method="absmax"`` (Paddle's ``weight_quantize``), ``"search"`` (per group, the clipping
    range with the least squared reconstruction error; weighted by the inputs' mean square
    when ``calibration`` is given) or ``"gptq"`` (GPTQ error feedback through the inputs'
    Hessian; needs ``calibration``: batches the model's forward takes, a tensor or a tuple of
    arguments each, run through the float model). ``asymmetric=True`` adds a zero point per
    group (:class:`~framework.quantization.weight_only.AsymmetricWeightOnlyLinear`).

    ``sensitive_dtype``: the dtype of the embeddings and of the output head (the last
    ``nn.Linear`` whose ``out_features`` is an ``nn.Embedding``'s vocabulary: a language
    model's ``lm_head``), the layers a low-bit model loses most in. ``None`` (default)
    keeps them in int8 when ``weight_dtype`` is ``"int4"`` (per channel / per row, abs-max),
    else uses ``weight_dtype``; pass ``"int4"`` to quantise them to int4 as well.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import weight_only_quantize
        >>> m = weight_only_quantize(fw.nn.Sequential(fw.nn.Linear(64, 8)), "int4", group_size=32)
        >>> type(m[0]).__name__, m[0].weight.shape
        ('WeightOnlyLinear', (4, 64))
        >>> e = weight_only_quantize(fw.nn.Sequential(fw.nn.Embedding(10, 4)), "fp8", embedding=True)
        >>> type(e[0]).__name__, str(e[0].weight.dtype)
        ('WeightOnlyEmbedding', 'float8_e4m3fn')
    """
    if not isinstance(model, Layer):
        raise OpArgumentError(f"[weight_only_quantize] expects a Layer, got {type(model).__name__}")
    if method not in METHODS:
        raise OpArgumentError(f"[weight_only_quantize] method must be one of {METHODS}, got {method!r}")
    if method != "absmax" and weight_dtype not in ("int8", "int4"):
        raise OpArgumentError(
            f"[weight_only_quantize] method {method!r} and asymmetric quantise to int8 or int4, got "
            f"weight_dtype={weight_dtype!r}; use method='absmax' for fp8"
        )
    if asymmetric and weight_dtype not in ("int8", "int4"):
        raise OpArgumentError(
            f"[weight_only_quantize] asymmetric=True takes int8 or int4, got weight_dtype={weight_dtype!r}"
        )
    if method == "gptq" and calibration is None:
        raise OpArgumentError(
            "[weight_only_quantize] method='gptq' needs calibration: batches the model's forward takes"
        )
    if sensitive_dtype is None:
        sensitive_dtype = "int8" if weight_dtype == "int4" else weight_dtype
    model = model if inplace else copy.deepcopy(model)
    layers = dict(model.named_sublayers())
    linears = [n for n, lay in layers.items() if isinstance(lay, Linear) and n not in skip]
    vocabs = {lay.weight.shape[0] for lay in layers.values() if isinstance(lay, Embedding)}
    heads = [n for n in linears if layers[n].weight.shape[1] in vocabs]
    head = heads[-1] if heads else None
    hessians = (
        input_hessians(model, calibration, set(linears))
        if calibration is not None and method != "absmax"
        else {}
    )

    def make(layer: Layer, name: str) -> Layer | None:
        if name in skip:
            return None
        if isinstance(layer, Linear):
            if name == head and sensitive_dtype != weight_dtype:
                return WeightOnlyLinear(
                    layer, sensitive_dtype, -1 if sensitive_dtype != "int4" else group_size
                )
            return quantized_linear(layer, weight_dtype, group_size, method, asymmetric, hessians.get(name))
        if embedding and isinstance(layer, Embedding):
            dt = sensitive_dtype
            return WeightOnlyEmbedding(layer, dt, group_size if dt == weight_dtype else -1)
        return None

    _replace(model, make)
    return model

"""``ParamAttr``: how a layer creates one parameter (Paddle's ``paddle.ParamAttr``)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .. import regularizer as R


class ParamAttr:
    """A parameter's name, initializer, learning-rate scale, regularizer and trainability.

    Pass it as a layer's ``weight_attr=`` / ``bias_attr=``. ``learning_rate`` scales the
    optimizer's rate for this parameter; ``regularizer`` (an ``L1Decay``/``L2Decay``) replaces
    the optimizer's ``weight_decay`` for it; ``trainable=False`` freezes it; ``need_clip=False``
    keeps it out of gradient clipping. ``do_model_average`` is accepted and has no effect here
    (there is no ModelAverage optimizer).

    Args:
        name (str, optional): the parameter's ``name``.
        initializer (Initializer, optional): how it is drawn; default the layer's.
        learning_rate (float): scale of the learning rate for it.
        regularizer (WeightDecayRegularizer, optional): its weight decay.
        trainable (bool): whether it takes gradients.
        do_model_average (bool): accepted (no effect).
        need_clip (bool): whether gradient clipping applies to it.

    Example:
        >>> import framework as fw
        >>> attr = fw.ParamAttr(name="fc_w", initializer=fw.nn.initializer.Constant(0.5),
        ...                     learning_rate=0.1, regularizer=fw.regularizer.L2Decay(1e-4))
        >>> fc = fw.nn.Linear(2, 2, weight_attr=attr, bias_attr=fw.ParamAttr(trainable=False))
        >>> fc.weight.name, fc.weight.tolist(), fc.weight.optimize_attr["learning_rate"]
        ('fc_w', [[0.5, 0.5], [0.5, 0.5]], 0.1)
        >>> fc.bias.stop_gradient
        True
    """

    def __init__(
        self,
        name: str | None = None,
        initializer: Any = None,
        learning_rate: float = 1.0,
        regularizer: R.WeightDecayRegularizer | None = None,
        trainable: bool = True,
        do_model_average: bool = True,
        need_clip: bool = True,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise OpArgumentError(f"[ParamAttr] name must be a str or None, got {type(name).__name__}")
        if initializer is not None and not callable(initializer):
            raise OpArgumentError(
                f"[ParamAttr] initializer must be an Initializer or None, got {initializer!r}"
            )
        if regularizer is not None and not isinstance(regularizer, R.WeightDecayRegularizer):
            raise OpArgumentError(
                f"[ParamAttr] regularizer must be fw.regularizer.L1Decay/L2Decay or None, got {regularizer!r}"
            )
        if (
            isinstance(learning_rate, bool)
            or not isinstance(learning_rate, (int, float))
            or learning_rate < 0
        ):
            raise OpArgumentError(f"[ParamAttr] learning_rate must be a number >= 0, got {learning_rate!r}")
        self.name, self.initializer, self.learning_rate = name, initializer, float(learning_rate)
        self.regularizer, self.trainable = regularizer, bool(trainable)
        self.do_model_average, self.need_clip = bool(do_model_average), bool(need_clip)

    @staticmethod
    def _to_attr(arg: Any) -> Any:
        """Paddle's spellings of an attribute: None, False, a name, an initializer or a ParamAttr."""
        if arg is None or arg is False or isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if callable(arg):
            return ParamAttr(initializer=arg)
        raise OpArgumentError(
            f"[ParamAttr] a weight/bias attr must be a ParamAttr, an initializer, a name, False or None, got {arg!r}"
        )

    def __repr__(self) -> str:
        return (
            f"ParamAttr(name={self.name!r}, initializer={self.initializer!r}, learning_rate={self.learning_rate}, "
            f"regularizer={self.regularizer!r}, trainable={self.trainable})"
        )

"""Loss layers (Paddle names): CrossEntropyLoss, MSELoss, L1Loss, BCEWithLogitsLoss, BCELoss,
SmoothL1Loss, NLLLoss, KLDivLoss, MarginRankingLoss and CTCLoss, each over
:mod:`framework.nn.functional`."""

from __future__ import annotations

from typing import Any

from .._src.tensor import Tensor
from . import functional as F
from .layer import Layer


class CrossEntropyLoss(Layer):
    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        soft_label: bool = False,
        axis: int = -1,
        label_smoothing: float = 0.0,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction
        self.soft_label, self.axis, self.label_smoothing = soft_label, axis, label_smoothing

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            label,
            self.weight,
            self.ignore_index,
            self.reduction,
            self.soft_label,
            self.axis,
            label_smoothing=self.label_smoothing,
        )


class MSELoss(Layer):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.mse_loss(input, label, self.reduction)


class L1Loss(Layer):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.l1_loss(input, label, self.reduction)


class BCEWithLogitsLoss(Layer):
    def __init__(
        self, weight: Tensor | None = None, reduction: str = "mean", pos_weight: Tensor | None = None
    ) -> None:
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, logit: Tensor, label: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction, self.pos_weight)


class BCELoss(Layer):
    def __init__(
        self, weight: Tensor | None = None, reduction: str = "mean", name: str | None = None
    ) -> None:
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, label, self.weight, self.reduction)


class SmoothL1Loss(Layer):
    def __init__(self, reduction: str = "mean", delta: float = 1.0, name: str | None = None) -> None:
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, label, self.reduction, self.delta)


class NLLLoss(Layer):
    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.nll_loss(input, label, self.weight, self.ignore_index, self.reduction)


class KLDivLoss(Layer):
    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__()
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(Layer):
    def __init__(self, margin: float = 0.0, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.margin, self.reduction = margin, reduction

    def forward(self, input: Tensor, other: Tensor, label: Tensor) -> Tensor:
        return F.margin_ranking_loss(input, other, label, self.margin, self.reduction)


class CTCLoss(Layer):
    def __init__(self, blank: int = 0, reduction: str = "mean") -> None:
        super().__init__()
        self.blank, self.reduction = blank, reduction

    def forward(
        self,
        log_probs: Tensor,
        labels: Tensor,
        input_lengths: Tensor,
        label_lengths: Tensor,
        norm_by_times: bool = False,
    ) -> Tensor:
        return F.ctc_loss(
            log_probs, labels, input_lengths, label_lengths, self.blank, self.reduction, norm_by_times
        )


class TripletMarginLoss(Layer):
    """max(d(input, positive) - d(input, negative) + margin, 0) with the ``p``-norm distance."""

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        epsilon: float = 1e-6,
        swap: bool = False,
        reduction: str = "mean",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.margin, self.p, self.epsilon, self.swap, self.reduction = margin, p, epsilon, swap, reduction

    def forward(self, input: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            input, positive, negative, self.margin, self.p, self.epsilon, self.swap, self.reduction
        )


class HingeEmbeddingLoss(Layer):
    """x where the label is 1, max(0, margin - x) where it is -1."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.margin, self.reduction = margin, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, label, self.margin, self.reduction)


class CosineEmbeddingLoss(Layer):
    """1 - cos(input1, input2) where the label is 1, max(0, cos - margin) where it is -1."""

    def __init__(self, margin: float = 0, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.margin, self.reduction = margin, reduction

    def forward(self, input1: Tensor, input2: Tensor, label: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, label, self.margin, self.reduction)


class SoftMarginLoss(Layer):
    """log(1 + exp(-label * input)) (:func:`F.soft_margin_loss`)."""

    def __init__(self, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.soft_margin_loss(input, label, self.reduction)


class MultiLabelSoftMarginLoss(Layer):
    """One-vs-all logistic loss per class, averaged (:func:`F.multi_label_soft_margin_loss`)."""

    def __init__(
        self, weight: Tensor | None = None, reduction: str = "mean", name: str | None = None
    ) -> None:
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.multi_label_soft_margin_loss(input, label, self.weight, self.reduction)


class MultiMarginLoss(Layer):
    """Multi-class hinge loss (:func:`F.multi_margin_loss`)."""

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        reduction: str = "mean",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.p, self.margin, self.weight, self.reduction = p, margin, weight, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.multi_margin_loss(input, label, self.p, self.margin, self.weight, self.reduction)


class PoissonNLLLoss(Layer):
    """Negative log-likelihood of a Poisson target (:func:`F.poisson_nll_loss`)."""

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        epsilon: float = 1e-8,
        reduction: str = "mean",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.log_input, self.full, self.epsilon, self.reduction = log_input, full, epsilon, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.poisson_nll_loss(input, label, self.log_input, self.full, self.epsilon, self.reduction)


class GaussianNLLLoss(Layer):
    """Negative log-likelihood of a Gaussian target (:func:`F.gaussian_nll_loss`)."""

    def __init__(
        self, full: bool = False, epsilon: float = 1e-6, reduction: str = "mean", name: str | None = None
    ) -> None:
        super().__init__()
        self.full, self.epsilon, self.reduction = full, epsilon, reduction

    def forward(self, input: Tensor, label: Tensor, variance: Tensor) -> Tensor:
        return F.gaussian_nll_loss(input, label, variance, self.full, self.epsilon, self.reduction)


class TripletMarginWithDistanceLoss(Layer):
    """Triplet loss with a given distance (:func:`F.triplet_margin_with_distance_loss`)."""

    def __init__(
        self,
        distance_function: Any = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.distance_function, self.margin, self.swap, self.reduction = (
            distance_function,
            margin,
            swap,
            reduction,
        )

    def forward(self, input: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            input, positive, negative, self.distance_function, self.margin, self.swap, self.reduction
        )


class MultiLabelMarginLoss(Layer):
    """Multi-label hinge loss (:func:`F.multi_label_margin_loss`)."""

    def __init__(self, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.multi_label_margin_loss(input, label, self.reduction)

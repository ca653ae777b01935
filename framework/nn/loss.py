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


class RNNTLoss(Layer):
    """RNN-Transducer loss over :func:`framework.nn.functional.rnnt_loss` (Paddle's layer).

    >>> import framework as fw
    >>> loss = fw.nn.RNNTLoss(fastemit_lambda=0.0)
    >>> x = fw.zeros([1, 2, 2, 3], dtype="float64")
    >>> i32 = lambda v: fw.to_tensor(v, dtype="int32")
    >>> round(float(loss(x, i32([[1]]), i32([2]), i32([1]))), 4)
    -0.6931
    """

    def __init__(
        self, blank: int = 0, fastemit_lambda: float = 0.001, reduction: str = "mean", name: str | None = None
    ) -> None:
        super().__init__()
        self.blank, self.fastemit_lambda, self.reduction = blank, fastemit_lambda, reduction

    def forward(self, input: Tensor, label: Tensor, input_lengths: Tensor, label_lengths: Tensor) -> Tensor:
        return F.rnnt_loss(
            input, label, input_lengths, label_lengths, self.blank, self.fastemit_lambda, self.reduction
        )


class AdaptiveLogSoftmaxWithLoss(Layer):
    """Adaptive softmax over many classes (Paddle's layer, over
    :func:`framework.nn.functional.adaptive_log_softmax_with_loss`): a head scoring the classes
    below ``cutoffs[0]`` and one column per cluster, and per cluster a two-matrix projection
    ``in_features -> in_features // div_value ** (i + 1) -> cluster size``. ``forward`` returns
    each row's log-probability of its label and the loss; ``log_prob`` every class's;
    ``predict`` the most likely class.

    >>> import framework as fw
    >>> m = fw.nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[2], div_value=2.0)
    >>> out, loss = m(fw.randn([3, 4]), fw.to_tensor([0, 3, 5]))
    >>> out.shape, m.log_prob(fw.randn([3, 4])).shape, m.predict(fw.randn([3, 4])).shape
    ((3,), (3, 6), (3,))
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Any,
        weight_attr: Any = None,
        bias_attr: Any = None,
        div_value: float = 4.0,
        head_bias: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__()
        cuts = list(cutoffs)
        if (
            cuts != sorted(cuts)
            or not cuts
            or min(cuts) <= 0
            or max(cuts) > n_classes - 1
            or len(set(cuts)) != len(cuts)
            or any(int(c) != c for c in cuts)
        ):
            raise ValueError(
                f"[AdaptiveLogSoftmaxWithLoss] cutoffs must be unique increasing integers in [1, n_classes - 1 = "
                f"{n_classes - 1}], got {cuts}"
            )
        self.in_features, self.n_classes, self.div_value = in_features, n_classes, div_value
        self.cutoffs = [*cuts, n_classes]
        self.is_head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head_weight = self.create_parameter([in_features, self.head_size], weight_attr)
        self.head_bias = (
            self.create_parameter([self.head_size], bias_attr, is_bias=True) if head_bias else None
        )
        # NOTE: a plain list, as Paddle's: these are not in parameters() or the state dict
        self.tail_weights = []
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail_weights.append(
                [
                    self.create_parameter([in_features, hsz], weight_attr),
                    self.create_parameter([hsz, osz], weight_attr),
                ]
            )

    def forward(self, input: Tensor, label: Tensor) -> tuple[Tensor, Tensor]:
        return F.adaptive_log_softmax_with_loss(
            input, label, self.head_weight, self.tail_weights, self.cutoffs, self.head_bias
        )

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        from .._src.ops import shape as S

        head_lp = F.log_softmax(head_output, axis=1)
        parts = [head_lp[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cl = F.log_softmax(
                F.linear(F.linear(input, self.tail_weights[i][0]), self.tail_weights[i][1]), axis=1
            )
            parts.append(cl + head_lp[:, self.shortlist_size + i].unsqueeze(1))
        return S.concat(parts, axis=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class, [N, n_classes]."""
        return self._full_log_prob(input, F.linear(input, self.head_weight, self.head_bias))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row: float32, or int64 where no row's head picks a
        class of the shortlist (Paddle's dtypes)."""
        from .._src.ops import math as M

        head = F.linear(input, self.head_weight, self.head_bias)
        short = M.argmax(head, axis=1)
        outside = (short >= self.shortlist_size).numpy()
        if not outside.any():
            return short.astype("float32")
        full = M.argmax(self._full_log_prob(input, head), axis=1)
        if outside.all():
            return full
        # a row whose head picks a class of the shortlist keeps it; another takes the full argmax
        return M.where(short < self.shortlist_size, short, full).astype("float32")

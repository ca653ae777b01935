"""LeNet-5 (Paddle's variant for 28x28 single-channel images)."""

from __future__ import annotations

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor


class LeNet(nn.Layer):
    """LeNet-5 for 1x28x28 images.

    LeNet: two conv/ReLU/max-pool stages (``features``) and three Linear layers (``fc``)
    on 1x28x28 input; ``num_classes <= 0`` leaves the classifier out.

    >>> import framework as fw
    >>> fw.vision.models.LeNet()(fw.ones([1, 1, 28, 28])).shape
    (1, 10)
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
        )
        if num_classes > 0:
            self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, num_classes))

    def forward(self, inputs: Tensor) -> Tensor:
        x = self.features(inputs)
        return self.fc(S.flatten(x, 1)) if self.num_classes > 0 else x

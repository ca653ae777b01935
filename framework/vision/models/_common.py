"""What the zoo's models share: Paddle's channel rounding and the refusal to download weights."""

from __future__ import annotations

from adapter_api import OpArgumentError


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """``v`` rounded to a multiple of ``divisor`` (at least ``min_value``), never more than 10%
    below ``v``: the channel counts of MobileNetV2/V3 (Paddle's ``_make_divisible``).

    >>> from framework.vision.models._common import make_divisible
    >>> make_divisible(32 * 0.25), make_divisible(17)
    (8, 24)
    """
    floor = divisor if min_value is None else min_value
    out = max(floor, int(v + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * v else out


def no_pretrained(arch: str, pretrained: bool) -> None:
    """``pretrained=True`` is refused: Oarlock downloads nothing."""
    if pretrained:
        raise OpArgumentError(
            f"[vision.models] {arch}(pretrained=True): Oarlock downloads no weights; build the model with "
            f"pretrained=False and load Paddle's .pdparams yourself: model.set_state_dict(fw.load(path))"
        )

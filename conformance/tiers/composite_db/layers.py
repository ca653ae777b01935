"""Entries for the layer composites: linear algebra, norms, convolution, pooling, interpolation, attention."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import composite_reference as R
from . import CompositeInfo, _u


def linear_algebra_entries(fw: Any) -> list[CompositeInfo]:
    """matmul with transposed operands (the ``matmul_t`` composite): each flag, and for one
    flag both of the copies its decomposition may choose (the smaller operand transposed)."""
    sw = lambda a: np.swapaxes(a, -1, -2)  # noqa: E731
    return [
        CompositeInfo(
            "matmul_transpose_y",
            lambda a, b: fw.matmul(a, b, transpose_y=True),
            lambda a, b: a @ sw(b),
            lambda r: [_u(r, 3, 4), _u(r, 2, 4)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_y_batched",
            lambda a, b: fw.matmul(a, b, transpose_y=True),
            lambda a, b: a @ sw(b),
            lambda r: [_u(r, 2, 1, 4), _u(r, 2, 5, 4)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_x",
            lambda a, b: fw.matmul(a, b, transpose_x=True),
            lambda a, b: sw(a) @ b,
            lambda r: [_u(r, 3, 2), _u(r, 3, 4)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_x_batched",
            lambda a, b: fw.matmul(a, b, transpose_x=True),
            lambda a, b: sw(a) @ b,
            lambda r: [_u(r, 2, 4, 5), _u(r, 2, 4, 1)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_xy",
            lambda a, b: fw.matmul(a, b, transpose_x=True, transpose_y=True),
            lambda a, b: sw(a) @ sw(b),
            lambda r: [_u(r, 3, 2), _u(r, 4, 3)],
            (0, 1),
            op="matmul_t",
        ),
    ]


def norm_entries(F: Any) -> list[CompositeInfo]:
    """batch_norm (running and batch statistics) and instance_norm, which share the
    ``channel_norm`` composite; group_norm with and without the affine, channel-first and last."""
    pos = lambda r, n: r.uniform(0.5, 2.0, n)  # noqa: E731  (variances)
    nlc = lambda f: lambda x: np.swapaxes(f(np.swapaxes(x, 1, 2)), 1, 2)  # noqa: E731
    return [
        CompositeInfo(
            "batch_norm_eval",
            lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
            R.batch_norm_eval,
            lambda r: [_u(r, 2, 3, 2, 2), _u(r, 3, lo=-0.5, hi=0.5), pos(r, 3), _u(r, 3), _u(r, 3)],
            (0, 3, 4),
            op="channel_norm",
        ),
        CompositeInfo(
            "batch_norm_train",
            lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=True),
            lambda x, m, v, w, b: R.batch_norm_train(x, w, b),
            lambda r: [_u(r, 4, 3, 2), np.zeros(3), np.ones(3), _u(r, 3), _u(r, 3)],
            (0, 3, 4),
            op="channel_norm",
        ),
        CompositeInfo(
            "instance_norm",
            lambda x, w, b: F.instance_norm(x, weight=w, bias=b, data_format="NCL"),
            R.instance_norm,
            lambda r: [_u(r, 2, 3, 5), _u(r, 3), _u(r, 3)],
            (0, 1, 2),
            op="channel_norm",
        ),
        CompositeInfo(
            "group_norm",
            lambda x, w, b: F.group_norm(x, 2, 1e-5, w, b),
            lambda x, w, b: R.group_norm(x, 2, w, b),
            lambda r: [_u(r, 2, 4, 3, 2), _u(r, 4), _u(r, 4)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "group_norm_channel_last",
            lambda x: F.group_norm(x, 3, data_format="NLC"),
            nlc(lambda x: R.group_norm(x, 3, None, None)),
            lambda r: [_u(r, 2, 5, 6)],
            (0,),
            op="group_norm",
        ),
    ]


def spatial_entries(F: Any) -> list[CompositeInfo]:
    """conv3d, conv2d_transpose, avg_pool2d counting the padding, unfold, and interpolate in
    every mode (up in one axis and down in another, size and scale_factor, the index rules)."""
    itp = R.interpolate
    return [
        CompositeInfo(
            "conv3d",
            lambda x, w, b: F.conv3d(x, w, b),
            lambda x, w, b: R.conv3d(x, w, b, (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
            lambda r: [_u(r, 2, 2, 3, 3, 3), _u(r, 3, 2, 2, 2, 2), _u(r, 3)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "conv3d_strided_padded_dilated_groups",
            lambda x, w: F.conv3d(x, w, None, stride=(1, 2, 1), padding=1, dilation=(1, 1, 2), groups=2),
            lambda x, w: R.conv3d(x, w, None, (1, 2, 1), (1, 1, 1), (1, 1, 2), 2),
            lambda r: [_u(r, 1, 4, 4, 3, 4), _u(r, 2, 2, 2, 2, 2)],
            (0, 1),
            op="conv3d",
        ),
        CompositeInfo(
            "conv2d_transpose",
            lambda x, w, b: F.conv2d_transpose(x, w, b, stride=2, padding=1, output_padding=1),
            lambda x, w, b: R.conv2d_transpose(x, w, b, (2, 2), (1, 1), (1, 1), (1, 1), 1),
            lambda r: [_u(r, 2, 3, 3, 3), _u(r, 3, 2, 3, 3), _u(r, 2)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "conv2d_transpose_groups_dilated",
            lambda x, w: F.conv2d_transpose(
                x, w, None, stride=(1, 2), padding=(0, 1), output_padding=(1, 0), dilation=2, groups=2
            ),
            lambda x, w: R.conv2d_transpose(x, w, None, (1, 2), (0, 1), (1, 0), (2, 2), 2),
            lambda r: [_u(r, 1, 4, 3, 4), _u(r, 4, 1, 2, 3)],
            (0, 1),
            op="conv2d_transpose",
        ),
        CompositeInfo(
            "conv3d_transpose",
            lambda x, w: F.conv3d_transpose(
                x, w, None, stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0), groups=2
            ),
            lambda x, w: R.conv3d_transpose(x, w, (2, 1, 2), (1, 0, 1), (1, 0, 0), 2),
            lambda r: [_u(r, 1, 4, 2, 3, 2), _u(r, 4, 1, 2, 2, 3)],
            (0, 1),
        ),
        CompositeInfo(
            "avg_pool2d_inclusive",
            lambda x: F.avg_pool2d(x, (2, 3), (1, 2), padding=1, exclusive=False),
            lambda x: R.pool2d(x, (2, 3), (1, 2), (1, 1), "avg_inclusive"),
            lambda r: [_u(r, 1, 2, 5, 6)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "max_pool2d_ceil_mode",
            lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "max"),
            lambda r: [r.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.1],
            (0,),
            op="max_pool2d",
        ),
        CompositeInfo(
            "max_pool2d_with_mask",
            lambda x: F.max_pool2d(x, (3, 2), (2, 2), padding=(1, 0), ceil_mode=True, return_mask=True)[0],
            lambda x: R.pool2d_paddle(x, (3, 2), (2, 2), (1, 0), True, "max"),
            lambda r: [r.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.1],
            (0,),
        ),
        CompositeInfo(
            "max_pool2d_mask_positions",
            lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True, return_mask=True)[1].astype(x.dtype),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "mask"),
            lambda r: [r.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.1],
            op="max_pool2d_with_mask",
        ),
        CompositeInfo(
            "avg_pool2d_ceil_exclusive",
            lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "avg"),
            lambda r: [_u(r, 1, 2, 6, 7)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "avg_pool2d_ceil_inclusive",
            lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, exclusive=False),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "avg_inclusive"),
            lambda r: [_u(r, 1, 2, 6, 7)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "avg_pool2d_divisor_override",
            lambda x: F.avg_pool2d(x, 2, 2, padding=1, divisor_override=3),
            lambda x: R.pool2d_paddle(x, (2, 2), (2, 2), (1, 1), False, "avg", 3.0),
            lambda r: [_u(r, 1, 2, 5, 4)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "max_pool3d",
            lambda x: F.max_pool3d(x, (2, 3, 2), (2, 1, 2), padding=(1, 0, 1)),
            lambda x: R.pool3d_paddle(x, (2, 3, 2), (2, 1, 2), (1, 0, 1), "max"),
            lambda r: [r.permutation(2 * 2 * 4 * 5 * 3).reshape(2, 2, 4, 5, 3) * 0.1],
            (0,),
        ),
        CompositeInfo(
            "max_pool3d_with_mask",
            lambda x: F.max_pool3d(x, 2, 2, padding=1, return_mask=True)[0],
            lambda x: R.pool3d_paddle(x, (2, 2, 2), (2, 2, 2), (1, 1, 1), "max"),
            lambda r: [r.permutation(2 * 2 * 3 * 4 * 3).reshape(2, 2, 3, 4, 3) * 0.1],
            (0,),
        ),
        CompositeInfo(
            "max_pool3d_mask_positions",
            lambda x: F.max_pool3d(x, 2, 2, padding=1, return_mask=True)[1].astype(x.dtype),
            lambda x: R.pool3d_paddle(x, (2, 2, 2), (2, 2, 2), (1, 1, 1), "mask"),
            lambda r: [r.permutation(2 * 2 * 3 * 4 * 3).reshape(2, 2, 3, 4, 3) * 0.1],
            op="max_pool3d_with_mask",
        ),
        CompositeInfo(
            "avg_pool3d",
            lambda x: F.avg_pool3d(x, 2, (1, 2, 2), padding=1),
            lambda x: R.pool3d_paddle(x, (2, 2, 2), (1, 2, 2), (1, 1, 1), "avg"),
            lambda r: [_u(r, 1, 2, 3, 4, 3)],
            (0,),
        ),
        CompositeInfo(
            "avg_pool3d_inclusive",
            lambda x: F.avg_pool3d(x, (2, 3, 2), 2, padding=(1, 1, 0), exclusive=False),
            lambda x: R.pool3d_paddle(x, (2, 3, 2), (2, 2, 2), (1, 1, 0), "avg_inclusive"),
            lambda r: [_u(r, 1, 2, 3, 4, 4)],
            (0,),
            op="avg_pool3d",
        ),
        CompositeInfo(
            "max_pool_windows",
            lambda x: F.adaptive_max_pool2d(x, (3, 2)),
            lambda x: R.window_max(x, [R.adaptive_bounds(5, 3), R.adaptive_bounds(7, 2)]),
            lambda r: [r.permutation(2 * 2 * 5 * 7).reshape(2, 2, 5, 7) * 0.1],
            (0,),
        ),
        CompositeInfo(
            "max_pool_windows_mask_3d",
            lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), return_mask=True)[1].astype(x.dtype),
            lambda x: R.window_max(
                x, [R.adaptive_bounds(3, 2), R.adaptive_bounds(5, 3), R.adaptive_bounds(4, 2)], "mask"
            ),
            lambda r: [r.permutation(2 * 3 * 5 * 4).reshape(1, 2, 3, 5, 4) * 0.1],
            op="max_pool_windows",
        ),
        CompositeInfo(
            "max_pool_windows_fractional",
            lambda x: F.fractional_max_pool2d(x, 3, kernel_size=2, random_u=0.4),
            # Paddle's windows for L=7, O=3, k=2, u=0.4: starts 0, 2, 5
            lambda x: R.window_max(x, [[(0, 2), (2, 4), (5, 7)]] * 2),
            lambda r: [r.permutation(2 * 7 * 7).reshape(1, 2, 7, 7) * 0.1],
            (0,),
            op="max_pool_windows",
        ),
        CompositeInfo(
            "unfold",
            lambda x: F.unfold(x, [2, 3], strides=[2, 1], paddings=1, dilations=[1, 2]),
            lambda x: R.unfold(x, (2, 3), (2, 1), (1, 1), (1, 2)),
            lambda r: [_u(r, 2, 2, 5, 4)],
            (0,),
        ),
        CompositeInfo(
            "interpolate_nearest_scale",
            lambda x: F.interpolate(x, scale_factor=[2, 0.5], mode="nearest"),
            lambda x: itp(x, (6, 3), "nearest", scale=(2, 0.5)),
            lambda r: [_u(r, 1, 2, 3, 6)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bilinear",
            lambda x: F.interpolate(x, size=[7, 3], mode="bilinear"),
            lambda x: itp(x, (7, 3), "bilinear"),
            lambda r: [_u(r, 1, 2, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bilinear_align_corners",
            lambda x: F.interpolate(x, size=[7, 3], mode="bilinear", align_corners=True),
            lambda x: itp(x, (7, 3), "bilinear", align_corners=True),
            lambda r: [_u(r, 1, 2, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bicubic",
            lambda x: F.interpolate(x, size=[6, 3], mode="bicubic"),
            lambda x: itp(x, (6, 3), "bicubic"),
            lambda r: [_u(r, 1, 1, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bicubic_align_corners",
            lambda x: F.interpolate(x, size=[6, 3], mode="bicubic", align_corners=True),
            lambda x: itp(x, (6, 3), "bicubic", align_corners=True),
            lambda r: [_u(r, 1, 1, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_linear_align_mode1",
            lambda x: F.interpolate(x, scale_factor=1.5, mode="linear", align_mode=1),
            lambda x: itp(x, (7,), "linear", align_mode=1, scale=(1.5,)),
            lambda r: [_u(r, 2, 3, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_trilinear",
            lambda x: F.interpolate(x, size=[5, 2, 3], mode="trilinear"),
            lambda x: itp(x, (5, 2, 3), "trilinear"),
            lambda r: [_u(r, 1, 1, 3, 4, 2)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_area",
            lambda x: F.interpolate(x, size=[2, 3], mode="area"),
            lambda x: itp(x, (2, 3), "area"),
            lambda r: [_u(r, 1, 2, 5, 7)],
            (0,),
            op="interpolate",
        ),
    ]

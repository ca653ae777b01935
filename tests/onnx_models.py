"""Small ONNX models built with ``onnx.helper`` (no exporter here): an MLP and a ResNet-style CNN.

Weights come from a seeded numpy generator; the graphs are what an exporter writes for these
models (Conv with folded-in BatchNormalization nodes kept apart, residual Add, Relu,
GlobalAveragePool, Flatten, Gemm; MatMul + Add for the MLP), with a symbolic batch dim.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _init(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ascontiguousarray(arr), name)


def mlp(sizes: tuple[int, ...] = (784, 256, 128, 10), seed: int = 0) -> onnx.ModelProto:
    """``MatMul + Add + Relu`` layers, ``[N, sizes[0]] -> [N, sizes[-1]]``."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        inits.extend(
            [
                _init(f"fc{i}.weight", (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)),
                _init(f"fc{i}.bias", (0.1 * rng.standard_normal(b)).astype(np.float32)),
            ]
        )
        nodes += [
            helper.make_node("MatMul", [x, f"fc{i}.weight"], [f"mm{i}"]),
            helper.make_node("Add", [f"mm{i}", f"fc{i}.bias"], [f"h{i}"]),
        ]
        x = f"h{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes.append(helper.make_node("Identity", [x], ["logits"]))
    g = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", sizes[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", sizes[-1]])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def resnet(
    channels: tuple[int, ...] = (16, 32, 64),
    classes: int = 10,
    image: int = 32,
    seed: int = 0,
    blocks: int = 1,
    stem: int = 3,
    stem_stride: int = 1,
    max_pool: bool = False,
) -> onnx.ModelProto:
    """A ResNet-style CNN: stem conv (``stem`` x ``stem``, ``stem_stride``), optionally a 3x3
    stride 2 pad 1 max pool, ``blocks`` basic blocks per stage (the first of a later stage
    strided, with a 1x1 projection), global average pool, Gemm; ``[N, 3, image, image]``."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    count = [0]

    def name(p: str) -> str:
        count[0] += 1
        return f"{p}{count[0]}"

    def conv_bn(x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        w, y = name("conv.w"), name("conv")
        inits.append(
            _init(w, (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2 / (cin * k * k))).astype(np.float32))
        )
        nodes.append(
            helper.make_node(
                "Conv", [x, w], [y], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4
            )
        )
        bn = [name(p) for p in ("bn.scale", "bn.bias", "bn.mean", "bn.var")]
        inits.extend(
            [
                _init(bn[0], (1 + 0.1 * rng.standard_normal(cout)).astype(np.float32)),
                _init(bn[1], (0.1 * rng.standard_normal(cout)).astype(np.float32)),
                _init(bn[2], (0.1 * rng.standard_normal(cout)).astype(np.float32)),
                _init(bn[3], (1 + 0.1 * rng.random(cout)).astype(np.float32)),
            ]
        )
        z = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [y, *bn], [z], epsilon=1e-5))
        if relu:
            r = name("relu")
            nodes.append(helper.make_node("Relu", [z], [r]))
            return r
        return z

    x = conv_bn("x", 3, channels[0], stem, stem_stride, True)
    if max_pool:
        nodes.append(
            helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
        )
        x = "pool"
    cin = channels[0]
    for i, c in enumerate([c for c in channels for _ in range(blocks)]):
        stride = 2 if i % blocks == 0 and i > 0 else 1
        h = conv_bn(x, cin, c, 3, stride, True)
        h = conv_bn(h, c, c, 3, 1, False)
        skip = x if stride == 1 and cin == c else conv_bn(x, cin, c, 1, stride, False)
        s, r = name("add"), name("relu")
        nodes += [helper.make_node("Add", [h, skip], [s]), helper.make_node("Relu", [s], [r])]
        x, cin = r, c
    nodes += [
        helper.make_node("GlobalAveragePool", [x], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1),
    ]
    inits.extend(
        [
            _init("fc.weight", (rng.standard_normal((classes, cin)) / np.sqrt(cin)).astype(np.float32)),
            _init("fc.bias", np.zeros(classes, np.float32)),
        ]
    )
    g = helper.make_graph(
        nodes,
        "resnet_style",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, image, image])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        inits,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model


def resnet18(image: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """ResNet-18's shapes (torchvision's ``resnet18``, paddle.vision's): a 7x7 stride 2 stem,
    a 3x3 stride 2 max pool, two basic blocks per stage of 64, 128, 256, 512 channels, global
    average pool, Gemm; random weights, ``[N, 3, image, image]``."""
    return resnet((64, 128, 256, 512), classes, image, seed, blocks=2, stem=7, stem_stride=2, max_pool=True)

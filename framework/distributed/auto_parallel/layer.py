"""``shard_layer``: lay a layer's parameters out over a mesh; each rank keeps only its shard."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapter_api import OpArgumentError

from .dtensor import DistTensor, shard_tensor
from .mesh import ProcessMesh
from .placement import Replicate


def shard_layer(
    layer: Any,
    process_mesh: ProcessMesh,
    shard_fn: Callable[[str, Any, ProcessMesh], None] | None = None,
    input_fn: Any = None,
    output_fn: Any = None,
) -> Any:
    """Paddle's ``dist.shard_layer``: call ``shard_fn(name, sublayer, mesh)`` for every
    sublayer (it assigns ``sublayer.weight = dist.shard_tensor(sublayer.weight, mesh, [...])``);
    every parameter it leaves alone is replicated. Each parameter then holds only this rank's
    shard (a plain ``Parameter``, so optimizers and ``state_dict`` see shards) and carries
    ``dist_attr`` (mesh, placements, global shape), which the ops of
    :mod:`~framework.distributed.auto_parallel.functional` read.

    ``input_fn(inputs, mesh)`` / ``output_fn(outputs, mesh)`` wrap the forward, as in Paddle.
    """
    if not hasattr(layer, "named_sublayers"):
        raise OpArgumentError(f"[shard_layer] expected an nn.Layer, got {type(layer).__name__}")
    if not isinstance(process_mesh, ProcessMesh):
        raise OpArgumentError(f"[shard_layer] expected a dist.ProcessMesh, got {type(process_mesh).__name__}")
    for name, sub in [("", layer), *layer.named_sublayers()]:
        kinds = {attr: type(p) for attr, p in sub._parameters.items() if p is not None}
        if shard_fn is not None:
            shard_fn(name, sub, process_mesh)
        for attr, value in list(sub.__dict__.items()):
            if isinstance(value, DistTensor):  # shard_fn assigned a distributed parameter
                object.__delattr__(sub, attr)
                if attr not in kinds:
                    raise OpArgumentError(
                        f"[shard_layer] shard_fn set '{name}.{attr}' to a DistTensor, but it is not a "
                        f"parameter of {type(sub).__name__}; shard the layer's parameters only"
                    )
                sub.add_parameter(
                    attr, _local_parameter(kinds[attr], value, f"{name}.{attr}" if name else attr)
                )
        for attr, p in list(sub._parameters.items()):
            if p is not None and getattr(p, "dist_attr", None) is None:
                d = shard_tensor(
                    p, process_mesh, [Replicate()] * process_mesh.ndim, stop_gradient=p.stop_gradient
                )
                sub.add_parameter(attr, _local_parameter(type(p), d, f"{name}.{attr}" if name else attr))
    if input_fn is not None or output_fn is not None:
        forward = layer.forward

        def sharded_forward(*args: Any, **kwargs: Any) -> Any:
            if input_fn is not None:
                args = input_fn(args, process_mesh)
            out = forward(*args, **kwargs)
            return output_fn(out, process_mesh) if output_fn is not None else out

        object.__setattr__(layer, "forward", sharded_forward)
    return layer


def _local_parameter(kind: Any, d: DistTensor, name: str) -> Any:
    """A parameter of class ``kind`` (the layer's) holding this rank's shard of ``d``."""
    if d._local is None:
        return None
    p = kind.from_tensor(d._local, trainable=not d.stop_gradient)
    p.name = name
    p.dist_attr = (d.process_mesh, list(d.placements), tuple(d.shape))
    return p


def local_bytes(layer: Any) -> tuple[int, int]:
    """(bytes of parameters this rank holds, bytes of the whole parameters)."""
    held = whole = 0
    for p in layer.parameters():
        n = p.numel() * p.dtype.itemsize
        held += n
        attr = getattr(p, "dist_attr", None)
        full = 1
        for s in attr[2] if attr is not None else p.shape:
            full *= s
        whole += full * p.dtype.itemsize
    return held, whole

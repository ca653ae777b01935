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
    sublayer (it assigns ``sublayer.weight = dist.shard_tensor(sublayer.weight, mesh, [...])``,
    a distributed parameter); every parameter it leaves alone is replicated. The layer's
    forward is unchanged: its framework ops see distributed tensors and follow their sharding
    rules (:mod:`.spmd`). Each parameter stores only this rank's shard.

    ``input_fn(inputs, mesh)`` / ``output_fn(outputs, mesh)`` wrap the forward, as in Paddle.
    """
    if not hasattr(layer, "named_sublayers"):
        raise OpArgumentError(f"[shard_layer] expected an nn.Layer, got {type(layer).__name__}")
    if not isinstance(process_mesh, ProcessMesh):
        raise OpArgumentError(f"[shard_layer] expected a dist.ProcessMesh, got {type(process_mesh).__name__}")
    for name, sub in [("", layer), *layer.named_sublayers()]:
        if shard_fn is not None:
            shard_fn(name, sub, process_mesh)
        for attr, value in list(sub.__dict__.items()):
            if isinstance(value, DistTensor):  # shard_fn assigned a distributed non-parameter
                raise OpArgumentError(
                    f"[shard_layer] shard_fn set '{name}.{attr}' to a DistTensor, but it is not a "
                    f"parameter of {type(sub).__name__}; shard the layer's parameters only"
                )
        for attr, p in list(sub._parameters.items()):
            if p is None:
                continue
            full = f"{name}.{attr}" if name else attr
            if isinstance(p, DistTensor):
                if p.process_mesh != process_mesh:
                    raise OpArgumentError(
                        f"[shard_layer] parameter '{full}' is on {p.process_mesh}, the layer on {process_mesh}"
                    )
                p.name = p.name or full
                continue
            d = shard_tensor(p, process_mesh, [Replicate()] * process_mesh.ndim)
            d.name = full
            sub.add_parameter(attr, d)
    if input_fn is not None or output_fn is not None:
        forward = layer.forward

        def sharded_forward(*args: Any, **kwargs: Any) -> Any:
            if input_fn is not None:
                args = input_fn(args, process_mesh)
            out = forward(*args, **kwargs)
            return output_fn(out, process_mesh) if output_fn is not None else out

        object.__setattr__(layer, "forward", sharded_forward)
    return layer


def local_bytes(layer: Any) -> tuple[int, int]:
    """(bytes of parameters this rank holds, bytes of the whole parameters)."""
    held = whole = 0
    for p in layer.parameters():
        local = p._local_value() if isinstance(p, DistTensor) else p
        held += 0 if local is None else local.numel() * local.dtype.itemsize
        whole += p.numel() * p.dtype.itemsize
    return held, whole

"""Paddle's global flags (``paddle.set_flags`` / ``get_flags``): the known ones, each with what it does here."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

#: name -> (default, what setting it does in Oarlock). Paddle has hundreds of flags; these are
#: the ones training scripts commonly set. None of them changes a result: Oarlock has no cuDNN,
#: no MKL-DNN and its own caching allocator, so most are accepted and recorded only.
FLAGS: dict[str, tuple[Any, str]] = {
    "FLAGS_cudnn_deterministic": (
        False,
        "recorded only: no plugin uses cuDNN; kernels pick no algorithm by timing",
    ),
    "FLAGS_cudnn_exhaustive_search": (False, "recorded only: no cuDNN algorithm search here"),
    "FLAGS_conv_workspace_size_limit": (512, "recorded only: no cuDNN workspace here"),
    "FLAGS_cudnn_batchnorm_spatial_persistent": (False, "recorded only: no cuDNN here"),
    "FLAGS_embedding_deterministic": (0, "recorded only: embedding gradients are summed in a fixed order"),
    "FLAGS_check_nan_inf": (False, "recorded only: use fw.isfinite / GradScaler's checks instead"),
    "FLAGS_benchmark": (False, "recorded only: use fw.synchronize() around timed regions"),
    "FLAGS_use_mkldnn": (False, "recorded only: no oneDNN here; the cpu plugin uses numpy/BLAS"),
    "FLAGS_fraction_of_gpu_memory_to_use": (0.5, "recorded only: the caching allocator grows on demand"),
    "FLAGS_allocator_strategy": (
        "auto_growth",
        "recorded only: the caching allocator always grows on demand",
    ),
    "FLAGS_eager_delete_tensor_gb": (0.0, "recorded only: tensors are freed when their last reference goes"),
    "FLAGS_use_cuda_managed_memory": (False, "recorded only"),
    "FLAGS_call_stack_level": (1, "recorded only: errors carry Python tracebacks"),
    "FLAGS_enable_pir_api": (True, "recorded only: fw.jit traces to Oarlock's own IR"),
    "FLAGS_use_stride_kernel": (True, "recorded only"),
    "FLAGS_set_to_1d": (False, "recorded only: a 0-d tensor stays 0-d"),
    "FLAGS_low_precision_op_list": (0, "recorded only: fw.amp.debugging is not available"),
    "FLAGS_print_ir": (False, "recorded only: print fw.jit programs with str(program)"),
    "FLAGS_max_inplace_grad_add": (0, "recorded only"),
    "FLAGS_cpu_deterministic": (False, "recorded only: cpu reductions run in a fixed order"),
}
_values: dict[str, Any] = {}


def _check(name: Any) -> str:
    if not isinstance(name, str) or name not in FLAGS:
        known = ", ".join(sorted(FLAGS))
        raise OpArgumentError(f"[set_flags] unknown flag {name!r}; the flags known here are: {known}")
    return name


def set_flags(flags: dict[str, Any]) -> None:
    """Set Paddle global flags (``{"FLAGS_cudnn_deterministic": True}``); what each does here is in ``FLAGS``.

    Every known flag is accepted and recorded (:func:`get_flags` returns it); none changes a
    result, since Oarlock has no cuDNN, oneDNN or Paddle allocator (each flag's entry in
    ``framework.base.flags.FLAGS`` says so). An unknown flag raises, naming the known ones.

    Args:
        flags (dict[str, Any]): flag name to value.

    Example:
        >>> import framework as fw
        >>> fw.set_flags({"FLAGS_cudnn_deterministic": True})
        >>> fw.get_flags("FLAGS_cudnn_deterministic")
        {'FLAGS_cudnn_deterministic': True}
        >>> fw.set_flags({"FLAGS_cudnn_deterministic": False})
    """
    if not isinstance(flags, dict):
        raise OpArgumentError(
            f"[set_flags] expected a dict of flag name to value, got {type(flags).__name__}"
        )
    for name, value in flags.items():
        _check(name)
        default = FLAGS[name][0]
        if isinstance(default, (bool, int, float)) and not isinstance(value, (bool, int, float)):
            raise OpArgumentError(f"[set_flags] {name} takes a {type(default).__name__}, got {value!r}")
    for name, value in flags.items():
        _values[name] = (
            type(FLAGS[name][0])(value) if isinstance(FLAGS[name][0], (bool, int, float)) else value
        )


def get_flags(flags: str | list[str]) -> dict[str, Any]:
    """The values of Paddle global flags (set by :func:`set_flags`, else their defaults).

    Args:
        flags (str | list[str]): a flag name or names.

    Returns:
        dict[str, Any]: flag name to value.

    Example:
        >>> import framework as fw
        >>> fw.get_flags(["FLAGS_check_nan_inf"])
        {'FLAGS_check_nan_inf': False}
    """
    names = [flags] if isinstance(flags, str) else list(flags)
    return {n: _values.get(_check(n), FLAGS[n][0]) for n in names}

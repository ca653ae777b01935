"""Paddle's tensor arrays (``paddle.tensor.array``) and placeholders, as dynamic mode has them:
a tensor array is a Python list of tensors, written and read at an index (an int or a 1-element
tensor), and joined into one tensor by ``tensor_array_to_tensor``.

These are reached as ``fw.tensor.array.<name>`` and ``fw.tensor.<name>``, Paddle's paths (they
are not top-level names in Paddle either).
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import shape as S


def _index(name: str, i: Any) -> int:
    if isinstance(i, Tensor):
        if i.numel() != 1 or i.dtype.kind not in "iu":
            raise OpArgumentError(
                f"[{name}] i must be one integer, got a {i.dtype} tensor of shape {list(i.shape)}"
            )
        return int(i.reshape(()).item())
    if isinstance(i, bool) or not isinstance(i, int):
        raise OpArgumentError(f"[{name}] i must be an int or a 1-element integer Tensor, got {i!r}")
    return i


def create_array(dtype: Any = "float32", initialized_list: Any = None) -> list[Tensor]:
    """A tensor array: a list of tensors, empty or holding ``initialized_list``.

    Args:
        dtype (str | np.dtype): the dtype of the tensors it is to hold (checked on the initial ones).
        initialized_list (list[Tensor], optional): the initial tensors.

    Returns:
        list[Tensor]: the array.

    Example:
        >>> import framework as fw
        >>> arr = fw.tensor.array.create_array("float32")
        >>> fw.tensor.array.array_write(fw.ones([2]), 0, arr)
        [Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1., 1.])]
    """
    d = _dt.as_dtype(dtype, "create_array")
    items = list(initialized_list or [])
    for t in items:
        if not isinstance(t, Tensor) or t.dtype != d:
            raise OpArgumentError(f"[create_array] initialized_list must hold {d} tensors, got {t!r}")
    return items


def array_write(x: Tensor, i: Any, array: list[Tensor] | None = None) -> list[Tensor]:
    """Write ``x`` at position ``i`` of ``array`` (appending when ``i`` is its length).

    Args:
        x (Tensor): the tensor to store.
        i (int | Tensor): the position, at most the array's length.
        array (list[Tensor], optional): the array; a new one when omitted.

    Returns:
        list[Tensor]: ``array``.

    Example:
        >>> import framework as fw
        >>> len(fw.tensor.array.array_write(fw.ones([2]), 0))
        1
    """
    arr = [] if array is None else array
    k = _index("array_write", i)
    if not 0 <= k <= len(arr):
        raise OpArgumentError(f"[array_write] i = {k} is past the end of an array of length {len(arr)}")
    if k == len(arr):
        arr.append(x)
    else:
        arr[k] = x
    return arr


def array_read(array: list[Tensor], i: Any) -> Tensor:
    """The tensor at position ``i`` of ``array``.

    Args:
        array (list[Tensor]): the array.
        i (int | Tensor): the position.

    Returns:
        Tensor: the stored tensor.

    Example:
        >>> import framework as fw
        >>> arr = fw.tensor.array.array_write(fw.ones([2]), 0)
        >>> fw.tensor.array.array_read(arr, 0).tolist()
        [1.0, 1.0]
    """
    k = _index("array_read", i)
    if not 0 <= k < len(array):
        raise OpArgumentError(f"[array_read] i = {k} is outside an array of length {len(array)}")
    return array[k]


def array_length(array: list[Tensor]) -> int:
    """The number of tensors in ``array``.

    Args:
        array (list[Tensor]): the array.

    Returns:
        int: its length.

    Example:
        >>> import framework as fw
        >>> fw.tensor.array.array_length(fw.tensor.array.create_array("float32"))
        0
    """
    return len(array)


def tensor_array_to_tensor(
    input: list[Tensor], axis: int = 1, use_stack: bool = False, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The tensors of an array joined along ``axis`` (stacked with ``use_stack``), and each one's
    size along it.

    Args:
        input (list[Tensor]): the array.
        axis (int): the axis to join along.
        use_stack (bool): stack (a new axis) instead of concatenating.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the joined tensor, and each input's int64 size along ``axis``.

    Example:
        >>> import framework as fw
        >>> arr = [fw.ones([2, 2]), fw.ones([2, 3])]
        >>> out, sizes = fw.tensor.manipulation.tensor_array_to_tensor(arr, axis=1)
        >>> out.shape, sizes.tolist()
        ((2, 5), [2, 3])
    """
    ts = list(input)
    if not ts:
        raise OpArgumentError("[tensor_array_to_tensor] input must hold at least one Tensor")
    out = S.stack(ts, axis=axis) if use_stack else S.concat(ts, axis=axis)
    sizes = [t.shape[axis] for t in ts]
    return out, to_tensor(sizes, dtype="int64", device=ts[0].device)


def create_tensor(dtype: Any, name: str | None = None, persistable: bool = False) -> Tensor:
    """An empty 1-d tensor of ``dtype`` (Paddle's placeholder, to be assigned to later).

    Args:
        dtype (str | np.dtype): the dtype.
        name: ignored (Paddle's signature).
        persistable (bool): ignored (Paddle's static-graph flag).

    Returns:
        Tensor: shape ``[0]``.

    Example:
        >>> import framework as fw
        >>> t = fw.tensor.create_tensor("float32")
        >>> t.shape, t.dtype
        ((0,), dtype('float32'))
    """
    return C.empty([0], dtype=_dt.as_dtype(dtype, "create_tensor"))

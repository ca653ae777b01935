"""Process groups and tensor collectives over the communicators plugins register.

The core never speaks MPI: it asks the registry for the *host* communicator (the one whose
class sets ``bootstrap = True``; the CPU plugin's, on MPI), builds the world group from it,
and builds each device type's communicator from the host one (``Communicator.create``: the
unique id travels over the host communicator). See :mod:`adapter_api.communicator`.

Configuration (environment, or arguments of :func:`init_parallel_env`):

``OARLOCK_COLLECTIVE_TIMEOUT``  seconds a collective waits for a missing rank (default 300)
``OARLOCK_DISTRIBUTED_DEBUG=1`` before each collective, all-gather (op, dtype, shape, root) of
                                every rank and raise on a mismatch (one small extra collective
                                per call)
``OARLOCK_DISTRIBUTED_DEBUG``   unset (the default): the same check, right after the 1st, 2nd,
                                4th, 8th... call from each call site of each group -- a
                                collective called with another shape or dtype on some rank
                                (which MPI reduces into silently wrong values) raises on its
                                first call, at a cost that vanishes as a job runs; after, so
                                that a missing rank is reported by the collective itself
``OARLOCK_DISTRIBUTED_DEBUG=0`` no check (ranks that disagree get an MPI error, a timeout
                                naming the ranks, or for an ``all_reduce`` of different sizes
                                wrong values)

The calls checked are chosen by counting calls per call site, which every rank does alike as
long as the ranks run the same program, so the extra collective is met on every rank.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import sys
from typing import Any

from adapter_api import CommunicationError, OpArgumentError, calls_method, defines_own

from .. import _world as _world_queries
from .._src import device as _dev
from .._src import env
from .._src.plugins import host as _plugin_host
from .._src.tensor import Tensor
from .._src.tensor import empty as _empty


class ReduceOp:
    """Reduction of :func:`all_reduce`, :func:`reduce` and :func:`reduce_scatter`."""

    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


_OPS = {
    "sum": "sum",
    "avg": "avg",
    "mean": "avg",
    "max": "max",
    "min": "min",
    "prod": "prod",
    "product": "prod",
}


def _op_name(op: Any) -> str:
    name = _OPS.get(op) if isinstance(op, str) else None
    if name is None:
        name = _OPS.get(str(op).lower().rsplit(".", 1)[-1])
    if name is None:
        raise OpArgumentError(
            f"[distributed] unknown reduce op {op!r}; use ReduceOp.SUM, AVG, MAX, MIN or PROD"
        )
    return name


class Group:
    """A set of ranks (world ranks, in group order) with its communicators.

    ``rank`` is this process's rank inside the group, -1 when it is not a member.
    """

    def __init__(self, ranks: list[int], rank: int, host: Any, gid: int) -> None:
        self.ranks = ranks
        self.rank = rank
        self.nranks = len(ranks)
        self.id = gid
        self.host = host
        self._comms: dict[tuple[str, int], Any] = {}
        self._async: dict[tuple[str, int, str], bool] = {}

    @property
    def world_size(self) -> int:
        return self.nranks

    def is_member(self) -> bool:
        return self.rank >= 0

    def get_group_rank(self, world_rank: int) -> int:
        """The group rank of a world rank (-1 when it is not in the group)."""
        return self.ranks.index(world_rank) if world_rank in self.ranks else -1

    def __repr__(self) -> str:
        return f"Group(id={self.id}, ranks={self.ranks}, rank={self.rank})"

    def communicator(self, dev: _dev.Device) -> Any:
        """The communicator of this group for ``dev`` (created on first use, on every member)."""
        key = (dev.type, dev.index)
        comm = self._comms.get(key)
        if comm is not None:
            return comm
        if dev.type == _STATE["host_type"]:
            comm = self.host
        else:
            entry = _plugin_host().registry.communicators.get(dev.type)
            if entry is None:
                raise CommunicationError(
                    f"[distributed] device type '{dev.type}' has no communicator (its plugin registers "
                    f"none); move the tensor to '{_STATE['host_type']}' with .to('{_STATE['host_type']}') first"
                )
            runtime = _dev.device_type(dev.type).runtime
            comm = entry[1].create(runtime, dev.index, self.host)
            comm.timeout = self.host.timeout
        self._comms[key] = comm
        return comm

    def starts_async(self, dev: _dev.Device, method: str) -> bool:
        """Whether the communicator of this group for ``dev`` runs ``method`` (an optional
        method added to the contract after 1.0, e.g. ``"reduce_scatter_async"``) itself: its
        plugin declares that contract version and its class defines the method."""
        key = (dev.type, dev.index, method)
        got = self._async.get(key)
        if got is None:
            comm = self.communicator(dev)
            reg = _plugin_host()
            entry = reg.registry.communicators.get(dev.type)  # (plugin, factory); the host's too
            record = reg.records.get(entry[0]) if entry is not None else None
            contract = record.contract if record is not None else None
            got = calls_method(contract, "Communicator", method) and defines_own(comm, method)
            self._async[key] = got
        return got


_STATE: dict[str, Any] = {"world": None, "host_type": "cpu", "debug": False, "groups": 0, "activity": None}


def _host_entry() -> tuple[str, Any]:
    comms = _plugin_host().registry.communicators
    for name in sorted(comms, key=lambda n: n != "cpu"):
        factory = comms[name][1]
        if getattr(factory, "bootstrap", False):
            return name, factory
    raise CommunicationError(
        "[distributed] no plugin registers a host (bootstrap) communicator; the CPU plugin provides "
        "one on MPI: pip install 'oarlock[dist]' (mpi4py and mpich)"
    )


def init_parallel_env(timeout: float | None = None, debug: bool | None = None) -> Group:
    """Join the processes ``mpiexec`` (or ``oarlock launch``) started; returns the world group.

    Safe to call twice. In a plain ``python`` process it makes a world of one.

    :param timeout: seconds a collective waits for a missing rank before raising
        :class:`CommunicationError` (default ``OARLOCK_COLLECTIVE_TIMEOUT`` or 300).
    :param debug: ``True``: check op, dtype and shape across ranks before each collective;
        ``False``: never; ``None`` (default, unless ``OARLOCK_DISTRIBUTED_DEBUG`` says): at the
        1st, 2nd, 4th... call of each call site.

    >>> import framework as fw
    >>> g = fw.distributed.init_parallel_env()
    >>> fw.distributed.get_world_size() >= 1
    True
    """
    world = _STATE["world"]
    if timeout is None and os.environ.get("OARLOCK_COLLECTIVE_TIMEOUT"):
        timeout = float(os.environ["OARLOCK_COLLECTIVE_TIMEOUT"])
    if debug is None:
        debug = (
            None
            if os.environ.get("OARLOCK_DISTRIBUTED_DEBUG") is None
            else env.flag("OARLOCK_DISTRIBUTED_DEBUG")
        )
    _STATE["debug"] = debug if debug is None else bool(debug)
    if world is None:
        if timeout is not None:  # the host communicator reads it while it starts (contract)
            os.environ["OARLOCK_COLLECTIVE_TIMEOUT"] = str(float(timeout))
        name, cls = _host_entry()
        rank, size = cls.world()
        runtime = _dev.device_type(name).runtime
        comm = cls(runtime, 0, rank, size, b"")
        _STATE["host_type"] = name
        _check_launcher_size(size)
        world = _STATE["world"] = Group(list(range(size)), rank, comm, 0)
    if timeout is not None:
        world.host.timeout = float(timeout)
        for c in world._comms.values():
            c.timeout = float(timeout)
    _record_activity(world)
    return world


def _check_launcher_size(size: int) -> None:
    """The launcher started N processes: the communicator must see a world of N."""
    started = os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE")
    if started and started.isdigit() and int(started) != size:
        raise CommunicationError(
            f"[distributed] init_parallel_env: the launcher started {started} processes but the "
            f"host communicator sees a world of {size}: the ranks loaded another MPI library than "
            "the launcher's (e.g. Open MPI's mpiexec with MPICH's libmpi); start them with "
            "'oarlock launch', which points mpi4py at the launcher's library, or set MPI4PY_LIBMPI "
            "to the libmpi of the mpiexec you use"
        )


def _record_activity(world: Group) -> None:
    """Under ``oarlock launch``: keep the launcher told which collective this rank is in."""
    from .supervisor import JOB_ENV, Activity

    folder = os.environ.get(JOB_ENV)
    act = _STATE["activity"]
    if act is not None:
        act.timeout = float(world.host.timeout)
    elif folder and world.nranks > 1:
        act = _STATE["activity"] = Activity(folder, world.rank, world.host.timeout)
        # runs before mpi4py's MPI_Finalize (registered earlier, run later)
        atexit.register(act.state, "exiting", "(in MPI_Finalize, or an atexit handler)")


class _Doing:
    """``with _Doing("all_reduce(sum)", t):`` records the collective this rank waits in (under
    ``oarlock launch``), so that a report can say where each rank was."""

    __slots__ = ("act",)

    def __init__(self, what: str, t: Tensor | None, peer: str = "") -> None:
        self.act = act = _STATE["activity"]
        if act is not None:
            of = f" of {t.numel()} {t.dtype.name} on {t.device}" if t is not None else ""
            act.enter(f"{what}{of}{peer}")

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if self.act is not None:
            if kind is None:
                self.act.leave()
            else:
                self.act.fail(f"{kind.__name__}: {value}")


def is_initialized() -> bool:
    return _STATE["world"] is not None


def _world() -> Group:
    return _STATE["world"] or init_parallel_env()


def _group(group: Group | None) -> Group:
    return _world() if group is None else group


def get_rank(group: Group | None = None) -> int:
    """This process's rank in ``group`` (default: the world). Before ``init_parallel_env`` it
    reads the launcher's environment (``PMI_RANK``), else 0."""
    if group is None and _STATE["world"] is None:
        return int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    return _group(group).rank


def get_world_size(group: Group | None = None) -> int:
    """Number of ranks in ``group`` (default: the world); before ``init_parallel_env`` read
    from the launcher's environment (``PMI_SIZE``), else 1."""
    if group is None and _STATE["world"] is None:
        return int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    return _group(group).nranks


# the layers below this package (io's sampler, nn's SyncBatchNorm) ask the world through it
_world_queries.register(get_rank, get_world_size, is_initialized)


def new_group(ranks: list[int] | None = None, timeout: float | None = None) -> Group:
    """A group of the given world ranks; every rank of the world must call it, in the same
    order as the other ``new_group`` calls. Non-members get a group with ``rank == -1``."""
    world = _world()
    ranks = list(range(world.nranks)) if ranks is None else [int(r) for r in ranks]
    bad = [r for r in ranks if not 0 <= r < world.nranks]
    if bad or len(set(ranks)) != len(ranks) or not ranks:
        raise OpArgumentError(
            f"[new_group] ranks must be distinct world ranks in [0, {world.nranks}), got {ranks}"
        )
    sub = world.host.split(ranks)
    _STATE["groups"] += 1
    if sub is not None and timeout is not None:
        sub.timeout = float(timeout)
    rank = ranks.index(world.rank) if world.rank in ranks else -1
    return Group(ranks, rank, sub, _STATE["groups"])


def destroy_process_group(group: Group | None = None) -> None:
    """Release the communicators of ``group`` (default: every group and the world)."""
    g = _STATE["world"] if group is None else group
    if g is None:
        return
    for c in {id(c): c for c in [*g._comms.values(), g.host] if c is not None}.values():
        c.destroy()
    g._comms.clear()
    if group is None or group is _STATE["world"]:
        _STATE["world"] = None


# -- tasks ---------------------------------------------------------------------------------
class Task:
    """What a collective returns with ``sync_op=False``: ``wait()`` blocks until it finished.

    ``all_reduce`` with ``sync_op=False`` only starts the reduction where the communicator
    runs it asynchronously (the cpu plugin's, on MPI): read the tensor after ``wait()``.
    ``is_completed()`` lets the transfer progress and says whether it finished.
    """

    def __init__(
        self, dev: _dev.Device | None, pending: Any = None, what: str = "", keep: tuple[Tensor, ...] = ()
    ) -> None:
        self._pending = pending  # adapter_api.communicator.PendingCollective, or None
        self._what = what
        self._keep = keep if pending is not None else ()  # the buffers it reads or writes, alive until done
        self._event = None
        if dev is not None:
            t = _dev.device_type(dev.type)
            s = t.stream(dev.index)
            if s is not None:
                ev = t.runtime.create_event(dev.index)
                t.runtime.record_event(ev, s)
                self._event = (t.runtime, ev)

    def wait(self) -> bool:
        p = self._pending
        if p is not None:
            with _Doing(self._what, None):
                p.wait()
            self._pending, self._keep = None, ()
        if self._event is not None:
            rt, ev = self._event
            rt.synchronize_event(ev)
        return True

    def is_completed(self) -> bool:
        if self._pending is not None:
            if not self._pending.test():
                return False
            self._pending, self._keep = None, ()
        if self._event is None:
            return True
        rt, ev = self._event
        return bool(rt.query_event(ev))


# -- helpers -------------------------------------------------------------------------------
def _check_tensor(name: str, t: Any) -> Tensor:
    if not isinstance(t, Tensor):
        raise OpArgumentError(
            f"[{name}] expected a Tensor, got {type(t).__name__}; make one with fw.to_tensor"
        )
    return t


def _stream(t: Tensor) -> Any:
    return _dev.device_type(t.device.type).stream(t.device.index)


def _debug_check(g: Group, what: str, t: Tensor | None, **extra: Any) -> None:
    """All-gather a short description of this call from every rank and compare."""
    mine = {"op": what, **extra}
    if t is not None:
        mine.update(dtype=t.dtype.name, shape=list(t.shape), device=t.device.type)
    got = [json.loads(b) for b in g.host.all_gather_bytes(json.dumps(mine, sort_keys=True).encode())]
    if any(d != got[0] for d in got):
        lines = "\n".join(f"  rank {g.ranks[i]}: {d}" for i, d in enumerate(got))
        raise CommunicationError(
            f"[distributed] {what}: the ranks disagree on the call (op, dtype, shape, root):\n{lines}\n"
            "make every rank call the same collective with tensors of the same shape and dtype"
        )


#: calls seen per (group, call site): the check runs at the 1st, 2nd, 4th... (see the module)
_CALLS: dict[tuple, int] = {}
_HERE = __file__


def _call_site(gid: int, name: str) -> tuple:
    """The first frames outside this file that led to this collective: a key every rank running
    the same program computes alike."""
    f, where = sys._getframe(2), [gid, name]
    while f is not None and len(where) < 8:
        if f.f_code.co_filename != _HERE:
            where += (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return tuple(where)


def _should_check(g: Group, name: str) -> bool:
    mode = _STATE["debug"]
    if mode is True:
        return True
    if mode is False or g.nranks < 2:
        return False
    key = _call_site(g.id, name)
    n = _CALLS[key] = _CALLS.get(key, 0) + 1
    return n & (n - 1) == 0  # 1, 2, 4, 8, ...


def _prepare(name: str, t: Tensor, group: Group | None, **extra: Any) -> tuple[Group, Any] | None:
    _STATE.pop("pending", None)  # a check left by a collective that raised
    g = _group(group)
    if not g.is_member():
        return None
    if _STATE["debug"] is True:
        _debug_check(g, name, t, **extra)  # before: a mismatched call never runs
    elif _should_check(g, name):
        # NOTE: the default check runs after the collective (see _finish): a rank that died or
        # never came is then reported by the collective itself, naming it, not by the check
        _STATE["pending"] = (g, name, t, extra)
    return g, g.communicator(t.device)


def _finish(
    t: Tensor | None,
    sync_op: bool,
    written: str | None = None,
    started: Any = None,
    what: str = "",
    keep: tuple[Tensor, ...] = (),
) -> Task | None:
    """The collective's task; ``written``: the collective wrote ``t`` in place (its version is
    bumped, so that a backward that saved ``t`` before does not read the new value silently);
    ``started``: the communicator's PendingCollective, which the task's ``wait`` finishes;
    ``keep``: tensors the started collective reads (a stacked input), alive until then."""
    pending = _STATE.pop("pending", None)
    if pending is not None:
        g, name, tensor, extra = pending
        _debug_check(g, name, tensor, **extra)
    if written is not None and t is not None:
        t._bump_version(f"distributed.{written}")
    if sync_op:
        return None
    return Task(None, started, what, keep) if t is None else Task(t.device, started, what, (t, *keep))


def _group_rank(g: Group, world_rank: int, what: str) -> int:
    r = g.get_group_rank(int(world_rank))
    if r < 0:
        raise OpArgumentError(
            f"[{what}] rank {world_rank} is not in the group {g.ranks}; pass a world rank of the group"
        )
    return r


# -- collectives ---------------------------------------------------------------------------
def all_reduce(
    tensor: Tensor, op: Any = ReduceOp.SUM, group: Group | None = None, sync_op: bool = True
) -> Task | None:
    """Reduce ``tensor`` over the ranks of ``group``, in place on every rank.

    >>> import framework as fw
    >>> x = fw.to_tensor([1.0, 2.0])
    >>> _ = fw.distributed.all_reduce(x)   # in a world of one, x is unchanged
    >>> x.numpy().tolist()
    [1.0, 2.0]
    """
    t = _check_tensor("all_reduce", tensor)
    name = _op_name(op)
    p = _prepare("all_reduce", t, group, reduce=name)
    if p is None:
        return None
    nv = t.native()
    what = f"all_reduce({name})"
    with _Doing(what, t):
        if sync_op:
            p[1].all_reduce(nv, nv, name, _stream(t))
            return _finish(t, sync_op, written="all_reduce")
        started = p[1].all_reduce_async(nv, nv, name, _stream(t))
    return _finish(t, sync_op, written="all_reduce", started=started, what=f"wait for {what}")


def reduce(
    tensor: Tensor, dst: int = 0, op: Any = ReduceOp.SUM, group: Group | None = None, sync_op: bool = True
) -> Task | None:
    """Reduce ``tensor`` over the group into ``tensor`` on world rank ``dst`` (others keep theirs)."""
    t = _check_tensor("reduce", tensor)
    name = _op_name(op)
    p = _prepare("reduce", t, group, reduce=name, root=int(dst))
    if p is None:
        return None
    g, comm = p
    root = _group_rank(g, dst, "reduce")
    nv = t.native()
    with _Doing(f"reduce({name})", t, f" to rank {dst}"):
        comm.reduce(nv, nv, name, root, _stream(t))
    return _finish(t, sync_op, written="reduce")


def broadcast(tensor: Tensor, src: int = 0, group: Group | None = None, sync_op: bool = True) -> Task | None:
    """Copy ``tensor`` of world rank ``src`` into ``tensor`` on every rank of the group."""
    t = _check_tensor("broadcast", tensor)
    p = _prepare("broadcast", t, group, root=int(src))
    if p is None:
        return None
    g, comm = p
    root = _group_rank(g, src, "broadcast")
    with _Doing("broadcast", t, f" from rank {src}"):
        comm.broadcast(t.native(), root, _stream(t))
    return _finish(t, sync_op, written="broadcast")


def _slices(t: Tensor, n: int) -> list[Tensor]:
    """``n`` tensors sharing ``t``'s storage: its rows along axis 0."""
    shape = t.shape[1:]
    step = math.prod(shape) * t.dtype.itemsize
    return [Tensor._make(t._block, t._offset + i * step, shape, t.dtype, t.device) for i in range(n)]


def all_gather(
    tensor_list: list[Tensor] | Tensor, tensor: Tensor, group: Group | None = None, sync_op: bool = True
) -> Task | None:
    """Every rank's ``tensor``, in rank order: appended to ``tensor_list`` (a list), or written
    into ``tensor_list`` when it is a tensor of shape ``(nranks, *tensor.shape)``."""
    t = _check_tensor("all_gather", tensor)
    p = _prepare("all_gather", t, group)
    if p is None:
        return None
    g, comm = p
    if isinstance(tensor_list, Tensor):
        out = tensor_list
        want = (g.nranks, *t.shape)
        if out.numel() != math.prod(want) or out.dtype != t.dtype or out.device != t.device:
            raise OpArgumentError(
                f"[all_gather] the output tensor must hold {want} {t.dtype} on {t.device}, got "
                f"{out.shape} {out.dtype} on {out.device}"
            )
    else:
        out = _empty((g.nranks, *t.shape), t.dtype, t.device)
    with _Doing("all_gather", t):
        comm.all_gather(t.native(), out.native(), _stream(t))
    if not isinstance(tensor_list, Tensor):
        tensor_list.extend(_slices(out, g.nranks))
    return _finish(t, sync_op)


def reduce_scatter(
    tensor: Tensor,
    tensor_list: list[Tensor] | Tensor,
    op: Any = ReduceOp.SUM,
    group: Group | None = None,
    sync_op: bool = True,
) -> Task | None:
    """``tensor`` = this rank's part of the reduction of every rank's ``tensor_list`` (a list
    of ``nranks`` tensors shaped like ``tensor``, or one tensor ``nranks`` times larger).
    ``sync_op=False`` starts it asynchronously where the communicator can
    (:func:`has_async_reduce_scatter`), else it has finished when the task comes back."""
    from .._src.ops import shape as _shape

    t = _check_tensor("reduce_scatter", tensor)
    name = _op_name(op)
    p = _prepare("reduce_scatter", t, group, reduce=name)
    if p is None:
        return None
    g, comm = p
    if isinstance(tensor_list, Tensor):
        src = tensor_list
    else:
        if len(tensor_list) != g.nranks:
            raise OpArgumentError(
                f"[reduce_scatter] tensor_list must hold {g.nranks} tensors, got {len(tensor_list)}"
            )
        src = _shape.stack(list(tensor_list), axis=0)
    if src.numel() != t.numel() * g.nranks or src.dtype != t.dtype:
        raise OpArgumentError(
            f"[reduce_scatter] the input must hold {g.nranks} x {t.shape} {t.dtype}, got {src.shape} {src.dtype}"
        )
    what = f"reduce_scatter({name})"
    with _Doing(what, t):
        if sync_op or not g.starts_async(t.device, "reduce_scatter_async"):
            comm.reduce_scatter(src.native(), t.native(), name, _stream(t))
            return _finish(t, sync_op, written="reduce_scatter")
        started = comm.reduce_scatter_async(src.native(), t.native(), name, _stream(t))
    return _finish(
        t, sync_op, written="reduce_scatter", started=started, what=f"wait for {what}", keep=(src,)
    )


def has_async_reduce_scatter(group: Group | None, device: Any) -> bool:
    """Whether ``reduce_scatter(..., sync_op=False)`` over ``group`` (default: the world) on
    ``device`` starts the reduce-scatter without waiting for it: the device's communicator
    comes from a plugin declaring contract 1.3 or newer and defines ``reduce_scatter_async``
    (see :mod:`adapter_api.communicator`). Where not, it has finished when the task comes back,
    and the gradient buckets of ZeRO stages 2 and 3 all-reduce asynchronously instead.

    >>> import framework as fw, framework.distributed as dist
    >>> dist.collective.has_async_reduce_scatter(None, fw.zeros([1]).device)  # the cpu plugin's MPI
    True
    """
    g = _group(group)
    dev = device if isinstance(device, _dev.Device) else _dev.parse(device)
    return g.starts_async(dev, "reduce_scatter_async")


def alltoall(
    in_tensor_list: list[Tensor],
    out_tensor_list: list[Tensor],
    group: Group | None = None,
    sync_op: bool = True,
) -> Task | None:
    """Send ``in_tensor_list[j]`` to rank ``j``; append what rank ``i`` sent to ``out_tensor_list``
    (Paddle's argument order)."""
    from .._src.ops import shape as _shape

    g = _group(group)
    if len(in_tensor_list) != g.nranks:
        raise OpArgumentError(
            f"[alltoall] in_tensor_list must hold {g.nranks} tensors, got {len(in_tensor_list)}"
        )
    src = _shape.stack(list(in_tensor_list), axis=0)
    out = _empty(src.shape, src.dtype, src.device)
    task = alltoall_single(src, out, group=group, sync_op=sync_op)
    out_tensor_list.extend(_slices(out, g.nranks))
    return task


def alltoall_single(
    in_tensor: Tensor, out_tensor: Tensor, group: Group | None = None, sync_op: bool = True
) -> Task | None:
    """Split ``in_tensor`` into ``nranks`` equal chunks along axis 0; chunk ``j`` goes to rank
    ``j``; ``out_tensor`` receives the chunks from every rank, in rank order."""
    t = _check_tensor("alltoall_single", in_tensor)
    o = _check_tensor("alltoall_single", out_tensor)
    p = _prepare("alltoall", t, group)
    if p is None:
        return None
    g, comm = p
    if o.numel() != t.numel() or o.dtype != t.dtype or t.numel() % g.nranks:
        raise OpArgumentError(
            f"[alltoall] input and output must have the same size and dtype, divisible by {g.nranks} ranks; "
            f"got {t.shape} {t.dtype} and {o.shape} {o.dtype}"
        )
    with _Doing("alltoall", t):
        comm.all_to_all(t.native(), o.native(), _stream(t))
    return _finish(o, sync_op, written="alltoall_single")


all_to_all = alltoall


def send(tensor: Tensor, dst: int = 0, group: Group | None = None, sync_op: bool = True) -> Task | None:
    """Send ``tensor`` to world rank ``dst`` (which calls :func:`recv`)."""
    t = _check_tensor("send", tensor)
    g = _group(group)
    if not g.is_member():
        return None
    peer = _group_rank(g, dst, "send")
    with _Doing("send", t, f" to rank {dst}"):
        g.communicator(t.device).send(t.native(), peer, _stream(t))
    return _finish(t, sync_op)


def recv(tensor: Tensor, src: int = 0, group: Group | None = None, sync_op: bool = True) -> Task | None:
    """Receive into ``tensor`` from world rank ``src`` (which calls :func:`send`)."""
    t = _check_tensor("recv", tensor)
    g = _group(group)
    if not g.is_member():
        return None
    peer = _group_rank(g, src, "recv")
    with _Doing("recv", t, f" from rank {src}"):
        g.communicator(t.device).recv(t.native(), peer, _stream(t))
    return _finish(t, sync_op, written="recv")


def isend(tensor: Tensor, dst: int = 0, group: Group | None = None) -> Task | None:
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor: Tensor, src: int = 0, group: Group | None = None) -> Task | None:
    return recv(tensor, src, group, sync_op=False)


def barrier(group: Group | None = None) -> None:
    """Block until every rank of the group has called ``barrier``."""
    g = _group(group)
    if g.is_member():
        with _Doing("barrier", None):
            g.host.barrier()


class P2POp:
    """One point-to-point call of :func:`batch_isend_irecv` (Paddle's ``dist.P2POp``): ``op``
    is :func:`isend` or :func:`irecv`, ``peer`` a world rank of ``group``.

    >>> import framework as fw, framework.distributed as dist
    >>> op = dist.P2POp(dist.isend, fw.zeros([2]), 0)
    >>> op.op.__name__, op.peer
    ('isend', 0)
    """

    def __init__(self, op: Any, tensor: Tensor, peer: int, group: Group | None = None) -> None:
        if op not in (isend, irecv, send, recv):
            raise OpArgumentError(
                f"[P2POp] op must be dist.isend or dist.irecv, got {getattr(op, '__name__', op)!r}"
            )
        self.op, self.tensor, self.peer, self.group = op, _check_tensor("P2POp", tensor), int(peer), group

    @property
    def is_send(self) -> bool:
        return self.op in (isend, send)


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Task]:
    """Run sends and receives as one batch (Paddle's ``dist.batch_isend_irecv``): inside the
    communicator's ``group_start``/``group_end`` every call is posted before any is waited
    for, so two ranks that send to each other and receive from each other cannot deadlock.
    For a communicator without grouping the calls are ordered: with each peer, the lower rank
    sends first and the higher receives first. Every op must use the same group.

    >>> import framework as fw, framework.distributed as dist
    >>> dist.batch_isend_irecv([])
    []
    """
    if not p2p_op_list:
        return []
    g = _group(p2p_op_list[0].group)
    if any(_group(o.group) is not g for o in p2p_op_list):
        raise OpArgumentError("[batch_isend_irecv] every P2POp must use the same group")
    if not g.is_member():
        return []
    me = g.ranks[g.rank]
    # with each peer: the lower rank sends first (a stable sort keeps the caller's order)
    ops = sorted(p2p_op_list, key=lambda o: o.is_send != (me < o.peer))
    comms = {id(c): c for c in (g.communicator(o.tensor.device) for o in ops)}
    for c in comms.values():
        c.group_start()
    try:
        for o in ops:
            peer = _group_rank(g, o.peer, "batch_isend_irecv")
            comm = g.communicator(o.tensor.device)
            what = "send" if o.is_send else "recv"
            with _Doing(what, o.tensor, f" {'to' if o.is_send else 'from'} rank {o.peer}"):
                getattr(comm, what)(o.tensor.native(), peer, _stream(o.tensor))
    finally:
        for c in comms.values():
            c.group_end()
    for o in ops:
        if not o.is_send:
            o.tensor._bump_version("distributed.recv")
    return [Task(o.tensor.device) for o in p2p_op_list]

"""The reshard transitions as checks of a vendor's collectives: every transition of
:func:`framework.distributed.reshard` (S->R all_gather, P->R all_reduce, P->S reduce_scatter,
R->S slice, R->P, S(i)->S(j) all_to_all, uneven shards, a 2x2 mesh with 4 ranks, a move
between meshes with send/recv and its gradient) against numpy, forward and backward, on
``device``. The collectives tier (:mod:`framework.distributed.selfcheck`) runs them, so a
plugin's communicator is checked through the layer users call; the tests run them too.

Every rank of the world calls :func:`run_reshard_checks` with the same arguments;
``check(name, fn)`` runs one check and records it (a raising check is a failed record).
Only public names are used (``fw.distributed.*``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np


def run_reshard_checks(check: Callable[[str, Callable[[], None]], None], device: str = "cpu") -> None:
    """Every transition on 1-d meshes (an even and an uneven shape), on a 2x2 mesh and between
    two meshes (4 ranks); names ``1d/<shape>/<from>-><to>``, ``2d/...``, ``mesh_move/...``."""
    import framework as fw
    import framework.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()

    def region(shape, mesh, placements):
        """This rank's block: chunks of ceil(n / k); a dim sharded over several mesh axes is
        cut into the product of their sizes, the earlier axis outer."""
        coord = mesh.coordinate(rank)
        idx = [slice(0, s) for s in shape]
        chunks: dict[int, tuple[int, int]] = {}
        for axis, p in enumerate(placements):
            if isinstance(p, dist.Shard):
                c, k = chunks.get(p.dim, (0, 1))
                chunks[p.dim] = (c * mesh.shape[axis] + coord[axis], k * mesh.shape[axis])
        for d, (c, k) in chunks.items():
            size = -(-shape[d] // k)
            a = min(c * size, shape[d])
            idx[d] = slice(a, min(a + size, shape[d]))
        return tuple(idx)

    def expect_local(d, x, mesh, placements):
        """The local value of a layout, from numpy: Shard -> region; Partial -> the parts add up
        (checked by the caller through unshard)."""
        if any(p.is_partial() for p in placements):
            return
        np.testing.assert_allclose(d._local_value().numpy(), x[region(x.shape, mesh, placements)], rtol=1e-6)

    def transition(mesh, shape, src, dst):
        rng = np.random.default_rng(7)
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal(shape).astype(np.float32)
        d = dist.shard_tensor(x, mesh, src, place=device, stop_gradient=False)
        r = dist.reshard(d, mesh, dst)
        assert r.placements == list(dst) and r.shape == tuple(shape)
        assert r._local_value().device.type == device.split(":")[0], r._local_value().device
        expect_local(r, x, mesh, dst)
        full = dist.unshard_dtensor(r)  # back to Replicate: checks Partial layouts too
        np.testing.assert_allclose(full.numpy(), x, rtol=1e-5, atol=1e-6)
        # backward: loss = sum(x * w), replicated; the gradient of the source layout
        loss = (
            full * dist.shard_tensor(w, mesh, [dist.Replicate()] * mesh.ndim, place=device)._local_value()
        ).sum()
        loss.backward()
        got = d._local_value().grad.numpy()
        want = w[region(shape, mesh, src)]
        for axis, p in enumerate(src):
            if p.is_partial() and p.reduce_type == "avg":
                want = want / mesh.shape[axis]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # the gradient as a distributed tensor, gathered: the whole gradient, whatever the layout
        np.testing.assert_allclose(d.grad.numpy(), w, rtol=1e-5, atol=1e-6)

    P = {
        "R": dist.Replicate(),
        "S0": dist.Shard(0),
        "S1": dist.Shard(1),
        "P": dist.Partial(),
        "Pavg": dist.Partial("avg"),
    }

    mesh1 = dist.ProcessMesh(list(range(n)), dim_names=["x"])
    for shape in [(8, 4 * n), (5, 3)]:  # even, then uneven (some ranks hold less or nothing)
        for a, b in itertools.product(P, P):
            check(
                f"1d/{shape[0]}x{shape[1]}/{a}->{b}",
                lambda a=a, b=b, shape=shape: transition(mesh1, shape, [P[a]], [P[b]]),
            )

    if n == 4:
        mesh2 = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
        pairs = [
            (("S0", "R"), ("R", "S1")),
            (("S0", "S1"), ("R", "R")),
            (("P", "S1"), ("S0", "R")),
            (("R", "R"), ("S1", "S0")),
            (("S0", "S1"), ("S1", "S0")),
            (("P", "P"), ("R", "S0")),
            (("S1", "R"), ("P", "S0")),
        ]
        for src, dst in pairs:
            check(
                f"2d/{'.'.join(src)}->{'.'.join(dst)}",
                lambda src=src, dst=dst: transition(mesh2, (6, 5), [P[s] for s in src], [P[s] for s in dst]),
            )
        nested = [  # one dim sharded over both mesh axes (8 rows: 4 chunks of 2, dp outer)
            (("S0", "S0"), ("R", "R")),
            (("R", "R"), ("S0", "S0")),
            (("S0", "S0"), ("S1", "S0")),
            (("S0", "S0"), ("R", "S0")),
            (("S0", "S0"), ("S0", "R")),
            (("P", "S0"), ("S0", "S0")),
            (("S1", "S1"), ("S0", "S0")),
            (("S0", "S1"), ("S1", "S1")),
        ]
        for src, dst in nested:
            check(
                f"2d_nested/{'.'.join(src)}->{'.'.join(dst)}",
                lambda src=src, dst=dst: transition(mesh2, (8, 4), [P[s] for s in src], [P[s] for s in dst]),
            )

        def nested_matmul():
            """An op on a dim sharded over both axes: the rule keeps the outer shard."""
            x = np.arange(32, dtype=np.float32).reshape(8, 4) / 7
            w = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
            d = dist.shard_tensor(x, mesh2, [dist.Shard(0), dist.Shard(0)], place=device)
            y = d @ fw.to_tensor(w, device=device)
            assert y.placements == [dist.Shard(0), dist.Replicate()], y.placements
            np.testing.assert_allclose(y.numpy(), x @ w, rtol=1e-5, atol=1e-6)

        check("2d_nested/matmul", nested_matmul)

        def move():
            a = dist.ProcessMesh([0, 1], dim_names=["x"])
            b = dist.ProcessMesh([2, 3], dim_names=["x"])
            x = np.arange(30, dtype=np.float32).reshape(6, 5)
            d = dist.shard_tensor(x, a, [dist.Shard(0)], place=device)
            r = dist.reshard(d, b, [dist.Shard(1)])
            assert r.process_mesh == b
            if rank in (2, 3):
                expect_local(r, x, b, [dist.Shard(1)])
            else:
                assert r._local_value() is None
            back = dist.reshard(r, a, [dist.Replicate()])
            if rank in (0, 1):
                np.testing.assert_allclose(back._local_value().numpy(), x)

        def move_backward():
            """The gradient of a move between meshes comes back to the source ranks (send/recv)."""
            a = dist.ProcessMesh([0, 1], dim_names=["x"])
            b = dist.ProcessMesh([2, 3], dim_names=["x"])
            x = np.arange(30, dtype=np.float32).reshape(6, 5)
            w = np.linspace(-1.0, 1.0, 30, dtype=np.float32).reshape(6, 5)
            d = dist.shard_tensor(x, a, [dist.Shard(0)], place=device, stop_gradient=False)
            r = dist.reshard(d, b, [dist.Shard(1)])
            loss = (r * r * fw.to_tensor(w, device=device)).sum()  # on mesh b only
            loss.backward()  # every rank: b's backward, then the gradient goes back to a
            if rank in (0, 1):
                rows = slice(3 * rank, 3 * rank + 3)
                np.testing.assert_allclose(d._local_value().grad.numpy(), (2 * x * w)[rows], rtol=1e-6)
            else:
                assert d._local_value() is None

        check("mesh_move/send_recv", move)
        check("mesh_move/backward", move_backward)

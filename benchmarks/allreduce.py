"""all_reduce bus bandwidth: framework.distributed vs raw mpi4py on numpy buffers, one run.

    python benchmarks/allreduce.py [-n 2] [--device cpu] [--repeat 20] [--max-mib 64]

Started without mpiexec it relaunches itself with ``oarlock launch -n N``. For each size from
4 KiB to 64 MiB (float32, sum, in place) the two sides alternate, iteration by iteration,
after a barrier; rank 0 prints the median time of each and the bus bandwidth
(nccl-tests' definition: bytes / time x 2(n-1)/n), and the ratio framework / raw.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2, help="ranks (when started without mpiexec)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--max-mib", type=int, default=64)
    args = ap.parse_args()
    if "PMI_RANK" not in os.environ:
        from framework.distributed.launch import main as launch

        return launch(["-n", str(args.n), __file__, *sys.argv[1:]])

    from mpi4py import MPI

    import framework as fw
    import framework.distributed as dist

    dist.init_parallel_env()
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    sizes = []
    s = 4096
    while s <= args.max_mib * 1024 * 1024:
        sizes.append(s)
        s *= 4
    if rank == 0:
        print(f"{n} ranks, device {args.device}, float32 sum in place, median of {args.repeat} (alternating)")
        print(
            f"{'bytes':>10s} {'raw us':>10s} {'oarlock us':>11s} {'raw GB/s':>9s} {'oarlock GB/s':>13s} {'ratio':>6s}"
        )
    for nbytes in sizes:
        count = nbytes // 4
        raw = np.ones(count, np.float32)
        x = fw.to_tensor(np.ones(count, np.float32), device=args.device)
        reps = args.repeat if nbytes < 16 << 20 else max(5, args.repeat // 4)
        t_raw, t_fw = [], []
        for i in range(reps + 2):
            comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(MPI.IN_PLACE, raw)
            t1 = time.perf_counter()
            comm.Barrier()
            t2 = time.perf_counter()
            dist.all_reduce(x)
            if args.device != "cpu":
                fw.synchronize(args.device)
            t3 = time.perf_counter()
            if i >= 2:  # warm-up
                t_raw.append(t1 - t0)
                t_fw.append(t3 - t2)
            raw[:] = 1.0
        # the slowest rank decides: take each iteration's maximum over ranks
        times = np.array([t_raw, t_fw])
        comm.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)
        t_raw, t_fw = times.tolist()
        if rank == 0:
            m_raw, m_fw = statistics.median(t_raw), statistics.median(t_fw)
            factor = 2 * (n - 1) / n
            bw_raw, bw_fw = nbytes / m_raw * factor / 1e9, nbytes / m_fw * factor / 1e9
            print(
                f"{nbytes:10d} {m_raw * 1e6:10.1f} {m_fw * 1e6:11.1f} {bw_raw:9.2f} {bw_fw:13.2f} {bw_fw / bw_raw:5.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

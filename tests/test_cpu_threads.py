"""The CPU plugin's thread policy (plugins/cpu/threads.py), each case in a fresh interpreter:
thread pools are sized when their library loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

pytest.importorskip("threadpoolctl")

from plugins.cpu.threads import CONCURRENT_BLAS, SPIN_COUNT  # noqa: E402


def _numpy_blas() -> str:
    from plugins.cpu.threads import numpy_blas

    return numpy_blas()


_ENV_KEYS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")

_PROBE = """
import json, numpy as np, framework as fw
from plugins.cpu import threads
x = fw.ones([64, 64]); (x @ x).numpy()
print(json.dumps(threads.describe()))
"""


def _clean(**env: str) -> dict:
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OARLOCK_NUM", "OARLOCK_THREAD", "OMP_", "GOMP_"))
    }
    for k in _ENV_KEYS:
        out.pop(k, None)
    return {**out, **env}


def _python(src: str, **env: str) -> str:
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(src)],
        env=_clean(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def probe(**env: str) -> dict:
    return json.loads(_python(_PROBE, **env).strip().splitlines()[-1])


def test_one_thread_budget_puts_every_pool_on_one():
    got = probe(OARLOCK_NUM_THREADS="1")
    assert got["budget"] == 1 and got["OMP_NUM_THREADS"] == "1"
    # idle OpenMP threads wait briefly for the next kernel, then sleep (no wait policy forced)
    assert got["OMP_WAIT_POLICY"] is None and got["GOMP_SPINCOUNT"] == str(SPIN_COUNT)
    assert got["pools"] and all(n == 1 for _, n in got["pools"]), got["pools"]
    assert got["split_matmul"] is False and got["split_team"] is False and got["workers"] == 0


def test_a_budget_of_two_runs_blas_on_one_thread_and_splits_products_itself():
    got = probe(OARLOCK_NUM_THREADS="2")
    assert got["budget"] == 2 and got["OMP_NUM_THREADS"] == "2"
    assert got["pools"] and all(n == 1 for _, n in got["pools"]), got["pools"]
    assert got["split_team"] is True and got["workers"] == 1
    # numpy's own BLAS takes split products only where several threads may call it at once
    assert got["split_matmul"] is (_numpy_blas() in CONCURRENT_BLAS)


def test_default_budget_is_the_usable_cores_and_user_settings_win():
    got = probe(OMP_WAIT_POLICY="ACTIVE")
    assert got["budget"] == len(os.sched_getaffinity(0))
    assert got["OMP_WAIT_POLICY"] == "ACTIVE"  # what the user set is kept
    assert got["GOMP_SPINCOUNT"] is None  # and the spin is theirs to choose with it


def test_a_users_spin_count_or_passive_wait_is_kept():
    assert probe(GOMP_SPINCOUNT="7")["GOMP_SPINCOUNT"] == "7"
    got = probe(OMP_WAIT_POLICY="PASSIVE")
    assert got["OMP_WAIT_POLICY"] == "PASSIVE" and got["GOMP_SPINCOUNT"] is None
    assert got["split_team"] is (got["budget"] > 1)


@pytest.mark.parametrize("var", ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_a_users_one_thread_blas_or_openmp_setting_is_respected(var):
    got = probe(**{var: "1"})  # no OARLOCK_NUM_THREADS: the user's word is the budget
    assert got["budget"] == 1 and got["workers"] == 0 and got["split_team"] is False
    assert got["OMP_NUM_THREADS"] == "1"
    if var != "MKL_NUM_THREADS":  # OpenBLAS reads OMP_NUM_THREADS too, not MKL's
        assert all(n == 1 for _, n in got["pools"]), got["pools"]


def test_a_users_blas_thread_count_is_left_as_set():
    got = probe(OPENBLAS_NUM_THREADS="2")  # owned by the plugin, BLAS would run on one
    assert got["pools"] and all(n == min(2, os.cpu_count()) for _, n in got["pools"]), got["pools"]
    assert got["split_team"] is False  # BLAS threads itself as the user asked
    assert got["budget"] == min(2, len(os.sched_getaffinity(0)))


def test_oarlock_num_threads_overrides_the_users_blas_and_openmp_settings():
    got = probe(OARLOCK_NUM_THREADS="2", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    assert got["budget"] == 2 and got["OMP_NUM_THREADS"] == "2" and got["split_team"] is True
    assert all(n == 1 for _, n in got["pools"]), got["pools"]


def test_policy_off_leaves_the_pools_alone():
    got = probe(OARLOCK_THREAD_POLICY="0", OPENBLAS_NUM_THREADS="1")
    assert got["enabled"] is False and got["OMP_WAIT_POLICY"] is None and got["split_team"] is False
    assert got["GOMP_SPINCOUNT"] is None


def test_a_bad_budget_is_named():
    r = subprocess.run(
        [sys.executable, "-c", "import framework as fw; fw.ones([2]).numpy()"],
        env={**os.environ, "OARLOCK_NUM_THREADS": "two"},
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "OARLOCK_NUM_THREADS must be a positive integer, got 'two'" in r.stderr


# -- the split kernels give the bits of the whole (numpy's for the elementwise kernels) ------------------------------------------------------
_SPLIT = """
import json, os, numpy as np, framework as fw
from plugins.cpu import gemm, kernels, products, threads
rng = np.random.default_rng(0)
fw.ones([2]).numpy()  # the plugin loads: the policy applies
res = {"grain32": products.row_grain(np.dtype("float32")), "grain64": products.row_grain(np.dtype("float64"))}
team = []  # the 2-d products the OpenMP team ran (gemm.py): (a shape, b shape, by columns)
_gemm_call = gemm.gemm_call
def spy(a, b, c, nt):
    call = _gemm_call(a, b, c, nt)
    if call is not None and nt > 1:
        team.append([list(a.shape), list(b.shape), gemm.blocks(c.shape[0], c.shape[1], nt, c.dtype)[0]])
    return call
gemm.gemm_call = spy

def check(name, got, want, parts):
    res[name] = {"split": parts, "equal": bool(np.array_equal(got, want)),
                 "err": float(np.max(np.abs(got.astype(np.float64) - want)) if got.size else 0.0)}

def t(a):
    return fw.to_tensor(a)

def ref(a, b):  # a @ b whole on one thread, by the BLAS the plugin's products use (numpy's, or MKL)
    want = a @ b
    fa, fb, fc = products._flat(a, b, want)
    if fc.ndim == 2 and gemm.routes_all(fc.dtype.char):
        return gemm.product(fa, fb).reshape(want.shape)
    return want

# products: rows of a 2-d product, blocks of a batch, a batch broadcast, a stack times a matrix,
# transposed operands
for name, sa, sb, dt in [
    ("rows", (1000, 688), (688, 256), "float32"),
    ("rows_f64", (517, 300), (300, 200), "float64"),
    ("batch", (8, 4, 128, 64), (8, 4, 64, 128), "float32"),
    ("broadcast", (3, 500, 64), (64, 700), "float32"),
    ("stack", (8, 128, 256), (256, 768), "float32"),  # one product of 1024 rows where bits allow
    ("rhs_batch", (600, 64), (5, 64, 300), "float32"),
    ("cols", (64, 1024), (1024, 192), "float32"),  # one row tile: blocks of columns where exact
    ("cols_f64", (64, 1024), (1024, 200), "float64"),
]:
    a = rng.standard_normal(sa).astype(dt); b = rng.standard_normal(sb).astype(dt)
    want = ref(a, b)  # the product whole, on one thread
    parts = products._matmul_parts(a, b, np.empty_like(want))
    check(name, (t(a) @ t(b)).numpy(), want, len(parts or []))
a = rng.standard_normal((256, 1024)).astype("float32"); b = rng.standard_normal((688, 1024)).astype("float32")
want = ref(a, b.T)
check("transposed", fw.matmul(t(a), t(b), transpose_y=True).numpy(), want, len(products._matmul_parts(a, b.T, want) or []))
a = rng.standard_normal((1024, 256)).astype("float32"); b = rng.standard_normal((1024, 688)).astype("float32")
want = ref(a.T, b)
check("transposed_x", fw.matmul(t(a), t(b), transpose_x=True).numpy(), want, len(products._matmul_parts(a.T, b, want) or []))

a = rng.standard_normal((1000, 400)).astype("float32")[:, 3:300]  # rows with a stride (lda 400)
b = rng.standard_normal((297, 256)).astype("float32")
want = ref(a, b)
check("strided", (t(a) @ t(b)).numpy(), want, len(products._matmul_parts(a, b, want) or []))

# the transcendental functions (the others are not split)
x = rng.standard_normal((8, 128, 688)).astype("float32")
q = rng.standard_normal((3, 8, 4, 128, 64)).astype("float32")
for name, ours, theirs, arg in [("exp", fw.exp, np.exp, x), ("tanh", fw.tanh, np.tanh, q), ("log", fw.log, np.log, np.abs(x))]:
    check(name, ours(t(arg)).numpy(), theirs(arg), len(kernels._elementwise_parts(np.empty_like(arg), arg) or []))
qs = q[:, :, :, 3:120]
check("exp_strided", fw.exp(t(q)[:, :, :, 3:120]).numpy(), np.exp(qs), len(kernels._elementwise_parts(np.empty_like(qs), qs) or []))

# a static program binds the split kernels once (its captured graph replays the bound blocks)
@fw.jit.to_static
def f(a, b, x):
    return (a @ b) * 2.0, fw.exp(x), fw.matmul(a, b.T, transpose_y=True)
a = rng.standard_normal((1000, 688)).astype("float32"); b = rng.standard_normal((688, 256)).astype("float32")
for _ in range(3):
    p, r, pt = f(t(a), t(b), t(x))
check("static_matmul", p.numpy(), ref(a, b) * np.float32(2.0), len(products._matmul_parts(a, b, a @ b) or []))
check("static_matmul_t", pt.numpy(), ref(a, b), len(products._matmul_parts(a, b, a @ b) or []))
check("static_exp", r.numpy(), np.exp(x), len(kernels._elementwise_parts(x, x) or []))

# a forked child has none of the parent's threads: its split kernels run (on its own thread)
pid = os.fork()
if pid == 0:
    ok = np.array_equal((t(a) @ t(b)).numpy(), ref(a, b)) and np.array_equal(fw.exp(t(x)).numpy(), np.exp(x))
    os._exit(0 if ok else 3)
res["fork_status"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
res["blas_found"] = gemm.blas_gemm("f") is not None
res["team"] = team
res["cols_expected"] = gemm.blocks(64, 192, 2, np.dtype("float32"))[0]
res["team_blas"] = threads.split_products(gemm.product_blas("f")[0])  # gemm.c's blocks call BLAS at once
res["team_blas64"] = threads.split_products(gemm.product_blas("d")[0])  # oneDNN: float32 only
res["numpy_split"] = threads.split_products(threads.numpy_blas())  # the workers' np.matmul blocks
print(json.dumps(res))
"""


_PRODUCTS = (
    "rows",
    "batch",
    "broadcast",
    "stack",
    "rhs_batch",
    "cols",
    "transposed",
    "strided",
    "static_matmul",
)


@pytest.mark.parametrize("blas", ["auto", "mkl", "onednn"])
def test_split_kernels_give_the_whole_products_bits(blas):
    _skip_missing(blas)
    # the compiler off: the static program runs the plugin's kernels, not a generated one
    res = json.loads(
        _python(_SPLIT, OARLOCK_NUM_THREADS="2", OARLOCK_COMPILE="0", OARLOCK_BLAS=blas)
        .strip()
        .splitlines()[-1]
    )
    grain32, exact32 = res.pop("grain32")
    grain64, exact64 = res.pop("grain64")
    assert res.pop("fork_status") == 0
    team, found, cols = res.pop("team"), res.pop("blas_found"), res.pop("cols_expected")
    team_blas, numpy_split = res.pop("team_blas"), res.pop("numpy_split")
    team_blas64 = res.pop("team_blas64")
    if found and team_blas:  # the BLAS is callable from C by several threads: 2-d products on the team
        shapes = [(tuple(a), tuple(b)) for a, b, _ in team]
        for want in [((1000, 688), (688, 256)), ((64, 1024), (1024, 192))]:
            assert want in shapes, (want, shapes)
        assert (((517, 300), (300, 200)) in shapes) is team_blas64, shapes
        assert ((256, 1024), (1024, 688)) in shapes and ((1000, 297), (297, 256)) in shapes, shapes
        # the weight gradient's shape: by columns where the rows are one tile and theirs is exact
        assert [c for a, b, c in team if a == [64, 1024] and b == [1024, 192]] == [cols]
    else:  # numpy's OpenBLAS: never called from several threads at once (threads.split_products)
        assert team == [], team
    for name, r in res.items():
        product = name.startswith(_PRODUCTS)
        if not name.startswith("cols") and (numpy_split or not product):
            assert r["split"] >= 2, (name, r)  # the case is large enough to be split
        if product and not numpy_split:
            assert r["split"] == 0, (name, r)
        exact = exact64 if name.endswith("f64") else exact32
        if product and (team_blas or numpy_split) and not exact:
            # no row tile of this BLAS is exact: rounding as its own threads would
            assert r["err"] < 1e-3, (name, r)
        else:  # split at exact tiles, or one call: the whole product's bits
            assert r["equal"], (name, r, grain32, grain64)


def test_worker_pool_runs_every_part_once_and_hands_errors_back():
    from plugins.cpu.threads import WorkerPool

    pool = WorkerPool(2)
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def note(i: int) -> None:
        with lock:
            seen.append((i, threading.get_ident()))

    for _ in range(50):
        seen.clear()
        pool.run(note, [(i,) for i in range(7)])
        assert sorted(i for i, _ in seen) == list(range(7))

    def boom(i: int) -> None:
        if i == 3:
            raise ValueError("part 3")

    with pytest.raises(ValueError, match="part 3"):
        pool.run(boom, [(i,) for i in range(5)])
    pool.run(note, [(0,), (1,)])  # still serves after an error


_OVERLAP = """
import json, numpy as np, framework as fw
from plugins.cpu import kernels
fw.ones([2]).numpy()
rng = np.random.default_rng(0)
res = {}
buf = rng.standard_normal(513 * 512).astype("float32")
# the input is the output shifted by a row: numpy buffers the input, a block could not
out, x = buf[512:].reshape(512, 512), buf[:-512].reshape(512, 512)
want = np.exp(x)
res["shifted_parts"] = kernels._elementwise_parts(out, x) is not None
k = [fn for op, fn, *_ in kernels.TABLE if op == "exp"][0]
class Ctx:
    stream = None
k(Ctx, [out], [x])
res["shifted"] = bool(np.array_equal(out, want))
# the very same view (in place) is split
z = rng.standard_normal((512, 512)).astype("float32")
want = np.exp(z)
res["inplace_parts"] = len(kernels._elementwise_parts(z, z) or [])
k(Ctx, [z], [z])
res["inplace"] = bool(np.array_equal(z, want))
print(json.dumps(res))
"""


def test_an_input_overlapping_the_output_is_not_split_unless_it_is_the_output():
    res = json.loads(_python(_OVERLAP, OARLOCK_NUM_THREADS="2").strip().splitlines()[-1])
    assert res == {"shifted_parts": False, "shifted": True, "inplace_parts": 2, "inplace": True}


_FORK_AFTER_TEAM = """
import os, numpy as np, framework as fw
rng = np.random.default_rng(0)
x = rng.standard_normal((1024, 4096)).astype("float32")
a, b = rng.standard_normal((1000, 688)).astype("float32"), rng.standard_normal((688, 256)).astype("float32")
f = fw.jit.to_static(lambda t: fw.exp(t) * 2.0 + 1.0)  # one generated kernel, parallel at this size
want = np.exp(x) * np.float32(2.0) + np.float32(1.0)
got = f(fw.to_tensor(x)).numpy(), (fw.to_tensor(a) @ fw.to_tensor(b)).numpy()  # the team ran
pid = os.fork()
if pid == 0:  # the child's own kernels: libgomp must not wait for the parent's team
    g = f(fw.to_tensor(x)).numpy(), (fw.to_tensor(a) @ fw.to_tensor(b)).numpy()
    ok = np.allclose(g[0], want, rtol=1e-5) and np.allclose(g[1], got[1], rtol=1e-5, atol=1e-4)
    os._exit(0 if ok else 3)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), np.allclose(got[0], want, rtol=1e-5))
"""


def test_a_forked_child_runs_its_kernels_after_the_parent_used_the_openmp_team():
    out = _python(_FORK_AFTER_TEAM, OARLOCK_NUM_THREADS="2").split()
    assert out[-2:] == ["0", "True"], out


# -- which BLAS runs the products (gemm.py: OARLOCK_BLAS) ------------------------------------
_BLAS = """
import json, numpy as np, framework as fw
from plugins.cpu import gemm
rng = np.random.default_rng(0)
res = {"name": None, "errs": []}
for m, k, n in [(1024, 64, 192), (64, 1024, 172), (3, 5, 7), (257, 129, 65)]:
    for dt in ("float32", "float64"):
        a = rng.standard_normal((m, k)).astype(dt); b = rng.standard_normal((n, k)).astype(dt)
        want = a.astype(np.float64) @ b.astype(np.float64).T
        for got in ((fw.to_tensor(a) @ fw.to_tensor(b.T.copy())).numpy(),
                    fw.matmul(fw.to_tensor(a), fw.to_tensor(b), transpose_y=True).numpy()):
            res["errs"].append(float(np.max(np.abs(got - want)) / np.max(np.abs(want))))
res["name"] = gemm.product_blas("f")[0]
print(json.dumps(res))
"""


def _has_mkl() -> bool:
    import importlib.metadata

    try:
        importlib.metadata.distribution("mkl")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _skip_missing(blas: str) -> None:
    if blas == "mkl" and not _has_mkl():
        pytest.skip("Intel's MKL is not installed (pip install mkl)")
    if blas == "onednn":
        from plugins.cpu import bf16

        if bf16._onednn()[0] is None:
            pytest.skip("oneDNN is not installed (pip install onednn-cpu-gomp)")


@pytest.mark.parametrize("blas", ["numpy", "mkl", "onednn", "auto"])
@pytest.mark.parametrize("budget", ["1", "2"])
def test_products_on_each_blas_match_float64(blas, budget):
    _skip_missing(blas)
    res = json.loads(_python(_BLAS, OARLOCK_NUM_THREADS=budget, OARLOCK_BLAS=blas).strip().splitlines()[-1])
    assert res["name"] == (res["name"] if blas == "auto" else blas)
    assert res["name"] in ("numpy", "mkl", "onednn")
    assert max(res["errs"]) < 1e-5, res  # float32 products of these sizes: ~1e-7 relative


def test_a_bad_or_missing_blas_is_named():
    r = subprocess.run(
        [sys.executable, "-c", "import framework as fw; (fw.ones([4, 4]) @ fw.ones([4, 4])).numpy()"],
        env=_clean(OARLOCK_BLAS="blis"),
        capture_output=True,
        text=True,
    )
    assert (
        r.returncode != 0 and "OARLOCK_BLAS must be one of auto, numpy, mkl, onednn, got 'blis'" in r.stderr
    )
    src = (
        "from plugins.cpu import gemm\n"
        "gemm._mkl_lib = lambda: None  # as on a machine without the mkl wheel\n"
        "import framework as fw; (fw.ones([4, 4]) @ fw.ones([4, 4])).numpy()"
    )
    r = subprocess.run(
        [sys.executable, "-c", src], env=_clean(OARLOCK_BLAS="mkl"), capture_output=True, text=True
    )
    assert r.returncode != 0 and "OARLOCK_BLAS=mkl, but Intel's MKL is not installed" in r.stderr, r.stderr[
        -2000:
    ]


# -- add/sub/mul/div of large float arrays on the OpenMP team (elementwise.c) ----------------
_TEAM_BINARY = """
import json, numpy as np, framework as fw
from plugins.cpu import kernels
rng = np.random.default_rng(0)
res = {"cases": [], "team": 0}
orig = kernels._team_binary
def spy(fn, a, b, y):
    call = orig(fn, a, b, y)
    res["team"] += call is not None
    return call
kernels._team_binary = spy
special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, 3e38, -1.0])
for dt in ("float32", "float64"):
    for sa, sb in [((8, 128, 688), (8, 128, 688)), ((8, 4, 128, 64), (128, 64)), ((128, 64), (8, 4, 128, 64)),
                   ((8, 4, 128, 64), (4, 1, 64)), ((8, 4, 128, 64), (1,)), ((300, 301), (300, 301))]:
        a = rng.standard_normal(sa).astype(dt); b = rng.standard_normal(sb).astype(dt)
        a.flat[:8] = special; b.flat[-8:] = special
        ta, tb = fw.to_tensor(a), fw.to_tensor(b)
        with np.errstate(all="ignore"):
            for name, ours, ref in (("add", ta + tb, a + b), ("sub", ta - tb, a - b),
                                    ("mul", ta * tb, a * b), ("div", ta / tb, a / b)):
                res["cases"].append([dt, name, list(sa), list(sb), bool(np.array_equal(ours.numpy(), ref, equal_nan=True))])
# in place: the output is an input
x = rng.standard_normal((512, 512)).astype("float32"); y = rng.standard_normal((512, 512)).astype("float32")
tx = fw.to_tensor(x); tx.add_(fw.to_tensor(y))
res["inplace"] = bool(np.array_equal(tx.numpy(), x + y))
# a static program binds the team's call
f = fw.jit.to_static(lambda p, q: p * q)
res["static"] = bool(np.array_equal(f(fw.to_tensor(x), fw.to_tensor(y)).numpy(), x * y))
print(json.dumps(res))
"""


def test_binary_kernels_on_the_team_give_numpys_bits():
    # the compiler off: the static program binds the plugin's kernel, not a generated one
    res = json.loads(
        _python(_TEAM_BINARY, OARLOCK_NUM_THREADS="2", OARLOCK_COMPILE="0").strip().splitlines()[-1]
    )
    bad = [c for c in res["cases"] if not c[-1]]
    assert not bad, bad
    assert res["inplace"] and res["static"]
    # same-shape and trailing-block operands (4 ops x 2 dtypes x 4 such shapes, and in place)
    # and the static product went to the team; (4, 1, 64) and a scalar stayed numpy's
    assert res["team"] >= 34, res["team"]


_TEAM_PERMUTE = """
import json, numpy as np, framework as fw
from plugins.cpu import layout, threads
rng = np.random.default_rng(0)
res = []
cases = [((8, 128, 3, 4, 64), (2, 0, 3, 1, 4)), ((8, 4, 128, 64), (0, 2, 1, 3)),
         ((7, 5, 3, 64, 33), (2, 1, 0, 3, 4)), ((3, 1001, 2, 16), (2, 0, 1, 3)), ((9, 300, 40), (1, 0, 2))]
for shape, perm in cases:
    a = rng.standard_normal(shape).astype("float32")
    y = np.empty([shape[p] for p in perm], "float32")
    from plugins.cpu.kernels import _kept
    call = layout.permute_call(a, y, perm, _kept(perm))
    nt = threads.team_threads(a.nbytes, layout.MIN_BYTES_PER_TEAM_THREAD)
    call()
    via_op = fw.to_tensor(a).transpose(list(perm)).numpy()
    res.append([list(shape), nt, bool(np.array_equal(y, a.transpose(perm))), bool(np.array_equal(via_op, a.transpose(perm)))])
print(json.dumps(res))
"""


def test_permute_split_over_the_team_gives_the_transposed_array():
    res = json.loads(_python(_TEAM_PERMUTE, OARLOCK_NUM_THREADS="2").strip().splitlines()[-1])
    assert all(ok and op_ok for _, _, ok, op_ok in res), res
    assert [nt for _, nt, _, _ in res[:3]] == [2, 2, 2], res  # big enough for both threads


_TEAM_CONCAT = """
import json, numpy as np, framework as fw
from plugins.cpu import layout, threads
fw.ones([1])  # the plugin loads: its thread policy sizes the team
rng = np.random.default_rng(0)
res = []
cases = [([(1, 8, 4, 128, 64)] * 3, 0), ([(8, 128, 100), (8, 128, 156), (8, 128, 1)], 2),
         ([(4, 0, 64), (4, 3000, 64), (4, 7, 64)], 1), ([(30000, 7), (5, 7)], 0),
         ([(64, 1000, 3), (64, 1000, 3)], 2), ([(3, 70000)], 0)]
for shapes, axis in cases:
    for dt in ("float32", "float64", "int64"):
        xs = [(rng.standard_normal(s) * 100).astype(dt) for s in shapes]
        want = np.concatenate(xs, axis)
        y = np.full(want.shape, -1, dt)
        call = layout.concat_call(xs, y, axis)
        if call is not None:
            call()
        via_op = fw.concat([fw.to_tensor(x) for x in xs], axis=axis).numpy()
        res.append([[list(s) for s in shapes], dt, call is not None,
                    call is None or bool(np.array_equal(y, want)), bool(np.array_equal(via_op, want))])
# a static program binds the team's call
a, b = (rng.standard_normal((2, 128, 1024)).astype("float32") for _ in range(2))
f = fw.jit.to_static(lambda p, q: fw.concat([p, q], axis=1))
static_ok = bool(np.array_equal(f(fw.to_tensor(a), fw.to_tensor(b)).numpy(), np.concatenate([a, b], 1)))
print(json.dumps({"cases": res, "static": static_ok}))
"""


def test_concat_on_the_team_gives_numpys_array():
    """The team's concat copies each part's bytes where np.concatenate puts them: every axis,
    empty parts, runs of 12 bytes, three dtypes; through fw.concat and a static program."""
    res = json.loads(_python(_TEAM_CONCAT, OARLOCK_NUM_THREADS="2").strip().splitlines()[-1])
    assert all(ok and op_ok for *_, ok, op_ok in res["cases"]), res
    assert all(team for _, _, team, _, _ in res["cases"]), res  # each is over two threads' share
    assert res["static"]


def test_cpu_buffers_start_on_a_cache_line():
    """The cpu runtime's buffers are 64-byte aligned (whole-line streaming stores need it);
    a view at an offset keeps its offset from there."""
    import numpy as np

    import framework as fw

    for n in (1, 7, 1000, 1 << 20):
        t = fw.ones([n])
        assert t.native().ctypes.data % 64 == 0
        np.testing.assert_array_equal(t.numpy(), np.ones(n, np.float32))
    parts = fw.split(fw.arange(12).astype("float32").reshape([3, 4]), 3, axis=0)
    assert [p.native().ctypes.data % 64 for p in parts] == [0, 16, 32]
    np.testing.assert_array_equal(parts[2].numpy(), [[8, 9, 10, 11]])


_STREAM_PERMUTE = """
import json, numpy as np, framework as fw
from plugins.cpu import layout
from plugins.cpu.kernels import _kept
fw.ones([1])
rng = np.random.default_rng(1)
res = []
for shape, perm in [((8, 128, 3, 4, 64), (2, 0, 3, 1, 4)), ((3, 8, 4, 128, 64), (1, 3, 0, 2, 4)),
                    ((256, 64, 40), (1, 0, 2))]:  # runs of 160 bytes: plain stores
    a = rng.standard_normal(shape).astype("float32")
    want = a.transpose(perm)
    assert want.nbytes >= layout.STREAM_MIN
    for skip in (0, 16, 4):  # 64-byte aligned (streamed where runs are whole lines), or not
        raw = np.empty(want.nbytes + 128, np.uint8)
        start = -raw.ctypes.data % 64 + skip
        y = raw[start:start + want.nbytes].view("float32").reshape(want.shape)
        layout.permute_call(a, y, perm, _kept(perm))()
        res.append(bool(np.array_equal(y, want)))
print(json.dumps(res))
"""


def test_a_large_permute_streams_its_output_and_gives_the_transposed_array():
    """From layout.STREAM_MIN bytes the permute writes with non-temporal stores where its output
    starts on a cache line and runs are whole lines (else plain stores): the same array."""
    res = json.loads(_python(_STREAM_PERMUTE, OARLOCK_NUM_THREADS="2").strip().splitlines()[-1])
    assert res == [True] * 9, res


_PROPS = """
import json, numpy as np, framework as fw, threadpoolctl
extra = fw.get_device_properties("cpu").extra
pools = [p for p in threadpoolctl.threadpool_info() if "numpy" in p["filepath"] and p["user_api"] == "blas"]
print(json.dumps({"extra": extra, "numpy": pools[:1]}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="no /proc/cpuinfo")
def test_cpu_properties_tell_the_cpu_family_and_numpys_blas_kernels():
    # an "AMD EPYC" is a Zen 4 (family 25) or a Zen 5 (26); an OPENBLAS_CORETYPE in the
    # environment (left as it is: some machines need it) forces OpenBLAS's kernels and is named
    got = json.loads(_python(_PROPS).strip().splitlines()[-1])
    with open("/proc/cpuinfo") as f:
        family = next((ln.split(":")[1].strip() for ln in f if ln.startswith("cpu family")), None)
    assert got["extra"].get("cpu_family") == family
    if not got["numpy"]:
        pytest.skip("threadpoolctl does not see numpy's BLAS here")
    pool = got["numpy"][0]
    blas = got["extra"]["numpy_blas"]
    assert blas.startswith(f"{pool['internal_api']} {pool['version']}"), blas
    if pool.get("architecture"):
        assert f"{pool['architecture']} kernels" in blas
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if pool["internal_api"] == "openblas":
        assert (f"OPENBLAS_CORETYPE={forced}" in blas) if forced else ("OPENBLAS_CORETYPE" not in blas), blas


# -- products and 1x1 convolutions that would be split, 50 times over (threads.split_products) --
_REPEAT = """
import json, numpy as np, framework as fw
import framework.nn.functional as F
from plugins.cpu import conv, gemm, threads
rng = np.random.default_rng(0)
fw.ones([1]).numpy()
res = {"blas": gemm.product_blas("f")[0], "team_blas": threads.split_products(gemm.product_blas("f")[0]),
       "conv_blas": gemm.blas_name("f"),
       "products": [], "convs": [], "conv_nt": []}
spied = conv._program
class Spy:  # the thread count conv.c gets (its last argument)
    def __init__(self, p):
        self.ffi, self._fn = p.ffi, p.fn
    def fn(self, *a):
        res["conv_nt"].append(a[-1])
        return self._fn(*a)
conv._program = lambda dt: (lambda p: p and Spy(p))(spied(dt))
for sa, sb, dt in [((1000, 688), (688, 256), "float32"), ((64, 1024), (1024, 192), "float32"),
                   ((517, 300), (300, 200), "float64")]:
    a = rng.standard_normal(sa).astype(dt); b = rng.standard_normal(sb).astype(dt)
    exact, numpy_bits = a.astype(np.float64) @ b.astype(np.float64), a @ b
    outs = [(fw.to_tensor(a) @ fw.to_tensor(b)).numpy() for _ in range(50)]
    res["products"].append([list(sa), all(np.array_equal(o, outs[0]) for o in outs),
                            all(np.array_equal(o, numpy_bits) for o in outs),
                            max(float(np.max(np.abs(o - exact)) / np.max(np.abs(exact))) for o in outs)])
# 1x1 convolutions on the BLAS path: in place (stride 1) and im2col (stride 2), two images
for xs, ws, stride in [((2, 64, 28, 28), (128, 64, 1, 1), 1), ((2, 128, 28, 28), (256, 128, 1, 1), 2)]:
    x = rng.standard_normal(xs).astype("float32"); w = rng.standard_normal(ws).astype("float32")
    xv = x[:, :, ::stride, ::stride]
    want = np.einsum("nchw,oc->nohw", xv.astype(np.float64), w[:, :, 0, 0].astype(np.float64))
    outs = [F.conv2d(fw.to_tensor(x), fw.to_tensor(w), stride=stride).numpy() for _ in range(50)]
    res["convs"].append([list(xs), stride, all(np.array_equal(o, outs[0]) for o in outs),
                         max(float(np.max(np.abs(o - want)) / np.max(np.abs(want))) for o in outs)])
print(json.dumps(res))
"""


@pytest.mark.parametrize("blas", ["numpy", "mkl", "onednn"])
def test_products_and_1x1_convs_that_would_be_split_give_the_same_right_values_50_times(blas):
    _skip_missing(blas)
    res = json.loads(_python(_REPEAT, OARLOCK_NUM_THREADS="2", OARLOCK_BLAS=blas).strip().splitlines()[-1])
    assert res["blas"] == blas
    # MKL, oneDNN: split over the team (concurrent calls, safe by contract); numpy's OpenBLAS: one call
    assert res["team_blas"] is (blas != "numpy")
    # conv.c calls a cblas: MKL's with MKL (split), numpy's otherwise (one call)
    assert res["conv_blas"] == ("mkl" if blas == "mkl" else "numpy")
    assert len(res["conv_nt"]) == 100 and set(res["conv_nt"]) == ({2} if blas == "mkl" else {1}), res[
        "conv_nt"
    ]
    for shape, same, numpy_bits, err in res["products"]:
        assert same and err < 1e-5, (shape, same, err)  # float32: ~1e-7 relative
        if blas == "numpy":
            assert numpy_bits, shape  # one call on one thread: numpy's own bits
    for shape, stride, same, err in res["convs"]:
        assert same and err < 1e-5, (shape, stride, same, err)

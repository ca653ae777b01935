"""Which OpenCL implementations the plugin offers: Intel's CPU runtime found through its wheel,
the build probe that leaves out a device whose compiler cannot build, and the settings that
make both paths run on any machine (OARLOCK_OPENCL_HIDE, OARLOCK_OPENCL_PROBE_FAIL).

Each scenario runs in a fresh process: the ICD loader reads its vendors folder once."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pyopencl", reason="pyopencl is not installed")

from plugins.opencl import platforms  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAS_INTEL = platforms.intel_cpu_library() is not None
needs_intel = pytest.mark.skipif(not HAS_INTEL, reason="intel-opencl-rt is not installed (x86-64 Linux only)")

# Lists the offered devices as JSON, then computes on opencl:0 and checks it against numpy.
_REPORT = """
import json, numpy as np, framework as fw
n = fw.device_count("opencl")
offered = [fw.get_device_properties(f"opencl:{i}").extra["implementation"] for i in range(n)]
out = {"offered": offered, "error": ""}
if offered:
    a = np.linspace(-3, 3, 1000, dtype=np.float32).reshape(10, 100)
    x = fw.to_tensor(a, place="opencl")
    y = fw.nn.functional.softmax(x * 2.0 + 1.0, axis=-1).sum(axis=0)
    e = np.exp(a * 2 + 1 - (a * 2 + 1).max(-1, keepdims=True))
    out["max_err"] = float(np.abs(y.numpy() - (e / e.sum(-1, keepdims=True)).sum(0)).max())
    out["device"] = str(x.device)
try:
    fw.to_tensor([1.0], place=f"opencl:{len(offered)}")
except fw.DeviceError as exc:
    out["error"] = str(exc)
out["unavailable"] = [out["error"].partition("not offered: ")[2]]
print("REPORT" + json.dumps(out))
"""


def _run(tmp_path, code: str, **env: str) -> dict:
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OCL_ICD_VENDORS", "OARLOCK_OPENCL_HIDE", "OARLOCK_OPENCL_PROBE_FAIL", "OARLOCK_DEVICE")
    }
    full.update(OARLOCK_CACHE_DIR=str(tmp_path / "cache"), **env)
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("REPORT")][-1]
    return json.loads(line[len("REPORT") :])


def test_implementation_names_and_order():
    assert platforms.implementation("Portable Computing Language") == "pocl"
    assert platforms.implementation("Intel(R) OpenCL") == "intel-cpu"
    assert platforms.implementation("Intel(R) OpenCL Graphics") == "intel-gpu"
    assert platforms.implementation("NVIDIA CUDA") == "nvidia"
    assert platforms.implementation("Some Vendor CL") == "some vendor cl"
    keys = sorted(
        [
            ("Intel(R) OpenCL", "cpu"),
            ("Portable Computing Language", "cpu"),
            ("NVIDIA CUDA", "gpu"),
            ("Other", "cpu"),
        ],
        key=lambda t: platforms.sort_key(*t),
    )
    assert [k[0] for k in keys] == ["NVIDIA CUDA", "Portable Computing Language", "Intel(R) OpenCL", "Other"]


def test_hide_matches_short_names_and_substrings(monkeypatch):
    monkeypatch.setenv("OARLOCK_OPENCL_HIDE", "pocl, nvidia")
    assert platforms.hidden("Portable Computing Language")
    assert platforms.hidden("NVIDIA CUDA")
    assert not platforms.hidden("Intel(R) OpenCL")
    monkeypatch.setenv("OARLOCK_OPENCL_HIDE", "intel(r)")
    assert platforms.hidden("Intel(R) OpenCL") and not platforms.hidden("Portable Computing Language")


@needs_intel
def test_configure_icd_points_the_loader_at_the_installed_library(tmp_path, monkeypatch):
    system = tmp_path / "etc-vendors"
    system.mkdir()
    (system / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    monkeypatch.setattr(platforms, "SYSTEM_VENDORS", system)
    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    folder = platforms.configure_icd()
    assert folder is not None and os.environ["OCL_ICD_VENDORS"] == folder
    files = {p.name: p.read_text() for p in pathlib.Path(folder).iterdir()}
    lib = platforms.intel_cpu_library()
    assert files["oarlock-intel-cpu.icd"].strip() == str(lib) and lib.name == "libintelocl.so"
    assert files["system-nvidia.icd"] == "libnvidia-opencl.so.1\n"  # GPU drivers stay visible
    # the user's own folder wins, untouched
    monkeypatch.setenv("OCL_ICD_VENDORS", "/somewhere/else")
    assert platforms.configure_icd() is None and os.environ["OCL_ICD_VENDORS"] == "/somewhere/else"


@needs_intel
def test_both_implementations_are_offered_and_compute(tmp_path):
    r = _run(tmp_path, _REPORT)
    print("offered:", r["offered"], "unavailable:", r["unavailable"])
    assert "intel-cpu" in r["offered"], r
    assert r["max_err"] < 1e-4 and r["device"] == "opencl:0"
    # bare "opencl" prefers PoCL where it builds; Intel's runtime comes after it
    if "pocl" in r["offered"]:
        assert r["offered"].index("pocl") < r["offered"].index("intel-cpu")


@needs_intel
def test_hidden_pocl_leaves_intel_as_opencl0(tmp_path):
    r = _run(tmp_path, _REPORT, OARLOCK_OPENCL_HIDE="pocl")
    assert r["offered"][0] == "intel-cpu" and "pocl" not in r["offered"]
    assert r["max_err"] < 1e-4
    assert any(
        "Portable Computing Language" in u and "hidden by OARLOCK_OPENCL_HIDE" in u for u in r["unavailable"]
    ), r


@needs_intel
def test_a_platform_that_cannot_build_is_left_out_with_reason_and_fix(tmp_path):
    """The Zen 5 case: PoCL lists a device but builds nothing; opencl:0 is Intel's runtime."""
    # on a real Zen 5 PoCL fails by itself, before the setting is read: the log is LLVM's
    natively_broken = "pocl" not in _run(tmp_path / "plain", _REPORT)["offered"]
    r = _run(tmp_path, _REPORT, OARLOCK_OPENCL_PROBE_FAIL="pocl")
    assert r["offered"] and r["offered"][0] == "intel-cpu" and "pocl" not in r["offered"], r
    assert r["max_err"] < 1e-4
    left = r["error"].partition("Portable Computing Language")[2]
    words = "error" if natively_broken else "OARLOCK_OPENCL_PROBE_FAIL"  # LLVM: "error: unknown target CPU"
    assert "cannot build a program" in left and words in left, left  # the compiler's words
    assert "pip install intel-opencl-rt" in left
    # asking for an index past the last names what was left out, and why
    assert "does not exist" in r["error"] and "cannot build a program" in r["error"]
    # the probe's outcome is cached on disk, per device and driver
    cached = json.loads((tmp_path / "cache" / "opencl" / "probe.json").read_text())
    assert sorted(v["ok"] for v in cached.values()) == [False, True]
    again = _run(tmp_path, _REPORT, OARLOCK_OPENCL_PROBE_FAIL="pocl")
    assert again["offered"] == r["offered"] and again["unavailable"] == r["unavailable"]


def test_no_device_can_build_gives_a_clear_error_not_a_build_log(tmp_path):
    code = """
    import framework as fw
    try:
        fw.to_tensor([1.0], place="opencl")
        print("REPORT" + '{"error": null}')
    except fw.DeviceError as exc:
        import json
        print("REPORT" + json.dumps({"error": str(exc)}))
    """
    r = _run(tmp_path, code, OARLOCK_OPENCL_PROBE_FAIL="pocl,intel,nvidia,amd")
    assert r["error"] and "no usable OpenCL device" in r["error"] and "cannot build a program" in r["error"]
    p = subprocess.run(
        [sys.executable, "-m", "framework.cli", "devices"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={
            **os.environ,
            "OARLOCK_CACHE_DIR": str(tmp_path / "cache"),
            "OARLOCK_OPENCL_PROBE_FAIL": "pocl,intel,nvidia,amd",
        },
    )
    assert "opencl: no usable OpenCL device" in p.stdout, p.stdout + p.stderr


def _offered() -> list[str]:
    import framework as fw

    return [
        fw.get_device_properties(f"opencl:{i}").extra["implementation"]
        for i in range(fw.device_count("opencl"))
    ]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_other_implementation_passes_the_plugin_suite():
    """CI tests every working implementation: the rest of the suite runs on opencl:0, this runs
    the plugin's tests and the primitive suite again with opencl:0's implementation hidden, so
    the next one (Intel's runtime where PoCL works, or PoCL on a GPU machine) becomes opencl:0."""
    offered = _offered()
    if len(set(offered)) < 2:
        pytest.skip(f"one working OpenCL implementation here ({offered or 'none'}); nothing else to test")
    first, second = offered[0], next(o for o in offered if o != offered[0])
    print(f"opencl:0 is {first}; running the plugin suite on {second}")
    env = {k: v for k, v in os.environ.items() if k not in ("OARLOCK_DEVICE", "OCL_ICD_VENDORS")}
    env.update(OARLOCK_OPENCL_HIDE=first)
    # by default the primitive suite and the plugin's kernel tests (the second implementation's
    # kernels, built and compared); the whole plugin suite nightly (CI's time budget)
    files = (
        ["tests/opencl", "tests/test_primitives.py"]
        if os.environ.get("OARLOCK_NIGHTLY") == "1"
        else [
            "tests/test_primitives.py",
            "tests/opencl/test_opencl_ops.py",
            "tests/opencl/test_opencl_generated.py",
        ]
    ) + [
        "--deselect",
        "tests/opencl/test_opencl_platforms.py::test_the_other_implementation_passes_the_plugin_suite",
    ]
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import framework as fw; print(fw.get_device_properties('opencl:0').extra['implementation'])",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert check.stdout.strip() == second, check.stdout + check.stderr
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert " passed" in p.stdout and "failed" not in p.stdout

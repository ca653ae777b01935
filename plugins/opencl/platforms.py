"""Which OpenCL implementations this machine has, and which of them can build a program.

Two CPU implementations come from pip: PoCL (``pocl-binary-distribution``) and Intel's CPU
runtime (``intel-opencl-rt``). Each fails somewhere the other works: PoCL 3.0's bundled LLVM
does not know newer CPUs (AMD Zen 5 gives "unknown target CPU 'generic'" on every build),
while Intel's wheel installs an ICD file whose library path is a build-time placeholder, so
the ICD loader never finds it. This module

* points the ICD loader at the installed Intel library (:func:`configure_icd`), before
  pyopencl first asks for platforms, unless the user set ``OCL_ICD_VENDORS``;
* builds a tiny program once on every device (:func:`probe`, cached on disk) so a device whose
  compiler cannot build is listed as unavailable, with the reason and the fix, instead of
  failing on the user's first op;
* hides platforms named in ``OARLOCK_OPENCL_HIDE`` (e.g. ``pocl``), so the Intel path runs
  anywhere, and fails the probe on platforms named in ``OARLOCK_OPENCL_PROBE_FAIL`` (a real
  build of a program that does not compile), so the failure path runs anywhere too.

Importing this module does not import pyopencl.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

#: the program every device must build before it is offered
PROBE_SOURCE = "__kernel void oarlock_probe(__global float *a) { a[get_global_id(0)] = 1.0f; }\n"
#: what makes the probe fail on purpose (OARLOCK_OPENCL_PROBE_FAIL): a genuine compile error
_BROKEN_SOURCE = "#error the probe was asked to fail by OARLOCK_OPENCL_PROBE_FAIL\n"
_PROBE_VERSION = 1

#: short names of implementations, by a substring of the platform name
_IMPLEMENTATIONS = (
    ("portable computing language", "pocl"),
    ("intel(r) opencl graphics", "intel-gpu"),
    ("intel(r) opencl", "intel-cpu"),
    ("intel(r) fpga", "intel-fpga-emu"),
    ("nvidia", "nvidia"),
    ("amd accelerated parallel processing", "amd"),
    ("rusticl", "rusticl"),
    ("clover", "clover"),
)
#: CPU implementations in the order a bare "opencl" prefers them (PoCL first: the plugin's
#: CPU kernel shapes were tuned on it; Intel's runtime is there where PoCL cannot build)
_CPU_PREFERENCE = {"pocl": 0, "intel-cpu": 1}
#: the system's ICD folder, whose drivers (GPUs) stay visible when Intel's is added
SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")

FIX_BUILD = (
    "pip install intel-opencl-rt intel-cmplr-lib-rt (Intel's CPU OpenCL runtime; Oarlock finds "
    "it by itself), or install a newer OpenCL driver for this device"
)


def implementation(platform_name: str) -> str:
    """A short name for the OpenCL implementation behind a platform (``pocl``, ``intel-cpu``…)."""
    low = platform_name.lower()
    for key, short in _IMPLEMENTATIONS:
        if key in low:
            return short
    return low.strip() or "unknown"


def _names(env: str) -> list[str]:
    return [s.strip().lower() for s in os.environ.get(env, "").split(",") if s.strip()]


def _matches(patterns: list[str], platform_name: str) -> bool:
    low, short = platform_name.lower(), implementation(platform_name)
    return any(p == short or p in low for p in patterns)


def hidden(platform_name: str) -> bool:
    """True when ``OARLOCK_OPENCL_HIDE`` names this platform (its short name or a substring)."""
    return _matches(_names("OARLOCK_OPENCL_HIDE"), platform_name)


def sort_key(platform_name: str, device_type: str) -> tuple[int, int, str]:
    """GPUs and accelerators first, then CPUs (PoCL before Intel's runtime), then by name."""
    kind = 0 if ("gpu" in device_type or "accelerator" in device_type) else 1
    return kind, _CPU_PREFERENCE.get(implementation(platform_name), 2), platform_name


# -- the ICD loader --------------------------------------------------------------------------
def intel_cpu_library() -> Path | None:
    """``libintelocl.so`` of the installed ``intel-opencl-rt`` wheel, or None."""
    try:
        dist = metadata.distribution("intel-opencl-rt")
    except metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.name == "libintelocl.so":
            path = Path(str(dist.locate_file(f))).resolve()
            if path.exists():
                return path
    return None


def _vendors_root() -> Path:
    env = os.environ.get("OARLOCK_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("oarlock"))


def _write_text(path: Path, text: str) -> None:
    if path.exists() and path.read_text() == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def configure_icd() -> str | None:
    """Make the ICD loader see Intel's CPU runtime when its wheel is installed.

    Writes a vendors folder holding one ``.icd`` file for the installed ``libintelocl.so`` and
    a copy of every ICD file of the system folder (``/etc/OpenCL/vendors``: GPU drivers keep
    working), and sets ``OCL_ICD_VENDORS`` to it. pyopencl's own ICDs (PoCL) are found as
    before. Does nothing when the user set ``OCL_ICD_VENDORS`` or the wheel is absent; must
    run before the first ``clGetPlatformIDs`` of the process. Returns the folder, or None.
    """
    if "OCL_ICD_VENDORS" in os.environ:
        return None
    lib = intel_cpu_library()
    if lib is None:
        return None
    entries = {"oarlock-intel-cpu.icd": f"{lib}\n"}
    system = SYSTEM_VENDORS
    if system.is_dir():
        for icd in sorted(system.glob("*.icd")):
            try:
                text = icd.read_text()
            except OSError:
                continue
            if str(lib) not in text:
                entries[f"system-{icd.name}"] = text
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]
    folder = _vendors_root() / "opencl" / f"vendors-{digest}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in entries.items():
            _write_text(folder / name, text)
    except OSError as exc:  # a read-only cache: Intel's runtime stays invisible, PoCL works
        print(
            f"[opencl] cannot write the ICD vendors folder {folder} ({exc}); Intel's CPU "
            f"runtime is not offered; set OARLOCK_CACHE_DIR to a writable folder",
            file=sys.stderr,
        )
        return None
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return str(folder)


# -- the probe -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    reason: str = ""  #: the compiler's own words when it could not build


def _probe_key(device: Any, broken: bool) -> str:
    p = device.platform
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(("POCL_", "CL_CONFIG_")))
    parts = [
        _PROBE_VERSION,
        p.name,
        p.version,
        device.name,
        device.version,
        device.driver_version,
        env,
        broken,
        sys.platform,
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _probe_file() -> Path:
    return _vendors_root() / "opencl" / "probe.json"


def _load_cache() -> dict[str, Any]:
    try:
        data = json.loads(_probe_file().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_cache(data: dict[str, Any]) -> None:
    try:
        path = _probe_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_text(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass  # NOTE: a read-only cache only costs the probe again next time


def _first_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    line = (errors or lines or ["(no compiler output)"])[0]
    return line if len(line) <= 240 else line[:240] + " ..."


def _build(device: Any, source: str) -> ProbeResult:
    import pyopencl as cl

    try:
        with warnings.catch_warnings():  # NOTE: a compiler's remarks on a good build are noise here
            warnings.simplefilter("ignore")
            ctx = cl.Context([device])  # NOTE: held until the kernel exists (Intel's runtime checks)
            prg = cl.Program(ctx, source).build()
            cl.Kernel(prg, "oarlock_probe")
    except (cl.Error, RuntimeError) as exc:
        return ProbeResult(False, _first_error_line(str(exc)))
    return ProbeResult(True)


def probe(devices: list[Any]) -> list[ProbeResult]:
    """Build :data:`PROBE_SOURCE` on each pyopencl device; results cached on disk per device,
    driver and compiler environment (``POCL_*``), so each is built once per machine."""
    fail = _names("OARLOCK_OPENCL_PROBE_FAIL")
    cache = _load_cache()
    out, changed = [], False
    for d in devices:
        broken = _matches(fail, d.platform.name)
        key = _probe_key(d, broken)
        hit = cache.get(key)
        if isinstance(hit, dict) and isinstance(hit.get("ok"), bool):
            out.append(ProbeResult(hit["ok"], str(hit.get("reason", ""))))
            continue
        res = _build(d, _BROKEN_SOURCE if broken else PROBE_SOURCE)
        cache[key] = {"ok": res.ok, "reason": res.reason, "device": d.name, "platform": d.platform.name}
        changed = True
        out.append(res)
    if changed:
        _save_cache(cache)
    return out

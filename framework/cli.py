"""The ``oarlock`` command: ``devices``, ``conformance``, ``launch``."""

from __future__ import annotations

import argparse
import importlib
import sys


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def cmd_devices(args: argparse.Namespace) -> int:
    """Each plugin, its contract version, its devices with properties, kernels, load errors."""
    import framework as fw
    from framework._src import device as _dev
    from framework._src.plugins import host, probe_for_crashes

    h = host(skip=probe_for_crashes())  # a plugin that segfaults while loading is shown, not fatal
    print(f"oarlock {fw.__version__}, adapter contract {fw.CONTRACT_VERSION[0]}.{fw.CONTRACT_VERSION[1]}")
    status = 0
    for name, rec in sorted(h.records.items(), key=lambda kv: (kv[0] != "cpu", kv[0])):
        contract = f"{rec.contract[0]}.{rec.contract[1]}" if rec.contract else "?"
        version = f" {rec.version}" if rec.version else ""
        source = f", loaded from {rec.loaded_from}" if rec.loaded_from else ""
        print(f"\nplugin {name} ({rec.module}){version}{source}, contract {contract}")
        if rec.error:
            print("  status: FAILED TO LOAD")
            for line in rec.error.splitlines():
                print(f"  {line}")
            continue
        kernels = [k for k, e in h.registry.kernels.items() if e.plugin == name]
        ops = sorted({k[0] for k in kernels})
        for dt_name in rec.device_types:
            t = _dev.device_type(dt_name)
            try:
                n = t.runtime.device_count()
            except Exception as exc:  # noqa: BLE001 — a broken runtime is shown, not raised
                print(f"  {dt_name}: runtime failed: {exc}")
                status = 1
                continue
            if n == 0:
                reason = getattr(t.runtime, "unavailable_reason", None) or "the runtime reports 0 devices"
                text = (
                    reason if reason.lower().startswith("no ") else f"no {dt_name.upper()} device ({reason})"
                )
                print(f"  {dt_name}: {text}")
            for i in range(n):
                p = t.runtime.properties(i)
                print(f"  {dt_name}:{i}  {p.name}  [{p.vendor}]")
                print(f"    memory {_fmt_bytes(p.total_memory)}, compute units {p.compute_units}")
                if p.driver_version or p.runtime_version:
                    print(f"    driver {p.driver_version}  runtime {p.runtime_version}")
                if p.dtypes:
                    print(f"    dtypes {', '.join(p.dtypes)}")
                for k, v in sorted(p.extra.items()):
                    print(f"    {k}: {v}")
            if n:  # devices the runtime found but does not offer (a runtime may list them)
                for left_out in getattr(t.runtime, "unavailable", ()):
                    print(f"  {dt_name}: not offered: {left_out}")
        by_dev: dict[str, int] = {}
        for k in kernels:
            by_dev[k[1]] = by_dev.get(k[1], 0) + 1
        extras = []
        if any(e[0] == name for e in h.registry.compilers.values()):
            extras.append("compile access")
        if any(e[0] == name for e in h.registry.communicators.values()):
            extras.append("collectives")
        print(
            f"  kernels: {len(ops)} ops, {len(kernels)} (op, dtype) pairs"
            + (f"; {', '.join(extras)}" if extras else "")
        )
        for line in rec.overrides:
            print(f"  overrides: {line}")
        if args.verbose:
            print("    " + " ".join(ops))
    return status


def _delegate(module: str, argv: list[str]) -> int:
    mod = importlib.import_module(module)
    return int(mod.main(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="oarlock", description="Oarlock: every device is a plugin.")
    sub = parser.add_subparsers(dest="cmd")
    p_dev = sub.add_parser("devices", help="list plugins, devices, kernels and load errors")
    p_dev.add_argument("-v", "--verbose", action="store_true", help="list every registered op")
    sub.add_parser("conformance", help="run the conformance suite on a device (see --help)", add_help=False)
    sub.add_parser("launch", help="start a multi-process run under mpiexec (see --help)", add_help=False)
    if argv and argv[0] == "conformance":
        return _delegate("conformance.cli", argv[1:])
    if argv and argv[0] == "launch":
        return _delegate("framework.distributed.launch", argv[1:])
    args = parser.parse_args(argv)
    if args.cmd == "devices":
        return cmd_devices(args)
    parser.print_help()
    return 2


def _entry() -> int:
    try:
        return main()
    except BrokenPipeError:  # `oarlock devices | head`: the reader left; not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(_entry())

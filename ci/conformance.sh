#!/usr/bin/env bash
# Conformance suite on the cpu reference, OpenCL (PoCL) and the example vendor plugin, which
# is installed with pip from its own folder first. Reports go to $CONFORMANCE_OUT
# (default reports/conformance): <device>.json, .xml (JUnit) and .html.
# Exit status: non-zero when a required tier fails on any of the three devices.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${CONFORMANCE_OUT:-reports/conformance}
JOBS=${CONFORMANCE_JOBS:-2}
mkdir -p "$OUT"
python -m pip install -q ./examples/vendor_plugin || exit 1
status=0
for dev in cpu opencl simdev; do
    echo "=== oarlock conformance --device $dev ==="
    start=$SECONDS
    oarlock conformance --device "$dev" -j "$JOBS" \
        --json "$OUT/$dev.json" --junit "$OUT/$dev.xml" --html "$OUT/$dev.html" || status=1
    echo "=== $dev: $((SECONDS - start)) s ==="
done
exit $status

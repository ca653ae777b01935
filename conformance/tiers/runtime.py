"""Tier ``runtime``: memory, statistics, copies, streams, events, isolation, refusal of huge
allocations. Calls the plugin's :class:`DeviceRuntime` directly where offsets matter, and the
public API (``fw.memory_stats``, ``fw.Stream``, ``fw.Event``) elsewhere."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..cases import Case, Target
from ..checks import CheckFailure, assert_close

SIZES = (1, 3, 8, 63, 64, 1000, 4096, 65537, 1 << 20)
OFFSETS = (0, 1, 4, 7, 64, 100)


def _rt(device: str) -> tuple[Any, int, Any]:
    from framework.testing import runtime_of

    return runtime_of(device)


def _read(rt: Any, idx: int, buf: Any, offset: int, n: int, stream: Any) -> np.ndarray:
    out = np.empty(n, np.uint8)
    if n:
        rt.copy_d2h(idx, out, buf, offset, stream, True)
    return out


def properties(device: str) -> dict[str, Any]:
    import framework as fw

    rt, idx, _ = _rt(device)
    n = rt.device_count()
    if not isinstance(n, int) or n < 1:
        raise CheckFailure(f"device_count() returned {n!r}; expected an int >= 1", ">= 1", n)
    p = fw.get_device_properties(device)
    if not p.name:
        raise CheckFailure("properties().name is empty; give the device a name", "a name", repr(p.name))
    return {"properties": {k: (list(v) if isinstance(v, tuple) else v) for k, v in p.__dict__.items()}}


def allocation_and_stats(device: str) -> None:
    import framework as fw

    fw.empty_cache(device)
    before = fw.memory_stats(device)
    x = fw.zeros((1000,), dtype="float32", device=device)
    mid = fw.memory_stats(device)
    if mid["allocated_bytes"] < before["allocated_bytes"] + 4000:
        raise CheckFailure(
            "allocated_bytes did not grow by the 4000 bytes of a new tensor",
            f">= {before['allocated_bytes'] + 4000}",
            mid["allocated_bytes"],
        )
    if mid["peak_allocated_bytes"] < mid["allocated_bytes"]:
        raise CheckFailure(
            "peak_allocated_bytes below allocated_bytes", mid["allocated_bytes"], mid["peak_allocated_bytes"]
        )
    del x
    after = fw.memory_stats(device)
    if after["allocated_bytes"] != before["allocated_bytes"]:
        raise CheckFailure(
            "allocated_bytes did not return to its value after the tensor was freed",
            before["allocated_bytes"],
            after["allocated_bytes"],
        )
    fw.empty_cache(device)
    emptied = fw.memory_stats(device)
    if emptied["reserved_bytes"] > after["reserved_bytes"]:
        raise CheckFailure(
            "empty_cache() did not release reserved memory",
            f"<= {after['reserved_bytes']}",
            emptied["reserved_bytes"],
        )
    rt, idx, stream = _rt(device)
    bufs = [rt.allocate(idx, n) for n in (0, 1, 4096, 1 << 20)]
    for b in bufs:
        rt.free(idx, b)


def copy_roundtrip(device: str) -> None:
    rt, idx, stream = _rt(device)
    rng = np.random.default_rng(0)
    for n in SIZES:
        for off in OFFSETS:
            data = rng.integers(0, 256, n, dtype=np.uint8)
            buf = rt.allocate(idx, n + off + 16)
            rt.copy_h2d(idx, buf, off, data, stream, True)
            back = _read(rt, idx, buf, off, n, stream)
            if not np.array_equal(back, data):
                raise CheckFailure(
                    f"host->device->host round trip of {n} bytes at offset {off} changed the bytes",
                    data[:16],
                    back[:16],
                )
            other = rt.allocate(idx, n + 32)
            rt.copy_d2d(idx, other, 5, buf, off, n, stream, True)
            back2 = _read(rt, idx, other, 5, n, stream)
            if not np.array_equal(back2, data):
                raise CheckFailure(
                    f"device->device copy of {n} bytes (from offset {off} to 5) changed the bytes",
                    data[:16],
                    back2[:16],
                )
            rt.free(idx, buf)
            rt.free(idx, other)
    # typed round trips through the public API
    import framework as fw

    held = set(fw.get_device_properties(device).dtypes or ()) or {"float32", "int64", "bool"}
    for dt in sorted(held & {"float32", "float64", "int64", "int32", "int8", "uint8", "bool", "float16"}):
        a = (rng.standard_normal((3, 7)) * 10).astype(dt)
        t = fw.to_tensor(a, dtype=dt, device=device)
        assert_close(t.numpy(), a, 0, 0, f"to_tensor/numpy round trip of {dt}")


def async_copies_with_events(device: str) -> None:
    """Non-blocking copies on two streams, ordered only by an event."""
    rt, idx, _ = _rt(device)
    s1, s2 = rt.create_stream(idx), rt.create_stream(idx)
    n = 1 << 22
    data = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    a, b = rt.allocate(idx, n), rt.allocate(idx, n)
    rt.memset(idx, b, 0, 0, n, s2)
    rt.synchronize_stream(s2)
    for round_ in range(3):
        src = np.ascontiguousarray(np.roll(data, round_))
        rt.copy_h2d(idx, a, 0, src, s1, False)
        ev = rt.create_event(idx)
        rt.record_event(ev, s1)
        rt.stream_wait_event(s2, ev)
        rt.copy_d2d(idx, b, 0, a, 0, n, s2, False)
        done = rt.create_event(idx)
        rt.record_event(done, s2)
        rt.synchronize_event(done)
        if not rt.query_event(done):
            raise CheckFailure("query_event() is False after synchronize_event()", True, False)
        back = _read(rt, idx, b, 0, n, s2)
        if not np.array_equal(back, src):
            bad = int(np.count_nonzero(back != src))
            raise CheckFailure(
                f"round {round_}: a copy on stream 2 that waits for an event on stream 1 saw "
                f"stale data ({bad} of {n} bytes differ)",
                src[:16],
                back[:16],
            )
    rt.synchronize_stream(s1)
    rt.synchronize_stream(s2)
    if not (rt.query_stream(s1) and rt.query_stream(s2)):
        raise CheckFailure("query_stream() is False after synchronize_stream()", True, False)
    rt.free(idx, a)
    rt.free(idx, b)


def stream_waits_event(device: str) -> None:
    """Kernels on two streams through the public API, ordered by an event."""
    import framework as fw

    x = fw.to_tensor(np.arange(200_000, dtype=np.float32), device=device)
    s1, s2 = fw.Stream(device), fw.Stream(device)
    with fw.stream(s1):
        y = x * 2.0 + 1.0
        for _ in range(4):
            y = y * 1.0
    ev = s1.record_event()
    s2.wait_event(ev)
    with fw.stream(s2):
        z = y - 1.0
    s2.synchronize()
    want = np.arange(200_000, dtype=np.float32) * 2.0
    assert_close(z.numpy(), want, 0, 0, "y = 2x + 1 on stream 1, then z = y - 1 on stream 2 after an event")
    if not ev.query():
        raise CheckFailure(
            "an event is not complete after the stream that waited on it synchronized", True, False
        )


def memset(device: str) -> None:
    rt, idx, stream = _rt(device)
    for n, off, count in [(64, 0, 64), (1000, 3, 500), (4096, 100, 1), (1 << 20, 17, (1 << 20) - 40)]:
        buf = rt.allocate(idx, n)
        rt.copy_h2d(idx, buf, 0, np.full(n, 0x11, np.uint8), stream, True)
        rt.memset(idx, buf, off, 0xAB, count, stream)
        got = _read(rt, idx, buf, 0, n, stream)
        want = np.full(n, 0x11, np.uint8)
        want[off : off + count] = 0xAB
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)
            raise CheckFailure(
                f"memset of {count} bytes at offset {off} in a {n}-byte buffer: {bad.size} bytes wrong, "
                f"first at {int(bad[0])}",
                hex(int(want[bad[0]])),
                hex(int(got[bad[0]])),
            )
        rt.free(idx, buf)


#: Host sleep between two events in the units check of elapsed_ms.
SLEEP_MS = 100.0


def elapsed_ms(device: str) -> dict[str, Any]:
    """Milliseconds, checked against a host sleep: the first event has completed (its stream
    was synchronized) before the sleep, the second cannot complete before it is recorded after
    it, so ``elapsed_ms`` is at least the sleep whatever the device's clock, and at most the
    host's wall time around the whole (both bounds loose by 2x: they cannot flake)."""
    import time

    import framework as fw

    x = fw.ones((512, 512), dtype="float32", device=device)
    e0, e1 = fw.Event(device), fw.Event(device)
    e0.record()
    for _ in range(3):
        x = x @ x * (1.0 / 512.0)
    e1.record()
    e1.synchronize()
    work_ms = e0.elapsed_time(e1)
    if not (isinstance(work_ms, float) and math.isfinite(work_ms) and work_ms >= 0.0):
        raise CheckFailure(
            "elapsed_ms() between two completed events must be a finite float >= 0", ">= 0.0", work_ms
        )
    assert_close(x.numpy()[:2, :2], np.ones((2, 2), np.float32), 1e-5, 1e-6, "work timed between the events")

    rt, idx, _ = _rt(device)
    s = rt.create_stream(idx)
    a, b = rt.create_event(idx), rt.create_event(idx)
    t0 = time.perf_counter()
    rt.record_event(a, s)
    rt.synchronize_stream(s)
    time.sleep(SLEEP_MS / 1000.0)
    rt.record_event(b, s)
    rt.synchronize_event(b)
    wall = (time.perf_counter() - t0) * 1000.0
    ms = rt.elapsed_ms(a, b)
    lo, hi = SLEEP_MS / 2, 2 * wall + 50.0
    if not (isinstance(ms, float) and lo <= ms <= hi):
        raise CheckFailure(
            f"elapsed_ms() across a {SLEEP_MS:g} ms host sleep (wall time {wall:.1f} ms) returned {ms!r}; "
            f"it must be in milliseconds (a value in seconds or microseconds is off by 1000x)",
            f"a float in [{lo:g}, {hi:.1f}]",
            ms,
        )
    return {"elapsed_ms": work_ms, "sleep_elapsed_ms": ms}


def _completion(device: str, method: str) -> dict[str, Any]:
    """Work queued on a created stream 1 (a non-blocking upload, then device-to-device copies),
    then ``method`` says it is done (``synchronize``: the whole device); a read on a third stream, ordered with nothing, must then see
    the finished result. A method that answers early shows as stale bytes."""
    import time

    rt, idx, _ = _rt(device)
    s1, s3 = rt.create_stream(idx), rt.create_stream(idx)
    n = 1 << 24
    rng = np.random.default_rng(7)
    a, b = rt.allocate(idx, n), rt.allocate(idx, n)
    rt.memset(idx, b, 0, 0, n, s1)
    rt.synchronize_stream(s1)
    keep = []
    for round_ in range(2):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        keep.append(data)  # a non-blocking upload's source stays alive until the end
        rt.copy_h2d(idx, a, 0, data, s1, False)
        for _ in range(2):
            rt.copy_d2d(idx, b, 0, a, 0, n, s1, False)
            rt.copy_d2d(idx, a, 0, b, 0, n, s1, False)
        rt.copy_d2d(idx, b, 0, a, 0, n, s1, False)
        waited = 0.0
        if method == "synchronize_stream":
            rt.synchronize_stream(s1)
        elif method == "synchronize_device":  # every stream of the device, created ones included
            rt.synchronize(idx)
        else:
            ev = None
            if method == "query_event":
                ev = rt.create_event(idx)
                rt.record_event(ev, s1)
            t0 = time.perf_counter()
            while not (rt.query_event(ev) if ev is not None else rt.query_stream(s1)):
                if time.perf_counter() - t0 > 60:
                    raise CheckFailure(f"{method}() still says the work is not done after 60 s", True, False)
                time.sleep(0.001)
            waited = time.perf_counter() - t0
        back = _read(rt, idx, b, 0, n, s3)
        if not np.array_equal(back, data):
            bad = int(np.count_nonzero(back != data))
            what = f"{method}()" if method != "synchronize_device" else f"{method}: synchronize({idx})"
            raise CheckFailure(
                f"{what} answered before the work on its stream was done: a read on another stream "
                f"right after it saw stale data ({bad} of {n} bytes differ, round {round_})",
                data[:16],
                back[:16],
            )
    rt.synchronize_stream(s1)
    rt.free(idx, a)
    rt.free(idx, b)
    return {"waited_s": waited}


def query_event(device: str) -> dict[str, Any]:
    return _completion(device, "query_event")


def query_stream(device: str) -> dict[str, Any]:
    return _completion(device, "query_stream")


def synchronize_stream(device: str) -> dict[str, Any]:
    return _completion(device, "synchronize_stream")


def synchronize_device(device: str) -> dict[str, Any]:
    """``synchronize(index)`` waits for the non-blocking copies queued on a created stream too."""
    return _completion(device, "synchronize_device")


def isolation(device: str) -> None:
    import framework as fw

    a = fw.full((4096,), 1.0, dtype="float32", device=device)
    b = fw.full((4096,), 2.0, dtype="float32", device=device)
    c = a + b
    a2 = a * 0.0
    assert_close(b.numpy(), np.full(4096, 2.0, np.float32), 0, 0, "a tensor next to others must not change")
    assert_close(c.numpy(), np.full(4096, 3.0, np.float32), 0, 0, "a + b")
    assert_close(a2.numpy(), np.zeros(4096, np.float32), 0, 0, "a * 0")
    d = fw.get_device() if device is None else device
    typ = str(d).split(":")[0]
    if fw.device_count(typ) >= 2:
        other = f"{typ}:1"
        o = fw.full((16,), 5.0, dtype="float32", device=other)
        if str(o.device) != other:
            raise CheckFailure("a tensor created on device 1 reports another device", other, str(o.device))
        assert_close((o + 1.0).numpy(), np.full(16, 6.0, np.float32), 0, 0, "work on device 1")
    if typ != "cpu":
        h = fw.ones((3,), dtype="float32", device="cpu")
        try:
            _ = a[:3] + h
        except fw.OarlockError as exc:
            if "device" not in str(exc):
                raise CheckFailure(
                    "mixing devices in one op raised an error that does not mention devices",
                    "DeviceMismatchError",
                    str(exc),
                ) from exc
        else:
            raise CheckFailure(
                "adding a cpu tensor to a device tensor did not raise", "DeviceMismatchError", "no error"
            )


def huge_allocation(device: str) -> None:
    import framework as fw

    huge = 1 << 50  # 1 PiB: above any device's memory and any 47-bit address space
    try:
        fw.empty((huge,), dtype="uint8", device=device)
    except fw.OutOfMemoryError as exc:
        if "memory" not in str(exc).lower():
            raise CheckFailure(
                "the out-of-memory error does not say so", "'out of memory ...'", str(exc)
            ) from exc
    except Exception as exc:  # noqa: BLE001
        raise CheckFailure(
            f"a {huge}-byte allocation raised {type(exc).__name__}, not adapter_api.OutOfMemoryError; "
            f"raise OutOfMemoryError from DeviceRuntime.allocate",
            "OutOfMemoryError",
            f"{type(exc).__name__}: {exc}",
        ) from exc
    else:
        raise CheckFailure(f"a {huge}-byte allocation succeeded", "OutOfMemoryError", "no error")
    x = fw.full((8,), 3.0, dtype="float32", device=device)
    assert_close(
        (x * 2.0).numpy(), np.full(8, 6.0, np.float32), 0, 0, "the device after a refused allocation"
    )


def synchronize(device: str) -> None:
    import framework as fw

    x = fw.ones((1000,), dtype="float32", device=device) * 3.0
    fw.synchronize(device)
    assert_close(x.numpy(), np.full(1000, 3.0, np.float32), 0, 0, "after fw.synchronize")


CHECKS = [
    properties,
    allocation_and_stats,
    copy_roundtrip,
    async_copies_with_events,
    stream_waits_event,
    memset,
    elapsed_ms,
    query_event,
    query_stream,
    synchronize_stream,
    synchronize_device,
    isolation,
    huge_allocation,
    synchronize,
]


def cases(target: Target) -> list[Case]:
    return [Case(f"runtime/{fn.__name__}", "runtime", (lambda fn=fn: fn(target.device))) for fn in CHECKS]

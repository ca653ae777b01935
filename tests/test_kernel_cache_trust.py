"""The kernel cache trusts only entries signed with the user's key, reads only regular files,
and says who holds a lock it waits for (issue 35, "nothing silent")."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import framework as fw
from framework import compiler
from framework.compiler import cache as C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY = "kc_trust"


@pytest.fixture
def keyfile(tmp_path, monkeypatch):
    path = tmp_path / "config" / "kernel-cache.key"
    monkeypatch.setenv("OARLOCK_CACHE_KEY_FILE", str(path))
    return path


def _probe(cache):
    comp = compiler.compiler_for(fw.Device("cpu"))
    prog = cache.get(comp, compiler.trivial_kernel("c", ENTRY), ENTRY)
    x = np.arange(5, dtype=np.float32)
    y = np.zeros(5, np.float32)
    comp.launch(prog, [y, x, np.float32(2), np.int64(5)], (5,), None, None)
    np.testing.assert_array_equal(y, 2 * x + 1)


def _entry_path(cache):
    comp = compiler.compiler_for(fw.Device("cpu"))
    return cache.path(C.program_key(comp, compiler.trivial_kernel("c", ENTRY), ENTRY, ()))


def _evil_binary(marker) -> bytes:
    """The trivial kernel plus a constructor that writes ``marker`` when the library is loaded."""
    comp = compiler.compiler_for(fw.Device("cpu"))
    src = compiler.trivial_kernel("c", ENTRY) + textwrap.dedent(
        f"""
        #include <stdio.h>
        __attribute__((constructor)) static void oarlock_test_evil(void) {{
            FILE *f = fopen("{marker}", "w");
            if (f) {{ fputs("ran", f); fclose(f); }}
        }}
        """
    )
    return comp.compile(src, ENTRY, ())


def test_the_key_is_made_private_outside_the_cache_folder(tmp_path, keyfile):
    cache = compiler.ProgramCache(tmp_path / "kernels")
    _probe(cache)
    assert keyfile.exists() and stat.S_IMODE(os.stat(keyfile).st_mode) == 0o600
    assert keyfile.stat().st_size == 32
    assert not (tmp_path / "kernels" / "kernel-cache.key").exists()
    again = compiler.ProgramCache(tmp_path / "kernels")
    _probe(again)
    assert (again.stats.compiles, again.stats.disk_hits) == (0, 1)


def test_a_key_file_others_can_read_is_refused(tmp_path, keyfile):
    keyfile.parent.mkdir(parents=True)
    keyfile.write_bytes(bytes(32))
    os.chmod(keyfile, 0o644)
    C._SECRETS.pop(str(keyfile), None)
    with pytest.raises(C.CacheFolderError, match=r"may be read or written by others \(mode 0644\)"):
        _probe(compiler.ProgramCache(tmp_path / "kernels"))


def test_a_forged_entry_is_never_loaded_and_its_constructor_never_runs(tmp_path, keyfile):
    cache = compiler.ProgramCache(tmp_path / "kernels")
    _probe(cache)  # makes the folders and the key
    path = _entry_path(cache)
    marker = tmp_path / "constructor-ran"
    key = C.program_key(
        compiler.compiler_for(fw.Device("cpu")), compiler.trivial_kernel("c", ENTRY), ENTRY, ()
    )
    # a forger who can write the cache folder recomputes every digest, but does not have the key
    path.write_bytes(C.pack_entry(key, _evil_binary(marker), secret=os.urandom(32)))
    fresh = compiler.ProgramCache(tmp_path / "kernels")
    with pytest.warns(C.CacheEntryWarning, match=r"its HMAC does not match .*; rebuilding it"):
        _probe(fresh)
    assert not marker.exists()
    assert fresh.stats.compiles == 1 and fresh.stats.rebuilt == 1
    # the control: the same binary signed with the user's key is loaded, and its constructor runs
    path.write_bytes(C.pack_entry(key, _evil_binary(marker)))
    _probe(compiler.ProgramCache(tmp_path / "kernels"))
    assert marker.read_text() == "ran"


def _child(tmp_path, keyfile, code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a child (a cache read that blocks or eats memory cannot take the test
    process down): address space capped at 8 GiB."""

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))

    prelude = textwrap.dedent(
        f"""
        import warnings, numpy as np, framework as fw
        from framework import compiler
        cache = compiler.ProgramCache({str(tmp_path / "kernels")!r})
        comp = compiler.compiler_for(fw.Device("cpu"))
        def probe():
            prog = cache.get(comp, compiler.trivial_kernel("c", {ENTRY!r}), {ENTRY!r})
            x = np.arange(5, dtype=np.float32); y = np.zeros(5, np.float32)
            comp.launch(prog, [y, x, np.float32(2), np.int64(5)], (5,), None, None)
            return y.tolist()
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OARLOCK_CACHE_KEY_FILE": str(keyfile),
    }
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        preexec_fn=cap,
    )


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "too large"])
def test_an_entry_that_is_not_a_regular_file_is_not_read(tmp_path, keyfile, kind):
    cache = compiler.ProgramCache(tmp_path / "kernels")
    _probe(cache)
    path = _entry_path(cache)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
        why = "it is a FIFO, not a regular file"
    elif kind == "link to /dev/zero":
        os.symlink("/dev/zero", path)
        why = "it is a symbolic link, not a regular file"
    else:
        with open(path, "wb") as f:
            f.truncate(C.MAX_ENTRY_BYTES + 1)  # sparse: no disk used
        why = f"it is {C.MAX_ENTRY_BYTES + 1} bytes, more than the {C.MAX_ENTRY_BYTES}"
    r = _child(
        tmp_path,
        keyfile,
        """
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            print(probe())
        print([str(m.message) for m in w])
        """,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out, msgs = r.stdout.splitlines()[:2]
    assert out == "[1.0, 3.0, 5.0, 7.0, 9.0]"
    assert str(path) in msgs and why in msgs, msgs
    assert stat.S_ISREG(os.lstat(path).st_mode)  # rebuilt as a regular file


def test_a_held_lock_names_its_holder_and_the_wait_is_bounded(tmp_path, keyfile, monkeypatch):
    cache = compiler.ProgramCache(tmp_path / "kernels")
    _probe(cache)
    path = _entry_path(cache)
    path.unlink()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from pathlib import Path
                from framework.compiler.cache import EntryLock
                EntryLock(Path({str(path) + ".lock"!r})).acquire()
                print("held", flush=True)
                time.sleep(120)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("OARLOCK_CACHE_LOCK_TIMEOUT", "2")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(
                C.CacheLockError, match=rf"held by pid {holder.pid} on host \S+ .*OARLOCK_CACHE_LOCK_TIMEOUT"
            ):
                _probe(compiler.ProgramCache(tmp_path / "kernels"))
        notes = [str(m.message) for m in w if issubclass(m.category, C.CacheLockWarning)]
        assert len(notes) == 1 and f"held by pid {holder.pid}" in notes[0], notes
    finally:
        holder.kill()
        holder.wait()
    fresh = compiler.ProgramCache(tmp_path / "kernels")
    _probe(fresh)  # the holder is gone: the lock is free
    assert fresh.stats.compiles == 1


def test_entries_of_an_older_oarlock_are_rebuilt_with_one_notice(tmp_path, keyfile, monkeypatch):
    cache = compiler.ProgramCache(tmp_path / "kernels")
    _probe(cache)
    path = _entry_path(cache)
    body = path.read_bytes()[C._HEAD :]
    path.write_bytes(b"oarlock-kernel-cache-2\n" + bytes(104) + body)  # the unsigned format of before
    monkeypatch.setattr(C, "_OLDER_SAID", [])
    fresh = compiler.ProgramCache(tmp_path / "kernels")
    with pytest.warns(
        C.CacheEntryWarning, match=r"written by an older Oarlock .* rebuilt once as it is used"
    ):
        _probe(fresh)
    assert (fresh.stats.compiles, fresh.stats.rebuilt) == (1, 1)
    key = C.program_key(
        compiler.compiler_for(fw.Device("cpu")), compiler.trivial_kernel("c", ENTRY), ENTRY, ()
    )
    assert C.unpack_entry(path.read_bytes(), key)[0] is not None  # rebuilt, signed


def test_a_fifo_in_place_of_the_tuning_file_is_not_read(tmp_path):
    fifo = tmp_path / "tuning.json"
    os.mkfifo(fifo)
    code = f"from pathlib import Path\nfrom framework.compiler import tune\nprint(tune._read(Path({str(fifo)!r})))"
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,  # a blocking open of the FIFO would wait here for a writer that never comes
        env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )
    assert r.returncode == 0 and r.stdout.strip() == "{}", r.stderr[-2000:]

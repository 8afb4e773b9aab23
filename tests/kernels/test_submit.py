"""Python kernels through the whole runtime: captures as arguments, caches, errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl
from pysycl._kernels import diskcache as _diskcache

SCALE = 3  # a module-level constant a kernel captures (becomes an argument)


def _axpy(q: sycl.queue, alpha: object, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty_like(y)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            ry = Y.get_access(h, sycl.access_mode.read)
            wo = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(x.size), lambda i: wo.__setitem__(i, alpha * rx[i] + ry[i]))

        q.submit(cg)
    return out


def test_many_buffers_many_scalars_one_compile(kq: sycl.queue, fresh_stats: None) -> None:
    rng = np.random.default_rng(1)
    for n in (17, 1000, 4096):
        for alpha in (np.float32(0.5), np.float32(-2.0), np.float32(7.25)):
            x = rng.random(n, dtype=np.float32)
            y = rng.random(n, dtype=np.float32)
            np.testing.assert_allclose(_axpy(kq, alpha, x, y), alpha * x + y, rtol=1e-6)
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] + s["disk_hits"] == 1, s
    assert s["memory_hits"] == 8 and s["cl_builds"] == 1


def test_other_capture_types_compile_again(kq: sycl.queue, fresh_stats: None) -> None:
    x = np.arange(8, dtype=np.float64)
    np.testing.assert_array_equal(_axpy(kq, 2.0, x, x), 3 * x)          # float64 buffers
    np.testing.assert_array_equal(_axpy(kq, 2, x, x), 3 * x)            # int scalar: new type
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] + s["disk_hits"] == 2


def test_module_constant_is_an_argument(kq: sycl.queue, fresh_stats: None) -> None:
    global SCALE
    out = np.zeros(4, np.int64)
    try:
        for value in (3, 5):
            SCALE = value
            with sycl.buffer(out) as O:
                def cg(h: sycl.handler) -> None:
                    o = O.get_access(h, sycl.access_mode.write)
                    h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, SCALE * i))

                kq.submit(cg)
            np.testing.assert_array_equal(out, value * np.arange(4))
    finally:
        SCALE = 3
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] + s["disk_hits"] == 1 and s["memory_hits"] == 1


@pytest.mark.parametrize("shape", [(37,), (5, 9), (3, 4, 5)])
def test_item_queries_follow_sycl_row_major_order(any_kernel_queue: sycl.queue,
                                                  shape: tuple[int, ...]) -> None:
    kq = any_kernel_queue
    n = len(shape)
    lin = np.zeros(shape, np.int64)
    ids = np.zeros((*shape, n), np.int64)
    with sycl.buffer(lin) as L, sycl.buffer(ids.reshape(-1, n)) as I:
        def cg(h: sycl.handler) -> None:
            lacc = L.get_access(h, sycl.access_mode.write)
            iacc = I.get_access(h, sycl.access_mode.write)

            def k(it: sycl.item) -> None:
                lin_id = it.get_linear_id()
                lacc[it] = lin_id
                for d in range(n):
                    iacc[lin_id, d] = it.get_id(d) * 1000 + it.get_range(d)

            h.parallel_for(sycl.range(*shape), k)

        kq.submit(cg)
    np.testing.assert_array_equal(lin.reshape(-1), np.arange(lin.size))
    grid = np.indices(shape)
    for d in range(n):
        np.testing.assert_array_equal(ids[..., d], grid[d] * 1000 + shape[d])


def test_single_task_and_empty_range(any_kernel_queue: sycl.queue) -> None:
    kq = any_kernel_queue
    out = np.zeros(3, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.read_write)

            def once() -> None:
                o[0] = 42
                o[1] += 1

            h.single_task(once)

        kq.submit(cg)

        def empty(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(0), lambda i: o.__setitem__(2, 9))

        kq.submit(empty).wait()
    assert list(out) == [42, 1, 0]


def test_exec_kernel_without_source_file(kq: sycl.queue, fresh_stats: None) -> None:
    src = textwrap.dedent("""
        def make(O):
            def cg(h):
                o = O.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(6), lambda i: o.__setitem__(i, i * i))
            return cg
    """)
    out = np.zeros(6, np.int32)
    for _ in range(2):
        ns: dict[str, object] = {"sycl": sycl}
        exec(compile(src, "<notebook-cell>", "exec"), ns)
        sycl.ext.clear_kernel_memory_cache()
        with sycl.buffer(out) as O:
            kq.submit(ns["make"](O))  # type: ignore[operator]
        np.testing.assert_array_equal(out, np.arange(6) ** 2)
    s = sycl.ext.kernel_cache_stats()
    if _diskcache.cache_dir() is not None:
        assert s["compiles"] <= 1 and s["compiles"] + s["disk_hits"] == 2


_SUBPROCESS = textwrap.dedent("""
    import sys, numpy as np, pysycl as sycl
    a = np.arange(64, dtype=np.float32); c = np.zeros_like(a)
    with sycl.buffer(a) as A, sycl.buffer(c) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(64), lambda i: wc.__setitem__(i, ra[i] * 2.0 + 1.0))
        sycl.queue().submit(cg)
    assert np.array_equal(c, a * 2 + 1)
    s = sycl.ext.kernel_cache_stats()
    print(s["compiles"], s["disk_hits"], int("numba" in sys.modules))
""")


def _run_sub(cache: Path) -> list[int]:
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(cache))
    env.pop("PYSYCL_DISABLE_CACHE", None)
    r = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", _SUBPROCESS], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return [int(x) for x in r.stdout.split()]


def test_disk_cache_fresh_process_skips_numba(tmp_path: Path) -> None:
    assert _run_sub(tmp_path) == [1, 0, 1]        # cold: compiled with Numba
    assert _run_sub(tmp_path) == [0, 1, 0]        # warm: Numba never imported


def test_corrupt_cache_entry_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    assert _run_sub(tmp_path)[0] == 1
    entries = list((tmp_path / "kernels").glob("*/*.spvk"))
    assert len(entries) == 1
    entries[0].write_bytes(entries[0].read_bytes()[:40])  # truncated
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", _SUBPROCESS], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "corrupt kernel cache entry" in r.stderr, (r.stdout, r.stderr)
    assert r.stdout.split()[:2] == ["1", "0"], (r.stdout, r.stderr)     # rebuilt
    assert _run_sub(tmp_path)[:2] == [0, 1]       # and cached again


def test_unwritable_cache_degrades_to_memory(tmp_path: Path, kq: sycl.queue,
                                             monkeypatch: pytest.MonkeyPatch,
                                             fresh_stats: None) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("PYSYCL_CACHE_DIR", str(blocker))  # kernels/ cannot be created under a file
    monkeypatch.setitem(_diskcache._state, "dir", None)
    x = np.arange(5, dtype=np.float32)
    with pytest.warns(_diskcache.CacheWarning, match="not writable"):
        np.testing.assert_array_equal(_axpy(kq, np.float32(1.5), x, x), 2.5 * x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sycl.ext.clear_kernel_memory_cache()
        np.testing.assert_array_equal(_axpy(kq, np.float32(1.5), x, x), 2.5 * x)  # no 2nd warning
    monkeypatch.setitem(_diskcache._state, "dir", None)


# ------------------------------------------------------------------ bad input
def test_wrong_arity_is_reported_at_parallel_for(kq: sycl.queue) -> None:
    A = sycl.buffer(np.zeros(4, np.int32))

    def cg(h: sycl.handler) -> None:
        a = A.get_access(h, sycl.access_mode.write)
        # (item, kh) is valid: the optional trailing sycl.kernel_handler
        h.parallel_for(sycl.range(4), lambda i, j, k: a.__setitem__(i, j))

    with pytest.raises(sycl.kernel_signature_error) as ei:
        kq.submit(cg)
    assert isinstance(ei.value, TypeError) and ei.value.code() == sycl.errc.invalid
    assert "test_submit.py:" in str(ei.value) and "takes 3 parameter" in str(ei.value)


async def _async_kernel(i: sycl.item) -> None:
    pass


def _generator_kernel(i: sycl.item) -> object:
    yield i


@pytest.mark.parametrize("kernel", [_async_kernel, _generator_kernel])
def test_async_and_generator_kernels_are_rejected(any_kernel_queue: sycl.queue,
                                                  kernel: object) -> None:
    """Calling them would only make a coroutine or generator: the body would never run
    (silently, before: the output stayed as it was on both devices)."""
    with pytest.raises(sycl.kernel_signature_error) as ei:
        any_kernel_queue.submit(lambda h: h.parallel_for(sycl.range(2), kernel))
    msg = str(ei.value)
    assert ei.value.code() == sycl.errc.invalid and "test_submit.py:" in msg
    assert ("an async function" in msg or "a generator function" in msg) and "plain def" in msg


def test_numpy_array_capture_is_rejected_with_location(kq: sycl.queue) -> None:
    """A 2-D numpy array is no kernel argument on any device (a 1-D one is: the array's
    memory, or a read-only lookup table: tests/kernels/test_tables.py)."""
    host = np.arange(4, dtype=np.float32).reshape(2, 2)
    out = np.zeros(4, np.float32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, host[i, 0]))

        with pytest.raises(sycl.exception) as ei:
            kq.submit(cg)
    msg = str(ei.value)
    assert ei.value.code() in (sycl.errc.kernel, sycl.errc.invalid)
    assert "'host'" in msg and "sycl.buffer" in msg and "test_submit.py:" in msg
    assert (out == 0).all()


def test_buffer_capture_is_rejected(kq: sycl.queue) -> None:
    B = sycl.buffer(np.zeros(4, np.float32))

    def cg(h: sycl.handler) -> None:
        h.single_task(lambda: B)

    with pytest.raises(sycl.kernel_compile_error, match="capture an accessor"):
        kq.submit(cg)


def test_accessor_of_another_command_group_is_invalid(kq: sycl.queue) -> None:
    B = sycl.buffer(np.zeros(4, np.float32))
    stolen = []
    kq.submit(lambda h: stolen.append(B.get_access(h, sycl.access_mode.write)) or
              h.update_host(stolen[0]))

    def cg(h: sycl.handler) -> None:
        acc = stolen[0]
        h.single_task(lambda: acc.__setitem__(0, 1.0))

    with pytest.raises(sycl.exception) as ei:
        kq.submit(cg)
    assert ei.value.code() == sycl.errc.invalid and "not created in" in str(ei.value)


def test_compile_error_leaves_host_data_intact(kq: sycl.queue) -> None:
    a = np.arange(8, dtype=np.float32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            acc = A.get_access(h, sycl.access_mode.read_write)

            def bad(i: sycl.item) -> None:
                acc[i] = {"not": "supported"}  # a dict in a kernel

            h.parallel_for(sycl.range(8), bad)

        with pytest.raises(sycl.kernel_compile_error) as ei:
            kq.submit(cg)
        assert "test_submit.py:" in str(ei.value) and "bad" in str(ei.value)
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32))


def test_write_through_read_accessor_is_a_compile_error(kq: sycl.queue) -> None:
    A = sycl.buffer(np.zeros(4, np.int32))

    def cg(h: sycl.handler) -> None:
        r = A.get_access(h, sycl.access_mode.read)
        h.parallel_for(sycl.range(4), lambda i: r.__setitem__(i, 1))

    with pytest.raises(sycl.kernel_compile_error) as ei:
        kq.submit(cg)
    assert "read" in str(ei.value) and "test_submit.py:" in str(ei.value)


def test_spirv_kernel_on_pocl_is_not_supported(pocl_device: sycl.device) -> None:
    q = sycl.queue(pocl_device)
    a = np.arange(4, dtype=np.int32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            acc = A.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, acc[i] + 1))

        with pytest.raises(sycl.exception) as ei:
            q.submit(cg)
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert "SPIR-V" in str(ei.value) and "ext_pysycl_spirv" in str(ei.value)
    np.testing.assert_array_equal(a, np.arange(4))


def test_missing_aspect_is_named(pocl_device: sycl.device) -> None:
    if pocl_device.has(sycl.aspect.fp16):
        pytest.skip("this PoCL has fp16")
    q = sycl.queue(pocl_device)
    h16 = np.ones(4, np.float16)
    with sycl.buffer(h16) as H:
        def cg(h: sycl.handler) -> None:
            acc = H.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, acc[i] * acc[i]))

        with pytest.raises(sycl.exception) as ei:
            q.submit(cg)
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert "aspect.fp16" in str(ei.value)


def test_fp16_kernel_runs_where_supported(kq: sycl.queue) -> None:
    if not kq.get_device().has(sycl.aspect.fp16):
        pytest.skip("no fp16")
    x = np.linspace(-2, 2, 33).astype(np.float16)
    out = np.zeros_like(x)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            wo = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(x.size), lambda i: wo.__setitem__(i, rx[i] * rx[i]))

        kq.submit(cg)
    np.testing.assert_array_equal(out, x * x)

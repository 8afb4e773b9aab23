"""Issue 9, "data lost or silently wrong": buffers write back, names and locations are right.

Each test is named after the behaviour it guards. Write-back is checked with the
cyclic garbage collector *disabled*: SYCL's rule is that destroying a buffer
writes back, and in CPython that has to mean reference counting.
"""

# The tests `del` buffers that their command groups captured, on purpose (after the
# submit): ruff takes those names for undefined inside the closures.
# ruff: noqa: F821
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _fill_fresh(q: sycl.queue, v: float) -> np.ndarray:
    """A function like a user's: makes a buffer, submits a kernel, returns the host array."""
    r = np.zeros(4)
    buf = sycl.buffer(r)

    def cg(h: sycl.handler) -> None:
        acc = buf.get_access(h, sycl.access_mode.write)
        h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, v))

    q.submit(cg)
    return r


def test_first_submission_of_a_kernel_writes_back(kq: sycl.queue, no_cyclic_gc: None) -> None:
    # The first call compiles the lambda: the kernel registry must not keep the
    # function (and its closure, accessor, buffer) alive.
    sycl.ext.clear_kernel_memory_cache()
    first = _fill_fresh(kq, 3.0)
    second = _fill_fresh(kq, 4.0)
    np.testing.assert_array_equal(first, np.full(4, 3.0))
    np.testing.assert_array_equal(second, np.full(4, 4.0))


def test_first_submission_with_kernel_name_writes_back(kq: sycl.queue, no_cyclic_gc: None) -> None:
    r = np.zeros(8, np.int32)
    buf = sycl.buffer(r)

    def cg(h: sycl.handler) -> None:
        acc = buf.get_access(h, sycl.access_mode.write)
        h.parallel_for(sycl.range(8), lambda i: acc.__setitem__(i, i * 2),
                       kernel_name="nothing_lost_named")

    kq.submit(cg)
    del buf
    np.testing.assert_array_equal(r, np.arange(8) * 2)


def test_registries_hold_no_user_function(kq: sycl.queue) -> None:
    import weakref

    from pysycl._bundles import kernel_id as _kernel_id

    r = np.zeros(4)
    buf = sycl.buffer(r)
    captured: list[object] = []

    def cg(h: sycl.handler) -> None:
        acc = buf.get_access(h, sycl.access_mode.write)

        def kern(i: sycl.id) -> None:
            acc[i] = 1.0

        captured.append(weakref.ref(kern))
        h.parallel_for(sycl.range(4), kern, kernel_name="registry_holds_no_function")

    kq.submit(cg)
    kq.wait()
    kid = sycl.get_kernel_id("registry_holds_no_function")
    for v in [*kid._variants.values(), *_kernel_id._by_mkey.values()]:
        held = [c.cell_contents for c in (v.fn.__closure__ or ())] if v.fn is not None else []
        assert not any(isinstance(x, (sycl.accessor, sycl.buffer, np.ndarray)) for x in held)
    ref = captured[0]
    assert isinstance(ref, weakref.ref)
    del buf
    gc.collect()
    assert ref() is None, "something still holds the kernel function"
    np.testing.assert_array_equal(r, np.ones(4))


def test_del_buffer_writes_back_without_cyclic_gc(kq: sycl.queue, no_cyclic_gc: None) -> None:
    r = np.zeros(6)
    b = sycl.buffer(r)

    def cg(h: sycl.handler) -> None:
        acc = b.get_access(h, sycl.access_mode.write)
        h.parallel_for(sycl.range(6), lambda i: acc.__setitem__(i, 7.0))

    kq.submit(cg)
    del b
    np.testing.assert_array_equal(r, np.full(6, 7.0))


def test_failed_command_group_leaves_no_cycle(kq: sycl.queue, no_cyclic_gc: None) -> None:
    r = np.arange(4.0)
    b = sycl.buffer(r)

    def cg(h: sycl.handler) -> None:
        b.get_access(h, sycl.access_mode.write)
        raise RuntimeError("user error inside the command group")

    with pytest.raises(RuntimeError):
        kq.submit(cg)
    import weakref

    ref = weakref.ref(b)
    del b
    assert ref() is None
    np.testing.assert_array_equal(r, np.arange(4.0))


def test_nd_range_and_reduction_first_submission_write_back(kq: sycl.queue,
                                                            no_cyclic_gc: None) -> None:
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(1, np.float32)
    copy = np.zeros(64, np.float32)
    X, O, C = sycl.buffer(x), sycl.buffer(out), sycl.buffer(copy)

    def cg(h: sycl.handler) -> None:
        xa = X.get_access(h, sycl.access_mode.read)
        ca = C.get_access(h, sycl.access_mode.write)
        red = sycl.reduction(O, h, sycl.plus())

        def k(it: sycl.nd_item, s: object) -> None:
            g = it.get_global_id(0)
            ca[g] = xa[g]
            s += xa[g]  # type: ignore[operator]

        h.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(16)), red, k)

    kq.submit(cg)
    del X, O, C
    assert out[0] == x.sum()
    np.testing.assert_array_equal(copy, x)


def test_host_device_first_submission_writes_back(hq: sycl.queue, no_cyclic_gc: None) -> None:
    np.testing.assert_array_equal(_fill_fresh(hq, 5.0), np.full(4, 5.0))


def test_buffer_used_after_with_block_is_rejected_before_enqueue(kq: sycl.queue) -> None:
    r = np.zeros(4)
    with sycl.buffer(r) as B:
        pass

    def cg(h: sycl.handler) -> None:
        acc = B.get_access(h, sycl.access_mode.write)
        h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, 1.0))

    with pytest.raises(sycl.exception) as ei:
        kq.submit(cg)
    assert ei.value.code() == sycl.errc.invalid
    msg = str(ei.value)
    assert "sycl.buffer(range=(4,), dtype=float64)" in msg and "closed" in msg
    assert __file__ in msg  # where it was used and where it was closed
    np.testing.assert_array_equal(r, np.zeros(4))


def test_sub_buffer_of_closed_buffer_and_placeholder_are_rejected(kq: sycl.queue) -> None:
    r = np.zeros(8)
    with sycl.buffer(r) as B:
        sub = sycl.buffer(B, sycl.id(2), sycl.range(4))
        ph = sycl.accessor(B, sycl.access_mode.write)
    with pytest.raises(sycl.exception) as ei:
        kq.submit(lambda h: h.fill(sub.get_access(h, sycl.access_mode.write), 1.0))
    assert ei.value.code() == sycl.errc.invalid and "parent" in str(ei.value)

    def cg(h: sycl.handler) -> None:
        h.require(ph)
        h.fill(ph, 2.0)

    with pytest.raises(sycl.exception) as ei:
        kq.submit(cg)
    assert ei.value.code() == sycl.errc.invalid
    np.testing.assert_array_equal(r, np.zeros(8))


def test_each_kernel_name_of_one_code_is_its_own_kernel_id(kq: sycl.queue) -> None:
    def submit_named(name: str, v: int) -> np.ndarray:
        r = np.zeros(4, np.int32)
        with sycl.buffer(r) as B:
            def cg(h: sycl.handler) -> None:
                acc = B.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, v), kernel_name=name)

            kq.submit(cg)
        return r

    names = [f"shared_code_{n}" for n in ("a", "b", "c")]
    for v, n in enumerate(names):
        np.testing.assert_array_equal(submit_named(n, v), np.full(4, v))
    ids = [sycl.get_kernel_id(n) for n in names]
    assert [k.get_name() for k in ids] == names
    assert len(set(ids)) == 3
    assert all(k in sycl.get_kernel_ids() for k in ids)
    # each is in a bundle of its own and the bundle can run it
    kb = sycl.get_kernel_bundle(kq.get_context(), [ids[1]], state=sycl.bundle_state.executable)
    assert kb.has_kernel(ids[1]) and not kb.has_kernel(ids[0])


@pytest.mark.parametrize("bad", [12345, "", b"name", None.__class__])
def test_kernel_name_must_be_a_non_empty_str(kq: sycl.queue, bad: object) -> None:
    r = np.zeros(2)
    with sycl.buffer(r) as B:
        def cg(h: sycl.handler) -> None:
            acc = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(2), lambda i: acc.__setitem__(i, 1.0),
                           kernel_name=bad)  # type: ignore[arg-type]

        with pytest.raises(TypeError, match="kernel_name must be a non-empty str"):
            kq.submit(cg)
        with pytest.raises(TypeError, match="kernel_name must be a non-empty str"):
            kq.single_task(lambda: None, kernel_name=bad)  # type: ignore[arg-type]
    np.testing.assert_array_equal(r, np.zeros(2))


def test_failing_buffer_constructor_prints_no_second_error() -> None:
    code = textwrap.dedent("""
        import gc, numpy as np, pysycl as sycl
        for bad in (np.array([1, "x"], dtype=object), np.zeros((2, 2, 2, 2))):
            try:
                sycl.buffer(bad)
            except TypeError as e:
                print("TypeError:", e)
        gc.collect()
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYSYCL_LOG": "debug"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("TypeError:") == 2
    assert "write-back" not in p.stderr and "Traceback" not in p.stderr, p.stderr


_NDRANGE_PROGRAM = textwrap.dedent("""
    import numpy as np, pysycl as sycl
    q = sycl.queue()
    x = np.zeros(10, np.float32)
    with sycl.buffer(x) as X:
        def cg(h):
            a = X.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(sycl.range(10), sycl.range(NDLOCAL)),
                           lambda it: a.__setitem__(it.get_global_id(0), 1.0))
        try:
            q.submit(cg)
            print("OK")
        except sycl.exception as e:
            print("ERR", e.code(), e)
""")


def test_disk_cached_kernel_errors_name_the_submitting_file(tmp_path: Path) -> None:
    # Program A compiles the kernel (disk cache); program B has the same bytecode in
    # another file and makes an nd_range mistake: the error names B, never A.
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache")}
    a, b = tmp_path / "prog_a.py", tmp_path / "prog_b.py"
    a.write_text(_NDRANGE_PROGRAM.replace("NDLOCAL", "5"))
    b.write_text("\n\n\n" + _NDRANGE_PROGRAM.replace("NDLOCAL", "3"))  # 10 % 3 != 0
    pa = subprocess.run([sys.executable, str(a)], capture_output=True, text=True, env=env,
                        timeout=300)
    assert pa.stdout.strip() == "OK", pa.stderr
    pb = subprocess.run([sys.executable, str(b)], capture_output=True, text=True, env=env,
                        timeout=300)
    assert pb.stdout.startswith("ERR errc.nd_range"), pb.stdout + pb.stderr
    assert "prog_b.py" in pb.stdout and "prog_a.py" not in pb.stdout


def test_concurrent_first_submissions_compile_once(kq: sycl.queue) -> None:
    sycl.ext.clear_kernel_memory_cache()
    sycl.ext.reset_kernel_cache_stats()
    n_threads = 6
    results = [np.zeros(16, np.float32) for _ in range(n_threads)]
    errors: list[BaseException] = []
    start = threading.Barrier(n_threads)

    def body(i: int) -> None:
        out = results[i]
        try:
            with sycl.buffer(out) as O:
                def cg(h: sycl.handler) -> None:
                    acc = O.get_access(h, sycl.access_mode.write)
                    v = float(i)
                    h.parallel_for(sycl.range(16), lambda j: acc.__setitem__(j, v * 3.0 + j))

                start.wait()
                kq.submit(cg)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, r in enumerate(results):
        np.testing.assert_array_equal(r, np.float32(i * 3.0) + np.arange(16, dtype=np.float32))
    stats = sycl.ext.kernel_cache_stats()
    assert stats["compiles"] + stats["disk_hits"] == 1, stats

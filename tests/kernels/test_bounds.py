"""Out-of-bounds accessor indices: the static check, bounds-checked mode, the host device.

Cases that corrupt memory without a check only ever run in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import pysycl as sycl
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import diskcache as _diskcache

F32 = np.float32
HERE = __file__


@pytest.fixture
def checked() -> Iterator[None]:
    """Bounds-checked mode for one test; nothing left pending afterwards."""
    sycl.ext.set_bounds_check(True)
    try:
        yield
    finally:
        sycl.ext.set_bounds_check(None)
        _bounds.watching.clear()


def _line_of(fn: Any, text: str) -> int:
    """The source line of ``fn`` (a kernel) that contains ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)


# ------------------------------------------------------------------ static check
def test_range_larger_than_accessor_is_rejected_before_launch(kq: sycl.queue) -> None:
    a = np.arange(8, dtype=F32)
    c = np.full(8, -1.0, F32)
    with sycl.buffer(a) as A, sycl.buffer(c) as C:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(16), lambda i: wc.__setitem__(i, ra[i] + 1))

        with pytest.raises(sycl.exception) as ei:
            kq.submit(cg)
        kq.wait()
    e = ei.value
    assert e.code() == sycl.errc.invalid
    line = cg.__code__.co_firstlineno + 3
    assert f"{HERE}:{line}" in e.what()                       # the kernel, file:line
    assert "'ra'" in e.what() and "range (8,)" in e.what()    # the accessor, its range
    assert "sycl.range(16)" in e.what() and "Nothing was enqueued" in e.what()
    assert np.array_equal(c, np.full(8, -1.0, F32))          # untouched
    assert np.array_equal(a, np.arange(8, dtype=F32))


def test_range_larger_than_buffer_no_longer_corrupts_the_heap_in_a_child() -> None:
    # Before the check, this aborted the process at exit (heap corruption).
    r = _child("""
        import numpy as np
        import pysycl as sycl
        q = sycl.queue()
        a = np.zeros(16, np.float32)
        with sycl.buffer(a) as A:
            def cg(h):
                w = A.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(1 << 20), lambda i: w.__setitem__(i, 1.0))
            try:
                q.submit(cg)
            except sycl.exception as e:
                print(e.code().name)
        assert not a.any()
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["invalid"]


def test_ranged_accessor_offset_and_dimensions_are_checked(kq: sycl.queue) -> None:
    m = np.zeros((6, 8), F32)
    with sycl.buffer(m) as M:
        def submit(rng: tuple[int, int], acc_range: tuple[int, int],
                   offset: tuple[int, int]) -> None:
            def cg(h: sycl.handler) -> None:
                w = M.get_access(h, sycl.access_mode.read_write, access_range=acc_range,
                                 access_offset=offset)

                def k(it: sycl.item) -> None:
                    w[it[1], it[0]] = w[it[1], it[0]] + 1   # transposed
                h.parallel_for(sycl.range(*rng), k)
            kq.submit(cg)

        submit((3, 2), (2, 3), (4, 5))              # fits: dimension 0 of the range is 3
        with pytest.raises(sycl.exception, match=r"'w' \(range \(2, 3\) at offset \(4, 5\)\) "
                                                 r"in dimension 0") as ei:
            submit((3, 3), (2, 3), (4, 5))          # range[1] = 3 > accessor range[0] = 2
        assert ei.value.code() == sycl.errc.invalid
    expect = np.zeros((6, 8), F32)
    expect[4:6, 5:8] = 1
    assert np.array_equal(m, expect)


def test_guarded_kernel_over_a_larger_range_is_accepted(kq: sycl.queue) -> None:
    x = np.arange(10, dtype=F32)
    n = x.size
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read_write)

            def k(i: sycl.item) -> None:
                if i < n:
                    a[i] = a[i] * 2
            h.parallel_for(sycl.range(64), k)     # rounded up, as for work-groups
        kq.submit(cg)
    assert np.array_equal(x, np.arange(10, dtype=F32) * 2)


def test_nd_range_global_and_local_ids_are_checked(kq: sycl.queue) -> None:
    x = np.arange(16, dtype=F32)
    out = np.zeros(16, F32)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def submit(glob: int, loc: int, tmp_size: int) -> None:
            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                o = O.get_access(h, sycl.access_mode.write)
                tmp = sycl.local_accessor(F32, sycl.range(tmp_size), h)

                def k(it: sycl.nd_item) -> None:
                    tmp[it.get_local_id(0)] = a[it.get_global_id(0)]
                    sycl.group_barrier(it.get_group())
                    o[it.get_global_id(0)] = tmp[it.get_local_range(0) - 1 - it.get_local_id(0)]
                h.parallel_for(sycl.nd_range(sycl.range(glob), sycl.range(loc)), k)
            kq.submit(cg)

        with pytest.raises(sycl.exception, match=r"local range sycl.range\(8\) is larger than "
                                                 r"accessor 'tmp'"):
            submit(16, 8, 4)
        with pytest.raises(sycl.exception, match=r"global range sycl.range\(32\) is larger "
                                                 r"than accessor 'a'"):
            submit(32, 4, 4)
        submit(16, 4, 4)
    assert np.array_equal(out, x.reshape(4, 4)[:, ::-1].reshape(-1))


def test_static_check_survives_the_disk_cache(kq: sycl.queue) -> None:
    if _diskcache.cache_dir() is None:
        pytest.skip("disk cache disabled")
    c = np.zeros(4, F32)

    def submit() -> None:
        with sycl.buffer(c) as C:
            def cg(h: sycl.handler) -> None:
                w = C.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(5), lambda i: w.__setitem__(i, 1.0))
            kq.submit(cg)

    with pytest.raises(sycl.exception):
        submit()
    sycl.ext.clear_kernel_memory_cache()
    sycl.ext.reset_kernel_cache_stats()
    with pytest.raises(sycl.exception, match="'w'"):
        submit()
    assert sycl.ext.kernel_cache_stats()["disk_hits"] == 1
    assert not c.any()


# ---------------------------------------------------------- bounds-checked mode
def _shifted_copy(q: sycl.queue, x: np.ndarray, shift: int) -> np.ndarray:
    out = np.full_like(x, -1)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def shifted(i: sycl.item) -> None:
                o[i] = a[i + shift]          # out of range for the last work-items
            h.parallel_for(sycl.range(x.size), shifted)
        q.submit(cg)
        q.wait()
    return out


def test_bounds_checked_mode_reports_first_violation_with_line(kq: sycl.queue,
                                                               checked: None) -> None:
    x = np.arange(8, dtype=F32)
    with pytest.raises(sycl.exception) as ei:
        _shifted_copy(kq, x, 3)
    e = ei.value
    assert e.code() == sycl.errc.kernel
    w = e.what()
    assert "out-of-bounds read of accessor 'a'" in w
    assert "outside its range (8,)" in w
    assert "index [8]" in w or "index [9]" in w or "index [10]" in w
    assert "kernel '_shifted_copy.<locals>.cg.<locals>.shifted'" in w
    src = _shifted_copy.__code__
    line = src.co_firstlineno + 8                               # o[i] = a[i + shift]
    assert f"at {HERE}:{line}:" in w, w


def test_bounds_checked_mode_reports_all_index_dimensions(kq: sycl.queue, checked: None) -> None:
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = np.zeros_like(m)
    with sycl.buffer(m) as M, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = M.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it: sycl.item) -> None:
                i, j = it[0], it[1]
                v = a[i, j]
                if i == 2 and j == 1:
                    v = a[i, j + 5]           # the only violation: (2, 6) of (3, 4)
                o[i, j] = v
            h.parallel_for(sycl.range(3, 4), k)
        ev = kq.submit(cg)
        with pytest.raises(sycl.exception) as ei:
            ev.wait()                         # event.wait() is a synchronization point
    w = ei.value.what()
    assert "index [2, 6] is outside its range (3, 4)" in w
    assert "work-item (2, 1)" in w
    assert f"{HERE}:{_line_of(cg, 'j + 5')}" in w
    expect = m.copy()
    expect[2, 1] = 0                          # the skipped load gave 0
    assert np.array_equal(out, expect)


def test_bounds_checked_violation_is_reported_before_write_back(kq: sycl.queue,
                                                               checked: None) -> None:
    c = np.full(4, 7, np.int32)
    with pytest.raises(sycl.exception, match="out-of-bounds write of accessor 'w'"):
        with sycl.buffer(c) as C:
            def cg(h: sycl.handler) -> None:
                w = C.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(4), lambda i: w.__setitem__(3 - i - 1, 1))
            kq.submit(cg)
    assert np.array_equal(c, [7, 7, 7, 7])    # the results never reached the host


def test_bounds_checked_violation_is_reported_at_host_accessor(kq: sycl.queue,
                                                              checked: None) -> None:
    buf = sycl.buffer(np.zeros(4, np.int32))

    def cg(h: sycl.handler) -> None:
        w = buf.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(4), lambda i: w.__setitem__(i, w[i * 2] + 1))
    kq.submit(cg)
    with pytest.raises(sycl.exception, match="out-of-bounds read"):
        sycl.host_accessor(buf, sycl.access_mode.read)
    ha = sycl.host_accessor(buf, sycl.access_mode.read)   # reported once
    assert list(np.asarray(ha)) == [1, 1, 1, 1]


def test_bounds_violation_never_blocks_another_buffers_write_back(kq: sycl.queue,
                                                                 checked: None) -> None:
    bad = sycl.buffer(np.zeros(4, np.int32))

    def wild(h: sycl.handler) -> None:
        w = bad.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(4), lambda i: w.__setitem__(i, w[i + 4]))
    kq.submit(wild)
    other = np.zeros(3, np.int32)
    with sycl.buffer(other) as O:                 # another buffer: written back, no error
        def fine(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(3), lambda i: o.__setitem__(i, 5))
        kq.submit(fine)
    assert list(other) == [5, 5, 5]
    with pytest.raises(sycl.exception, match=r"accessor 'w' .*index \[[4-7]\]"):
        kq.wait()                                 # the queue's next wait reports it


def test_bounds_checked_violation_goes_to_the_async_handler(kernel_device: sycl.device,
                                                            checked: None) -> None:
    seen: list[BaseException] = []
    q = sycl.queue(kernel_device, lambda errs: seen.extend(errs))
    x = np.arange(4, dtype=F32)
    out = _shifted_copy(q, x, 1)           # q.wait() hands it to the handler
    assert len(seen) == 1 and isinstance(seen[0], sycl.exception)
    assert seen[0].code() == sycl.errc.kernel
    assert np.array_equal(out, [1, 2, 3, 0])


def test_bounds_checked_mode_skips_wild_stores_in_a_child() -> None:
    r = _child("""
        import numpy as np
        import pysycl as sycl
        sycl.ext.set_bounds_check(True)
        q = sycl.queue()
        a = np.zeros(16, np.float32)
        far = 1 << 28                         # far outside the 64-byte buffer
        with sycl.buffer(a) as A:
            def cg(h):
                w = A.get_access(h, sycl.access_mode.write)
                def k(i):
                    w[i * far] = 1.0
                h.parallel_for(sycl.range(1 << 14), k)
            q.submit(cg)
            try:
                q.wait()
            except sycl.exception as e:
                print(e.code().name)
        assert a[0] == 1.0 and not a[1:].any()
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["kernel"]


def test_bounds_checked_local_accessor_and_atomics(kq: sycl.queue, checked: None) -> None:
    out = np.zeros(8, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.read_write)
            tmp = sycl.local_accessor(np.int32, sycl.range(4), h)

            def k(it: sycl.nd_item) -> None:
                lid = it.get_local_id(0)
                tmp[lid] = 0
                sycl.group_barrier(it.get_group())
                sycl.atomic_ref(tmp, lid + 2, sycl.memory_order.relaxed,
                                sycl.memory_scope.work_group,
                                sycl.access.address_space.local_space).fetch_add(1)
                sycl.group_barrier(it.get_group())
                o[it.get_global_id(0)] = tmp[lid]
            h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)), k)
        kq.submit(cg)
        with pytest.raises(sycl.exception, match=r"out-of-bounds atomic_ref of local_accessor "
                                                 r"'tmp' .*index \[[45]\] is outside its range "
                                                 r"\(4,\)"):
            kq.wait()
    assert list(out) == [0, 0, 1, 1, 0, 0, 1, 1]


def test_bounds_checked_reduction_kernel(kq: sycl.queue, checked: None) -> None:
    x = np.arange(10, dtype=np.int32)
    total = np.zeros(1, np.int32)
    with sycl.buffer(x) as X, sycl.buffer(total) as T:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(2, 5), sycl.reduction(T, h, sycl.plus()),
                           lambda it, s: s.combine(a[it[0] * 5 + it[1] + 1]))
        kq.submit(cg)
        with pytest.raises(sycl.exception, match=r"index \[10\] .*work-item \(1, 4\)"):
            kq.wait()
    assert total[0] == x[1:].sum()


def test_bounds_checked_mode_keeps_correct_results(kq: sycl.queue, checked: None) -> None:
    rng = np.random.default_rng(3)
    n = 24
    am = rng.random((n, n), dtype=F32)
    bm = rng.random((n, n), dtype=F32)
    cm = np.zeros_like(am)
    with sycl.buffer(am) as A, sycl.buffer(bm) as B, sycl.buffer(cm) as C:
        def cg(h: sycl.handler) -> None:
            a = A.get_access(h, sycl.access_mode.read)
            b = B.get_access(h, sycl.access_mode.read)
            c = C.get_access(h, sycl.access_mode.write)

            def matmul(it: sycl.item) -> None:
                i, j = it[0], it[1]
                acc = F32(0.0)
                for k in range(n):
                    acc += a[i, k] * b[k, j]
                c[i, j] = acc
            h.parallel_for(sycl.range(n, n), matmul)
        kq.submit(cg)
        kq.wait()
    np.testing.assert_allclose(cm, am @ bm, rtol=1e-5)


def test_bounds_checked_and_plain_kernels_are_separate_cache_entries(kq: sycl.queue) -> None:
    sycl.ext.clear_kernel_memory_cache()
    sycl.ext.reset_kernel_cache_stats()
    x = np.arange(4, dtype=F32)
    try:
        for mode in (False, True, False, True):
            sycl.ext.set_bounds_check(mode)
            assert sycl.ext.bounds_check_enabled() is mode
            out = _shifted_copy(kq, x, 0)
            assert np.array_equal(out, x)
    finally:
        sycl.ext.set_bounds_check(None)
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] + s["disk_hits"] == 2 and s["memory_hits"] == 2, s


def test_bounds_checked_kernel_survives_the_disk_cache(kq: sycl.queue, checked: None) -> None:
    if _diskcache.cache_dir() is None:
        pytest.skip("disk cache disabled")
    x = np.arange(6, dtype=F32)
    with pytest.raises(sycl.exception, match="bounds-checked mode"):
        _shifted_copy(kq, x, 2)
    sycl.ext.clear_kernel_memory_cache()
    sycl.ext.reset_kernel_cache_stats()
    with pytest.raises(sycl.exception, match=r"index \[[67]\] is outside its range \(6,\)"):
        _shifted_copy(kq, x, 2)                   # CompiledKernel.bounds_checked from disk
    s = sycl.ext.kernel_cache_stats()
    assert s["disk_hits"] == 1 and s["compiles"] == 0, s


def test_bounds_check_environment_variable_is_read_at_import() -> None:
    code = """
        import pysycl as sycl
        print(sycl.ext.bounds_check_enabled())
        sycl.ext.set_bounds_check(False)
        print(sycl.ext.bounds_check_enabled())
        sycl.ext.set_bounds_check(None)   # the environment again
        print(sycl.ext.bounds_check_enabled())
    """
    env = {**os.environ, "PYSYCL_BOUNDS_CHECK": "1"}
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "False", "True"]


def test_setting_the_environment_variable_later_changes_nothing_until_set_bounds_check(
        kq: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(4, dtype=F32)
    was = sycl.ext.bounds_check_enabled()
    monkeypatch.setenv("PYSYCL_BOUNDS_CHECK", "1")
    assert sycl.ext.bounds_check_enabled() is was  # read at import, not per launch
    sycl.ext.set_bounds_check(None)  # reads it again
    try:
        assert sycl.ext.bounds_check_enabled()
        with pytest.raises(sycl.exception, match="bounds-checked mode"):
            _shifted_copy(kq, x, 2)
    finally:
        _bounds.watching.clear()
        monkeypatch.setenv("PYSYCL_BOUNDS_CHECK", "0")
        sycl.ext.set_bounds_check(None)
    assert not sycl.ext.bounds_check_enabled()
    with pytest.raises(TypeError):
        sycl.ext.set_bounds_check("yes")  # type: ignore[arg-type]


# ------------------------------------------------------------------- host device
def test_host_device_rejects_negative_index(hq: sycl.queue) -> None:
    x = np.arange(8, dtype=np.float64)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read_write)

            def k(i: sycl.item) -> None:
                a[i] = a[i - 1]             # work-item 0 reads a[-1]
            h.parallel_for(sycl.range(8), k)
        with pytest.raises(sycl.exception) as ei:
            hq.submit(cg)
    e = ei.value
    assert e.code() == sycl.errc.kernel
    assert "index -1 is out of bounds for axis 0 with size 8" in e.what()
    assert "work-item (0,)" in e.what()
    assert isinstance(e.__cause__, IndexError)
    assert np.array_equal(x, np.arange(8))   # restored


@pytest.mark.parametrize("what", ["local_accessor", "private_array", "atomic_ref", "write"])
def test_host_device_rejects_negative_index_everywhere(hq: sycl.queue, what: str) -> None:
    out = np.zeros(4, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.read_write)
            tmp = sycl.local_accessor(np.int32, sycl.range(4), h)

            def k(it: sycl.nd_item) -> None:
                lid = it.get_local_id(0)
                if what == "local_accessor":
                    tmp[lid - 1] = 1
                elif what == "private_array":
                    p = sycl.private_array(np.int32, 4)
                    o[lid] = p[lid - 4]
                elif what == "atomic_ref":
                    sycl.atomic_ref(o, lid - 1, sycl.memory_order.relaxed,
                                    sycl.memory_scope.device).fetch_add(1)
                else:
                    o[(lid + 1) * -1] = 2
            h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(4)), k)
        with pytest.raises(sycl.exception, match="out of bounds") as ei:
            hq.submit(cg)
    assert ei.value.code() == sycl.errc.kernel
    assert not out.any()

"""nd_range reductions that loop (:mod:`pysycl_numba.looped`, issue 27).

An nd_range kernel with reductions that never synchronises its work-group runs looped: its
work-items each run many of the nd_range's items, each item with its own ``sycl.nd_item``.
Here: every id and range query of 1-, 2- and 3-D nd_ranges (hypothesis over the global and
local ranges) against numpy and the host_debuggable device; that the kernel compiled looped;
that kernels which synchronise their work-group (or could tell) compile the usual way and
are still right; the nd_range's errors; buffers and USM, several reductions, a helper taking
the nd_item, a kernel submitted again.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core.abi_plain import kernel_from_plain, kernel_to_plain
from pysycl._kernels import reduction_launch as _reduction

INIT = sycl.property.reduction.initialize_to_identity


def _fresh_compiles(monkeypatch: pytest.MonkeyPatch) -> list:
    """The ``CompiledKernel`` of every kernel compiled from now on (a fresh kernel cache:
    each kernel the test submits compiles)."""
    import pysycl_numba
    from pysycl._kernels.cache import kernels

    real = pysycl_numba.compile_kernel
    seen: list = []

    def spy(*args: Any, **kw: Any) -> Any:
        ck = real(*args, **kw)
        seen.append(ck)
        return ck

    monkeypatch.setattr(pysycl_numba, "compile_kernel", spy)
    monkeypatch.setenv("PYSYCL_CACHE_DIR", tempfile.mkdtemp(prefix="pysycl-looped-test-"))
    kernels.clear_memory()
    return seen


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list:
    """nd_range reductions asked to loop on every device (by default only PTX images are:
    ``reduction_plan.loops_nd_range``; here SPIR-V ones too, so that the looped kernels run on
    the CPU device), and the ``CompiledKernel`` of every kernel the test compiles."""
    monkeypatch.setattr(_reduction, "loops_nd_range", lambda *a: True)
    return _fresh_compiles(monkeypatch)


@pytest.fixture
def looped(compiled: list) -> None:
    """nd_range reductions asked to loop on every device (``compiled``'s)."""


def _mains(compiled: list) -> list:
    """The kernels with reductions (not their final kernels)."""
    return [c for c in compiled if c.reductions and c.index.kind == "nd_range"
            and c.index.ndim and c.captures]


def _read(q: sycl.queue, p: Any, n: int) -> np.ndarray:
    out = np.empty(n, p.dtype)
    q.memcpy(out, p, out.nbytes).wait()
    return out


def _expected(glob: tuple[int, ...], loc: tuple[int, ...]) -> int:
    """numpy's sum of :func:`_weight` over every work-item of ``nd_range(glob, loc)``."""
    ids = np.indices(glob).reshape(len(glob), -1).astype(np.int64)
    g = np.array(glob, np.int64)[:, None]
    ln = np.array(loc, np.int64)[:, None]
    lid, grp = ids % ln, ids // ln

    def linear(v: np.ndarray, r: np.ndarray) -> np.ndarray:
        out = np.zeros(v.shape[1], np.int64)
        for d in range(v.shape[0]):
            out = out * r[d] + v[d]
        return out

    w = (linear(ids, g[:, 0]) + 1) * (linear(lid, ln[:, 0]) + 3) \
        * (linear(grp, (g // ln)[:, 0]) + 5)
    for d in range(len(glob)):
        w = w + (d + 2) * (ids[d] * 7 + lid[d] * 11 + grp[d] * 13)
    return int(w.sum())


def _kernel(ndim: int, glob: tuple[int, ...], loc: tuple[int, ...]) -> Callable[..., None]:
    """A kernel reading every query of its nd_item: ``s`` sums :func:`_expected`'s weights,
    ``bad`` ors a bit for each query that disagrees with another (0 if all agree)."""
    g0, l0 = glob[0], loc[0]
    if ndim == 1:
        def k(it: sycl.nd_item, s: sycl.reducer, bad: sycl.reducer) -> None:
            i, li, gi = it.get_global_id(0), it.get_local_id(0), it.get_group(0)
            s.combine((it.get_global_linear_id() + 1) * (it.get_local_linear_id() + 3)
                      * (it.get_group_linear_id() + 5) + 2 * (i * 7 + li * 11 + gi * 13))
            b = 0
            if i != gi * l0 + li or it.get_global_id()[0] != i:
                b |= 1
            if it.get_global_range(0) != g0 or it.get_local_range(0) != l0:
                b |= 2
            if it.get_group_range(0) != g0 // l0 or it.get_nd_range().get_group_range()[0] \
                    != g0 // l0:
                b |= 4
            bad.combine(b)
        return k
    gl, lc = tuple(glob), tuple(loc)

    def kn(it: sycl.nd_item, s: sycl.reducer, bad: sycl.reducer) -> None:
        w = (it.get_global_linear_id() + 1) * (it.get_local_linear_id() + 3) \
            * (it.get_group_linear_id() + 5)
        b = 0
        for d in range(ndim):
            i, li, gi = it.get_global_id(d), it.get_local_id(d), it.get_group(d)
            w += (d + 2) * (i * 7 + li * 11 + gi * 13)
            if i != gi * it.get_local_range(d) + li or it.get_local_id()[d] != li:
                b |= 1
            if it.get_global_range()[d] != gl[d] or it.get_local_range()[d] != lc[d]:
                b |= 2
            if it.get_group_range(d) != gl[d] // lc[d]:
                b |= 4
        s.combine(w)
        bad.combine(b)
    return kn


@st.composite
def _nd_ranges(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ndim = draw(st.integers(1, 3))
    top = {1: (64, 40), 2: (8, 6), 3: (4, 4)}[ndim]
    loc = tuple(draw(st.lists(st.integers(1, top[0]), min_size=ndim, max_size=ndim)))
    groups = draw(st.lists(st.integers(1, top[1]), min_size=ndim, max_size=ndim))
    return tuple(a * b for a, b in zip(loc, groups, strict=True)), loc


def _run(q: sycl.queue, glob: tuple[int, ...], loc: tuple[int, ...]) -> tuple[int, int]:
    out = sycl.malloc_shared(2, q, dtype=np.int64) if q.get_device().has(
        sycl.aspect.usm_shared_allocations) else sycl.malloc_device(2, q, dtype=np.int64)
    try:
        q.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)),
                       sycl.reduction(out, sycl.plus(), [INIT()]),
                       sycl.reduction(out + 1, sycl.bit_or(), [INIT()]),
                       _kernel(len(glob), glob, loc)).wait()
        got = _read(q, out, 2)
        return int(got[0]), int(got[1])
    finally:
        sycl.free(out, q)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_nd_ranges())
def test_every_query_of_a_looped_nd_item(kq: sycl.queue, compiled: list,
                                         space: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """Ids, linear ids and ranges of 1-3-D nd_ranges: numpy's sum of their weights, every
    query consistent with the others; the kernel compiled looped."""
    glob, loc = space
    assert _run(kq, glob, loc) == (_expected(glob, loc), 0)
    mains = _mains(compiled)
    assert mains and all(c.index.looped for c in mains)


@pytest.mark.parametrize(("glob", "loc"), [((96,), (8,)), ((12, 10), (4, 5)),
                                           ((4, 6, 10), (2, 3, 5))])
def test_looped_matches_the_host_device(looped: None, kq: sycl.queue, hq: sycl.queue,
                                        glob: tuple[int, ...], loc: tuple[int, ...]) -> None:
    """The same kernel on the host_debuggable device (the oracle) gives the same values."""
    assert _run(kq, glob, loc) == _run(hq, glob, loc) == (_expected(glob, loc), 0)


def _sum_into(q: sycl.queue, kernel: Callable[..., None], n: int, wg: int,
              extra: Callable[[sycl.handler], Any] | None = None) -> float:
    """The float64 sum ``kernel`` reduces over ``nd_range(n, wg)`` into a buffer."""
    out = sycl.buffer(np.zeros(1, np.float64))

    def cg(h: sycl.handler) -> None:
        caps = extra(h) if extra is not None else None
        red = sycl.reduction(out, h, sycl.plus())
        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), red,
                       kernel if caps is None else kernel(caps))

    q.submit(cg).wait()
    with out.get_host_access() as a:
        return float(a[0])


def test_kernels_that_synchronise_compile_as_nd_ranges(kq: sycl.queue, compiled: list) -> None:
    """A barrier, a group function, a local accessor, the group object, a work-group-scope
    atomic and an assert each keep the plain nd_range (one item a work-item), and the results
    are right; the same kernel without them runs looped."""
    n, wg = 256, 16
    x = np.arange(n, dtype=np.float64)
    xb = sycl.buffer(x)
    want = float(x.sum())

    def read(h: sycl.handler) -> Any:
        return xb.get_access(h, sycl.access_mode.read)

    def barrier(a: Any) -> Callable[..., None]:
        def k(it: sycl.nd_item, r: sycl.reducer) -> None:
            it.barrier()
            r.combine(a[it.get_global_id(0)])
        return k

    def group_sum(a: Any) -> Callable[..., None]:
        def k(it: sycl.nd_item, r: sycl.reducer) -> None:
            t = sycl.reduce_over_group(it.get_group(), a[it.get_global_id(0)], sycl.plus())
            if it.get_local_id(0) == 0:
                r.combine(t)
        return k

    def group_object(a: Any) -> Callable[..., None]:
        def k(it: sycl.nd_item, r: sycl.reducer) -> None:
            g = it.get_group()
            r.combine(a[g.get_group_linear_id() * g.get_local_linear_range()
                        + g.get_local_linear_id()])
        return k

    def asserting(a: Any) -> Callable[..., None]:
        def k(it: sycl.nd_item, r: sycl.reducer) -> None:
            v = a[it.get_global_id(0)]
            assert v >= 0, "negative"
            r.combine(v)
        return k

    def plain(a: Any) -> Callable[..., None]:
        def k(it: sycl.nd_item, r: sycl.reducer) -> None:
            r.combine(a[it.get_global_id(0)])
        return k

    for make in (barrier, group_sum, group_object, asserting):
        assert _sum_into(kq, make, n, wg, read) == want, make.__name__
        (main,) = _mains(compiled)[-1:]
        assert not main.index.looped, make.__name__

    def local(h: sycl.handler) -> Any:
        return read(h), sycl.local_accessor(np.float64, sycl.range(wg), h)

    def with_local(caps: Any) -> Callable[..., None]:
        a, tile = caps

        def k(it: sycl.nd_item, r: sycl.reducer) -> None:
            tile[it.get_local_id(0)] = a[it.get_global_id(0)]
            r.combine(tile[it.get_local_id(0)])
        return k

    assert _sum_into(kq, with_local, n, wg, local) == want
    assert not _mains(compiled)[-1].index.looped
    counts = sycl.buffer(np.zeros(1, np.int64))

    def atomics(h: sycl.handler) -> Any:
        return read(h), counts.get_access(h, sycl.access_mode.read_write)

    def work_group_atomic(caps: Any) -> Callable[..., None]:
        a, c = caps

        def k(it: sycl.nd_item, r: sycl.reducer) -> None:
            sycl.atomic_ref(c, 0, sycl.memory_order.relaxed,
                            sycl.memory_scope.work_group).fetch_add(1)
            r.combine(a[it.get_global_id(0)])
        return k

    assert _sum_into(kq, work_group_atomic, n, wg, atomics) == want
    assert not _mains(compiled)[-1].index.looped
    assert _sum_into(kq, plain, n, wg, read) == want
    assert _mains(compiled)[-1].index.looped


def test_a_helper_taking_the_nd_item(kq: sycl.queue, compiled: list) -> None:
    """A helper function that takes the looped nd_item reads its ids (and the kernel still
    loops)."""
    n, wg = 1000, 8
    x = np.random.default_rng(3).random(n)
    p = sycl.malloc_device(n, kq, dtype=np.float64)
    out = sycl.malloc_device(1, kq, dtype=np.float64)
    try:
        kq.memcpy(p, x, x.nbytes).wait()

        def at(it: sycl.nd_item) -> float:
            return p[it.get_group(0) * it.get_local_range(0) + it.get_local_id(0)]

        kq.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)),
                        sycl.reduction(out, sycl.plus(), [INIT()]),
                        lambda it, r: r.combine(at(it))).wait()
        np.testing.assert_allclose(_read(kq, out, 1)[0], x.sum(), rtol=1e-12)
        assert _mains(compiled)[-1].index.looped
    finally:
        sycl.free(p, kq)
        sycl.free(out, kq)


def test_looped_errors_are_the_nd_ranges(looped: None, kq: sycl.queue) -> None:
    """A global range that is no multiple of the local range, and a work-group wider than
    the device's: ``errc.nd_range``, as for any nd_range; the variable keeps its value."""
    out = sycl.buffer(np.array([7.0]))
    widest = kq.get_device().get_info(sycl.info.device.max_work_group_size)
    for glob, loc, says in (((100,), (8,), "is not a multiple of the local range"),
                            ((2 * widest,), (2 * widest,), f"exceeds the {widest}")):
        def cg(h: sycl.handler, glob: tuple = glob, loc: tuple = loc) -> None:
            h.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)),
                           sycl.reduction(out, h, sycl.plus()),
                           lambda it, r: r.combine(it.get_global_id(0) * 1.0))

        with pytest.raises(sycl.exception) as e:
            kq.submit(cg).wait()
        assert e.value.code() == sycl.errc.nd_range
        assert says in str(e.value) and "test_reduction_looped.py" in str(e.value), e.value
    with out.get_host_access() as a:
        assert a[0] == 7.0


def test_a_looped_group_submitted_again(looped: None, kq: sycl.queue) -> None:
    """A command group of a looped nd_range reduction submitted again (its kept launch,
    pysycl._kernels.again) with the buffer's contents changed between: each result numpy's."""
    n, wg = 4096, 64
    x = np.arange(n, dtype=np.float32) % 13
    xb, out = sycl.buffer(x.copy()), sycl.buffer(np.zeros(1, np.float32))

    def cg(h: sycl.handler) -> None:
        a = xb.get_access(h, sycl.access_mode.read)
        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)),
                       sycl.reduction(out, h, sycl.plus(), [INIT()]),
                       lambda it, r: r.combine(a[it.get_global_id(0)]))

    for step in range(4):
        kq.submit(cg)
        with out.get_host_access() as a:
            assert a[0] == (x + step).sum()
        with xb.get_host_access() as a:
            a[:] += 1


def test_a_looped_kernel_survives_the_disk_cache_format(kq: sycl.queue, compiled: list) -> None:
    """The looped index space is part of the cached kernel's plain data."""
    p = sycl.malloc_device(64, kq, dtype=np.float32)
    out = sycl.malloc_device(1, kq, dtype=np.float32)
    try:
        kq.memset(p, 0, 256).wait()
        kq.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(8)),
                        sycl.reduction(out, sycl.plus(), [INIT()]),
                        lambda it, r: r.combine(p[it.get_global_id(0)])).wait()
        ck = _mains(compiled)[-1]
        assert ck.index.looped
        assert kernel_from_plain(kernel_to_plain(ck), ck.binary) == ck
    finally:
        sycl.free(p, kq)
        sycl.free(out, kq)


def test_which_nd_ranges_loop(kq: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    """By default an nd_range reduction loops on PTX images where the GPU cannot hold all
    its work-items at once (2048 a compute unit), and never on SPIR-V ones
    (``reduction_plan.loops_nd_range``: Intel's CPU runtime ran the plain nd_range faster);
    one kernel, both sizes, both right."""
    seen = _fresh_compiles(monkeypatch)
    units = kq.get_device().get_info(sycl.info.device.max_compute_units)
    big = 2048 * units + 256
    p = sycl.malloc_device(big, kq, dtype=np.float32)
    out = sycl.malloc_device(1, kq, dtype=np.float32)
    try:
        kq.memcpy(p, np.ones(big, np.float32), 4 * big).wait()
        for n in (256, big):
            kq.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(256)),
                            sycl.reduction(out, sycl.plus(), [INIT()]),
                            lambda it, r: r.combine(p[it.get_global_id(0)])).wait()
            assert _read(kq, out, 1)[0] == n
        mains = _mains(seen)  # (SPIR-V: one kernel serves both)
        assert not mains[0].index.looped
        assert [m.index.looped for m in mains[1:]] == ([True] if mains[0].format == "ptx"
                                                         else [])
    finally:
        sycl.free(p, kq)
        sycl.free(out, kq)


def test_may_loop_reads_the_code() -> None:
    """``may_loop`` from the code alone: a plain kernel may; a barrier, a group function, a
    work-group-scope atomic, a fence or an assert -- in the kernel or a nested function --
    may not; nor a kernel without reductions or with a span reduction."""
    from pysycl._core.abi import ReductionType
    from pysycl_numba.looped import may_loop

    red = [ReductionType(np.dtype(np.float32), "plus", False)]

    def plain(it: Any, r: Any) -> None:
        r.combine(it.get_global_id(0))

    def asserting(it: Any, r: Any) -> None:
        assert it.get_global_id(0) >= 0
        r.combine(1)

    def nested_barrier(it: Any, r: Any) -> None:
        def inner() -> None:
            sycl.group_barrier(it.get_group())
        inner()
        r.combine(1)

    def scoped(it: Any, r: Any) -> None:
        r.combine(sycl.memory_scope.work_group)

    def fenced(it: Any, r: Any) -> None:
        sycl.atomic_fence(sycl.memory_order.seq_cst, sycl.memory_scope.device)
        r.combine(1)

    assert may_loop(plain, (), red, False, ())
    for f in (asserting, nested_barrier, scoped, fenced):
        assert not may_loop(f, (), red, False, ()), f.__name__
    assert not may_loop(plain, (), red, True, ())  # bounds-checked
    assert not may_loop(plain, (), (), False, ())
    assert not may_loop(plain, (), [ReductionType(np.dtype(np.float32), "plus", True)],
                        False, ())

"""sycl.reduction over USM pointers and spans (SYCL 2020 §4.10.2), on every device.

The handler-less forms ``sycl.reduction(ptr, op)`` / ``sycl.reduction(sycl.span(ptr, n), op)``
in command groups and in the queue shortcuts (with dependency events), several
reductions in one kernel mixing buffers and USM, ``initialize_to_identity``;
compared with numpy on the OpenCL device and the host_debuggable device.

The variables are shared USM where the device has ``aspect.usm_shared_allocations``
(Intel's CPU, the host_debuggable device), device USM elsewhere (an NVIDIA GPU through
OpenCL has neither shared nor host USM); values go in and results come back with
``q.memcpy``, which works for every kind. ``test_device_allocation_result`` and
``test_every_usm_kind_the_device_has`` run each kind the device has.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from tests.kernels.test_reduction import FLOAT_OPS, INT_OPS, _numpy_reduce, _values

INIT = sycl.property.reduction.initialize_to_identity
_UFUNC = {"plus": np.add, "multiplies": np.multiply, "minimum": np.minimum,
          "maximum": np.maximum, "bit_and": np.bitwise_and, "bit_or": np.bitwise_or,
          "bit_xor": np.bitwise_xor}


KIND_ASPECT = {sycl.usm.alloc.device: sycl.aspect.usm_device_allocations,
               sycl.usm.alloc.host: sycl.aspect.usm_host_allocations,
               sycl.usm.alloc.shared: sycl.aspect.usm_shared_allocations}


def _kind(q: sycl.queue) -> sycl.usm.alloc:
    """Shared USM where the device has it, else device USM (every device has that)."""
    has = q.get_device().has(sycl.aspect.usm_shared_allocations)
    return sycl.usm.alloc.shared if has else sycl.usm.alloc.device


def _alloc(q: sycl.queue, n: int, dtype: Any) -> Any:
    return sycl.malloc(n, q, _kind(q), dtype=dtype)


def _usm(q: sycl.queue, a: np.ndarray, kind: sycl.usm.alloc | None = None) -> Any:
    """A USM allocation holding ``a`` (of ``kind``, else ``_kind(q)``)."""
    p = sycl.malloc(max(a.size, 1), q, kind or _kind(q), dtype=a.dtype)
    if a.size:
        q.memcpy(p, np.ascontiguousarray(a), a.nbytes).wait()
    return p


def _read(q: sycl.queue, p: Any, n: int | None = None) -> np.ndarray:
    """The first ``n`` elements at ``p`` (all to the end of its allocation), copied back."""
    out = np.empty(p.count if n is None else n, p.dtype)
    q.memcpy(out, p, out.nbytes).wait()
    return out


def _close(got: Any, want: Any, dt: np.dtype) -> None:
    if np.dtype(dt).kind == "f":
        np.testing.assert_allclose(np.float64(got), np.float64(want), rtol=1e-4, atol=1e-3)
    else:
        assert got == np.asarray(want).astype(dt), (got, want)


# ------------------------------------------------------------------- USM pointers
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint64, np.float32,
                                   np.float64])
@pytest.mark.parametrize("init", [False, True])
def test_pointer_every_operator(any_kernel_queue: sycl.queue, dtype: type, init: bool) -> None:
    q = any_kernel_queue
    dt = np.dtype(dtype)
    ops = INT_OPS if dt.kind in "iu" else FLOAT_OPS
    rng = np.random.default_rng(7)
    n = 777
    for op in ops:
        x = _values(rng, dtype, op, n)
        old = _values(rng, dtype, op, 1)
        xp, out = _usm(q, x), _usm(q, old)
        props = [INIT()] if init else []
        q.submit(lambda h, xp=xp, out=out, op=op, props=props: h.parallel_for(
            sycl.range(n), sycl.reduction(out, getattr(sycl, op)(), props),
            lambda i, r: r.combine(xp[i]))).wait()
        _close(_read(q, out)[0], _numpy_reduce(op, x, None if init else old[0]), dt)
        sycl.free(xp, q)
        sycl.free(out, q)


def test_queue_shortcut_nd_range_two_reductions_depends_on(any_kernel_queue: sycl.queue) -> None:
    """``q.parallel_for(nd, red1, red2, k, depends_on=e)``: the reductions wait for ``e``."""
    q = any_kernel_queue
    n = 4096
    x = sycl.malloc_device(n, q, dtype=np.float32)
    s = _alloc(q, 1, np.float32)
    m = _alloc(q, 1, np.int64)
    src = np.linspace(-3, 5, n, dtype=np.float32)
    e = q.memcpy(x, src, src.nbytes)
    init = [INIT()]
    ev = q.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(64)),
                        sycl.reduction(s, sycl.plus(), init),
                        sycl.reduction(m, sycl.maximum(), init),
                        lambda it, rs, rm: (rs.combine(x[it.get_global_id(0)]),
                                            rm.combine(it.get_group(0))),
                        depends_on=e)
    ev.wait()
    np.testing.assert_allclose(_read(q, s)[0], src.sum(dtype=np.float64), rtol=1e-4)
    assert _read(q, m)[0] == n // 64 - 1
    # the positional event form; the old value is kept (no initialize_to_identity)
    e2 = q.fill(x, np.float32(2), n)
    q.parallel_for(sycl.range(n), e2, sycl.reduction(s, sycl.plus()),
                   lambda i, r: r.combine(x[i])).wait()
    np.testing.assert_allclose(_read(q, s)[0], src.sum(dtype=np.float64) + 2 * n, rtol=1e-4)
    for p in (x, s, m):
        sycl.free(p, q)


def test_buffers_and_usm_in_one_kernel(any_kernel_queue: sycl.queue) -> None:
    """SYCL-CTS style: several reductions in one kernel, a buffer, an accessor, USM, a span."""
    q = any_kernel_queue
    n = 1000
    x = np.arange(n, dtype=np.int32) - 300
    xb = sycl.buffer(x)
    total = sycl.buffer(np.array([10], np.int32))
    lo = sycl.buffer(np.array([0], np.int32))
    hi = _usm(q, np.array([-(2 ** 31)], np.int32))
    hist = _usm(q, np.full(5, 100, np.int64))

    def cg(h: sycl.handler) -> None:
        a = xb.get_access(h, sycl.access_mode.read)
        lo_acc = lo.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(n),
                       sycl.reduction(total, h, sycl.plus()),
                       sycl.reduction(lo_acc, h, sycl.minimum()),
                       sycl.reduction(hi, sycl.maximum()),
                       sycl.reduction(sycl.span(hist, 5), sycl.plus()),
                       lambda i, rt, rl, rh, rhist: (rt.combine(a[i]), rl.combine(a[i]),
                                                     rh.combine(a[i]),
                                                     rhist[i % 5].combine(1)))

    q.submit(cg).wait()
    assert sycl.host_accessor(total)[0] == x.sum() + 10
    assert sycl.host_accessor(lo)[0] == min(0, x.min())
    assert _read(q, hi)[0] == x.max()
    np.testing.assert_array_equal(_read(q, hist), 100 + np.bincount(np.arange(n) % 5))
    sycl.free(hi, q)
    sycl.free(hist, q)


def test_identity_and_custom_combiner(any_kernel_queue: sycl.queue) -> None:
    """``reduction(ptr, identity, combiner)`` (the spec's order) and ``identity=``."""
    q = any_kernel_queue
    n = 513
    x = np.random.default_rng(3).uniform(-50, 50, n)
    xp = _usm(q, x)
    out = _usm(q, np.array([7.0]))

    def absmax(a: float, b: float) -> float:
        return max(abs(a), abs(b))

    q.parallel_for(sycl.range(n), sycl.reduction(out, 0.0, absmax),
                   lambda i, r: r.combine(xp[i])).wait()
    assert _read(q, out)[0] == max(7.0, np.abs(x).max())
    q.parallel_for(sycl.range(n), sycl.reduction(out, absmax, identity=0.0,
                                                 properties=[INIT()]),
                   lambda i, r: r.combine(xp[i])).wait()
    assert _read(q, out)[0] == np.abs(x).max()
    sycl.free(xp, q)
    sycl.free(out, q)


def _needs(q: sycl.queue, kind: sycl.usm.alloc) -> None:
    aspect = KIND_ASPECT[kind]
    if not q.get_device().has(aspect):
        pytest.skip(f"{q.get_device().get_info(sycl.info.device.name)} has no "
                    f"aspect.{aspect.name}: no {kind.name} USM to reduce into")


def test_device_allocation_result(any_kernel_queue: sycl.queue) -> None:
    """A ``malloc_device`` result: the final kernel writes device memory; copy it back."""
    q = any_kernel_queue
    out = sycl.malloc_device(1, q, dtype=np.int64)
    q.fill(out, np.int64(5), 1).wait()
    q.parallel_for(sycl.range(3, 4, 5), sycl.reduction(out, sycl.plus()),
                   lambda it, r: r.combine(it.get_linear_id())).wait()
    got = np.zeros(1, np.int64)
    q.memcpy(got, out, 8).wait()
    assert got[0] == 5 + sum(range(60))
    sycl.free(out, q)


@pytest.mark.parametrize("kind", list(KIND_ASPECT), ids=lambda k: k.name)
def test_every_usm_kind_the_device_has(any_kernel_queue: sycl.queue,
                                       kind: sycl.usm.alloc) -> None:
    """A pointer and a span reduction into each USM kind; the source in that kind too."""
    q = any_kernel_queue
    _needs(q, kind)
    n, nb = 500, 6
    x = np.arange(n, dtype=np.int64) * 3 - 700
    xp = _usm(q, x, kind)
    out = _usm(q, np.array([11, -1, -1, -1, -1, -1, -1, 99], np.int64), kind)
    q.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus()),
                   sycl.reduction(sycl.span(out + 1, nb), sycl.maximum(), [INIT()]),
                   lambda i, r, s: (r.combine(xp[i]), s[i % nb].combine(xp[i]))).wait()
    want = [11 + x.sum(), *(x[np.arange(n) % nb == j].max() for j in range(nb)), 99]
    np.testing.assert_array_equal(_read(q, out), want)
    if kind is not sycl.usm.alloc.device:  # host-accessible: the host reads it directly
        np.testing.assert_array_equal(np.asarray(out), want)
    sycl.free(xp, q)
    sycl.free(out, q)


# --------------------------------------------------------------------------- spans
def _span_expected(op: str, x: np.ndarray, bins: np.ndarray, n: int, old: np.ndarray | None
                   ) -> np.ndarray:
    out = np.empty(n, x.dtype)
    for j in range(n):
        out[j] = _numpy_reduce(op, x[bins == j], None if old is None else old[j])
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64, np.float32,
                                   np.float64])
@pytest.mark.parametrize("kind", ["range", "nd_range"])
def test_span_every_operator(any_kernel_queue: sycl.queue, dtype: type, kind: str) -> None:
    q = any_kernel_queue
    dt = np.dtype(dtype)
    ops = INT_OPS if dt.kind in "iu" else FLOAT_OPS
    rng = np.random.default_rng(11)
    items, nb = 640, 9
    bins = rng.integers(0, nb, items)
    bp = _usm(q, bins.astype(np.int32))
    for k, op in enumerate(ops):
        x = _values(rng, dtype, op, items)
        old = _values(rng, dtype, op, nb)
        init = k % 2 == 0
        xp, out = _usm(q, x), _usm(q, old)
        red = sycl.reduction(sycl.span(out, nb), getattr(sycl, op)(), [INIT()] if init else [])
        if kind == "range":
            q.parallel_for(sycl.range(items), red,
                           lambda i, r: r[bp[i]].combine(xp[i])).wait()
        else:
            q.parallel_for(sycl.nd_range(sycl.range(items), sycl.range(32)), red,
                           lambda it, r: r[bp[it.get_global_id(0)]].combine(
                               xp[it.get_global_id(0)])).wait()
        want, got = _span_expected(op, x, bins, nb, None if init else old), _read(q, out)
        for j in range(nb):
            _close(got[j], want[j], dt)
        sycl.free(xp, q)
        sycl.free(out, q)
    sycl.free(bp, q)


def test_span_inplace_operators_and_custom(any_kernel_queue: sycl.queue) -> None:
    """``r[i] += x`` (the element stored back), ``r[i] |= x``, a custom combiner."""
    q = any_kernel_queue
    n, nb = 300, 4
    s = _usm(q, np.zeros(nb, np.int32))
    o = _usm(q, np.zeros(nb, np.uint32))
    c = _alloc(q, nb, np.float32)

    def k(i: Any, rs: Any, ro: Any, rc: Any) -> None:
        j = i % nb
        rs[j] += i
        ro[j] |= 1 << (i % 31)
        rc[j].combine(i * 0.5)

    def second_largest_ish(a: float, b: float) -> float:
        return a if a > b else b

    init = [INIT()]
    q.parallel_for(sycl.range(n), sycl.reduction(sycl.span(s, nb), sycl.plus()),
                   sycl.reduction(sycl.span(o, nb), sycl.bit_or()),
                   sycl.reduction(sycl.span(c, nb), -1.0, second_largest_ish, init), k).wait()
    idx = np.arange(n)
    s_, o_, c_ = _read(q, s), _read(q, o), _read(q, c)
    for j in range(nb):
        assert s_[j] == idx[idx % nb == j].sum()
        assert o_[j] == np.bitwise_or.reduce((1 << (idx[idx % nb == j] % 31)).astype(np.uint32))
        assert c_[j] == idx[idx % nb == j].max() * 0.5
    for p in (s, o, c):
        sycl.free(p, q)


def test_span_of_a_pointer_offset(any_kernel_queue: sycl.queue) -> None:
    """``sycl.span(p + 2, 3)``: only the 3 elements there change."""
    q = any_kernel_queue
    p = _usm(q, np.full(8, -1, np.int64))
    q.parallel_for(sycl.range(30), sycl.reduction(sycl.span(p + 2, 3), sycl.plus(), [INIT()]),
                   lambda i, r: r[i % 3].combine(1)).wait()
    np.testing.assert_array_equal(_read(q, p), [-1, -1, 10, 10, 10, -1, -1, -1])
    sycl.free(p, q)


def test_span_indexed_by_a_1d_item_or_id(any_kernel_queue: sycl.queue) -> None:
    """C++'s ``item<1>`` converts to ``size_t``: ``r[i]`` with the work-item itself."""
    q = any_kernel_queue
    p = _alloc(q, 16, np.float32)
    q.parallel_for(sycl.range(16), sycl.reduction(sycl.span(p, 16), sycl.plus(), [INIT()]),
                   lambda i, r: (r[i].combine(2.0), r[i.get_id()].combine(1.0))).wait()
    np.testing.assert_array_equal(_read(q, p), np.full(16, 3.0, np.float32))
    sycl.free(p, q)


def test_span_index_outside_is_skipped_on_compiled_devices(kq: sycl.queue) -> None:
    """C++ leaves it undefined; compiled devices drop the combine, memory stays intact."""
    p = _usm(kq, np.zeros(6, np.int32))
    kq.parallel_for(sycl.range(40), sycl.reduction(sycl.span(p + 1, 4), sycl.plus()),
                    lambda i, r: r[i - 5].combine(1)).wait()
    np.testing.assert_array_equal(_read(kq, p), [0, 1, 1, 1, 1, 0])
    sycl.free(p, kq)


def test_span_index_outside_raises_on_the_host_device(hq: sycl.queue) -> None:
    p = _usm(hq, np.zeros(4, np.int32))
    with pytest.raises(sycl.exception) as info:
        hq.parallel_for(sycl.range(8), sycl.reduction(sycl.span(p, 4), sycl.plus()),
                        lambda i, r: r[i].combine(1)).wait()
    assert info.value.code() == sycl.errc.kernel
    assert "span reducer[4]" in str(info.value) and "has 4 element(s)" in str(info.value)
    np.testing.assert_array_equal(_read(hq, p), [0, 0, 0, 0])  # nothing written
    sycl.free(p, hq)


# ---------------------------------------------------------------------- hypothesis
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(0, 37), min_size=1, max_size=3),
       nb=st.integers(1, 40), init=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_property_pointer_and_span_over_ranges(any_kernel_queue: sycl.queue, shape: list[int],
                                               nb: int, init: bool, seed: int) -> None:
    q = any_kernel_queue
    total = int(np.prod(shape))
    vals = np.random.default_rng(seed).integers(-1000, 1000, max(total, 1)).astype(np.int64)
    xp = _usm(q, vals)
    s = _usm(q, np.array([3], np.int64))
    hist = _usm(q, np.full(nb, 5, np.int64))
    props = [INIT()] if init else []
    q.parallel_for(sycl.range(*shape), sycl.reduction(s, sycl.plus(), props),
                   sycl.reduction(sycl.span(hist, nb), sycl.maximum(), props),
                   lambda it, r, rh: (r.combine(xp[it.get_linear_id()]),
                                      rh[it.get_linear_id() % nb].combine(
                                          xp[it.get_linear_id()]))).wait()
    v = vals[:total]
    assert _read(q, s)[0] == v.sum() + (0 if init else 3)
    want = np.full(nb, np.iinfo(np.int64).min if init else 5, np.int64)
    np.maximum.at(want, np.arange(total) % nb, v)
    np.testing.assert_array_equal(_read(q, hist), want)
    for p in (xp, s, hist):
        sycl.free(p, q)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), nb=st.integers(1, 70))
def test_property_nd_range_pointer_and_span(any_kernel_queue: sycl.queue, data: st.DataObject,
                                            nb: int) -> None:
    from pysycl.testing.strategies import nd_ranges

    q = any_kernel_queue
    nd = data.draw(nd_ranges(q.get_device(), max_global=4096))
    total = nd.get_global_range().size()
    lo = _usm(q, np.array([10 ** 6], np.int32))
    cnt = _usm(q, np.zeros(nb, np.uint32))
    q.parallel_for(nd, sycl.reduction(lo, sycl.minimum()),
                   sycl.reduction(sycl.span(cnt, nb), sycl.plus()),
                   lambda it, rl, rc: (rl.combine(it.get_global_linear_id() - 7),
                                       rc[it.get_group_linear_id() % nb].combine(1))).wait()
    assert _read(q, lo)[0] == min(10 ** 6, -7 if total else 10 ** 6)
    wg = nd.get_local_range().size()
    groups = total // wg
    want = np.bincount(np.arange(groups) % nb, minlength=nb)[:nb] * wg
    np.testing.assert_array_equal(_read(q, cnt), want.astype(np.uint32))
    sycl.free(lo, q)
    sycl.free(cnt, q)


@pytest.mark.parametrize("op", ["logical_and", "logical_or"])
def test_logical_operators_pointer_and_span(any_kernel_queue: sycl.queue, op: str) -> None:
    q = any_kernel_queue
    n, nb = 200, 3
    x = (np.arange(n) % 17 != 0).astype(np.int32) if op == "logical_and" else \
        (np.arange(n) == 101).astype(np.int32)
    xp = _usm(q, x)
    one = _usm(q, np.array([1], np.int32))
    sp = _usm(q, np.ones(nb, np.int64))
    q.parallel_for(sycl.range(n), sycl.reduction(one, getattr(sycl, op)()),
                   sycl.reduction(sycl.span(sp, nb), getattr(sycl, op)()),
                   lambda i, r, s: (r.combine(xp[i]), s[i % nb].combine(xp[i]))).wait()
    f = np.logical_and if op == "logical_and" else np.logical_or
    assert _read(q, one)[0] == int(f(True, f.reduce(x != 0)))
    want = [int(f(True, f.reduce(x[np.arange(n) % nb == j] != 0))) for j in range(nb)]
    assert list(_read(q, sp)) == want
    for p in (xp, one, sp):
        sycl.free(p, q)


def test_pointer_and_span_kernels_compile_to_ptx(kq: sycl.queue, ptx_images: list) -> None:
    """The main and final kernels of USM and span reductions also compile to PTX (sm_90)."""
    from tests.conftest import ptxas_check

    p = _alloc(kq, 5, np.float32)
    kq.parallel_for(sycl.range(100), sycl.reduction(p, sycl.plus(), [INIT()]),
                    sycl.reduction(sycl.span(p + 1, 4), sycl.maximum(), [INIT()]),
                    lambda i, r, s: (r.combine(1.0), s[i % 4].combine(i * 1.0))).wait()
    got = _read(kq, p)
    assert got[0] == 100.0 and list(got[1:]) == [96.0, 97.0, 98.0, 99.0]
    names = [ck.entry for ck in ptx_images]
    assert len(ptx_images) >= 3, names  # the main kernel and two final kernels
    for ck in ptx_images:
        assert ck.format == "ptx"
        ptxas_check(ck.binary)
    sycl.free(p, kq)


# -------------------------------------------------------------------------- errors
def test_pointer_of_another_context(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    p = _alloc(other, 1, np.float32)
    red = sycl.reduction(p, sycl.plus())
    with pytest.raises(sycl.exception) as info:
        q.parallel_for(sycl.range(4), red, lambda i, r: r.combine(1.0)).wait()
    msg = str(info.value)
    assert info.value.code() == sycl.errc.invalid
    assert "test_usm_reduction.py:" in msg and "not in the queue's context" in msg, msg
    sycl.free(p, other)


def test_freed_pointer(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = _alloc(q, 1, np.float32)
    red = sycl.reduction(p, sycl.plus())
    sycl.free(p, q)
    with pytest.raises(sycl.exception, match=r"freed with sycl\.free") as info:
        q.parallel_for(sycl.range(4), red, lambda i, r: r.combine(1.0)).wait()
    assert info.value.code() == sycl.errc.invalid


def test_argument_errors(kq: sycl.queue) -> None:
    p = _alloc(kq, 4, np.int32)
    here = "test_usm_reduction.py:"
    with pytest.raises(sycl.exception, match="empty span") as info:
        sycl.reduction(sycl.span(p, 0), sycl.plus())
    assert info.value.code() == sycl.errc.invalid and here in str(info.value)
    with pytest.raises(TypeError, match=r"identity 0\.5 \(float\) does not match the "
                                        r"reduction variable's type int32"):
        sycl.reduction(p, 0.5, sycl.plus())
    with pytest.raises(TypeError, match=r"identity 4294967296 is not a int32 value"):
        sycl.reduction(p, sycl.plus(), identity=2 ** 32)
    with pytest.raises(TypeError, match="missing the combiner"):
        sycl.reduction(p)
    with pytest.raises(TypeError, match="needs an integer type"):
        sycl.reduction(p.view(np.float32), sycl.bit_or())
    with pytest.raises(TypeError, match="span reductions of int16 are not supported"):
        sycl.reduction(sycl.span(p.view(np.int16), 2), sycl.plus())
    with pytest.raises(sycl.exception, match="needs identity="):
        sycl.reduction(p, lambda a, b: a + b)
    with pytest.raises(ValueError, match=r"sycl.span\(ptr, 5\): .* has 4 element"):
        sycl.span(p, 5)
    with pytest.raises(TypeError, match="must be a USM pointer"):
        sycl.span(np.zeros(3), 3)

    def cg(h: sycl.handler) -> None:
        sycl.reduction(p, h, sycl.plus())

    with pytest.raises(TypeError, match="takes no handler"):
        kq.submit(cg)
    buf = sycl.buffer(np.zeros(1, np.int32))
    with pytest.raises(TypeError, match="the second argument must be the command group's "
                                        "handler, not plus"):
        sycl.reduction(buf, sycl.plus())
    sycl.free(p, kq)


def test_overlapping_variables_in_one_kernel(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = _alloc(q, 4, np.int32)
    with pytest.raises(sycl.exception, match="overlaps that of the reduction at") as info:
        q.parallel_for(sycl.range(4), sycl.reduction(sycl.span(p, 3), sycl.plus()),
                       sycl.reduction(p + 2, sycl.plus()),
                       lambda i, a, b: (a[0].combine(1), b.combine(1))).wait()
    assert info.value.code() == sycl.errc.invalid
    sycl.free(p, q)


@pytest.mark.parametrize("kind", [sycl.usm.alloc.shared, sycl.usm.alloc.host],
                         ids=lambda k: k.name)
def test_span_host_view_and_repr(kq: sycl.queue, kind: sycl.usm.alloc) -> None:
    _needs(kq, kind)
    p = sycl.malloc(5, kq, kind, dtype=np.float64)
    s = sycl.span(p + 1, 3)
    np.asarray(p)[:] = [0, 1, 2, 3, 4]
    assert len(s) == s.size() == 3 and s.size_bytes() == 24 and not s.empty()
    assert s[0] == 1.0 and list(np.asarray(s)) == [1.0, 2.0, 3.0]
    assert s.data() == p + 1 and sycl.span(p).size() == 5
    with pytest.raises(IndexError):
        s[3]
    assert "span" in repr(sycl.reduction(s, sycl.plus()))
    sycl.free(p, kq)


def test_span_of_device_memory_has_no_host_view(kq: sycl.queue) -> None:
    """Every device has device USM: the span's sizes work, its host view is a clear error."""
    p = sycl.malloc_device(5, kq, dtype=np.float64)
    s = sycl.span(p + 1, 3)
    assert len(s) == s.size() == 3 and s.size_bytes() == 24 and not s.empty()
    assert s.data() == p + 1 and sycl.span(p).size() == 5
    with pytest.raises(sycl.exception, match="device allocation, which the host cannot "
                                             "access") as info:
        np.asarray(s)
    assert info.value.code() == sycl.errc.invalid
    assert "span" in repr(sycl.reduction(s, sycl.plus()))
    sycl.free(p, kq)

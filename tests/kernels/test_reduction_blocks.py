"""Range reductions with the entry point PTX images get, run on this machine's device.

On NVIDIA GPUs a 1-D range reduction's work-items run strided blocks of items
(:func:`pysycl_numba.reduction_entry.strided_blocks`: 16 items a step, 128-bit loads where
every captured pointer is 16-byte aligned, else 4 strided scalar items a step; an
accumulator per item slot, folded at the end). The ``blocked`` fixture compiles range
reductions so on this machine's device too (no GPU here; on a GPU it is the path they take
anyway) and launches them on small grids (``blocked(groups, wg)``), so that every loop, the
guarded tail and the last items run, at every alignment of the pointers. Results are
compared with numpy and with the host_debuggable device.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._bundles import kernel_id as _kernel_ids
from pysycl._kernels import reduction_launch as _reduction
from tests.kernels.test_reduction import FLOAT_OPS, INT_OPS, _numpy_reduce, _run_all_ops, _values
from tests.kernels.test_usm_reduction import (
    test_span_every_operator,
    test_span_inplace_operators_and_custom,
)

INIT = sycl.property.reduction.initialize_to_identity
#: Sizes around the blocks of a grid of 3 x 4 work-items (G = 12): vectors of 4 items, 4 of
#: them a step (192 items a step), the guarded tail, the last n % 4 items; and primes.
SIZES = [0, 1, 3, 4, 5, 11, 12, 13, 15, 16, 17, 47, 48, 49, 143, 144, 145, 191, 192, 193,
         197, 383, 384, 385, 1009, 4099]


class Blocked:
    """What the ``blocked`` fixture set up: the grid range reductions launch on (``grid``:
    work-groups, work-items per group) and the reducers a fold was compiled for."""

    def __init__(self) -> None:
        self.grid = (3, 4)
        self.folds: list[object] = []

    def __call__(self, groups: int, wg: int) -> None:
        self.grid = (groups, wg)


@pytest.fixture
def blocked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Blocked]:
    """Range reductions compiled with strided blocks for the kernel device (the PTX images'
    entry point) and launched on a grid of ``groups`` x ``wg`` work-items (3 x 4 unless the
    test calls ``blocked(groups, wg)``). A fresh kernel cache: these images serve no one."""
    import pysycl_numba.compiler as compiler
    from pysycl._kernels.cache import kernels

    state = Blocked()
    real_sizes, real_fold = _reduction.launch_sizes, compiler.compile_fold

    def sizes(k: Any, dev: Any, lim: Any, cmd: Any, values: Any, target: Any,
              resident: Any = None) -> Any:
        if cmd.kind != "range":
            real = real_sizes(k, dev, lim, cmd, values, target, resident)  # (its checks)
            if not k.compiled.index.looped:
                return real
        groups, wg = state.grid
        wg = max(1, min(wg, lim[0], lim[1][0]))
        return (groups * wg,), (wg,), list(cmd.index_space) if cmd.kind == "range" else real[2]

    def fold(r: Any) -> Any:
        state.folds.append(r)
        return real_fold(r)

    real_blocks = compiler.strided_blocks
    monkeypatch.setattr(compiler, "strided_blocks",  # as for a PTX image
                        lambda arch, index, reducers: real_blocks("sm_90", index, reducers))
    monkeypatch.setattr(compiler, "compile_fold", fold)
    monkeypatch.setattr(_reduction, "launch_sizes", sizes)  # (what a plan is made with)
    monkeypatch.setattr(_reduction, "loops_nd_range", lambda *a: True)  # as on PTX
    monkeypatch.setenv("PYSYCL_CACHE_DIR", tempfile.mkdtemp(prefix="pysycl-blocks-test-"))
    kernels.clear_memory()
    ids, by_mkey = dict(_kernel_ids._ids), dict(_kernel_ids._by_mkey)
    variants = {name: dict(kid.variants) for name, kid in ids.items()}
    yield state
    kernels.clear_memory()
    with _kernel_ids._lock:  # the kernel ids these submits registered hold these images
        _kernel_ids._ids.clear()
        _kernel_ids._ids.update(ids)
        _kernel_ids._by_mkey.clear()
        _kernel_ids._by_mkey.update(by_mkey)
        for name, kid in ids.items():
            kid.variants.clear()
            kid.variants.update(variants[name])


def _shared(q: sycl.queue, a: np.ndarray, extra: int = 0) -> Any:
    """USM holding ``a`` (and ``extra`` more elements), of a kind the host reads through
    ``q.memcpy``."""
    kind = (sycl.usm.alloc.shared if q.get_device().has(sycl.aspect.usm_shared_allocations)
            else sycl.usm.alloc.device)
    p = sycl.malloc(max(a.size + extra, 1), q, kind, dtype=a.dtype)
    if a.size:
        q.memcpy(p, np.ascontiguousarray(a), a.nbytes).wait()
    return p


def _read(q: sycl.queue, p: Any, n: int) -> np.ndarray:
    out = np.empty(n, p.dtype)
    q.memcpy(out, p, out.nbytes).wait()
    return out


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint64, np.float32,
                                   np.float64], ids=lambda d: np.dtype(d).name)
def test_every_operator_at_the_block_boundaries(blocked: Blocked,
                                                kq: sycl.queue, dtype: type) -> None:
    """Every operator of the type, one reduction each in one kernel (several reducers, one
    accumulator per slot each), old values kept or reset, at sizes around the blocks."""
    for seed, n in enumerate([0, 5, 16, 17, 193, 385, 1009]):
        _run_all_ops(kq, dtype, n, seed % 2 == 0, seed)


@pytest.mark.parametrize("n", SIZES)
def test_usm_at_every_alignment(blocked: Blocked, kq: sycl.queue,
                                n: int) -> None:
    """A sum, a count and a minimum of ids over a USM pointer at offsets 0-7 (the 16-byte
    aligned ones take the vector blocks, the others the strided scalar steps): each item
    once, with its own id."""
    total = n + 8
    x = np.arange(1, total + 1, dtype=np.float32) * np.float32(0.5)
    p = _shared(kq, x)
    outs = [_shared(kq, np.zeros(1, dt)) for dt in (np.float32, np.int64, np.int64)]
    for offset in range(8):
        src = p + offset

        def k(i, s, c, lo):  # type: ignore[no-untyped-def]
            s += src[i]
            c += 1
            lo.combine(i[0] * 7 + 3)

        kq.parallel_for(sycl.range(n), sycl.reduction(outs[0], sycl.plus(), [INIT()]),
                        sycl.reduction(outs[1], sycl.plus(), [INIT()]),
                        sycl.reduction(outs[2], sycl.minimum(), [INIT()]), k).wait()
        got = [_read(kq, o, 1)[0] for o in outs]
        want_sum = x[offset:offset + n].astype(np.float64).sum()
        assert abs(float(got[0]) - want_sum) <= 1e-6 * max(want_sum, 1), (offset, got, want_sum)
        assert got[1] == n, (offset, got)
        assert got[2] == (3 if n else np.iinfo(np.int64).max), (offset, got)


@pytest.mark.parametrize("offset", [0, 1, 2, 4])
def test_accessor_views_and_a_fused_store(blocked: Blocked, kq: sycl.queue,
                                          offset: int) -> None:
    """A kernel that stores as it reduces (``y[i] = 2 x[i]``, the sum of ``x``) through
    ranged accessors at an offset: the stores of a block's items and the combines are
    kept apart (their own alias scopes), every item stored once."""
    for n in (0, 7, 192, 385, 1009):
        total = n + 8
        x = np.arange(total, dtype=np.int32) * 3 - 50
        y = np.full(total, -1, np.int32)
        s = np.zeros(1, np.int64)
        with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(s) as S:
            def cg(h: sycl.handler, n: int = n) -> None:
                a = X.get_access(h, sycl.access_mode.read, access_range=sycl.range(max(n, 1)),
                                 access_offset=sycl.id(offset))
                b = Y.get_access(h, sycl.access_mode.read_write,
                                 access_range=sycl.range(max(n, 1)),
                                 access_offset=sycl.id(offset))

                def k(i, r):  # type: ignore[no-untyped-def]
                    v = a[i]
                    b[i] = v * 2
                    r += v

                h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus()), k)

            kq.submit(cg)
        want = np.full(total, -1, np.int32)
        want[offset:offset + n] = x[offset:offset + n] * 2
        np.testing.assert_array_equal(y, want, err_msg=str(n))
        assert s[0] == x[offset:offset + n].sum(), n


def test_custom_combiner_and_a_custom_type_result(blocked: Blocked,
                                                  kq: sycl.queue) -> None:
    """A custom combiner (the slots fold with it too) whose result Numba types wider than
    the variable (int16 + int16 -> int64: cast back as ``r.combine`` casts), and the
    largest absolute value of float64 with its identity."""
    n = 1009
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, n).astype(np.int16)
    f = rng.uniform(-9, 9, n)
    px, pf = _shared(kq, x), _shared(kq, f)
    o16, of = _shared(kq, np.zeros(1, np.int16)), _shared(kq, np.zeros(1, np.float64))

    def add(a, b):  # type: ignore[no-untyped-def]
        return a + b

    def absmax(a, b):  # type: ignore[no-untyped-def]
        return a if abs(a) > abs(b) else b

    kq.parallel_for(sycl.range(n), sycl.reduction(o16, np.int16(0), add, [INIT()]),
                    sycl.reduction(of, 0.0, absmax, [INIT()]),
                    lambda i, r, m: (r.combine(px[i]), m.combine(pf[i]))).wait()
    assert _read(kq, o16, 1)[0] == x.sum(dtype=np.int16)
    assert _read(kq, of, 1)[0] == f[np.argmax(np.abs(f))]


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_span_reductions(blocked: Blocked, kq: sycl.queue,
                         dtype: type) -> None:
    """A kernel with a span reduction (the work-group's row, combined into atomically)
    keeps the plain loop (no fold compiled), right on small grids beside a one-element
    reduction; then the span tests of test_usm_reduction under the fixture."""
    n, nb = 1009, 7
    x = (np.arange(n) % 11).astype(dtype)
    px, hist, tot = _shared(kq, x), _shared(kq, np.zeros(nb, dtype)), _shared(kq, np.zeros(1, dtype))
    kq.parallel_for(sycl.range(n), sycl.reduction(sycl.span(hist, nb), sycl.plus(), [INIT()]),
                    sycl.reduction(tot, sycl.maximum(), [INIT()]),
                    lambda i, h, m: (h[i % nb].combine(px[i]), m.combine(px[i]))).wait()
    want = np.array([x[np.arange(n) % nb == j].sum() for j in range(nb)], dtype)
    np.testing.assert_array_equal(_read(kq, hist, nb), want)
    assert _read(kq, tot, 1)[0] == x.max()
    assert blocked.folds == []
    test_span_every_operator(kq, dtype, "range")
    test_span_inplace_operators_and_custom(kq)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.one_of(st.integers(0, 3000), st.sampled_from(SIZES)), groups=st.integers(1, 5),
       wg=st.sampled_from([1, 2, 3, 4, 8, 32]), offset=st.integers(0, 3),
       op=st.sampled_from(["plus", "maximum", "bit_xor"]))
def test_any_grid_any_size(blocked: Blocked, kq: sycl.queue, n: int,
                           groups: int, wg: int, offset: int, op: str) -> None:
    """Any grid (``G`` work-items), any size, any int64 operator: each item exactly once
    (``seen[i] += 1`` with plain stores: every item belongs to one work-item) and the
    reduction equal to numpy's."""
    blocked(groups, wg)
    kq.executor.launches.clear()  # the queue's reduction plans were made for another grid
    x = np.random.default_rng(n).integers(-(2 ** 40), 2 ** 40, n + 4)
    p, seen = _shared(kq, x), _shared(kq, np.zeros(n + 4, np.int32))
    out = _shared(kq, np.zeros(1, np.int64))
    src = p + offset

    def k(i, r):  # type: ignore[no-untyped-def]
        seen[i] += 1
        r.combine(src[i])

    kq.parallel_for(sycl.range(n), sycl.reduction(out, getattr(sycl, op)(), [INIT()]), k).wait()
    want = np.zeros(n + 4, np.int32)
    want[:n] = 1
    np.testing.assert_array_equal(_read(kq, seen, n + 4), want)
    assert _read(kq, out, 1)[0] == _numpy_reduce(op, x[offset:offset + n], None)


def _combine_each(p: Any) -> Any:
    return lambda i, r: r.combine(p[i])


def test_the_host_device_agrees(blocked: Blocked, kq: sycl.queue,
                                hq: sycl.queue) -> None:
    """The same kernels on the host_debuggable device (the oracle) and on this device with
    strided blocks: float32 sums within rounding, everything else equal."""
    rng = np.random.default_rng(3)
    for dtype, ops in ((np.int32, INT_OPS), (np.float32, FLOAT_OPS)):
        for n in (13, 385):
            for op in ops:
                x = _values(rng, dtype, op, n)
                got = []
                for q in (kq, hq):
                    p, out = _shared(q, x), _shared(q, np.zeros(1, dtype))
                    q.parallel_for(sycl.range(n),
                                   sycl.reduction(out, getattr(sycl, op)(), [INIT()]),
                                   _combine_each(p)).wait()
                    got.append(_read(q, out, 1)[0])
                if np.dtype(dtype).kind == "f" and op in ("plus", "multiplies"):
                    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, err_msg=op)
                else:
                    assert got[0] == got[1], (op, n, got)


@pytest.mark.parametrize(("n", "wg"), [(8, 8), (12, 4), (13, 13), (48, 6), (192, 16),
                                       (385, 5), (1009, 1), (4096, 64)])
@pytest.mark.parametrize("grid", [(3, 4), (2, 1)])
def test_looped_nd_ranges_in_blocks(blocked: Blocked, kq: sycl.queue, n: int, wg: int,
                                    grid: tuple[int, int]) -> None:
    """A 1-D nd_range reduction that runs looped (pysycl_numba.looped) takes the strided
    blocks: fewer items than work-items (an item a work-item) and more (the blocks, the
    guarded tail), a USM pointer at offsets 0-4 (vector and scalar steps): each item once,
    with its own global, local and group ids."""
    blocked(*grid)
    x = np.arange(1, n + 5, dtype=np.float32)
    p = _shared(kq, x)
    outs = [_shared(kq, np.zeros(1, dt)) for dt in (np.float32, np.int64)]
    i = np.arange(n, dtype=np.int64)
    want_w = int(((i + 1) * (i % wg + 3) * (i // wg + 5)).sum())
    try:
        for offset in range(5):
            src = p + offset

            def k(it, s, w):  # type: ignore[no-untyped-def]
                g = it.get_global_id(0)
                s += src[g]
                w += (g + 1) * (it.get_local_id(0) + 3) * (it.get_group(0) + 5)

            kq.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)),
                            sycl.reduction(outs[0], sycl.plus(), [INIT()]),
                            sycl.reduction(outs[1], sycl.plus(), [INIT()]), k).wait()
            assert _read(kq, outs[0], 1)[0] == x[offset:offset + n].sum(), offset
            assert _read(kq, outs[1], 1)[0] == want_w, offset
    finally:
        for q in (p, *outs):
            sycl.free(q, kq)
    assert len(blocked.folds) == 2  # (one kernel: compiled with the blocks once)


def test_the_fixture_compiled_strided_blocks(blocked: Blocked,
                                             kq: sycl.queue) -> None:
    """The fixture is in effect: a 1-D range reduction compiles a fold per reducer, and so
    does a 1-D looped nd_range (pysycl_numba.looped); 2-D ranges and an nd_range with a
    barrier keep the plain loop (and are still right)."""
    out = _shared(kq, np.zeros(1, np.int64))
    kq.parallel_for(sycl.range(100), sycl.reduction(out, sycl.plus(), [INIT()]),
                    lambda i, r: r.combine(i[0])).wait()
    assert _read(kq, out, 1)[0] == 4950
    assert len(blocked.folds) == 1
    kq.parallel_for(sycl.range(10, 20), sycl.reduction(out, sycl.plus(), [INIT()]),
                    lambda it, r: r.combine(it[0] * 20 + it[1])).wait()
    kq.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(8)),
                    sycl.reduction(out, sycl.plus()),
                    lambda it, r: r.combine(it.get_global_id(0))).wait()
    assert _read(kq, out, 1)[0] == 19900 + 2016
    assert len(blocked.folds) == 2

    def synchronised(it: sycl.nd_item, r: sycl.reducer) -> None:
        it.barrier()
        r.combine(it.get_global_id(0))

    kq.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(8)),
                    sycl.reduction(out, sycl.plus()), synchronised).wait()
    assert _read(kq, out, 1)[0] == 19900 + 2 * 2016
    assert len(blocked.folds) == 2


def test_asserts_and_bounds_checks_name_the_item(blocked: Blocked, kq: sycl.queue) -> None:
    """A failed assert and a bounds violation in a strided block, in its guarded tail and in
    the last items (n = 1009: 63 steps of 16 on 12 work-items, then 1 item): the report
    names the item, not the work-item that ran it, and counts the items that failed."""
    from pysycl._kernels import bounds as _bounds

    n = 1009
    out = _shared(kq, np.zeros(1, np.int64))
    for bad in (5, 500, 1008):
        def k(i, r):  # type: ignore[no-untyped-def]
            assert i[0] % 1000 != bad % 1000, "bad item"
            r += 1

        with pytest.raises(AssertionError) as e:
            kq.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus()), k).wait()
        first, second = str(e.value).splitlines()[:2]
        m = re.search(r"work-item \((\d+),\)$", first)
        assert m is not None and int(m.group(1)) % 1000 == bad % 1000, first
        count = 1 + (bad % 1000 + 1000 < n)  # items bad % 1000 and bad % 1000 + 1000
        assert f"{count} work-item{'s' if count > 1 else ''} failed an assert" in second, second
    sycl.ext.set_bounds_check(True)
    try:
        for bad in (7, 600, 1008):
            a = np.zeros(n, np.float32)
            with sycl.buffer(a) as A, sycl.buffer(np.zeros(1, np.float32)) as S:
                def cg(h: sycl.handler, bad: int = bad) -> None:
                    acc = A.get_access(h, sycl.access_mode.read)

                    def k(it, r):  # type: ignore[no-untyped-def]
                        i = it[0]
                        r += acc[i + (n if i == bad else 0)]

                    h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus()), k)

                kq.submit(cg)
                with pytest.raises(sycl.exception, match=rf"work-item \({bad},\)"):
                    kq.wait()
    finally:
        sycl.ext.set_bounds_check(None)
        _bounds.watching.clear()

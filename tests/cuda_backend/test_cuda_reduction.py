"""Range reductions on NVIDIA GPUs (skipped where there is none): a 1-D range runs strided
blocks (:func:`pysycl_numba.reduction_entry.strided_blocks`: 128-bit loads where every
pointer is 16-byte aligned, scalar steps elsewhere, an accumulator per slot) on a launch of
``_GROUPS_PER_UNIT_PTX`` work-groups of 256 per SM (through CUDA: as many as the SM holds, at
most ``_GROUPS_PER_UNIT_PTX_MAX``). Through CUDA and, where NVIDIA's
OpenCL is installed, its OpenCL view of the same GPU, at sizes that loop many times: every
operator, several reductions, USM at every alignment, buffers, a kernel that stores as it
reduces; compared with numpy. (``tests/kernels/test_reduction_blocks.py`` runs the same
entry point on small grids, on whatever device runs kernels.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pysycl as sycl
from pysycl._kernels import reduction_launch as _reduction
from pysycl._kernels import reduction_plan as _plan
from tests.kernels.test_reduction import _run_all_ops

PTX_GPUS = [d for d in sycl.device.get_devices(sycl.info.device_type.gpu)
            if d.image_targets and d.image_targets[0][0] == "ptx"]
pytestmark = pytest.mark.skipif(not PTX_GPUS, reason="no NVIDIA GPU (CUDA or NVIDIA's OpenCL)")
INIT = sycl.property.reduction.initialize_to_identity


@pytest.fixture(params=PTX_GPUS, ids=lambda d: d.get_backend().value)
def gq(request: pytest.FixtureRequest) -> sycl.queue:
    return sycl.queue(request.param)


def _device(q: sycl.queue, a: np.ndarray, extra: int = 0) -> Any:
    p = sycl.malloc_device(a.size + extra, q, dtype=a.dtype)
    q.memcpy(p, a, a.nbytes).wait()
    return p


def _read(q: sycl.queue, p: Any, n: int = 1) -> np.ndarray:
    out = np.empty(n, p.dtype)
    q.memcpy(out, p, out.nbytes).wait()
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_every_operator_many_items(gq: sycl.queue, dtype: type) -> None:
    """Every operator of the type, one reduction each in one kernel, at a prime size and one
    that leaves the last items of a vector (float32: sizes whose products stay within the
    helper's 1e-5; float32 sums of many items: the next test)."""
    sizes = [16_411, 4099] if dtype == np.float32 else [1_000_003, (1 << 20) + 2]
    for seed, n in enumerate(sizes):
        _run_all_ops(gq, dtype, n, seed % 2 == 0, seed)


@pytest.mark.parametrize("offset", range(5))
def test_usm_sum_at_every_alignment(gq: sycl.queue, offset: int) -> None:
    """A float32 sum, an item count and the largest id over ``x + offset``: 16-byte aligned
    (offsets 0 and 4: vector steps) or not (scalar steps); each item once."""
    n = (1 << 22) + 13
    x = np.random.default_rng(offset).random(n + 8, np.float32)
    p = _device(gq, x)
    src = p + offset
    outs = [sycl.malloc_device(1, gq, dtype=dt) for dt in (np.float32, np.int64, np.int64)]

    def k(i, s, c, hi):  # type: ignore[no-untyped-def]
        s += src[i]
        c += 1
        hi.combine(i[0])

    gq.parallel_for(sycl.range(n), sycl.reduction(outs[0], sycl.plus(), [INIT()]),
                    sycl.reduction(outs[1], sycl.plus(), [INIT()]),
                    sycl.reduction(outs[2], sycl.maximum(), [INIT()]), k).wait()
    want = x[offset:offset + n].astype(np.float64).sum()
    got = [_read(gq, o)[0] for o in outs]
    assert abs(float(got[0]) - want) <= 1e-5 * want, (got, want)
    assert got[1] == n and got[2] == n - 1, got


def test_buffer_sum_and_the_launch(gq: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmarks' kernel (a buffer accessor, ``r.combine(x[i])``) on 2^24 + 3 float32:
    the launch is work-groups of 256, ``_GROUPS_PER_UNIT_PTX`` per SM -- through CUDA, as
    many as the SM holds at once up to ``_GROUPS_PER_UNIT_PTX_MAX`` (the driver's occupancy:
    six for this kernel of 32 registers); the sum is numpy's."""
    n = (1 << 24) + 3
    x = np.random.default_rng(1).random(n, np.float32)
    launches: list[tuple[Any, Any]] = []
    fits: list[int | None] = []
    real = _reduction.launch_sizes

    def sizes(*args: Any) -> Any:
        got = real(*args)
        launches.append(got[:2])
        fits.append(args[6](256) if len(args) > 6 and args[6] is not None else None)
        return got

    monkeypatch.setattr(_reduction, "launch_sizes", sizes)  # (what a plan is made with)
    s = np.zeros(1, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(s) as S:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus(), properties=[INIT()]),
                           lambda i, r: r.combine(a[i]))

        gq.submit(cg)
    assert abs(float(s[0]) - x.astype(np.float64).sum()) <= 1e-5 * n / 2
    units = gq.get_device().get_info(sycl.info.device.max_compute_units)
    ((gsize,), (wg,)), = launches
    fit, = fits
    if gq.get_backend() == sycl.backend.ext_oneapi_cuda:
        assert fit is not None and fit >= _plan._GROUPS_PER_UNIT_PTX_MAX
        per_unit = _plan._GROUPS_PER_UNIT_PTX_MAX
    else:  # NVIDIA's OpenCL: no occupancy query
        assert fit is None
        per_unit = _plan._GROUPS_PER_UNIT_PTX
    assert wg == 256 and gsize // wg == min(-(-n // (wg * 4)), per_unit * units)


def test_a_kernel_that_stores_as_it_reduces(gq: sycl.queue) -> None:
    """``y[i] = 2 x[i]`` and the sum of ``x`` (int64, exact), over an aligned and an
    unaligned pair of pointers: every element stored, the sum exact."""
    n = 3_000_017
    x = np.arange(n + 4, dtype=np.int64) - 1000
    for offset in (0, 1):
        px, py = _device(gq, x), _device(gq, np.zeros(n + 4, np.int64))
        out = sycl.malloc_device(1, gq, dtype=np.int64)
        src, dst = px + offset, py + offset

        def k(i, r):  # type: ignore[no-untyped-def]
            v = src[i]
            dst[i] = v * 2
            r += v

        gq.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(), [INIT()]), k).wait()
        y = _read(gq, py, n + 4)
        np.testing.assert_array_equal(y[offset:offset + n], x[offset:offset + n] * 2)
        assert _read(gq, out)[0] == x[offset:offset + n].sum()


def test_custom_combiner_and_span_reductions(gq: sycl.queue) -> None:
    """A custom combiner (folded across the slots) beside a span reduction (the plain loop)
    in separate kernels, many items."""
    n, nb = 2_000_003, 6
    x = (np.arange(n) % 1000).astype(np.float32) - 500
    p = _device(gq, x)
    out = sycl.malloc_device(1, gq, dtype=np.float32)

    def absmax(a, b):  # type: ignore[no-untyped-def]
        return a if abs(a) > abs(b) else b

    gq.parallel_for(sycl.range(n), sycl.reduction(out, np.float32(0), absmax, [INIT()]),
                    lambda i, r: r.combine(p[i])).wait()
    assert _read(gq, out)[0] == -500
    hist = _device(gq, np.zeros(nb, np.int32))
    gq.parallel_for(sycl.range(n), sycl.reduction(sycl.span(hist, nb), sycl.plus(), [INIT()]),
                    lambda i, r: r[i % nb].combine(1)).wait()
    np.testing.assert_array_equal(_read(gq, hist, nb), np.bincount(np.arange(n) % nb))

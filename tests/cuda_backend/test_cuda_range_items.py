"""Range kernels on NVIDIA GPUs (skipped where there is none): PTX entry points
(:mod:`pysycl_numba.range_items`: 1-D ranges on a launch whose work-items loop over blocks
of consecutive items, 2-D/3-D ranges on a launch of as many dimensions that covers the range
-- an item, or a block of ``abi.RANGE_COLUMNS`` items, a work-item -- and loops only past
CUDA's grid), sized per device (:func:`pysycl._kernels.rangesize.range_sizes`). Through
CUDA and, where NVIDIA's OpenCL is installed, its OpenCL view of the same GPU: every item
runs exactly once with its own ids; a prime range launches full blocks; bounds-checked mode
and asserts name the failing item, not the work-item that ran it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core import abi
from pysycl._kernels import bounds as _bounds
from pysycl._kernels.rangesize import COARSEN, GPU_GROUP, GROUPS_PER_UNIT_GPU, gpu_sizes
from tests.kernels.test_range_items import _oracle, _run  # the same kernel and oracle

PTX_GPUS = [d for d in sycl.device.get_devices(sycl.info.device_type.gpu)
            if d.image_targets and d.image_targets[0][0] == "ptx"]
pytestmark = pytest.mark.skipif(not PTX_GPUS, reason="no NVIDIA GPU (CUDA or NVIDIA's OpenCL)")

PRIMES = [1, 2, 3, 5, 7, 13, 31, 61, 67, 127, 257, 1009]
sizes = st.one_of(st.sampled_from(PRIMES), st.integers(1, 70))
ranges = st.one_of(st.tuples(st.one_of(sizes, st.integers(1, 5000))),
                   st.tuples(sizes, sizes), st.tuples(sizes, sizes, st.integers(1, 9)),
                   # more items than one grid's work-items: each loops several times
                   st.sampled_from([(1_000_003,), (1009, 1013), (7, 331, 409)]))


@pytest.fixture(params=PTX_GPUS, ids=lambda d: d.get_backend().value)
def gq(request: pytest.FixtureRequest) -> sycl.queue:
    return sycl.queue(request.param)


@pytest.fixture(params=[1, 4], ids=lambda c: f"columns{c}")
def columns(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
            tmp_path_factory: pytest.TempPathFactory) -> int:
    """2-D/3-D entry points built for ``abi.RANGE_COLUMNS`` = 1 and 4 (and their launches
    sized for it): a fresh kernel cache, since the caches do not key on it."""
    _fresh_kernels(request, monkeypatch, tmp_path_factory, RANGE_COLUMNS=request.param)
    return int(request.param)


def _fresh_kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                   tmp_path_factory: pytest.TempPathFactory, **consts: object) -> None:
    """Set ``abi``'s entry-point constants for one test, in a fresh kernel cache (the
    caches do not key on them) with no launch plan made before."""
    from pysycl._kernels.cache import kernels

    for name, value in consts.items():
        monkeypatch.setattr(abi, name, value)
    monkeypatch.setenv("PYSYCL_CACHE_DIR", str(tmp_path_factory.mktemp("entry")))
    kernels.clear_memory()  # and the launch plans made before
    request.addfinalizer(kernels.clear_memory)


def test_every_item_runs_once_with_its_own_ids(gq: sycl.queue) -> None:
    @settings(max_examples=40, deadline=None)
    @given(shape=ranges)
    def check(shape: tuple[int, ...]) -> None:
        assert np.array_equal(_run(gq, shape), _oracle(shape)), shape

    check()


@pytest.mark.parametrize("n", [1_000_003, 1 << 20, 257, 1])
def test_a_prime_range_launches_full_blocks(gq: sycl.queue, n: int) -> None:
    """The launch: blocks of GPU_GROUP (fewer only for a smaller range), a grid of at most
    GROUPS_PER_UNIT_GPU per SM; the handler-less launch's ``Launch`` remembers it."""
    x = sycl.malloc_device(n, gq, dtype=np.float32)
    y = sycl.malloc_device(n, gq, dtype=np.float32)
    gq.memcpy(x, np.arange(n, dtype=np.float32), n * 4).wait()
    gq.memset(y, 0, n * 4).wait()

    def triad(i):  # type: ignore[no-untyped-def]
        y[i] = x[i] * np.float32(2.0) + np.float32(1.0)

    gq.parallel_for(sycl.range(n), triad).wait()
    got = np.empty(n, np.float32)
    gq.memcpy(got, y, n * 4).wait()
    np.testing.assert_array_equal(got, np.arange(n, dtype=np.float32) * 2 + 1)
    ln = gq.executor.launches[triad.__code__]  # the remembered launch of this kernel
    (g,), (wg,) = ln.gsize, ln.lsize
    units = gq.get_device().get_info(sycl.info.device.max_compute_units)
    blocks = -(-n // COARSEN)  # a 1-D range: blocks of COARSEN consecutive items
    assert wg == min(GPU_GROUP, blocks) and g % wg == 0
    assert g // wg == min(-(-blocks // wg), GROUPS_PER_UNIT_GPU * units)
    assert ln.tail == (n,)


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 7])
@pytest.mark.parametrize("n", [1 << 20, 1_000_003, 5])
def test_ranged_accessor_views_aligned_or_not(gq: sycl.queue, offset: int, n: int) -> None:
    """A kernel over an accessor's ranged view: an offset of 4 floats keeps 128-bit accesses
    (the blocks of COARSEN items), 1, 2 and 7 take the plain loop; the same results."""
    total = n + 8
    x = np.arange(total, dtype=np.float32)
    y = np.ones(total, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read, access_range=sycl.range(n),
                             access_offset=sycl.id(offset))
            b = Y.get_access(h, sycl.access_mode.read_write, access_range=sycl.range(n),
                             access_offset=sycl.id(offset))
            h.parallel_for(sycl.range(n), lambda i: b.__setitem__(i, a[i] * 2 + b[i]))

        gq.submit(cg)
    want = np.ones(total, np.float32)
    want[offset:offset + n] = np.arange(offset, offset + n, dtype=np.float32) * 2 + 1
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("shift", [0, 1, 2, 3, 4, 5])
def test_usm_pointers_of_any_alignment(gq: sycl.queue, shift: int) -> None:
    """USM pointers ``shift`` floats into their allocations (``p + k``): 16-byte aligned
    ones take the 128-bit blocks, the others the plain loop; the same results."""
    n = 1_000_003
    p = sycl.malloc_device(n + 8, gq, dtype=np.float32)
    r = sycl.malloc_device(n + 8, gq, dtype=np.float32)
    gq.memcpy(p, np.arange(n + 8, dtype=np.float32), (n + 8) * 4).wait()
    gq.memset(r, 0, (n + 8) * 4).wait()
    src, dst = p + shift, r + (5 - shift)

    def k(i):  # type: ignore[no-untyped-def]
        dst[i] = src[i] + np.float32(1)

    gq.parallel_for(sycl.range(n), k).wait()
    got = np.empty(n + 8, np.float32)
    gq.memcpy(got, r, (n + 8) * 4).wait()
    want = np.zeros(n + 8, np.float32)
    want[5 - shift:5 - shift + n] = np.arange(shift, shift + n, dtype=np.float32) + 1
    np.testing.assert_array_equal(got, want)


def test_bounds_checked_mode_names_the_item(gq: sycl.queue) -> None:
    """The item that reads out of range is far beyond the grid's work-items: the report
    names the item (a 2-D id), not the work-item that ran it."""
    rows, cols = 3001, 1013
    a = np.zeros((rows, cols), np.float32)
    sycl.ext.set_bounds_check(True)
    try:
        with sycl.buffer(a) as A:
            def cg(h: sycl.handler) -> None:
                acc = A.get_access(h, sycl.access_mode.read_write)

                def k(it: sycl.item) -> None:
                    i, j = it[0], it[1]
                    if i == 2999 and j == 1000:
                        acc[i, j + 100] = 1.0  # out of range: column 1100
                    else:
                        acc[i, j] = 2.0

                h.parallel_for(sycl.range(rows, cols), k)

            gq.submit(cg)
            with pytest.raises(sycl.exception, match=re.escape("work-item (2999, 1000)")):
                gq.wait()
    finally:
        sycl.ext.set_bounds_check(None)
        _bounds.watching.clear()


def test_a_failed_assert_names_the_item(gq: sycl.queue) -> None:
    n = 3_000_017
    out = sycl.malloc_device(n, gq, dtype=np.int32)

    def k(i):  # type: ignore[no-untyped-def]
        assert i[0] != 2_999_999, "bad item"
        out[i] = 1

    with pytest.raises(AssertionError, match=re.escape("work-item (2999999,)")):
        gq.parallel_for(sycl.range(n), k).wait()
        gq.wait_and_throw()


@pytest.mark.parametrize("shape", [(8190, 8190), (1009, 1013), (3, 1_000_003), (1_000_003, 3),
                                   (7, 331, 409), (130, 2, 2),
                                   # past CUDA's grid (65535 blocks along y, along z): loops
                                   (20_000_003, 1), (70_001, 2, 3)])
def test_an_nd_range_runs_an_nd_launch(gq: sycl.queue, columns: int,
                                       shape: tuple[int, ...]) -> None:
    """A 2-D/3-D range launches as many dimensions (the GPUs' rule, :func:`gpu_sizes`, with
    the kernel's own limit: the whole range where CUDA's grid allows, an item or a block
    of ``columns`` items a work-item); a sweep of every item writes its linear id, checked
    whole."""
    n = int(np.prod(shape))
    out = sycl.malloc_device(n, gq, dtype=np.int64)
    gq.memset(out, 0xFF, n * 8).wait()

    def k(it):  # type: ignore[no-untyped-def]
        out[it.get_linear_id()] = it.get_linear_id()

    gq.parallel_for(sycl.range(*shape), k).wait()
    got = np.empty(n, np.int64)
    gq.memcpy(got, out, n * 8).wait()
    sycl.free(out, gq)
    np.testing.assert_array_equal(got, np.arange(n))
    ln = gq.executor.launches[k.__code__]
    units = gq.get_device().get_info(sycl.info.device.max_compute_units)
    limit = gq.executor.kernel_limits(ln.clk)[0]
    assert (ln.gsize, ln.lsize) == gpu_sizes(shape, limit, units)
    assert len(ln.gsize) == len(shape) and ln.tail == shape


@pytest.mark.parametrize(("shape", "shift"), [((8192, 8192), 0), ((8192, 8192), 1),
                                              ((1026, 1030), 0), ((1028, 1028), 4), ((5, 3000), 0)])
def test_jacobi_as_a_user_writes_it(gq: sycl.queue, columns: int, shape: tuple[int, int],
                                    shift: int) -> None:
    """benchmarks/bench_stencil.py's kernel: a 5-point sweep of the interior of USM device
    memory over a 2-D range (pointers ``shift`` floats into their allocations: with
    ``columns`` 4, aligned ones and rows of a multiple of 4 take the 128-bit path, the
    others item by item); numpy's result, bit for bit (the same float32 sums)."""
    got, want, _ = _jacobi(gq, shape, shift)
    np.testing.assert_array_equal(got, want)


def _jacobi(gq: sycl.queue, shape: tuple[int, int], shift: int = 0,
            ) -> tuple[np.ndarray, np.ndarray, object]:
    """(pysycl's sweep, numpy's, the kernel's code object) of the Jacobi kernel over the
    interior of ``shape`` in USM device memory, pointers ``shift`` floats in."""
    rows, cols = shape
    src = np.random.default_rng(rows).random(shape, dtype=np.float32)
    pa = sycl.malloc_device(src.size + shift, gq, dtype=np.float32)
    po = sycl.malloc_device(src.size + shift, gq, dtype=np.float32)
    a, o = pa + shift, po + shift
    gq.memcpy(a, src, src.nbytes).wait()
    gq.memset(o, 0, src.nbytes).wait()
    quarter = np.float32(0.25)

    def jacobi(it):  # type: ignore[no-untyped-def]
        i, j = it[0] + 1, it[1] + 1
        o[i * cols + j] = quarter * (a[(i - 1) * cols + j] + a[(i + 1) * cols + j]
                                     + a[i * cols + j - 1] + a[i * cols + j + 1])

    gq.parallel_for(sycl.range(rows - 2, cols - 2), jacobi).wait()
    got = np.empty(shape, np.float32)
    gq.memcpy(got, o, got.nbytes).wait()
    sycl.free(pa, gq)
    sycl.free(po, gq)
    want = np.zeros(shape, np.float32)
    want[1:-1, 1:-1] = quarter * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:])
    return got, want, jacobi.__code__


@pytest.fixture(params=[(2, 1), (4, 1), (3, 2), (1, 4)], ids=lambda b: f"tile{b[0]}x{b[1]}")
def tiles(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[int, int]:
    """Entry points built for the tile ``abi.RANGE_BLOCK`` (rows x columns a work-item),
    launched in tiles whatever the range's size (``rangesize.TILE_WAVES`` 0: a small range
    too, so that hypothesis reaches the edges); a fresh kernel cache, since the caches do
    not key on it."""
    from pysycl._kernels import rangesize

    monkeypatch.setattr(rangesize, "TILE_WAVES", 0)
    _fresh_kernels(request, monkeypatch, tmp_path_factory, RANGE_BLOCK=request.param,
                   RANGE_COLUMNS=1)
    return tuple(request.param)  # type: ignore[return-value]


def test_tiles_run_every_item_once_with_its_own_ids(gq: sycl.queue,
                                                    tiles: tuple[int, int]) -> None:
    """A 2-D/3-D range launched in tiles (``R`` rows x ``S`` columns a work-item, whole
    tiles in alias scopes, edge tiles item by item): every item once, its own ids and range
    (a count per item, so an item run twice or never fails), at any shape hypothesis finds."""
    tile_ranges = st.one_of(st.tuples(sizes, sizes), st.tuples(sizes, sizes, st.integers(1, 5)),
                            st.sampled_from([(33, 257), (64, 96), (17, 65, 3)]))

    @settings(max_examples=25, deadline=None)
    @given(shape=tile_ranges)
    def check(shape: tuple[int, ...]) -> None:
        assert np.array_equal(_run(gq, shape), _oracle(shape)), shape

    check()


@pytest.mark.parametrize("n", [68, 259, 1030])
def test_a_jacobi_sweep_in_tiles(gq: sycl.queue, tiles: tuple[int, int], n: int) -> None:
    """The stencil the tiles are for, as a user writes it: a tile's items share their
    neighbours' loads (alias scopes); results equal numpy's, edges included."""
    got, want, code = _jacobi(gq, (n, n))
    np.testing.assert_array_equal(got, want)
    ln = gq.executor.launches[code]
    units = gq.get_device().get_info(sycl.info.device.max_compute_units)
    limit = gq.executor.kernel_limits(ln.clk)[0]
    assert (ln.gsize, ln.lsize) == gpu_sizes((n - 2, n - 2), limit, units)
    rows, cols = tiles
    if n > 68:  # a launch of tiles: fewer work-items than items
        assert ln.gsize[0] * ln.gsize[1] < (n - 2) ** 2
        assert ln.gsize[0] * cols >= n - 2 and ln.gsize[1] * rows >= n - 2

"""Range kernels whose launch is the runtime's choice: the items a kernel sees are the user's.

A ``range`` kernel takes the user's range as arguments; the launch is sized per device
(:mod:`pysycl._kernels.rangesize`): on the CPU device the range itself (work-groups of
CPU_GROUP where its runtime runs non-uniform ones and the driver's choice would be poor), on
GPUs a grid whose work-items loop over the items (:mod:`pysycl_numba.range_items`; its
linear loop, :func:`~pysycl_numba.range_items.grid_stride`, is the one range kernels with
reductions use on SPIR-V devices and for n-D ranges -- a 1-D range reduction on PTX runs
strided blocks, tests/kernels/test_reduction_blocks.py: the tests below run it here with
fewer work-items than items, and ``gpu_shaped`` runs the GPUs' entry points here). Every
item must run exactly once with its own ``get_id``/``get_linear_id``/``get_range``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._bundles import kernel_id as _kernel_ids
from pysycl._core import abi
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import rangesize
from pysycl._kernels import reduction_plan as _plan
from pysycl._kernels.cache import target_of
from pysycl._kernels.rangesize import CPU_GROUP, gpu_sizes, range_sizes
from tests.conftest import malloc_shared_or_skip

PRIMES = [1, 2, 3, 5, 7, 13, 31, 61, 67, 127, 257, 1009]
sizes = st.one_of(st.sampled_from(PRIMES), st.integers(1, 70))
ranges = st.one_of(st.tuples(st.one_of(sizes, st.integers(1, 5000))),
                   st.tuples(sizes, sizes), st.tuples(sizes, sizes, st.integers(1, 9)))


def _oracle(shape: tuple[int, ...]) -> np.ndarray:
    """Per item (row-major): linear id, count 1, its id (3 slots) and the range (3 slots)."""
    n = int(np.prod(shape))
    want = np.zeros((n, 8), np.int64)
    want[:, 0] = np.arange(n)
    want[:, 1] = 1
    ids = np.unravel_index(np.arange(n), shape)
    for d in range(len(shape)):
        want[:, 2 + d] = ids[d]
        want[:, 5 + d] = shape[d]
    return want


def _run(q: sycl.queue, shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape))
    out = np.zeros((n, 8), np.int64)
    nd = len(shape)
    with sycl.buffer(out) as B:
        def cg(h: sycl.handler) -> None:
            o = B.get_access(h, sycl.access_mode.read_write)

            def k(it: sycl.item) -> None:
                lin = it.get_linear_id()
                o[lin, 0] = lin
                o[lin, 1] += 1
                for d in range(nd):
                    o[lin, 2 + d] = it.get_id(d)
                    o[lin, 5 + d] = it.get_range(d)

            h.parallel_for(sycl.range(*shape), k)

        q.submit(cg)
    return out


@settings(max_examples=40, deadline=None)
@given(shape=ranges)
def test_every_item_runs_once_with_its_own_ids(kernel_device: sycl.device,
                                               shape: tuple[int, ...]) -> None:
    assert np.array_equal(_run(sycl.queue(kernel_device), shape), _oracle(shape))


@settings(max_examples=30, deadline=None)
@given(shape=ranges)
def test_the_host_device_agrees(host_device: sycl.device, shape: tuple[int, ...]) -> None:
    """The oracle of the oracle: the host_debuggable device gives the same table."""
    if int(np.prod(shape)) > 3000:
        shape = (*shape[:-1], 1)
    assert np.array_equal(_run(sycl.queue(host_device), shape), _oracle(shape))


@settings(max_examples=30, deadline=None)
@given(shape=ranges)
def test_the_grid_stride_loop_runs_every_item_once(kernel_device: sycl.device,
                                                   shape: tuple[int, ...]) -> None:
    """A range kernel with a reduction loops over the items with fewer work-items than
    items (one work-group per compute unit here: 256 work-items per unit), on this device."""
    n = int(np.prod(shape))
    nd = len(shape)
    out = np.zeros((n, 8), np.int64)
    total = np.zeros(1, np.int64)
    old = _plan._GROUPS_PER_UNIT_CPU
    _plan._GROUPS_PER_UNIT_CPU = 1
    try:
        with sycl.buffer(out) as B, sycl.buffer(total) as T:
            def cg(h: sycl.handler) -> None:
                o = B.get_access(h, sycl.access_mode.read_write)
                red = sycl.reduction(T, h, sycl.plus())

                def k(it: sycl.item, s: sycl.reducer) -> None:
                    lin = it.get_linear_id()
                    o[lin, 0] = lin
                    o[lin, 1] += 1
                    for d in range(nd):
                        o[lin, 2 + d] = it.get_id(d)
                        o[lin, 5 + d] = it.get_range(d)
                    s += lin

                h.parallel_for(sycl.range(*shape), red, k)

            sycl.queue(kernel_device).submit(cg)
    finally:
        _plan._GROUPS_PER_UNIT_CPU = old
    assert np.array_equal(out, _oracle(shape))
    assert total[0] == n * (n - 1) // 2


@pytest.mark.parametrize("shape", [(1000003,), (997, 13), (3, 1009, 5), (65,), (128,), (7,)])
def test_cpu_launch_sizes(kq: sycl.queue, shape: tuple[int, ...]) -> None:
    """On a SPIR-V device a range launches as itself; where its fastest dimension is not a
    multiple of CPU_GROUP (and larger) and the device runs non-uniform work-groups, in
    work-groups of CPU_GROUP along it (a prime range: no work-groups of one work-item).
    Every item still runs once."""
    dev = kq.get_device()
    if target_of(dev)[0] == "ptx":
        pytest.skip("a PTX device: tests/cuda_backend/test_cuda_range_items.py checks its sizes")
    uneven = kq.executor.uneven_groups
    g, local = range_sizes(dev, shape, 1024, False, uneven)
    assert g == tuple(reversed(shape))
    fast = shape[-1]
    if uneven and fast % CPU_GROUP and fast > CPU_GROUP:
        assert local == (CPU_GROUP, *(1,) * (len(shape) - 1))
    else:
        assert local is None
    if int(np.prod(shape)) <= 20000:
        assert np.array_equal(_run(kq, shape), _oracle(shape))
    else:  # a big prime: the element-wise sum, against numpy
        n = shape[0]
        x = np.arange(n, dtype=np.float32)
        y = np.ones(n, np.float32)
        with sycl.buffer(x) as X, sycl.buffer(y) as Y:
            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                b = Y.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(n), lambda i: b.__setitem__(i, a[i] * 2 + b[i]))

            kq.submit(cg)
        assert np.array_equal(y, np.arange(n, dtype=np.float32) * 2 + 1)


# ------------------------------------- the GPUs' entry point, run on this device
class GpuRule:
    """How :func:`gpu_shaped` sizes a range launch: ``units`` None -- a tiny grid (1-D: at
    most three work-groups of four; 2-D/3-D: work-groups of 4 x 2 x 1, at most 3 x 2 x 2 of
    them), so that every loop runs many times (an n-D range: the loop taken where the grid
    does not cover the range); else the GPUs' own rule
    (:func:`~pysycl._kernels.rangesize.gpu_sizes`) for a GPU of that many compute units (an
    n-D range: a grid that covers it, no loop)."""

    units: int | None = None

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch

    def columns(self, width: int) -> None:
        """Build 2-D/3-D entry points for ``abi.RANGE_COLUMNS = width`` (the launch sized
        for it): a fresh kernel cache, since the caches do not key on it."""
        import tempfile

        from pysycl._kernels.cache import kernels

        self._monkeypatch.setattr(abi, "RANGE_COLUMNS", width)
        self._monkeypatch.setenv("PYSYCL_CACHE_DIR", tempfile.mkdtemp(prefix="pysycl-cols-test-"))
        kernels.clear_memory()


@pytest.fixture
def gpu_shaped(monkeypatch: pytest.MonkeyPatch) -> Iterator[GpuRule]:
    """Range kernels compiled with the entry point PTX images get (a loop over the items:
    1-D ranges in blocks of consecutive items with vector accesses where the pointers are
    aligned, 2-D and 3-D ranges on a launch of as many dimensions in blocks of rows) and
    launched as GPUs launch them (:class:`GpuRule`): the GPUs' code path, run on this
    machine's device (no GPU here). A fresh kernel cache: these images serve no one."""
    import tempfile

    import pysycl_numba.compiler as compiler
    from pysycl._backends import launching
    from pysycl._kernels.cache import kernels

    real = compiler.build_kernel_wrapper
    rule = GpuRule(monkeypatch)

    def linear(*args: object) -> object:
        return real(*args[:8], True, True)  # type: ignore[arg-type]

    def sizes(dev: sycl.device, space: tuple[int, ...], max_group: int,
              one_per_item: bool = False, uneven: bool = False,
              ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if rule.units is not None:
            return gpu_sizes(space, max_group, rule.units, one_per_item)
        if len(space) == 1:
            return (4 * min(3, -(-space[0] // 4)),), (4,)
        blocks = -(-space[-1] // abi.RANGE_COLUMNS)  # work-items along the fastest dimension
        grid = (min(3, -(-blocks // 4)), min(2, -(-space[-2] // 2)), min(2, space[0]))
        local = (4, 2, 1)[:len(space)]
        return tuple(g * b for g, b in zip(grid, local, strict=False)), local

    monkeypatch.setattr(compiler, "build_kernel_wrapper", linear)
    monkeypatch.setattr(launching, "range_sizes", sizes)
    monkeypatch.setenv("PYSYCL_CACHE_DIR", tempfile.mkdtemp(prefix="pysycl-range-test-"))
    kernels.clear_memory()
    ids, by_mkey = dict(_kernel_ids._ids), dict(_kernel_ids._by_mkey)
    variants = {name: dict(kid.variants) for name, kid in ids.items()}
    yield rule
    kernels.clear_memory()
    # the kernel ids these submits registered hold those images: a later bundle of the
    # context (get_kernel_bundle) must not build them
    with _kernel_ids._lock:
        _kernel_ids._ids.clear()
        _kernel_ids._ids.update(ids)
        _kernel_ids._by_mkey.clear()
        _kernel_ids._by_mkey.update(by_mkey)
        for name, kid in ids.items():
            kid.variants.clear()
            kid.variants.update(variants[name])


@settings(max_examples=25, deadline=None,  # the fixture only sets up how kernels compile
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=ranges)
def test_gpu_entry_point_every_item_once(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                         shape: tuple[int, ...]) -> None:
    assert np.array_equal(_run(sycl.queue(kernel_device), shape), _oracle(shape))


@pytest.mark.parametrize("offset", range(8))
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 61, 1009, 4096])
def test_gpu_entry_point_ranged_views_and_pointers(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                                   offset: int, n: int) -> None:
    """Accessors' ranged views and USM pointers at every alignment: 16-byte aligned ones
    run the blocks of consecutive items, the others the plain loop; the same results."""
    q = sycl.queue(kernel_device)
    total = n + 8
    x = np.arange(total, dtype=np.float32)
    y = np.ones(total, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read, access_range=sycl.range(max(n, 1)),
                             access_offset=sycl.id(offset))
            b = Y.get_access(h, sycl.access_mode.read_write, access_range=sycl.range(max(n, 1)),
                             access_offset=sycl.id(offset))
            h.parallel_for(sycl.range(n), lambda i: b.__setitem__(i, a[i] * 2 + b[i]))

        q.submit(cg)
    want = np.ones(total, np.float32)
    want[offset:offset + n] = np.arange(offset, offset + n, dtype=np.float32) * 2 + 1
    np.testing.assert_array_equal(y, want)
    p = sycl.malloc_device(total, q, dtype=np.float32)  # every device has device USM
    r = sycl.malloc_device(total, q, dtype=np.float32)
    q.memcpy(p, np.arange(total, dtype=np.float32), total * 4)
    q.memcpy(r, np.zeros(total, np.float32), total * 4).wait()
    src, dst = p + offset, r + (7 - offset)

    def k(i):  # type: ignore[no-untyped-def]
        dst[i] = src[i] + np.float32(1)

    q.parallel_for(sycl.range(n), k).wait()
    got = np.empty(total, np.float32)
    q.memcpy(got, r, total * 4).wait()
    sycl.free(p, q)
    sycl.free(r, q)
    want = np.zeros(total, np.float32)
    want[7 - offset:7 - offset + n] = np.arange(offset, offset + n, dtype=np.float32) + 1
    np.testing.assert_array_equal(got, want)


def test_gpu_entry_point_asserts_name_the_item(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                               ) -> None:
    """A failed assert in a block of consecutive items, in the plain loop and in the rest
    after the last block: the report names the item and counts the items that failed."""
    q = sycl.queue(kernel_device)
    n = 1009  # 252 blocks of 4, then one item
    out = malloc_shared_or_skip(n, q, dtype=np.int32)
    for r in (5, 108):  # items r, r + 300, r + 600, r + 900 (1008: after the last block)
        def k(i):  # type: ignore[no-untyped-def]
            assert i[0] % 300 != r, "bad item"
            out[i] = 1

        with pytest.raises(AssertionError) as e:
            q.parallel_for(sycl.range(n), k).wait()
        first, second = str(e.value).splitlines()[:2]
        m = re.search(r"work-item \((\d+),\)$", first)
        assert m is not None and int(m.group(1)) % 300 == r, first
        assert "4 work-items failed an assert" in second, second


@pytest.mark.parametrize("units", [1, 132])
@pytest.mark.parametrize("shape", [(1, 5000), (5000, 1), (61, 1013), (257, 67), (2, 3),
                                   (7, 331, 41), (3, 100, 5), (9, 1, 70), (130, 2, 2)])
def test_gpu_entry_point_at_gpu_sizes(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                      shape: tuple[int, ...], units: int) -> None:
    """The GPUs' own launch rule (work-groups of up to 256, one wave of a GPU of 1 or 132
    compute units), run here: every item once with its own ids."""
    gpu_shaped.units = units
    assert np.array_equal(_run(sycl.queue(kernel_device), shape), _oracle(shape))


COLUMNS = [1, 2, 4, 8]  # abi.RANGE_COLUMNS values the n-D entry points are built for


@pytest.mark.parametrize("units", [None, 1, 132])
@pytest.mark.parametrize("columns", COLUMNS)
def test_gpu_entry_point_columns_per_work_item(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                               columns: int, units: int | None) -> None:
    """Blocks of ``columns`` consecutive items a work-item (``abi.RANGE_COLUMNS``: compiled
    into the entry point, and the launch sized for it), on a grid that covers the range
    (``units``: a GPU's rule) or not (a tiny grid: the loop): every item once, ranges whose
    fastest dimension is and is not a multiple of the block, shorter than one."""
    gpu_shaped.columns(columns)
    gpu_shaped.units = units
    for shape in [(61, 1013), (7, 5), (9, 16), (7, 331, 41), (3, 4, 12), (1, 70), (70, 1)]:
        assert np.array_equal(_run(sycl.queue(kernel_device), shape), _oracle(shape)), shape


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=ranges.filter(lambda s: len(s) > 1), columns=st.sampled_from(COLUMNS[1:]))
def test_gpu_entry_point_blocks_every_item_once(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                                shape: tuple[int, ...], columns: int) -> None:
    """Hypothesis: any 2-D/3-D range (primes among them), blocks of 2, 4 or 8 columns, on
    the GPUs' rule (a grid that covers the range)."""
    gpu_shaped.columns(columns)
    gpu_shaped.units = 132
    assert np.array_equal(_run(sycl.queue(kernel_device), shape), _oracle(shape))


def test_gpu_launch_beyond_cudas_grid_loops(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Where CUDA's grid cannot cover a range (more than 65535 work-groups along y or z),
    the launch stops at the limit and the entry point loops over the rest: the GPUs' rule
    with a grid limit of 3 work-groups here, so that ranges of a few thousand items pass it
    along y and z (and along x: the same loop). Every item once."""
    monkeypatch.setattr(rangesize, "_GRID", (3, 3, 3))
    gpu_shaped.units = 132
    for columns in (1, 4):
        gpu_shaped.columns(columns)
        for shape in [(70, 1), (1, 5000), (9, 67), (5, 1, 1), (11, 37, 5), (3, 30, 500)]:
            g, local = gpu_sizes(shape, 256, 132)
            assert all(n // b <= 3 for n, b in zip(g, local, strict=True))
            assert np.array_equal(_run(sycl.queue(kernel_device), shape), _oracle(shape)), shape


def _to_device(q: sycl.queue, a: np.ndarray) -> sycl.usm_pointer:
    p = sycl.malloc_device(a.size, q, dtype=a.dtype)
    q.memcpy(p, np.ascontiguousarray(a), a.nbytes).wait()
    return p


def _from_device(q: sycl.queue, p: sycl.usm_pointer, like: np.ndarray) -> np.ndarray:
    got = np.empty_like(like)
    q.memcpy(got, p, got.nbytes).wait()
    sycl.free(p, q)
    return got


@pytest.mark.parametrize("units", [None, 132])
@pytest.mark.parametrize("columns", [1, 4])
@pytest.mark.parametrize(("shape", "shift"), [((66, 66), 0), ((68, 68), 0), ((68, 68), 1),
                                              ((36, 132), 4), ((35, 130), 0), ((3, 3), 0),
                                              ((7, 9), 0), ((1027, 44), 0)])
def test_gpu_entry_point_jacobi_2d(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                   shape: tuple[int, int], shift: int, columns: int,
                                   units: int | None) -> None:
    """A 5-point Jacobi sweep as a user writes it (USM device memory, the interior as the
    range, ``i + 1``/``j + 1``): a work-item an item, or blocks of 4 consecutive items --
    with aligned captures (pointers ``shift`` floats into their allocations: 0 and 4
    aligned, 1 not; a row length that is a multiple of 4 or not) the vector path, whose
    items share their neighbours, else item by item; numpy's result, the border
    untouched."""
    gpu_shaped.columns(columns)
    gpu_shaped.units = units
    q = sycl.queue(kernel_device)
    rows, cols = shape
    src = np.random.default_rng(rows * cols).random(shape, dtype=np.float32)
    pa = _to_device(q, np.concatenate([np.zeros(shift, np.float32), src.ravel()]))
    po = _to_device(q, np.zeros(rows * cols + shift, np.float32))
    a, o = pa + shift, po + shift
    quarter = np.float32(0.25)

    def jacobi(it):  # type: ignore[no-untyped-def]
        i, j = it[0] + 1, it[1] + 1
        o[i * cols + j] = quarter * (a[(i - 1) * cols + j] + a[(i + 1) * cols + j]
                                     + a[i * cols + j - 1] + a[i * cols + j + 1])

    q.parallel_for(sycl.range(rows - 2, cols - 2), jacobi).wait()
    want = np.zeros(shape, np.float32)
    want[1:-1, 1:-1] = quarter * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:])
    got = _from_device(q, po, np.zeros(rows * cols + shift, np.float32))
    np.testing.assert_array_equal(got[shift:].reshape(shape), want)
    assert not got[:shift].any()
    sycl.free(pa, q)


@pytest.mark.parametrize("columns", [1, 4])
@pytest.mark.parametrize("offset", [0, 1, 4])
def test_gpu_entry_point_2d_accessors(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                      columns: int, offset: int) -> None:
    """``y[it] = 2 * x[it] + y[it]`` over ranged 2-D accessor views (rows of 64 and 62
    floats; a view ``offset`` columns in): aligned views with rows a multiple of 4 take the
    vector path (the accessors' strides masked), the others item by item; numpy's result,
    the rest of the buffers untouched."""
    gpu_shaped.columns(columns)
    gpu_shaped.units = 132
    for width in (64, 62):
        x = np.random.default_rng(width).random((9, width), dtype=np.float32)
        y = np.ones((9, width), np.float32)
        view = (7, width - 8)
        with sycl.buffer(x) as X, sycl.buffer(y) as Y:
            def cg(h: sycl.handler, view: tuple[int, int] = view) -> None:
                a = X.get_access(h, sycl.access_mode.read, access_range=sycl.range(*view),
                                 access_offset=sycl.id(1, offset))
                b = Y.get_access(h, sycl.access_mode.read_write, access_range=sycl.range(*view),
                                 access_offset=sycl.id(1, offset))
                h.parallel_for(sycl.range(*view), lambda it: b.__setitem__(it, a[it] * 2 + b[it]))

            sycl.queue(kernel_device).submit(cg)
        want = np.ones((9, width), np.float32)
        sl = (slice(1, 8), slice(offset, offset + view[1]))
        want[sl] = x[sl] * 2 + 1
        np.testing.assert_array_equal(y, want, err_msg=str(width))


@pytest.mark.parametrize("shape", [(10, 11, 12), (3, 70, 5), (6, 3, 40)])
def test_gpu_entry_point_jacobi_3d(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                   shape: tuple[int, int, int]) -> None:
    """A 7-point sweep over a 3-D range (the interior): planes along the launch's third
    dimension, rows in blocks; numpy's result."""
    q = sycl.queue(kernel_device)
    nz, ny, nx = shape
    src = np.random.default_rng(nz * ny * nx).random(shape, dtype=np.float32)
    a, o = _to_device(q, src), _to_device(q, np.zeros(shape, np.float32))
    sixth = np.float32(1 / 6)

    def k(it):  # type: ignore[no-untyped-def]
        z, y, x = it[0] + 1, it[1] + 1, it[2] + 1
        c = (z * ny + y) * nx + x
        o[c] = sixth * (a[c - ny * nx] + a[c + ny * nx] + a[c - nx] + a[c + nx]
                        + a[c - 1] + a[c + 1])

    q.parallel_for(sycl.range(nz - 2, ny - 2, nx - 2), k).wait()
    want = np.zeros(shape, np.float32)
    s = src
    want[1:-1, 1:-1, 1:-1] = sixth * (s[:-2, 1:-1, 1:-1] + s[2:, 1:-1, 1:-1] + s[1:-1, :-2, 1:-1]
                                      + s[1:-1, 2:, 1:-1] + s[1:-1, 1:-1, :-2]
                                      + s[1:-1, 1:-1, 2:])
    np.testing.assert_allclose(_from_device(q, o, want).reshape(shape), want, rtol=1e-6)
    sycl.free(a, q)


@pytest.mark.parametrize("units", [None, 132])
@pytest.mark.parametrize("columns", [1, 4])
def test_gpu_entry_point_nd_asserts_name_the_item(gpu_shaped: GpuRule, kernel_device: sycl.device,
                                                  columns: int, units: int | None) -> None:
    """A failed assert of a 3-D range (rows of 11: blocks of 4 columns and a last one of 3)
    in a whole block (column 4) and in the last one (column 10), on a covering grid and in
    the loop: the report names an item that failed and counts both; the other items ran."""
    gpu_shaped.columns(columns)
    gpu_shaped.units = units
    q = sycl.queue(kernel_device)
    out = malloc_shared_or_skip(3 * 37 * 11, q, dtype=np.int32)
    np.asarray(out)[:] = 0
    bad = {(1, 13, 4), (2, 36, 10)}

    def k(it):  # type: ignore[no-untyped-def]
        assert not ((it[0] == 1 and it[1] == 13 and it[2] == 4)
                    or (it[0] == 2 and it[1] == 36 and it[2] == 10)), "bad item"
        out[it.get_linear_id()] = 1

    with pytest.raises(AssertionError) as e:
        q.parallel_for(sycl.range(3, 37, 11), k).wait()
    first, second = str(e.value).splitlines()[:2]
    m = re.search(r"work-item \((\d+), (\d+), (\d+)\)$", first)
    assert m is not None and tuple(int(v) for v in m.groups()) in bad, first
    assert "2 work-items failed an assert" in second, second
    flags = np.asarray(out).reshape(3, 37, 11)
    assert flags[1, 13, 4] == flags[2, 36, 10] == 0  # the rest of those items skipped
    assert np.count_nonzero(flags) == 3 * 37 * 11 - 2
    sycl.free(out, q)


def test_gpu_entry_point_bounds_checked_names_the_item(gpu_shaped: GpuRule,
                                                       kernel_device: sycl.device) -> None:
    """Bounds-checked mode: the violating item of a 2-D range (the plain loop) and of a
    1-D one (blocks of items), not the work-item that ran it."""
    q = sycl.queue(kernel_device)
    sycl.ext.set_bounds_check(True)
    try:
        for shape, bad in (((31, 17), (29, 16)), ((1009,), (1001,))):
            a = np.zeros(shape, np.float32)
            with sycl.buffer(a) as A:
                def cg(h: sycl.handler, shape: tuple[int, ...] = shape,
                       bad: tuple[int, ...] = bad) -> None:
                    acc = A.get_access(h, sycl.access_mode.read_write)
                    if len(shape) == 2:
                        def k(it: sycl.item) -> None:
                            i, j = it[0], it[1]
                            acc[i, j + (5 if (i == bad[0] and j == bad[1]) else 0)] = 1.0
                    else:
                        def k(it: sycl.item) -> None:
                            i = it[0]
                            acc[i + (50 if i == bad[0] else 0)] = 1.0
                    h.parallel_for(sycl.range(*shape), k)

                q.submit(cg)
                with pytest.raises(sycl.exception, match=re.escape(f"work-item {bad}")):
                    q.wait()
    finally:
        sycl.ext.set_bounds_check(None)
        _bounds.watching.clear()


@pytest.mark.parametrize("shaped", [False, True], ids=["this-device", "gpu-entry-point"])
def test_remembered_launches_pass_their_own_range(request: pytest.FixtureRequest,
                                                  kernel_device: sycl.device,
                                                  shaped: bool) -> None:
    """``q.parallel_for(r, k)`` again and again: a remembered launch (its arguments
    refreshed from the closure, the range a constant of the launch) runs its own range,
    and another range gets a launch of its own."""
    if shaped:
        request.getfixturevalue("gpu_shaped")
    q = sycl.queue(kernel_device)
    out = malloc_shared_or_skip(64, q, dtype=np.int64)

    def k(it):  # type: ignore[no-untyped-def]
        out[it.get_linear_id()] = it.get_linear_id() * 1000 + it.get_range(0)

    for shape in [(10,), (10,), (7,), (7,), (10,), (3, 5), (3, 5), (5, 3)]:
        np.asarray(out)[:] = -1
        q.parallel_for(sycl.range(*shape), k).wait()
        n = int(np.prod(shape))
        want = np.full(64, -1, np.int64)
        want[:n] = np.arange(n) * 1000 + shape[0]
        np.testing.assert_array_equal(np.asarray(out), want, err_msg=str(shape))
    assert q.executor.launches.get(k.__code__), "the launches were remembered"

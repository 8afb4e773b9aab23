"""nd_range kernels against numpy: local memory, barriers, validation before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

ND = sycl.nd_range


def _wg_sum(q: sycl.queue, x: np.ndarray, wg: int) -> np.ndarray:
    """Work-group tree reduction in local memory: one partial sum per group."""
    out = np.zeros(x.size // wg, dtype=x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            wo = O.get_access(h, sycl.access_mode.write)
            tmp = sycl.local_accessor(x.dtype, sycl.range(wg), h)

            def tree(it):
                lid = it.get_local_id(0)
                tmp[lid] = rx[it.get_global_id(0)]
                sycl.group_barrier(it.get_group())
                s = it.get_local_range(0) // 2
                while s > 0:
                    if lid < s:
                        tmp[lid] += tmp[lid + s]
                    it.barrier(sycl.access.fence_space.local_space)
                    s //= 2
                if it.get_group().leader():
                    wo[it.get_group(0)] = tmp[0]

            h.parallel_for(ND(sycl.range(x.size), sycl.range(wg)), tree)

        q.submit(cg)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("wg", [1, 16, 128])
def test_work_group_tree_reduction(any_kernel_queue: sycl.queue, dtype: type, wg: int) -> None:
    rng = np.random.default_rng(wg)
    host = any_kernel_queue.get_device().has(sycl.aspect.host_debuggable)
    x = (rng.random(wg * (3 if host else 37)) * 100).astype(dtype)  # the interpreter is slow
    got = _wg_sum(any_kernel_queue, x, wg)
    want = x.reshape(-1, wg).sum(axis=1, dtype=dtype)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


def _tiled_matmul(q: sycl.queue, a: np.ndarray, b: np.ndarray, t: int) -> np.ndarray:
    n, kdim = a.shape
    m = b.shape[1]
    c = np.zeros((n, m), dtype=a.dtype)
    with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c) as C:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            ta = sycl.local_accessor(a.dtype, sycl.range(t, t), h)
            tb = sycl.local_accessor(a.dtype, sycl.range(t, t), h)
            tile, kk = t, kdim

            def mm(it):
                i = it.get_global_id(0)
                j = it.get_global_id(1)
                li = it.get_local_id(0)
                lj = it.get_local_id(1)
                acc = ra[0, 0] * 0
                for k0 in range(0, kk, tile):
                    ta[li, lj] = ra[i, k0 + lj]
                    tb[li, lj] = rb[k0 + li, j]
                    it.barrier()
                    for k in range(tile):
                        acc += ta[li, k] * tb[k, lj]
                    it.barrier()
                wc[i, j] = acc

            h.parallel_for(ND(sycl.range(n, m), sycl.range(t, t)), mm)

        q.submit(cg)
    return c


@pytest.mark.parametrize("shape,t", [((32, 48, 16), 8), ((64, 64, 64), 16), ((8, 8, 8), 1)])
def test_tiled_matmul_with_local_memory(kq: sycl.queue, shape: tuple[int, int, int],
                                        t: int) -> None:
    n, k, m = shape
    rng = np.random.default_rng(n + k + m)
    a = rng.random((n, k), dtype=np.float32)
    b = rng.random((k, m), dtype=np.float32)
    np.testing.assert_allclose(_tiled_matmul(kq, a, b, t), a @ b, rtol=1e-5)


def _prefix_sum(q: sycl.queue, x: np.ndarray, wg: int) -> np.ndarray:
    """Inclusive scan: per-group Hillis-Steele scan in local memory, then group offsets."""
    n = x.size
    ngroups = n // wg
    y = np.zeros_like(x)
    sums = np.zeros(ngroups, dtype=x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(sums) as S:
        def scan(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            wy = Y.get_access(h, sycl.access_mode.write)
            ws = S.get_access(h, sycl.access_mode.write)
            buf = sycl.local_accessor(x.dtype, sycl.range(2, wg), h)

            def k(it):
                lid = it.get_local_id(0)
                size = it.get_local_range(0)
                buf[0, lid] = rx[it.get_global_id(0)]
                it.barrier(sycl.access.fence_space.local_space)
                src = 0
                off = 1
                while off < size:
                    v = buf[src, lid]
                    if lid >= off:
                        v += buf[src, lid - off]
                    buf[1 - src, lid] = v
                    it.barrier(sycl.access.fence_space.local_space)
                    src = 1 - src
                    off *= 2
                wy[it.get_global_id(0)] = buf[src, lid]
                if lid == size - 1:
                    ws[it.get_group(0)] = buf[src, lid]

            h.parallel_for(ND(sycl.range(n), sycl.range(wg)), k)

        q.submit(scan)

        def carry(h: sycl.handler) -> None:
            wy = Y.get_access(h, sycl.access_mode.read_write)
            rs = S.get_access(h, sycl.access_mode.read)
            size = wg

            def add(i):
                g = i // size
                acc = rx0 = rs[0] * 0
                for j in range(g):
                    acc += rs[j]
                wy[i] += acc + rx0

            h.parallel_for(sycl.range(n), add)

        q.submit(carry)
    return y


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_prefix_sum(kq: sycl.queue, dtype: type) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, 64 * 9).astype(dtype)
    np.testing.assert_array_equal(_prefix_sum(kq, x, 64), np.cumsum(x, dtype=dtype))


def test_three_dimensional_local_accessor(any_kernel_queue: sycl.queue) -> None:
    """Each group reverses its 3-D block through local memory."""
    kq = any_kernel_queue
    shape, loc = (4, 6, 8), (2, 3, 4)
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    y = np.zeros_like(x)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            wy = Y.get_access(h, sycl.access_mode.write)
            tile = sycl.local_accessor(np.int32, sycl.range(*loc), h)

            def k(it):
                l0, l1, l2 = it.get_local_id(0), it.get_local_id(1), it.get_local_id(2)
                tile[l0, l1, l2] = rx[it.get_global_id()]
                it.barrier()
                r = tile.get_range()
                wy[it.get_global_id()] = tile[r[0] - 1 - l0, r[1] - 1 - l1, r[2] - 1 - l2]

            h.parallel_for(ND(sycl.range(*shape), sycl.range(*loc)), k)

        kq.submit(cg)
    want = np.empty_like(x)
    for g0 in range(0, shape[0], loc[0]):
        for g1 in range(0, shape[1], loc[1]):
            for g2 in range(0, shape[2], loc[2]):
                blk = x[g0:g0 + loc[0], g1:g1 + loc[1], g2:g2 + loc[2]]
                want[g0:g0 + loc[0], g1:g1 + loc[1], g2:g2 + loc[2]] = blk[::-1, ::-1, ::-1]
    np.testing.assert_array_equal(y, want)


# ------------------------------------------------------------------ bad input
def _submit_nd(q: sycl.queue, glob: tuple[int, ...], loc: tuple[int, ...],
               local_elems: int = 0) -> np.ndarray:
    data = np.arange(int(np.prod(glob)), dtype=np.float32)
    before = data.copy()
    with sycl.buffer(data) as D:
        def cg(h: sycl.handler) -> None:
            w = D.get_access(h, sycl.access_mode.read_write)
            if local_elems:
                tmp = sycl.local_accessor(np.float32, sycl.range(local_elems), h)

                def k(it):
                    tmp[0] = 1.0
                    w[it.get_global_linear_id()] = -1.0
            else:
                def k(it):
                    w[it.get_global_linear_id()] = -1.0

            h.parallel_for(ND(sycl.range(*glob), sycl.range(*loc)), k)

        q.submit(cg)
    np.testing.assert_array_equal(data, before)  # nothing ran, nothing changed
    return data


@pytest.mark.parametrize("glob,loc,what", [
    ((10,), (4,), "not a multiple"),
    ((8, 9), (4, 2), "dimension 1"),
    ((1 << 14,), (1 << 14,), "exceeds"),
    ((4, 4, 4), (0, 1, 1), "zero"),
])
def test_bad_nd_range_raises_before_running(kq: sycl.queue, glob, loc, what) -> None:
    with pytest.raises(sycl.exception) as ei:
        _submit_nd(kq, glob, loc)
    assert ei.value.code() == sycl.errc.nd_range
    assert what in str(ei.value)


def test_local_range_beyond_max_work_item_sizes(kq: sycl.queue) -> None:
    dev = kq.get_device()
    mx = dev.get_info(sycl.info.device.max_work_item_sizes_3d)
    big = mx[0] * 2  # SYCL dimension 0 of a 3-D range is OpenCL's dimension 2
    with pytest.raises(sycl.exception) as ei:
        _submit_nd(kq, (big, 1, 1), (big, 1, 1))
    assert ei.value.code() == sycl.errc.nd_range


def test_too_much_local_memory(kq: sycl.queue) -> None:
    lm = kq.get_device().get_info(sycl.info.device.local_mem_size)
    with pytest.raises(sycl.exception) as ei:
        _submit_nd(kq, (8,), (8,), local_elems=lm // 4 + 1)
    assert ei.value.code() == sycl.errc.nd_range
    assert "local memory" in str(ei.value)


def test_local_accessor_in_range_kernel(kq: sycl.queue) -> None:
    data = np.zeros(8, dtype=np.float32)
    with sycl.buffer(data) as D:
        def cg(h: sycl.handler) -> None:
            w = D.get_access(h, sycl.access_mode.write)
            tmp = sycl.local_accessor(np.float32, sycl.range(8), h)

            def k(i):
                tmp[0] = 1.0
                w[i] = tmp[0]

            h.parallel_for(sycl.range(8), k)

        with pytest.raises(sycl.exception) as ei:
            kq.submit(cg)
    assert ei.value.code() == sycl.errc.kernel_argument
    assert "nd_range" in str(ei.value)


def test_local_accessor_host_side() -> None:
    q = sycl.queue()
    seen = {}

    def cg(h: sycl.handler) -> None:
        la = sycl.local_accessor(np.float64, sycl.range(4, 8), h)
        seen.update(size=la.size(), nbytes=la.byte_size(), dims=la.dimensions,
                    rng=tuple(la.get_range()))

    q.submit(cg)
    assert seen == {"size": 32, "nbytes": 256, "dims": 2, "rng": (4, 8)}
    with pytest.raises(TypeError):
        sycl.local_accessor(np.float32, sycl.range(4), None)


def test_kernels_are_specialised_on_local_accessor_ranges(any_kernel_queue: sycl.queue) -> None:
    """One kernel code with two tile sizes: each launch compiles (or finds) the variant with
    its constant tile strides, and both give numpy's row sums."""
    q = any_kernel_queue
    rows, cols = 8, 32
    x = np.arange(rows * cols, dtype=np.int32).reshape(rows, cols)
    for wg in (4, 8):
        out = np.zeros(rows * cols, np.int32)
        with sycl.buffer(x) as X, sycl.buffer(out) as O:
            def cg(h: sycl.handler) -> None:
                xa = X.get_access(h, sycl.access_mode.read)
                o = O.get_access(h, sycl.access_mode.write)
                tile = sycl.local_accessor(np.int32, sycl.range(2, wg), h)  # row 1: stride wg

                def k(it: sycl.nd_item) -> None:
                    r, c = it.get_global_id(0), it.get_global_id(1)
                    lc = it.get_local_id(1)
                    tile[1, lc] = xa[r, c]
                    it.barrier(sycl.access.fence_space.local_space)
                    s = 0
                    for j in range(wg):
                        s += tile[1, j]
                    o[r * cols + c] = s

                h.parallel_for(sycl.nd_range(sycl.range(rows, cols), sycl.range(1, wg)), k)

            q.submit(cg)
        want = np.repeat(x.reshape(rows, cols // wg, wg).sum(axis=2), wg, axis=1).reshape(-1)
        np.testing.assert_array_equal(out, want)

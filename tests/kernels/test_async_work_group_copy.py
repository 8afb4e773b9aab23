"""SYCL 2020's ``async_work_group_copy`` / ``wait_for`` / ``device_event`` (§4.9.1.5,
§4.9.1.7) on every device that runs kernels and on the host device (the oracle): gathers
into local memory (accessors at an offset, USM pointers ``p + off``, a stride), scatters
back, ``nd_item`` and ``group`` spellings, ``ev.wait()``; every result compared with numpy.
Bad input is refused at the kernel's line and loses nothing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from tests.conftest import malloc_shared_or_skip


def _reverse_tiles(q: sycl.queue, x: np.ndarray, groups: int, wg: int, tile: int,
                   stride: int, spelling: str) -> np.ndarray:
    """Each group gathers ``tile`` elements ``stride`` apart from its part of ``x`` into
    local memory, waits, and writes them reversed (times 2) through a scatter back."""
    out = np.zeros(groups * tile * stride, x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.read_write)
            loc = sycl.local_accessor(x.dtype, sycl.range(tile), h)
            back = sycl.local_accessor(x.dtype, sycl.range(tile), h)

            def k(it: sycl.nd_item) -> None:
                g = it.get_group()
                gl = it.get_group_linear_id()
                if spelling == "nd_item":
                    ev = it.async_work_group_copy(loc, (a, gl * tile * stride), tile, stride)
                    it.wait_for(ev)
                else:
                    ev = g.async_work_group_copy(loc, (a, gl * tile * stride), tile, stride)
                    ev.wait()
                for j in range(it.get_local_linear_id(), tile, wg):
                    back[j] = loc[tile - 1 - j] * 2
                it.barrier()
                ev2 = it.async_work_group_copy((o, gl * tile * stride), back, tile, stride)
                g.wait_for(ev2)

            h.parallel_for(sycl.nd_range(sycl.range(groups * wg), sycl.range(wg)), k)

        q.submit(cg)
    return out


def _want(x: np.ndarray, groups: int, tile: int, stride: int) -> np.ndarray:
    want = np.zeros(groups * tile * stride, x.dtype)
    for g in range(groups):
        part = x[g * tile * stride:(g + 1) * tile * stride:stride]
        want[g * tile * stride:(g + 1) * tile * stride:stride] = part[::-1] * 2
    return want


@pytest.mark.parametrize("spelling", ["nd_item", "group"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16, np.int8])
def test_gather_and_scatter_through_local_memory(any_kernel_queue: sycl.queue, dtype: type,
                                                 spelling: str) -> None:
    groups, wg, tile, stride = 3, 8, 40, 1
    x = (np.arange(groups * tile * stride) % 50).astype(dtype)
    got = _reverse_tiles(any_kernel_queue, x, groups, wg, tile, stride, spelling)
    np.testing.assert_array_equal(got, _want(x, groups, tile, stride))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(groups=st.integers(1, 4), wg=st.sampled_from([1, 3, 8, 16]), tile=st.integers(1, 70),
       stride=st.integers(1, 3))
def test_any_tile_wg_and_stride(kq: sycl.queue, groups: int, wg: int, tile: int,
                                stride: int) -> None:
    x = np.random.default_rng(tile).random(groups * tile * stride, dtype=np.float32)
    got = _reverse_tiles(kq, x, groups, wg, tile, stride, "nd_item")
    np.testing.assert_array_equal(got, _want(x, groups, tile, stride))


@pytest.mark.parametrize("spelling", ["p + off", "(p, off)"])
def test_usm_pointers_at_an_offset(any_kernel_queue: sycl.queue, spelling: str) -> None:
    """A USM pointer ``p + off`` (or ``(p, off)``, the operand joint_matrix_load takes too)
    is the global side: a gather, then a scatter to another."""
    q = any_kernel_queue
    groups, wg, tile = 4, 8, 32
    n = groups * tile
    src = malloc_shared_or_skip(n + 3, q, dtype=np.float32)
    dst = malloc_shared_or_skip(n + 3, q, dtype=np.float32)
    np.asarray(src)[:] = np.arange(n + 3)
    np.asarray(dst)[:] = -1

    def cg(h: sycl.handler) -> None:
        loc = sycl.local_accessor(np.float32, sycl.range(tile), h)

        def k(it: sycl.nd_item) -> None:
            gl = it.get_group_linear_id()
            if spelling == "p + off":  # a constant string: chosen at compile time
                it.wait_for(it.async_work_group_copy(loc, src + 3 + gl * tile, tile))
            else:
                it.wait_for(it.async_work_group_copy(loc, (src, 3 + gl * tile), tile))
            for j in range(it.get_local_linear_id(), tile, wg):
                loc[j] = loc[j] + 1
            it.barrier()
            if spelling == "p + off":
                it.wait_for(it.async_work_group_copy(dst + gl * tile, loc, tile))
            else:
                it.wait_for(it.async_work_group_copy((dst, gl * tile), loc, tile))

        h.parallel_for(sycl.nd_range(sycl.range(groups * wg), sycl.range(wg)), k)

    q.submit(cg).wait()
    want = np.full(n + 3, -1, np.float32)
    want[:n] = np.arange(3, n + 3) + 1
    np.testing.assert_array_equal(np.asarray(dst), want)


@pytest.mark.parametrize("bad,message", [
    ("local_local", "both local memory"),
    ("dtypes", "element types must be the same"),
])
def test_bad_copies_are_refused_and_lose_nothing(any_kernel_queue: sycl.queue, bad: str,
                                                 message: str) -> None:
    x = np.arange(64, dtype=np.float32)
    y = np.arange(64, dtype=np.float64)
    with pytest.raises((sycl.exception, TypeError), match=message) as info:
        with sycl.buffer(x) as X, sycl.buffer(y) as Y:
            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read_write)
                b = Y.get_access(h, sycl.access_mode.read_write)
                loc = sycl.local_accessor(np.float32, sycl.range(16), h)
                loc2 = sycl.local_accessor(np.float32, sycl.range(16), h)

                def k(it: sycl.nd_item) -> None:
                    if bad == "local_local":
                        ev = it.async_work_group_copy(loc, loc2, 16)
                    else:
                        ev = it.async_work_group_copy(loc, b, 16)
                    it.wait_for(ev)
                    a[it.get_global_linear_id()] = loc[it.get_local_linear_id()]

                h.parallel_for(sycl.nd_range(sycl.range(16), sycl.range(16)), k)

            any_kernel_queue.submit(cg)
    assert "test_async_work_group_copy.py" in str(info.value) or info.type is TypeError
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32))  # nothing lost
    np.testing.assert_array_equal(y, np.arange(64, dtype=np.float64))


def test_the_ptx_copy_is_cp_async(kq: sycl.queue, ptx_images: list) -> None:
    """For sm_90 a global-to-local copy issues ``cp.async`` (16-byte ``cg`` chunks where
    both ends and the length are 16-byte multiples, an element each elsewhere), commits
    it, and ``wait_for(ev)`` waits for it with ``cp.async.wait_group 0`` (no copy after it)
    before its barrier; ptxas takes it. The local-to-global copy stays plain stores, and
    waiting for it is the barrier alone."""
    import re

    from tests.conftest import ptxas_check

    x = np.arange(3 * 40, dtype=np.float32)
    got = _reverse_tiles(kq, x, 3, 8, 40, 1, "nd_item")
    np.testing.assert_array_equal(got, _want(x, 3, 40, 1))
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert "cp.async.cg.shared.global" in ptx and "cp.async.ca.shared.global" in ptx
    assert "cp.async.commit_group" in ptx and "cp.async.wait_all" not in ptx
    assert re.search(r"cp\.async\.wait_group\s+0;\s*\n\s*bar\.sync", ptx)
    assert len(re.findall(r"cp\.async\.wait_group", ptx)) == 1  # the scatter's: none
    ptxas_check(img.binary)


def test_before_sm_80_the_copy_is_plain(kq: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    """For sm_75 (no ``cp.async``) the copy and the wait are plain loads, stores and a
    barrier; ptxas takes it for sm_75."""
    import tempfile

    import pysycl_numba
    from pysycl._kernels.cache import kernels
    from tests.conftest import ptxas_check

    real = pysycl_numba.compile_kernel
    images: list = []

    def both(*args, **kw):  # type: ignore[no-untyped-def]
        ck = real(*args, **kw)
        images.append(real(*args, **dict(kw, image_format="ptx", arch="sm_75")))
        return ck

    monkeypatch.setattr(pysycl_numba, "compile_kernel", both)
    monkeypatch.setenv("PYSYCL_CACHE_DIR", tempfile.mkdtemp(prefix="pysycl-ptx75-"))
    kernels.clear_memory()
    x = np.arange(2 * 24, dtype=np.float32)
    np.testing.assert_array_equal(_reverse_tiles(kq, x, 2, 8, 24, 1, "group"), _want(x, 2, 24, 1))
    (img,) = images
    ptx = img.binary.decode()
    assert ".target sm_75" in ptx and "cp.async" not in ptx and "bar.sync" in ptx
    ptxas_check(img.binary, "sm_75")


def test_a_hierarchical_kernel_copies_at_group_scope(any_kernel_queue: sycl.queue) -> None:
    """``g.async_work_group_copy`` / ``g.wait_for`` at a hierarchical kernel's group scope
    (SYCL 2020 allows them there), then the work-items read the tile."""
    groups, wg, tile = 3, 8, 20
    x = np.arange(groups * tile, dtype=np.float32)
    out = np.zeros(groups * tile, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            loc = sycl.local_accessor(np.float32, sycl.range(tile), h)

            def k(g: sycl.group) -> None:
                gl = g.get_group_linear_id()
                g.wait_for(g.async_work_group_copy(loc, (a, gl * tile), tile))

                def each(hi: sycl.h_item) -> None:
                    for j in range(hi.get_local_id(0), tile, wg):
                        o[gl * tile + j] = loc[tile - 1 - j]

                g.parallel_for_work_item(each)

            h.parallel_for_work_group(sycl.range(groups), sycl.range(wg), k)

        any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(out, x.reshape(groups, tile)[:, ::-1].ravel())


def _pipelined_sums(q: sycl.queue, x: np.ndarray, groups: int, wg: int, tile: int,
                    steps: int, helper: bool = False) -> np.ndarray:
    """Each group sums its ``steps`` tiles of ``x`` through three local buffers: the copy of
    step ``t + 2`` is issued before step ``t`` is waited for and read (a three-stage
    pipeline, the events carried across iterations). ``helper``: the first copy is made
    by a function the kernel calls (its event is of another function)."""
    p = malloc_shared_or_skip(x.size, q, dtype=x.dtype)
    out = malloc_shared_or_skip(groups * wg, q, dtype=x.dtype)
    np.asarray(p)[...] = x
    span = steps * tile
    zero = x.dtype.type(0)

    def first(it, buf, src):  # type: ignore[no-untyped-def]
        return it.async_work_group_copy(buf, src, tile)

    def cg(h: sycl.handler) -> None:
        loc = sycl.local_accessor(x.dtype, sycl.range(3 * tile), h)

        def k(it: sycl.nd_item) -> None:
            g, lid = it.get_group_linear_id(), it.get_local_linear_id()
            base = g * span
            if helper:
                e0 = first(it, loc.get_multi_ptr(), p + base)
            else:
                e0 = it.async_work_group_copy(loc.get_multi_ptr(), p + base, tile)
            e1 = e0
            if steps > 1:
                e1 = it.async_work_group_copy(loc.get_multi_ptr() + tile, p + base + tile, tile)
            acc = zero
            for t in range(steps):
                it.wait_for(e0)
                if t + 2 < steps:
                    e2 = it.async_work_group_copy(loc.get_multi_ptr() + ((t + 2) % 3) * tile,
                                                  p + base + (t + 2) * tile, tile)
                else:
                    e2 = e1
                for j in range(lid, tile, wg):
                    acc += loc[(t % 3) * tile + j]
                e0, e1 = e1, e2
            out[g * wg + lid] = acc

        h.parallel_for(sycl.nd_range(sycl.range(groups * wg), sycl.range(wg)), k)

    q.submit(cg).wait()
    got = np.asarray(out).copy()
    sycl.free(p, q)
    sycl.free(out, q)
    return got


def _pipelined_want(x: np.ndarray, groups: int, wg: int, tile: int, steps: int) -> np.ndarray:
    want = np.zeros(groups * wg, x.dtype)
    for g in range(groups):
        for t in range(steps):
            seg = x[g * steps * tile + t * tile:g * steps * tile + (t + 1) * tile]
            for lid in range(wg):
                want[g * wg + lid] += seg[lid::wg].sum()
    return want


def test_a_three_stage_pipeline_keeps_later_copies_in_flight(kq: sycl.queue,
                                                              ptx_images: list) -> None:
    """Copies of step ``t + 2`` in flight while step ``t`` is read: the sums equal numpy's.
    For sm_90 the loop's ``wait_for(e0)`` is a ``cp.async.wait_group`` of the groups
    committed after ``e0`` -- not 0 in the steady state -- then the barrier; ptxas takes it."""
    import re

    from tests.conftest import ptxas_check

    groups, wg, tile, steps = 3, 16, 64, 7
    x = np.arange(groups * steps * tile, dtype=np.float32) % 13
    got = _pipelined_sums(kq, x, groups, wg, tile, steps)
    np.testing.assert_allclose(got, _pipelined_want(x, groups, wg, tile, steps), rtol=1e-6)
    (img,) = ptx_images
    ptx = img.binary.decode()
    waits = set(re.findall(r"cp\.async\.wait_group\s+(\d)", ptx))
    assert {"0", "1"} <= waits  # the last step's, and a step with one copy after it
    assert "cp.async.wait_all" not in ptx
    ptxas_check(img.binary)


def test_an_event_of_another_function_waits_for_every_copy(kq: sycl.queue,
                                                            ptx_images: list) -> None:
    """The first copy made by a function the kernel calls: its event's tag is that
    function's, so waiting for it waits for every copy (``cp.async.wait_group 0``); the
    sums are right either way."""
    import re

    groups, wg, tile, steps = 2, 8, 32, 5
    x = np.arange(groups * steps * tile, dtype=np.float32) % 7
    got = _pipelined_sums(kq, x, groups, wg, tile, steps, helper=True)
    np.testing.assert_allclose(got, _pipelined_want(x, groups, wg, tile, steps), rtol=1e-6)
    ptx = ptx_images[0].binary.decode()
    assert "cp.async.wait_group" in ptx and re.search(r"cp\.async\.wait_group\s+0", ptx)


@pytest.mark.parametrize("steps", [1, 2, 3, 6])
def test_pipelines_on_every_device(any_kernel_queue: sycl.queue, steps: int) -> None:
    """The pipelined sums on every device that runs kernels and the host device."""
    groups, wg, tile = 2, 8, 24
    x = (np.arange(groups * steps * tile, dtype=np.float32) * 3) % 11
    got = _pipelined_sums(any_kernel_queue, x, groups, wg, tile, steps)
    np.testing.assert_allclose(got, _pipelined_want(x, groups, wg, tile, steps), rtol=1e-6)

"""Range reductions' PTX entry points (machines without a GPU: the kernels run on the CPU
device, checked against numpy, and their PTX images are checked).

A 1-D range reduction's PTX runs strided blocks
(:func:`pysycl_numba.reduction_entry.strided_blocks`): 128-bit loads, several a step in
flight, and few enough registers for the launch's four work-groups of 256 per SM
(``pysycl._kernels.reduction._GROUPS_PER_UNIT_PTX``: 65536 registers / 1024 work-items =
64). n-D ranges keep the plain grid-stride loop.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check, ptxas_info

INIT = sycl.property.reduction.initialize_to_identity


def _device(q: sycl.queue, a: np.ndarray) -> Any:
    """Device USM holding ``a`` (every device has it; NVIDIA's OpenCL has no shared USM)."""
    p = sycl.malloc_device(a.size, q, dtype=a.dtype)
    q.memcpy(p, a, a.nbytes).wait()
    return p


def _read(q: sycl.queue, p: Any, n: int = 1) -> np.ndarray:
    out = np.empty(n, p.dtype)
    q.memcpy(out, p, out.nbytes).wait()
    return out


def _main_image(ptx_images: list) -> str:
    """The PTX of the (one) kernel with reductions among ``ptx_images`` (not its final
    kernel)."""
    (img,) = [i for i in ptx_images if i.reductions]
    ptxas_check(img.binary)
    return img.binary.decode()


def _registers_fit(ptx: str) -> None:
    info = ptxas_info(ptx.encode())
    if info is None:
        return  # no ptxas here
    regs, spills = info
    assert regs <= 64 and spills == 0, (regs, spills)


def _loop_loads(ptx: str) -> list[str]:
    """The global loads of the first loop of the entry point (the blocks' steps)."""
    m = re.search(r"\n(\$L__BB\d+_\d+):\n(.*?)\n\s*@%p\d+ bra\s+\1;", ptx, re.S)
    assert m is not None, "no loop in the PTX"
    return re.findall(r"ld\.global[.\w]*", m.group(2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sum_loads_128_bits_several_at_a_time(kq: sycl.queue, ptx_images: list,
                                                dtype: type) -> None:
    """A sum over an accessor: each step of the loop loads 64 bytes per work-item in 128-bit
    loads (four ``ld.global.v4.f32``; four ``ld.global.v2.f64``), before any combine that
    could order them; the right sum on this device."""
    n = 1000
    x = np.arange(n, dtype=dtype) * dtype(0.25)
    s = np.zeros(1, dtype)
    with sycl.buffer(x) as X, sycl.buffer(s) as S:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus(), properties=[INIT()]),
                           lambda i, r: r.combine(a[i]))

        kq.submit(cg)
    assert s[0] == x.sum()
    ptx = _main_image(ptx_images)
    wide = r"ld\.global\.v4\.(f|b)32" if dtype == np.float32 else r"ld\.global\.v2\.(f|b)64"
    loads = _loop_loads(ptx)
    assert len(loads) == 4 and all(re.fullmatch(wide, ld) for ld in loads), loads
    _registers_fit(ptx)


def test_a_dot_product_of_usm_pointers(kq: sycl.queue, ptx_images: list) -> None:
    """Two USM pointers (masked to 16 bytes where aligned): four 128-bit loads of each a
    step; within 64 registers."""
    n = 4099
    x = _device(kq, (np.arange(n) % 7).astype(np.float32))
    y = _device(kq, (np.arange(n) % 5).astype(np.float32))
    out = sycl.malloc_device(1, kq, dtype=np.float32)
    kq.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(), [INIT()]),
                    lambda i, r: r.combine(x[i] * y[i])).wait()
    assert _read(kq, out)[0] == float((np.arange(n) % 7 * (np.arange(n) % 5)).sum())
    ptx = _main_image(ptx_images)
    loads = _loop_loads(ptx)
    assert len(loads) == 8 and all(re.fullmatch(r"ld\.global\.v4\.(f|b)32", ld)
                                   for ld in loads), loads
    _registers_fit(ptx)


def test_several_reductions_and_a_span(kq: sycl.queue, ptx_images: list) -> None:
    """A sum, a maximum and a span histogram in one kernel: ptxas takes it, within 64
    registers; the results equal numpy's. (The span's atomics and branches between the
    items keep their loads scalar.)"""
    n, nb = 1009, 5
    x = _device(kq, (np.arange(n) * 3 % 17).astype(np.int32))
    s, m = sycl.malloc_device(1, kq, dtype=np.int64), sycl.malloc_device(1, kq, dtype=np.int32)
    hist = sycl.malloc_device(nb, kq, dtype=np.int32)

    def k(i, rs, rm, rh):  # type: ignore[no-untyped-def]
        v = x[i]
        rs += v
        rm.combine(v)
        rh[v % nb] += 1

    kq.parallel_for(sycl.range(n), sycl.reduction(s, sycl.plus(), [INIT()]),
                    sycl.reduction(m, sycl.maximum(), [INIT()]),
                    sycl.reduction(sycl.span(hist, nb), sycl.plus(), [INIT()]), k).wait()
    v = np.arange(n) * 3 % 17
    assert _read(kq, s)[0] == v.sum() and _read(kq, m)[0] == v.max()
    np.testing.assert_array_equal(_read(kq, hist, nb), np.bincount(v % nb, minlength=nb))
    _registers_fit(_main_image(ptx_images))


def test_n_d_ranges_and_synchronised_nd_ranges_keep_the_plain_loop(
        kq: sycl.queue, ptx_images: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2-D range reduction and an nd_range one with a barrier: no vector loads (the plain
    loop, one accumulator), and right; a 1-D nd_range without one runs looped
    (pysycl_numba.looped, asked for as on a GPU): its loop's loads are 128-bit ones."""
    from pysycl._kernels import reduction_launch

    monkeypatch.setattr(reduction_launch, "loops_nd_range", lambda *a: True)
    x = _device(kq, np.arange(600, dtype=np.float32))
    out = sycl.malloc_device(1, kq, dtype=np.float32)
    kq.parallel_for(sycl.range(20, 30), sycl.reduction(out, sycl.plus(), [INIT()]),
                    lambda it, r: r.combine(x[it[0] * 30 + it[1]])).wait()
    assert _read(kq, out)[0] == np.arange(600).sum()

    def synchronised(it: sycl.nd_item, r: sycl.reducer) -> None:
        it.barrier()
        r.combine(x[it.get_global_id(0)])

    kq.parallel_for(sycl.nd_range(sycl.range(600), sycl.range(60)),
                    sycl.reduction(out, sycl.maximum(), [INIT()]), synchronised).wait()
    assert _read(kq, out)[0] == 599
    mains = [i for i in ptx_images if i.reductions]
    assert len(mains) == 2
    for img in mains:
        ptxas_check(img.binary)
        assert "ld.global.v" not in img.binary.decode()
    kq.parallel_for(sycl.nd_range(sycl.range(600), sycl.range(60)),
                    sycl.reduction(out, sycl.minimum(), [INIT()]),
                    lambda it, r: r.combine(x[it.get_global_id(0)])).wait()
    assert _read(kq, out)[0] == 0
    (looped,) = [i for i in ptx_images if i.reductions][2:]
    assert looped.index.looped
    assert any(ld.startswith("ld.global.v4") for ld in _loop_loads(_main_image([looped])))
    _registers_fit(_main_image([looped]))

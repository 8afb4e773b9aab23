"""The SYCL integer and relational functions compile to PTX: plain instructions, 64-bit
``mul_hi`` as ``mul.hi`` (OpenCL's ``mul_hi`` built-in defined for NVPTX), nothing left
to link."""

from __future__ import annotations

import re

import numpy as np

import pysycl as sycl
from tests.conftest import ptxas_check


def test_integer_and_relational_functions_compile_to_ptx(kq: sycl.queue,
                                                         ptx_images: list) -> None:
    x = np.array([-3, 1 << 40, 7, -1], np.int64)
    out = np.zeros(4, np.int64)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(i):  # type: ignore[no-untyped-def]
                v = sycl.long2(a[0], a[1])
                w = sycl.mad_sat(v, v, sycl.long2(a[2]))
                o[0] = sycl.mul_hi(a[1], a[1]) + sycl.mul_hi(np.uint64(a[3]), np.uint64(a[3]))
                o[1] = sycl.popcount(a[3]) + sycl.clz(a[2]) + sycl.ctz(a[1]) + w[1]
                o[2] = sycl.add_sat(a[3], a[1]) + sycl.any(sycl.isnan(sycl.double2(0.5)))
                o[3] = sycl.rotate(a[0], a[2]) + sycl.select(a[0], a[2], sycl.signbit(0.5))

            h.parallel_for(sycl.range(1), k)
        kq.submit(cg).wait()
    big = 1 << 40
    want = [((big * big) >> 64) + (2**64 - 2), 64 + 61 + 40 + 2**63 - 1, big - 1,
            (-3 << 7 | ((1 << 7) - 1)) - 3]
    wrapped = [(w + 2**63) % 2**64 - 2**63 for w in want]
    assert out.tolist() == wrapped
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert "_Z" not in ptx and ".extern" not in ptx
    assert re.search(r"\bmul\.hi\.s64\b", ptx) and re.search(r"\bmul\.hi\.u64\b", ptx)
    assert re.search(r"\bpopc\.b64\b", ptx) and re.search(r"\bclz\.b64\b", ptx)
    ptxas_check(img.binary)

"""Two ``sycl.reduction``s with the same operator and element type in one kernel.

Both use one epilogue (the work-group combine, a device function); the entry point
declared it once per reduction, and llvmlite raised ``DuplicatedNameError`` -- a raw
compiler exception from ``q.submit``. Found while testing issue 21, item 8 (a kernel
``lambda i, x, y: (x.combine(1), y.combine(2))`` returns a tuple of nothing).
"""

from __future__ import annotations

import numpy as np

import pysycl as sycl


def test_two_plus_reductions_of_one_dtype_in_one_kernel(any_kernel_queue: sycl.queue) -> None:
    x = np.arange(100, dtype=np.int32)
    total = np.zeros(1, np.int32)
    squares = np.zeros(1, np.int32)
    with sycl.buffer(x) as X, sycl.buffer(total) as T, sycl.buffer(squares) as S:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            t, s = sycl.reduction(T, h, sycl.plus()), sycl.reduction(S, h, sycl.plus())

            def k(i, a, b):
                a.combine(rx[i])
                b.combine(rx[i] * rx[i])

            h.parallel_for(sycl.range(x.size), t, s, k)

        any_kernel_queue.submit(cg)
    assert total[0] == x.sum() and squares[0] == (x * x).sum()

"""PRK nstream with USM: the Parallel Research Kernels' ``nstream-sycl-usm``, in Python.

The C++ original (ParRes/Kernels, ``Cxx11/nstream-sycl-usm.cc``) allocates three device
arrays with ``sycl::malloc_device<T>``, fills them with ``q.memcpy``, runs
``A[i] += B[i] + scalar * C[i]`` over ``sycl::range<1>`` as many times as asked, copies
``A`` back and validates its checksum. The structure and names follow it line for line;
only C++'s template parameter became ``dtype=`` and the kernel lambda a nested function.

    python examples/nstream_usm.py [iterations] [length]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import pysycl as sycl


def main(iterations: int = 10, length: int = 1 << 20) -> None:
    q = sycl.queue(properties=[sycl.property.queue.in_order()])
    print(f"Parallel Research Kernels: STREAM triad (USM) on "
          f"{q.get_device().get_info(sycl.info.device.name)}")
    print(f"Number of iterations = {iterations}\nVector length        = {length}")

    scalar = np.float64(3)
    h_A = np.zeros(length)
    h_B = np.full(length, 2.0)
    h_C = np.full(length, 2.0)

    d_A = sycl.malloc_device(length, q, dtype=np.float64)
    d_B = sycl.malloc_device(length, q, dtype=np.float64)
    d_C = sycl.malloc_device(length, q, dtype=np.float64)
    q.memcpy(d_A, h_A, h_A.nbytes)
    q.memcpy(d_B, h_B, h_B.nbytes)
    q.memcpy(d_C, h_C, h_C.nbytes)
    q.wait()

    def nstream(i: sycl.item) -> None:
        d_A[i] += d_B[i] + scalar * d_C[i]

    nstream_time = 0.0
    for it in range(iterations + 1):
        if it == 1:  # the first iteration warms up (compiles the kernel)
            q.wait()
            t0 = time.perf_counter()
        q.parallel_for(sycl.range(length), nstream)
    q.wait()
    nstream_time = time.perf_counter() - t0

    q.memcpy(h_A, d_A, h_A.nbytes).wait()
    for p in (d_C, d_B, d_A):
        sycl.free(p, q)

    # Analyze and output results: the PRK's checksum.
    ar, br, cr = 0.0, 2.0, 2.0
    for _ in range(iterations + 1):
        ar += br + scalar * cr
    ar *= length
    asum = float(np.abs(h_A).sum())
    epsilon = 1e-8
    if abs(ar - asum) / asum > epsilon:
        raise SystemExit(f"Failed Validation on output array\n       Expected checksum: {ar}\n"
                         f"       Observed checksum: {asum}\nERROR: solution did not validate")
    avgtime = nstream_time / iterations
    nbytes = 4.0 * length * h_A.itemsize
    print("Solution validates")
    print(f"Rate (MB/s): {1e-6 * nbytes / avgtime:.1f} Avg time (s): {avgtime:.6f}")
    print("OK")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))

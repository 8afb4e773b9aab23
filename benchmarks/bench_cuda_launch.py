"""Launch cost on the CUDA backend (issue 24): back-to-back launches and launch + wait,
pysycl against CuPy's ``RawKernel``, interleaved round by round (9 rounds, medians).

``pysycl native`` is the remembered launch in one C call (``_native.Relaunch``, where the
extension ``pysycl/_backends/cuda/_native.c`` was built); ``pysycl python path`` the same
launch through the Python way (``launching.launch``, the refresh, ``CUDALaunch.enqueue``)
with the C launch call; ``pysycl bindings`` the Python way with the extension switched off
(the ``cuda-bindings`` calls); each runs ``q.parallel_for(r, k)`` 2000 times, then waits.
The launch + wait rows wait for each launch (``q.parallel_for(r, k).wait()``,
``stream.synchronize()``). The kernel adds 1.0 to 1024 floats; the count is checked.

    python benchmarks/bench_cuda_launch.py
"""

from __future__ import annotations

import time

import numpy as np

import pysycl as sycl

N = 2000
ROUNDS = 9
SRC = r'''extern "C" __global__ void kk(float *p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    p[i] += 1.0f;
}'''


def main() -> None:
    import cupy

    cuda = [d for d in sycl.device.get_devices()
            if d.get_backend() is sycl.backend.ext_oneapi_cuda]
    if not cuda:
        raise SystemExit("no CUDA device: this benchmark needs the CUDA backend")
    q = sycl.queue(cuda[0])
    n = 1024
    p = sycl.malloc_device(n, q, dtype=np.float32)
    q.memset(p, 0, n * 4).wait()

    def k(i):  # type: ignore[no-untyped-def]
        p[i] = p[i] + np.float32(1.0)

    r = sycl.range(n)
    q.parallel_for(r, k)
    q.parallel_for(r, k)
    q.wait()
    ln = q.executor.launches[k.__code__]
    reca = ln.reca
    ck = cupy.RawKernel(SRC, "kk")
    ca = cupy.zeros(n, cupy.float32)
    ck((4,), (256,), (ca,))
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.get_current_stream()

    def py_native() -> None:
        for _ in range(N):
            q.parallel_for(r, k)
        q.wait()

    primes = getattr(ln, "primes", False)

    def py_path() -> None:  # the C relaunch off: no prime
        ln.primes, ln.primed = False, None
        for _ in range(N):
            q.parallel_for(r, k)
        q.wait()
        ln.primes = primes

    def py_bindings() -> None:
        ln.reca, ln.primes, ln.primed = 0, False, None
        for _ in range(N):
            q.parallel_for(r, k)
        q.wait()
        ln.reca, ln.primes = reca, primes

    def cp() -> None:
        for _ in range(N):
            ck((4,), (256,), (ca,))
        stream.synchronize()

    def wait_py() -> None:
        for _ in range(N // 4):
            q.parallel_for(r, k).wait()

    def wait_cp() -> None:
        for _ in range(N // 4):
            ck((4,), (256,), (ca,))
            stream.synchronize()

    cases = {"pysycl native": (py_native, N), "pysycl python path": (py_path, N),
             "pysycl bindings": (py_bindings, N),
             "cupy": (cp, N), "pysycl launch+wait": (wait_py, N // 4),
             "cupy launch+wait": (wait_cp, N // 4)}
    res: dict[str, list[float]] = {c: [] for c in cases}
    for _ in range(ROUNDS):
        for c, (fn, m) in cases.items():
            t0 = time.perf_counter()
            fn()
            res[c].append((time.perf_counter() - t0) / m * 1e6)
    med = {c: float(np.median(v)) for c, v in res.items()}
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; native launch: "
          f"{reca != 0}; C relaunch: {primes}")
    for c, v in med.items():
        print(f"{c:22s} {v:6.2f} us")
    print(f"back to back: native / cupy {med['pysycl native'] / med['cupy']:.2f}, python path "
          f"/ cupy {med['pysycl python path'] / med['cupy']:.2f}, bindings / "
          f"cupy {med['pysycl bindings'] / med['cupy']:.2f}; launch + wait / cupy "
          f"{med['pysycl launch+wait'] / med['cupy launch+wait']:.2f}")
    got = np.empty(n, np.float32)
    q.memcpy(got, p, n * 4).wait()
    want = 2 + ROUNDS * (3 * N + N // 4)
    assert np.all(got == want), (got[:4], want)
    sycl.free(p, q)


if __name__ == "__main__":
    main()

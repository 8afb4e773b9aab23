"""A 2-D five-point stencil (one Jacobi step of the heat equation) over a 2-D range."""

import numpy as np

import pysycl as sycl


def main() -> None:
    q = sycl.queue()
    rows, cols = 256, 384
    rng = np.random.default_rng(0)
    u = rng.random((rows, cols), dtype=np.float32)
    out = np.empty_like(u)
    alpha = np.float32(0.2)  # a captured scalar: a kernel argument, not a constant

    with sycl.buffer(u) as U, sycl.buffer(out) as OUT:
        def cg(h: sycl.handler) -> None:
            src = U.get_access(h, sycl.access_mode.read)
            dst = OUT.get_access(h, sycl.access_mode.write)

            def step(it: sycl.item) -> None:
                i, j = it[0], it[1]  # dimension 0 (rows) is the slowest, as in SYCL
                c = src[i, j]
                if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
                    dst[i, j] = c  # fixed boundary
                else:
                    lap = src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1] - 4 * c
                    dst[i, j] = c + alpha * lap

            h.parallel_for(sycl.range(rows, cols), step)

        q.submit(cg)

    expect = u.copy()
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    expect[1:-1, 1:-1] = u[1:-1, 1:-1] + alpha * lap
    np.testing.assert_allclose(out, expect, rtol=1e-6, atol=1e-6)
    print(f"2-D stencil on {rows}x{cols}: OK")


if __name__ == "__main__":
    main()

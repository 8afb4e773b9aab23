"""nd_range matrix multiply: 16x16 work-groups copy tiles into local memory between barriers."""

import numpy as np

import pysycl as sycl

TS = 16  # tile edge = work-group edge


def matmul(q: sycl.queue, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    assert n % TS == 0, "the global range must be a multiple of the work-group"
    c = np.empty_like(a)
    with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c) as C:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])
            at = sycl.local_accessor(np.float32, sycl.range(TS, TS), h)  # one per work-group
            bt = sycl.local_accessor(np.float32, sycl.range(TS, TS), h)

            def tiled(it: sycl.nd_item) -> None:
                li, lj = it.get_local_id(0), it.get_local_id(1)
                i, j = it.get_global_id(0), it.get_global_id(1)
                acc = np.float32(0)
                for t in range(0, n, TS):
                    at[li, lj] = ra[i, t + lj]
                    bt[li, lj] = rb[t + li, j]
                    # every work-item of the group reaches both barriers (uniform loop)
                    it.barrier(sycl.access.fence_space.local_space)
                    for k in range(TS):
                        acc += at[li, k] * bt[k, lj]
                    it.barrier(sycl.access.fence_space.local_space)
                wc[i, j] = acc

            h.parallel_for(sycl.nd_range(sycl.range(n, n), sycl.range(TS, TS)), tiled)

        q.submit(cg)
    return c


def main() -> None:
    q = sycl.queue()
    n = 128
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = matmul(q, a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    print(f"tiled matmul {n}x{n} with {TS}x{TS} local tiles: OK")


if __name__ == "__main__":
    main()

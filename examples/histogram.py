"""Histogram with atomics: per-work-group bins in local memory, then one atomic add per bin."""

import numpy as np

import pysycl as sycl

MO, MS = sycl.memory_order, sycl.memory_scope


def histogram(q: sycl.queue, x: np.ndarray, nbins: int, wg: int = 64) -> np.ndarray:
    hist = np.zeros(nbins, dtype=np.int32)
    with sycl.buffer(x) as X, sycl.buffer(hist) as H:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            hh = H.get_access(h, sycl.access_mode.read_write)
            local = sycl.local_accessor(np.int32, sycl.range(nbins), h)

            def k(it: sycl.nd_item) -> None:
                lid = it.get_local_id(0)
                b = lid
                while b < nbins:  # the group zeroes its local bins together
                    local[b] = 0
                    b += it.get_local_range(0)
                it.barrier(sycl.access.fence_space.local_space)
                sycl.atomic_ref(local, rx[it.get_global_id(0)], MO.relaxed,
                                MS.work_group).fetch_add(1)
                it.barrier(sycl.access.fence_space.local_space)
                b = lid
                while b < nbins:  # then adds them to the global histogram
                    sycl.atomic_ref(hh, b, MO.relaxed, MS.device).fetch_add(local[b])
                    b += it.get_local_range(0)

            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), k)

        q.submit(cg)
    return hist


def main() -> None:
    q = sycl.queue()
    rng = np.random.default_rng(2)
    nbins = 50
    x = rng.integers(0, nbins, 64 * 1000).astype(np.int32)
    got = histogram(q, x, nbins)
    np.testing.assert_array_equal(got, np.bincount(x, minlength=nbins))
    print(f"histogram of {x.size} values into {nbins} bins: OK")


if __name__ == "__main__":
    main()

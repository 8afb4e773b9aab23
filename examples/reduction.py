"""sycl.reduction: a sum and a maximum in one range kernel."""

import numpy as np

import pysycl as sycl


def main() -> None:
    q = sycl.queue()
    rng = np.random.default_rng(3)
    x = rng.integers(-1000, 1000, 100_003).astype(np.int64)  # not a multiple of any work-group
    total = np.array([5], dtype=np.int64)                     # the sum is added to the old value
    hi = np.zeros(1, dtype=np.int64)

    with sycl.buffer(x) as X, sycl.buffer(total) as T, sycl.buffer(hi) as HI:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            s = sycl.reduction(T, h, sycl.plus())
            m = sycl.reduction(HI, h, sycl.maximum(),
                               properties=[sycl.property.reduction.initialize_to_identity()])

            def k(i, sum_, max_):  # one reducer parameter per reduction, in order
                sum_ += rx[i]
                max_.combine(rx[i])

            h.parallel_for(sycl.range(x.size), s, m, k)

        q.submit(cg)

    assert total[0] == 5 + x.sum(), (total[0], 5 + x.sum())
    assert hi[0] == x.max()
    print(f"reduction of {x.size} int64: sum {total[0]}, max {hi[0]}: OK")


if __name__ == "__main__":
    main()

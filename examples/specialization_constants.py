"""Specialization constants: values fixed when the kernel is built, without recompiling Python."""

import numpy as np

import pysycl as sycl

# C++: constexpr specialization_id<int> GAIN{2};  -- identity matters, like the variable's address
GAIN = sycl.specialization_id(np.int32, 2)
CLAMP = sycl.specialization_id(bool, False)


def run(q: sycl.queue, x: np.ndarray, values: dict) -> np.ndarray:
    out = np.empty_like(x)
    with sycl.buffer(x) as X, sycl.buffer(out) as OUT:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            wo = OUT.get_access(h, sycl.access_mode.write)
            for sid, v in values.items():
                h.set_specialization_constant(sid, v)  # for this command group only

            def k(i, kh):  # the trailing sycl.kernel_handler parameter reads the constants
                v = rx[i] * kh.get_specialization_constant(GAIN)
                if kh.get_specialization_constant(CLAMP):
                    v = min(v, 100)
                wo[i] = v

            h.parallel_for(sycl.range(x.size), k)

        q.submit(cg)
    return out


def main() -> None:
    q = sycl.queue()
    x = np.arange(100, dtype=np.int32)
    np.testing.assert_array_equal(run(q, x, {}), x * 2)  # the defaults
    before = sycl.ext.kernel_cache_stats()["compiles"]
    np.testing.assert_array_equal(run(q, x, {GAIN: 3}), x * 3)
    np.testing.assert_array_equal(run(q, x, {GAIN: 5, CLAMP: True}), np.minimum(x * 5, 100))
    assert sycl.ext.kernel_cache_stats()["compiles"] == before, "Numba ran again"
    print("specialization constants: three value sets, one Python compile: OK")


if __name__ == "__main__":
    main()

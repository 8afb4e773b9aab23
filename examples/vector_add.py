"""Vector add with a lambda kernel on the default device (the README's `make run`)."""

import numpy as np

import pysycl as sycl


def main() -> None:
    q = sycl.queue()  # default_selector_v: a device that can run Python kernels
    print("running on:", q.get_device().get_info(sycl.info.device.name),
          "|", q.get_device().get_platform().get_info(sycl.info.platform.name))

    n = 1 << 20
    a = np.arange(n, dtype=np.float32)
    b = np.ones_like(a)
    c = np.empty_like(a)
    with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c) as C:  # write-back on exit
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(n), lambda i: wc.__setitem__(i, ra[i] + rb[i]))

        q.submit(cg)
    assert np.array_equal(c, a + b), "vector add gave a wrong result"
    print(f"vector add of {n} float32: OK (c[:4] = {c[:4]})")


if __name__ == "__main__":
    main()

"""OpenCL C source through the kernel_compiler extension (sycl.ext.oneapi.experimental)."""

import numpy as np

import pysycl as sycl

syclex = sycl.ext.oneapi.experimental

SRC = """
__kernel void saxpy(__global const float* x, __global float* y, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""


def main() -> None:
    # a device that compiles OpenCL C (an OpenCL device: a GPU's CUDA view takes PTX source)
    q = sycl.queue(lambda d: 1 if d.ext_oneapi_can_compile(syclex.source_language.opencl) else -1)
    ctx = q.get_context()

    kb_src = syclex.create_kernel_bundle_from_source(ctx, syclex.source_language.opencl, SRC)
    log: list[str] = []
    kb = syclex.build(kb_src, [q.get_device()],
                      properties=[syclex.build_options(["-cl-fast-relaxed-math"]),
                                  syclex.save_log(log)])
    assert kb.ext_oneapi_has_kernel("saxpy")
    k = kb.ext_oneapi_get_kernel("saxpy")

    n = 4096
    x = np.linspace(0, 1, n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    expect = np.float32(2.5) * x + y
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        def cg(h: sycl.handler) -> None:
            # arguments in the order of the OpenCL C signature; numpy scalars fix the type
            h.set_args(X.get_access(h, sycl.access_mode.read),
                       Y.get_access(h, sycl.access_mode.read_write), np.float32(2.5))
            h.parallel_for(sycl.range(n), k)

        q.submit(cg)
    np.testing.assert_allclose(y, expect, rtol=1e-6)
    print(f"OpenCL C saxpy of {n} float32 (build log: {len(''.join(log))} chars): OK")


if __name__ == "__main__":
    main()

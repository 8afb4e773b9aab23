"""Kernel bundles (SYCL 2020 §4.11): declare kernels, compile, link, build, use_kernel_bundle."""

import numpy as np

import pysycl as sycl

S = sycl.bundle_state
R = sycl.ext.accessor_type


# Kernel factories: what the kernel captures are the factory's parameters.
def vadd(a, b, c):
    return lambda i: c.__setitem__(i, a[i] + b[i])


def scale(x, f):
    def k(i):
        x[i] = x[i] * f
    return k


# A kernel must be declared (or submitted once) before a bundle can hold it: C++ knows
# every kernel at link time, Python learns them at run time.
VADD = sycl.ext.declare_kernel(
    vadd, kernel_name="examples.vadd", index_space=sycl.range(1),
    captures={"a": R(np.float32, 1, sycl.access_mode.read),
              "b": R(np.float32, 1, sycl.access_mode.read),
              "c": R(np.float32, 1, sycl.access_mode.write)})
SCALE = sycl.ext.declare_kernel(
    scale, kernel_name="examples.scale", index_space=sycl.range(1),
    captures={"x": R(np.float32, 1, sycl.access_mode.read_write), "f": np.float32})


def main() -> None:
    q = sycl.queue()
    ctx, dev = q.get_context(), q.get_device()

    kb_in = sycl.get_kernel_bundle(ctx, [dev], [VADD, SCALE], state=S.input)  # SPIR-V images
    for img in kb_in:
        names = [kid.get_name() for kid in kb_in.get_kernel_ids() if img.has_kernel(kid)]
        print(f"  input image: {img.ext_pysycl_format()} {names} "
              f"needs {sorted(a.name for a in img.ext_pysycl_required_aspects())}")
    kb_obj = sycl.compile(kb_in)        # clCompileProgram per device
    kb_exe = sycl.link([kb_obj])        # clLinkProgram: kernels ready
    kb_built = sycl.build(kb_in)        # the same in one step (cached per device on disk)
    assert kb_obj.get_state() is S.object and kb_exe.get_state() is S.executable
    assert kb_exe.has_kernel(VADD, dev) and kb_built.has_kernel(SCALE, dev)
    k = kb_exe.get_kernel(VADD)
    print(f"  {VADD.get_name()}: {k.get_info(sycl.info.kernel.num_args)} OpenCL arguments, "
          f"work-group size up to "
          f"{k.get_info(sycl.info.kernel_device_specific.work_group_size, dev)}")

    n = 1000
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2, dtype=np.float32)
    c = np.empty_like(a)
    before = sycl.ext.kernel_cache_stats()
    with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c) as C:
        def add(h: sycl.handler) -> None:
            h.use_kernel_bundle(kb_exe)  # run from the bundle: nothing compiles at submit
            h.parallel_for(sycl.range(n), vadd(A.get_access(h, sycl.access_mode.read),
                                               B.get_access(h, sycl.access_mode.read),
                                               C.get_access(h, sycl.access_mode.write)))

        def triple(h: sycl.handler) -> None:
            h.use_kernel_bundle(kb_built)
            h.parallel_for(sycl.range(n), scale(C.get_access(h, sycl.access_mode.read_write),
                                                np.float32(3)))

        q.submit(add)
        q.submit(triple)
    after = sycl.ext.kernel_cache_stats()
    np.testing.assert_array_equal(c, (a + b) * 3)
    assert after["compiles"] == before["compiles"], "a bundle kernel was compiled at submit"
    print(f"kernel bundles: {len(list(kb_exe))} executable image(s), (a + b) * 3 checked: OK")


if __name__ == "__main__":
    main()

"""OpenCL C kernels (kernel_compiler, OpenCL interop) given an argument of the wrong kind:
``errc.kernel_argument`` naming the argument's index and what the kernel's parameter is
(SYCL 2020 §4.9.4.3 ``set_arg``; §4.13.2 ``errc::kernel_argument``), before any data
moves; never ``errc.kernel`` without an index, never a crash.

Where the driver keeps argument info (pysycl builds kernel_compiler sources with
``-cl-kernel-arg-info``; a program from OpenCL C source is built again with it), each
argument is checked against its parameter. Where there is none (a program from a
binary), ``clSetKernelArg``'s refusal is reported with the argument's index.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl
from bundles._sources import PTX_ARGS, lang_and_source

syclex = sycl.ext.oneapi.experimental
SRC = "__kernel void f(__global int* x, int n, float s) { x[get_global_id(0)] = n + (int)s; }"


def _source_kernel(q: sycl.queue) -> sycl.kernel:
    lang, src = lang_and_source(q.get_device(), SRC, PTX_ARGS)
    kb = syclex.create_kernel_bundle_from_source(q.get_context(), lang, src)
    return syclex.build(kb).ext_oneapi_get_kernel("f")


def _submit(q: sycl.queue, k: sycl.kernel, args) -> np.ndarray:
    a = np.full(4, -1, np.int32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            h.set_args(*args(h, A))
            h.parallel_for(sycl.range(4), k)

        q.submit(cg)
    return a


WRONG = {  # argument index, what it is, what the parameter is
    "python_float_for_pointer": (0, lambda h, A, p: (1.5, 3, 1.0), "`__global int*`"),
    "numpy_float_for_pointer": (0, lambda h, A, p: (np.float64(1.5), 3, 1.0), "`__global int*`"),
    "int64_for_int": (1, lambda h, A, p: (A.get_access(h), np.int64(3), 1.0), "`int` (4 bytes)"),
    "accessor_for_int": (1, lambda h, A, p: (A.get_access(h), A.get_access(h), 1.0), "`int`"),
    "pointer_for_float": (2, lambda h, A, p: (A.get_access(h), 3, p), "`float`"),
    "local_accessor_for_pointer": (
        0, lambda h, A, p: (sycl.local_accessor(np.int32, sycl.range(4), h), 3, 1.0),
        "`__global int*`"),
}


@pytest.mark.parametrize("case", list(WRONG), ids=list(WRONG))
def test_wrong_argument_kind_names_index_and_parameter(kq: sycl.queue, case: str) -> None:
    index, args, expect = WRONG[case]
    k = _source_kernel(kq)
    if not kq.get_device().ext_oneapi_can_compile(syclex.source_language.opencl):
        expect = expect.replace("int*", "void*")  # PTX: a pointer's element type is unknown
    p = sycl.malloc_device(4, kq, dtype=np.int32)  # device USM: every device has it
    try:
        with pytest.raises(sycl.exception) as ei:
            _submit(kq, k, lambda h, A: args(h, A, p))
    finally:
        sycl.free(p, kq)
    assert ei.value.code() == sycl.errc.kernel_argument
    msg = str(ei.value)
    assert f"argument {index} (" in msg and f"parameter {index}, {expect}" in msg, msg
    assert (_submit(kq, k, lambda h, A: (A.get_access(h), 3, 1.0)) == 4).all()  # still fine


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pyopencl as cl  # interop: the test builds native programs itself
    import pysycl as sycl
    dev = next(d for d in sycl.device.get_devices() if sys.argv[1] in
               d.get_platform().get_info(sycl.info.platform.name))
    q = sycl.queue(dev)
    ctx = q.get_context()
    src = "__kernel void f(__global int* x, int n) { x[get_global_id(0)] = n; }"
    try:
        from_source = cl.Program(sycl.get_native(ctx), src).build()  # no -cl-kernel-arg-info
    except cl.Error as e:  # PoCL whose LLVM does not know the host CPU (pocl issue 1049)
        if "unknown target CPU" in str(e):
            print(json.dumps({"skip": str(e)[-200:]}))
            sys.exit(0)
        raise
    from_binary = cl.Program(sycl.get_native(ctx), [sycl.get_native(dev)],
                             from_source.binaries).build()
    res = {}
    for prg_name, prg, cases in [
            ("source", from_source, {"float_for_pointer": lambda h, A: (np.float64(1.5), np.int32(3)),
                                     "int64_for_int": lambda h, A: (A.get_access(h), np.int64(3))}),
            ("binary", from_binary, {"int64_for_int": lambda h, A: (A.get_access(h), np.int64(3)),
                                     "accessor_for_int": lambda h, A: (A.get_access(h), A.get_access(h))})]:
        k = sycl.make_kernel(cl.Kernel(prg, "f"), ctx)
        for name, args in cases.items():
            a = np.zeros(4, np.int32)
            try:
                with sycl.buffer(a) as A:
                    q.submit(lambda h: (h.set_args(*args(h, A)), h.parallel_for(sycl.range(4), k)))
                res[prg_name + "." + name] = "ran"
            except sycl.exception as e:
                res[prg_name + "." + name] = [e.code().name, str(e)]
    print(json.dumps(res))
""")


@pytest.mark.parametrize("platform", ["Portable", "Intel"], ids=["pocl", "intel"])
def test_interop_kernel_without_argument_info_names_the_index(platform: str) -> None:
    """A program built without ``-cl-kernel-arg-info`` (PoCL keeps no argument info then:
    before the fix, a float64 for a pointer parameter crashed the process)."""
    import json

    if not any(platform in d.get_platform().get_info(sycl.info.platform.name)
               for d in sycl.device.get_devices()):
        pytest.skip(f"no {platform} OpenCL platform")
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD, platform],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    if "skip" in res:
        pytest.skip(f"{platform} cannot compile OpenCL C here: {res['skip']}")
    for name, got in res.items():
        assert got != "ran", name
        code, msg = got
        assert code == "kernel_argument", (name, msg)
        index = 0 if "float_for_pointer" in name else 1
        assert f"argument {index} (" in msg, (name, msg)
    # the parameter (argument info, PoCL) or the driver's refusal (pyopencl may have built
    # the program from its binary cache: no source to build again)
    assert "pointer" in res["source.float_for_pointer"][1]

"""Jupyter rich display: HTML tables that carry the objects' real facts."""

from __future__ import annotations

import numpy as np

import pysycl as sycl


def test_device_and_platform_html(cl_device: sycl.device) -> None:
    h = cl_device._repr_html_()
    assert h.startswith("<table") and h.endswith("</table>")
    assert cl_device.get_info(sycl.info.device.name) in h
    for a in cl_device.get_info(sycl.info.device.aspects):
        assert a.name in h
    p = cl_device.get_platform()._repr_html_()
    assert cl_device.get_platform().get_info(sycl.info.platform.vendor) in p


def test_html_escapes_text(cl_device: sycl.device) -> None:
    from pysycl._objects.display import table

    assert "&lt;b&gt;" in table([("x", "<b>")])


def test_queue_and_profiled_event_html(cl_device: sycl.device) -> None:
    q = sycl.queue(cl_device, properties=[sycl.property.queue.enable_profiling()])
    assert "profiling" in q._repr_html_() and "True" in q._repr_html_()
    B = sycl.buffer(sycl.range(1 << 16), dtype=np.float32)
    ev = q.fill(sycl.accessor(B, None, sycl.access_mode.write), 1.0)
    ev.wait()
    h = ev._repr_html_()
    assert "complete" in h and "duration" in h and "µs" in h


def test_kernel_bundle_html(kq: sycl.queue) -> None:
    def dbl(x):
        return lambda i: x.__setitem__(i, x[i] * 2)

    dev = kq.get_device()
    # An optional aspect the image needs: fp16 where the device has it (Intel's CPU), fp64
    # on a GPU without fp16.
    dt, asp = (np.float16, "fp16") if dev.has(sycl.aspect.fp16) else (np.float64, "fp64")
    half = sycl.ext.accessor_type(dt, 1, sycl.access_mode.read_write)
    kid = sycl.ext.declare_kernel(dbl, kernel_name="display.dbl16", index_space=sycl.range(1),
                                  captures={"x": half})
    kb = sycl.get_kernel_bundle(kq.get_context(), [kq.get_device()], [kid],
                                state=sycl.bundle_state.input)
    h = kb._repr_html_()
    assert h.startswith("<table") and "sycl.kernel_bundle" in h
    assert "input" in h and kq.get_device().get_info(sycl.info.device.name) in h
    fmt = dev.image_targets[0][0]
    assert f"{fmt} [display.dbl16] requires: {asp}" in h
    exe = sycl.build(kb)
    assert "executable" in exe._repr_html_() and "display.dbl16" in exe._repr_html_()
    syclex = sycl.ext.oneapi.experimental
    if not kq.get_device().ext_oneapi_can_compile(syclex.source_language.opencl):
        return  # OpenCL C source needs an OpenCL device (a CUDA one takes PTX source)
    src = syclex.create_kernel_bundle_from_source(
        kq.get_context(), syclex.source_language.opencl, "__kernel void k(__global int* x) {}")
    h = src._repr_html_()
    assert "ext_oneapi_source" in h and "opencl_c" in h


def test_platform_and_device_lists_render_as_tables() -> None:
    plats = sycl.platform.get_platforms()
    devs = sycl.device.get_devices()
    assert isinstance(plats, list) and isinstance(devs, list) and devs == list(devs)
    hp, hd = plats._repr_html_(), devs._repr_html_()
    for p in plats:
        assert p.get_info(sycl.info.platform.name) in hp
    for d in devs:
        assert d.get_info(sycl.info.device.name) in hd
    assert f"{len(devs)} item(s)" in hd

"""Jupyter rich display: HTML tables that carry the objects' real facts."""

from __future__ import annotations

import numpy as np

import pysycl as sycl


def test_device_and_platform_html(sycl_device: sycl.device) -> None:
    h = sycl_device._repr_html_()
    assert h.startswith("<table") and h.endswith("</table>")
    assert sycl_device.get_info(sycl.info.device.name) in h
    for a in sycl_device.get_info(sycl.info.device.aspects):
        assert a.name in h
    p = sycl_device.get_platform()._repr_html_()
    assert sycl_device.get_platform().get_info(sycl.info.platform.vendor) in p


def test_html_escapes_text(sycl_device: sycl.device) -> None:
    from pysycl._display import table

    assert "&lt;b&gt;" in table([("x", "<b>")])


def test_queue_and_profiled_event_html(sycl_device: sycl.device) -> None:
    q = sycl.queue(sycl_device, properties=[sycl.property.queue.enable_profiling()])
    assert "profiling" in q._repr_html_() and "True" in q._repr_html_()
    B = sycl.buffer(sycl.range(1 << 16), dtype=np.float32)
    ev = q.fill(sycl.accessor(B, None, sycl.access_mode.write), 1.0)
    ev.wait()
    h = ev._repr_html_()
    assert "complete" in h and "duration" in h and "µs" in h

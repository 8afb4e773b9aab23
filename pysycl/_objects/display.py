"""Rich display in Jupyter: ``_repr_html_`` tables for platforms, devices, queues, events, bundles.

Evaluating ``sycl.device()`` or ``sycl.platform.get_platforms()`` in a notebook
cell shows a readable table; ``repr()`` stays a one-liner for terminals.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pysycl import property as _prop
from pysycl._core.exceptions import exception
from pysycl._objects.info import info

if TYPE_CHECKING:  # below the classes it renders: types only
    from pysycl._bundles.kernel_bundle import kernel_bundle
    from pysycl._commands.event import event
    from pysycl._commands.queue import queue
    from pysycl._objects.device import device
    from pysycl._objects.platform import platform

_STYLE = "border-collapse:collapse;font-family:monospace;font-size:90%"
_TH = "text-align:left;padding:2px 8px;border-bottom:1px solid #999"
_TD = "text-align:left;padding:2px 8px;vertical-align:top"


def table(rows: Iterable[tuple[str, object]], title: str = "") -> str:
    """A two-column HTML table of (key, value) rows, escaped."""
    out = [f'<table style="{_STYLE}">']
    if title:
        out.append(f'<tr><th colspan="2" style="{_TH}">{html.escape(title)}</th></tr>')
    for k, v in rows:
        out.append(f'<tr><td style="{_TD}"><b>{html.escape(str(k))}</b></td>'
                   f'<td style="{_TD}">{html.escape(str(v))}</td></tr>')
    out.append("</table>")
    return "".join(out)


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def device_rows(dev: device) -> list[tuple[str, object]]:
    """The key facts of a device."""
    g = dev.get_info
    return [
        ("platform", dev.get_platform().get_info(info.platform.name)),
        ("type", g(info.device.device_type).name),
        ("version", g(info.device.version)),
        ("driver", g(info.device.driver_version)),
        ("compute units", g(info.device.max_compute_units)),
        ("max work-group size", g(info.device.max_work_group_size)),
        ("global memory", _fmt_bytes(g(info.device.global_mem_size))),
        ("local memory", _fmt_bytes(g(info.device.local_mem_size))),
        ("max allocation", _fmt_bytes(g(info.device.max_mem_alloc_size))),
        ("aspects", " ".join(a.name for a in g(info.device.aspects))),
    ]


def device_html(dev: device) -> str:
    """A device as an HTML table."""
    return table(device_rows(dev), title=f"sycl.device: {dev.get_info(info.device.name)}")


def platform_html(plat: platform) -> str:
    """A platform and its devices as HTML."""
    rows = [("vendor", plat.get_info(info.platform.vendor)),
            ("version", plat.get_info(info.platform.version)),
            ("backend", plat.get_backend().name)]
    for i, d in enumerate(plat.get_devices()):
        rows.append((f"device {i}", f"{d.get_info(info.device.name)} "
                                    f"[{d.get_info(info.device.device_type).name}]"))
    return table(rows, title=f"sycl.platform: {plat.get_info(info.platform.name)}")


def queue_html(q: queue) -> str:
    """A queue as an HTML table."""
    dev = q.get_device()
    return table([("device", dev.get_info(info.device.name)),
                  ("platform", dev.get_platform().get_info(info.platform.name)),
                  ("in order", q.is_in_order()),
                  ("profiling", q.has_property(_prop.queue.enable_profiling))],
                 title="sycl.queue")


def event_html(ev: event) -> str:
    """An event: its status, and profiling times when available."""
    try:
        status = ev.get_info(info.event.command_execution_status).name
    except exception as e:
        status = f"failed ({e.what()})"
    rows: list[tuple[str, object]] = [("status", status)]
    q = ev.queue
    profiled = q is not None and q.has_property(_prop.queue.enable_profiling)
    if profiled and ev.native is not None and status == "complete":
        p = info.event_profiling
        start = ev.get_profiling_info(p.command_start)
        end = ev.get_profiling_info(p.command_end)
        submit = ev.get_profiling_info(p.command_submit)
        rows += [("queued → start", f"{(start - submit) / 1e3:.1f} µs"),
                 ("duration", f"{(end - start) / 1e3:.1f} µs")]
    return table(rows, title="sycl.event")


def bundle_html(kb: kernel_bundle) -> str:
    """A kernel bundle: its state, devices, and one row per device image.

    Each image row gives the format, the kernels it holds (kernel ids by name, or
    the OpenCL names of source/interop images) and the aspects it requires.
    """
    rows: list[tuple[str, object]] = [
        ("state", kb.get_state().name),
        ("devices", ", ".join(d.get_info(info.device.name) for d in kb.devices)),
    ]
    for i, img in enumerate(kb.images):
        names = sorted(k.get_name() for k in img.kernel_ids) or list(img.names)
        aspects = " ".join(sorted(img.aspects)) or "-"
        rows.append((f"image {i}", f"{img.format} [{', '.join(names)}] requires: {aspects}"))
    return table(rows, title="sycl.kernel_bundle")


class object_list(list):  # type: ignore[type-arg]  # noqa: N801
    """A plain list of platforms or devices that also renders as one table in Jupyter.

    ``sycl.platform.get_platforms()`` and ``sycl.device.get_devices()`` return it;
    it is a ``list`` in every other respect.
    """

    __slots__ = ()

    def _repr_html_(self) -> str:
        rows: list[tuple[str, object]] = []
        for i, obj in enumerate(self):
            if hasattr(obj, "get_platform"):  # a device
                rows.append((f"[{i}] {obj.get_info(info.device.name)}",
                             f"{obj.get_info(info.device.device_type).name} · "
                             f"{obj.get_platform().get_info(info.platform.name)} · "
                             + " ".join(a.name for a in obj.get_info(info.device.aspects))))
            else:
                rows.append((f"[{i}] {obj.get_info(info.platform.name)}",
                             f"{obj.get_info(info.platform.version)} · "
                             + ", ".join(d.get_info(info.device.name) for d in obj.get_devices())))
        return table(rows, title=f"{len(self)} item(s)")

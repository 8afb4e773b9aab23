"""Rich display in Jupyter: the HTML table that ``_repr_html_`` of platforms, devices,
queues, events and bundles render their rows into.

Evaluating ``sycl.device()`` or ``sycl.platform.get_platforms()`` in a notebook
cell shows a readable table; ``repr()`` stays a one-liner for terminals. Each class
builds its own ``(key, value)`` rows (it knows its facts); this module only renders
them, so it imports none of the classes it shows.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from pysycl._objects.info import info

_STYLE = "border-collapse:collapse;font-family:monospace;font-size:90%"
_TH = "text-align:left;padding:2px 8px;border-bottom:1px solid #999"
_TD = "text-align:left;padding:2px 8px;vertical-align:top"

#: A table's rows: ``(key, value)`` pairs, both shown as escaped text.
Rows = list[tuple[str, object]]


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


def fmt_bytes(n: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 KiB``, ... ``2.0 TiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


class object_list(list):  # type: ignore[type-arg]  # noqa: N801
    """A plain list of platforms or devices that also renders as one table in Jupyter.

    ``sycl.platform.get_platforms()`` and ``sycl.device.get_devices()`` return it;
    it is a ``list`` in every other respect.
    """

    __slots__ = ()

    def _repr_html_(self) -> str:
        rows: Rows = []
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

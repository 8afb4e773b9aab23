"""The memory model's enums (SYCL 2020 §3.8.3): ``memory_order``, ``memory_scope``.

Used by the host API, the kernel API and the compiler alike, hence in ``_core``.
"""

from __future__ import annotations

import enum


class memory_order(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::memory_order`` (§3.8.3.1)."""

    def __repr__(self) -> str:
        return f"sycl.memory_order.{self.name}"

    relaxed = "relaxed"
    acquire = "acquire"
    release = "release"
    acq_rel = "acq_rel"
    seq_cst = "seq_cst"


class memory_scope(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::memory_scope`` (§3.8.3.2)."""

    def __repr__(self) -> str:
        return f"sycl.memory_scope.{self.name}"

    work_item = "work_item"
    sub_group = "sub_group"
    work_group = "work_group"
    device = "device"
    system = "system"

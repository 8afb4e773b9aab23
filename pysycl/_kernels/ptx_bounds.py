"""Launch bounds of PTX images: ``.maxntid`` for work-groups wider than NVIDIA's promise.

NVIDIA's OpenCL reports ``CL_KERNEL_WORK_GROUP_SIZE`` 256 for every kernel on an
H100 (measured: pysycl's PTX, and an OpenCL C ``axpy`` of 10 registers, even one
declaring ``reqd_work_group_size(1024, 1, 1)``), while it runs those kernels with
512 and 1024 work-items. 256 is what a kernel without a launch bound is sure to
get: up to 255 registers a thread, 65536 a block. A kernel whose PTX declares
``.maxntid N`` (PTX ISA, "Performance-tuning directives") is assembled to fit N
threads a block (the assembler caps its registers at 65536 / N and spills the
rest), so it runs N wide.

pysycl keeps one image per kernel and target, without a bound (the whole
register file for the common work-groups of up to 256), and builds it once more
per bound an ``nd_range`` launch needs: :func:`launch_bound` rounds the
work-group size up to a power of two (512 or 1024 on an H100), and
:func:`with_launch_bound` writes the directive into the PTX text, the way
:mod:`pysycl._kernels.ptx_specconst` writes specialization constants: no Numba,
one driver build per bound.
"""

from __future__ import annotations

import re


def launch_bound(size: int, device_max: int) -> int:
    """The bound a work-group of ``size`` work-items is built for: the next power of
    two, at most ``device_max`` (``info.device.max_work_group_size``)."""
    return min(device_max, 1 << (size - 1).bit_length())


def with_launch_bound(ptx: bytes, entry: str, n: int) -> bytes:
    """``ptx`` with ``.maxntid n, 1, 1`` on the entry point ``entry``.

    The directive goes between the entry's parameter list and its body; the
    product of its extents is the bound, whatever the launch's shape.

    Raises:
        ValueError: ``ptx`` has no entry ``entry`` or already declares a bound for it
            (not an image pysycl compiled; the kernel cache reports ``errc.build``).
            An entry with ``.reqntid`` (a required work-group size) is returned as it is.
    """
    m = re.search(rb"\.entry[ \t]+" + re.escape(entry.encode()) + rb"[ \t]*\(", ptx)
    body = -1 if m is None else ptx.find(b"{", ptx.find(b")", m.end()))
    if m is None or body < 0:
        raise ValueError(f"the PTX image has no entry point {entry!r}")
    if re.search(rb"\.reqntid\b", ptx[m.end():body]):
        return ptx  # a required work-group size (sycl.reqd_work_group_size): bound already
    if re.search(rb"\.maxntid\b", ptx[m.end():body]):
        raise ValueError(f"the PTX entry point {entry!r} already declares a launch bound")
    return ptx[:body] + f".maxntid {n}, 1, 1\n".encode() + ptx[body:]

"""Specialization constants of PTX images: rewrite the defaults in the PTX text.

PTX has no specialization constants. The compiler's PTX target reads constant
``SpecId`` n from a global of the constant state space, initialised with its
default (``pysycl_numba.targets.ptx.specconst``)::

    .const .align 4 .u32 __pysycl_sc_0 = -3;

The global is an integer of the constant's width holding its bit pattern
(``bool``: a ``.u8`` holding 0 or 1). Specialising an image is replacing the
initializer, the PTX equivalent of the SPIR-V emulation in
:func:`pysycl._kernels.specconst.patch_spirv`: no Numba, one driver build per
distinct set of values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from pysycl._core.exceptions import errc, exception

_GLOBAL = re.compile(
    rb"^(?P<decl>[ \t]*\.const[ \t]+\.align[ \t]+\d+[ \t]+\.[ubs](?P<bits>8|16|32|64)[ \t]+"
    rb"__pysycl_sc_(?P<id>\d+))(?:[ \t]*=[ \t]*[^;\n]*)?;", re.M)  # a zero default: no "="


def _literal(value: np.generic, bits: int, sid: int) -> bytes:
    """The PTX integer literal of ``value``'s bit pattern in a ``bits``-wide global."""
    v = np.asarray(value)
    if v.dtype == np.bool_:
        raw = 1 if bool(v) else 0
        width = 8
    else:
        width = v.dtype.itemsize * 8
        raw = int.from_bytes(v.tobytes(), "little")
    if width != bits:
        raise exception(errc.build, f"specialization constant {sid}: a value of {v.dtype} "
                                    f"({width} bits) for a {bits}-bit constant of the PTX image")
    return str(raw - (1 << bits) if raw >= 1 << (bits - 1) else raw).encode()


def specialize_ptx(ptx: bytes, values: Sequence[tuple[int, np.generic]]) -> bytes:
    """``ptx`` with the default of each specialization constant ``(SpecId, value)`` replaced.

    A ``SpecId`` the image does not read (the kernel never used the constant, or
    the compiler removed the read) is skipped, as ``patch_spirv`` skips it.

    Args:
        ptx: PTX text of a kernel compiled by pysycl.
        values: ``(SpecId, value)`` pairs; the value a numpy scalar of the
            constant's type (``np.bool_`` for ``bool``).

    Returns:
        The PTX text to build.

    Raises:
        pysycl.exception: ``errc.build`` when a value's width differs from the
            constant's in the image (the image and the values do not belong together).
    """
    wanted = dict(values)
    if not wanted:
        return ptx

    def replace(m: re.Match[bytes]) -> bytes:
        sid = int(m.group("id"))
        if sid not in wanted:
            return m.group(0)
        return m.group("decl") + b" = " + _literal(wanted[sid], int(m.group("bits")), sid) + b";"

    return _GLOBAL.sub(replace, ptx)

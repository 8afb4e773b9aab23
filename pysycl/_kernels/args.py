"""The OpenCL arguments of a launch, from the captured values and their :class:`ArgKind`.

The layout is the ABI's (:mod:`pysycl._core.abi`): a global accessor passes its
buffer's ``cl_mem`` in the queue's context, then its offset and ranges; a local
accessor a ``clSetKernelArg(NULL)`` size, then its range; a USM pointer its SVM
address; a spec id nothing.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from pysycl._core.abi import ArgKind

if TYPE_CHECKING:
    from collections.abc import Hashable

    from pysycl._objects.range import range as range_

_SCALAR, _ACCESSOR, _LOCAL, _SCALARS, _POINTER = (
    ArgKind.SCALAR, ArgKind.ACCESSOR, ArgKind.LOCAL_ACCESSOR, ArgKind.SCALARS, ArgKind.POINTER)
_cl_mod: list[ModuleType] = []


def cl() -> ModuleType:
    """:mod:`pysycl._backends.opencl.exec`, imported on first use (``import pysycl`` stays light)."""
    if not _cl_mod:
        from pysycl._backends.opencl import exec as x

        _cl_mod.append(x)
    return _cl_mod[0]


def flat_args(values: list[Any], kinds: tuple[ArgKind, ...], key: Hashable) -> list[Any]:
    """The OpenCL arguments of captured ``values`` for the queue whose executor's key is ``key``
    (the copy of each accessor's buffer that queue uses).

    Local accessors must have been replaced by :func:`with_local_memory` first.
    """
    args: list[Any] = []
    for v, kind in zip(values, kinds, strict=False):
        if kind is _ACCESSOR:
            args.append(v.coherence.dev[key])
            args.extend(v.kernel_tail)
        elif kind is _SCALAR:
            args.append(v)
        elif kind is _LOCAL:
            args.append(v[0])
            args.extend(v[1])
        elif kind is _SCALARS:
            args.extend(v)
        elif kind is _POINTER:  # a USM pointer: its backend argument, made once
            karg = v._karg
            if karg is None:
                karg = v._karg = v._alloc.native.kernel_arg(v._offset)
            args.append(karg)
    return args


def with_local_memory(values: list[Any], kinds: tuple[ArgKind, ...]) -> list[Any]:
    """``values`` with each local accessor as ``(cl.LocalMemory of its size, its range)``."""
    x = cl()
    return [(x.local_memory(v.byte_size()), v.kernel_tail) if kind is _LOCAL else v
            for v, kind in zip(values, kinds, strict=True)]


def accessor_ranges(values: list[Any], kinds: tuple[ArgKind, ...]) -> list[range_ | None]:
    """The range of each (global or local) accessor capture, None for the others."""
    return [v.get_range() if kind is _ACCESSOR or kind is _LOCAL else None
            for v, kind in zip(values, kinds, strict=True)]


def local_bytes(values: list[Any], kinds: tuple[ArgKind, ...]) -> int:
    """Local memory the local accessors among ``values`` need per work-group."""
    return sum(v.byte_size() for v, kind in zip(values, kinds, strict=True) if kind is _LOCAL)

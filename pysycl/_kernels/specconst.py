"""Specialization constants: ``specialization_id``, ``kernel_handler`` and their runtime.

How a kernel reads one (docs/bundles.md, "Specialization constants"):

* the kernel takes a trailing ``kh`` parameter (a :class:`kernel_handler`) and
  captures a :class:`specialization_id` (closure cell or module global);
* the launcher records the captured id as a capture of type
  :class:`pysycl._core.abi.SpecConstantType` (no OpenCL argument); the
  compiler numbers the kernel's spec-id captures ``0, 1, ...`` in capture
  order and lowers ``kh.get_specialization_constant(sid)`` to a SPIR-V
  ``OpSpecConstant`` (``OpSpecConstantTrue/False`` for ``bool``) decorated
  ``SpecId n`` holding the id's default;
* values are applied when the SPIR-V module becomes an OpenCL program:
  **native** — ``clSetProgramSpecializationConstant`` before the build, on
  devices that load SPIR-V with OpenCL ≥ 2.2; **emulated** otherwise (or when
  ``PYSYCL_EMULATE_SPEC_CONSTANTS=1``) — the runtime rewrites the default
  literals of the ``OpSpecConstant`` instructions in the SPIR-V words. Either
  way Numba never runs again; each distinct set of values is one OpenCL build
  (cached per context, device and values).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pysycl._core.abi import SpecConstantType
from pysycl._core.exceptions import errc, exception
from pysycl._kernels.ptx_specconst import specialize_ptx

if TYPE_CHECKING:
    import types

    from numpy.typing import DTypeLike

    from pysycl._core.abi import Capture
    from pysycl._objects.device import device


class _HasSpecs(Protocol):
    """A kernel bundle's input image as these helpers read it: its kernels' spec ids."""

    @property
    def specs(self) -> dict[str, tuple[specialization_id | None, ...]]: ...


#: Tests flip this to exercise the emulated path on a device that is native.
_force_emulation = os.environ.get("PYSYCL_EMULATE_SPEC_CONSTANTS", "") not in ("", "0")


class specialization_id:  # noqa: N801 - the spec's spelling
    """``sycl::specialization_id<T>``: identifies a specialization constant.

    Capture it in a kernel that takes a ``kernel_handler`` and read it with
    ``kh.get_specialization_constant(spec_id)``. Identity matters (like the
    address of a C++ ``specialization_id`` variable): two ids with the same
    type and default are different constants.

    Args:
        dtype: the constant's type: a numpy dtype or type, ``int`` (int64),
            ``float`` (float64) or ``bool``.
        default: its default value.
    """

    __slots__ = ("__weakref__", "_default", "_dtype")

    def __init__(self, dtype: DTypeLike, default: Any = 0) -> None:
        dt = np.dtype(dtype)
        if dt.kind not in "biuf" or dt.itemsize > 8:
            raise TypeError(f"specialization_id: {dt} is not a supported type (bool, integers "
                            "and float16/32/64)")
        self._dtype = dt
        self._default = self._convert(default)

    def _convert(self, value: Any) -> np.generic:
        try:
            return np.asarray(value, dtype=self._dtype)[()]
        except (TypeError, ValueError, OverflowError) as e:
            raise TypeError(f"specialization constant of {self._dtype}: bad value {value!r}") from e

    @property
    def default_value(self) -> np.generic:
        """The default value, a numpy scalar of the constant's type."""
        return self._default

    def convert(self, value: Any) -> np.generic:
        """``value`` as a numpy scalar of the constant's type (``TypeError`` if it is not one)."""
        return self._convert(value)

    @property
    def kernel_type(self) -> SpecConstantType:
        """The constant's type in the runtime/compiler ABI (dtype and default)."""
        return self._type()

    def _type(self) -> SpecConstantType:
        return SpecConstantType(self._dtype, self._default.item())

    def __repr__(self) -> str:
        return f"sycl.specialization_id({self._dtype}, {self._default!r})"


def check_spec_id(spec_id: specialization_id) -> None:
    """``TypeError`` unless ``spec_id`` is a :class:`specialization_id`."""
    if not isinstance(spec_id, specialization_id):
        raise TypeError(f"expected a sycl.specialization_id, not {type(spec_id).__name__}")


class kernel_handler:  # noqa: N801 - the spec's spelling
    """``sycl::kernel_handler``: the optional last parameter of a kernel.

    ``h.parallel_for(r, lambda i, kh: ...)``, ``h.single_task(lambda kh: ...)``;
    inside the kernel, ``kh.get_specialization_constant(spec_id)`` reads a
    specialization constant (compiled to a SPIR-V ``OpSpecConstant``). The
    object is created by the runtime; it has no public constructor.
    """

    __slots__ = ("_values",)

    def __init__(self) -> None:
        raise TypeError("sycl.kernel_handler has no public constructor: declare it as the last "
                        "kernel parameter")

    def get_specialization_constant(self, spec_id: specialization_id) -> np.generic:
        """The constant's value for this launch (device code; see the class doc)."""
        check_spec_id(spec_id)
        return self._values.get(spec_id, spec_id.default_value)


def host_kernel_handler(values: dict[specialization_id, np.generic] | None) -> kernel_handler:
    """The ``kernel_handler`` a kernel on the host device gets: ``values`` by ``specialization_id``."""
    kh = object.__new__(kernel_handler)
    kh._values = dict(values or {})
    return kh


# ------------------------------------------------------------------ runtime
def spec_ids_of(fn: types.FunctionType, captures: Sequence[Capture]) -> tuple[specialization_id | None, ...]:
    """The ``specialization_id`` objects a kernel function captures, in SpecId order."""
    out: list[specialization_id | None] = []
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False))
    for c in captures:
        if not isinstance(c.type, SpecConstantType):
            continue
        v: Any = None
        if c.source == "freevar" and c.name in cells:
            try:
                v = cells[c.name].cell_contents
            except ValueError:
                v = None
        elif c.source == "global":
            v = fn.__globals__.get(c.name)
        out.append(v if isinstance(v, specialization_id) else None)
    return tuple(out)


def values_for(ids: Sequence[specialization_id | None],
               table: dict[specialization_id, np.generic] | None
               ) -> tuple[np.generic | None, ...]:
    """The value of each id (from ``table``, else its default), as numpy scalars."""
    out = []
    for sid in ids:
        if sid is None:
            out.append(None)
        elif table and sid in table:
            out.append(table[sid])
        else:
            out.append(sid.default_value)
    return tuple(out)


def value_key(values: Sequence[np.generic | None]) -> tuple[tuple[str, bytes] | None, ...]:
    """A hashable, exact key of a tuple of values (bit patterns: -0.0 and NaN differ)."""
    return tuple(None if v is None else (v.dtype.str, v.tobytes()) for v in values)


def is_native(dev: device) -> bool:
    """Whether ``dev`` applies values with ``clSetProgramSpecializationConstant``.

    OpenCL 2.2 introduced the call; a 3.0 device that loads SPIR-V supports it.
    """
    if _force_emulation:
        return False
    from pysycl._objects.aspects import aspect

    if not dev.has(aspect.ext_pysycl_spirv):
        return False
    try:
        major, minor = (int(x) for x in dev.native.version.split()[1].split(".")[:2])
    except (ValueError, IndexError, AttributeError):
        return False
    return (major, minor) >= (2, 2)


# SPIR-V opcodes and decoration numbers (SPIR-V spec, 3.32 and 3.20).
_OP_DECORATE = 71
_OP_SPEC_TRUE, _OP_SPEC_FALSE, _OP_SPEC = 48, 49, 50
_DEC_SPEC_ID = 1
_HEADER_WORDS = 5


def _literal_words(v: np.generic) -> list[int]:
    """The literal words of value ``v`` (low-order word first, narrow types zero-extended)."""
    raw = v.tobytes()
    if len(raw) < 4:
        raw = raw + b"\x00" * (4 - len(raw))
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


def patch_spirv(il: bytes, values: Sequence[np.generic | None]) -> bytes:
    """Emulation: ``il`` with the defaults of its spec constants replaced by ``values``.

    ``values[i]`` goes to the constant decorated ``SpecId i`` (``None``: keep the
    default). ``OpSpecConstantTrue/False`` switch opcode for ``bool``.
    """
    if not any(v is not None for v in values):
        return il
    words = list(struct.unpack(f"<{len(il) // 4}I", il))
    if words[0] != 0x07230203:
        raise exception(errc.build, "patching specialization constants: not a little-endian "
                        "SPIR-V module")
    spec_of: dict[int, int] = {}  # result id -> SpecId
    pos = _HEADER_WORDS
    while pos < len(words):
        count, op = words[pos] >> 16, words[pos] & 0xFFFF
        if op == _OP_DECORATE and count >= 4 and words[pos + 2] == _DEC_SPEC_ID:
            spec_of[words[pos + 1]] = words[pos + 3]
        pos += max(count, 1)
    out: list[int] = words[:_HEADER_WORDS]
    pos = _HEADER_WORDS
    while pos < len(words):
        count, op = words[pos] >> 16, words[pos] & 0xFFFF
        inst = words[pos:pos + max(count, 1)]
        pos += max(count, 1)
        if op in (_OP_SPEC_TRUE, _OP_SPEC_FALSE, _OP_SPEC) and count >= 3:
            sid = spec_of.get(inst[2])
            v = values[sid] if sid is not None and sid < len(values) else None
            if v is not None:
                if op == _OP_SPEC:
                    lits = _literal_words(v)
                    inst = [((3 + len(lits)) << 16) | _OP_SPEC, inst[1], inst[2], *lits]
                else:
                    inst = [(3 << 16) | (_OP_SPEC_TRUE if bool(v) else _OP_SPEC_FALSE),
                            inst[1], inst[2]]
        out.extend(inst)
    return struct.pack(f"<{len(out)}I", *out)


def image_values(img: _HasSpecs, spec: dict[specialization_id, np.generic] | None
                 ) -> tuple[np.generic | None, ...]:
    """Values of an input image's spec constants from a bundle's table (else defaults)."""
    ids = next(iter(img.specs.values()), ())  # an input image holds one kernel variant
    return values_for(ids, spec)


def image_key(img: _HasSpecs, spec: dict[specialization_id, np.generic] | None) -> tuple[str, ...]:
    """Digest parts naming an image's spec constant values (none without spec constants)."""
    return (repr(value_key(image_values(img, spec))),) if img.specs else ()


def program_for(programs: Any, ctx_native: Any, devs: Sequence[device], il: bytes,
                values: Sequence[np.generic | None]) -> Any:
    """A raw (unbuilt) program of ``il`` with ``values`` applied for ``devs``, made by the
    backend's ``programs`` (:class:`pysycl._core.backends.Programs`).

    Native when every device supports it, else the SPIR-V literals are rewritten.
    """
    from pysycl._core.spirv_check import check as check_spirv

    check_spirv(il)  # before patch_spirv walks it
    if devs and all(is_native(d) for d in devs):
        return programs.from_il_specialized(ctx_native, il, values)
    return programs.from_il(ctx_native, patch_spirv(il, values))


def ptx_for(ptx: bytes, values: Sequence[np.generic | None]) -> bytes:
    """A PTX image with specialization constant values (by SpecId; None: the default)
    applied to its ``.const`` initializers (:mod:`pysycl._kernels.ptx_specconst`)."""
    return specialize_ptx(ptx, [(i, v) for i, v in enumerate(values) if v is not None])


__all__ = ["kernel_handler", "specialization_id"]

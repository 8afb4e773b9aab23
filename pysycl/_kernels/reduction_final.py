"""The final step of a ``sycl.reduction``: a kernel that folds the work-groups' partials.

The main kernel (:mod:`pysycl._kernels.reduction`) leaves one partial result per
work-group (a span reduction: one row of ``n`` per work-group). The final
kernel folds them -- and the variable's old value unless
``initialize_to_identity`` -- into the reduction variable: element 0 of an
accessor or of a USM pointer, or the ``n`` elements of a span.

One final kernel serves every known operator of a dtype and variable kind (the
operator's ``ReductionOp`` code is a kernel argument, a uniform branch), so a
program using several operators compiles it once per dtype; a custom combiner
gets its own.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pysycl._core.abi import AccessorType, IndexSpace, PointerType, ReductionOp, ScalarType
from pysycl._kernels.cache import Kernel, kernels
from pysycl._kernels.captures import captures_of
from pysycl._kernels.digest import stable_digest
from pysycl._kernels.kernel_api import group_barrier

if TYPE_CHECKING:
    from pysycl._core.abi import CaptureType
    from pysycl._core.backends import DeviceExecutor
    from pysycl._memory.accessor import accessor
    from pysycl._memory.usm import usm_pointer


class reduction(Protocol):  # noqa: N801 - what this module reads of a sycl.reduction
    """What the final step reads of a ``sycl.reduction`` (:mod:`pysycl._kernels.reduction`)."""

    @property
    def variable_kind(self) -> str: ...
    @property
    def accessor(self) -> accessor: ...
    @property
    def pointer(self) -> usm_pointer: ...
    @property
    def count(self) -> int: ...
    @property
    def op(self) -> str: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def identity(self) -> np.generic: ...
    @property
    def combiner(self) -> Callable[..., Any]: ...
    @property
    def initialize_to_identity(self) -> bool: ...


# ----------------------------------------------------------- known operators
# The known SYCL function objects as Python functions: the compiler combines
# with them like with a user's combiner (they inline to one instruction).
def _plus(a: Any, b: Any) -> Any:
    return a + b


def _multiplies(a: Any, b: Any) -> Any:
    return a * b


def _minimum(a: Any, b: Any) -> Any:
    return a if a < b else b  # sycl::minimum: (x < y) ? x : y


def _maximum(a: Any, b: Any) -> Any:
    return a if a > b else b


def _bit_and(a: Any, b: Any) -> Any:
    return a & b


def _bit_or(a: Any, b: Any) -> Any:
    return a | b


def _bit_xor(a: Any, b: Any) -> Any:
    return a ^ b


def _logical_and(a: Any, b: Any) -> Any:
    return 1 if (a != 0 and b != 0) else 0


def _logical_or(a: Any, b: Any) -> Any:
    return 1 if (a != 0 or b != 0) else 0


COMBINERS: dict[str, Callable[[Any, Any], Any]] = {
    "plus": _plus, "multiplies": _multiplies, "minimum": _minimum, "maximum": _maximum,
    "bit_and": _bit_and, "bit_or": _bit_or, "bit_xor": _bit_xor,
    "logical_and": _logical_and, "logical_or": _logical_or,
}
assert list(COMBINERS) == [op.name for op in ReductionOp]


# ------------------------------------------------------------- final kernel
# Numba types enum *members* read from globals (compile-time constants), not
# attributes of an enum class: hence these names.
(_PLUS, _MULTIPLIES, _MINIMUM, _MAXIMUM, _BIT_AND, _BIT_OR, _BIT_XOR, _LOGICAL_AND,
 _LOGICAL_OR) = ReductionOp


def _int_bitwise(opc: Any, a: Any, b: Any) -> Any:
    if opc == _BIT_AND:
        return a & b
    if opc == _BIT_OR:
        return a | b
    return a ^ b


def _no_bitwise(opc: Any, a: Any, b: Any) -> Any:
    return a  # never called: bitwise reductions of floats are refused by sycl.reduction


def _known_combiner(dt: type, integer: bool) -> Callable[..., Any]:
    bitwise = _int_bitwise if integer else _no_bitwise  # `a & b` does not type for floats

    def comb(opc: Any, a: Any, b: Any) -> Any:
        if opc == _PLUS:
            return dt(a + b)
        if opc == _MULTIPLIES:
            return dt(a * b)
        if opc == _MINIMUM:
            return a if a < b else b
        if opc == _MAXIMUM:
            return a if a > b else b
        if opc == _LOGICAL_AND:
            return dt(1 if (a != 0 and b != 0) else 0)
        if opc == _LOGICAL_OR:
            return dt(1 if (a != 0 or b != 0) else 0)
        return dt(bitwise(opc, a, b))

    return comb


def _custom_combiner(user: Callable[..., Any], dt: type) -> Callable[..., Any]:
    def comb(opc: Any, a: Any, b: Any) -> Any:
        return dt(user(a, b))

    return comb


def _make_final(comb: Callable[..., Any]) -> Callable[..., Any]:
    # Placeholders: these names become kernel arguments (captures).
    part = out = tmp = npart = ident = keep = opc = None

    def _pysycl_reduction_final(it: Any) -> None:
        lid = it.get_local_id(0)
        nl = it.get_local_range(0)
        a = ident
        i = lid
        while i < npart:
            a = comb(opc, a, part[i])
            i += nl
        tmp[lid] = a
        group_barrier(it.get_group())
        n = nl
        while n > 1:
            half = (n + 1) >> 1
            if lid + half < n:
                tmp[lid] = comb(opc, tmp[lid], tmp[lid + half])
            group_barrier(it.get_group())
            n = half
        if lid == 0:
            if keep:
                out[0] = comb(opc, out[0], tmp[0])
            else:
                out[0] = tmp[0]

    return _pysycl_reduction_final


def _make_span_final(comb: Callable[..., Any]) -> Callable[..., Any]:
    # Placeholders: these names become kernel arguments (captures).
    part = out = npart = nspan = ident = keep = opc = None

    def _pysycl_span_reduction_final(it: Any) -> None:
        j = it.get_global_id(0)
        if j < nspan:  # element j: the column j of the groups' rows
            a = ident
            g = 0
            while g < npart:
                a = comb(opc, a, part[g * nspan + j])
                g += 1
            if keep:
                out[j] = comb(opc, out[j], a)
            else:
                out[j] = a

    return _pysycl_span_reduction_final


def _final_captures(fn: types.FunctionType, dt: np.dtype, pointer: bool
                    ) -> list[tuple[str, str, CaptureType]]:
    kinds: dict[str, CaptureType] = {
        "part": AccessorType(dt, 1, "read"),
        "out": PointerType(dt) if pointer else AccessorType(dt, 1, "read_write"),
        "tmp": AccessorType(dt, 1, "read_write", "local"),
        "npart": ScalarType(np.dtype(np.int64)),
        "nspan": ScalarType(np.dtype(np.int64)),
        "ident": ScalarType(dt),
        "keep": ScalarType(np.dtype(np.bool_)),
        "opc": ScalarType(np.dtype(np.int32)),
    }
    return [(n, "freevar", kinds[n]) for n in fn.__code__.co_freevars if n in kinds]


def final_kernel(r: reduction, ckey: Hashable, target: tuple[str, str]) -> Kernel:
    """The final kernel of reduction ``r`` (``ckey``: its combiner's cache key)."""
    what = "custom" if r.op == "custom" else "known"
    var = r.variable_kind
    key = ("reduction_final", ckey if what == "custom" else what, r.dtype, var, target)

    def make() -> Kernel:
        dt = r.dtype.type
        comb = (_custom_combiner(r.combiner, dt) if what == "custom"
                else _known_combiner(dt, r.dtype.kind in "iu"))
        fn = _make_span_final(comb) if var == "span" else _make_final(comb)
        captures = captures_of(_final_captures(fn, r.dtype, var != "accessor"))
        index = IndexSpace("nd_range", 1)
        return kernels.load_or_compile(stable_digest(fn, captures, index), fn, index, captures,
                                       f"reduction_final<{r.dtype},{what},{var}>",
                                       target=target)

    return kernels.once(key, make)  # uncounted: the stats count the user's kernels


def final_sizes(r: reduction, groups: int, limit: int) -> tuple[int, int]:
    """(global size, local size) of ``r``'s final kernel (``limit``: its work-group limit)."""
    if r.variable_kind == "span":
        wg = max(1, min(64, limit, r.count))
        return -(-r.count // wg) * wg, wg
    wg = max(1, min(256, limit, groups))
    return wg, wg


def final_layout(fk: Kernel, r: reduction, part: Any, groups: int, fl: int, ex: DeviceExecutor
                 ) -> tuple[list[Any], int, int, int, int]:
    """Final kernel ``fk``'s arguments for reduction ``r`` but those that change between
    launches (``fl``: its work-group size): ``(template, out's position, out's width,
    identity's position, keep's position)`` -- the variable, the identity and
    ``initialize_to_identity`` are filled in per launch
    (:class:`pysycl._kernels.reduction_plan.FinalStep`)."""
    fixed: dict[str, tuple[Any, ...]] = {
        "part": (part, 0, max(groups * r.count, 1)),
        "out": (None,) * (3 if r.variable_kind == "accessor" else 1),
        "tmp": (ex.local_memory(fl * r.dtype.itemsize), fl),
        "npart": (groups,), "nspan": (r.count,), "ident": (None,), "keep": (None,),
        "opc": (np.int32(ReductionOp[r.op] if r.op != "custom" else -1),)}
    flat: list[Any] = []
    at: dict[str, int] = {}
    for c in fk.compiled.captures:
        at[c.name] = len(flat)
        flat.extend(fixed[c.name])
    return flat, at["out"], len(fixed["out"]), at["ident"], at["keep"]

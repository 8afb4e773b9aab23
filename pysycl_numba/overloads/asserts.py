"""``assert_fail(layout, values)``: a failing kernel ``assert``, typed and lowered.

:mod:`pysycl_numba.asserts` rewrites each assert of the user's code into this
call before a static raise. Lowering numbers the assert in the compile's table
(its site and its message's pieces, the numbers tagged with their dtype as
``print`` tags them) and writes the failure into the work-item's record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pysycl._core.abi import PRINT_FORMAT
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    errors,
    signature,
    types,
)
from pysycl_numba.asserts import AssertTable, assert_fail, record_failure, table
from pysycl_numba.bounds import site_number
from pysycl_numba.overloads.printing import _bits64, number_code
from pysycl_numba.types import AssertLayoutType, tag

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.asserts")
lower = lowering_registry.lower


@typing_registry.register_global(assert_fail)
class AssertFail(AbstractTemplate):
    """``assert_fail(layout, (numbers...))`` returns None."""

    def generic(self, args: tuple[types.Type, ...], kws: dict[str, types.Type]) -> Signature | None:
        """The message's values are numbers (bool, int8..uint64, float16/32/64)."""
        if len(args) != 2 or not isinstance(args[0], AssertLayoutType) \
                or not isinstance(args[1], types.BaseTuple):
            return None
        for t in args[1].types:
            if number_code(t) is None:
                raise errors.TypingError(
                    f"an assert's message in a kernel shows numbers (bool, integers, floats) "
                    f"and text, not a {t}: show its parts (int(i) or it[0] of a sycl.item; "
                    "z.real and z.imag of a complex number; a value read from an accessor)")
        return signature(types.none, *args)


lowering_registry.lower_constant(AssertLayoutType)(lambda context, builder, ty, pyval: tag())


@lower(assert_fail, AssertLayoutType, types.BaseTuple)
def lower_assert_fail(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                      args: Sequence[llir.Value]) -> llir.Value:
    """Number the assert in the compile's table; record the failure."""
    _, values = args
    vtypes = sig.args[1].types
    pieces = sig.args[0].pieces
    tagged = None if pieces is None else tuple(
        p if isinstance(p, str) else int(number_code(vtypes[p])) | PRINT_FORMAT  # type: ignore[arg-type]
        for p in pieces)
    asserts = table.get(None) or AssertTable()  # a device function compiled on its own
    number = asserts.add(site_number(getattr(builder, "pysycl_loc", None)), tagged)
    bits = [_bits64(builder, t, builder.extract_value(values, k)) for k, t in enumerate(vtypes)]
    record_failure(builder, number, bits)
    return context.get_dummy_value()

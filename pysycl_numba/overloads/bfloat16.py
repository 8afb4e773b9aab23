"""``sycl.ext.oneapi.bfloat16.from_float`` / ``to_float`` in kernels: integer ops on the bits.

``from_float(x)``: ``x`` as float32, its bits ``u``; round to nearest even
``(u + 0x7FFF + ((u >> 16) & 1)) >> 16``; a NaN keeps its sign and high payload, made
quiet (``(u >> 16) | 0x40``); an ``np.uint16``. ``to_float(b)``: ``b << 16`` as a float32.
The same as the host implementation (``pysycl._core.bfloat16.py``), which the
host_debuggable device runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llvmlite import ir as llir

from pysycl._core import bfloat16 as bf16_api
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    signature,
    types,
)

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import BaseContext

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.bfloat16")

_I16, _I32, _F32 = llir.IntType(16), llir.IntType(32), llir.FloatType()


@typing_registry.register_global(bf16_api.from_float)
class FromFloat(AbstractTemplate):
    """``from_float(number) -> uint16``."""

    def generic(self, args: tuple, kws: dict) -> Any:
        if kws or len(args) != 1:
            return None
        (x,) = (types.unliteral(a) for a in args)
        if isinstance(x, (types.Float, types.Integer, types.Boolean)):
            return signature(types.uint16, x)
        return None


@typing_registry.register_global(bf16_api.to_float)
class ToFloat(AbstractTemplate):
    """``to_float(integer bits) -> float32``."""

    def generic(self, args: tuple, kws: dict) -> Any:
        if kws or len(args) != 1:
            return None
        (b,) = (types.unliteral(a) for a in args)
        if isinstance(b, types.Integer):
            return signature(types.float32, b)
        return None


@lowering_registry.lower(bf16_api.from_float, types.Any)
def from_float(context: BaseContext, builder: llir.IRBuilder, sig: Any, args: Any) -> llir.Value:
    """Round a float32 to the nearest bfloat16, ties to even; NaN stays (quiet) NaN."""
    f = context.cast(builder, args[0], sig.args[0], types.float32)
    u = builder.bitcast(f, _I32)
    high = builder.lshr(u, _I32(16))
    lsb = builder.and_(high, _I32(1))
    rounded = builder.lshr(builder.add(builder.add(u, _I32(0x7FFF)), lsb), _I32(16))
    nan = builder.or_(high, _I32(0x40))
    bits = builder.select(builder.fcmp_unordered("uno", f, f), nan, rounded)
    return builder.trunc(bits, _I16)


@lowering_registry.lower(bf16_api.to_float, types.Integer)
def to_float(context: BaseContext, builder: llir.IRBuilder, sig: Any, args: Any) -> llir.Value:
    """The float32 whose high half is the bfloat16's bits."""
    b = context.cast(builder, args[0], sig.args[0], types.uint16)
    return builder.bitcast(builder.shl(builder.zext(b, _I32), _I32(16)), _F32)

"""``math.ldexp``, ``frexp``, ``nextafter``, ``gcd`` and ``log(x, base)`` in kernels.

Python's functions beyond one OpenCL built-in of the same signature (the others
are :mod:`.math`'s):

* ``math.ldexp(x, k)``: OpenCL's ``ldexp(x, int k)``; ``k`` of any integer type
  is clamped to ``int`` first (an exponent past +-2**31 overflows or underflows
  all the same, where a conversion would wrap around). float32 ``x`` stays float32
  (as ``math.*`` does on a device; Python computes in float64).
* ``math.frexp(x)``: OpenCL's ``frexp(x, int *e)``, the tuple ``(m, e)``; an
  infinite or NaN ``x`` gives ``e = 0``, as Python (OpenCL leaves it unspecified).
* ``math.nextafter(x, y)``: Python's, in float64 whatever the arguments' types
  (a float32 step is ``np.nextafter`` of float32 values, numpy's rule, :mod:`.math`);
  typed here ahead of Numba's template (which keeps float32):
  :data:`early_typing_registry` is installed before Numba's ``mathdecl``.
* ``math.gcd(a, b)``: Euclid's algorithm on the magnitudes, in the integers'
  common type (OpenCL C has no ``gcd``); ``gcd(0, 0)`` is 0.
* ``math.log(x, base)``: ``log(x) / log(base)``, as CPython computes it, in float32
  when ``x`` is a float32 and ``base`` a float32 or a literal.

Where Python raises (``ldexp`` overflowing, ``log`` of 0 or of base 1), a device
gives IEEE infinities and NaNs. The PTX target defines the built-ins with
libdevice (``targets/ptx/math_builtins.py``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    cgutils,
    signature,
    types,
)
from pysycl_numba.overloads.half import WeakFloatLiteral
from pysycl_numba.targets.spirv import ocl

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

#: Installed before Numba's ``mathdecl`` (its templates would match first).
early_typing_registry = TypingRegistry()
typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.math_extras")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
_CODE = {"float": "f", "double": "d"}  # Itanium codes of the parameter types
_REAL = (types.Integer, types.Float, types.Boolean)


def _real(t: types.Type) -> bool:
    return isinstance(types.unliteral(t), _REAL) or isinstance(t, WeakFloatLiteral)


def _float_of(t: types.Type) -> types.Type:
    """The floating-point type ``math.*`` computes ``t`` in: float32 for float32 and
    float16 (as Numba's templates convert them), else float64."""
    return types.float32 if types.unliteral(t) in (types.float32, types.float16) else types.float64


@early_typing_registry.register_global(math.ldexp)
class MathLdexp(AbstractTemplate):
    """``math.ldexp(x, k)``: ``k`` keeps its integer type (clamped when lowered)."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) != 2 or not _real(args[0]):
            return None
        k = types.unliteral(args[1])
        if not isinstance(k, (types.Integer, types.Boolean)):
            return None
        fty = _float_of(args[0])
        return signature(fty, fty, types.int64 if isinstance(k, types.Boolean) else k)


@early_typing_registry.register_global(math.nextafter)
class MathNextafter(AbstractTemplate):
    """``math.nextafter(x, y)``: float64, as Python."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) != 2 or not all(_real(a) for a in args):
            return None
        return signature(types.float64, types.float64, types.float64)


@typing_registry.register_global(math.log)
class MathLogBase(AbstractTemplate):
    """``math.log(x, base)`` (Numba types ``math.log(x)`` only)."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) != 2 or not all(_real(a) for a in args):
            return None
        x, base = args
        weak = isinstance(base, (types.Literal, WeakFloatLiteral))
        fty = types.float32 if (_float_of(x) == types.float32
                                and (weak or _float_of(base) == types.float32)) else types.float64
        return signature(fty, fty, fty)


def clamp_to_int(builder: llir.IRBuilder, k: llir.Value, kty: types.Integer) -> llir.Value:
    """``k`` as an OpenCL ``int``, saturated (an ``ldexp``/``pown``/``rootn`` argument past
    the range of int gives the same result as the range's end); also :mod:`.sycl_math`'s."""
    if kty.bitwidth < 32 or (kty.bitwidth == 32 and kty.signed):
        return builder.sext(k, _I32) if kty.signed else builder.zext(k, _I32)
    hi = k.type((1 << 31) - 1)
    if kty.signed:
        lo = k.type(-(1 << 31))
        k = builder.select(builder.icmp_signed("<", k, lo), lo, k)
        k = builder.select(builder.icmp_signed(">", k, hi), hi, k)
    else:
        k = builder.select(builder.icmp_unsigned(">", k, hi), hi, k)
    return builder.trunc(k, _I32) if kty.bitwidth > 32 else k


@lower(math.ldexp, types.Float, types.Integer)
def ldexp_impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """OpenCL's ``ldexp(x, int k)`` (``_Z5ldexpdi``)."""
    x, k = args
    kind = ocl.float_kind(x.type)
    return ocl.call(builder, ocl.mangle("ldexp", kind, "int"), x.type,
                    [x, clamp_to_int(builder, k, sig.args[1])])


@lower(math.frexp, types.Float)
def frexp_impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """OpenCL's ``frexp(x, int *e)`` (``_Z5frexpdPi``: a private ``int``), as Python's tuple."""
    (x,) = args
    slot = cgutils.alloca_once(builder, _I32)
    kind = ocl.float_kind(x.type)
    # Writes through its pointer: not pure (LLVM would drop the call)
    m = ocl.call(builder, f"_Z5frexp{_CODE[kind]}Pi", x.type, [x, slot], pure=False)
    e = builder.load(slot)
    finite = builder.fcmp_ordered("!=", ocl.call_math(builder, "fabs", [x]), x.type(math.inf))
    e = builder.select(finite, e, _I32(0))  # Python: frexp(inf) == (inf, 0)
    rty = sig.return_type
    e = context.cast(builder, e, types.int32, rty.types[1])
    return context.make_tuple(builder, rty, [m, e])


@lower(math.nextafter, types.float64, types.float64)
def nextafter_impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """OpenCL's ``nextafter`` on doubles."""
    return ocl.call_math(builder, "nextafter", list(args))


@lower(math.log, types.Float, types.Float)
def log_base_impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``log(x) / log(base)`` (CPython's ``math_log``)."""
    x, base = args
    return builder.fdiv(ocl.call_math(builder, "log", [x]), ocl.call_math(builder, "log", [base]))


@lower(math.gcd, types.Integer, types.Integer)
def gcd_impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
    """Euclid's algorithm on ``|a|`` and ``|b|`` (unsigned: ``|MIN|`` fits)."""
    ty = sig.return_type
    a, b = (context.cast(builder, v, t, ty) for v, t in zip(args, sig.args, strict=True))
    if ty.signed:
        zero = a.type(0)
        a, b = (builder.select(builder.icmp_signed("<", v, zero), builder.neg(v), v)
                for v in (a, b))
    entry = builder.block
    head = builder.append_basic_block("gcd.head")
    step = builder.append_basic_block("gcd.step")
    done = builder.append_basic_block("gcd.done")
    builder.branch(head)
    builder.position_at_end(head)
    pa, pb = builder.phi(a.type), builder.phi(a.type)
    pa.add_incoming(a, entry)
    pb.add_incoming(b, entry)
    builder.cbranch(builder.icmp_unsigned("!=", pb, pb.type(0)), step, done)
    builder.position_at_end(step)
    rem = builder.urem(pa, pb)
    pa.add_incoming(pb, step)
    pb.add_incoming(rem, step)
    builder.branch(head)
    builder.position_at_end(done)
    return pa

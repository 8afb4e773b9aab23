"""SYCL 2020 integer (§4.17.7) and relational (§4.17.9) functions in kernels.

``sycl.popcount(x)``, ``sycl.add_sat(a, b)``, ``sycl.isnan(v)``, ``sycl.select(a, b, c)``
... on numbers, ``sycl.vec`` and ``sycl.marray``; the host semantics (and the oracle)
are :mod:`pysycl._kernels.sycl_intrel`. The operands are of one type; a Python int (or
float) literal takes the other operands' type.

Each function is plain LLVM integer arithmetic on the scalar or the whole LLVM vector
(``<4 x i32>``), plus ``llvm.ctpop``/``ctlz``/``cttz``: the SPIR-V backend lowers them to
core SPIR-V and OpenCL.std's ``popcount``/``clz``/``ctz``, NVPTX to ``popc``/``clz``/
``brev``. No 128-bit integers (SPIR-V for OpenCL has none): 64-bit ``mul_hi`` (and
``mad_hi``/``mad_sat``) call OpenCL's ``mul_hi`` built-in (defined for PTX in
:mod:`pysycl_numba.targets.ptx.int_builtins`). The float tests
(``isnan``, ``isnormal``, ``signbit`` ...) read the bits of the value (exact, and the
same under fast-math flags).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import intrel_api
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    errors,
    numpy_support,
    signature,
    types,
)
from pysycl_numba.overloads.half import WeakFloatLiteral
from pysycl_numba.overloads.integers import fits
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.vec_types import VecType

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.sycl_intrel")
lower = lowering_registry.lower

_I1 = llir.IntType(1)
_I32 = llir.IntType(32)

_LITERALS = (types.IntegerLiteral, types.BooleanLiteral, WeakFloatLiteral)


# ==================================================================== typing
def _elem(t: types.Type) -> types.Type:
    return t.dtype if isinstance(t, VecType) else t


def _is_int(t: types.Type) -> bool:
    return isinstance(t, types.Integer)


def _is_float(t: types.Type) -> bool:
    return isinstance(t, types.Float)


def _fits(lit: types.Type, t: types.Type) -> bool:
    if isinstance(lit, WeakFloatLiteral):
        return _is_float(t)
    if isinstance(lit, types.IntegerLiteral) and _is_int(t):
        return fits(lit.literal_value, numpy_support.as_dtype(t))
    return not isinstance(lit, types.BooleanLiteral) or _is_int(t)


def unify(name: str, args: Sequence[types.Type], ok: Callable[[types.Type], bool],
          ) -> types.Type | None:
    """The one type of a function's operands (``ok`` of the element type), or None.

    Vectors must all be the same type; numbers of one type, literals taking it (a
    literal that does not fit raises numpy's error as a ``TypingError``).
    """
    vecs = [a for a in args if isinstance(a, VecType)]
    if vecs:
        t = vecs[0]
        return t if len(vecs) == len(args) and len(set(vecs)) == 1 and ok(t.dtype) else None
    typed = {a for a in args if not isinstance(a, _LITERALS)}
    if len(typed) > 1 or not all(isinstance(a, (types.Number, types.Boolean, *_LITERALS))
                                  for a in args):
        return None
    t = typed.pop() if typed else types.unliteral(args[0])
    if not ok(t):
        return None
    for a in args:
        if isinstance(a, _LITERALS) and not _fits(a, t):
            raise errors.TypingError(f"sycl.{name}: the literal {a.literal_value!r} is not a "
                                     f"value of {t} (the other operands' type)")
    return t


def refuse(name: str, takes: str, args: Sequence[types.Type]) -> errors.TypingError:
    """The compile error of ``sycl.<name>`` called with ``args``: what it ``takes``."""
    got = ", ".join(str(types.unliteral(a)) for a in args)
    return errors.TypingError(f"sycl.{name}: takes {takes}; got ({got})")


_TAKES_INT = "integer operands of one type (numbers, or vecs or marrays of one integer type)"
_TAKES_FLOAT = ("floating-point operands of one type (float16/32/64 numbers, or vecs or "
                "marrays of them)")


def _template(fn: Callable, nargs: int, ok: Callable[[types.Type], bool], takes: str,
              ret: Callable[[types.Type], types.Type | None] = lambda t: t) -> type:
    class IntRel(AbstractTemplate):
        key = fn
        prefer_literal = True  # literals first: they take the other operands' type

        def generic(self, args: tuple, kws: dict) -> Any:
            if kws or len(args) != nargs:
                raise refuse(fn.__name__, f"{nargs} positional argument(s): {takes}", args)
            t = unify(fn.__name__, args, ok)
            r = ret(t) if t is not None else None
            if r is None:
                raise refuse(fn.__name__, takes, args)
            return signature(r, *(t,) * nargs)

    return IntRel


def compare_result(t: types.Type) -> types.Type:
    """What a relational function of ``t`` gives: bool, the signed int vec, marray<bool>."""
    if not isinstance(t, VecType):
        return types.boolean
    if t.marray:
        return VecType(types.boolean, t.n, marray=True)
    return VecType(types.Integer(f"int{t.dtype.bitwidth}"), t.n)


def _is_int32(t: types.Type) -> bool:
    return _is_int(t) and t.bitwidth == 32


INT_FUNCTIONS: dict[str, int] = {
    "abs": 1, "abs_diff": 2, "add_sat": 2, "sub_sat": 2, "hadd": 2, "rhadd": 2, "mul_hi": 2,
    "mad_hi": 3, "mad_sat": 3, "rotate": 2, "clz": 1, "ctz": 1, "popcount": 1,
}
FLOAT_TESTS: dict[str, int] = {
    "isequal": 2, "isnotequal": 2, "isgreater": 2, "isgreaterequal": 2, "isless": 2,
    "islessequal": 2, "islessgreater": 2, "isfinite": 1, "isinf": 1, "isnan": 1,
    "isnormal": 1, "isordered": 2, "isunordered": 2, "signbit": 1,
}
#: The functions whose float literal arguments are weak (``weak_literals``).
WEAK_FLOAT_FUNCTIONS: tuple[Callable, ...] = (
    *(getattr(intrel_api, n) for n in FLOAT_TESTS), intrel_api.select, intrel_api.bitselect)

for _name, _n in INT_FUNCTIONS.items():
    _fn = getattr(intrel_api, _name)
    typing_registry.register_global(_fn)(_template(_fn, _n, _is_int, _TAKES_INT))
for _fn, _n in ((intrel_api.mul24, 2), (intrel_api.mad24, 3)):
    typing_registry.register_global(_fn)(_template(_fn, _n, _is_int32,
                                                   "int32 or uint32 operands of one type"))
for _name, _n in FLOAT_TESTS.items():
    _fn = getattr(intrel_api, _name)
    typing_registry.register_global(_fn)(_template(_fn, _n, _is_float, _TAKES_FLOAT,
                                                   compare_result))
typing_registry.register_global(intrel_api.bitselect)(_template(
    intrel_api.bitselect, 3, lambda t: _is_int(t) or _is_float(t),
    "operands of one integer or floating-point type"))


@typing_registry.register_global(intrel_api.upsample)
class Upsample(AbstractTemplate):
    """``sycl.upsample(hi, lo)``: twice ``hi``'s width; ``lo`` unsigned of ``hi``'s width."""

    def generic(self, args: tuple, kws: dict) -> Any:
        sig = self._typed(args, kws)
        if sig is None:
            raise refuse("upsample", "(hi, lo): hi a signed or unsigned 8, 16 or 32-bit integer "
                         "(or vec/marray of them), lo the unsigned type of hi's width", args)
        return sig

    def _typed(self, args: tuple, kws: dict) -> Any:
        if kws or len(args) != 2:
            return None
        hi, lo = (types.unliteral(a) for a in args)
        if isinstance(hi, VecType) != isinstance(lo, VecType):
            return None
        if isinstance(hi, VecType) and (hi.n != lo.n or hi.marray != lo.marray):
            return None
        eh, el = _elem(hi), _elem(lo)
        if not (_is_int(eh) and _is_int(el) and eh.bitwidth <= 32 and not el.signed
                and el.bitwidth == eh.bitwidth):
            return None
        wide = types.Integer(f"{'' if eh.signed else 'u'}int{2 * eh.bitwidth}")
        ret = VecType(wide, hi.n, hi.marray) if isinstance(hi, VecType) else wide
        return signature(ret, hi, lo)


def _vote_template(fn: Callable) -> type:
    class Vote(AbstractTemplate):
        key = fn

        def generic(self, args: tuple, kws: dict) -> Any:
            sig = self._typed(args, kws)
            if sig is None:
                raise refuse(fn.__name__, "one signed integer, a vec of signed integers (a "
                             "vec comparison's result) or an marray", args)
            return sig

        def _typed(self, args: tuple, kws: dict) -> Any:
            if kws or len(args) != 1:
                return None
            t = types.unliteral(args[0])
            e = _elem(t)
            signed = _is_int(e) and e.signed
            if isinstance(t, VecType) and not t.marray:
                return signature(types.int32, t) if signed else None
            ok = signed or (isinstance(t, VecType) and isinstance(e, types.Boolean))
            return signature(types.boolean, t) if ok else None

    return Vote


typing_registry.register_global(intrel_api.any)(_vote_template(intrel_api.any))
typing_registry.register_global(intrel_api.all)(_vote_template(intrel_api.all))


@typing_registry.register_global(intrel_api.select)
class Select(AbstractTemplate):
    """``sycl.select(a, b, c)``: scalars with a bool/integer ``c``; vec with an integer vec
    ``c`` of the element size; marray with an marray<bool> ``c``."""

    prefer_literal = True

    def generic(self, args: tuple, kws: dict) -> Any:
        sig = self._typed(args, kws)
        if sig is None:
            raise refuse("select", "(a, b, c): a and b of one type; c a bool or integer for "
                         "numbers, an integer vec of the element width for vecs, an "
                         "marray<bool> for marrays", args)
        return sig

    def _typed(self, args: tuple, kws: dict) -> Any:
        if kws or len(args) != 3:
            return None
        t = unify("select", args[:2], lambda e: _is_int(e) or _is_float(e))
        c = types.unliteral(args[2])
        if t is None:
            return None
        if not isinstance(t, VecType):
            return signature(t, t, t, c) if isinstance(c, (types.Boolean, types.Integer)) \
                else None
        if not isinstance(c, VecType) or c.n != t.n or c.marray != t.marray:
            return None
        ce = c.dtype
        ok = isinstance(ce, types.Boolean) if t.marray else (
            _is_int(ce) and ce.bitwidth == t.dtype.bitwidth)
        return signature(t, t, t, c) if ok else None


# ================================================================== lowering
def _const(ty: llir.Type, v: int) -> llir.Constant:
    """``v`` as a constant of the integer (or integer vector) type ``ty``."""
    if isinstance(ty, llir.VectorType):
        return llir.Constant(ty, [llir.Constant(ty.element, v)] * ty.count)
    return llir.Constant(ty, v)


def _width(ty: llir.Type) -> int:
    return (ty.element if isinstance(ty, llir.VectorType) else ty).width


def _int_type(ty: llir.Type, bits: int) -> llir.Type:
    """``ty``'s shape (scalar or vector) with ``bits``-bit integer elements."""
    if isinstance(ty, llir.VectorType):
        return llir.VectorType(llir.IntType(bits), ty.count)
    return llir.IntType(bits)


def _intrinsic(builder: llir.IRBuilder, name: str, x: llir.Value, *extra: llir.Value,
               ) -> llir.Value:
    """``llvm.<name>.<i32|v4i32>(x, extra...)``."""
    ty = x.type
    suffix = f"v{ty.count}i{ty.element.width}" if isinstance(ty, llir.VectorType) else \
        f"i{ty.width}"
    full = f"llvm.{name}.{suffix}"
    fn = builder.module.globals.get(full)
    if fn is None:
        fn = llir.Function(builder.module, llir.FunctionType(ty, [ty, *(e.type for e in extra)]),
                           name=full)
    return builder.call(fn, [x, *extra])


def _ext(builder: llir.IRBuilder, x: llir.Value, bits: int, signed: bool) -> llir.Value:
    ty = _int_type(x.type, bits)
    return builder.sext(x, ty) if signed else builder.zext(x, ty)


def _lt0(builder: llir.IRBuilder, x: llir.Value) -> llir.Value:
    return builder.icmp_signed("<", x, _const(x.type, 0))


def _minmax(signed: bool, bits: int, ty: llir.Type) -> tuple[llir.Value, llir.Value]:
    """The smallest and largest ``bits``-bit (un)signed integers, as constants of ``ty``."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return _const(ty, lo), _const(ty, hi)


def _clamp_narrow(builder: llir.IRBuilder, wide: llir.Value, signed: bool, bits: int,
                  ) -> llir.Value:
    """A ``2 * bits``-or-wider value saturated to ``bits`` (signed or unsigned) and truncated."""
    lo, hi = _minmax(signed, bits, wide.type)
    cmp = builder.icmp_signed if signed else builder.icmp_unsigned
    wide = builder.select(cmp("<", wide, lo), lo, wide)
    wide = builder.select(cmp(">", wide, hi), hi, wide)
    return builder.trunc(wide, _int_type(wide.type, bits))


def _add_sat(builder: llir.IRBuilder, signed: bool, x: llir.Value, y: llir.Value,
             sub: bool = False) -> llir.Value:
    r = builder.sub(x, y) if sub else builder.add(x, y)
    if not signed:
        if sub:
            return builder.select(builder.icmp_unsigned("<", x, y), _const(x.type, 0), r)
        return builder.select(builder.icmp_unsigned("<", r, x), _const(x.type, -1), r)
    # overflow: the result's sign differs from x's while y's sign is x's (add) / not (sub)
    flip = builder.xor(x, y) if sub else builder.xor(y, r)
    over = _lt0(builder, builder.and_(builder.xor(x, r), flip))
    lo, hi = _minmax(True, _width(x.type), x.type)
    return builder.select(over, builder.select(_lt0(builder, x), lo, hi), r)


def _mul_hi(builder: llir.IRBuilder, signed: bool, x: llir.Value, y: llir.Value) -> llir.Value:
    bits = _width(x.type)
    if bits < 64:
        p = builder.mul(_ext(builder, x, 2 * bits, signed), _ext(builder, y, 2 * bits, signed))
        return builder.trunc(builder.lshr(p, _const(p.type, bits)), x.type)
    # OpenCL's mul_hi built-in: LLVM folds a product of 32-bit halves back into an i128
    # multiply, which SPIR-V for OpenCL cannot express (PTX: targets/ptx/int_builtins.py).
    name = ocl.mangle("mul_hi", *("long" if signed else "ulong",) * 2)
    if not isinstance(x.type, llir.VectorType):
        return ocl.call(builder, name, x.type, [x, y])
    out = llir.Constant(x.type, None)
    for k in range(x.type.count):
        e = ocl.call(builder, name, x.type.element, [builder.extract_element(x, _I32(k)),
                                                     builder.extract_element(y, _I32(k))])
        out = builder.insert_element(out, e, _I32(k))
    return out


def _mad_sat64(builder: llir.IRBuilder, signed: bool, a: llir.Value, b: llir.Value,
               c: llir.Value) -> llir.Value:
    """``a * b + c`` saturated, for 64-bit elements: the 128-bit sum as (hi, lo) halves."""
    hi, lo = _mul_hi(builder, signed, a, b), builder.mul(a, b)
    s = builder.add(lo, c)
    carry = builder.zext(builder.icmp_unsigned("<", s, lo), s.type)
    one = _const(s.type, -1)
    if not signed:
        over = builder.or_(builder.icmp_unsigned("!=", hi, _const(hi.type, 0)),
                           builder.icmp_unsigned("!=", carry, _const(hi.type, 0)))
        return builder.select(over, one, s)
    hi = builder.add(builder.add(hi, builder.select(_lt0(builder, c), one, _const(c.type, 0))),
                     carry)
    fits = builder.icmp_signed("==", hi, builder.ashr(s, _const(s.type, 63)))
    lo_, hi_ = _minmax(True, 64, s.type)
    return builder.select(fits, s, builder.select(_lt0(builder, hi), lo_, hi_))


def _mad_sat(builder: llir.IRBuilder, signed: bool, a: llir.Value, b: llir.Value,
             c: llir.Value) -> llir.Value:
    bits = _width(a.type)
    if bits == 64:
        return _mad_sat64(builder, signed, a, b, c)
    wa, wb, wc = (_ext(builder, v, 64, signed) for v in (a, b, c))
    return _clamp_narrow(builder, builder.add(builder.mul(wa, wb), wc), signed, bits)


def _rotate(builder: llir.IRBuilder, x: llir.Value, n: llir.Value) -> llir.Value:
    mask = _const(x.type, _width(x.type) - 1)
    s = builder.and_(n, mask)
    back = builder.and_(builder.sub(_const(x.type, 0), s), mask)  # (width - s) % width
    return builder.or_(builder.shl(x, s), builder.lshr(x, back))


def _halving_add(builder: llir.IRBuilder, signed: bool, x: llir.Value, y: llir.Value,
                 rounded: bool) -> llir.Value:
    """``(x + y [+ 1]) >> 1`` without overflow: ``(x >> 1) + (y >> 1) + (x & y & 1)``
    (``x | y`` rounded)."""
    one = _const(x.type, 1)
    shr = builder.ashr if signed else builder.lshr
    low = builder.and_(builder.or_(x, y) if rounded else builder.and_(x, y), one)
    return builder.add(builder.add(shr(x, one), shr(y, one)), low)


def _abs(b: llir.IRBuilder, s: bool, x: llir.Value) -> llir.Value:
    return b.select(_lt0(b, x), b.sub(_const(x.type, 0), x), x) if s else x


def _abs_diff(b: llir.IRBuilder, s: bool, x: llir.Value, y: llir.Value) -> llir.Value:
    gt = (b.icmp_signed if s else b.icmp_unsigned)(">", x, y)
    return b.select(gt, b.sub(x, y), b.sub(y, x))


#: OpenCL/SYCL name -> (builder, signed, *operands) -> result, for integer elements.
INT_LOWERINGS: dict[str, Callable[..., llir.Value]] = {
    "abs": _abs,
    "abs_diff": _abs_diff,
    "add_sat": lambda b, s, x, y: _add_sat(b, s, x, y),
    "sub_sat": lambda b, s, x, y: _add_sat(b, s, x, y, sub=True),
    "hadd": lambda b, s, x, y: _halving_add(b, s, x, y, False),
    "rhadd": lambda b, s, x, y: _halving_add(b, s, x, y, True),
    "mul_hi": _mul_hi,
    "mad_hi": lambda b, s, x, y, z: b.add(_mul_hi(b, s, x, y), z),
    "mad_sat": _mad_sat,
    "rotate": lambda b, s, x, n: _rotate(b, x, n),
    "clz": lambda b, s, x: _intrinsic(b, "ctlz", x, _I1(0)),
    "ctz": lambda b, s, x: _intrinsic(b, "cttz", x, _I1(0)),
    "popcount": lambda b, s, x: _intrinsic(b, "ctpop", x),
    "mul24": lambda b, s, x, y: b.mul(x, y),
    "mad24": lambda b, s, x, y, z: b.add(b.mul(x, y), z),
}


def _lower_int(name: str) -> Callable:
    op = INT_LOWERINGS[name]

    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        return op(builder, _elem(sig.args[0]).signed, *args)

    return impl


for _name, _op in INT_LOWERINGS.items():
    lower(getattr(intrel_api, _name), *(types.Any,) * (_op.__code__.co_argcount - 2))(
        _lower_int(_name))


# ------------------------------------------------------------ float tests
def _float_bits(builder: llir.IRBuilder, x: llir.Value) -> tuple[llir.Value, int]:
    """The bits of a float (vector) as an integer (vector), and the float's width."""
    elem = x.type.element if isinstance(x.type, llir.VectorType) else x.type
    bits = {"half": 16, "float": 32, "double": 64}[str(elem)]
    return builder.bitcast(x, _int_type(x.type, bits)), bits


_EXP_MASK = {16: 0x7C00, 32: 0x7F800000, 64: 0x7FF0000000000000}
_MIN_NORMAL = {16: 0x0400, 32: 0x00800000, 64: 0x0010000000000000}


def _class_test(builder: llir.IRBuilder, name: str, x: llir.Value) -> llir.Value:
    """``isfinite``/``isinf``/``isnan``/``isnormal``/``signbit`` of ``x``: ``i1`` (vector)."""
    i, bits = _float_bits(builder, x)
    if name == "signbit":
        return _lt0(builder, i)
    mag = builder.and_(i, _const(i.type, (1 << (bits - 1)) - 1))
    exp = _const(i.type, _EXP_MASK[bits])
    if name == "isnormal":
        return builder.and_(builder.icmp_unsigned(">=", mag, _const(i.type, _MIN_NORMAL[bits])),
                            builder.icmp_unsigned("<", mag, exp))
    cmp = {"isfinite": "<", "isinf": "==", "isnan": ">"}[name]
    return builder.icmp_unsigned(cmp, mag, exp)


#: Two-operand float tests: (LLVM fcmp condition, whether it is the unordered form).
_COMPARISONS = {"isequal": ("==", False), "isnotequal": ("!=", True), "isgreater": (">", False),
                "isgreaterequal": (">=", False), "isless": ("<", False),
                "islessequal": ("<=", False), "islessgreater": ("!=", False),
                "isordered": ("ord", False), "isunordered": ("uno", True)}


def _lower_test(name: str) -> Callable:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        if name in _COMPARISONS:
            cmp, unordered = _COMPARISONS[name]
            bits = (builder.fcmp_unordered if unordered else builder.fcmp_ordered)(cmp, *args)
        else:
            bits = _class_test(builder, name, args[0])
        ret = sig.return_type
        if not isinstance(ret, VecType):
            return bits
        llty = context.get_value_type(ret)
        return builder.zext(bits, llty) if ret.marray else builder.sext(bits, llty)

    return impl


for _name, _n in FLOAT_TESTS.items():
    lower(getattr(intrel_api, _name), *(types.Any,) * _n)(_lower_test(_name))


# ------------------------------------------------------------ any, all, select, bitselect
def _lower_vote(is_any: bool) -> Callable:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        t, x = sig.args[0], args[0]
        boolean = isinstance(_elem(t), types.Boolean)
        bits = builder.icmp_unsigned("!=", x, _const(x.type, 0)) if boolean else _lt0(builder, x)
        if isinstance(t, VecType):
            elems = [builder.extract_element(bits, _I32(k)) for k in range(t.n)]
            bits = elems[0]
            for e in elems[1:]:
                bits = builder.or_(bits, e) if is_any else builder.and_(bits, e)
        return builder.zext(bits, _I32) if sig.return_type == types.int32 else bits

    return impl


lower(intrel_api.any, types.Any)(_lower_vote(True))
lower(intrel_api.all, types.Any)(_lower_vote(False))


@lower(intrel_api.select, types.Any, types.Any, types.Any)
def lower_select(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.select(a, b, c)``: ``b`` where ``c`` (scalar truth, vec MSB, marray bool)."""
    a, b, c = args
    ct = sig.args[2]
    if isinstance(ct, VecType) and not ct.marray:
        pick = _lt0(builder, c)
    elif isinstance(ct, types.Boolean):
        pick = c
    else:  # an integer scalar, or an marray's bools (i8)
        pick = builder.icmp_unsigned("!=", c, _const(c.type, 0))
    return builder.select(pick, b, a)


@lower(intrel_api.bitselect, types.Any, types.Any, types.Any)
def lower_bitselect(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.bitselect(a, b, c)``: ``(a & ~c) | (b & c)`` on the bits (floats bitcast)."""
    is_float = _is_float(_elem(sig.args[0]))
    a, b, c = (_float_bits(builder, v)[0] if is_float else v for v in args)
    r = builder.or_(builder.and_(a, builder.not_(c)), builder.and_(b, c))
    return builder.bitcast(r, args[0].type) if is_float else r


@lower(intrel_api.upsample, types.Any, types.Any)
def lower_upsample(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.upsample(hi, lo)``: ``(hi << bits) | lo`` in the double width."""
    hi, lo = args
    bits = _width(hi.type)
    wide_hi = _ext(builder, hi, 2 * bits, _elem(sig.args[0]).signed)
    shifted = builder.shl(wide_hi, _const(wide_hi.type, bits))
    return builder.or_(shifted, _ext(builder, lo, 2 * bits, False))

"""OpenCL C math built-ins libdevice lacks, for PTX: formulas over libdevice and LLVM.

(Definitions registered with :mod:`.builtins`, for :mod:`pysycl_numba.overloads.sycl_math`.)
The ``float`` variants compute in ``double`` and round once (every GPU the PTX target
takes, sm_60 and later, has double arithmetic), as the host device's reference does:

* ``acospi``, ``asinpi``, ``atanpi``, ``atan2pi``: libdevice's ``acos``/... times 1/pi;
  ``tanpi``: ``sinpi(x) / cospi(x)`` (exact zeros at integers, infinities at
  half-integers);
* ``powr(x, y)``: ``pow`` with OpenCL's NaN cases (``x < 0``, ``0**0``, ``inf**0``,
  ``1**inf``); ``pown(x, n)``: ``pow(x, n)`` with ``pown(x, 0) = 1``; ``rootn(x, n)``:
  ``|x| ** (1/n)`` with the sign of ``x`` for odd ``n``, NaN for a negative ``x`` and
  even ``n`` or ``n = 0``;
* ``maxmag``/``minmag``: the operand of larger/smaller magnitude, ``fmax``/``fmin``
  when they tie;
* ``ilogb``: libdevice's ``__nv_ilogb[f]``, but INT_MAX for NaN (``FP_ILOGBNAN`` as
  on the host device and the OpenCL CPU device; libdevice gives INT_MIN, its ``0`` value);
* ``native_divide``/``half_divide``, ``native_recip``/``half_recip``: ``fdiv``.
"""

from __future__ import annotations

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define, header

_TYPES = {"f": "float", "d": "double"}
_INV_PI = "0x3FD45F306DC9C883"  # 1/pi as a double
_NAN = "0x7FF8000000000000"


def _names(name: str, params: str) -> dict[str, str]:
    """Mangled name -> ``float``/``double`` of ``name`` with ``params`` (``x``: the type code)."""
    return {f"_Z{len(name)}{name}{params.replace('x', c)}": ty for c, ty in _TYPES.items()}


def _wide(decl: Decl, k: int) -> str:
    """IR lines setting ``%w<k>`` to parameter ``k`` as a double (``select`` of a true
    condition for a double parameter: LLVM has no plain copy)."""
    if decl.params[k] == "double":
        return f"  %w{k} = select i1 true, double %a{k}, double %a{k}\n"
    return f"  %w{k} = fpext float %a{k} to double\n"


def _narrow(decl: Decl, value: str) -> str:
    """IR lines returning the double ``value`` as the declared type."""
    if decl.ret == "double":
        return f"  ret double {value}\n}}"
    return f"  %out = fptrunc double {value} to float\n  ret float %out\n}}"


def _libdevice(*fns: str) -> frozenset[str]:
    sigs = {"pow": 2, "atan2": 2}
    return frozenset(f"declare double @__nv_{f}({', '.join(['double'] * sigs.get(f, 1))})"
                     for f in fns)


_PI_FUNCS = {"acospi": "acos", "asinpi": "asin", "atanpi": "atan"}


@define(*(m for n in _PI_FUNCS for m in _names(n, "x")))
def _over_pi(decl: Decl) -> Definition:
    fn = _PI_FUNCS[decl.name[3:9]]
    body = (f"{header(decl)}\n{_wide(decl, 0)}  %r = call double @__nv_{fn}(double %w0)\n"
            f"  %p = fmul double %r, {_INV_PI}\n{_narrow(decl, '%p')}")
    return Definition(body, _libdevice(fn), True)


@define(*_names("atan2pi", "xx"))
def _atan2pi(decl: Decl) -> Definition:
    body = (f"{header(decl)}\n{_wide(decl, 0)}{_wide(decl, 1)}"
            f"  %r = call double @__nv_atan2(double %w0, double %w1)\n"
            f"  %p = fmul double %r, {_INV_PI}\n{_narrow(decl, '%p')}")
    return Definition(body, _libdevice("atan2"), True)


@define(*_names("tanpi", "x"))
def _tanpi(decl: Decl) -> Definition:
    body = (f"{header(decl)}\n{_wide(decl, 0)}  %s = call double @__nv_sinpi(double %w0)\n"
            f"  %c = call double @__nv_cospi(double %w0)\n  %t = fdiv double %s, %c\n"
            f"{_narrow(decl, '%t')}")
    return Definition(body, _libdevice("sinpi", "cospi"), True)


@define(*_names("powr", "xx"))
def _powr(decl: Decl) -> Definition:
    body = f"""{header(decl)}
{_wide(decl, 0)}{_wide(decl, 1)}  %r = call double @__nv_pow(double %w0, double %w1)
  %neg = fcmp olt double %w0, 0.0
  %y0 = fcmp oeq double %w1, 0.0
  %x0 = fcmp oeq double %w0, 0.0
  %ax = call double @llvm.fabs.f64(double %w0)
  %xinf = fcmp oeq double %ax, 0x7FF0000000000000
  %x1 = fcmp oeq double %w0, 1.0
  %ay = call double @llvm.fabs.f64(double %w1)
  %yinf = fcmp oeq double %ay, 0x7FF0000000000000
  %uno = fcmp uno double %w0, %w1
  %b1 = and i1 %x0, %y0
  %b2 = and i1 %xinf, %y0
  %b3 = and i1 %x1, %yinf
  %c1 = or i1 %neg, %b1
  %c2 = or i1 %b2, %b3
  %c3 = or i1 %c1, %c2
  %bad = or i1 %c3, %uno
  %v = select i1 %bad, double {_NAN}, double %r
{_narrow(decl, '%v')}"""
    return Definition(body, _libdevice("pow") | {"declare double @llvm.fabs.f64(double)"}, True)


@define(*_names("pown", "xi"))
def _pown(decl: Decl) -> Definition:
    body = f"""{header(decl)}
{_wide(decl, 0)}  %n = sitofp i32 %a1 to double
  %r = call double @__nv_pow(double %w0, double %n)
  %z = icmp eq i32 %a1, 0
  %v = select i1 %z, double 1.0, double %r
{_narrow(decl, '%v')}"""
    return Definition(body, _libdevice("pow"), True)


@define(*_names("rootn", "xi"))
def _rootn(decl: Decl) -> Definition:
    body = f"""{header(decl)}
{_wide(decl, 0)}  %n = sitofp i32 %a1 to double
  %inv = fdiv double 1.0, %n
  %ax = call double @llvm.fabs.f64(double %w0)
  %mag = call double @__nv_pow(double %ax, double %inv)
  %bit = and i32 %a1, 1
  %odd = icmp ne i32 %bit, 0
  %signed = call double @llvm.copysign.f64(double %mag, double %w0)
  %neg = fcmp olt double %w0, 0.0
  %even_neg = xor i1 %odd, true
  %nan1 = and i1 %neg, %even_neg
  %z = icmp eq i32 %a1, 0
  %nan = or i1 %nan1, %z
  %r = select i1 %odd, double %signed, double %mag
  %v = select i1 %nan, double {_NAN}, double %r
{_narrow(decl, '%v')}"""
    return Definition(body, _libdevice("pow") | {"declare double @llvm.fabs.f64(double)",
                                                 "declare double @llvm.copysign.f64(double, double)"},
                      True)


@define(*_names("maxmag", "xx"), *_names("minmag", "xx"))
def _mag(decl: Decl) -> Definition:
    t = decl.ret
    sfx = "f32" if t == "float" else "f64"
    bigger = "ogt" if decl.name[3:9] == "maxmag" else "olt"
    tie = "maxnum" if decl.name[3:9] == "maxmag" else "minnum"
    body = f"""{header(decl)}
  %ax = call {t} @llvm.fabs.{sfx}({t} %a0)
  %ay = call {t} @llvm.fabs.{sfx}({t} %a1)
  %first = fcmp {bigger} {t} %ax, %ay
  %second = fcmp {bigger} {t} %ay, %ax
  %tie = call {t} @llvm.{tie}.{sfx}({t} %a0, {t} %a1)
  %s = select i1 %second, {t} %a1, {t} %tie
  %r = select i1 %first, {t} %a0, {t} %s
  ret {t} %r
}}"""
    return Definition(body, frozenset({f"declare {t} @llvm.fabs.{sfx}({t})",
                                       f"declare {t} @llvm.{tie}.{sfx}({t}, {t})"}))


@define("_Z5ilogbf", "_Z5ilogbd")
def _ilogb(decl: Decl) -> Definition:
    t = decl.params[0]
    fn = "__nv_ilogbf" if t == "float" else "__nv_ilogb"
    body = f"""{header(decl)}
  %r = call i32 @{fn}({t} %a0)
  %nan = fcmp uno {t} %a0, %a0
  %v = select i1 %nan, i32 2147483647, i32 %r
  ret i32 %v
}}"""
    return Definition(body, frozenset({f"declare i32 @{fn}({t})"}), True)


@define("_Z13native_divideff", "_Z11half_divideff", "_Z12native_recipf", "_Z10half_recipf")
def _divide(decl: Decl) -> Definition:
    num = "%a0" if len(decl.params) == 2 else "1.0"
    den = "%a1" if len(decl.params) == 2 else "%a0"
    return Definition(f"{header(decl)}\n  %r = fdiv float {num}, {den}\n  ret float %r\n}}")

"""OpenCL C math built-ins for PTX: LLVM intrinsics and CUDA's libdevice.

(Definitions registered with :mod:`.builtins`.) The compiler declares the
OpenCL C math functions of :mod:`pysycl_numba.overloads.math` on ``float`` and
``double`` (``_Z3sinf``, ``_Z5hypotdd``); each becomes one of

* an LLVM intrinsic NVPTX selects to one instruction, where that instruction
  has the OpenCL meaning: ``sqrt`` (``sqrt.rn``: correctly rounded, within
  OpenCL's 3 ulp for float), ``fabs``, ``floor``/``ceil``/``trunc``
  (``cvt.rmi/rpi/rzi``), ``rint`` (``cvt.rni``: ties to even, as OpenCL's
  ``rint``; ``round``, ties away from zero, is ``llvm.round``), ``copysign``,
  ``fmin``/``fmax`` (``min``/``max``: a NaN operand gives the other one, as
  OpenCL's), ``fma``/``mad``;
* a call of libdevice's ``__nv_<name>f``/``__nv_<name>`` (``Definition.libdevice``:
  the emit worker links the bitcode; ``__nvvm_reflect`` queries in it are folded
  by LLVM's NVVMReflect pass, which the NVPTX target machine adds to the
  optimisation pipeline: no flush-to-zero, as OpenCL without
  ``-cl-denorms-are-zero``). ``native_*``/``half_*`` variants, which OpenCL lets
  be less accurate, use libdevice's ``__nv_fast_*f`` where it has one;
  ``ldexp``/``frexp``/``remquo``, whose last parameter is an ``int`` or an ``int *``,
  too (:data:`WITH_INT`).

Not mapped (``retarget`` names them in its ``NotImplementedError``):

* ``half`` (``Dh``) math: libdevice has none, and the compiler never declares
  it (``float16`` math is computed in float32 and rounded, as numpy does);
* integer built-ins (``abs``, ``clz``, ``popcount``, ``mul_hi``...): the
  compiler declares none (``np.absolute`` of an integer is a ``select``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pysycl._core.exceptions import errc
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.targets.ptx.builtins import Decl, Definition, define, header, params_text

#: OpenCL C name -> LLVM intrinsic (``.f32``/``.f64`` appended).
INTRINSIC: dict[str, str] = {
    "sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor", "ceil": "llvm.ceil",
    "trunc": "llvm.trunc", "rint": "llvm.rint", "round": "llvm.round",
    "copysign": "llvm.copysign", "fmin": "llvm.minnum", "fmax": "llvm.maxnum",
    "fma": "llvm.fma", "mad": "llvm.fma",
}
#: OpenCL C names libdevice defines as ``__nv_<name>f`` (float) and ``__nv_<name>`` (double);
#: CUDA's documented errors for them are within OpenCL's full-profile ulp limits.
LIBDEVICE: frozenset[str] = frozenset((
    "cbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "logb",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "sinpi", "cospi", "erf", "erfc", "tgamma", "lgamma",
    "atan2", "pow", "hypot", "fmod", "remainder", "fdim", "nextafter", "rsqrt",
))
#: OpenCL C ``native_*``/``half_*`` float functions -> libdevice's fast float variant.
FAST_FLOAT: dict[str, str] = {
    f"{p}_{n}": f"__nv_fast_{n}f" for p in ("native", "half")
    for n in ("sin", "cos", "tan", "exp", "exp10", "log", "log2", "log10")
}
#: OpenCL C ``native_*``/``half_*`` functions -> the accurate function (no faster one here).
AS_ACCURATE: dict[str, str] = {
    **{f"{p}_{n}": n for p in ("native", "half") for n in ("sqrt", "rsqrt", "exp2")},
    "native_powr": "pow", "half_powr": "pow",
}

_CODES = {"float": "f", "double": "d"}
_BINARY = {"atan2", "pow", "powr", "hypot", "copysign", "fmod", "fmin", "fmax", "remainder",
           "fdim", "nextafter"}


def _arity(name: str) -> int:
    base = name.split("_", 1)[1] if name.startswith(("native_", "half_")) else name
    return 3 if base in ("fma", "mad") else 2 if base in _BINARY else 1


def mangled_names(name: str) -> dict[str, str]:
    """Mangled name -> type (``float``/``double``) of the OpenCL C math function ``name``.

    ``native_*`` and ``half_*`` exist for float only (OpenCL C 3.0, 6.15.2).
    """
    n = _arity(name)
    types = ("float",) if name.startswith(("native_", "half_")) else tuple(_CODES)
    return {f"_Z{len(name)}{name}{_CODES[ty] * n}": ty for ty in types}


def callee(name: str, ty: str) -> tuple[str, bool]:
    """The function defining OpenCL's ``name`` on ``ty``, and whether it is libdevice's."""
    if name in FAST_FLOAT:
        return FAST_FLOAT[name], True
    name = AS_ACCURATE.get(name, name)
    if name in INTRINSIC:
        return f"{INTRINSIC[name]}.{'f32' if ty == 'float' else 'f64'}", False
    return (f"__nv_{name}f" if ty == "float" else f"__nv_{name}"), True


#: Every mangled name defined here -> (OpenCL C name, type).
MANGLED: dict[str, tuple[str, str]] = {
    m: (name, ty) for name in (*INTRINSIC, *LIBDEVICE, *FAST_FLOAT, *AS_ACCURATE)
    for m, ty in mangled_names(name).items()
}


#: OpenCL's ``ldexp(x, int k)``, ``frexp(x, int *e)`` and ``remquo(x, y, int *q)`` (a private
#: pointer) -> (name, type): libdevice's ``__nv_ldexp[f]``/``__nv_frexp[f]``/``__nv_remquo[f]``
#: take the same parameters (``x`` in the pattern: the float type's code).
WITH_INT: dict[str, tuple[str, str]] = {
    f"_Z{len(name)}{name}{params.replace('x', code)}": (name, ty)
    for name, params in (("ldexp", "xi"), ("frexp", "xPi"), ("remquo", "xxPi"))
    for ty, code in _CODES.items()
}


@define(*MANGLED, *WITH_INT)
def _math(decl: Decl) -> Definition:
    fn, libdevice = callee(*(MANGLED.get(decl.name) or WITH_INT[decl.name]))
    body = f"""{header(decl)}
  %r = call {decl.ret} @{fn}({params_text(decl)})
  ret {decl.ret} %r
}}"""
    return Definition(body, frozenset({f"declare {decl.ret} @{fn}({', '.join(decl.params)})"}),
                      libdevice)


def libdevice_path(roots: Sequence[str] | None = None) -> str:
    """CUDA's libdevice bitcode (``nvvm/libdevice/libdevice.10.bc``).

    Args:
        roots: the CUDA installations to look in, first match wins; by default
            ``$CUDA_HOME``, ``$CUDA_PATH`` (those set) and ``/usr/local/cuda``.

    Raises:
        KernelSourceError: not found (``errc.build``, naming where it was looked for).
    """
    if roots is None:
        roots = [r for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                             "/usr/local/cuda") if r]
    for root in roots:
        p = os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")
        if os.path.isfile(p):
            return p
    raise KernelSourceError(
        "this kernel's math needs CUDA's libdevice, nvvm/libdevice/libdevice.10.bc, "
        f"found under none of {list(roots)} (install CUDA or set CUDA_HOME)", None, errc.build)

"""``cmath`` on complex numbers in kernels: CPython's algorithms over the OpenCL built-ins.

Numba's ``cmath`` lowering (``numba.cpython.cmathimpl``) transcribes CPython's
``cmathmodule.c``: ``exp log log10 sqrt sin cos tan sinh cosh tanh asin acos
atan asinh acosh atanh phase polar rect isnan isinf isfinite``, each written in
Python over ``math.*`` and compiled with the kernel, so every ``math`` call in it
lowers to an OpenCL C built-in (:mod:`.math`; libdevice on PTX). Branch cuts and
special values are CPython's, which follow C99 Annex G. Its functions are copied
into this module's lowering registry; its typing is Numba's ``cmathdecl``
(installed by the target) and its generic ``@overload``s.
"""

from __future__ import annotations

from pysycl_numba._numba_compat import LoweringRegistry, TypingRegistry, cmath_lowering_registry

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.complex_math")

for _impl, _func, _argtys in cmath_lowering_registry().functions:
    lowering_registry.lower(_func, *_argtys)(_impl)

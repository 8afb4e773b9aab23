"""OpenCL math built-ins on the PTX target: every one the compiler declares compiles to PTX.

Each kernel computes one function on float32 or float64: it runs on the SPIR-V
device (checked against numpy/``math``) and its PTX image is inspected (no
built-in or libdevice name left, the expected instruction where the definition
is an LLVM intrinsic) and assembled by ``ptxas``. The whole registry of
:mod:`pysycl_numba.targets.ptx.math_builtins`, including the names no overload
declares yet (``native_*``, ``fma``...), is emitted from IR written here.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl._core.exceptions import errc
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.overloads.math import BINARY, UNARY
from pysycl_numba.targets.ptx import math_builtins as mb
from pysycl_numba.targets.ptx.emit import emit_ptx
from tests.conftest import ptxas_check

#: OpenCL name -> (kernel expression over x (and y), numpy reference, input range).
CASES: dict[str, tuple[str, object, tuple[float, float]]] = {
    **{name: (f"np.{uf.__name__}(x[i])", uf, (-3.0, 3.0)) for uf, name in UNARY.items()},
    **{name: (f"np.{uf.__name__}(x[i], y[i])", uf, (-3.0, 3.0)) for uf, name in BINARY.items()},
    "erf": ("math.erf(x[i])", np.vectorize(math.erf), (-3.0, 3.0)),
    "erfc": ("math.erfc(x[i])", np.vectorize(math.erfc), (-3.0, 3.0)),
    "tgamma": ("math.gamma(x[i])", np.vectorize(math.gamma), (0.1, 6.0)),
    "lgamma": ("math.lgamma(x[i])", np.vectorize(math.lgamma), (0.1, 30.0)),
}
#: Arguments where the function is defined (and away from its poles).
DOMAIN = {"sqrt": (0.0, 9.0), "log": (0.01, 50.0), "log2": (0.01, 50.0),
          "log10": (0.01, 50.0), "log1p": (-0.9, 50.0), "asin": (-1.0, 1.0),
          "acos": (-1.0, 1.0), "acosh": (1.0, 20.0), "atanh": (-0.99, 0.99),
          "pow": (0.1, 4.0), "tan": (-1.4, 1.4)}
#: The instruction a definition by an LLVM intrinsic must become.
INSTRUCTION = {"sqrt": "sqrt.rn", "fabs": "abs", "floor": "cvt.rmi", "ceil": "cvt.rpi",
               "trunc": "cvt.rzi", "rint": "cvt.rni", "fmin": "min", "fmax": "max"}
DTYPES = [np.float32, np.float64]


def test_the_cases_cover_every_declared_math_builtin() -> None:
    # Every name the overloads can declare (math.* and numpy) has a kernel here.
    from pysycl_numba.overloads import math as overloads

    declared = {*overloads._MATH_UNARY.values(), *overloads._MATH_BINARY.values(),
                *overloads._TO_INT.values(), *UNARY.values(), *BINARY.values()}
    assert declared == set(CASES)
    assert all(m in mb.MANGLED for n in declared for m in mb.mangled_names(n))


def _kernel(expr: str):
    ns = {"np": np, "math": math}
    exec(compile(f"def make(o, x, y):\n    return lambda i: o.__setitem__(i, {expr})\n",
                 f"<ptx math {expr}>", "exec"), ns)
    return ns["make"]


def _inputs(name: str, dt: type) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = DOMAIN.get(name, CASES[name][2])
    x = np.linspace(lo, hi, 37).astype(dt)
    return x, np.linspace(hi, lo, 37).astype(dt) * dt(0.75) + dt(0.1)


def _check_image(img: object, name: str, dt: type) -> str:
    ptx = img.binary.decode()  # type: ignore[attr-defined]
    assert ".target sm_90" in ptx
    assert "__nv_" not in ptx and "_Z" not in ptx and "nvvm_reflect" not in ptx
    assert ".extern" not in ptx  # everything defined: nothing left to link
    # libdevice keeps three slow paths out of line (noinline): the only calls left.
    callees = set(re.findall(r"call(?:\.uni)?\s+(?:\(\w+\),\s*)?(\w+)", ptx))
    assert callees <= {"__internal_trig_reduction_slowpathd", "__internal_accurate_pow",
                       "__internal_lgamma_pos"}, callees
    if name in INSTRUCTION:
        suffix = "f32" if dt is np.float32 else "f64"
        assert re.search(rf"\b{re.escape(INSTRUCTION[name])}[.a-z]*\.{suffix}\b", ptx), ptx
    ptxas_check(img.binary)  # type: ignore[attr-defined]
    return ptx


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_math_builtin_runs_and_compiles_to_ptx(kq: sycl.queue, ptx_images: list, name: str,
                                                dt: type) -> None:
    if dt is np.float64 and not kq.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64 on the kernel device")
    expr, ref, _ = CASES[name]
    x, y = _inputs(name, dt)
    out = np.zeros_like(x)
    with sycl.buffer(out) as O, sycl.buffer(x) as X, sycl.buffer(y) as Y:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            rx = X.get_access(h, sycl.access_mode.read)
            ry = Y.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(x.size), _kernel(expr)(o, rx, ry))

        kq.submit(cg).wait()
    want = ref(x) if name not in {n for n in BINARY.values()} else ref(x, y)  # type: ignore[operator]
    tol = {"rtol": 4e-6, "atol": 1e-6} if dt is np.float32 else {"rtol": 1e-13, "atol": 1e-14}
    np.testing.assert_allclose(out, np.asarray(want, np.float64).astype(dt), **tol)
    (img,) = ptx_images
    _check_image(img, name, dt)


def _registry_ir(ty: str) -> str:
    """A kernel calling every registered math built-in on ``ty``, as the compiler would declare them."""
    names = [(m, n) for m, (n, t) in mb.MANGLED.items() if t == ty]
    lines = ['target triple = "spirv64-unknown-unknown"']
    lines += [f"declare spir_func {ty} @{m}({', '.join([ty] * mb._arity(n))}) nounwind readnone"
              for m, n in names]
    lines += ["define spir_kernel void @k(ptr addrspace(1) %p) {",
              f"  %x = load {ty}, ptr addrspace(1) %p"]
    for k, (m, n) in enumerate(names):
        args = ", ".join([f"{ty} %x"] * mb._arity(n))
        lines += [f"  %r{k} = call spir_func {ty} @{m}({args})",
                  f"  %q{k} = getelementptr {ty}, ptr addrspace(1) %p, i64 {k + 1}",
                  f"  store {ty} %r{k}, ptr addrspace(1) %q{k}"]
    return "\n".join([*lines, "  ret void", "}", ""])


@pytest.mark.parametrize("ty", ["float", "double"])
def test_every_registered_math_builtin_emits_ptx(ty: str) -> None:
    ir = _registry_ir(ty)
    assert ir.count("declare") == sum(t == ty for _, t in mb.MANGLED.values()) > 40
    ptx = emit_ptx(ir, "k", "sm_90")
    text = ptx.decode()
    assert "__nv_" not in text and ".extern" not in text and "nvvm_reflect" not in text
    # No flush-to-zero: __nvvm_reflect("__CUDA_FTZ") folded to 0 (exp2f's ex2 without .ftz).
    if ty == "float":
        assert re.search(r"\bex2\.approx\.f32\b", text)
    ptxas_check(ptx)


def test_native_variants_use_the_fast_float_functions() -> None:
    assert mb.callee("native_sin", "float") == ("__nv_fast_sinf", True)
    assert "_Z10native_sind" not in mb.MANGLED  # native_* is float only
    assert mb.callee("half_sqrt", "float") == ("llvm.sqrt.f32", False)
    assert mb.callee("hypot", "double") == ("__nv_hypot", True)


def test_half_math_is_refused_by_name() -> None:
    from pysycl_numba.targets.ptx.retarget import retarget

    ir = ('target triple = "spirv64-unknown-unknown"\n'
          "declare spir_func half @_Z3sinDh(half)\n")
    with pytest.raises(NotImplementedError, match="_Z3sinDh"):
        retarget(ir)


def test_libdevice_is_found_under_the_given_roots(tmp_path: os.PathLike) -> None:
    lib = os.path.join(tmp_path, "cuda", "nvvm", "libdevice")
    os.makedirs(lib)
    open(os.path.join(lib, "libdevice.10.bc"), "wb").close()
    empty = os.path.join(tmp_path, "empty")
    found = mb.libdevice_path([empty, os.path.join(tmp_path, "cuda")])
    assert found == os.path.join(lib, "libdevice.10.bc")


def test_missing_libdevice_names_the_file_and_the_roots(tmp_path: os.PathLike) -> None:
    roots = [os.path.join(tmp_path, "a"), os.path.join(tmp_path, "b")]
    with pytest.raises(KernelSourceError) as exc:
        mb.libdevice_path(roots)
    assert exc.value.code == errc.build
    msg = str(exc.value)
    assert "libdevice.10.bc" in msg and roots[0] in msg and roots[1] in msg


def test_libdevice_default_roots_follow_cuda_home(tmp_path: os.PathLike,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    try:
        path = mb.libdevice_path()
    except KernelSourceError as e:  # no CUDA installed here: the message names CUDA_HOME's root
        assert str(tmp_path) in str(e)
    else:
        assert not path.startswith(str(tmp_path))  # an empty CUDA_HOME is skipped over

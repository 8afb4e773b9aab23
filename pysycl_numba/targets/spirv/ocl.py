"""OpenCL C built-in functions as LLVM declarations the SPIR-V backend knows.

LLVM's SPIR-V backend recognises OpenCL C built-ins by their Itanium-mangled
names (``_Z3sinf`` is ``sin(float)``) and lowers them to ``OpenCL.std``
extended instructions or to SPIR-V built-in variables (``get_global_id``).
Every name declared through this module is recorded in :data:`KNOWN_BUILTINS`,
the allow-list the IR guard checks declarations against: a declaration the
backend does not lower would become an unresolved import in the SPIR-V module.
"""

from __future__ import annotations

from llvmlite import ir as llir

#: Mangled names of the OpenCL built-ins this package may declare.
KNOWN_BUILTINS: set[str] = set()
#: The subset without side effects (``willreturn`` is added on the parsed
#: module: llvmlite's IR builder does not know the attribute).
PURE_BUILTINS: set[str] = set()

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)

# Itanium manglings of OpenCL C scalar types (half is "Dh").
_MANGLED_SCALAR = {
    "half": "Dh",
    "float": "f",
    "double": "d",
    "int": "i",
    "uint": "j",
    "long": "l",
    "ulong": "m",
    "size_t": "m",
    "void": "v",
}


def mangle(name: str, *arg_kinds: str) -> str:
    """Itanium-mangle an OpenCL C built-in taking scalar arguments.

    Args:
        name: the OpenCL C function name (``"sin"``).
        arg_kinds: OpenCL C scalar type names of the parameters (``"float"``).

    Returns:
        The mangled name, e.g. ``_Z3sinf``.
    """
    return f"_Z{len(name)}{name}" + "".join(_MANGLED_SCALAR[k] for k in arg_kinds)


def float_kind(llty: llir.Type) -> str:
    """OpenCL C type name of an LLVM floating-point type."""
    if isinstance(llty, llir.HalfType):
        return "half"
    if isinstance(llty, llir.FloatType):
        return "float"
    if isinstance(llty, llir.DoubleType):
        return "double"
    raise TypeError(f"not an OpenCL floating-point type: {llty}")


def declare(
    module: llir.Module,
    mangled: str,
    ret: llir.Type,
    args: list[llir.Type],
    *,
    pure: bool = True,
    convergent: bool = False,
) -> llir.Function:
    """Declare (once) an OpenCL built-in in ``module``.

    ``pure`` built-ins are marked ``readnone``/``nounwind``/``willreturn`` so
    that LLVM can hoist and delete them like arithmetic (unused
    ``get_global_size`` calls vanish from the kernel).
    """
    KNOWN_BUILTINS.add(mangled)
    if pure:
        PURE_BUILTINS.add(mangled)
    existing = module.globals.get(mangled)
    if existing is not None:
        return existing
    fn = llir.Function(module, llir.FunctionType(ret, args), name=mangled)
    fn.calling_convention = "spir_func"
    fn.attributes.add("nounwind")
    if pure:
        fn.attributes.add("readnone")
    if convergent:
        # Barriers and group collectives: LLVM must not make calls depend on
        # more (or other) control flow than the source has.
        fn.attributes.add("convergent")
    return fn


def call(
    builder: llir.IRBuilder,
    mangled: str,
    ret: llir.Type,
    args: list[llir.Value],
    *,
    pure: bool = True,
    convergent: bool = False,
) -> llir.Value:
    """Declare (once) and call the OpenCL built-in ``mangled``."""
    fn = declare(builder.module, mangled, ret, [a.type for a in args], pure=pure,
                 convergent=convergent)
    c = builder.call(fn, args)
    c.calling_convention = "spir_func"
    return c


def call_math(builder: llir.IRBuilder, name: str, args: list[llir.Value]) -> llir.Value:
    """Call the OpenCL math built-in ``name`` on floating-point ``args``."""
    llty = args[0].type
    kind = float_kind(llty)
    fn = declare(builder.module, mangle(name, *([kind] * len(args))), llty, [a.type for a in args])
    call = builder.call(fn, args)
    call.calling_convention = "spir_func"
    return call


def work_item_query(builder: llir.IRBuilder, name: str, dim: int) -> llir.Value:
    """Call an OpenCL work-item function (``get_global_id`` ...) for ``dim``.

    Returns an ``i64`` (``size_t`` on spirv64). ``dim`` is an OpenCL dimension
    (the caller reverses SYCL dimensions).
    """
    fn = declare(builder.module, mangle(name, "uint"), _I64, [_I32])
    call = builder.call(fn, [_I32(dim)])
    call.calling_convention = "spir_func"
    return call

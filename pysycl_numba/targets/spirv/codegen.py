"""LLVM code generation for SPIR-V: code libraries, linking, optimisation, emission.

Numba lowers every function (kernel body, device functions, internal
subroutines) into a :class:`SPIRVCodeLibrary` of ``llvmlite.ir`` modules.
:func:`emit_spirv` links a kernel's library, everything it links to and the
``spir_kernel`` wrapper into one module, internalises everything except the
entry point, runs LLVM's O3 pipeline (so the kernel inlines into one function
like hand-written OpenCL C), checks it with :mod:`pysycl_numba.targets.spirv.irguard` and
emits SPIR-V with llvmlite's built-in LLVM SPIR-V backend.

Backend facts (measured, see DESIGN.md): the triple ``spirv64v1.2`` is used
because the default ``spirv64`` emits SPIR-V 1.4, which ``spirv-val
--target-env opencl2.2`` rejects; a fresh ``TargetMachine`` is created per
module because reusing one crashed intermittently.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Iterator

import llvmlite.binding as ll
from llvmlite import ir as llir

from pysycl._core.exceptions import errc
from pysycl_numba import asserts, bounds
from pysycl_numba._numba_compat import CodeLibrary
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.targets.spirv import emit_worker
from pysycl_numba.targets.spirv.irguard import check_module
from pysycl_numba.targets.spirv.ocl import PURE_BUILTINS

_log = logging.getLogger("pysycl_numba.codegen")

SPIRV_TRIPLE = "spirv64v1.2-unknown-unknown"
#: The backend's options for SPIR-V: ``intel_sub_group_shuffle`` (sub-group shuffles)
#: needs ``SPV_INTEL_subgroups`` (``cl_intel_subgroups``); ``sub_group_shuffle`` of
#: ``cl_khr_subgroup_shuffle`` would need SPIR-V 1.3, which the triple rules out. The
#: extension is declared only by modules that use it.
SPIRV_OPTIONS = ("--spirv-ext=+SPV_INTEL_subgroups",)
#: LLVM options on while a range reduction's SPIR-V is emitted: no loop strength reduction.
#: The backend's codegen pipeline runs LSR, which turned the loop over items
#: (``x[i]``, ``i += G``) into a byte-pointer increment; Intel's OpenCL CPU compiler then
#: vectorised the loop across work-items poorly: the sum of 2^24 float32 ran at 0.87-0.89x
#: the OpenCL C two-stage reduction, 1.20-1.22x with the index kept (docs/performance.md,
#: "Range reductions"). Other kernels keep it (the tiled matmul measured worse without).
INDEX_LOOP_FLAGS = ("-disable-lsr",)

# A mask of a few bits (``t % 4``, ``t & 3``) in the IR, or a sign-extended bit-field
# (``(t << 61) >> 61``): ScalarEvolution reads it as an extended truncation to an integer
# type SPIR-V lacks (i2), and the backend's LSR then kept an i2 induction variable that its
# type legalization widened to i8 *without* the wrap: a 4-buffer pipeline's
# ``loc[(t % 4) * T + j]`` indexed past its buffers (Intel's CPU runtime segfaulted the
# process; smaller overruns read wrong data). Such kernels are emitted without LSR
# (:func:`narrow_masks`).
_MASK = re.compile(r"= (?:and|urem) i(8|16|32|64) %[^,]+, (\d+)\b")
_SHL = re.compile(r"(%[\w.\"-]+) = shl (?:nuw )?(?:nsw )?i(8|16|32|64) %[^,]+, (\d+)\b")
_ASHR = re.compile(r"= ashr (?:exact )?i(?:8|16|32|64) (%[\w.\"-]+), (\d+)\b")


def narrow_masks(text: str) -> bool:
    """Whether LLVM IR ``text`` masks an integer to a width SPIR-V cannot hold: an
    ``and`` with a run of ones (shifted or not) below the top bit whose length is not 1, 8,
    16 or 32, or a ``urem`` by such a power of two (ScalarEvolution's zext-of-trunc); or an
    ``ashr`` of a ``shl`` by at least as much that keeps such a width (its sext-of-trunc)."""
    shl = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in _SHL.finditer(text)}
    for m in _ASHR.finditer(text):  # ashr (shl x, c1), c2 with c1 >= c2: sext (trunc x)
        width, c1 = shl.get(m.group(1), (0, -1))
        if c1 >= int(m.group(2)) and width - c1 not in (8, 16, 32):
            return True
    for m in _MASK.finditer(text):
        width, c = int(m.group(1)), int(m.group(2))
        if m.group(0).startswith("= urem"):
            if c < 2 or c & (c - 1):
                continue
            c -= 1
        if c <= 0:
            continue
        low = (c & -c).bit_length() - 1  # trailing zeros
        run = c >> low
        if run & (run + 1):  # not a contiguous run of ones
            continue
        ones = run.bit_length()
        if low + ones < width and ones not in (1, 8, 16, 32):  # (i1: measured right)
            return True
    return False


# Emission is serialised: LLVM's SPIR-V backend keeps global state (the
# process-wide --spirv-ext option, target registration).
_emit_lock = threading.Lock()


@functools.cache
def _init_llvm() -> None:
    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()


def _target() -> ll.Target:
    _init_llvm()
    return ll.Target.from_triple(SPIRV_TRIPLE)


def _new_target_machine() -> ll.TargetMachine:
    # A fresh TargetMachine per module: reusing one crashed intermittently.
    return _target().create_target_machine(opt=3)


@functools.cache
def spirv_data_layout() -> str:
    """The data layout LLVM's SPIR-V backend uses for spirv64."""
    return str(_new_target_machine().target_data)


class SPIRVCodeLibrary(CodeLibrary):
    """The LLVM IR modules of one Numba-compiled function, plus what it links."""

    def __init__(self, codegen: SPIRVCodegen, name: str) -> None:
        super().__init__(codegen, name)
        self._modules: list[llir.Module] = []
        self._linking: list[SPIRVCodeLibrary] = []

    def add_linking_library(self, library: SPIRVCodeLibrary) -> None:
        """Link ``library`` into this one when the kernel is emitted."""
        if library is not self and library not in self._linking:
            self._linking.append(library)

    def add_ir_module(self, ir_module: llir.Module) -> None:
        """Add a lowered module."""
        self._modules.append(ir_module)

    def finalize(self) -> None:
        """Nothing to do: optimisation happens once, on the linked kernel."""
        self._finalized = True

    def _raise_if_finalized(self) -> None:
        # Numba may add subroutines after a library was "finalized"; our
        # libraries are plain IR containers until emit_spirv, so allow it.
        return

    def get_function(self, name: str) -> llir.Function:
        """Return the function ``name`` defined in this library's modules."""
        for m in self._modules:
            gv = m.globals.get(name)
            if isinstance(gv, llir.Function):
                return gv
        raise KeyError(name)

    def get_llvm_str(self) -> str:
        """The textual IR of this library's own modules."""
        return "\n".join(str(m) for m in self._modules)

    def get_asm_str(self) -> str:
        """Not available per library; use :func:`emit_spirv`."""
        raise NotImplementedError("SPIR-V is emitted per kernel, see emit_spirv")

    def walk(self) -> Iterator[SPIRVCodeLibrary]:
        """This library and all libraries it links, transitively, once each."""
        seen: set[int] = set()
        stack: list[SPIRVCodeLibrary] = [self]
        while stack:
            lib = stack.pop()
            if id(lib) in seen:
                continue
            seen.add(id(lib))
            yield lib
            stack.extend(reversed(lib._linking))

    @property
    def modules(self) -> list[llir.Module]:
        """The lowered modules of this library (not of linked libraries)."""
        return list(self._modules)


class SPIRVCodegen:
    """The code generator object Numba's target context asks for."""

    def __init__(self) -> None:
        self._data_layout = spirv_data_layout()
        self._target_data = ll.create_target_data(self._data_layout)

    def _create_empty_module(self, name: str) -> llir.Module:
        module = llir.Module(name)
        module.triple = SPIRV_TRIPLE
        module.data_layout = self._data_layout
        return module

    def create_library(self, name: str, **kwargs: object) -> SPIRVCodeLibrary:
        """A new, empty code library."""
        return SPIRVCodeLibrary(self, name)

    @property
    def target_data(self) -> ll.TargetData:
        """Sizes and alignments of spirv64."""
        return self._target_data

    def magic_tuple(self) -> tuple[str, str, str]:
        """Identifies the code generation target (for Numba's caches)."""
        return (SPIRV_TRIPLE, "", "")


def link_library(
    library: SPIRVCodeLibrary, wrapper: llir.Module, context: ll.ContextRef
) -> ll.ModuleRef:
    """Parse and link ``wrapper`` with every module of ``library``, transitively."""
    main = ll.parse_assembly(str(wrapper), context=context)
    try:
        for lib in library.walk():
            for m in lib.modules:
                main.link_in(ll.parse_assembly(str(m), context=context))
    except BaseException:
        main.close()  # before its context (see emit_spirv)
        raise
    return main


def _prepare_for_optimization(module: ll.ModuleRef, entry: str) -> None:
    # Internal linkage on everything but the kernel lets LLVM inline, delete
    # and specialise freely (the kernel is the module's only interface).
    # alwaysinline: recursion is rejected before lowering, and OpenCL
    # compilers inline everything anyway; one flat kernel function is what
    # hand-written OpenCL C gives the device compiler.
    for fn in module.functions:
        if fn.is_declaration:
            if fn.name in PURE_BUILTINS:
                # Lets LLVM delete unused work-item queries and math calls.
                fn.add_function_attribute("willreturn")
            continue
        if fn.name == entry:
            continue
        fn.linkage = ll.Linkage.internal
        if fn.name not in (bounds.PUBLISH, asserts.PUBLISH):  # noinline: cold paths (bounds)
            fn.add_function_attribute("alwaysinline")
    for gv in module.global_variables:
        if not gv.is_declaration:
            gv.linkage = ll.Linkage.internal


def _optimize(module: ll.ModuleRef, tm: ll.TargetMachine, level: int) -> None:
    pto = ll.create_pipeline_tuning_options(speed_level=level)
    # Scalar code: the OpenCL device compiler vectorises across work-items;
    # vector IR would only get in its way (and widen the SPIR-V surface).
    pto.loop_vectorization = False
    pto.slp_vectorization = False
    # Unrolling too is the device compiler's job: LLVM's full unroll of a tile
    # loop (with i8-canonicalised GEPs) kept Intel's OpenCL CPU compiler from
    # vectorising across work-items — tiled matmul ran at 0.55x of OpenCL C;
    # without it, 0.9x (benchmarks/bench_ndrange.py, docs/performance.md).
    pto.loop_unrolling = False
    pb = ll.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(module, pb)


def optimised_ir(library: SPIRVCodeLibrary, wrapper: llir.Module, entry: str,
                 float_atomics: bool = False, odd_ints: bool = False) -> str:
    """Link, optimise and check one kernel: the module's LLVM IR text.

    The IR is SPIR-flavoured (``spir_kernel``, OpenCL C built-ins by their
    mangled names): the SPIR-V target emits it as is, the PTX target
    (:mod:`pysycl_numba.targets.ptx`) retargets it (``float_atomics``: PTX has
    native floating-point ``atomicrmw``, SPIR-V does not; ``odd_ints``: integers of any
    width, which PTX takes and SPIR-V does not).

    Raises:
        pysycl_numba.errors.KernelSourceError: if the IR is not a valid kernel.
    """
    with _emit_lock:
        # A fresh LLVMContext per kernel keeps modules independent. Modules are
        # closed before their context, explicitly: left to the garbage
        # collector (an exception's traceback holding this frame is a cycle),
        # the context could be finalised first, and disposing a module of a
        # disposed context crashed the process in the next compile.
        context = ll.create_context()
        module = None
        try:
            module = link_library(library, wrapper, context)
            module.triple = SPIRV_TRIPLE
            module.data_layout = spirv_data_layout()
            _prepare_for_optimization(module, entry)
            module.verify()
            if not odd_ints:  # SPIR-V: no closed-form loop exit values (they need i33/i65)
                ll.set_option("pysycl", "-replexitval=never")
            try:
                _optimize(module, _new_target_machine(), 3)
            finally:
                if not odd_ints:  # LLVM's default again (Numba's own JIT shares this LLVM)
                    ll.set_option("pysycl", "-replexitval=cheap")
            stripped = _strip_dead_globals(module, context)
            if stripped is not module:
                module.close()
                module = stripped
            check_module(module, entry, float_atomics, odd_ints)
            return str(module)
        finally:
            if module is not None:
                module.close()
            context.close()


_SITOFP_I1 = re.compile(r"(%[\w.\"-]+) = sitofp (<(\d+) x i1>|i1) (%[\w.\"-]+) to "
                        r"(?:<\d+ x (half|float|double)>|(half|float|double))")
_MINUS_ONE = {"half": "0xHBC00", "float": "-1.000000e+00", "double": "-1.000000e+00"}


def signed_bool_to_float(text: str) -> str:
    """``sitofp i1 x`` (true is -1) as a ``select``: LLVM 22's SPIR-V backend converts it as +1.

    InstCombine folds ``sitofp (sext i1)`` -- a vector comparison's -1/0 converted to
    float (``(v > 3.0).convert(np.float32)``) -- into ``sitofp i1``, which the backend then
    emits as ``OpSelect 1.0, 0.0`` (measured on Intel's CPU runtime: +1 instead of -1).
    """
    def repl(m: re.Match[str]) -> str:
        res, _, n, src, vfty, sfty = m.groups()
        fty = vfty or sfty
        one = f"{fty} {_MINUS_ONE[fty]}"
        if n is None:
            return f"{res} = select i1 {src}, {one}, {fty} 0.0"
        ty = f"<{n} x {fty}>"
        ones = ", ".join([one] * int(n))
        return f"{res} = select <{n} x i1> {src}, {ty} <{ones}>, {ty} zeroinitializer"

    return _SITOFP_I1.sub(repl, text)


def emit_spirv(library: SPIRVCodeLibrary, wrapper: llir.Module, entry: str,
               index_loops: bool = False) -> tuple[bytes, str]:
    """Link, optimise, check and emit one kernel as SPIR-V.

    Args:
        library: the code library of the kernel's Numba function.
        wrapper: the module holding the ``spir_kernel`` entry point.
        entry: the entry point's name.
        index_loops: emit without the backend's loop strength reduction
            (:data:`INDEX_LOOP_FLAGS`): a range reduction's loop over items keeps its
            integer index instead of becoming a byte-pointer increment. A kernel that
            masks integers to a few bits is emitted so too (:func:`narrow_masks`).

    Returns:
        ``(spirv_binary, optimised_llvm_ir_text)``.

    Raises:
        pysycl_numba.errors.KernelSourceError: if the IR cannot be emitted.
    """
    text = signed_bool_to_float(optimised_ir(library, wrapper, entry))
    binary = _emit_checked(text, entry,
                           INDEX_LOOP_FLAGS if index_loops or narrow_masks(text) else ())
    _log.debug("emitted %s: %d bytes of SPIR-V", entry, len(binary))
    return binary, text


def _emit_checked(text: str, entry: str, flags: tuple[str, ...] = ()) -> bytes:
    # Emission runs in a worker process (see emit_worker): the backend's
    # process-wide state can go bad (duplicate result ids) or abort().
    return emit_in_worker(text, SPIRV_TRIPLE, "SPIR-V", entry, options=SPIRV_OPTIONS,
                          flags=flags)


def emit_in_worker(text: str, triple: str, backend: str, entry: str,
                   ptx: dict[str, str] | None = None, options: tuple[str, ...] = (),
                   flags: tuple[str, ...] = ()) -> bytes:
    """The emit worker's output for ``text``; its failures as the kernel's ``errc.build``.

    Args:
        backend: the LLVM backend's name for messages (``"SPIR-V"``, ``"NVPTX"``).
        ptx: the PTX request's options (``emit_worker._Client.emit``).
        options: LLVM options the worker sets for good; ``flags``: boolean LLVM options
            on for this emission only.
    """
    try:
        return emit_worker.client.emit(text, triple, options, ptx=ptx, flags=flags)
    except emit_worker.EmitCrash as e:
        raise KernelSourceError(
            f"LLVM's {backend} backend crashed on {entry} ({e}); your Python process is fine. "
            "Simplify the kernel or report this with the kernel's code", None, errc.build,
        ) from e
    except RuntimeError as e:
        raise KernelSourceError(
            f"LLVM's {backend} backend could not emit {entry}: {e}", None, errc.build,
        ) from e


def _strip_dead_globals(module: ll.ModuleRef, context: ll.ContextRef) -> ll.ModuleRef:
    """Remove unreferenced external global declarations (Numba environments)."""
    dead = []
    text = str(module)
    for gv in module.global_variables:
        if gv.is_declaration and text.count(f"@{gv.name}") + text.count(f'@"{gv.name}"') <= 1:
            dead.append(gv.name)
    if not dead:
        return module
    lines = [
        ln
        for ln in text.splitlines()
        if not any(ln.startswith((f"@{n} ", f'@"{n}" ')) for n in dead)
    ]
    stripped = ll.parse_assembly("\n".join(lines), context=context)
    try:
        stripped.verify()
    except BaseException:
        stripped.close()
        raise
    return stripped

"""``sycl::opencl::create_bundle`` and ``make_kernel_bundle``: bundles from OpenCL objects."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pysycl._bundles.bundle import (
    _check_devs,
    _digest,
    _Image,
    bundle_state,
    count,
    kernel_bundle,
    new_bundle,
)
from pysycl._core.exceptions import errc, exception
from pysycl._objects.context import context
from pysycl._objects.device import device

if TYPE_CHECKING:
    import pyopencl

    from pysycl._backends.opencl.programs import _RawProgram


def _state_of(clp: ModuleType, prg: _RawProgram, devs: Sequence[device]) -> str:
    types = {clp.binary_type(prg, d.native) for d in devs}
    if types <= {clp.BINARY_TYPE_EXECUTABLE}:
        return "executable"
    if types <= {clp.BINARY_TYPE_COMPILED_OBJECT, clp.BINARY_TYPE_INTERMEDIATE,
                 clp.BINARY_TYPE_LIBRARY}:
        return "object"
    if types <= {clp.BINARY_TYPE_NONE}:
        return "input"
    return "mixed"


def create_bundle(ctx: context, devs: Sequence[device], cl_objects: Sequence[Any], *,
                  state: bundle_state = bundle_state.executable,
                  _single: bool = False) -> kernel_bundle:
    """A bundle in ``state`` from OpenCL programs, or an executable one from OpenCL kernels.

    Programs are compiled and linked as ``state`` needs (several programs are
    linked into one for the executable state). Kernel names are the OpenCL
    function names (``kb.ext_oneapi_get_kernel``-style lookup via
    ``kb.ext_pysycl_get_kernel_by_name``).

    Raises:
        exception: ``errc.build`` when an OpenCL call fails; ``errc.invalid`` for
            a program already executable but ``state`` not, an input ``state``
            for a program with a binary, or objects of another context.
        TypeError: mixed or non-pyopencl objects.
    """
    from pysycl._backends.opencl import programs as clp

    what = "make_kernel_bundle" if _single else "create_bundle"
    if not isinstance(ctx, context):
        raise TypeError(f"{what} takes a sycl.context, not {ctx!r}")
    if not isinstance(state, bundle_state) or state is bundle_state.ext_oneapi_source:
        raise TypeError(f"{what}: state must be bundle_state.input/object/executable")
    dl = _check_devs(ctx, devs, what)
    objs = [cl_objects] if not isinstance(cl_objects, (list, tuple)) else list(cl_objects)
    if not objs:
        raise exception(errc.invalid, f"{what}: no OpenCL objects given", ctx)
    if all(clp.is_cl_object(o, "kernel") for o in objs):
        if state is not bundle_state.executable:
            raise TypeError("create_bundle from cl_kernel objects makes executable bundles only")
        return new_bundle(ctx, dl, state, [_kernel_image(clp, ctx, dl, k, what) for k in objs])
    if not all(clp.is_cl_object(o, "program") for o in objs):
        raise TypeError(f"{what} takes pyopencl Program objects or Kernel objects (not mixed)")
    progs = [clp.raw(o) for o in objs]
    for prg in progs:
        if clp.handle(clp.program_context(prg)) != ctx.key:
            raise exception(errc.invalid, f"{what}: a program belongs to another context", ctx)
    progs = _advance(clp, ctx, dl, progs, state, what)
    images = []
    for p in progs:
        names = clp.kernel_names(p) if state is bundle_state.executable else []
        images.append(_Image(state, "native", _digest("clp", str(clp.handle(p))),
                             programs={d: p for d in dl}, names=names))
    return new_bundle(ctx, dl, state, images)


def _kernel_image(clp: ModuleType, ctx: context, dl: Sequence[device], k: pyopencl.Kernel,
                  what: str) -> _Image:
    """The executable image of one OpenCL kernel (its program, its name)."""
    if clp.handle(clp.kernel_context(k)) != ctx.key:
        raise exception(errc.invalid, f"{what}: a kernel belongs to another context", ctx)
    prg = clp.kernel_program(k)
    name = clp.kernel_name(k)
    img = _Image(bundle_state.executable, "native", _digest("clk", str(clp.handle(k))),
                 programs={d: prg for d in dl}, names=[name])
    img.clk.update({(d.key, name): k for d in dl})
    return img


def _advance(clp: ModuleType, ctx: context, dl: Sequence[device], progs: list[_RawProgram],
             state: bundle_state, what: str) -> list[_RawProgram]:

    """Compile and link OpenCL programs as far as ``state`` needs; the resulting programs."""
    cl_devs = [d.native for d in dl]
    states = [_state_of(clp, p, dl) for p in progs]
    rank = {"input": 0, "object": 1, "executable": 2}
    want = rank[state.value]
    for s in states:
        if s == "mixed":
            raise exception(errc.invalid, f"{what}: a program is in different states on "
                            "different devices", ctx)
        if s == "executable" and state is not bundle_state.executable:
            raise exception(errc.invalid, f"{what}: the OpenCL program is already executable; "
                            f"it cannot make a bundle in {state!r}", ctx)
        if state is bundle_state.input and s != "input":
            raise exception(errc.invalid, f"{what}: the OpenCL program already has a binary; it "
                            "cannot make a bundle in bundle_state.input", ctx)
    try:
        if want >= 1:
            for i, (p, s) in enumerate(zip(progs, states, strict=False)):
                if s == "input":
                    clp.compile_program(p, cl_devs)
                    count("cl_compiles")
                    states[i] = "object"
        if want == 2 and any(s == "object" for s in states):
            objects = [p for p, s in zip(progs, states, strict=False) if s == "object"]
            exes = [p for p, s in zip(progs, states, strict=False) if s == "executable"]
            progs = [*exes, clp.link_programs(ctx.native, objects, cl_devs)]
            count("cl_links")
    except exception as e:
        if e.code() is errc.build:
            raise
        raise exception(errc.build, f"{what}: {e.what()}", ctx) from e
    return progs

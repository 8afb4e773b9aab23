"""The kernel_compiler extension (``sycl_ext_oneapi_kernel_compiler``): bundles from source.

:mod:`pysycl.ext.oneapi.experimental` re-exports it; its docstring is the user's
description (languages, build options, an example).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pysycl._bundles.kernel_bundle import (
    _digest,
    _Image,
    _programs,
    bundle_state,
    count,
    kernel_bundle,
    new_bundle,
)
from pysycl._bundles.ops import _check_devs, check_ptx_options
from pysycl._bundles.properties import build_options, save_log
from pysycl._core.exceptions import errc, exception
from pysycl._core.first_use import first_use
from pysycl._objects.info import source_language
from pysycl.property import owner_of

if TYPE_CHECKING:
    from pysycl._core.backends import Programs
    from pysycl._objects.context import context
    from pysycl._objects.device import device


def create_kernel_bundle_from_source(ctxt: context, lang: source_language,
                                     source: str | bytes) -> kernel_bundle:
    """A bundle in ``bundle_state.ext_oneapi_source`` holding ``source`` (not compiled).

    Raises:
        exception: ``errc.invalid`` when no device of ``ctxt`` supports ``lang``.
        TypeError: text given for a binary language or bytes for a text one.
    """
    from pysycl._objects.context import context

    if not isinstance(ctxt, context):
        raise TypeError(f"create_kernel_bundle_from_source takes a sycl.context, not {ctxt!r}")
    if not isinstance(lang, source_language):
        raise TypeError(f"expected a source_language, not {lang!r}")
    if lang in (source_language.opencl, source_language.ext_pysycl_ptx):
        if not isinstance(source, str):
            raise TypeError(f"source_language.{lang.name} is a text format: pass a str")
        fmt = "opencl_c" if lang is source_language.opencl else "ptx"
        img = _Image(bundle_state.ext_oneapi_source, fmt, _digest(fmt, source),
                     source=source, lang=lang)
    else:
        if not isinstance(source, (bytes, bytearray, memoryview)):
            raise TypeError("source_language.spirv is a binary format: pass bytes")
        il = bytes(source)
        img = _Image(bundle_state.ext_oneapi_source, "spirv", _digest("spv", il), il=il,
                     lang=lang)
    if not any(d.ext_oneapi_can_compile(lang) for d in ctxt.get_devices()):
        raise exception(errc.invalid, f"no device of the context can compile {lang!r} "
                        f"(devices: {ctxt.get_devices()})", ctxt)
    return new_bundle(ctxt, ctxt.get_devices(), bundle_state.ext_oneapi_source, [img])


def _put_logs(logs: list[save_log], log: str, dl: Sequence[device]) -> None:
    """Give each ``save_log`` the build log (saying so where the driver's is empty)."""
    if logs:
        log = log or "\n".join(f"--- {d.display_name} ---\n(the driver's build log is empty)"
                               for d in dl)
        for sl in logs:
            sl.put(log)


def _program(clp: Programs, ctx: context, img: _Image, dl: Sequence[device],
             options: str) -> tuple[Any, str]:
    """(a new program of source image ``img`` for ``dl``, the options to build it with)."""
    if img.lang is source_language.opencl:
        # Argument info lets a Python int take the kernel's declared type (set_arg);
        # Intel's compiler keeps it anyway, NVIDIA's only when asked.
        build_opts = options if "-cl-kernel-arg-info" in options.split() else \
            f"{options} -cl-kernel-arg-info".strip()
        return clp.from_source(ctx.native, img.source), build_opts
    if img.lang is source_language.ext_pysycl_ptx:  # the driver's JIT: a "binary" of text
        check_ptx_options(options, "build")
        return clp.from_binaries(ctx.native, [d.native for d in dl],
                                 [img.source.encode()] * len(dl)), options
    return clp.from_il(ctx.native, img.il), options


@first_use("sycl.build of a source bundle")  # first-time work (docs/testing.md)
def build(source_bundle: kernel_bundle, devs: Sequence[device] | None = None,
          properties: Iterable[build_options | save_log] = ()) -> kernel_bundle:
    """Build a source bundle into an executable bundle (``clBuildProgram``).

    ``build(kb_src)`` builds for the context's devices; ``build(kb_src, devs)``
    for ``devs``. Properties: :class:`build_options`, :class:`save_log`.

    Raises:
        exception: ``errc.invalid`` — a device not in the bundle's context, a device that
            cannot compile the language, options the driver rejects; ``errc.build`` — the
            build fails (the message is the full build log).
        TypeError: the bundle is not in ``ext_oneapi_source`` state, or an
            unsupported property (ill formed in C++).
    """
    if not isinstance(source_bundle, kernel_bundle):
        raise TypeError(f"build takes a sycl.kernel_bundle, not {type(source_bundle).__name__}")
    if source_bundle.get_state() is not bundle_state.ext_oneapi_source:
        raise TypeError("sycl.ext.oneapi.experimental.build takes a bundle in "
                        f"bundle_state.ext_oneapi_source, not {source_bundle.get_state().name}; "
                        "use sycl.build for input bundles")
    ctx = source_bundle.get_context()
    dl = _check_devs(ctx, ctx.get_devices() if devs is None else devs, "build")
    opts: list[str] = []
    logs: list[save_log] = []
    for p in properties or ():
        if isinstance(p, build_options):
            opts.extend(p.opts)
        elif isinstance(p, save_log):
            logs.append(p)
        elif owner_of(p) is not None:  # a SYCL property of another class
            raise exception(errc.invalid, f"build does not take {p!r}, a property of "
                            f"{owner_of(p)}; it takes build_options and save_log")
        else:
            raise TypeError(f"build: unsupported property {p!r} (build_options and save_log "
                            "are allowed)")
    (img,) = source_bundle.images
    for d in dl:
        if not d.ext_oneapi_can_compile(img.lang):
            raise exception(errc.invalid, f"build: device {d!r} cannot compile {img.lang!r}",
                            ctx)
    options = " ".join(opts)
    clp = _programs(ctx)
    prg, build_opts = _program(clp, ctx, img, dl, options)
    clp.build_program(prg, [d.native for d in dl], build_opts)
    count("cl_source_builds")
    _put_logs(logs, clp.build_log(prg, [d.native for d in dl]), dl)
    names = clp.kernel_names(prg)
    exe = _Image(bundle_state.executable, img.format, _digest("exe", options, img.key),
                 programs={d: prg for d in dl}, names=names, lang=img.lang, options=options)
    return new_bundle(ctx, dl, bundle_state.executable, [exe])


__all__ = ["build", "build_options", "create_kernel_bundle_from_source", "save_log",
           "source_language"]

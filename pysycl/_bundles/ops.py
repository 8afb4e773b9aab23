"""Kernel-bundle operations (SYCL 2020 §4.11.6 to §4.11.11): get_kernel_bundle,
has_kernel_bundle, is_compatible, join, compile, link, build, and the hooks the
launcher uses (``use_kernel_bundle``). The bundle and device-image classes are in
:mod:`pysycl._bundles.kernel_bundle`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pysycl._bundles.compat import (
    PYTHON_TARGET,
    _check_kids,
    _kid_compatible,
    _variant_compatible,
    _variant_target,
)
from pysycl._bundles.join import bundle_list
from pysycl._bundles.kernel_bundle import (
    _check_state,
    _digest,
    _Image,
    _input_image,
    _programs,
    _python_image,
    bundle_state,
    count,
    device_image,
    image_view,
    kernel_bundle,
    new_bundle,
    unique_images,
)
from pysycl._bundles.kernel_id import auto_name, get_kernel_id, kernel_id, variant_of, variants_of
from pysycl._bundles.kernel_id import get_kernel_ids as _all_kernel_ids
from pysycl._bundles.properties import build_options
from pysycl._core.exceptions import COMPILE_ERRORS, errc, exception, hidden_in_tracebacks, user_frames
from pysycl._core.first_use import first_use
from pysycl._core.ptx_link import link_ptx
from pysycl._kernels import specconst as _specconst
from pysycl.property import owner_of

if TYPE_CHECKING:
    import types

    import numpy as np

    from pysycl._bundles.properties import save_log
    from pysycl._kernels.cache import Kernel
    from pysycl._kernels.specconst import specialization_id
    from pysycl._objects.context import context
    from pysycl._objects.device import device


_log = logging.getLogger("pysycl.bundle")

#: pytest leaves this module's frames out of a compile error's traceback (user_frames).
__tracebackhide__ = hidden_in_tracebacks


def _in_context(ctx: context, dev: device) -> bool:
    devs = ctx.devices
    d = dev
    while d is not None:
        if d in devs:
            return True
        d = d.parent
    return False


def _check_devs(ctx: context, devs: device | Iterable[device], what: str) -> list[device]:
    from pysycl._objects.device import device

    if isinstance(devs, device):
        devs = [devs]
    if isinstance(devs, (str, bytes)) or not isinstance(devs, Iterable):
        raise TypeError(f"{what}: devs must be a sequence of sycl.device, not {devs!r}")
    out = list(dict.fromkeys(devs))
    if not out:
        raise exception(errc.invalid, f"{what}: the device list is empty", ctx)
    for d in out:
        if not isinstance(d, device):
            raise TypeError(f"{what}: devs must hold sycl.device objects, not {d!r}")
        if not _in_context(ctx, d):
            raise exception(errc.invalid, f"{what}: device {d!r} is not a device (or a "
                            f"descendant of a device) of the context {ctx!r}", ctx)
    return out


def _check_online(devs: Sequence[device], state: bundle_state, what: str) -> None:
    from pysycl._objects.aspects import aspect

    need = {bundle_state.input: aspect.online_compiler,
            bundle_state.object: aspect.online_linker}.get(state)
    if need is None:
        return
    for d in devs:
        if not d.has(need):
            raise exception(errc.invalid, f"{what}: a bundle in {state!r} needs {need!r}, "
                            f"which device {d!r} does not have")


def _options(properties: Iterable[build_options | save_log], what: str) -> str:
    """Build options from ``properties`` (pysycl accepts kernel_compiler's build_options)."""
    opts: list[str] = []
    for p in properties or ():
        if isinstance(p, build_options):
            opts.extend(p.opts)
        else:
            of = f", a property of {owner_of(p)}" if owner_of(p) is not None else ""
            raise exception(errc.invalid, f"{what} does not take {p!r}{of} (SYCL 2020 "
                            "defines no property for it; pysycl accepts "
                            "sycl.ext.oneapi.experimental.build_options)")
    return " ".join(opts)


def _parse(ctx: context, args: tuple[Any, ...], devs: device | Iterable[device] | None,
           kernel_ids: kernel_id | Iterable[kernel_id] | None,
           selector: Callable[[device_image], Any] | None, kernel_name: str | None, what: str
           ) -> tuple[list[device], list[kernel_id] | None, Callable[[device_image], Any] | None]:
    """Sort the positional overload arguments into devs, kernel ids and a selector."""
    from pysycl._objects.context import context
    from pysycl._objects.device import device

    if not isinstance(ctx, context):
        raise TypeError(f"{what}: the first argument must be a sycl.context, not {ctx!r}")
    for a in args:
        if isinstance(a, device) or (isinstance(a, Sequence) and not isinstance(a, str) and (
                not a or all(isinstance(x, device) for x in a))):
            if devs is not None:
                raise TypeError(f"{what}: devices given twice")
            devs = a
        elif isinstance(a, kernel_id) or (isinstance(a, Sequence) and not isinstance(a, str)
                                          and all(isinstance(x, kernel_id) for x in a)):
            if kernel_ids is not None:
                raise TypeError(f"{what}: kernel ids given twice")
            kernel_ids = a
        elif callable(a):
            if selector is not None:
                raise TypeError(f"{what}: selector given twice")
            selector = a
        else:
            raise TypeError(f"{what}: unexpected argument {a!r}")
    if kernel_name is not None:
        if kernel_ids is not None:
            raise TypeError(f"{what}: give kernel_name= or kernel ids, not both")
        kernel_ids = [get_kernel_id(kernel_name)]
    if kernel_ids is not None and selector is not None:
        raise TypeError(f"{what}: give kernel ids or a selector, not both")
    dl = _check_devs(ctx, ctx.get_devices() if devs is None else devs, what)
    kids = None if kernel_ids is None else _check_kids(kernel_ids, what)
    return dl, kids, selector


def _images_of(kids: Iterable[kernel_id], dl: Sequence[device]) -> tuple[list[_Image],
                                                                         list[_Image]]:
    """(input images, executable "python" images) of the variants of ``kids`` for the
    devices ``dl``: an input image per compatible image target (compiled, or loaded from
    the kernel cache), an executable one for devices that run the Python kernel itself."""
    images, interpreted = [], []
    for kid in kids:
        for v in variants_of(kid):
            targets = {_variant_target(d) for d in dl if _variant_compatible(v, d)}
            for target in sorted(t for t in targets if t is not None):
                if target == PYTHON_TARGET:
                    interpreted.append(_python_image(v, [d for d in dl
                                                         if _variant_target(d) == target]))
                    continue
                img = _input_image(v, target)  # compiles (or loads from the kernel cache)
                if any(img.compatible(d) for d in dl):
                    images.append(img)
    return images, interpreted


@first_use("sycl.get_kernel_bundle")  # compiles and builds: first-time work (docs/testing.md)
def get_kernel_bundle(ctx: context, *args: Any, state: bundle_state,
                      devs: device | Iterable[device] | None = None,
                      kernel_ids: kernel_id | Iterable[kernel_id] | None = None,
                      selector: Callable[[device_image], Any] | None = None,
                      kernel_name: str | None = None) -> kernel_bundle:
    """A bundle in ``state`` of the application's kernels (§4.11.7), all overloads::

        get_kernel_bundle(ctx, state=...)
        get_kernel_bundle(ctx, devs, state=...)
        get_kernel_bundle(ctx, [devs,] kernel_ids, state=...)
        get_kernel_bundle(ctx, [devs,] selector, state=...)      # selector(device_image) -> bool
        get_kernel_bundle(ctx, [devs,] kernel_name="...", state=...)

    An empty list positional is taken as ``devs``: pass an empty kernel id list
    as ``kernel_ids=[]``.

    Raises:
        exception: ``errc.invalid`` — ``devs`` empty, a device not in ``ctx``, a
            kernel incompatible with every device, a device without
            ``online_compiler`` (input) / ``online_linker`` (object);
            ``errc.build`` — the online compile or link fails.
        ValueError: ``kernel_name`` names no kernel (ill formed in C++).
    """
    what = "get_kernel_bundle"
    state = _check_state(state, what)
    dl, kids, sel = _parse(ctx, args, devs, kernel_ids, selector, kernel_name, what)
    if kids is not None:
        for k in kids:
            if not any(_kid_compatible(k, d) for d in dl):
                raise exception(errc.invalid, f"{what}: kernel {k.get_name()!r} is not compatible "
                                f"with any of the devices {dl}", ctx)
    _check_online(dl, state, what)
    wanted = _all_kernel_ids() if kids is None else kids
    t0 = time.perf_counter()
    try:
        images, interpreted = _images_of(wanted, dl)
    except COMPILE_ERRORS as e:
        raise user_frames(e) from e.__cause__  # the kernel's error: see the message
    if sel is not None and state is bundle_state.input:
        images = [i for i in images if sel(image_view(i))]
    _log.info("kernel bundle: %d input image(s) of %d kernel id(s) ready in %.1f ms",
              len(images), len(wanted), 1e3 * (time.perf_counter() - t0))
    kb = new_bundle(ctx, dl, bundle_state.input, images)
    if state is bundle_state.object:
        kb = compile(kb, dl)
    elif state is bundle_state.executable:
        built = build(kb, dl).images if images else ()
        kb = new_bundle(ctx, dl, state, [*built, *interpreted])
    if sel is not None and state is not bundle_state.input:
        kb = new_bundle(ctx, dl, state, [i for i in kb.images if sel(image_view(i))])
    return kb


def has_kernel_bundle(ctx: context, *args: Any, state: bundle_state,
                      devs: device | Iterable[device] | None = None,
                      kernel_ids: kernel_id | Iterable[kernel_id] | None = None,
                      kernel_name: str | None = None) -> bool:
    """Whether ``get_kernel_bundle`` with these arguments would find kernels (no compiling).

    Raises:
        exception: ``errc.invalid`` — ``devs`` empty or a device not in ``ctx``.
    """
    what = "has_kernel_bundle"
    state = _check_state(state, what)
    dl, kids, _ = _parse(ctx, args, devs, kernel_ids, None, kernel_name, what)
    from pysycl._objects.aspects import aspect

    need = {bundle_state.input: aspect.online_compiler,
            bundle_state.object: aspect.online_linker}.get(state)
    if need is not None and not all(d.has(need) for d in dl):
        return False
    if kids is None:
        return any(_kid_compatible(k, d) for k in _all_kernel_ids() for d in dl)
    return all(any(_kid_compatible(k, d) for d in dl) for k in kids)


def _check_subset(devs: device | Iterable[device], allowed: Sequence[device], ctx: context,
                  what: str) -> list[device]:
    from pysycl._objects.device import device

    if isinstance(devs, device):
        devs = [devs]
    dl = list(dict.fromkeys(devs))
    if not dl:
        raise exception(errc.invalid, f"{what}: the device list is empty", ctx)
    for d in dl:
        if not isinstance(d, device):
            raise TypeError(f"{what}: devs must hold sycl.device objects, not {d!r}")
        if d not in allowed:
            raise exception(errc.invalid, f"{what}: device {d!r} is not an associated device "
                            "of the input bundle(s)", ctx)
    return dl


def _input_bundle(b: kernel_bundle, what: str) -> kernel_bundle:
    if not isinstance(b, kernel_bundle):
        raise TypeError(f"{what} takes a sycl.kernel_bundle, not {type(b).__name__}")
    if b.get_state() is not bundle_state.input:
        raise TypeError(f"{what} takes a bundle in bundle_state.input, this one is "
                        f"{b.get_state().name}")
    return b


@first_use("sycl.compile")  # compiles and builds: first-time work (docs/testing.md)
def compile(input_bundle: kernel_bundle, devs: Sequence[device] | None = None,
            properties: Iterable[build_options | save_log] = ()) -> kernel_bundle:
    """Compile an input bundle into an object bundle (``clCompileProgram`` per image).

    Raises:
        exception: ``errc.invalid`` — ``devs`` empty or not associated with the
            bundle; ``errc.build`` — the online compile fails (with the log).
    """
    kb = _input_bundle(input_bundle, "compile")
    dl = _check_subset(kb.devices if devs is None else devs, kb.devices, kb.get_context(), "compile")
    opts = _options(properties, "compile")
    clp = _programs(kb.get_context())
    t0 = time.perf_counter()
    out = []
    for img in kb.images:
        cdevs = [d for d in dl if img.compatible(d)]
        if not cdevs:
            continue
        prg = _new_program(kb.get_context(), img, kb.spec_values, cdevs)
        if img.format == "ptx":  # NVIDIA builds PTX but cannot compile it to an object
            check_ptx_options(opts, "compile")
            clp.build_program(prg, [d.native for d in cdevs], opts)
        else:
            clp.compile_program(prg, [d.native for d in cdevs], opts)
        count("cl_compiles")
        out.append(_Image(bundle_state.object, img.format,
                          _digest("obj", img.key, opts, *_specconst.image_key(img, kb.spec_values)),
                          kernel_ids=img.kernel_ids, aspects=img.aspects,
                          variants=img.variants, mkeys=img.mkeys, il=img.il, source=img.source,
                          programs={d: prg for d in cdevs}, names=img.names, lang=img.lang,
                          options=opts, specs=img.specs, arch=img.arch))
    _log.info("compiled %d kernel image(s) in %.1f ms", len(out), 1e3 * (time.perf_counter() - t0))
    return new_bundle(kb.get_context(), dl, bundle_state.object, out, kb.spec_values)


def _new_program(ctx: context, img: _Image, spec: dict[specialization_id, np.generic] | None = None,
                 devs: Sequence[device] = ()) -> Any:
    """A fresh OpenCL program of an input image (interop images reuse their program).

    Specialization constant values (``spec``, else defaults) are applied natively
    when every device in ``devs`` supports it, else by rewriting the SPIR-V.
    """
    clp = _programs(ctx)
    if img.format == "ptx":
        return _ptx_program(ctx, [img], devs, spec)
    if img.il is not None:
        if img.specs:
            return _specconst.program_for(clp, ctx.native, devs, img.il,
                                          _specconst.image_values(img, spec))
        return clp.from_il(ctx.native, img.il)
    if img.source is not None:
        return clp.from_source(ctx.native, img.source)
    return next(iter(img.programs.values()))  # an OpenCL program given through interop


def _groups(images: Iterable[_Image]) -> list[list[_Image]]:
    """Images that may share one executable: same format family and same aspects (PTX
    images of one compute capability link by text: :mod:`pysycl._core.ptx_link`)."""
    groups: dict[tuple[Hashable, ...], list[_Image]] = {}
    for img in images:
        family = ("ptx", img.arch) if img.format == "ptx" else None
        groups.setdefault((img.lang, img.aspects, family), []).append(img)
    return list(groups.values())


def check_ptx_options(opts: str, what: str) -> None:
    """``errc.invalid`` for an option a PTX build cannot mean.

    NVIDIA's OpenCL ignores what it does not know when it builds PTX (a source build
    fails instead): a misspelt option would pass silently. The OpenCL options
    (``-cl-...``, ``-w``, ``-Werror``) and NVIDIA's (``-nv-...``, ``-cl-nv-...``) pass.
    """
    for o in opts.split():
        if not o.startswith(("-cl-", "-nv-")) and o not in ("-w", "-Werror"):
            raise exception(errc.invalid, f"{what}: {o!r} is not an OpenCL build option "
                            "(PTX images take -cl-... and NVIDIA's -cl-nv-... options)")


def _ptx_program(ctx: context, members: Sequence[_Image], devs: Sequence[device],
                 spec: dict[specialization_id, np.generic] | None) -> Any:
    """One program of the PTX images ``members`` (spec values applied, modules merged)."""
    texts = [_specconst.ptx_for(i.il, _specconst.image_values(i, spec)) if i.specs else i.il
             for i in members]
    return _programs(ctx).from_binaries(ctx.native, [d.native for d in devs],
                                     [link_ptx(texts)] * len(devs))


def _merged(state: bundle_state, group: Sequence[_Image], key: str,
            programs: dict[device, Any], options: str) -> _Image:
    kids: set[kernel_id] = set()
    variants: dict[str, Kernel] = {}
    mkeys: dict[Hashable, str] = {}
    specs: dict[str, tuple[specialization_id | None, ...]] = {}
    names: list[str] = []
    for img in group:
        kids |= img.kernel_ids
        variants.update(img.variants)
        mkeys.update(img.mkeys)
        specs.update(img.specs)
        names.extend(n for n in img.names if n not in names)
    if any(not img.variants for img in group):  # source/interop kernels: ask the program
        for prg in {id(p): p for p in programs.values()}.values():
            names.extend(n for n in _programs(next(iter(programs))).kernel_names(prg)
                         if n not in names and n not in variants)
    first = group[0]
    fmt = first.format if all(i.format == first.format for i in group) else "mixed"
    return _Image(state, fmt, key, kernel_ids=kids, aspects=first.aspects, variants=variants,
                  mkeys=mkeys, programs=programs, names=names, lang=first.lang, options=options,
                  specs=specs, arch=first.arch)


@first_use("sycl.link")  # compiles and builds: first-time work (docs/testing.md)
def link(object_bundles: kernel_bundle | Iterable[kernel_bundle],
         devs: Sequence[device] | None = None,
         properties: Iterable[build_options | save_log] = ()) -> kernel_bundle:
    """Link object bundles into an executable bundle (``clLinkProgram`` per device).

    ``link(kb)``, ``link([kb1, kb2])``, with ``devs`` or, by default, the devices
    common to all bundles.

    Raises:
        exception: ``errc.invalid`` — different contexts, ``devs`` empty or not
            associated with the bundles; ``errc.build`` — the link fails.
    """
    bl = bundle_list(object_bundles, "link")
    if not bl:
        raise TypeError("link needs at least one kernel_bundle")
    for b in bl:
        if b.get_state() is not bundle_state.object:
            raise TypeError(f"link takes bundles in bundle_state.object, one is {b.get_state().name}")
    ctx = bl[0].get_context()
    for b in bl[1:]:
        if b.get_context() != ctx:
            raise exception(errc.invalid, "link: the bundles have different contexts", ctx)
    common = [d for d in bl[0].devices if all(d in b.devices for b in bl[1:])]
    dl = _check_subset(common if devs is None else devs, common, ctx, "link")
    opts = _options(properties, "link")
    spec: dict[specialization_id, np.generic] = {}
    for b in bl:
        spec.update(b.spec_values)
    images = unique_images(img for b in bl for img in b.images)
    clp = _programs(ctx)
    t0 = time.perf_counter()
    out = []
    for group in _groups(images):
        by_set: dict[tuple[int, ...], list[device]] = {}
        for d in dl:
            members = tuple(i for i, img in enumerate(group) if d in img.programs)
            if members:
                by_set.setdefault(members, []).append(d)
        programs: dict[device, Any] = {}
        for members, ds in by_set.items():
            if group[0].format == "ptx":  # NVIDIA links no PTX: merge the texts, build once
                check_ptx_options(opts, "link")
                exe = _ptx_program(ctx, [group[i] for i in members], ds, spec)
                clp.build_program(exe, [d.native for d in ds], opts)
            else:
                exe = clp.link_programs(ctx.native, [group[i].programs[ds[0]] for i in members],
                                        [d.native for d in ds], opts)
            count("cl_links")
            for d in ds:
                programs[d] = exe
        if programs:
            key = _digest("exe", opts, *sorted(i.key for i in group))
            out.append(_merged(bundle_state.executable, group, key, programs, opts))
    _log.info("linked %d executable image(s) in %.1f ms", len(out), 1e3 * (time.perf_counter() - t0))
    return new_bundle(ctx, dl, bundle_state.executable, out, spec)


# long: the spec's build steps in order, each with its own error message.
@first_use("sycl.build")  # compiles and builds: first-time work (docs/testing.md)
def build(input_bundle: kernel_bundle, devs: Sequence[device] | None = None,
          properties: Iterable[build_options | save_log] = ()) -> kernel_bundle:
    """Compile and link an input bundle (``link(compile(kb, devs), devs)``), with a binary cache.

    Each executable program is looked up in the per-device binary cache first
    (keyed by the images' digests, the options and the device/driver); a hit
    is loaded with ``clCreateProgramWithBinary`` and needs no compiler.

    Raises:
        exception: ``errc.invalid`` — ``devs`` empty or not associated with the
            bundle; ``errc.build`` — the online compile or link fails.
    """
    kb = _input_bundle(input_bundle, "build")
    dl = _check_subset(kb.devices if devs is None else devs, kb.devices, kb.get_context(), "build")
    opts = _options(properties, "build")
    from pysycl._kernels import bincache as _bincache

    ctx = kb.get_context()
    clp = _programs(ctx)
    out = []
    for group in _groups(kb.images):
        key = _digest("exe", opts, *sorted(
            _digest("obj", i.key, opts, *_specconst.image_key(i, kb.spec_values)) for i in group))
        programs: dict[device, Any] = {}
        for d in dl:
            members = [img for img in group if img.compatible(d)]
            if not members:
                continue
            mkey = _digest("exe", opts, *sorted(_digest("obj", i.key, opts,
                                                        *_specconst.image_key(i, kb.spec_values))
                                                for i in members))
            bkey = _bincache.key(mkey, clp.device_cache_key(d.native))
            t0 = time.perf_counter()
            cacheable = all(i.il is not None or i.source is not None for i in members)
            binary = _bincache.load(bkey) if cacheable else None
            exe = None
            if binary is not None:
                try:
                    exe = clp.from_binaries(ctx.native, [d.native], [binary])
                    clp.build_program(exe, [d.native], opts)
                    count("binary_hits")
                except exception:
                    exe = None  # a binary the driver no longer takes: rebuild it
            if exe is None:
                if members[0].format == "ptx":  # merged, then built once
                    check_ptx_options(opts, "build")
                    exe = _ptx_program(ctx, members, [d], kb.spec_values)
                    clp.build_program(exe, [d.native], opts)
                    count("cl_compiles")
                else:
                    objs = []
                    for img in members:
                        prg = _new_program(ctx, img, kb.spec_values, [d])
                        clp.compile_program(prg, [d.native], opts)
                        count("cl_compiles")
                        objs.append(prg)
                    exe = clp.link_programs(ctx.native, objs, [d.native], opts)
                    count("cl_links")
                binary = clp.binaries(exe).get(clp.handle(d.native), b"")
                if cacheable and _bincache.store(bkey, binary):
                    count("binary_writes")
            _log.info("built %d kernel image(s) for %s in %.1f ms", len(members), d.display_name,
                      1e3 * (time.perf_counter() - t0))
            programs[d] = exe
        if programs:
            out.append(_merged(bundle_state.executable, group, key, programs, opts))
    return new_bundle(ctx, dl, bundle_state.executable, out, kb.spec_values)


# ------------------------------------------------------------- launcher hooks
class _QueueLike(Protocol):
    """What :func:`check_use` reads of a queue."""

    def get_context(self) -> context: ...


def check_use(kb: kernel_bundle, q: _QueueLike) -> None:
    """``handler.use_kernel_bundle`` checks (§4.9.4.4)."""
    if not isinstance(kb, kernel_bundle):
        raise TypeError(f"use_kernel_bundle takes a sycl.kernel_bundle, not {type(kb).__name__}")
    if kb.get_state() is not bundle_state.executable:
        raise TypeError("use_kernel_bundle takes an executable kernel_bundle, this one is "
                        f"{kb.get_state().name}")
    if kb.get_context() != q.get_context():
        raise exception(errc.invalid, "use_kernel_bundle: the bundle's context is not the "
                        "queue's context", q.get_context())


def bundle_entry(kb: kernel_bundle, mkey: Hashable, ctx: context, dev: device,
                 fn: types.FunctionType, kernel_name: str | None = None) -> tuple[_Image, str]:
    """(image, entry name) of the variant ``mkey`` of a Python kernel in bundle ``kb`` for
    ``dev`` — what ``use_kernel_bundle`` runs; no compiling.

    Errors name ``kernel_name`` (the submit's) when given, else the registered or
    automatic name of ``fn``.

    Raises:
        exception: ``errc.invalid`` on a context mismatch;
            ``errc.kernel_not_supported`` when the bundle lacks the kernel (for
            these capture types) or has it only for other devices.
    """
    if kb.get_context() != ctx:
        raise exception(errc.invalid, "the kernel bundle's context is not the queue's", ctx)
    elsewhere = False
    for img in kb.images:
        entry = img.mkeys.get(mkey)
        if entry is None:
            continue
        if dev not in img.programs:
            elsewhere = True
            continue
        return img, entry
    v = variant_of(mkey)
    name = kernel_name or (v.kid.get_name() if v is not None else auto_name(fn))
    if elsewhere:
        why = f"it holds kernel {name!r} only for other devices than {dev!r}"
    elif any(k.get_name() == name for img in kb.images for k in img.kernel_ids):
        why = (f"it holds kernel {name!r}, but not compiled for these capture types or "
               "index space; declare this variant or submit it before building the bundle")
    else:
        why = f"it does not contain kernel {name!r}"
    raise exception(errc.kernel_not_supported, f"the kernel bundle given to use_kernel_bundle "
                    f"cannot run this kernel: {why}", ctx)


def launch_kernel(kb: kernel_bundle, mkey: Hashable, ctx: context, dev: device,
                  fn: types.FunctionType, kernel_name: str | None = None
                  ) -> tuple[Kernel, Any]:
    """(compiled kernel, cl_kernel) of a Python kernel from bundle ``kb`` — no compiling
    (errors: :func:`bundle_entry`)."""
    img, entry = bundle_entry(kb, mkey, ctx, dev, fn, kernel_name)
    return img.variants[entry], img.cl_kernel(dev, entry)

"""Kernel bundles and device images (SYCL 2020 §4.11) over OpenCL programs.

States map onto OpenCL (``docs/bundles.md``):

* ``input``: device images holding SPIR-V modules (one per Python kernel
  variant, from the compiler's cache) or source, not built for any device;
* ``object``: per device, a ``clCompileProgram``'d program of each image;
* ``executable``: per device, a ``clLinkProgram``'d program; kernels are ready.

A device image records its format (``spirv``, ``opencl_c``, ``native``; room
for ``ptx``), the kernel ids it holds and the aspects it needs. Compatibility
with a device is decided from those alone (never by compiling): a SPIR-V image
needs ``aspect.ext_pysycl_spirv``, every image needs its aspects; object and
executable images are compatible with the devices they were built for.
``link``/``build`` put kernels into one executable image only when they need
the same aspects (the spec's warning on optional features).

Executable programs built by ``build`` are cached on disk per device
(:mod:`pysycl._bincache`); a fresh process that builds known kernels needs
neither Numba nor the OpenCL compiler.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pysycl import _specconst
from pysycl._backend import backend
from pysycl._exceptions import errc, exception
from pysycl._kernel_id import _ids, _Variant, kernel_id
from pysycl._specconst import check_spec_id as _check_spec_id
from pysycl._specconst import specialization_id  # noqa: F401 - re-exported by pysycl

_log = logging.getLogger("pysycl.bundle")

#: What the bundle layer did (``sycl.ext.kernel_cache_stats()`` merges these in).
stats = {"cl_compiles": 0, "cl_links": 0, "cl_source_builds": 0, "binary_hits": 0,
         "binary_writes": 0}


class bundle_state(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::bundle_state`` (plus the kernel_compiler's ``ext_oneapi_source``)."""

    input = "input"
    object = "object"
    executable = "executable"
    ext_oneapi_source = "ext_oneapi_source"

    def __repr__(self) -> str:
        return f"sycl.bundle_state.{self.name}"


def _programs() -> Any:
    from pysycl._cl import programs

    return programs


def _aspect(name: str) -> Any:
    from pysycl._aspects import aspect

    return getattr(aspect, name)


# --------------------------------------------------------------------- images
class _Image:
    """One device image: the indivisible unit of compilation and linking."""

    __slots__ = ("aspects", "clk", "format", "il", "kernel_ids", "key", "lang", "mkeys",
                 "names", "options", "programs", "source", "specs", "state", "variants")

    def __init__(self, state: bundle_state, fmt: str, key: str, *,
                 kernel_ids: Iterable[kernel_id] = (), aspects: Iterable[str] = (),
                 variants: dict[str, Any] | None = None, mkeys: dict[Any, str] | None = None,
                 il: bytes | None = None, source: str | None = None,
                 programs: dict[Any, Any] | None = None, names: Iterable[str] = (),
                 lang: Any = None, options: str = "", specs: dict[str, Any] | None = None) -> None:
        self.state = state
        self.format = fmt
        self.key = key
        self.kernel_ids = frozenset(kernel_ids)
        self.aspects = frozenset(aspects)
        self.variants = variants or {}      # entry name -> pysycl._launch._Kernel
        self.mkeys = mkeys or {}            # launcher key -> entry name
        self.il = il
        self.source = source
        self.programs = programs or {}      # sycl.device -> raw cl program
        self.names = tuple(names)           # kernel function names (source/interop images)
        self.lang = lang
        self.options = options
        self.specs = specs or {}            # entry name -> its specialization_ids by SpecId
        self.clk: dict[tuple[int, str], Any] = {}

    def compatible(self, dev: Any) -> bool:
        """Whether this image can run (or be built) on ``dev``, without compiling."""
        if self.state in (bundle_state.object, bundle_state.executable):
            return dev in self.programs
        from pysycl._aspects import aspect

        if self.format == "spirv" and not dev.has(aspect.ext_pysycl_spirv):
            return False
        if self.format in ("spirv", "opencl_c") and not dev.has(aspect.online_compiler):
            return False
        return all(dev.has(_aspect(a)) for a in self.aspects)

    def cl_kernel(self, dev: Any, name: str) -> Any:
        """The ``cl_kernel`` ``name`` of this executable image on ``dev`` (cached)."""
        key = (dev._handle, name)
        k = self.clk.get(key)
        if k is None:
            prg = self.programs[dev]
            kv = self.variants.get(name)
            if kv is not None:
                from pysycl._cl import exec as x

                k = x.create_kernel(_programs().wrap_program(prg), name, kv.arg_dtypes)
            else:
                k = _programs().create_kernel(prg, name)
            self.clk[key] = k
        return k

    def all_names(self) -> tuple[str, ...]:
        return tuple(self.variants) + self.names


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\x00")
    return h.hexdigest()


def _input_image(v: _Variant) -> _Image:
    """The input-state image of a Python kernel variant (compiles it if needed)."""
    if v.image is None:
        k = v.load()
        c = k.compiled
        ids = _specconst.spec_ids_of(v.fn, c) if v.fn is not None else ()
        v.image = _Image(bundle_state.input, c.format, _digest(c.format, c.binary),
                         kernel_ids=[v.kid], aspects=frozenset(c.required_aspects) | v.device_has,
                         variants={c.entry: k}, mkeys={v.mkey: c.entry}, il=c.binary,
                         specs={c.entry: ids} if ids else None)
    return v.image


class device_image:  # noqa: N801 - the spec's spelling
    """``sycl::device_image<State>``: a view of one device image of a bundle."""

    __slots__ = ("_img",)

    def __init__(self) -> None:
        raise TypeError("sycl.device_image has no public constructor: iterate a kernel_bundle")

    @classmethod
    def _make(cls, img: _Image) -> device_image:
        self = object.__new__(cls)
        self._img = img
        return self

    def has_kernel(self, kid: kernel_id, dev: Any = None) -> bool:
        """Whether the image holds ``kid`` (and, with ``dev``, is compatible with it)."""
        if not isinstance(kid, kernel_id):
            raise TypeError(f"has_kernel takes a sycl.kernel_id, not {type(kid).__name__}")
        if kid not in self._img.kernel_ids:
            return False
        return dev is None or self._img.compatible(dev)

    def ext_pysycl_format(self) -> str:
        """``"spirv"``, ``"opencl_c"`` or ``"native"`` (device binary)."""
        return self._img.format

    def ext_pysycl_required_aspects(self) -> frozenset[Any]:
        """The aspects a device needs to load this image."""
        return frozenset(_aspect(a) for a in self._img.aspects)

    def ext_pysycl_state(self) -> bundle_state:
        """The image's bundle state."""
        return self._img.state

    def ext_pysycl_kernel_names(self) -> tuple[str, ...]:
        """The OpenCL names of the kernel entry points in this image."""
        return self._img.all_names()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device_image) and other._img is self._img

    def __hash__(self) -> int:
        return hash(("device_image", id(self._img)))

    def __repr__(self) -> str:
        img = self._img
        names = ", ".join(sorted(k._name for k in img.kernel_ids)) or ", ".join(img.names)
        return (f"<sycl.device_image {img.state.name} {img.format} [{names}] "
                f"needs={sorted(img.aspects)}>")


# --------------------------------------------------------------------- bundle
class kernel_bundle:  # noqa: N801 - the spec's spelling
    """``sycl::kernel_bundle<State>``; the state is ``get_state()`` (a template parameter in C++).

    Obtain one with :func:`get_kernel_bundle`, :func:`compile`, :func:`link`,
    :func:`build`, :func:`join`, the kernel_compiler extension or OpenCL interop.
    Common reference semantics: copies are the same object.
    """

    __slots__ = ("_ctx", "_devices", "_images", "_spec", "_state")

    def __init__(self) -> None:
        raise TypeError("sycl.kernel_bundle has no public constructor: use "
                        "sycl.get_kernel_bundle(ctx, state=...)")

    @classmethod
    def _make(cls, ctx: Any, devs: Sequence[Any], state: bundle_state,
              images: Iterable[_Image], spec: dict[Any, Any] | None = None) -> kernel_bundle:
        self = object.__new__(cls)
        self._ctx = ctx
        self._devices = tuple(dict.fromkeys(devs))
        self._state = state
        seen: dict[tuple[str, str], _Image] = {}
        for img in images:
            seen.setdefault((img.state.value, img.key), img)
        self._images = tuple(seen.values())
        self._spec = dict(spec or {})
        return self

    def _not_source(self, what: str) -> None:
        if self._state is bundle_state.ext_oneapi_source:
            raise TypeError(f"kernel_bundle.{what} is not available for a bundle in "
                            "bundle_state.ext_oneapi_source: build it first "
                            "(sycl.ext.oneapi.experimental.build)")

    # --- queries ---
    def get_state(self) -> bundle_state:
        """The bundle's state (the C++ template parameter)."""
        return self._state

    def get_backend(self) -> backend:
        """Always ``backend.opencl``."""
        return backend.opencl

    def get_context(self) -> Any:
        """The bundle's context."""
        return self._ctx

    def get_devices(self) -> list[Any]:
        """The bundle's associated devices."""
        return list(self._devices)

    def empty(self) -> bool:
        """True when the bundle has no device image."""
        self._not_source("empty")
        return not self._images

    def has_kernel(self, kid: kernel_id, dev: Any = None) -> bool:
        """Whether some image holds ``kid`` (compatible with ``dev`` when given)."""
        self._not_source("has_kernel")
        if not isinstance(kid, kernel_id):
            raise TypeError(f"has_kernel takes a sycl.kernel_id, not {type(kid).__name__}")
        return any(kid in img.kernel_ids and (dev is None or img.compatible(dev))
                   for img in self._images)

    def get_kernel_ids(self) -> list[kernel_id]:
        """Ids of every kernel in the bundle (none for kernels built from source)."""
        self._not_source("get_kernel_ids")
        out: dict[kernel_id, None] = {}
        for img in self._images:
            for k in sorted(img.kernel_ids, key=lambda k: k._name):
                out[k] = None
        return list(out)

    def get_kernel(self, kid: kernel_id) -> Any:
        """The ``sycl.kernel`` for ``kid`` (executable bundles only).

        Raises:
            exception: ``errc.invalid`` when the bundle does not contain ``kid``.
            TypeError: the bundle is not executable (ill formed in C++).
        """
        if self._state is not bundle_state.executable:
            raise TypeError(f"get_kernel needs an executable kernel_bundle, this one is "
                            f"{self._state.name}")
        if not isinstance(kid, kernel_id):
            raise TypeError(f"get_kernel takes a sycl.kernel_id, not {type(kid).__name__}")
        for img in self._images:
            if kid in img.kernel_ids:
                entry = next(e for e, k in img.variants.items()
                             if _kernel_name_of(img, e) is kid)
                from pysycl._kernel import kernel

                return kernel._make(self, img, entry, kid)
        raise exception(errc.invalid, f"the kernel bundle does not contain kernel {kid._name!r}",
                        self._ctx)

    def ext_oneapi_has_kernel(self, name: str) -> bool:
        """Whether a kernel built from source is named ``name`` (kernel_compiler)."""
        self._not_source("ext_oneapi_has_kernel")
        return any(name in img.names for img in self._images if img.lang is not None)

    def ext_oneapi_get_kernel(self, name: str) -> Any:
        """The kernel named ``name`` of a bundle built from source.

        Raises:
            exception: ``errc.invalid`` when ``ext_oneapi_has_kernel(name)`` is false.
        """
        if self._state is not bundle_state.executable:
            raise TypeError("ext_oneapi_get_kernel needs an executable kernel_bundle")
        for img in self._images:
            if img.lang is not None and name in img.names:
                from pysycl._kernel import kernel

                return kernel._make(self, img, name, None)
        known = sorted(n for img in self._images if img.lang is not None for n in img.names)
        raise exception(errc.invalid, f"the bundle built from source has no kernel {name!r} "
                        f"(it has: {', '.join(known) or 'none'})", self._ctx)

    def ext_pysycl_get_kernel_by_name(self, name: str) -> Any:
        """The kernel whose OpenCL function name is ``name`` (interop bundles)."""
        for img in self._images:
            if name in img.names or name in img.variants:
                from pysycl._kernel import kernel

                kid = _kernel_name_of(img, name) if name in img.variants else None
                return kernel._make(self, img, name, kid)
        raise exception(errc.invalid, f"the kernel bundle has no kernel named {name!r}")

    def __iter__(self) -> Iterator[device_image]:
        self._not_source("begin/end")
        return iter([device_image._make(i) for i in self._images])

    def begin(self) -> Iterator[device_image]:
        """Iterator over the device images (the C++ spelling of ``iter()``)."""
        return iter(self)

    # --- specialization constants (docs/bundles.md) ---
    def _spec_ids(self) -> set[Any]:
        return {sid for img in self._images for ids in img.specs.values() for sid in ids
                if sid is not None}

    def contains_specialization_constants(self) -> bool:
        """Whether a kernel of an image reads a specialization constant."""
        self._not_source("contains_specialization_constants")
        return bool(self._spec_ids())

    def native_specialization_constant(self) -> bool:
        """Whether the bundle's specialization constants are native on all its devices.

        True when it contains some and every associated device applies them with
        ``clSetProgramSpecializationConstant``; False when they are emulated (the
        SPIR-V literals are rewritten) on some device, or when there are none.
        """
        self._not_source("native_specialization_constant")
        return self.contains_specialization_constants() and all(
            _specconst.is_native(d) for d in self._devices)

    def has_specialization_constant(self, spec_id: Any) -> bool:
        """Whether a kernel of the bundle reads ``spec_id``."""
        self._not_source("has_specialization_constant")
        _check_spec_id(spec_id)
        return spec_id in self._spec_ids()

    def set_specialization_constant(self, spec_id: Any, value: Any) -> None:
        """Set ``spec_id``'s value for this (input) bundle."""
        if self._state is not bundle_state.input:
            raise TypeError("set_specialization_constant is available only for bundles in "
                            f"bundle_state.input; this one is {self._state.name}")
        _check_spec_id(spec_id)
        self._spec[spec_id] = spec_id._convert(value)

    def get_specialization_constant(self, spec_id: Any) -> Any:
        """The value of ``spec_id`` in this bundle (its default unless set)."""
        self._not_source("get_specialization_constant")
        _check_spec_id(spec_id)
        return self._spec.get(spec_id, spec_id._default)

    def _repr_html_(self) -> str:
        from pysycl._display import bundle_html

        return bundle_html(self)

    def __repr__(self) -> str:
        return (f"<sycl.kernel_bundle {self._state.name}: {len(self._images)} image(s), "
                f"{len(self._devices)} device(s)>")


def _kernel_name_of(img: _Image, entry: str) -> kernel_id | None:
    for mkey, e in img.mkeys.items():
        if e == entry:
            from pysycl._kernel_id import variant_of

            v = variant_of(mkey)
            if v is not None:
                return v.kid
    return next(iter(img.kernel_ids), None)


# ------------------------------------------------------------ argument checks
def _check_state(state: Any, what: str) -> bundle_state:
    if not isinstance(state, bundle_state):
        raise TypeError(f"{what}: state= must be a sycl.bundle_state, not {state!r}")
    if state is bundle_state.ext_oneapi_source:
        raise TypeError(f"{what}: bundle_state.ext_oneapi_source bundles come from "
                        "sycl.ext.oneapi.experimental.create_kernel_bundle_from_source")
    return state


def _in_context(ctx: Any, dev: Any) -> bool:
    devs = ctx._devices
    d = dev
    while d is not None:
        if d in devs:
            return True
        d = d._parent
    return False


def _check_devs(ctx: Any, devs: Any, what: str) -> list[Any]:
    from pysycl._device import device

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


def _check_online(devs: Sequence[Any], state: bundle_state, what: str) -> None:
    from pysycl._aspects import aspect

    need = {bundle_state.input: aspect.online_compiler,
            bundle_state.object: aspect.online_linker}.get(state)
    if need is None:
        return
    for d in devs:
        if not d.has(need):
            raise exception(errc.invalid, f"{what}: a bundle in {state!r} needs {need!r}, "
                            f"which device {d!r} does not have")


def _check_kids(kids: Any, what: str) -> list[kernel_id]:
    if isinstance(kids, kernel_id):
        kids = [kids]
    if isinstance(kids, (str, bytes)) or not isinstance(kids, Iterable):
        raise TypeError(f"{what}: kernel ids must be a sequence of sycl.kernel_id")
    out = list(dict.fromkeys(kids))
    for k in out:
        if not isinstance(k, kernel_id):
            raise TypeError(f"{what}: expected sycl.kernel_id objects, not {k!r}")
    return out


def _options(properties: Iterable[Any], what: str) -> str:
    """Build options from ``properties`` (pysycl accepts kernel_compiler's build_options)."""
    from pysycl.ext.oneapi.experimental import build_options

    opts: list[str] = []
    for p in properties or ():
        if isinstance(p, build_options):
            opts.extend(p.opts)
        else:
            raise exception(errc.invalid, f"{what}: unsupported property {p!r} (SYCL 2020 "
                            "defines none; pysycl accepts "
                            "sycl.ext.oneapi.experimental.build_options)")
    return " ".join(opts)


# ---------------------------------------------------------------- compatibility
def _variant_compatible(v: _Variant, dev: Any) -> bool:
    from pysycl._aspects import aspect

    if not (dev.has(aspect.ext_pysycl_spirv) and dev.has(aspect.online_compiler)):
        return False  # the compiler emits SPIR-V only
    need, _exact = v.required_aspects()
    return all(dev.has(_aspect(a)) for a in need)


def _kid_compatible(kid: kernel_id, dev: Any) -> bool:
    return any(_variant_compatible(v, dev) for v in list(kid._variants.values()))


def is_compatible(kernel_ids: Any, dev: Any) -> bool:
    """Whether every kernel of ``kernel_ids`` can run on ``dev`` (answered without compiling).

    ``is_compatible(kernel_name_or_id, dev)`` also takes one kernel name (the
    C++ ``is_compatible<KernelName>(dev)``) or one id.
    """
    from pysycl._device import device
    from pysycl._kernel_id import get_kernel_id

    if isinstance(kernel_ids, str):
        kernel_ids = [get_kernel_id(kernel_ids)]
    kids = _check_kids(kernel_ids, "is_compatible")
    if not isinstance(dev, device):
        raise TypeError(f"is_compatible takes a sycl.device, not {type(dev).__name__}")
    return all(_kid_compatible(k, dev) for k in kids)


def _parse(ctx: Any, args: tuple[Any, ...], devs: Any, kernel_ids: Any, selector: Any,
           kernel_name: str | None, what: str) -> tuple[list[Any], list[kernel_id] | None, Any]:
    """Sort the positional overload arguments into devs, kernel ids and a selector."""
    from pysycl._context import context
    from pysycl._device import device
    from pysycl._kernel_id import get_kernel_id

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


def get_kernel_bundle(ctx: Any, *args: Any, state: bundle_state, devs: Any = None,
                      kernel_ids: Any = None, selector: Callable[[device_image], Any] | None = None,
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
                raise exception(errc.invalid, f"{what}: kernel {k._name!r} is not compatible "
                                f"with any of the devices {dl}", ctx)
    _check_online(dl, state, what)
    wanted = list(_ids.values()) if kids is None else kids
    t0 = time.perf_counter()
    images = []
    for kid in wanted:
        for v in list(kid._variants.values()):
            if not any(_variant_compatible(v, d) for d in dl):
                continue
            img = _input_image(v)  # compiles (or loads from the SPIR-V cache)
            if any(img.compatible(d) for d in dl):
                images.append(img)
    if sel is not None and state is bundle_state.input:
        images = [i for i in images if sel(device_image._make(i))]
    _log.info("kernel bundle: %d input image(s) of %d kernel id(s) ready in %.1f ms",
              len(images), len(wanted), 1e3 * (time.perf_counter() - t0))
    kb = kernel_bundle._make(ctx, dl, bundle_state.input, images)
    if state is bundle_state.object:
        kb = compile(kb, dl)
    elif state is bundle_state.executable:
        kb = build(kb, dl)
    if sel is not None and state is not bundle_state.input:
        kb = kernel_bundle._make(ctx, dl, state, [i for i in kb._images
                                                  if sel(device_image._make(i))])
    return kb


def has_kernel_bundle(ctx: Any, *args: Any, state: bundle_state, devs: Any = None,
                      kernel_ids: Any = None, kernel_name: str | None = None) -> bool:
    """Whether ``get_kernel_bundle`` with these arguments would find kernels (no compiling).

    Raises:
        exception: ``errc.invalid`` — ``devs`` empty or a device not in ``ctx``.
    """
    what = "has_kernel_bundle"
    state = _check_state(state, what)
    dl, kids, _ = _parse(ctx, args, devs, kernel_ids, None, kernel_name, what)
    from pysycl._aspects import aspect

    need = {bundle_state.input: aspect.online_compiler,
            bundle_state.object: aspect.online_linker}.get(state)
    if need is not None and not all(d.has(need) for d in dl):
        return False
    if kids is None:
        return any(_kid_compatible(k, d) for k in list(_ids.values()) for d in dl)
    return all(any(_kid_compatible(k, d) for d in dl) for k in kids)


def _bundles(bundles: Any, what: str) -> list[kernel_bundle]:
    if isinstance(bundles, kernel_bundle):
        return [bundles]
    if not isinstance(bundles, Iterable):
        raise TypeError(f"{what} takes a sequence of sycl.kernel_bundle")
    out = list(bundles)
    for b in out:
        if not isinstance(b, kernel_bundle):
            raise TypeError(f"{what}: expected sycl.kernel_bundle objects, not {b!r}")
    return out


def join(bundles: Sequence[kernel_bundle]) -> kernel_bundle:
    """The union of the bundles' device images, duplicates removed (§4.11.10).

    Raises:
        exception: ``errc.invalid`` — the bundles differ in context or device set.
        TypeError: the bundles differ in state (ill formed in C++), or none given.
    """
    bl = _bundles(bundles, "join")
    if not bl:
        raise TypeError("join needs at least one kernel_bundle")
    first = bl[0]
    for b in bl[1:]:
        if b._state is not first._state:
            raise TypeError(f"join: bundles must share one state ({first._state.name} vs "
                            f"{b._state.name})")
        if b._ctx != first._ctx:
            raise exception(errc.invalid, "join: the bundles have different contexts",
                            first._ctx)
        if set(b._devices) != set(first._devices):
            raise exception(errc.invalid, "join: the bundles have different device sets",
                            first._ctx)
    spec: dict[Any, Any] = {}
    for b in bl:
        spec.update(b._spec)
    return kernel_bundle._make(first._ctx, first._devices, first._state,
                               [i for b in bl for i in b._images], spec)


def _check_subset(devs: Any, allowed: Sequence[Any], ctx: Any, what: str) -> list[Any]:
    from pysycl._device import device

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


def _input_bundle(b: Any, what: str) -> kernel_bundle:
    if not isinstance(b, kernel_bundle):
        raise TypeError(f"{what} takes a sycl.kernel_bundle, not {type(b).__name__}")
    if b._state is not bundle_state.input:
        raise TypeError(f"{what} takes a bundle in bundle_state.input, this one is "
                        f"{b._state.name}")
    return b


def compile(input_bundle: kernel_bundle, devs: Sequence[Any] | None = None,
            properties: Iterable[Any] = ()) -> kernel_bundle:
    """Compile an input bundle into an object bundle (``clCompileProgram`` per image).

    Raises:
        exception: ``errc.invalid`` — ``devs`` empty or not associated with the
            bundle; ``errc.build`` — the online compile fails (with the log).
    """
    kb = _input_bundle(input_bundle, "compile")
    dl = _check_subset(kb._devices if devs is None else devs, kb._devices, kb._ctx, "compile")
    opts = _options(properties, "compile")
    clp = _programs()
    t0 = time.perf_counter()
    out = []
    for img in kb._images:
        cdevs = [d for d in dl if img.compatible(d)]
        if not cdevs:
            continue
        prg = _new_program(kb._ctx, img, kb._spec, cdevs)
        clp.compile_program(prg, [d._cl for d in cdevs], opts)
        stats["cl_compiles"] += 1
        out.append(_Image(bundle_state.object, img.format,
                          _digest("obj", img.key, opts, *_specconst.image_key(img, kb._spec)),
                          kernel_ids=img.kernel_ids, aspects=img.aspects,
                          variants=img.variants, mkeys=img.mkeys, il=img.il, source=img.source,
                          programs={d: prg for d in cdevs}, names=img.names, lang=img.lang,
                          options=opts, specs=img.specs))
    _log.info("compiled %d kernel image(s) in %.1f ms", len(out), 1e3 * (time.perf_counter() - t0))
    return kernel_bundle._make(kb._ctx, dl, bundle_state.object, out, kb._spec)


def _new_program(ctx: Any, img: _Image, spec: dict[Any, Any] | None = None,
                 devs: Sequence[Any] = ()) -> Any:
    """A fresh OpenCL program of an input image (interop images reuse their program).

    Specialization constant values (``spec``, else defaults) are applied natively
    when every device in ``devs`` supports it, else by rewriting the SPIR-V.
    """
    clp = _programs()
    if img.il is not None:
        if img.specs:
            return _specconst.program_for(ctx._cl, devs, img.il,
                                          _specconst.image_values(img, spec))
        return clp.from_il(ctx._cl, img.il)
    if img.source is not None:
        return clp.from_source(ctx._cl, img.source)
    return next(iter(img.programs.values()))  # an OpenCL program given through interop


def _groups(images: Iterable[_Image]) -> list[list[_Image]]:
    """Images that may share one executable: same format family and same aspects."""
    groups: dict[tuple[Any, ...], list[_Image]] = {}
    for img in images:
        groups.setdefault((img.lang, img.aspects), []).append(img)
    return list(groups.values())


def _merged(state: bundle_state, group: Sequence[_Image], key: str,
            programs: dict[Any, Any], options: str) -> _Image:
    kids: set[kernel_id] = set()
    variants: dict[str, Any] = {}
    mkeys: dict[Any, str] = {}
    specs: dict[str, Any] = {}
    names: list[str] = []
    for img in group:
        kids |= img.kernel_ids
        variants.update(img.variants)
        mkeys.update(img.mkeys)
        specs.update(img.specs)
        names.extend(n for n in img.names if n not in names)
    if any(not img.variants for img in group):  # source/interop kernels: ask the program
        for prg in {id(p): p for p in programs.values()}.values():
            names.extend(n for n in _programs().kernel_names(prg)
                         if n not in names and n not in variants)
    first = group[0]
    fmt = first.format if all(i.format == first.format for i in group) else "mixed"
    return _Image(state, fmt, key, kernel_ids=kids, aspects=first.aspects, variants=variants,
                  mkeys=mkeys, programs=programs, names=names, lang=first.lang, options=options,
                  specs=specs)


def link(object_bundles: Any, devs: Sequence[Any] | None = None,
         properties: Iterable[Any] = ()) -> kernel_bundle:
    """Link object bundles into an executable bundle (``clLinkProgram`` per device).

    ``link(kb)``, ``link([kb1, kb2])``, with ``devs`` or, by default, the devices
    common to all bundles.

    Raises:
        exception: ``errc.invalid`` — different contexts, ``devs`` empty or not
            associated with the bundles; ``errc.build`` — the link fails.
    """
    bl = _bundles(object_bundles, "link")
    if not bl:
        raise TypeError("link needs at least one kernel_bundle")
    for b in bl:
        if b._state is not bundle_state.object:
            raise TypeError(f"link takes bundles in bundle_state.object, one is {b._state.name}")
    ctx = bl[0]._ctx
    for b in bl[1:]:
        if b._ctx != ctx:
            raise exception(errc.invalid, "link: the bundles have different contexts", ctx)
    common = [d for d in bl[0]._devices if all(d in b._devices for b in bl[1:])]
    dl = _check_subset(common if devs is None else devs, common, ctx, "link")
    opts = _options(properties, "link")
    spec: dict[Any, Any] = {}
    images: dict[str, _Image] = {}
    for b in bl:
        spec.update(b._spec)
        for img in b._images:
            images.setdefault(img.key, img)
    clp = _programs()
    t0 = time.perf_counter()
    out = []
    for group in _groups(images.values()):
        by_set: dict[tuple[int, ...], list[Any]] = {}
        for d in dl:
            members = tuple(i for i, img in enumerate(group) if d in img.programs)
            if members:
                by_set.setdefault(members, []).append(d)
        programs: dict[Any, Any] = {}
        for members, ds in by_set.items():
            exe = clp.link_programs(ctx._cl, [group[i].programs[ds[0]] for i in members],
                                  [d._cl for d in ds], opts)
            stats["cl_links"] += 1
            for d in ds:
                programs[d] = exe
        if programs:
            key = _digest("exe", opts, *sorted(i.key for i in group))
            out.append(_merged(bundle_state.executable, group, key, programs, opts))
    _log.info("linked %d executable image(s) in %.1f ms", len(out), 1e3 * (time.perf_counter() - t0))
    return kernel_bundle._make(ctx, dl, bundle_state.executable, out, spec)


def build(input_bundle: kernel_bundle, devs: Sequence[Any] | None = None,
          properties: Iterable[Any] = ()) -> kernel_bundle:
    """Compile and link an input bundle (``link(compile(kb, devs), devs)``), with a binary cache.

    Each executable program is looked up in the per-device binary cache first
    (keyed by the images' digests, the options and the device/driver); a hit
    is loaded with ``clCreateProgramWithBinary`` and needs no compiler.

    Raises:
        exception: ``errc.invalid`` — ``devs`` empty or not associated with the
            bundle; ``errc.build`` — the online compile or link fails.
    """
    kb = _input_bundle(input_bundle, "build")
    dl = _check_subset(kb._devices if devs is None else devs, kb._devices, kb._ctx, "build")
    opts = _options(properties, "build")
    from pysycl import _bincache

    clp = _programs()
    ctx = kb._ctx
    out = []
    for group in _groups(kb._images):
        key = _digest("exe", opts, *sorted(
            _digest("obj", i.key, opts, *_specconst.image_key(i, kb._spec)) for i in group))
        programs: dict[Any, Any] = {}
        for d in dl:
            members = [img for img in group if img.compatible(d)]
            if not members:
                continue
            mkey = _digest("exe", opts, *sorted(_digest("obj", i.key, opts,
                                                        *_specconst.image_key(i, kb._spec))
                                                for i in members))
            bkey = _bincache.key(mkey, clp.device_cache_key(d._cl))
            t0 = time.perf_counter()
            cacheable = all(i.il is not None or i.source is not None for i in members)
            binary = _bincache.load(bkey) if cacheable else None
            exe = None
            if binary is not None:
                try:
                    exe = clp.from_binaries(ctx._cl, [d._cl], [binary])
                    clp.build_program(exe, [d._cl], opts)
                    stats["binary_hits"] += 1
                except exception:
                    exe = None  # a binary the driver no longer takes: rebuild it
            if exe is None:
                objs = []
                for img in members:
                    prg = _new_program(ctx, img, kb._spec, [d])
                    clp.compile_program(prg, [d._cl], opts)
                    stats["cl_compiles"] += 1
                    objs.append(prg)
                exe = clp.link_programs(ctx._cl, objs, [d._cl], opts)
                stats["cl_links"] += 1
                bins = clp.binaries(exe)
                if cacheable and _bincache.store(bkey, bins.get(clp.handle(d._cl), b"")):
                    stats["binary_writes"] += 1
            _log.info("built %d kernel image(s) for %s in %.1f ms", len(members), d._name(),
                      1e3 * (time.perf_counter() - t0))
            programs[d] = exe
        if programs:
            out.append(_merged(bundle_state.executable, group, key, programs, opts))
    return kernel_bundle._make(ctx, dl, bundle_state.executable, out, kb._spec)


# ------------------------------------------------------------- launcher hooks
def check_use(kb: Any, q: Any) -> None:
    """``handler.use_kernel_bundle`` checks (§4.9.4.4)."""
    if not isinstance(kb, kernel_bundle):
        raise TypeError(f"use_kernel_bundle takes a sycl.kernel_bundle, not {type(kb).__name__}")
    if kb._state is not bundle_state.executable:
        raise TypeError("use_kernel_bundle takes an executable kernel_bundle, this one is "
                        f"{kb._state.name}")
    if kb._ctx != q._ctx:
        raise exception(errc.invalid, "use_kernel_bundle: the bundle's context is not the "
                        "queue's context", q._ctx)


def launch_kernel(kb: kernel_bundle, mkey: Any, ctx: Any, dev: Any, fn: Any) -> tuple[Any, Any]:
    """(compiled kernel, cl_kernel) of a Python kernel from bundle ``kb`` — no compiling.

    Raises:
        exception: ``errc.invalid`` on a context mismatch;
            ``errc.kernel_not_supported`` when the bundle lacks the kernel (for
            these capture types) or has it only for other devices.
    """
    if kb._ctx != ctx:
        raise exception(errc.invalid, "the kernel bundle's context is not the queue's", ctx)
    elsewhere = False
    for img in kb._images:
        entry = img.mkeys.get(mkey)
        if entry is None:
            continue
        if dev not in img.programs:
            elsewhere = True
            continue
        return img.variants[entry], img.cl_kernel(dev, entry)
    from pysycl._kernel_id import auto_name, variant_of

    v = variant_of(mkey)
    name = v.kid._name if v is not None else auto_name(fn)
    if elsewhere:
        why = f"it holds kernel {name!r} only for other devices than {dev!r}"
    elif any(k._name == name for img in kb._images for k in img.kernel_ids):
        why = (f"it holds kernel {name!r}, but not compiled for these capture types or "
               "index space; declare this variant or submit it before building the bundle")
    else:
        why = f"it does not contain kernel {name!r}"
    raise exception(errc.kernel_not_supported, f"the kernel bundle given to use_kernel_bundle "
                    f"cannot run this kernel: {why}", ctx)


def stats_snapshot() -> dict[str, int]:
    """A copy of :data:`stats`."""
    return dict(stats)

"""Kernel bundles and device images (SYCL 2020 §4.11) over OpenCL programs.

States map onto OpenCL (``docs/bundles.md``):

* ``input``: device images holding SPIR-V modules (one per Python kernel
  variant, from the compiler's cache) or source, not built for any device;
* ``object``: per device, a ``clCompileProgram``'d program of each image;
* ``executable``: per device, a ``clLinkProgram``'d program; kernels are ready.

A device image records its format (``spirv``, ``ptx``, ``opencl_c``,
``native``), the kernel ids it holds and the aspects it needs. Compatibility
with a device is decided from those alone (never by compiling): a SPIR-V image
needs ``aspect.ext_pysycl_spirv`` (and an online compiler), a PTX image an
NVIDIA device of its compute capability (``ptx:sm_90``), every image needs its
aspects; object and executable images are compatible with the devices they
were built for. A Python kernel in a bundle for a CPU and a GPU has one input
image per format.

PTX images and the states: NVIDIA's OpenCL builds a PTX "binary" but neither
compiles nor links one (``clCompileProgram`` takes source or IL), so
``compile`` builds a PTX image into its object state (the program is already
executable) and ``link`` keeps each PTX image its own executable image.
``link``/``build`` put kernels into one executable image only when they need
the same aspects (the spec's warning on optional features). The CUDA backend takes the
same steps with the driver's JIT (its programs: :mod:`pysycl._backends.cuda.programs`).

Executable programs built by ``build`` are cached on disk per device
(:mod:`pysycl._kernels.bincache`); a fresh process that builds known kernels needs
neither Numba nor the OpenCL compiler. The operations (``get_kernel_bundle``,
``compile``, ``link``, ``build``, ...) are in :mod:`pysycl._bundles.ops`.
"""

from __future__ import annotations

import enum
import hashlib
import logging
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pysycl._bundles.kernel import new_kernel
from pysycl._bundles.kernel_id import _Variant, kernel_id, variant_of
from pysycl._core.backend import backend
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import specconst as _specconst
from pysycl._kernels.specconst import check_spec_id as _check_spec_id
from pysycl._objects.display import Rows, table
from pysycl._objects.info import info
from pysycl._objects.info import source_language as _source_language

if TYPE_CHECKING:

    import numpy as np

    from pysycl._bundles.kernel import kernel
    from pysycl._core.backends import Programs
    from pysycl._kernels.cache import Kernel
    from pysycl._kernels.specconst import specialization_id
    from pysycl._objects.aspects import aspect
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.info import source_language


_log = logging.getLogger("pysycl.bundle")

#: What the bundle layer did (``sycl.ext.kernel_cache_stats()`` merges these in);
#: counted with :func:`count`.
stats = {"cl_compiles": 0, "cl_links": 0, "cl_source_builds": 0, "binary_hits": 0,
         "binary_writes": 0}


def count(event: str) -> None:
    """Count one OpenCL compile, link, source build or binary-cache event (a :data:`stats` key)."""
    stats[event] += 1


def stats_snapshot() -> dict[str, int]:
    """A copy of :data:`stats`."""
    return dict(stats)


def reset_stats() -> None:
    """Zero :data:`stats`."""
    for k in stats:
        stats[k] = 0


class bundle_state(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::bundle_state`` (plus the kernel_compiler's ``ext_oneapi_source``)."""

    input = "input"
    object = "object"
    executable = "executable"
    ext_oneapi_source = "ext_oneapi_source"

    def __repr__(self) -> str:
        return f"sycl.bundle_state.{self.name}"


def _programs(where: context | device) -> Programs:
    """The programs of ``where``'s backend (:class:`pysycl._core.backends.Programs`)."""
    from pysycl._core.backends import get

    b = get(where.get_backend())
    if b.programs is None:
        raise exception(errc.feature_not_supported, f"backend {b.kind.name} runs no kernel "
                        "bundles")
    return b.programs


def _aspect(name: str) -> aspect:
    from pysycl._objects.aspects import aspect

    return getattr(aspect, name)


# --------------------------------------------------------------------- images
class _Image:
    """One device image: the indivisible unit of compilation and linking."""

    __slots__ = ("arch", "arginfo", "aspects", "clk", "format", "il", "kernel_ids", "key", "lang",
                 "mkeys", "names", "options", "programs", "source", "specs", "state", "variants")

    def __init__(self, state: bundle_state, fmt: str, key: str, *,
                 kernel_ids: Iterable[kernel_id] = (), aspects: Iterable[str] = (),
                 variants: dict[str, Kernel] | None = None,
                 mkeys: dict[Hashable, str] | None = None,
                 il: bytes | None = None, source: str | None = None,
                 programs: dict[device, Any] | None = None, names: Iterable[str] = (),
                 lang: source_language | None = None, options: str = "",
                 specs: dict[str, tuple[specialization_id | None, ...]] | None = None,
                 arch: str = "") -> None:
        self.state = state
        self.format = fmt
        self.arch = arch                    # PTX: the compute capability ("sm_90")
        self.key = key
        self.kernel_ids = frozenset(kernel_ids)
        self.aspects = frozenset(aspects)
        self.variants = variants or {}      # entry name -> pysycl._kernels.cache.Kernel
        self.mkeys = mkeys or {}            # launcher key -> entry name
        self.il = il                        # the SPIR-V module, or the PTX text
        self.source = source
        self.programs = programs or {}      # sycl.device -> raw cl program
        self.names = tuple(names)           # kernel function names (source/interop images)
        self.lang = lang
        self.options = options
        self.specs = specs or {}            # entry name -> its specialization_ids by SpecId
        self.clk: dict[tuple[int, str], Any] = {}
        self.arginfo: dict[tuple[int, str], tuple[tuple[str, str] | None, ...]] = {}

    def compatible(self, dev: device) -> bool:
        """Whether this image can run (or be built) on ``dev``, without compiling."""
        if self.state in (bundle_state.object, bundle_state.executable):
            return dev in self.programs
        from pysycl._objects.aspects import aspect

        if self.format == "ptx":
            return ("ptx", self.arch) in dev.image_targets and all(
                dev.has(_aspect(a)) for a in self.aspects)
        if self.format == "spirv" and not dev.has(aspect.ext_pysycl_spirv):
            return False
        if self.format in ("spirv", "opencl_c") and not dev.ext_oneapi_can_compile(
                _source_language.opencl):  # an online compiler of OpenCL C and SPIR-V
            return False
        return all(dev.has(_aspect(a)) for a in self.aspects)

    def cl_kernel(self, dev: device, name: str) -> Any:
        """The ``cl_kernel`` ``name`` of this executable image on ``dev`` (cached)."""
        key = (dev.key, name)
        k = self.clk.get(key)
        if k is None:
            prg = self.programs[dev]
            kv = self.variants.get(name)
            if kv is not None:
                k = _programs(dev).typed_kernel(prg, name, kv.arg_dtypes, dev.native)
            else:
                k = _programs(dev).create_kernel(prg, name, dev.native)
            self.clk[key] = k
        return k

    def arg_info(self, dev: device, name: str) -> tuple[tuple[str, str] | None, ...]:
        """Per argument of kernel ``name`` on ``dev``: ``(address qualifier, type name)``, or
        None where the driver keeps no argument info (cached)."""
        key = (dev.key, name)
        info = self.arginfo.get(key)
        if info is None:
            info = self.arginfo[key] = _programs(dev).kernel_args_info(self.cl_kernel(dev, name),
                                                                    dev.native)
        return info

    def all_names(self) -> tuple[str, ...]:
        return tuple(self.variants) + self.names

    def merged(self, other: _Image) -> _Image:
        """This image, also holding ``other``'s kernel ids and programs: ``other`` has the
        same key (one compiled function submitted under two kernel names, or one object
        image compiled for other devices)."""
        if other is self or (other.kernel_ids <= self.kernel_ids
                             and other.programs.keys() <= self.programs.keys()):
            return self
        return _Image(self.state, self.format, self.key,
                      kernel_ids=self.kernel_ids | other.kernel_ids, aspects=self.aspects,
                      variants={**other.variants, **self.variants},
                      mkeys={**other.mkeys, **self.mkeys}, il=self.il, source=self.source,
                      programs={**other.programs, **self.programs},
                      names=dict.fromkeys(self.names + other.names), lang=self.lang,
                      options=self.options, specs={**other.specs, **self.specs}, arch=self.arch)

    def entry_of(self, kid: kernel_id) -> str | None:
        """The entry name of ``kid``'s kernel in this image (None when it has none)."""
        for mkey in list(kid.variants):
            entry = self.mkeys.get(mkey)
            if entry is not None:
                return entry
        return None


def unique_images(images: Iterable[_Image]) -> list[_Image]:
    """``images`` without duplicates: images of one state and key become one, holding
    every kernel id of them (SYCL 2020 §4.11: a bundle has each of its kernels)."""
    seen: dict[tuple[str, str], _Image] = {}
    for img in images:
        k = (img.state.value, img.key)
        prev = seen.get(k)
        seen[k] = img if prev is None else prev.merged(img)
    return list(seen.values())


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\x00")
    return h.hexdigest()


def _input_image(v: _Variant, target: tuple[str, str]) -> _Image:
    """The input-state image of a Python kernel variant for ``target`` (compiles it if
    needed)."""
    img = v.images.get(target)
    if img is None:
        k = v.load(target)
        c = k.images[target]
        ids = v.spec_ids
        img = v.images[target] = _Image(
            # device_has is part of the image: one code declared with other required
            # aspects is another image (never merged with it, linked by its aspects)
            bundle_state.input, c.format, _digest(c.format, c.arch, c.binary,
                                                  *sorted(v.device_has)),
            kernel_ids=[v.kid], aspects=frozenset(c.required_aspects) | v.device_has,
            variants={c.entry: k}, mkeys={v.mkey: c.entry}, il=c.binary,
            specs={c.entry: ids} if ids else None, arch=c.arch)
    return img


def _python_image(v: _Variant, devs: Sequence[device]) -> _Image:
    """The executable image of a Python kernel variant on devices that run the kernel in the
    interpreter (the host_debuggable device): nothing to compile or build, the variant's
    key says which kernel it holds."""
    need, _exact = v.required_aspects()
    return _Image(bundle_state.executable, "python", _digest("python", str(hash(v.mkey))),
                  kernel_ids=[v.kid], aspects=need, mkeys={v.mkey: v.kid.get_name()},
                  programs=dict.fromkeys(devs))


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

    def has_kernel(self, kid: kernel_id, dev: device | None = None) -> bool:
        """Whether the image holds ``kid`` (and, with ``dev``, is compatible with it)."""
        if not isinstance(kid, kernel_id):
            raise TypeError(f"has_kernel takes a sycl.kernel_id, not {type(kid).__name__}")
        if kid not in self._img.kernel_ids:
            return False
        return dev is None or self._img.compatible(dev)

    def ext_pysycl_format(self) -> str:
        """``"spirv"``, ``"ptx"``, ``"opencl_c"``, ``"native"`` (device binary) or ``"python"``
        (the host_debuggable device: the kernel runs in the interpreter)."""
        return self._img.format

    def ext_pysycl_required_aspects(self) -> frozenset[aspect]:
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
        names = ", ".join(sorted(k.get_name() for k in img.kernel_ids)) or ", ".join(img.names)
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
    def _make(cls, ctx: context, devs: Sequence[device], state: bundle_state,
              images: Iterable[_Image], spec: dict[specialization_id, np.generic] | None = None
              ) -> kernel_bundle:
        self = object.__new__(cls)
        self._ctx = ctx
        self._devices = tuple(dict.fromkeys(devs))
        self._state = state
        self._images = tuple(unique_images(images))
        self._spec = dict(spec or {})
        return self

    # What the bundle operations, the launcher and interop read (pysycl's own; not in the spec).
    @property
    def devices(self) -> tuple[device, ...]:
        """The associated devices, as the tuple the bundle holds (no copy)."""
        return self._devices

    @property
    def images(self) -> tuple[_Image, ...]:
        """The bundle's device images (internal ``_Image`` records, not ``device_image`` views)."""
        return self._images

    @property
    def spec_values(self) -> dict[specialization_id, np.generic]:
        """The specialization constant values set on the bundle, by ``specialization_id``.

        The bundle's own dict: callers read it or copy it, never change it.
        """
        return self._spec

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
        """The backend of the bundle's context."""
        return self._ctx.get_backend()

    def get_context(self) -> context:
        """The bundle's context."""
        return self._ctx

    def get_devices(self) -> list[device]:
        """The bundle's associated devices."""
        return list(self._devices)

    def empty(self) -> bool:
        """True when the bundle has no device image."""
        self._not_source("empty")
        return not self._images

    def has_kernel(self, kid: kernel_id, dev: device | None = None) -> bool:
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
            for k in sorted(img.kernel_ids, key=lambda k: k.get_name()):
                out[k] = None
        return list(out)

    def get_kernel(self, kid: kernel_id) -> kernel:
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
            entry = img.entry_of(kid) if kid in img.kernel_ids else None
            if entry is not None and img.format == "python":
                raise exception(errc.feature_not_supported, f"kernel {kid.get_name()!r} of a "
                                "bundle of the host_debuggable device: that device runs the "
                                "Python kernel itself, there is no sycl.kernel object (submit "
                                "the kernel with h.use_kernel_bundle(kb))", self._ctx)
            if entry is not None:
                return new_kernel(self, img, entry, kid)
        raise exception(errc.invalid, f"the kernel bundle does not contain kernel {kid.get_name()!r}",
                        self._ctx)

    def ext_oneapi_has_kernel(self, name: str) -> bool:
        """Whether a kernel built from source is named ``name`` (kernel_compiler)."""
        self._not_source("ext_oneapi_has_kernel")
        return any(name in img.names for img in self._images if img.lang is not None)

    def ext_oneapi_get_kernel(self, name: str) -> kernel:
        """The kernel named ``name`` of a bundle built from source.

        Raises:
            exception: ``errc.invalid`` when ``ext_oneapi_has_kernel(name)`` is false.
        """
        if self._state is not bundle_state.executable:
            raise TypeError("ext_oneapi_get_kernel needs an executable kernel_bundle")
        for img in self._images:
            if img.lang is not None and name in img.names:
                return new_kernel(self, img, name, None)
        known = sorted(n for img in self._images if img.lang is not None for n in img.names)
        raise exception(errc.invalid, f"the bundle built from source has no kernel {name!r} "
                        f"(it has: {', '.join(known) or 'none'})", self._ctx)

    def ext_pysycl_get_kernel_by_name(self, name: str) -> kernel:
        """The kernel whose OpenCL function name is ``name`` (interop bundles)."""
        for img in self._images:
            if name in img.names or name in img.variants:
                kid = _kernel_name_of(img, name) if name in img.variants else None
                return new_kernel(self, img, name, kid)
        raise exception(errc.invalid, f"the kernel bundle has no kernel named {name!r}")

    def __iter__(self) -> Iterator[device_image]:
        self._not_source("begin/end")
        return iter([image_view(i) for i in self._images])

    def begin(self) -> Iterator[device_image]:
        """Iterator over the device images (the C++ spelling of ``iter()``)."""
        return iter(self)

    # --- specialization constants (docs/bundles.md) ---
    def _spec_ids(self) -> set[specialization_id]:
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

    def has_specialization_constant(self, spec_id: specialization_id) -> bool:
        """Whether a kernel of the bundle reads ``spec_id``."""
        self._not_source("has_specialization_constant")
        _check_spec_id(spec_id)
        return spec_id in self._spec_ids()

    def set_specialization_constant(self, spec_id: specialization_id, value: Any) -> None:
        """Set ``spec_id``'s value for this (input) bundle."""
        if self._state is not bundle_state.input:
            raise TypeError("set_specialization_constant is available only for bundles in "
                            f"bundle_state.input; this one is {self._state.name}")
        _check_spec_id(spec_id)
        self._spec[spec_id] = spec_id.convert(value)

    def get_specialization_constant(self, spec_id: specialization_id) -> np.generic:
        """The value of ``spec_id`` in this bundle (its default unless set)."""
        self._not_source("get_specialization_constant")
        _check_spec_id(spec_id)
        return self._spec.get(spec_id, spec_id.default_value)

    def _repr_html_(self) -> str:
        """The state, the devices, and one row per device image: its format, the kernels
        it holds (kernel ids by name, or the OpenCL names of source/interop images) and
        the aspects it requires."""
        rows: Rows = [
            ("state", self._state.name),
            ("devices", ", ".join(d.get_info(info.device.name) for d in self._devices)),
        ]
        for i, img in enumerate(self._images):
            names = sorted(k.get_name() for k in img.kernel_ids) or list(img.names)
            aspects = " ".join(sorted(img.aspects)) or "-"
            rows.append((f"image {i}", f"{img.format} [{', '.join(names)}] requires: {aspects}"))
        return table(rows, title="sycl.kernel_bundle")

    def __repr__(self) -> str:
        return (f"<sycl.kernel_bundle {self._state.name}: {len(self._images)} image(s), "
                f"{len(self._devices)} device(s)>")


def new_bundle(ctx: context, devs: Sequence[device], state: bundle_state, images: Iterable[_Image],
               spec: dict[specialization_id, np.generic] | None = None) -> kernel_bundle:
    """A kernel bundle of ``images`` (duplicates dropped) for ``devs`` of ``ctx``."""
    return kernel_bundle._make(ctx, devs, state, images, spec)


def image_view(img: _Image) -> device_image:
    """The ``sycl.device_image`` view of ``img``."""
    return device_image._make(img)


def _kernel_name_of(img: _Image, entry: str) -> kernel_id | None:
    for mkey, e in img.mkeys.items():
        if e == entry:
            v = variant_of(mkey)
            if v is not None:
                return v.kid
    return next(iter(img.kernel_ids), None)


# ------------------------------------------------------------ argument checks
def _check_state(state: bundle_state, what: str) -> bundle_state:
    if not isinstance(state, bundle_state):
        raise TypeError(f"{what}: state= must be a sycl.bundle_state, not {state!r}")
    if state is bundle_state.ext_oneapi_source:
        raise TypeError(f"{what}: bundle_state.ext_oneapi_source bundles come from "
                        "sycl.ext.oneapi.experimental.create_kernel_bundle_from_source")
    return state

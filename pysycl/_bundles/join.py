"""``sycl::join`` (SYCL 2020 §4.11.10) and the check of a bundle list that join and link share.

``join`` is the union of the bundles' device images, duplicates removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pysycl._bundles.kernel_bundle import _check_state, bundle_state, kernel_bundle, new_bundle
from pysycl._core.exceptions import errc, exception

if TYPE_CHECKING:
    import numpy as np

    from pysycl._kernels.specconst import specialization_id


def bundle_list(bundles: kernel_bundle | Iterable[kernel_bundle], what: str) -> list[kernel_bundle]:
    """``bundles`` (one bundle or a sequence) as a list, each checked to be a kernel_bundle."""
    if isinstance(bundles, kernel_bundle):
        return [bundles]
    if not isinstance(bundles, Iterable):
        raise TypeError(f"{what} takes a sequence of sycl.kernel_bundle")
    out = list(bundles)
    for b in out:
        if not isinstance(b, kernel_bundle):
            raise TypeError(f"{what}: expected sycl.kernel_bundle objects, not {b!r}")
    return out


def join(bundles: Sequence[kernel_bundle], state: bundle_state | None = None) -> kernel_bundle:
    """The union of the bundles' device images, duplicates removed (§4.11.10).

    ``state`` is C++'s template parameter (``sycl::join<State>({})``): needed when
    ``bundles`` is empty, checked against the bundles otherwise. ``join([], state=s)``
    is an empty bundle in state ``s`` of the default device's default context (its
    devices are the context's): C++ gives no context to an empty join.

    Raises:
        exception: ``errc.invalid`` — the bundles differ in context or device set.
        TypeError: the bundles differ in state or are not in ``state`` (ill formed
            in C++), or the list is empty and ``state`` is not given.
    """
    bl = bundle_list(bundles, "join")
    if state is not None and not isinstance(state, bundle_state):
        raise TypeError(f"join: state= must be a sycl.bundle_state, not {state!r}")
    if not bl:
        if state is None:
            raise TypeError("join([]) needs the state of the empty bundle (C++'s template "
                            "parameter): sycl.join([], state=sycl.bundle_state.executable)")
        from pysycl._objects.context import default_context_for
        from pysycl._objects.device import device

        ctx = default_context_for(device())
        return new_bundle(ctx, ctx.get_devices(), _check_state(state, "join"), [])
    first = bl[0]
    for b in bl:
        if state is not None and b.get_state() is not state:
            raise TypeError(f"join: the bundles must be in state {state.name}, one is "
                            f"{b.get_state().name}")
        if b.get_state() is not first.get_state():
            raise TypeError(f"join: bundles must share one state ({first.get_state().name} vs "
                            f"{b.get_state().name})")
        if b.get_context() != first.get_context():
            raise exception(errc.invalid, "join: the bundles have different contexts",
                            first.get_context())
        if set(b.devices) != set(first.devices):
            raise exception(errc.invalid, "join: the bundles have different device sets",
                            first.get_context())
    spec: dict[specialization_id, np.generic] = {}
    for b in bl:
        spec.update(b.spec_values)
    return new_bundle(first.get_context(), first.devices, first.get_state(),
                      [i for b in bl for i in b.images], spec)

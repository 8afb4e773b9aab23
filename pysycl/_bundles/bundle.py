"""The bundle layer's interface: kernel bundles (:mod:`pysycl._bundles.kernel_bundle`)
and their operations (:mod:`pysycl._bundles.ops`), in one place for the layers above.

Nothing in :mod:`pysycl._bundles` imports this module.
"""

from __future__ import annotations

from pysycl._bundles.compat import is_compatible
from pysycl._bundles.join import join
from pysycl._bundles.kernel_bundle import (
    _digest,
    _Image,
    bundle_state,
    count,
    device_image,
    kernel_bundle,
    new_bundle,
    reset_stats,
    stats,
    stats_snapshot,
)
from pysycl._bundles.ops import (
    _check_devs,
    build,
    check_use,
    compile,
    get_kernel_bundle,
    has_kernel_bundle,
    launch_kernel,
    link,
)
from pysycl._kernels.specconst import specialization_id

__all__ = ["_Image", "_check_devs", "_digest", "build", "bundle_state", "check_use", "compile",
           "count", "device_image", "get_kernel_bundle", "has_kernel_bundle", "is_compatible",
           "join", "kernel_bundle", "launch_kernel", "link", "new_bundle", "reset_stats", "specialization_id",
           "stats", "stats_snapshot"]

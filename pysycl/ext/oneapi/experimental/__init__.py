"""``sycl::ext::oneapi::experimental``: the kernel_compiler extension.

Kernel bundles from source, built at run time (``sycl_ext_oneapi_kernel_compiler``)::

    kb_src = syclex.create_kernel_bundle_from_source(ctx, syclex.source_language.opencl, src)
    kb_exe = syclex.build(kb_src, properties=[syclex.build_options(["-cl-fast-relaxed-math"])])
    k = kb_exe.ext_oneapi_get_kernel("my_kernel")
    q.submit(lambda h: (h.set_args(acc, np.float32(2)), h.parallel_for(sycl.range(n), k)))

Languages: ``source_language.opencl`` (OpenCL C text, ``clCreateProgramWithSource``;
runs on every device with an online compiler, PoCL included) and
``source_language.spirv`` (SPIR-V bytes, ``clCreateProgramWithIL``; devices with
``aspect.ext_pysycl_spirv``). ``build_options`` strings are passed to
``clBuildProgram`` unchanged (``shared/spec/clBuildProgram.txt``); kernel names are
the OpenCL C function names / SPIR-V entry points.

Kernel properties (``sycl_ext_oneapi_kernel_properties``), applied to the kernel
function (a property list is callable, and a decorator)::

    props = syclex.properties(syclex.work_group_size(8, 8), syclex.sub_group_size(16))
    h.parallel_for(sycl.nd_range((64, 64), (8, 8)), props(lambda it: ...))

``work_group_size`` is ``sycl.reqd_work_group_size``, ``sub_group_size``
``sycl.reqd_sub_group_size`` (see :mod:`pysycl._kernels.kprops`).

Command graphs (``sycl_ext_oneapi_graph``): ``command_graph``, ``node``, ``node_type``,
``graph_state``, ``queue_state`` and ``property.graph``/``property.node``; see
docs/graphs.md and :mod:`pysycl._backends.graph`.
"""

from __future__ import annotations

from pysycl._backends.graph import command_graph, dynamic_parameter, node, property
from pysycl._backends.graph_exec import executable_command_graph
from pysycl._bundles.properties import build_options, save_log
from pysycl._bundles.source import (
    build,
    create_kernel_bundle_from_source,
    source_language,
)
from pysycl._commands.recording import graph_state, node_type, queue_state
from pysycl._kernels.kprops import properties, reqd_sub_group_size, reqd_work_group_size
from pysycl._kernels.kprops import work_group_size_hint as work_group_size_hint
from pysycl.ext.oneapi.experimental import matrix

work_group_size = reqd_work_group_size
sub_group_size = reqd_sub_group_size

__all__ = ["build", "build_options", "command_graph", "create_kernel_bundle_from_source",
           "dynamic_parameter", "executable_command_graph", "graph_state", "matrix", "node",
           "node_type", "properties", "property", "queue_state", "save_log",
           "source_language", "sub_group_size", "work_group_size", "work_group_size_hint"]

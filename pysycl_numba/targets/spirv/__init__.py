"""The SPIR-V target: LLVM IR → SPIR-V for OpenCL's ``clCreateProgramWithIL``.

* :mod:`.ocl` -- OpenCL C built-in declarations (Itanium-mangled) the lowerings call;
* :mod:`.codegen` -- code libraries, linking, O3, emission;
* :mod:`.irguard` -- rejects IR that would make LLVM's SPIR-V backend ``abort()``;
* :mod:`.emit_worker` / ``_emit_server.py`` -- emission in a worker process;
* :mod:`.spirv_check` -- the duplicate-result-id check of emitted modules.

Importing this package imports none of them.
"""

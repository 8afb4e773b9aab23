"""The SPIR-V emission worker (see emit_worker.py). Run as a script, never imported.

Reads length-prefixed pickled requests ``{"ir", "triple", "options", "flags"}`` on stdin
(a PTX request also has ``"ptx": {"cpu", "entry", "libdevice"}``) and answers
``("ok", spirv_or_ptx)``, ``("dup", ids)`` (the backend numbered two
definitions alike: the client replaces this process) or ``("err", message)``.
Imports only llvmlite and the sibling ``spirv_check`` module (by path).
"""

from __future__ import annotations

import pickle
import struct
import sys
from typing import Any, BinaryIO


def _recv(stream: BinaryIO) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


def _send(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


_LIBDEVICE_BYTES: dict[str, bytes] = {}  # path -> libdevice bitcode, read once per worker

#: LLVM 22's SPIR-V backend maps a ``syncscope`` to a SPIR-V Scope by ids it looks up
#: once, in the first module's context (static locals of ``SPIRV::getMemScope``:
#: "subgroup", "workgroup", "device", inserted in that order), while each later
#: context numbers its scopes by first appearance. A worker that had emitted a
#: sub-group atomic then wrote a device-scope ``atomicrmw`` of another kernel with
#: Scope Subgroup (measured; tests/compiler/test_atomic_load_store.py). Every module
#: is parsed into a context that knows the three names first, in the backend's order.
_SCOPES_FIRST = ('define void @__pysycl_scopes() {\n  fence syncscope("subgroup") seq_cst\n'
                 '  fence syncscope("workgroup") seq_cst\n  fence syncscope("device") seq_cst\n'
                 '  ret void\n}\n')


def _context(ll: Any) -> Any:
    """A fresh LLVM context whose sync scope ids are the ones the SPIR-V backend assumes."""
    context = ll.create_context()
    ll.parse_assembly(_SCOPES_FIRST, context=context).close()  # its scope names stay
    return context


def _emit_ptx(ll: Any, req: dict[str, Any]) -> bytes:
    """PTX for an NVPTX module: link libdevice if asked, optimise for the GPU, emit."""
    opts = req["ptx"]
    context = _context(ll)
    module = ll.parse_assembly(req["ir"], context=context)
    module.verify()  # the kernel's part; libdevice is NVIDIA's
    tm = ll.Target.from_triple(req["triple"]).create_target_machine(cpu=opts["cpu"], opt=3)
    pb = ll.create_pass_builder(tm, ll.create_pipeline_tuning_options(speed_level=3))
    path = opts.get("libdevice")
    if path:
        if path not in _LIBDEVICE_BYTES:
            with open(path, "rb") as f:
                _LIBDEVICE_BYTES[path] = f.read()
        lib = ll.parse_bitcode(_LIBDEVICE_BYTES[path], context=context)
        lib.triple, lib.data_layout = module.triple, module.data_layout
        module.link_in(lib)
    for fn in module.functions:  # only the entry point is the module's interface
        if not fn.is_declaration and fn.name != opts["entry"]:
            fn.linkage = ll.Linkage.internal
    if path:
        # Drop libdevice's ~350 unused functions first: the O3 pipeline would
        # otherwise simplify each of them before deleting it (half the time).
        dce = ll.create_new_module_pass_manager()
        dce.add_global_dead_code_eliminate_pass()
        dce.run(module, pb)
    # NVPTX's pass-builder callbacks add NVVMReflect at the pipeline's start:
    # libdevice's __nvvm_reflect("__CUDA_FTZ") folds to 0 (no module flag), __CUDA_ARCH to the cpu's.
    pb.getModulePassManager().run(module, pb)
    return str(tm.emit_assembly(module)).encode()


def main() -> None:
    import importlib.util
    import os
    import signal

    # The client owns this process's lifetime (it ends when stdin closes). A
    # Ctrl-C, or Jupyter interrupting/shutting down its kernel, signals the whole
    # process group: that is the user's process's business, not the worker's.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    import llvmlite.binding as ll

    # Load the sibling checker by path: importing the package would start a worker.
    spec = importlib.util.spec_from_file_location(
        "_pysycl_spirv_check", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            "spirv_check.py"))
    assert spec is not None and spec.loader is not None
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    duplicate_result_ids = checker.duplicate_result_ids

    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the protocol stream
    applied: set[str] = set()
    while True:
        try:
            req = _recv(inp)
        except EOFError:
            # The client is done (it closed the pipe, or its process ended). Every answer
            # is flushed already; end here, without the interpreter's teardown (llvmlite's
            # LLVM, the modules): the client waits for this process at its own exit, and
            # the teardown cost every compiling process 30-60 ms there.
            sys.stderr.flush()
            os._exit(0)
        for opt in req.get("options", ()):
            if opt not in applied:
                ll.set_option("", opt)
                applied.add(opt)
        flags = req.get("flags", ())  # boolean options on for this request only
        for flag in flags:
            ll.set_option("", f"{flag}=true")
        try:
            if "ptx" in req:
                _send(out, ("ok", _emit_ptx(ll, req)))
                continue
            module = ll.parse_assembly(req["ir"], context=_context(ll))
            target = ll.Target.from_triple(req["triple"])
            binary = target.create_target_machine(opt=3).emit_object(module)
            dups = duplicate_result_ids(binary)
            _send(out, ("dup", dups) if dups else ("ok", binary))
        except Exception as e:
            _send(out, ("err", f"{type(e).__name__}: {e}"))
        finally:
            for flag in flags:
                ll.set_option("", f"{flag}=false")


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        # The client went away (its process ended or was interrupted): exit quietly.
        sys.exit(0)

"""A kernel's optimised SPIR-flavoured LLVM IR, retargeted to NVPTX.

The compiler's lowering targets SPIR: ``spir_kernel``/``spir_func`` calling
conventions, OpenCL C built-ins by their mangled names, ``syncscope``s named
after SPIR-V scopes. SPIR and NVPTX agree on the address spaces the lowering
uses (private 0, global 1, local/shared 3; nothing else appears: the IR guard
would refuse it), so retargeting is textual and small:

* the triple and data layout;
* the calling conventions (``spir_kernel`` → ``ptx_kernel``, ``spir_func`` → C);
* the ``syncscope``s: ``workgroup``/``subgroup`` → ``block`` (PTX has no warp
  scope for memory operations; the block scope includes it), ``singlethread``
  → ``block`` too (NVPTX has no ordered thread-scope atomics), ``device`` stays;
  ordered read-modify-writes as fences around relaxed ones, and those of system
  scope as inline ``atom.sys`` (LLVM 22 drops both the order and that scope);
* each specialization constant read as a load of a patchable ``.const``
  global (:mod:`.specconst`);
* each declared OpenCL built-in replaced by a definition from the providers
  (:mod:`.workitem`, :mod:`.groups`, :mod:`.math_builtins`, registry in :mod:`.builtins`).

A built-in without a definition is refused by name (``NotImplementedError``,
which the compiler reports as the kernel's ``errc.kernel_not_supported``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pysycl_numba.targets.ptx import (  # noqa: F401  (register providers)
    asynccopy,
    groups,
    int_builtins,
    math_builtins,
    math_formulas,
    mma,
    private,
    wgmma,
    workitem,
)
from pysycl_numba.targets.ptx.builtins import Decl, lookup
from pysycl_numba.targets.ptx.specconst import lower_spec_constants

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"

_DECLARE = re.compile(r"^declare (?:[a-z_]+ )*?(?P<ret>[^@\s]+) @(?P<name>_Z\w+)\((?P<params>[^)]*)\)"
                      r"[^\n]*$", re.M)
#: SPIR-V scope names → NVPTX's. ``singlethread`` (``memory_scope.work_item``) widens to
#: ``block``: NVPTX refuses ordered atomics and fences at thread scope ("Atomics need
#: scope > Thread", an LLVM fatal error), and a wider scope is always a valid one.
_SCOPES = {"workgroup": "block", "subgroup": "block", "device": "device",
           "singlethread": "block"}


@dataclass(frozen=True)
class Retargeted:
    """The NVPTX module text, whether it calls libdevice (``__nv_*``), and whether it calls
    the ``wgmma`` built-ins (:mod:`.wgmma`: emitted for ``sm_90a``)."""

    ir: str
    libdevice: bool
    wgmma: bool = False


def _param_types(params: str) -> tuple[str, ...]:
    return tuple(p.strip().split()[0] for p in params.split(",") if p.strip())


# `%x = atomicrmw OP ... [syncscope("S")] ORDER, align N[, !md !N...]` / `cmpxchg ... ORDER
# FAILORDER, ...` (metadata: a coarsened range kernel's alias scopes, pysycl_numba.wrapper)
_ORDERED = re.compile(
    r'^(?P<indent>\s*)(?P<head>%\S+ = (?:atomicrmw|cmpxchg) .*?)'
    r'(?P<scope> syncscope\("\w*"\))? (?P<order>acquire|release|acq_rel|seq_cst)'
    r'(?P<fail> (?:monotonic|acquire|seq_cst))?(?P<tail>(?:, align \d+)?(?:, ![\w.]+ !\d+)*)$',
    re.M)


_KERNEL_HEAD = re.compile(r"^define [^\n]*ptx_kernel [^\n]*?@[\w.$\"]+\(", re.M)


def _split_params(params: str) -> list[str]:
    """A parameter list split at its top-level commas (attributes such as
    ``initializes((0, 8))`` hold commas of their own)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(params):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(params[start:i])
            start = i + 1
    parts.append(params[start:])
    return parts


def _close(text: str, start: int) -> int:
    """The index of the parenthesis closing the one just before ``start``."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise ValueError("unbalanced parameter list")


def _align_local_params(ir: str, align: int = 16) -> str:
    """``align 16`` on the kernel's ``__local`` (shared) pointer parameters (``align 1024``
    in a kernel with work-group matrices: ``wgmma`` reads 128-byte-swizzled tiles whose
    swizzle repeats every 1024 bytes from the local accessor's start).

    NVIDIA's OpenCL places each ``__local`` argument in the dynamic shared
    memory window by the alignment its PTX parameter declares; LLVM declares
    ``.align 1`` for a parameter without the attribute, and such a kernel faulted
    (misaligned shared accesses) on an H100, while ``.align 16`` ran correctly.
    The parameters are split with their attributes' parentheses in mind: a
    kernel whose first access stores to local memory gets
    ``initializes((0, 8))``, and a pattern that stopped at that comma left its
    parameter at ``.align 1`` (the SYCL-CTS ``atomic_ref`` kernels faulted).
    """
    out, pos = [], 0
    for m in _KERNEL_HEAD.finditer(ir):
        end = _close(ir, m.end())
        params = []
        for p in _split_params(ir[m.end():end]):
            head = p.lstrip()
            if head.startswith("ptr addrspace(3)"):
                rest = re.sub(r" align \d+(?= |$)", "", head[len("ptr addrspace(3)"):])
                p = p[:len(p) - len(head)] + f"ptr addrspace(3) align {align}" + rest
            params.append(p)
        out += [ir[pos:m.end()], ",".join(params)]
        pos = end
    return "".join(out) + ir[pos:]


def _fence_ordered_rmw(ir: str) -> str:
    """Ordered read-modify-writes as fence + relaxed operation + fence.

    LLVM 22's NVPTX backend drops the ordering (and the system scope) of
    ``atomicrmw``/``cmpxchg``: ``acq_rel`` came out as a relaxed ``atom``
    (fixed upstream after this LLVM; llvm-project #176015). The C++ memory
    model's equivalent with fences keeps the spec's ``memory_order``: a release
    (or stronger) fence before, an acquire (or stronger) fence after, the
    operation itself relaxed, all at the operation's scope.
    """
    def fenced(m: re.Match[str]) -> str:
        order, scope, ind = m.group("order"), m.group("scope") or "", m.group("indent")
        before = "seq_cst" if order == "seq_cst" else "release"
        after = "seq_cst" if order == "seq_cst" else "acquire"
        fail = " monotonic" if m.group("fail") else ""
        lines = []
        if order != "acquire":
            lines.append(f"{ind}fence{scope} {before}")
        lines.append(f"{ind}{m.group('head')}{scope} monotonic{fail}{m.group('tail')}")
        if order != "release":
            lines.append(f"{ind}fence{scope} {after}")
        return "\n".join(lines)
    return _ORDERED.sub(fenced, ir)


# `%x = atomicrmw OP ptr addrspace(1) %p, TY V monotonic, align N` (no syncscope: system)
_SYSTEM_RMW = re.compile(
    r"^(?P<ind>\s*)(?P<res>%\S+) = atomicrmw (?:volatile )?(?P<op>\w+) ptr addrspace\(1\) "
    r"(?P<ptr>%\S+), (?P<ty>i32|i64|float|double) (?P<val>\S+) monotonic(?:, align \d+)?"
    r"(?:, ![\w.]+ !\d+)*$", re.M)
# LLVM operation → PTX ``atom`` operation (``{}`` is the width), by operand type.
_ATOM_OPS = {("xchg", "i"): "exch.b{}", ("add", "i"): "add.u{}", ("and", "i"): "and.b{}",
             ("or", "i"): "or.b{}", ("xor", "i"): "xor.b{}", ("max", "i"): "max.s{}",
             ("min", "i"): "min.s{}", ("umax", "i"): "max.u{}", ("umin", "i"): "min.u{}",
             ("fadd", "f"): "add.f{}"}
_ASM_REG = {"i32": "r", "i64": "l", "float": "f", "double": "d"}


def _system_scope_rmw(ir: str) -> str:
    """System-scope read-modify-writes on global memory as ``atom.sys`` (inline PTX).

    LLVM 22's NVPTX writes every ``atomicrmw`` at the default ``.gpu`` scope: an
    ``exchange`` or ``fetch_add`` of ``memory_scope.system`` would not be atomic
    with respect to the host or another device. ``atom.sys`` (PTX ISA 5.0, sm_60)
    is; the operation stays relaxed, the fences around it (:func:`_fence_ordered_rmw`)
    give its order. ``cmpxchg`` keeps its scope in LLVM 22 and is left alone.
    """
    def sys(m: re.Match[str]) -> str:
        ty, op, val = m.group("ty"), m.group("op"), m.group("val")
        bits = {"i32": 32, "i64": 64, "float": 32, "double": 64}[ty]
        if op == "sub":  # PTX has no atom.sub: add the negation
            op, neg = "add", f"{m.group('res')}.neg"
            pre = f"{m.group('ind')}{neg} = sub {ty} 0, {val}\n"
            val = neg
        else:
            pre = ""
        ptx_op = _ATOM_OPS.get((op, "i" if ty[0] == "i" else "f"))
        if ptx_op is None:
            return m.group(0)
        reg = _ASM_REG[ty]
        return (f"{pre}{m.group('ind')}{m.group('res')} = call {ty} asm sideeffect "
                f'"atom.sys.global.{ptx_op.format(bits)} $0, [$1], $2;", '
                f'"={reg},l,{reg},~{{memory}}"(ptr addrspace(1) {m.group("ptr")}, {ty} {val})')
    return _SYSTEM_RMW.sub(sys, ir)


_FREM = re.compile(r"^(\s*%[\w.]+ = )frem (?:[a-z]+ )*(float|double) ([^,\n]+), ([^\n]+)$", re.M)


def _frem_to_fmod(ir: str) -> tuple[str, set[str]]:
    """``frem`` (Python's ``%`` on floats, C's ``fmod``) as libdevice's exact ``fmod``.

    NVPTX expands ``frem`` to ``x - y * trunc(x / y)``, which is neither exact
    (``22.89 % 5.4e-07``) nor IEEE for infinities (``inf % inf`` is NaN).
    """
    used: set[str] = set()

    def call(m: re.Match[str]) -> str:
        ty = m.group(2)
        fn = math_builtins.callee("fmod", ty)[0]  # OpenCL's fmod, as the math built-ins call it
        used.add(f"declare {ty} @{fn}({ty}, {ty})")
        return f"{m.group(1)}call {ty} @{fn}({ty} {m.group(3)}, {ty} {m.group(4)})"

    return _FREM.sub(call, ir), used


def retarget(ir: str, mads_in_flight: int = 0) -> Retargeted:
    """The SPIR-flavoured optimised IR of one kernel, rewritten for NVPTX.

    Raises:
        NotImplementedError: a built-in has no PTX definition (named in the message).
    """
    ir = re.sub(r'target triple = ".*"', f'target triple = "{NVPTX_TRIPLE}"', ir)
    ir = re.sub(r'target datalayout = ".*"', f'target datalayout = "{NVPTX_LAYOUT}"', ir)
    ir = ir.replace("spir_kernel ", "ptx_kernel ").replace("spir_func ", "")
    ir = re.sub(r'syncscope\("(\w+)"\)',
                lambda m: f'syncscope("{_SCOPES.get(m.group(1), m.group(1))}")', ir)
    uses_wgmma = wgmma.MARK in ir
    ir = _system_scope_rmw(_fence_ordered_rmw(
        _align_local_params(ir, 1024 if uses_wgmma else 16)))
    ir = asynccopy.constant_waits(ir)
    if uses_wgmma:  # no branches ptxas would wait for the products on (asynccopy)
        ir = asynccopy.predicated_waits(ir)
    ir, spec_globals = lower_spec_constants(ir)
    ir, fmods = _frem_to_fmod(ir)
    bodies: list[str] = []
    needs: set[str] = set(spec_globals) | fmods
    libdevice = bool(fmods)
    unknown: list[str] = []
    for m in _DECLARE.finditer(ir):
        decl = Decl(m.group("name"), m.group("ret"), _param_types(m.group("params")))
        gen = lookup(decl.name)
        if gen is None:
            unknown.append(decl.name)
            continue
        d = gen(decl)
        bodies.append(d.body)
        needs |= d.needs
        libdevice |= d.libdevice
    if unknown:
        raise NotImplementedError(
            "OpenCL built-ins without a PTX definition: " + ", ".join(sorted(set(unknown))))
    ir = _DECLARE.sub("", ir)
    # An intrinsic the kernel already declares (``llvm.umax.i32`` from a ``max``) is
    # not declared twice: LLVM refuses a redefinition.
    declared = set(re.findall(r"^declare [^@\n]*@([\w.$]+)\(", ir, re.M))
    needs = {n for n in needs if (m := re.match(r"declare [^@]*@([\w.$]+)\(", n)) is None
             or m.group(1) not in declared}
    text = "\n".join([ir, *sorted(needs), *bodies])
    if uses_wgmma:
        text = wgmma.inline_publish(wgmma.wait_at_barriers(text, mads_in_flight))
        return Retargeted(text, libdevice, True)
    return Retargeted(text, libdevice)

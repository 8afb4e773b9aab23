"""A CTA simulator for the PTX target's built-in definitions (the IR text, not a model of it).

No GPU runs here, so the tests execute the ``define`` bodies of
:mod:`pysycl_numba.targets.ptx.groups` directly: every thread of a CTA of shape
``(ntid.x, ntid.y, ntid.z)`` interprets the IR, and a scheduler resolves the
NVVM synchronising intrinsics with PTX's rules, strictly:

* ``shfl.sync``/``vote.sync``/``bar.warp.sync``: every thread of the warp must
  be at the same instruction with the same mask, and the mask must be exactly
  the warp's existing lanes (a lane in the mask that never arrives hangs a
  GPU; one missing from it is undefined). A shuffle from a lane outside the
  mask returns garbage, which a correct definition must discard.
* ``bar.sync``/``bar.red``: every thread of the CTA at the same instruction.
* shared memory: two accesses to a scratch slot by different threads, one a
  write, with no CTA barrier between them, are a data race (reported
  whatever the interleaving: the check compares barrier epochs).

Only the IR subset the definitions use is interpreted.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

WARP = 32
GARBAGE = 0x5EEDF00D
_WIDTH = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}


class SimError(AssertionError):
    """The definition broke a PTX rule (mask, convergence, race) or hung."""


@dataclass
class Function:
    """A parsed ``define``: parameter names, body lines, label positions."""

    params: list[str]
    lines: list[str]
    labels: dict[str, int]


def parse(body: str) -> Function:
    head, *rest = body.strip().splitlines()
    params = re.findall(r"%(\w+)[,)]", head[head.index("(", head.index("@")):])
    lines = [ln.strip() for ln in rest[:-1]]
    labels = {ln[:-1]: k for k, ln in enumerate(lines) if ln.endswith(":")}
    return Function(params, lines, labels)


def _f32(x: float) -> float:
    return float(np.float32(x))


@dataclass
class Thread:
    tid: tuple[int, int, int]
    ntid: tuple[int, int, int]
    env: dict[str, Any] = field(default_factory=dict)
    epoch: int = 0

    @property
    def lin(self) -> int:
        return self.tid[0] + self.ntid[0] * (self.tid[1] + self.ntid[1] * self.tid[2])


def _value(th: Thread, tok: str) -> Any:
    tok = tok.strip()
    if tok.startswith("%"):
        return th.env[tok[1:]]
    if tok in ("true", "false"):
        return int(tok == "true")
    return int(tok)


def _mask(ty: str) -> int:
    return (1 << _WIDTH[ty]) - 1


def _signed(v: int, ty: str) -> int:
    w = _WIDTH[ty]
    return v - (1 << w) if v >> (w - 1) else v


def _binop(op: str, ty: str, a: Any, b: Any) -> Any:
    if op == "fadd":
        return _f32(a + b) if ty == "float" else a + b
    m = _mask(ty)
    a, b = a & m, b & m  # literals are signed in the text
    return {"add": lambda: (a + b) & m, "sub": lambda: (a - b) & m, "mul": lambda: (a * b) & m,
            "lshr": lambda: a >> b, "shl": lambda: (a << b) & m, "and": lambda: a & b,
            "or": lambda: a | b}[op]()


def _icmp(pred: str, ty: str, a: int, b: int) -> int:
    if pred.startswith("s"):
        a, b = _signed(a, ty), _signed(b, ty)
    r = {"eq": a == b, "ne": a != b, "ult": a < b, "ugt": a > b, "ule": a <= b, "uge": a >= b,
         "slt": a < b, "sgt": a > b}[pred]
    return int(r)


def _cast(op: str, src: str, v: Any, dst: str) -> Any:
    if op == "trunc":
        return v & _mask(dst)
    if op == "zext":
        return v
    if src == "float":
        return int.from_bytes(struct.pack("<f", v), "little")
    if src == "double":
        return int.from_bytes(struct.pack("<d", v), "little")
    if dst == "float":
        return struct.unpack("<f", v.to_bytes(4, "little"))[0]
    return struct.unpack("<d", v.to_bytes(8, "little"))[0]


def _minmax(fn: str, ty: str, a: Any, b: Any) -> Any:
    kind = fn.split(".")[1]
    if kind in ("minnum", "maxnum"):
        if np.isnan(a):
            return b
        if np.isnan(b):
            return a
        return min(a, b) if kind == "minnum" else max(a, b)
    if kind[0] == "s":
        a2, b2 = _signed(a, ty), _signed(b, ty)
        pick = a2 if (a2 < b2) == (kind == "smin") else b2
        return pick & _mask(ty)
    return min(a, b) if kind == "umin" else max(a, b)


_ARG = re.compile(r"(\w+) ([^,]+)")


def run_thread(fn: Function, th: Thread, shared: Shared) -> Generator[tuple, Any, Any]:
    """Interpret ``fn`` for thread ``th``; yields at each synchronising intrinsic."""
    pc = 0
    while True:
        ln = fn.lines[pc]
        pc += 1
        if ln.endswith(":"):
            continue
        dest, _, rhs = ln.partition(" = ") if ln.startswith("%") else ("", "", ln)
        op, _, rest = rhs.partition(" ")
        if op == "ret":
            return None if rest == "void" else _value(th, rest.split(" ", 1)[1])
        if op == "br":
            if rest.startswith("label"):
                pc = fn.labels[rest.split("%")[1]]
            else:
                c, t, f = re.fullmatch(r"i1 (\S+), label %(\S+), label %(\S+)", rest).groups()
                pc = fn.labels[t if _value(th, c) else f]
            continue
        out: Any
        if op in ("add", "sub", "mul", "lshr", "shl", "and", "or", "fadd"):
            ty, a, b = re.fullmatch(r"(\w+) ([^,]+), (.+)", rest).groups()
            out = _binop(op, ty, _value(th, a), _value(th, b))
        elif op == "icmp":
            pred, ty, a, b = re.fullmatch(r"(\w+) (\w+) ([^,]+), (.+)", rest).groups()
            out = _icmp(pred, ty, _value(th, a), _value(th, b))
        elif op == "select":
            c, a, b = re.fullmatch(r"i1 (\S+), \w+ (\S+), \w+ (\S+)", rest).groups()
            out = _value(th, a) if _value(th, c) else _value(th, b)
        elif op in ("trunc", "zext", "bitcast"):
            src, v, dst = re.fullmatch(r"(\w+) (\S+) to (\w+)", rest).groups()
            out = _cast(op, src, _value(th, v), dst)
        elif op == "getelementptr":
            out = ("slot", _value(th, rest.rsplit("i32 ", 1)[1]))
        elif op == "store":
            ty, v, p = re.fullmatch(r"(\w+) (\S+), ptr addrspace\(3\) (\S+), align 8", rest).groups()
            shared.access(th, _value(th, p)[1], write=True)
            shared.slots[_value(th, p)[1]] = _value(th, v)
            continue
        elif op == "load":
            ty, p = re.fullmatch(r"(\w+), ptr addrspace\(3\) (\S+), align 8", rest).groups()
            slot = _value(th, p)[1]
            shared.access(th, slot, write=False)
            out = shared.slots.get(slot, GARBAGE)
        elif op == "call":
            m = re.fullmatch(r"(\w+) @([\w.]+)\((.*)\)", rest)
            ret, name, argtext = m.groups()
            args = [_value(th, v) for _, v in _ARG.findall(argtext)]
            if name.startswith("llvm.nvvm.read.ptx.sreg."):
                reg, ax = name.split(".")[-2:]
                out = (th.tid if reg == "tid" else th.ntid)["xyz".index(ax)]
            elif name.startswith(("llvm.umin", "llvm.umax", "llvm.smin", "llvm.smax",
                                  "llvm.minnum", "llvm.maxnum")):
                out = _minmax(name, ret, *args)
            else:
                out = yield (name, pc - 1, args)
                if ret == "void":
                    continue
        else:
            raise SimError(f"the simulator does not know: {ln}")
        th.env[dest[1:]] = out


@dataclass
class Shared:
    """The scratch slots and, per slot, the accesses of the current epochs (race check)."""

    slots: dict[int, Any] = field(default_factory=dict)
    seen: dict[int, list[tuple[int, int, bool]]] = field(default_factory=dict)

    def access(self, th: Thread, slot: int, write: bool) -> None:
        for lin, epoch, w in self.seen.get(slot, []):
            if lin != th.lin and epoch == th.epoch and (w or write):
                raise SimError(f"data race on scratch slot {slot}: threads {lin} and {th.lin} "
                               f"with no barrier between them")
        self.seen.setdefault(slot, []).append((th.lin, th.epoch, write))


def _warp_op(name: str, items: list[tuple[Thread, tuple]], nlanes: int) -> list[Any]:
    """Results of one warp-synchronous intrinsic for the warp's threads (in lane order)."""
    pcs = {it[1][1] for it in items}
    masks = {it[1][2][0] for it in items}
    if len(pcs) != 1 or len(masks) != 1:
        raise SimError(f"{name}: the warp's lanes diverge (pcs {pcs}, masks {masks})")
    mask = masks.pop() & 0xFFFFFFFF  # a literal mask is signed in the text
    if mask != (1 << nlanes) - 1:
        raise SimError(f"{name}: mask {mask:#x} but the warp has {nlanes} lanes")
    args = [it[1][2] for it in items]
    if "vote" in name:
        preds = [a[1] for a in args]
        return [int(any(preds) if ".any." in name else all(preds))] * nlanes
    if "bar.warp.sync" in name:
        return [None] * nlanes
    vals = [a[1] for a in args]
    out = []
    for lane, a in enumerate(args):
        src = lane + a[2] if ".down." in name else a[2] & 31
        if src > 31:
            src = lane
        out.append(vals[src] if mask >> src & 1 else GARBAGE)
    return out


def run_cta(program: Sequence[tuple[Function, Any]], ntid: tuple[int, int, int]) -> list[list[Any]]:
    """Every thread of a CTA runs ``program`` (definition, per-thread argument lists) in order.

    ``args(lin)`` gives thread ``lin``'s arguments for each step. Returns, per
    step, each thread's result (by linear id).
    """
    nx, ny, nz = ntid
    threads = [Thread((x, y, z), ntid) for z in range(nz) for y in range(ny) for x in range(nx)]
    shared = Shared()
    wg = len(threads)
    results: list[list[Any]] = []
    for fn, args_of in program:
        gens: list[Generator[tuple, Any, Any] | None] = []
        for th in threads:
            th.env = dict(zip(fn.params, args_of(th.lin), strict=True))
            gens.append(run_thread(fn, th, shared))
        res: list[Any] = [None] * wg
        at: list[tuple | None] = [None] * wg
        for i, g in enumerate(gens):
            at[i] = _advance(g, None, res, i)
        while any(a is not None for a in at):
            progressed = False
            for w0 in range(0, wg, WARP):
                lanes = list(range(w0, min(w0 + WARP, wg)))
                pending = [(threads[i], at[i]) for i in lanes if at[i] is not None]
                if pending and len(pending) == len(lanes) and not pending[0][1][0].startswith(
                        "llvm.nvvm.barrier"):
                    if any(p[1][0].startswith("llvm.nvvm.barrier") for p in pending):
                        raise SimError("a warp is split between a barrier and a warp operation")
                    outs = _warp_op(pending[0][1][0], pending, len(lanes))
                    for i, o in zip(lanes, outs, strict=True):
                        at[i] = _advance(gens[i], o, res, i)
                    progressed = True
            if progressed:
                continue
            names = {(a[0], a[1]) for a in at if a is not None}
            if len(names) != 1 or any(a is None for a in at) or \
                    not next(iter(names))[0].startswith("llvm.nvvm.barrier"):
                raise SimError(f"hang: threads wait at {names} (some done: {None in at})")
            name = next(iter(names))[0]
            preds = [a[2][1] for a in at if a is not None] if ".red." in name else []
            out = (int(any(preds)) if ".or." in name else int(all(preds))) if preds else None
            for i in range(wg):
                threads[i].epoch += 1
                at[i] = _advance(gens[i], out, res, i)
        results.append(res)
    return results


def _advance(g: Generator[tuple, Any, Any], send: Any, res: list[Any], i: int) -> tuple | None:
    try:
        return g.send(send)
    except StopIteration as stop:
        res[i] = stop.value
        return None

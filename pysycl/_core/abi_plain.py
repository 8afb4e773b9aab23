"""The disk cache's plain form of a :class:`~pysycl._core.abi.CompiledKernel`: JSON-ready data.

Nothing read back is looked up by name or executed: a closed set of type names, each
field checked (kind, range, pattern) before a kernel is rebuilt from it
(docs/caching.md). Split from :mod:`pysycl._core.abi`, whose types it serialises.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pysycl._core.abi import (
    ASSERT_MAX_VALUES,
    PRINT_DTYPES,
    PRINT_FORMAT,
    PRINT_NUMBER,
    AccessorType,
    Capture,
    CaptureType,
    CompiledKernel,
    IndexSpace,
    PointerType,
    PrintType,
    ReductionOp,
    ReductionType,
    SameAsType,
    ScalarType,
    SpecConstantType,
    StreamType,
    TupleType,
)
from pysycl._core.vec_layout import dtype_from_text, dtype_text

# ------------------------------------------------------- plain-data form (disk cache)
#: Version of the plain form below; an entry of another version is rebuilt, never read.
PLAIN_SCHEMA = 7  # 3: USM pointer captures, local accessors specialised on their shape
#                  4: same-as captures (a local accessor a helper reads too), sites
#                  5: asserts
#                  6: span reductions (ReductionType.span)
#                  7: the index space's ``looped``

_DTYPE_RE = re.compile(r"[<>|=]?[biufc][0-9]{1,2}(x[0-9]{1,2})?")  # "x4": a vec<T, 4> element
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]{0,200}")
_REDUCTION_OPS = frozenset([*(op.name for op in ReductionOp), "custom"])


def _dtype_to_plain(dt: np.dtype) -> str:
    return dtype_text(np.dtype(dt))


def _dtype_from_plain(v: object) -> np.dtype:
    # Only plain numeric dtype strings: never a structured, object or void dtype.
    if not isinstance(v, str) or not _DTYPE_RE.fullmatch(v):
        raise ValueError(f"not a numeric dtype: {v!r}")
    return dtype_from_text(v)


def _default_to_plain(v: bool | int | float) -> dict[str, object]:
    if isinstance(v, (bool, np.bool_)):
        return {"bool": bool(v)}
    if isinstance(v, (int, np.integer)):
        return {"int": int(v)}
    return {"float": float(v).hex()}  # exact, NaN and infinities included


def _default_from_plain(d: object) -> bool | int | float:
    if isinstance(d, dict) and len(d) == 1:
        ((k, v),) = d.items()
        if k == "bool" and isinstance(v, bool):
            return v
        if k == "int" and isinstance(v, int) and not isinstance(v, bool):
            return v
        if k == "float" and isinstance(v, str):
            return float.fromhex(v)
    raise ValueError(f"not a spec constant default: {d!r}")


def _type_to_plain(t: CaptureType) -> dict[str, object]:
    if isinstance(t, AccessorType):
        plain: dict[str, object] = {"kind": "accessor", "dtype": _dtype_to_plain(t.dtype),
                                    "ndim": t.ndim, "mode": t.mode, "space": t.space}
        if t.shape is not None:
            plain["shape"] = list(t.shape)
        return plain
    if isinstance(t, ScalarType):
        return {"kind": "scalar", "dtype": _dtype_to_plain(t.dtype)}
    if isinstance(t, SpecConstantType):
        return {"kind": "spec_constant", "dtype": _dtype_to_plain(t.dtype),
                "default": _default_to_plain(t.default)}
    if isinstance(t, TupleType):
        return {"kind": "tuple", "elements": [_type_to_plain(e) for e in t.elements]}
    if isinstance(t, PrintType):
        return {"kind": "print"}
    if isinstance(t, StreamType):
        return {"kind": "stream"}
    if isinstance(t, PointerType):
        return {"kind": "pointer", "dtype": _dtype_to_plain(t.dtype), "readonly": t.readonly}
    if isinstance(t, SameAsType):
        return {"kind": "same", "index": t.index}
    raise TypeError(f"no plain form for capture type {type(t).__name__}")


def _fields(d: object, keys: set[str], what: str) -> dict[str, Any]:
    if not isinstance(d, dict) or set(d) != keys:
        raise ValueError(f"{what}: expected the fields {sorted(keys)}, got {d!r:.200}")
    return d


def _int(v: object, lo: int, hi: int, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError(f"{what}: {v!r} is not an integer in {lo}..{hi}")
    return v


def _choice(v: object, allowed: frozenset[str] | tuple[str, ...], what: str) -> Any:
    if not isinstance(v, str) or v not in allowed:
        raise ValueError(f"{what}: {v!r} is not one of {sorted(allowed)}")
    return v


def _type_from_plain(d: object, depth: int = 0) -> CaptureType:
    # A closed set of type names, checked one by one: nothing is looked up by name.
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind == "accessor":
        keys = {"kind", "dtype", "ndim", "mode", "space"}
        f = _fields(d, keys | {"shape"} if isinstance(d, dict) and "shape" in d else keys,
                    "accessor type")
        ndim = _int(f["ndim"], 1, 3, "ndim")
        shape = None
        if "shape" in f:
            if not isinstance(f["shape"], list) or len(f["shape"]) != ndim:
                raise ValueError(f"accessor type: shape {f['shape']!r:.50} is not {ndim} sizes")
            shape = tuple(_int(n, 0, 1 << 31, "shape") for n in f["shape"])
        return AccessorType(_dtype_from_plain(f["dtype"]), ndim,
                            _choice(f["mode"], ("read", "write", "read_write"), "mode"),
                            _choice(f["space"], ("global", "local"), "space"), shape)
    if kind == "scalar":
        f = _fields(d, {"kind", "dtype"}, "scalar type")
        return ScalarType(_dtype_from_plain(f["dtype"]))
    if kind == "print":
        _fields(d, {"kind"}, "print type")
        return PrintType()
    if kind == "stream":
        _fields(d, {"kind"}, "stream type")
        return StreamType()
    if kind == "same":
        f = _fields(d, {"kind", "index"}, "same-as type")
        return SameAsType(_int(f["index"], 0, 1 << 16, "same-as index"))
    if kind == "pointer":
        f = _fields(d, {"kind", "dtype", "readonly"}, "pointer type")
        if not isinstance(f["readonly"], bool):
            raise ValueError(f"pointer type: readonly must be a bool, got {f['readonly']!r:.50}")
        return PointerType(_dtype_from_plain(f["dtype"]), f["readonly"])
    if kind == "spec_constant":
        f = _fields(d, {"kind", "dtype", "default"}, "spec constant type")
        return SpecConstantType(_dtype_from_plain(f["dtype"]), _default_from_plain(f["default"]))
    if kind == "tuple" and depth < 8:
        f = _fields(d, {"kind", "elements"}, "tuple type")
        if not isinstance(f["elements"], list) or len(f["elements"]) > 256:
            raise ValueError("tuple type: elements must be a list of at most 256 types")
        elements = tuple(_type_from_plain(e, depth + 1) for e in f["elements"])
        if not all(isinstance(e, (ScalarType, TupleType)) for e in elements):
            raise ValueError("tuple type: elements must be numbers or tuples")
        return TupleType(elements)  # type: ignore[arg-type]
    raise ValueError(f"unknown capture type {kind!r:.100}")


def _str(v: object, what: str, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(v, str) or (pattern is not None and not pattern.fullmatch(v)):
        raise ValueError(f"{what}: {v!r:.100} is not a valid string")
    return v


def kernel_to_plain(k: CompiledKernel) -> dict[str, object]:
    """``k`` without its binary as JSON-ready plain data (see :func:`kernel_from_plain`)."""
    return {
        "schema": PLAIN_SCHEMA,
        "format": k.format,
        "entry": k.entry,
        "captures": [{"name": c.name, "source": c.source, "owner": c.owner,
                      "type": _type_to_plain(c.type)} for c in k.captures],
        "index": {"kind": k.index.kind, "ndim": k.index.ndim, "looped": k.index.looped},
        "required_aspects": sorted(k.required_aspects),
        "source_location": k.source_location,
        "reductions": [{"dtype": _dtype_to_plain(r.dtype), "op": r.op, "span": r.span}
                       for r in k.reductions],
        "direct_index": [list(t) for t in k.direct_index],
        "bounds_checked": k.bounds_checked,
        "arch": k.arch,
        "sites": [list(t) for t in k.sites],
        "asserts": [[site, None if pieces is None else list(pieces)]
                    for site, pieces in k.asserts],
    }


def _reduction_from_plain(r: object) -> ReductionType:
    rf = _fields(r, {"dtype", "op", "span"}, "reduction")
    if not isinstance(rf["span"], bool):
        raise ValueError(f"reduction span: {rf['span']!r:.20} is not a bool")
    return ReductionType(_dtype_from_plain(rf["dtype"]),
                         _choice(rf["op"], _REDUCTION_OPS, "reduction op"), rf["span"])


def kernel_from_plain(d: object, binary: bytes) -> CompiledKernel:
    """The :class:`CompiledKernel` that :func:`kernel_to_plain` gave ``d`` for, with ``binary``.

    Every field is checked against the schema: an unknown schema version, an
    unknown capture type or a value out of range raises ``ValueError``. Nothing
    is imported or looked up by a name read from ``d``.
    """
    f = _fields(d, {"schema", "format", "entry", "captures", "index", "required_aspects",
                    "source_location", "reductions", "direct_index", "bounds_checked", "arch",
                    "sites", "asserts"},
                "compiled kernel")
    if f["schema"] != PLAIN_SCHEMA:
        raise ValueError(f"schema {f['schema']!r:.20}, not {PLAIN_SCHEMA}")
    if not isinstance(f["captures"], list) or not isinstance(f["reductions"], list) or \
            not isinstance(f["required_aspects"], list):
        raise ValueError("captures, reductions and required_aspects must be lists")
    captures = []
    for c in f["captures"]:
        cf = _fields(c, {"name", "source", "owner", "type"}, "capture")
        captures.append(Capture(_str(cf["name"], "capture name", _NAME_RE),
                                _choice(cf["source"], ("freevar", "global", "attr", "default"),
                                        "capture source"),
                                _type_from_plain(cf["type"]),
                                _int(cf["owner"], 0, 1 << 16, "capture owner")))
    for i, c in enumerate(captures):
        t = c.type
        if isinstance(t, SameAsType) and not (
                t.index < i and isinstance(captures[t.index].type, AccessorType)
                and captures[t.index].type.space == "local"):
            raise ValueError(f"capture {i}: same-as {t.index} is no earlier local accessor")
    idx = _fields(f["index"], {"kind", "ndim", "looped"}, "index space")
    looped = _bool(idx["looped"], "index looped")
    reductions = [_reduction_from_plain(r) for r in f["reductions"]]
    sites = tuple(_site_from_plain(t) for t in _list(f["sites"]))
    direct = tuple(_direct_index_from_plain(t) for t in _list(f["direct_index"]))
    if any(t[4] >= len(sites) for t in direct):
        raise ValueError("a direct_index entry names no site")
    asserts = tuple(_assert_from_plain(t, len(sites)) for t in _list(f["asserts"]))
    fmt = _choice(f["format"], ("spirv", "ptx"), "format")
    if (fmt == "ptx") != bool(f["arch"]):
        raise ValueError(f"format {fmt} with architecture {f['arch']!r:.20}")
    return CompiledKernel(
        binary=bytes(binary),
        format=fmt,
        entry=_str(f["entry"], "entry point", _NAME_RE),
        captures=tuple(captures),
        index=IndexSpace(_choice(idx["kind"], ("range", "nd_range", "single_task",
                                               "hierarchical"), "index"),
                         _int(idx["ndim"], 0, 3, "index ndim"), looped),
        required_aspects=frozenset(_str(a, "aspect", _NAME_RE) for a in f["required_aspects"]),
        source_location=_str(f["source_location"], "source location"),
        reductions=tuple(reductions),
        direct_index=direct,
        bounds_checked=_bool(f["bounds_checked"], "bounds_checked"),
        arch=_str(f["arch"], "architecture", _ARCH_RE),
        sites=sites,
        asserts=asserts,
    )


def _assert_from_plain(v: object, nsites: int) -> tuple[int, tuple[str | int, ...] | None]:
    """An entry of ``CompiledKernel.asserts``: a site index and the message's pieces."""
    t = _list(v)
    if len(t) != 2:
        raise ValueError("an assert has a site and its message's pieces")
    site = _int(t[0], 0, nsites - 1, "assert site")
    if t[1] is None:
        return site, None
    pieces: list[str | int] = []
    for p in _list(t[1]):
        if isinstance(p, str):
            pieces.append(p)
        else:
            tag = _int(p, 0, PRINT_FORMAT | 0xFF, "assert message piece")
            if not PRINT_NUMBER <= tag & ~PRINT_FORMAT < PRINT_NUMBER + len(PRINT_DTYPES):
                raise ValueError(f"assert message piece: {tag} is no number tag")
            pieces.append(tag)
    if sum(not isinstance(p, str) for p in pieces) > ASSERT_MAX_VALUES:
        raise ValueError("an assert message with too many numbers")
    return site, tuple(pieces)


_ARCH_RE = re.compile(r"(sm_[0-9]{2,3}[a-z]?)?")


def _list(v: object) -> list[Any]:
    if not isinstance(v, list):
        raise ValueError(f"expected a list, not {type(v).__name__}")
    return v


def _bool(v: object, what: str) -> bool:
    if type(v) is not bool:
        raise ValueError(f"{what} must be true or false")
    return v


def _direct_index_from_plain(v: object) -> tuple[int, int, int, int, int]:
    t = _list(v)
    if len(t) != 5:
        raise ValueError("a direct_index entry has five numbers")
    return (_int(t[0], 0, 1 << 16, "capture position"), _int(t[1], 0, 2, "accessor dimension"),
            _int(t[2], 0, 1, "id kind"), _int(t[3], 0, 2, "launch dimension"),
            _int(t[4], 0, 1 << 22, "site"))


def _site_from_plain(v: object) -> tuple[int, int, str]:
    t = _list(v)
    if len(t) != 3:
        raise ValueError("a site has a code number, an offset or line, and a file name")
    code, where = _int(t[0], -1, 1 << 16, "site code"), _int(t[1], 0, 1 << 31, "site offset")
    filename = _str(t[2], "site file")
    if (code < 0) == (filename == ""):
        raise ValueError("a site names a file exactly when it is outside the kernel's code")
    return (code, where, filename)

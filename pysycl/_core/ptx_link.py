"""Link PTX modules into one by text: NVIDIA's OpenCL builds PTX but does not link it.

``sycl.link`` and ``sycl.build`` put the kernels of several device images into one
executable program (SYCL 2020 §4.11.10). SPIR-V images go through
``clCompileProgram``/``clLinkProgram``; for PTX, which NVIDIA's OpenCL accepts
only as a whole program (``clCreateProgramWithBinary``), the modules are merged
here and the result is built once.

Every PTX module pysycl emits starts with the same header (``.version``,
``.target``, ``.address_size``: one LLVM, one compute capability) followed by
module-scope declarations: the kernel entry (``pysycl_<digest>``, unique), and
internal functions and variables (libdevice's slow paths, the work-group
scratch ``__pysycl_wg_scratch``, specialization constants ``__pysycl_sc_<n>``)
whose names repeat across modules. Merging keeps the first header and renames
each later module's non-entry symbols with a module suffix (``__pysycl_wg_scratch``
→ ``__pysycl_wg_scratch_m1``); specialization constants are applied before, on
each module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEADER = re.compile(r"^\s*\.(?:version|target|address_size)\b[^\n]*\n", re.M)
_FUNC = re.compile(r"^(?:\.visible |\.weak |\.extern )?\.func\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)
_VAR = re.compile(r"^(?:\.visible |\.weak |\.extern )?\.(?:global|shared|const)\b[^\n;=]*?"
                  r"([\w$]+)\s*(?:\[[^\]\n]*\])*\s*(?:=[^\n]*)?;", re.M)


def module_symbols(ptx: str) -> set[str]:
    """The module-scope names of ``ptx`` other than kernel entries."""
    return set(_FUNC.findall(ptx)) | set(_VAR.findall(ptx))


def link_ptx(modules: Sequence[bytes]) -> bytes:
    """One PTX module holding every entry of ``modules`` (ASCII PTX texts of one target).

    Raises:
        ValueError: the modules' headers differ (another compute capability or PTX
            version) or one has no header.
    """
    texts = [m.decode("ascii") for m in modules]
    if len(texts) == 1:
        return modules[0]
    headers = ["".join(_HEADER.findall(t)) for t in texts]
    if not headers[0] or any(h != headers[0] for h in headers):
        raise ValueError("PTX modules of different targets cannot be linked")
    out = [headers[0]]
    for i, t in enumerate(texts):
        body = _HEADER.sub("", t)
        if i:
            names = sorted(module_symbols(body), key=len, reverse=True)
            if names:
                pat = re.compile(r"(?<![\w$])(" + "|".join(map(re.escape, names)) + r")(?![\w$])")
                body = pat.sub(rf"\g<1>_m{i}", body)
        out.append(body)
    return "\n".join(out).encode("ascii")

"""The documentation site builds with every Sphinx warning as an error, documents every
public name, and its complete code snippets run.

Which snippets run (the rule is stated in docs/index.md): every ```` ```python ````
block of README.md and docs/**/*.md whose first line is an ``import`` is a complete
program and runs in a fresh interpreter with warnings as errors; other blocks are
fragments or signatures and are not run. A snippet with a line ``# needs
sycl.aspect.a[, sycl.aspect.b]`` uses those aspects of the default device (the one its
``sycl.queue()`` gets): on a device without one it is skipped, naming the aspect. One
with ``# needs sycl.backend.b`` runs where a device of backend ``b`` exists, and one with
``# needs module m[, n]`` where those modules are installed (CuPy, PyTorch: the GPU
examples of docs/gpu.md).
Sphinx runs in a subprocess: its own deprecation warnings are not pysycl's, and ``-W``
turns every documentation warning into a failure there.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pysycl

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
NEEDS = re.compile(r"^# needs (sycl\.aspect\.\w+(?:, sycl\.aspect\.\w+)*)", re.M)
NEEDS_BACKEND = re.compile(r"^# needs sycl\.backend\.(\w+)", re.M)
NEEDS_MODULE = re.compile(r"^# needs module (\w+(?:, \w+)*)", re.M)


def _snippets() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        if "_build" in page.parts:
            continue
        text = page.read_text()
        for m in FENCE.finditer(text):
            code = m.group(1)
            first = code.lstrip().splitlines()[0] if code.strip() else ""
            if first.startswith(("import ", "from ")):
                line = text.count("\n", 0, m.start()) + 2
                out.append((f"{page.relative_to(ROOT)}:{line}", code))
    return out


SNIPPETS = _snippets()


@pytest.mark.slow
def test_sphinx_build_without_warnings(tmp_path: Path) -> None:
    # The test extra installs Sphinx; the offline GPU machine has none (tools/gpu_suite.sh).
    if importlib.util.find_spec("sphinx.__main__") is None:
        pytest.skip("Sphinx is not installed (pip install -e .[test])")
    out = tmp_path / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    api = (out / "api.html").read_text()
    anchors = set(re.findall(r'id="(?:module-)?pysycl\.([A-Za-z_]\w*)"', api))
    missing = [n for n in pysycl.__all__ if n not in anchors]
    assert not missing, f"public names without an API entry: {missing}"
    for page in ("getting-started", "mapping", "kernels", "memory", "ndrange", "bundles",
                 "caching", "devices", "debugging", "testing", "performance", "examples"):
        assert (out / f"{page}.html").is_file(), page


def test_enough_snippets_are_run() -> None:
    # A guard against a refactor that silently stops running them.
    assert len(SNIPPETS) >= 8, [s for s, _ in SNIPPETS]


def _needs(code: str) -> list[pysycl.aspect]:
    """The aspects a snippet's ``# needs sycl.aspect.x, ...`` lines name."""
    out = []
    for names in NEEDS.findall(code):
        for name in names.split(", "):
            a = getattr(pysycl.aspect, name.removeprefix("sycl.aspect."), None)
            assert isinstance(a, pysycl.aspect), f"# needs {name}: no such sycl.aspect"
            out.append(a)
    return out


def _lacking(code: str) -> str | None:
    """Why the snippet cannot run on the default device (the one its ``sycl.queue()``
    gets), or None."""
    for name in NEEDS_BACKEND.findall(code):
        be = getattr(pysycl.backend, name, None)
        assert isinstance(be, pysycl.backend), f"# needs sycl.backend.{name}: no such backend"
        if not any(d.get_backend() is be for d in pysycl.device.get_devices()):
            return f"the snippet needs a device of sycl.backend.{name}, which this machine lacks"
    for names in NEEDS_MODULE.findall(code):
        missing = [m for m in names.split(", ") if importlib.util.find_spec(m) is None]
        if missing:
            return f"the snippet needs the module(s) {', '.join(missing)}, not installed here"
    dev = pysycl.device()
    lacks = [a for a in _needs(code) if not dev.has(a)]
    if not lacks:
        return None
    return (f"the snippet needs {', '.join(f'aspect.{a.name}' for a in lacks)}, which the "
            f"default device {dev.get_info(pysycl.info.device.name)} lacks")


def test_snippets_that_need_an_aspect_say_so() -> None:
    """The ``# needs`` marker is read (a snippet with shared USM carries it), a snippet
    needing what the device lacks gets a reason naming it, a wrong name is an error."""
    marked = {s: _needs(c) for s, c in SNIPPETS if _needs(c)}
    assert any(pysycl.aspect.usm_shared_allocations in a for a in marked.values()), marked
    dev = pysycl.device()
    has = next(a for a in pysycl.aspect if dev.has(a))
    lacks = next(a for a in pysycl.aspect if not dev.has(a))
    assert _lacking(f"import pysycl\n# needs sycl.aspect.{has.name}\n") is None
    why = _lacking(f"import pysycl\n# needs sycl.aspect.{has.name}, sycl.aspect.{lacks.name}\n")
    assert why is not None and f"needs aspect.{lacks.name}, which" in why, why
    with pytest.raises(AssertionError, match=r"no such sycl\.aspect"):
        _needs("import pysycl\n# needs sycl.aspect.usm_shard_allocations\n")
    why = _lacking("import pysycl\n# needs module pysycl, no_such_module_here\n")
    assert why is not None and "no_such_module_here" in why and "pysycl," not in why, why
    assert _lacking("import pysycl\n# needs module numpy\n") is None
    own = pysycl.device.get_devices()[0].get_backend()
    assert _lacking(f"import pysycl\n# needs sycl.backend.{own.name}\n") is None
    absent = [b for b in pysycl.backend
              if not any(d.get_backend() is b for d in pysycl.device.get_devices())]
    if absent:
        why = _lacking(f"import pysycl\n# needs sycl.backend.{absent[0].name}\n")
        assert why is not None and absent[0].name in why, why
    with pytest.raises(AssertionError, match=r"no such backend"):
        _lacking("import pysycl\n# needs sycl.backend.cudaa\n")


@pytest.mark.parametrize("code", [c for _, c in SNIPPETS], ids=[s for s, _ in SNIPPETS])
def test_snippet_runs(code: str, tmp_path: Path) -> None:
    why = _lacking(code)
    if why:
        pytest.skip(why)
    script = tmp_path / "snippet.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, "-W", "error", str(script)], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr

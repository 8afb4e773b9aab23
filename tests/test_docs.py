"""The documentation site builds with every Sphinx warning as an error, documents every
public name, and its complete code snippets run.

Which snippets run (the rule is stated in docs/index.md): every ```` ```python ````
block of README.md and docs/**/*.md whose first line is an ``import`` is a complete
program and runs in a fresh interpreter with warnings as errors; other blocks are
fragments or signatures and are not run. Sphinx runs in a subprocess: its own
deprecation warnings are not pysycl's, and ``-W`` turns every documentation warning
into a failure there.
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


@pytest.mark.parametrize("code", [c for _, c in SNIPPETS], ids=[s for s, _ in SNIPPETS])
def test_snippet_runs(code: str, tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, "-W", "error", str(script)], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr

"""Sphinx configuration of pysycl's documentation (built by tests/test_docs.py with -W).

The pages are Markdown (myst-parser); ``api.md`` is generated from the docstrings
of the public ``pysycl`` names (autodoc + napoleon, Google style).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # document this checkout, not an installed copy

import pysycl  # noqa: E402

project = "pysycl"
author = "the pysycl authors"
copyright = "the pysycl authors"
release = version = pysycl.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3          # [text](kernels.md#nd_range-kernels) links
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "none"        # signatures stay readable; types are in the docstrings
autodoc_default_options = {"members": True, "undoc-members": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = f"pysycl {release}"
html_static_path: list[str] = []

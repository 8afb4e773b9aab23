"""Build the optional C extensions in place (``pip install -e .`` does this too): for running
from a source tree that was not installed, e.g. ``PYTHONPATH=$PWD`` on a GPU machine.

    python3 tools/build_native.py

The extensions are the ``[[tool.setuptools.ext-modules]]`` of pyproject.toml; one that does
not build (no C compiler, no Python headers) is reported and skipped -- pysycl works without
it (docs/gpu.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import tomllib
from setuptools import Distribution, Extension

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mods = spec["tool"]["setuptools"].get("ext-modules", [])
    exts = [Extension(m["name"], [str(ROOT / s) for s in m["sources"]],
                      optional=m.get("optional", False)) for m in mods]
    dist = Distribution({"name": "pysycl", "ext_modules": exts, "script_args": []})
    cmd = dist.get_command_obj("build_ext")
    cmd.inplace = True
    cmd.build_temp = str(ROOT / "build" / "native")
    os.chdir(ROOT)
    dist.run_command("build_ext")
    for m in mods:
        try:
            __import__(m["name"])
            print(f"built {m['name']}")
        except ImportError as e:
            print(f"not built: {m['name']} ({e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

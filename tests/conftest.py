"""Shared fixtures: real OpenCL devices, never mocks.

``cl_device``/``clq`` are every OpenCL device (PoCL included, which runs no Python
kernel); ``sycl_device``/``sycl_queue`` come from pysycl's pytest plugin, as for
users: every device that runs Python kernels, the host_debuggable one included.
``PYSYCL_TEST_DEVICES`` (comma-separated, case-insensitive substrings of the
platform or device name) restricts which devices both use, e.g.
``PYSYCL_TEST_DEVICES=intel`` or ``PYSYCL_TEST_DEVICES=pocl``; the plugin's
``--sycl-devices`` restricts its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Timing-based hypothesis checks are flaky on a loaded 2-core CI machine; the
# properties are what matter, speed is measured in benchmarks/.
settings.register_profile("pysycl", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pysycl")


def _private_cache_dir() -> None:
    """A private kernel/ICD cache per test process: no test depends on what an earlier run
    left behind, nor (under pytest-xdist) on what another worker writes meanwhile -- tests
    count compiles and disk hits. A ``PYSYCL_CACHE_DIR`` the user set is kept (one
    sub-folder per worker); one this conftest set in the xdist controller is not
    inherited by the workers."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", ... in a worker
    ours = os.environ.get("_PYSYCL_TEST_CACHE_DIR")
    given = os.environ.get("PYSYCL_CACHE_DIR")
    if given and given != ours:
        if worker:
            os.environ["PYSYCL_CACHE_DIR"] = os.path.join(given, worker)
        return
    d = tempfile.mkdtemp(prefix=f"pysycl-test-cache-{worker or 'main'}-")
    os.environ["PYSYCL_CACHE_DIR"] = os.environ["_PYSYCL_TEST_CACHE_DIR"] = d


_private_cache_dir()

import pysycl as sycl  # noqa: E402

# pysycl's pytest plugin (sycl_device, sycl_queue, --sycl-devices, sycl_requires), also
# where pysycl is not pip-installed (PYTHONPATH only); where it is, the entry point has
# the same name and pytest registers it once. tests/_parallel.py: how the suite runs
# under pytest-xdist (workers, the ``serial`` marker, progress lines).
pytest_plugins = ["_pysycl_pytestplugin", "tests._parallel"]


def _test_devices() -> list[sycl.device]:
    # OpenCL devices; the host_debuggable interpreter device has its own fixtures.
    devs = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.opencl]
    want = _wanted()
    if want:
        devs = [d for d in devs if any(w in _names(d) for w in want)]
    return devs


def _wanted() -> list[str]:
    return [t.strip().lower() for t in os.environ.get("PYSYCL_TEST_DEVICES", "").split(",")
            if t.strip()]


def _names(d: sycl.device) -> str:
    p = d.get_platform()
    return " ".join((p.get_info(sycl.info.platform.name), p.get_info(sycl.info.platform.vendor),
                     d.get_info(sycl.info.device.name), d.get_backend().value)).lower()


ALL_DEVICES = _test_devices()


def _dev_id(d: sycl.device) -> str:
    names = _names(d)
    for short in ("pocl", "intel", "nvidia", "amd"):
        if short in names:
            return short
    return d.get_info(sycl.info.device.name).split()[0].lower()


@pytest.fixture(params=ALL_DEVICES, ids=_dev_id)
def cl_device(request: pytest.FixtureRequest) -> sycl.device:
    """Every real device in turn (Intel CPU OpenCL, PoCL, any system device)."""
    return request.param


@pytest.fixture
def clq(cl_device: sycl.device) -> sycl.queue:
    """A queue on every real device in turn."""
    return sycl.queue(cl_device)


@pytest.fixture(scope="session")
def kernel_device() -> sycl.device:
    """The device Python kernels run on (loads SPIR-V or PTX), the default selector's choice
    among those ``PYSYCL_TEST_DEVICES`` allows (the NVIDIA GPU where there is one; its CUDA
    view where ``PYSYCL_TEST_DEVICES`` names ``ext_oneapi_cuda``). ``cl_device``/``clq`` are
    OpenCL devices only: their tests read OpenCL objects."""
    devs = [d for d in ALL_DEVICES if d.image_targets]
    if any("cuda" in w for w in _wanted()):  # PYSYCL_TEST_DEVICES=ext_oneapi_cuda: CUDA's view
        devs = [d for d in sycl.device.get_devices()
                if d.get_backend() is sycl.backend.ext_oneapi_cuda]
    if not devs:
        pytest.skip("no device that runs Python kernels selected by PYSYCL_TEST_DEVICES")
    return max(devs, key=sycl.default_selector_v)


@pytest.fixture
def kq(kernel_device: sycl.device) -> sycl.queue:
    """A queue on the device Python kernels run on."""
    return sycl.queue(kernel_device)


@pytest.fixture
def pocl_device() -> sycl.device:
    """The PoCL device (no IL support), for compatibility tests."""
    for d in ALL_DEVICES:
        if "pocl" in _names(d):
            return d
    pytest.skip("PoCL is not among the test devices")


@pytest.fixture(scope="session")
def host_device() -> sycl.device:
    """The host_debuggable device: kernels run in the Python interpreter."""
    return sycl.device(sycl.aspect_selector(sycl.aspect.host_debuggable))


@pytest.fixture
def fresh_stats() -> None:
    """An empty kernel memory cache and zeroed cache statistics."""
    sycl.ext.clear_kernel_memory_cache()
    sycl.ext.reset_kernel_cache_stats()


def malloc_shared_or_skip(n: int, q: sycl.queue, dtype=np.float32):  # type: ignore[no-untyped-def]
    """``sycl.malloc_shared(n, q, dtype=dtype)``; the test skips, saying why, on a device
    without shared USM (NVIDIA's OpenCL: the GPU's CUDA view runs the test)."""
    dev = q.get_device()
    if not dev.has(sycl.aspect.usm_shared_allocations):
        pytest.skip(f"{dev.get_info(sycl.info.device.name)} ({dev.get_backend().name}) has no "
                    "aspect.usm_shared_allocations")
    return sycl.malloc_shared(n, q, dtype=dtype)


def fill(q: sycl.queue, kernel_of, n: int = 4, dtype=np.float64) -> np.ndarray:
    """Run ``kernel_of(acc)`` (a range kernel writing ``acc``) over ``n`` items; the array."""
    out = np.zeros(n, dtype)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(n), kernel_of(o))

        q.submit(cg)
    return out


@pytest.fixture
def hq(host_device: sycl.device) -> sycl.queue:
    """A queue on the host_debuggable device."""
    return sycl.queue(host_device)


@pytest.fixture(params=["compiled", "host"])
def any_kernel_queue(request: pytest.FixtureRequest) -> sycl.queue:
    """A queue on the device kernels compile for (SPIR-V or PTX), then on the
    host_debuggable device (the oracle)."""
    if request.param == "host":
        return sycl.queue(request.getfixturevalue("host_device"))
    return sycl.queue(request.getfixturevalue("kernel_device"))


# ---------------------------------------------------------------- PTX on CPU-only machines
PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.path.exists("/usr/local/cuda/bin/ptxas") else None)


def ptxas_check(ptx: bytes, arch: str = "sm_90") -> None:
    """NVIDIA's assembler accepts ``ptx`` (when CUDA is installed; else nothing to do)."""
    if PTXAS is None:
        return
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        r = subprocess.run([PTXAS, f"-arch={arch}", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"ptxas refused the PTX:\n{r.stderr}"


def ptxas_report(ptx: bytes, arch: str = "sm_90") -> str | None:
    """What ``ptxas -v`` says of the PTX (it must accept it); None where CUDA is not installed."""
    if PTXAS is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        r = subprocess.run([PTXAS, "-v", f"-arch={arch}", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    assert r.returncode == 0, f"ptxas refused the PTX:\n{r.stderr}"
    return r.stderr


def ptxas_info(ptx: bytes, arch: str = "sm_90") -> tuple[int, int] | None:
    """(registers, local-memory spill bytes stored) ptxas reports for the PTX's entry
    point (``ptxas -v``); None where CUDA is not installed."""
    report = ptxas_report(ptx, arch)
    if report is None:
        return None
    r = subprocess.CompletedProcess([], 0, "", report)
    regs = re.search(r"Used (\d+) registers", r.stderr)
    spills = re.search(r"(\d+) bytes spill stores", r.stderr)
    assert regs is not None, r.stderr
    return int(regs.group(1)), int(spills.group(1)) if spills else 0


@pytest.fixture
def ptx_images(monkeypatch: pytest.MonkeyPatch) -> list:
    """Kernels run where the test runs them; each is also compiled to PTX (sm_90), or is
    PTX already (on an NVIDIA GPU: then for the GPU's compute capability).

    The list fills with the PTX ``CompiledKernel``s as kernels compile (the disk
    cache is bypassed for the test, so every kernel compiles).
    """
    import pysycl_numba

    real = pysycl_numba.compile_kernel
    images: list = []

    def both(*args, **kw):  # type: ignore[no-untyped-def]
        ck = real(*args, **kw)
        if kw.get("image_format", "spirv") == "ptx":  # on a GPU: the kernel's own image
            images.append(ck)
        else:
            images.append(real(*args, **dict(kw, image_format="ptx", arch="sm_90")))
        return ck

    monkeypatch.setattr(pysycl_numba, "compile_kernel", both)
    monkeypatch.setenv("PYSYCL_CACHE_DIR", tempfile.mkdtemp(prefix="pysycl-ptx-test-"))
    from pysycl._kernels.cache import kernels

    kernels.clear_memory()  # every kernel the test submits compiles (and so gets its PTX)
    return images

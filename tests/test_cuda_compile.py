"""Every Warp kernel of clothsim compiles for the GPU we ship for (CUDA sm_90, the H200), here without a GPU.

The CPU runs and tests only the host side of each kernel: the ``#if defined(__CUDA_ARCH__)`` branches of the
``wp.func_native`` snippets (warp shuffles, the integer atomic min of ``min_dist``), the tile code of the
block-wide BVH queries and the CUDA-only kernels (``rank_lists_warp_kernel``, the half-warp solve) are compiled
only when a CUDA device loads them. Warp's wheel carries NVRTC, so each kernel module is compiled here ahead of
time for sm_90 (``wp.compile_aot_module``, into a temporary folder): an error in CUDA-only code fails CI instead of
the next session on the GPU machine (the compiler's log is in the captured stderr). It runs the kernels nowhere;
``pytest -m gpu`` does that on the GPU.
"""

import importlib
import pkgutil

import pytest
import warp as wp

import clothsim

ARCH = 90  # NVIDIA H200 (DEVICE.md)


def _clothsim_kernel_modules():
    """The Warp modules holding clothsim's kernels: each Python module's own, and the one-kernel modules of
    kernels declared with ``module="unique"``; imports every clothsim submodule first."""
    found = {}
    for info in pkgutil.walk_packages(clothsim.__path__, "clothsim."):
        mod = importlib.import_module(info.name)
        for obj in vars(mod).values():
            if isinstance(obj, wp.Kernel) and obj.func.__module__.startswith("clothsim"):
                found[obj.module.name] = obj.module
    return found


def test_every_kernel_module_compiles_for_cuda_sm90(tmp_path):
    wp.init()
    archs = getattr(getattr(wp._src.context, "runtime", None), "nvrtc_supported_archs", None) or set()
    if ARCH not in archs:
        pytest.skip(f"this Warp build cannot compile for sm_{ARCH} (NVRTC archs: {sorted(archs)})")
    modules = _clothsim_kernel_modules()
    assert len(modules) >= 25, sorted(modules)  # the package's modules and its unique-module kernels
    failed = {}
    for name, module in sorted(modules.items()):
        try:
            paths = wp.compile_aot_module(module, arch=ARCH, module_dir=tmp_path)
            assert paths and all(p.stat().st_size > 0 for p in paths), name
        except Exception as exc:  # noqa: BLE001 -- every failure is reported below, with its module
            failed[name] = f"{type(exc).__name__}: {str(exc)[-2000:]}"
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    names = set(modules)
    for kernel in ("rank_lists_warp_kernel", "edge_edge_group_kernel", "vertex_triangle_group_kernel",
                   "vbd_solve_half_warp_kernel"):  # CUDA-only code, compiled above
        assert any(n.startswith(kernel) for n in names), kernel

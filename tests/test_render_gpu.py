"""GPU path: positions go from a Warp CUDA array into the GL vertex buffer through Warp's OpenGL
interop (no host round trip); the image must equal the CPU upload of the same positions.

Needs CUDA and the NVIDIA EGL driver (the GL context and CUDA on the same GPU): `pytest -m gpu`.
Tolerance: both paths feed the same float32 positions to the same shaders; normals differ only in
float summation order (atomic adds on the device vs bincount on the host), ~1e-7 relative, which
moves at most a few pixels by 1 level: at most 0.5% of pixels may differ by more than 2 levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from render import Material, MeshItem, Renderer, standard_view
from render.reference_images import cloth_mesh


@pytest.mark.gpu
def test_warp_interop_upload_matches_cpu_upload(device):
    import warp as wp

    v, t, _ = cloth_mesh()
    moved = v + np.array([0.0, 0.05, 0.0], np.float32) + 0.01 * np.sin(7.0 * v[:, [2, 0, 1]]).astype(np.float32)
    cam = standard_view("three_quarter", v.min(0) - 0.1, v.max(0) + 0.1, aspect=1.0)
    with Renderer() as r:  # the GL context exists before Warp maps a buffer
        x = wp.array(moved, dtype=wp.vec3, device=device)
        # the MeshItem carries triangles and material; its (rest) vertices are not uploaded
        item = MeshItem(v, t, Material.fabric("navy"), name="cloth")
        gpu_img = r.render([item], cam, width=128, height=128, device_positions={"cloth": x})
        # a second frame reuses the CUDA registration; then a numpy frame goes back to the CPU path
        gpu_img2 = r.render([item], cam, width=128, height=128, device_positions={"cloth": x})
        rest_img = r.render([item], cam, width=128, height=128)
    with Renderer() as r:
        cpu_img = r.render([MeshItem(moved, t, Material.fabric("navy"), name="cloth")], cam, width=128, height=128)
    d = np.abs(gpu_img.astype(int) - cpu_img.astype(int)).max(-1)
    assert (d > 2).mean() <= 0.005, ((d > 2).mean(), d.max())
    np.testing.assert_array_equal(gpu_img, gpu_img2)
    assert np.abs(rest_img.astype(int) - gpu_img.astype(int)).max() > 50   # the rest pose looks different

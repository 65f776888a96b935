"""The Warp kernels of the GPU interop path (render/interop.py), run on Warp's CPU device against numpy:
they only run on CUDA in the renderer (device positions), where CI cannot reach them.

References: vertex normals as render.settings.vertex_normals computes them on the host (area-weighted
sum of face normals, normalised; float64 sums there, float32 here: unit normals agree to ~1e-6, bound
1e-5) and bit-identical on a second launch (a gather in a fixed order, no float atomics); bounds equal to
numpy's min/max exactly (min and max are exact in any order), for point counts below, at and above the
kernel's thread count (1 point per thread, several, and idle threads).
"""

from __future__ import annotations

import numpy as np
import pytest

wp = pytest.importorskip("warp")

from render.interop import BOUNDS_THREADS, bounds_kernel, vertex_normals_kernel, vertex_triangles  # noqa: E402
from render.reference_images import cloth_mesh  # noqa: E402
from render.settings import vertex_normals  # noqa: E402


def test_vertex_normals_match_the_host_and_repeat_exactly():
    v, t, _ = cloth_mesh()
    v = v + 0.01 * np.sin(7.0 * v[:, [2, 0, 1]]).astype(np.float32)
    offsets, faces = vertex_triangles(t, len(v))
    assert offsets[-1] == t.size and np.all(np.diff(offsets) >= 0)
    args = [wp.array(v, dtype=wp.vec3, device="cpu"), wp.array(t.astype(np.int32), dtype=wp.int32, device="cpu"),
            wp.array(offsets, dtype=wp.int32, device="cpu"), wp.array(faces, dtype=wp.int32, device="cpu")]
    out = []
    for _ in range(2):
        n = wp.zeros(len(v), dtype=wp.vec3, device="cpu")
        wp.launch(vertex_normals_kernel, dim=len(v), inputs=args, outputs=[n], device="cpu")
        out.append(n.numpy())
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_allclose(out[0], vertex_normals(v, t), atol=1e-5)


@pytest.mark.parametrize("count", [1, 7, BOUNDS_THREADS, BOUNDS_THREADS + 1, 3 * BOUNDS_THREADS + 5])
def test_bounds_match_numpy(count):
    x = np.random.default_rng(count).normal(size=(count, 3)).astype(np.float32)
    lo = wp.full(3, 3.0e38, dtype=wp.float32, device="cpu")
    hi = wp.full(3, -3.0e38, dtype=wp.float32, device="cpu")
    threads = max(min(count, BOUNDS_THREADS), 1)
    wp.launch(bounds_kernel, dim=threads, inputs=[wp.array(x, dtype=wp.vec3, device="cpu"), threads], outputs=[lo, hi],
              device="cpu")
    np.testing.assert_array_equal(lo.numpy(), x.min(axis=0))
    np.testing.assert_array_equal(hi.numpy(), x.max(axis=0))

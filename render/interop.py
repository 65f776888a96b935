"""GPU path: draped positions go from a Warp array on CUDA straight into the GL vertex buffer.

The GL buffers of a mesh are registered with CUDA once (``wp.RegisteredGLBuffer``); each frame
maps them, copies the positions device-to-device, recomputes vertex normals with the kernels
below, and unmaps: no host round trip. Needs the NVIDIA EGL driver and the GL context created
before Warp maps (see shared DEVICE.md); on CPU the Renderer uploads numpy arrays instead.
"""

from __future__ import annotations

import numpy as np
import warp as wp


@wp.kernel
def accumulate_face_normals(x: wp.array(dtype=wp.vec3), tris: wp.array(dtype=wp.int32, ndim=2),
                            n: wp.array(dtype=wp.vec3)):
    """n[v] += area-weighted face normal (|cross| = 2 area) for each triangle's vertices."""
    f = wp.tid()
    a, b, c = tris[f, 0], tris[f, 1], tris[f, 2]
    fn = wp.cross(x[b] - x[a], x[c] - x[a])
    wp.atomic_add(n, a, fn)
    wp.atomic_add(n, b, fn)
    wp.atomic_add(n, c, fn)


@wp.kernel
def normalize_normals(n: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v = n[i]
    length = wp.length(v)
    if length > 0.0:
        n[i] = v / length


BOUNDS_THREADS = 8192   # bounds_kernel's threads: each reduces every BOUNDS_THREADS-th point, then 6 atomics


@wp.kernel
def bounds_kernel(x: wp.array(dtype=wp.vec3), stride: int, lo: wp.array(dtype=wp.float32),
                  hi: wp.array(dtype=wp.float32)):
    """lo, hi <- componentwise min/max of x: thread i reduces points i, i + stride, ... locally, then
    6 atomics (one atomic per point on 3 addresses serialised 1 M-point reductions on the GPU)."""
    i = wp.tid()
    n = x.shape[0]
    if i < n:
        low = x[i]
        high = low
        j = i + stride
        while j < n:
            q = x[j]
            low = wp.min(low, q)
            high = wp.max(high, q)
            j += stride
        for k in range(3):
            wp.atomic_min(lo, k, low[k])
            wp.atomic_max(hi, k, high[k])


class WarpGLInterop:
    """CUDA registrations of a Renderer's vertex buffers; owned and released by the Renderer."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple] = {}

    def copy_positions(self, gm, key: str, positions) -> None:
        if not isinstance(positions, wp.array) or not positions.device.is_cuda:
            raise TypeError("device_positions must be wp.arrays on a CUDA device; on CPU put numpy in the MeshItem")
        n = gm.vertex_count
        if positions.shape[0] != n:
            raise ValueError(f"mesh {key!r} has {n} vertices, the Warp array {positions.shape[0]}")
        device = positions.device
        entry = self._entries.get(key)
        if entry is None or entry[0] != (gm.vbo_pos.glo, gm.vbo_nrm.glo, id(gm.triangles_ref)):
            flags = wp.RegisteredGLBuffer.WRITE_DISCARD
            reg_pos = wp.RegisteredGLBuffer(gm.vbo_pos.glo, device=device, flags=flags)
            reg_nrm = wp.RegisteredGLBuffer(gm.vbo_nrm.glo, device=device, flags=flags)
            tris = wp.array(np.asarray(gm.triangles_ref, dtype=np.int32), dtype=wp.int32, device=device)
            entry = ((gm.vbo_pos.glo, gm.vbo_nrm.glo, id(gm.triangles_ref)), reg_pos, reg_nrm, tris)
            self._entries[key] = entry
        _, reg_pos, reg_nrm, tris = entry
        if positions.dtype != wp.vec3 or positions.ndim != 1:
            raise TypeError(f"device_positions[{key!r}] must be a 1-D wp.array of wp.vec3, got {positions.dtype} ndim {positions.ndim}")
        src = positions
        x = reg_pos.map(dtype=wp.vec3, shape=(n,))
        nrm = reg_nrm.map(dtype=wp.vec3, shape=(n,))
        try:
            wp.copy(x, src)
            nrm.zero_()
            wp.launch(accumulate_face_normals, dim=tris.shape[0], inputs=[x, tris], outputs=[nrm], device=device)
            wp.launch(normalize_normals, dim=n, inputs=[nrm], device=device)
        finally:
            reg_nrm.unmap()
            reg_pos.unmap()

    def bounds(self, positions) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) of a (N,) vec3 array [m], reduced on its device; 24 bytes come back."""
        device = positions.device
        lo = wp.full(3, 3.0e38, dtype=wp.float32, device=device)
        hi = wp.full(3, -3.0e38, dtype=wp.float32, device=device)
        threads = max(min(positions.shape[0], BOUNDS_THREADS), 1)
        wp.launch(bounds_kernel, dim=threads, inputs=[positions, threads], outputs=[lo, hi], device=device)
        return lo.numpy().astype(np.float64), hi.numpy().astype(np.float64)

    def release(self) -> None:
        """Drop the registrations (Warp unregisters them) while the GL context is still alive."""
        self._entries.clear()

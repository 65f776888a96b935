"""GPU path: draped positions go from a Warp array on CUDA straight into the GL vertex buffer.

The GL buffers of a mesh are registered with CUDA once (``wp.RegisteredGLBuffer``); each frame
maps them, copies the positions device-to-device, recomputes vertex normals with the kernels
below (a gather over each vertex's triangles in a fixed order: the same normals every frame), and
unmaps: no host round trip. Needs the NVIDIA EGL driver and the GL context created
before Warp maps (see shared DEVICE.md); on CPU the Renderer uploads numpy arrays instead.
"""

from __future__ import annotations

import numpy as np
import warp as wp

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster


@wp.kernel
def vertex_normals_kernel(x: wp.array(dtype=wp.vec3), tris: wp.array(dtype=wp.int32, ndim=2),
                          offsets: wp.array(dtype=wp.int32), faces: wp.array(dtype=wp.int32),
                          n: wp.array(dtype=wp.vec3)):
    """n[v] = unit sum of the area-weighted normals (|cross| = 2 area) of v's triangles
    faces[offsets[v]:offsets[v + 1]], in increasing triangle order: the same sum every frame (float
    atomics added in a different order each launch, so two frames of the same positions could
    differ in the last bits), in the order render.settings.vertex_normals adds them on the host."""
    v = wp.tid()
    acc = wp.vec3(0.0, 0.0, 0.0)
    for k in range(offsets[v], offsets[v + 1]):
        f = faces[k]
        a = tris[f, 0]
        b = tris[f, 1]
        c = tris[f, 2]
        acc = acc + wp.cross(x[b] - x[a], x[c] - x[a])
    length = wp.length(acc)
    if length > 0.0:
        acc = acc / length
    n[v] = acc


def vertex_triangles(triangles: np.ndarray, vertex_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets (V + 1,), faces) int32: the triangles of vertex v, ascending, are
    faces[offsets[v]:offsets[v + 1]] (vertex_normals_kernel's adjacency)."""
    t = np.asarray(triangles, dtype=np.int64).ravel()
    faces = (np.argsort(t, kind="stable") // 3).astype(np.int32)
    offsets = np.zeros(vertex_count + 1, np.int64)
    np.cumsum(np.bincount(t, minlength=vertex_count), out=offsets[1:])
    return offsets.astype(np.int32), faces


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
            offsets, faces = vertex_triangles(gm.triangles_ref, n)
            adjacency = (wp.array(offsets, dtype=wp.int32, device=device), wp.array(faces, dtype=wp.int32, device=device))
            entry = ((gm.vbo_pos.glo, gm.vbo_nrm.glo, id(gm.triangles_ref)), reg_pos, reg_nrm, tris, adjacency)
            self._entries[key] = entry
        _, reg_pos, reg_nrm, tris, (offsets, faces) = entry
        if positions.dtype != wp.vec3 or positions.ndim != 1:
            raise TypeError(f"device_positions[{key!r}] must be a 1-D wp.array of wp.vec3, got {positions.dtype} ndim {positions.ndim}")
        src = positions
        x = reg_pos.map(dtype=wp.vec3, shape=(n,))
        nrm = reg_nrm.map(dtype=wp.vec3, shape=(n,))
        try:
            wp.copy(x, src)
            wp.launch(vertex_normals_kernel, dim=n, inputs=[x, tris, offsets, faces], outputs=[nrm], device=device)
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

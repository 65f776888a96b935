"""A fine (render) mesh driven by a coarser simulation mesh through the level embedding.

Each fine vertex i is tied to one coarse triangle t_i (the triangle the level mapping locates it in, in
rest space) by local coordinates taken in a reference pose: the barycentric weights (w0, w1, w2) of its
projection on the triangle's plane and its signed distance d_i along the triangle's unit normal. Driven by
coarse positions x_c::

    x_i = w0·x_c[a] + w1·x_c[b] + w2·x_c[c] + d_i · n̂(x_c[a], x_c[b], x_c[c])

This reproduces the reference pose exactly, and any rigid motion of it (the normal turns with the
triangle); under bending the fine surface follows the coarse triangles (piecewise flat plus offsets), so a
preview can simulate coarse and still draw fine. The positions live in a Warp array on the simulation's
device that this object owns (``update`` writes it in place, no allocation): hand it to a renderer, or read
``positions()`` as numpy.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..errors import InputError

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster


@wp.kernel
def embed_positions_kernel(
    coarse: wp.array(dtype=wp.vec3),
    corners: wp.array(dtype=wp.vec3i),
    weights: wp.array(dtype=wp.vec3),
    offset: wp.array(dtype=float),
    out: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    c = corners[i]
    w = weights[i]
    a = coarse[c[0]]
    b = coarse[c[1]]
    d = coarse[c[2]]
    n = wp.cross(b - a, d - a)
    ln = wp.length(n)
    if ln > 0.0:
        n = n / ln
    out[i] = w[0] * a + w[1] * b + w[2] * d + offset[i] * n


class EmbeddedRenderMesh:
    """Fine mesh (triangles (M_f, 3)) whose vertices follow coarse triangles (see module docstring).

    Args:
        fine_reference: (N_f, 3) fine vertex positions in the reference pose [m].
        fine_triangles: (M_f, 3) the render mesh's triangles.
        coarse_reference: (N_c, 3) coarse vertex positions in the same reference pose [m].
        coarse_triangles: (M_c, 3).
        triangle: (N_f,) index of the coarse triangle each fine vertex is tied to (the level mapping's
            ``triangle``; :meth:`from_levels` takes it from a LevelSet).
        device: where the output array lives.
    """

    def __init__(self, fine_reference, fine_triangles, coarse_reference, coarse_triangles, triangle, device="cpu"):
        xf = np.asarray(fine_reference, dtype=np.float64)
        xc = np.asarray(coarse_reference, dtype=np.float64)
        tc = np.asarray(coarse_triangles, dtype=np.int64)
        tri = np.asarray(triangle, dtype=np.int64)
        if xf.ndim != 2 or xf.shape[1] != 3 or tri.shape != (len(xf),):
            raise InputError(f"EmbeddedRenderMesh: fine_reference must be (N, 3) and triangle (N,), got "
                             f"{xf.shape} and {tri.shape}")
        if tri.min(initial=0) < 0 or tri.max(initial=0) >= len(tc):
            raise InputError(f"EmbeddedRenderMesh: triangle indices must be in [0, {len(tc)})")
        corners = tc[tri]
        a, b, c = xc[corners[:, 0]], xc[corners[:, 1]], xc[corners[:, 2]]
        n = np.cross(b - a, c - a)
        ln = np.linalg.norm(n, axis=1, keepdims=True)
        if np.any(ln == 0):
            raise InputError("EmbeddedRenderMesh: a coarse triangle is degenerate in the reference pose")
        n /= ln
        d = np.einsum("ij,ij->i", xf - a, n)
        p = xf - d[:, None] * n  # projection on the triangle's plane
        e1, e2, ep = b - a, c - a, p - a
        d11, d12, d22 = (np.einsum("ij,ij->i", u, v) for u, v in ((e1, e1), (e1, e2), (e2, e2)))
        dp1, dp2 = np.einsum("ij,ij->i", ep, e1), np.einsum("ij,ij->i", ep, e2)
        den = d11 * d22 - d12 * d12
        w1 = (d22 * dp1 - d12 * dp2) / den
        w2 = (d11 * dp2 - d12 * dp1) / den
        w = np.stack([1.0 - w1 - w2, w1, w2], axis=1)
        self.device = wp.get_device(device)
        self.triangles = np.asarray(fine_triangles, dtype=np.int64)
        self.coarse_count = len(xc)
        self.vertex_count = len(xf)
        self.host_weights = w
        self.host_offsets = d
        dev = self.device
        self.corners = wp.array(corners.astype(np.int32), dtype=wp.vec3i, device=dev)
        self.weights = wp.array(w.astype(np.float32), dtype=wp.vec3, device=dev)
        self.offsets = wp.array(d.astype(np.float32), dtype=float, device=dev)
        self.points = wp.array(xf.astype(np.float32), dtype=wp.vec3, device=dev)

    @classmethod
    def from_levels(cls, levels, sim_level: int, render_level: int, device="cpu") -> "EmbeddedRenderMesh":
        """Render level ``render_level`` of a :class:`~clothsim.multires.LevelSet` driven by ``sim_level``
        (reference pose: both levels' initial vertices; all garments concatenated)."""
        fine = levels.cloths(render_level)
        coarse = levels.cloths(sim_level)
        xf = np.concatenate([c.vertices for c in fine])
        xc = np.concatenate([c.vertices for c in coarse])
        off_f = np.concatenate([[0], np.cumsum([c.vertex_count for c in fine])])
        off_c = np.concatenate([[0], np.cumsum([c.vertex_count for c in coarse])])
        tf = np.concatenate([c.triangles + off_f[g] for g, c in enumerate(fine)])
        tc = np.concatenate([c.triangles + off_c[g] for g, c in enumerate(coarse)])
        tri = levels.containing_triangles(sim_level, render_level)
        return cls(xf, tf, xc, tc, tri, device=device)

    def update(self, coarse_positions) -> wp.array:
        """Drive the fine vertices from coarse positions (N_c,) wp.array vec3 on this device (zero-copy) or
        (N_c, 3) numpy [m]; returns the owned output array (N_f,) vec3, updated in place."""
        x = coarse_positions
        if not isinstance(x, wp.array):
            x = np.asarray(x, dtype=np.float32)
            if x.shape != (self.coarse_count, 3):
                raise InputError(f"EmbeddedRenderMesh.update: expected ({self.coarse_count}, 3) coarse positions, "
                                 f"got {x.shape}")
            x = wp.array(x, dtype=wp.vec3, device=self.device)
        elif x.shape[0] != self.coarse_count:
            raise InputError(f"EmbeddedRenderMesh.update: expected {self.coarse_count} coarse positions, got {x.shape[0]}")
        wp.launch(embed_positions_kernel, self.vertex_count, inputs=[x, self.corners, self.weights, self.offsets],
                  outputs=[self.points], device=self.device)
        return self.points

    def positions(self) -> np.ndarray:
        """The fine positions (N_f, 3) float32 [m] from the last :meth:`update`, a copy."""
        return self.points.numpy().copy()

    def nbytes(self) -> int:
        return int(sum(a.capacity for a in (self.corners, self.weights, self.offsets, self.points) if a is not None))

    def release(self) -> None:
        self.corners = self.weights = self.offsets = self.points = None

"""Colliders: triangle meshes the cloth cannot pass through (avatars, props).

A :class:`Collider` is host data (numpy). When added to a simulator it gets a
:class:`ColliderBuffers` owner on the device: a ``wp.Mesh`` whose points move every substep
(linearly between the frame's start and end poses) and whose BVH is refit, never rebuilt.
Spheres and boxes are meshed too, so every collider takes the same path as a skinned body.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from .cloth import _as_float_array, _as_index_array
from .topology import unique_edges

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster


@wp.kernel
def _velocity_kernel(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), inv_dt: float, v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = (b[i] - a[i]) * inv_dt


class Collider:
    """A closed, outward-wound triangle mesh: vertices (N, 3) [m], triangles (M, 3)."""

    def __init__(self, vertices, triangles, name="collider"):
        self.name = name
        self.vertices = _as_float_array(vertices, "collider vertices", (None, 3), where=name)
        self.triangles = _as_index_array(triangles, "collider triangles", (None, 3), len(self.vertices), where=name)

    @classmethod
    def sphere(cls, center=(0.0, 0.0, 0.0), radius=0.2, subdivisions=3) -> "Collider":
        """An icosphere (``subdivisions`` 3 → 1280 triangles), vertices on the sphere of ``radius`` [m]."""
        import trimesh

        m = trimesh.creation.icosphere(subdivisions=subdivisions, radius=float(radius))
        return cls(np.asarray(m.vertices) + np.asarray(center, dtype=np.float64), m.faces, name="sphere")

    @classmethod
    def box(cls, center=(0.0, 0.0, 0.0), half_extents=(0.1, 0.1, 0.1)) -> "Collider":
        """An axis-aligned box, 12 triangles."""
        import trimesh

        m = trimesh.creation.box(extents=2.0 * np.asarray(half_extents, dtype=np.float64))
        return cls(np.asarray(m.vertices) + np.asarray(center, dtype=np.float64), m.faces, name="box")

    @classmethod
    def mesh(cls, vertices, triangles, name="mesh") -> "Collider":
        return cls(vertices, triangles, name=name)


class ColliderBuffers:
    """Device buffers of one collider; owned by the simulator's solver, freed by :meth:`release`."""

    def __init__(self, collider: Collider, device):
        d = wp.get_device(device)
        pts = collider.vertices.astype(np.float32)
        self.name = collider.name
        self.vertex_count = len(pts)
        self.start = wp.array(pts, dtype=wp.vec3, device=d)  # pose at the frame's start
        self.end = wp.array(pts, dtype=wp.vec3, device=d)  # pose at the frame's end
        self.points = wp.array(pts, dtype=wp.vec3, device=d)  # pose at the current substep
        self.velocities = wp.zeros(len(pts), dtype=wp.vec3, device=d)
        self.indices = wp.array(collider.triangles.astype(np.int32).ravel(), dtype=wp.int32, device=d)
        self.mesh = wp.Mesh(points=self.points, indices=self.indices, velocities=self.velocities)
        # closed (every edge shared by exactly two triangles): a ray-parity inside test is meaningful
        _, tri_edge = unique_edges(collider.triangles)
        self.closed = bool(tri_edge.size and np.all(np.bincount(tri_edge.ravel()) == 2))
        # host copy of the pose at the frame's start, and whether the next frame moves the collider: a
        # still collider's substep poses, BVH refits and contact-feature gathers are skipped
        self._host_start = pts.copy()
        self._host_end = pts
        self.moving = False

    def set_target(self, vertices: np.ndarray, frame_dt: float) -> None:
        """The pose at the end of the next frame (vertices (N, 3) [m]); velocities follow from it. After
        that frame the collider stays there, at rest, until the next call."""
        v = np.ascontiguousarray(vertices, dtype=np.float32)
        self.end.assign(v)
        self._host_end = v.copy()
        self.moving = not np.array_equal(v, self._host_start)
        if self.moving:
            wp.launch(_velocity_kernel, dim=self.vertex_count, inputs=[self.start, self.end, 1.0 / frame_dt],
                      outputs=[self.velocities], device=self.end.device)
        else:
            self.velocities.zero_()

    def end_frame(self) -> None:
        if self.moving:
            wp.copy(self.start, self.end)
            self._host_start = self._host_end
            self.velocities.zero_()
            self.moving = False

    def sync_host(self) -> None:
        """After the device pose was written directly (a checkpoint load): refresh the host copy and flag."""
        self._host_start = self.start.numpy().copy()
        self._host_end = self.end.numpy().copy()
        self.moving = not np.array_equal(self._host_start, self._host_end)

    def arrays(self) -> list:
        return [self.start, self.end, self.points, self.velocities, self.indices]

    def nbytes(self) -> int:
        return sum(a.capacity for a in self.arrays())

    def release(self) -> None:
        self.mesh = None
        self.start = self.end = self.points = self.velocities = self.indices = None

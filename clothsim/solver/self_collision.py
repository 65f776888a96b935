"""SelfCollision: the solver's owner of self-contact buffers (detector lists, vertex→edge adjacency,
frame backup for redoing a frame after a contact-list overflow).

Contacts are vertex–triangle and edge–edge pairs closer than ``thickness + contact_margin`` at the start
of each substep (clothsim.collision.SelfContactDetector); the VBD vertex solve adds their penalty and
friction blocks and then limits each vertex's move to ``BOUND_FRACTION`` of its distance to the nearest
non-adjacent primitive (He Chen et al. 2024's conservative bound), so no pair can cross within a substep.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..collision import SelfContactDetector
from ..topology import csr

BOUND_FRACTION = 0.4


class SelfCollision:
    def __init__(self, model, settings):
        d = model.device
        n = model.particle_count
        edges = model.host_edges.astype(np.int32)
        self.edges = wp.array(edges, dtype=wp.vec2i, device=d)
        off, v_edge = csr(edges.ravel(), np.arange(edges.size), n)
        self.v_edge_offsets = wp.array(off.astype(np.int32), dtype=wp.int32, device=d)
        self.v_edge = wp.array(v_edge.astype(np.int32), dtype=wp.int32, device=d)
        self.detector = SelfContactDetector(
            n, model.host_triangles, edges, vertex_capacity=16, edge_capacity=16, device=d,
            positions=model.host_rest_positions.astype(np.float32),
        )
        self.query_radius = 0.0  # [m] set by SolverVBD.materials_changed()
        # frame backup (positions, velocities, last velocities) to redo a frame after an overflow
        self.backup = [wp.zeros(n, dtype=wp.vec3, device=d) for _ in range(3)]

    def detect(self, x_prev):
        self.detector.detect(x_prev, self.query_radius)

    def kernel_args(self):
        det = self.detector
        return [1, det.vt_capacity, det.tv_capacity, det.ee_capacity, det.vt_count, det.vt_tri, det.tv_count,
                det.tv_vertex, det.ee_count, det.ee_edge, self.edges, self.v_edge_offsets, self.v_edge,
                det.min_dist, BOUND_FRACTION]

    def save(self, state):
        for dst, src in zip(self.backup, (state.x, state.v, state.v_last)):
            wp.copy(dst, src)

    def restore(self, state):
        for src, dst in zip(self.backup, (state.x, state.v, state.v_last)):
            wp.copy(dst, src)

    def nbytes(self) -> int:
        own = [self.edges, self.v_edge_offsets, self.v_edge, *self.backup]
        return sum(a.capacity for a in own) + self.detector.memory_bytes()

    def release(self):
        self.detector.release()
        self.edges = self.v_edge_offsets = self.v_edge = None
        self.backup = []


def disabled_kernel_args(device):
    """Placeholder arguments for the VBD kernel when self-collision is off (never read)."""
    i1 = wp.zeros(1, dtype=wp.int32, device=device)
    return [0, 1, 1, 1, i1, i1, i1, i1, i1, i1, wp.zeros(1, dtype=wp.vec2i, device=device), i1, i1,
            wp.zeros(1, dtype=float, device=device), 1.0]

"""SelfCollision: the solver's owner of self-contact buffers (the detector's lists and distances).

Contacts are vertex–triangle and edge–edge pairs closer than ``thickness + contact_margin`` at the start
of each substep (clothsim.collision.SelfContactDetector), leaving out rest neighbours: pairs whose primitives lie
closer than that same radius in the rest shape of one panel (a flat cloth's own
neighbours on a mesh finer than the radius, which only a fold tighter than the radius could bring together;
a panel's rest shape is its 2D pattern, ``rest_uv``, or the 3D rest shape without one); the VBD vertex solve adds their penalty and
friction blocks and then limits each vertex's move to ``BOUND_FRACTION`` of its distance to the nearest
non-adjacent primitive (He Chen et al. 2024's conservative bound; ``Simulator(self_contact_bound=)``, default
``BOUND_FRACTION``), so no pair can cross within a substep.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..collision import SelfContactDetector
from ..topology import panels, weld_representatives

BOUND_FRACTION = 0.4


def detect_workers(device, cpu_threads) -> int:
    """Worker threads the CPU self-contact search uses beside the calling one (0: it runs in one thread)."""
    if not wp.get_device(device).is_cpu:
        return 0
    return max(0, int(cpu_threads or 1) - 1)


class SelfCollision:
    def __init__(self, model, settings):
        d = model.device
        n = model.particle_count
        edges = model.host_edges.astype(np.int32)
        # vertices sewn together (seams) count as one vertex: the primitives around a seam are
        # neighbours, not contacts, so a closing seam is neither pushed apart nor frozen by the bound
        self.detector = SelfContactDetector(
            n, model.host_triangles, edges, vertex_capacity=16, edge_capacity=16, device=d,
            positions=model.host_rest_positions.astype(np.float32),
            weld=weld_representatives(n, model.host_springs),
            rest=rest_space(model), panel=panels(n, model.host_triangles),
            ordered=bool(getattr(settings, "deterministic", True)),
        )
        # CPU with worker threads: the threaded search's own buffers now, not in the first step
        self.workers = detect_workers(d, getattr(settings, "cpu_threads", 1))
        if self.workers:
            self.detector.prepare_threads(self.workers)
        self.query_radius = 0.0  # [m] set by SolverVBD.materials_changed()
        # Simulator(self_contact_over_face=): keep a rest-neighbour vertex-triangle pair whose vertex has come
        # over the face (SelfContactDetector.detect(over_face_cos=)); 0 = every rest neighbour left out
        self.over_face_cos = float(getattr(settings, "self_contact_over_face", 0.0))
        # Simulator(self_contact_bound=): the fraction of its distance to the nearest primitive a vertex may move
        self.bound_fraction = float(getattr(settings, "self_contact_bound", BOUND_FRACTION))
        # Pairs between vertices of one colour: the solve updates a colour's vertices together (on CUDA in
        # parallel, a read of a partner being written was a race: run-to-run differences), so a partner of
        # the solved vertex's own colour is read at the iteration's start (x_iter, copied before each
        # iteration) on every device, and the pair's Hessian is doubled (both ends move at once; each takes
        # half the step, as a Jacobi pair must not to overshoot; the force, and so the fixed point, is
        # unchanged). Partners of other colours are read as they are now (Gauss–Seidel).
        color = np.full(n, -1, np.int32)
        order = model.color_vertices.numpy()
        for c, (start, count) in enumerate(model.color_ranges):
            color[order[start:start + count]] = c
        self.vertex_color = wp.array(color, dtype=wp.int32, device=d)
        self.x_iter = wp.zeros(n, dtype=wp.vec3, device=d)

    def detect(self, x_prev, rebuild: bool = False, executor=None):
        self.detector.detect(x_prev, self.query_radius, rebuild=rebuild, rest_radius=self.query_radius,
                             over_face_cos=self.over_face_cos, executor=executor, workers=max(1, self.workers))

    def bound_args(self):
        """(self_enabled, min_dist, bound_fraction): the conservative bound every position of a substep is held
        to (position_limits.bounded: the vertex solve's and the Chebyshev step's)."""
        return [1, self.detector.min_dist, self.bound_fraction]

    def kernel_args(self):
        det = self.detector
        on, min_dist, fraction = self.bound_args()
        return [on, det.vt_capacity, det.tv_capacity, det.ee_capacity, det.vt_count, det.vt_tri, det.tv_count,
                det.tv_vertex, det.ee_count, det.ee_edge, min_dist, fraction, self.vertex_color, self.x_iter]

    def nbytes(self) -> int:
        return self.detector.memory_bytes() + self.vertex_color.capacity + self.x_iter.capacity

    def release(self):
        self.detector.release()
        self.vertex_color = self.x_iter = None


def rest_space(model) -> np.ndarray:
    """(N, 3) [m] each vertex in its cloth's rest space: (u, v, 0) from ``rest_uv``, else the 3D rest shape."""
    parts = []
    for i, c in enumerate(model.cloths):
        lo, hi = int(model.cloth_offsets[i]), int(model.cloth_offsets[i + 1])
        if c.rest_uv is not None:
            uv = np.asarray(c.rest_uv, dtype=np.float64)
            parts.append(np.column_stack([uv, np.zeros(len(uv))]))
        else:
            parts.append(np.asarray(model.host_rest_positions[lo:hi], dtype=np.float64))
    return np.concatenate(parts).astype(np.float32)


def disabled_bound_args(device):
    """:meth:`SelfCollision.bound_args` when self-collision is off (never read)."""
    return [0, wp.zeros(1, dtype=float, device=device), 1.0]


def disabled_kernel_args(device, bound=None):
    """Placeholder arguments for the VBD kernel when self-collision is off (never read); ``bound``: those of
    :func:`disabled_bound_args` to share."""
    on, min_dist, fraction = bound or disabled_bound_args(device)
    i1 = wp.zeros(1, dtype=wp.int32, device=device)
    return [on, 1, 1, 1, i1, i1, i1, i1, i1, i1, min_dist, fraction, i1, wp.zeros(1, dtype=wp.vec3, device=device)]

"""ColliderContacts: the solver's owner of cloth-vs-collider feature contacts.

Vertex contacts (a cloth vertex against the closest collider surface point, kept as a contact plane) stop
cloth vertices from entering a collider, but a collider's sharp features can still cross the cloth
between its vertices: a box edge through the middle of a cloth edge, a fingertip or shoulder vertex
through a cloth triangle. This owner adds the two missing pair kinds, found at the start of every
substep within the contact search radius (thickness + contact_margin):

* cloth edge – collider edge pairs, per cloth edge, up to ``edge_capacity`` each;
* cloth triangle – collider vertex pairs, per cloth triangle, up to ``triangle_capacity`` each.

Each pair is a one-sided contact plane through the collider feature with the feature's outward normal n
(vertex: area-weighted face normals; edge: mean of its two faces' normals): with c the closest point on
the cloth feature (barycentric weights w_j of its vertices) and d = n·(c − p), the penalty
½·k_c·(r − d)² for d < r and Coulomb friction enter the VBD solve of each cloth vertex j with weight w_j
(force w_j·f, Hessian w_j²·H; the collider side is kinematic). One-sided, so a cloth feature that has
been pushed across is pushed back out, never held on the wrong side. All colliders are gathered into one point set (per-collider offsets)
with one vertex BVH and one edge BVH, refit (never rebuilt) every substep as the colliders move.
A list overflow is counted on the device, read once per frame; the solver then grows the lists and
redoes the frame, so no contact is dropped.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..collision.mesh_collider import (
    collider_vertex_kernel,
    edge_collider_kernel,
    reset_bounds_kernel,
    triangle_collider_vertex_kernel,
)
from ..collision._arrays import query_block_dim
from ..collision.self_contact import edge_bounds_kernel
from ..topology import csr, unique_edges
from .kernels import vertex_normals_kernel

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster

# Keep only the pairs whose closest points are inside both features (an edge crossing another edge, a
# collider vertex over a triangle's interior); see ColliderContacts.detect.
INTERIOR_ONLY = 1

# Edge-edge pairs only for the collider edges that can cross a cloth edge with no collider vertex under a
# cloth triangle: sharp edges (their two faces meet at more than SHARP_EDGE_DEGREES: a box's 90 deg edges),
# open-boundary edges, and edges longer than LONG_EDGE_FRACTION of the cloth's median edge (a ridge of a
# coarse collider, e.g. an icosphere's 47 mm edges under a 31 mm cloth, pokes between cloth vertices) if they
# are flat (under FLAT_EDGE_DEGREES: a box face's diagonal, whose plane is the face's) or their ridge rises more
# than the cloth's thickness over a cloth triangle; a slightly turning long edge that cannot pierce the cloth
# only adds a plane tilted against the vertex contacts (under a 10 mm T-shirt every body edge qualified by length
# and single vertices on the arms and shoulders popped: residual held at 0.06-0.09 instead of settling).
# A short edge between nearly coplanar faces under a coarser cloth has its end vertices held below the cloth
# triangles by the triangle-vertex pairs. Chosen when the contacts are built, from the colliders' pose then.
# Measured on the mannequin: at 30 deg the 40 mm trousers ended with 15 cloth-body intersections (crotch and
# leg creases turn by 10-20 deg per edge), at 10 deg none; the 40 mm T-shirt keeps 665 of 8292 edge pairs
# (all collider pairs: 12.4k -> 4.8k) and its CPU frame went from ~490 to ~325 ms.
SHARP_EDGE_DEGREES = 10.0
LONG_EDGE_FRACTION = 0.5
FLAT_EDGE_DEGREES = 0.5


@wp.func
def _face_normal(pts: wp.array(dtype=wp.vec3), tris: wp.array(dtype=wp.vec3i), f: int):
    t = tris[f]
    return wp.cross(pts[t[1]] - pts[t[0]], pts[t[2]] - pts[t[0]])


@wp.kernel
def collider_edge_normals_kernel(
    pts: wp.array(dtype=wp.vec3),
    tris: wp.array(dtype=wp.vec3i),
    edge_faces: wp.array(dtype=wp.vec2i),
    normals: wp.array(dtype=wp.vec4),
):
    """Per collider edge: (outward normal n, t). n is the mean of the unit normals of the edge's (one or two)
    faces; t = tan(θ/2) where the edge is convex (a ridge: the other face bends away below the first face's
    plane), θ the angle between the two face normals, and 0 where it is concave (a crease) or a boundary edge.
    Seen along a ridge, a point at w from it (w·n = a, |w − a·n| = b) is below both face planes, inside the
    collider's wedge, exactly when a < −b·t; for a crease, t = 0 keeps the inside test to the plane through the
    edge (a crease cannot pierce the cloth; its faces' vertex contacts hold the cloth off them, and where the
    two-face picture is taken beyond the faces, on the mannequin's arm, the crease's full wedge flagged a cloth
    edge 2.5 mm clear of the body as inside). :func:`clothsim.solver.contact_blocks.edge_pair_plane` uses it."""
    e = wp.tid()
    ef = edge_faces[e]
    nb = wp.normalize(_face_normal(pts, tris, ef[0]))
    n = nb
    t = float(0.0)
    if ef[1] >= 0:
        nc = wp.normalize(_face_normal(pts, tris, ef[1]))
        n = wp.normalize(nb + nc)
        c = wp.clamp(wp.dot(nb, nc), -0.999999, 1.0)
        t = wp.sqrt((1.0 - c) / (1.0 + c))
        # the second face's corners against the first face's plane (its two edge corners are on it)
        tc = tris[ef[1]]
        p0 = pts[tris[ef[0]][0]]
        side = wp.dot(pts[tc[0]] - p0, nb) + wp.dot(pts[tc[1]] - p0, nb) + wp.dot(pts[tc[2]] - p0, nb)
        if side > 0.0:
            t = 0.0
    normals[e] = wp.vec4(n[0], n[1], n[2], t)


def feature_edges(points, triangles, cloth_points, cloth_edges, thickness: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The collider edges that get edge-edge pairs (see SHARP_EDGE_DEGREES) and their faces.

    points (Nc, 3), triangles (Mc, 3): all colliders as one mesh; cloth_points (N, 3), cloth_edges (E, 2):
    the cloth; thickness [m]: the cloth's contact thickness (the thinnest fabric's). Returns edges (Ec, 2)
    int64 and edge_faces (Ec, 2) int64 (the edge's faces, -1 for none).
    """
    pts = np.asarray(points, dtype=np.float64)
    tris = np.asarray(triangles, dtype=np.int64)
    cedges, tri_edge = unique_edges(tris)
    edge_faces = np.full((len(cedges), 2), -1, dtype=np.int64)
    e_flat, f_flat = tri_edge.ravel(), np.repeat(np.arange(len(tris)), 3)
    order = np.argsort(e_flat, kind="stable")
    e_sorted, f_sorted = e_flat[order], f_flat[order]
    first = np.r_[True, e_sorted[1:] != e_sorted[:-1]]
    edge_faces[e_sorted[first], 0] = f_sorted[first]
    edge_faces[e_sorted[~first], 1] = f_sorted[~first]
    fn = np.cross(pts[tris[:, 1]] - pts[tris[:, 0]], pts[tris[:, 2]] - pts[tris[:, 0]])
    fn /= np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-30)
    two = edge_faces[:, 1] >= 0
    cosang = np.ones(len(cedges))
    cosang[two] = np.einsum("ij,ij->i", fn[edge_faces[two, 0]], fn[edge_faces[two, 1]])
    x0 = np.asarray(cloth_points, dtype=np.float64)
    ce = np.asarray(cloth_edges, dtype=np.int64).reshape(-1, 2)
    cloth_edge = float(np.median(np.linalg.norm(x0[ce[:, 0]] - x0[ce[:, 1]], axis=1))) if len(ce) else 0.0
    clen = np.linalg.norm(pts[cedges[:, 0]] - pts[cedges[:, 1]], axis=1)
    # a long edge between faces that turn a little rises about half a spanned cloth edge times sin(turn/2)
    # above a cloth triangle resting on those faces; the cloth's vertices sit a thickness above the surface,
    # so a ridge rising less stays under the triangle, and its plane (tilted by turn/2 from the faces the
    # cloth vertices rest on) only fights their contacts. A flat edge's plane is its faces' plane: kept.
    turn = np.degrees(np.arccos(np.clip(cosang, -1.0, 1.0)))
    rise = 0.5 * np.minimum(clen, cloth_edge) * np.sin(np.radians(0.5 * turn))
    long_edge = (clen > LONG_EDGE_FRACTION * cloth_edge) & ((turn < FLAT_EDGE_DEGREES) | (rise > float(thickness)))
    keep = ~two | (turn > SHARP_EDGE_DEGREES) | long_edge
    return cedges[keep], edge_faces[keep]


class ColliderContacts:
    """Device buffers: ``points``/``velocities`` (Nc,) vec3 [m], [m/s] of all colliders at the current
    substep; ``edges`` (Ec, 2) int32 collider edges (global point indices); per cloth edge ``ce_count``
    (E,) and ``ce_edge`` (E·Ke,); per cloth triangle ``ct_count`` (T,) and ``ct_vertex`` (T·Kt,);
    ``overflow`` (1,) and ``required`` (2,) int32."""

    def __init__(self, model, colliders, *, edge_capacity: int = 8, triangle_capacity: int = 4):
        d = model.device
        self.device = d
        self.colliders = list(colliders)
        counts = [c.vertex_count for c in self.colliders]
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        nc = int(self.offsets[-1])
        tris = np.concatenate([c.indices.numpy().reshape(-1, 3) + o for c, o in zip(self.colliders, self.offsets)])
        # vertex -> faces (CSR), for outward vertex normals (vertex -> corner codes 3·t + k, the layout of the
        # cloth's v_tri, so the cloth's vertex-normal kernel serves the colliders too)
        v_off, v_face = csr(tris.ravel(), np.arange(tris.size), nc)
        pts0 = np.concatenate([c.points.numpy() for c in self.colliders])
        cedges, edge_faces = feature_edges(pts0, tris, model.host_rest_positions, model.host_edges,
                                           thickness=min(float(f.thickness) for f in model.fabrics))
        self.triangles = wp.array(tris.astype(np.int32), dtype=wp.vec3i, device=d)
        self.v_face_offsets = wp.array(v_off.astype(np.int32), dtype=wp.int32, device=d)
        self.v_face = wp.array(v_face.astype(np.int32), dtype=wp.int32, device=d)
        self.edge_faces = wp.array(edge_faces.astype(np.int32), dtype=wp.vec2i, device=d)
        self.vertex_normals = wp.zeros(nc, dtype=wp.vec3, device=d)
        self.edge_normals = wp.zeros(len(cedges), dtype=wp.vec4, device=d)
        self.points = wp.zeros(nc, dtype=wp.vec3, device=d)
        self.velocities = wp.zeros(nc, dtype=wp.vec3, device=d)
        self.edges = wp.array(cedges.astype(np.int32), dtype=wp.int32, device=d)
        self.bounds = wp.zeros(2, dtype=wp.vec3, device=d)
        self.vertex_lowers = wp.zeros(nc, dtype=wp.vec3, device=d)
        self.vertex_uppers = wp.zeros(nc, dtype=wp.vec3, device=d)
        self.edge_lowers = wp.zeros(len(cedges), dtype=wp.vec3, device=d)
        self.edge_uppers = wp.zeros(len(cedges), dtype=wp.vec3, device=d)
        self.cloth_edges = wp.array(model.host_edges.astype(np.int32), dtype=wp.int32, device=d)
        self.cloth_triangles = wp.array(model.host_triangles.astype(np.int32), dtype=wp.int32, device=d)
        self.edge_capacity = int(edge_capacity)
        self.triangle_capacity = int(triangle_capacity)
        self.ce_count = wp.zeros(len(model.host_edges), dtype=wp.int32, device=d)
        self.ct_count = wp.zeros(len(model.host_triangles), dtype=wp.int32, device=d)
        self.overflow = wp.zeros(1, dtype=wp.int32, device=d)
        self.required = wp.zeros(2, dtype=wp.int32, device=d)
        self._allocate_lists()
        self._gather()
        self.vertex_bvh = wp.Bvh(self.vertex_lowers, self.vertex_uppers)
        # (no sharp edge: no edge BVH, and the cloth edges' pair counts stay zero)
        self.edge_bvh = wp.Bvh(self.edge_lowers, self.edge_uppers) if len(cedges) else None

    def _allocate_lists(self):
        d = self.device
        self.ce_edge = wp.zeros(self.ce_count.shape[0] * self.edge_capacity, dtype=wp.int32, device=d)
        self.ct_vertex = wp.zeros(self.ct_count.shape[0] * self.triangle_capacity, dtype=wp.int32, device=d)

    def _gather(self):
        """Copy every collider's current points and velocities in; recompute the BVH boxes."""
        d = self.device
        for c, o in zip(self.colliders, self.offsets):
            wp.copy(self.points, c.points, dest_offset=int(o), count=c.vertex_count)
            wp.copy(self.velocities, c.velocities, dest_offset=int(o), count=c.vertex_count)
        wp.launch(reset_bounds_kernel, 1, inputs=[], outputs=[self.bounds], device=d)
        wp.launch(collider_vertex_kernel, self.points.shape[0], inputs=[self.points],
                  outputs=[self.vertex_lowers, self.vertex_uppers, self.bounds], device=d)
        wp.launch(edge_bounds_kernel, self.edges.shape[0], inputs=[self.points, self.edges],
                  outputs=[self.edge_lowers, self.edge_uppers], device=d)
        wp.launch(vertex_normals_kernel, self.points.shape[0],
                  inputs=[self.points, self.triangles, self.v_face_offsets, self.v_face],
                  outputs=[self.vertex_normals], device=d)
        wp.launch(collider_edge_normals_kernel, self.edges.shape[0],
                  inputs=[self.points, self.triangles, self.edge_faces], outputs=[self.edge_normals], device=d)

    def detect(self, x_prev, query_radius: float, moved: bool = True) -> None:
        """Refit to the colliders' current substep pose (skipped when no collider ``moved`` since the last
        gather: the points, normals and BVHs still hold) and list the pairs near the cloth at ``x_prev``."""
        d = self.device
        if moved:
            self._gather()
            self.vertex_bvh.refit()
            if self.edge_bvh is not None:
                self.edge_bvh.refit()
        r = float(query_radius)
        if self.edge_bvh is not None:
            wp.launch(edge_collider_kernel, self.ce_count.shape[0],
                      inputs=[self.edge_bvh.id, self.points, self.edges, x_prev, self.cloth_edges, r,
                              self.edge_capacity, INTERIOR_ONLY],
                      outputs=[self.ce_count, self.ce_edge, self.overflow, self.required], device=d,
                      block_dim=query_block_dim(d, self.ce_count.shape[0]))
        wp.launch(triangle_collider_vertex_kernel, self.ct_count.shape[0],
                  inputs=[self.vertex_bvh.id, self.points, x_prev, self.cloth_triangles, r, self.triangle_capacity,
                          INTERIOR_ONLY],
                  outputs=[self.ct_count, self.ct_vertex, self.overflow, self.required], device=d,
                  block_dim=query_block_dim(d, self.ct_count.shape[0]))

    def kernel_args(self) -> list:
        return [1, self.points, self.velocities, self.vertex_normals, self.edges, self.edge_normals, self.edge_capacity, self.ce_count, self.ce_edge,
                self.triangle_capacity, self.ct_count, self.ct_vertex]

    # overflow protocol shared with the self-contact detector
    def reset_overflow(self) -> None:
        self.overflow.zero_()
        self.required.zero_()

    def overflowed(self) -> bool:
        return int(self.overflow.numpy()[0]) > 0

    def grow(self) -> None:
        """Grow each list kind to the longest list seen (doubling); reallocate; reset the counters."""
        req = self.required.numpy()
        caps = [self.edge_capacity, self.triangle_capacity]
        for k in range(2):
            while caps[k] < req[k]:
                caps[k] *= 2
        if caps == [self.edge_capacity, self.triangle_capacity]:
            caps = [2 * c for c in caps]
        self.edge_capacity, self.triangle_capacity = caps
        self._allocate_lists()
        self.reset_overflow()

    def arrays(self) -> list:
        names = ("points", "velocities", "edges", "triangles", "v_face_offsets", "v_face", "edge_faces",
                 "vertex_normals", "edge_normals", "bounds", "vertex_lowers", "vertex_uppers", "edge_lowers",
                 "edge_uppers", "cloth_edges", "cloth_triangles", "ce_count", "ce_edge", "ct_count", "ct_vertex",
                 "overflow", "required")
        return [getattr(self, n) for n in names if getattr(self, n, None) is not None]

    def nbytes(self) -> int:
        return sum(a.capacity for a in self.arrays())

    def release(self) -> None:
        self.vertex_bvh = self.edge_bvh = None
        for n in ("points", "velocities", "edges", "triangles", "v_face_offsets", "v_face", "edge_faces",
                 "vertex_normals", "edge_normals", "bounds", "vertex_lowers", "vertex_uppers", "edge_lowers",
                  "edge_uppers", "cloth_edges", "cloth_triangles", "ce_count", "ce_edge", "ct_count", "ct_vertex",
                  "overflow", "required"):
            setattr(self, n, None)
        self.colliders = []


def disabled_kernel_args(device) -> list:
    """Placeholder arguments for the VBD kernel when there is no collider (never read)."""
    i1 = wp.zeros(1, dtype=wp.int32, device=device)
    v1 = wp.zeros(1, dtype=wp.vec3, device=device)
    v4 = wp.zeros(1, dtype=wp.vec4, device=device)
    return [0, v1, v1, v1, wp.zeros((1, 2), dtype=wp.int32, device=device), v4, 1, i1, i1, 1, i1, i1]

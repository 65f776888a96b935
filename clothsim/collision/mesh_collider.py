"""Triangle-mesh collider (avatar, box, sphere, ...) and the cloth-vs-collider contact detector.

:class:`MeshCollider` owns the collider's vertex buffers and acceleration structures. Its
vertices may move every frame (rigidly or deforming, e.g. a skinned body):
:meth:`MeshCollider.update_vertices` copies the new vertices in, keeps the previous ones, and
refits the BVHs (never rebuilds them).

:class:`ClothColliderContacts` finds, for a query radius R [m]:

* per cloth vertex: the closest collider surface point within R (or the vertex is inside the
  collider, at any depth), with signed distance, outward normal, closest point, barycentric
  weights and the collider point's displacement over the last frame;
* per cloth edge: the collider edges within R (fixed capacity), so that sharp collider edges
  (a box) cannot slip through cloth triangles between cloth vertices;
* per cloth triangle (if triangles are given): the collider vertices within R (fixed
  capacity), so that collider corners cannot poke through the inside of a cloth triangle.

Collider meshes must be closed and wound outward (counter-clockwise seen from outside) for the
inside/outside sign to be meaningful.
"""

from __future__ import annotations

import warp as wp

from ._arrays import MAX_LIST_ENTRIES, as_index_array, as_vec3_array, grown_capacities, query_block_dim, unique_edges
from .contact_funcs import closest_point_triangle, closest_points_edge_edge
from .self_contact_kernels import edge_bounds_kernel

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster

# --------------------------------------------------------------------------------------
# kernels: collider upkeep


@wp.kernel
def reset_bounds_kernel(bounds: wp.array(dtype=wp.vec3)):
    bounds[0] = wp.vec3(1.0e30)
    bounds[1] = wp.vec3(-1.0e30)


@wp.kernel
def collider_vertex_kernel(
    points: wp.array(dtype=wp.vec3),
    lowers: wp.array(dtype=wp.vec3),
    uppers: wp.array(dtype=wp.vec3),
    bounds: wp.array(dtype=wp.vec3),
):
    """Vertex boxes (degenerate) and the collider's AABB (atomic min/max: order-free)."""
    i = wp.tid()
    p = points[i]
    lowers[i] = p
    uppers[i] = p
    wp.atomic_min(bounds, 0, p)
    wp.atomic_max(bounds, 1, p)


# --------------------------------------------------------------------------------------
# kernels: cloth vs collider


@wp.func
def _inside_box(p: wp.vec3, lo: wp.vec3, hi: wp.vec3) -> bool:
    return p[0] >= lo[0] and p[1] >= lo[1] and p[2] >= lo[2] and p[0] <= hi[0] and p[1] <= hi[1] and p[2] <= hi[2]


@wp.kernel(module="unique", enable_backward=False)  # launched with query_block_dim: see its docstring
def vertex_collider_kernel(
    mesh: wp.uint64,
    collider_points: wp.array(dtype=wp.vec3),
    collider_prev: wp.array(dtype=wp.vec3),
    collider_tris: wp.array2d(dtype=wp.int32),
    bounds: wp.array(dtype=wp.vec3),
    positions: wp.array(dtype=wp.vec3),
    radius: float,
    offset: float,
    deep_check: int,
    face_out: wp.array(dtype=wp.int32),
    dist_out: wp.array(dtype=float),
    normal_out: wp.array(dtype=wp.vec3),
    point_out: wp.array(dtype=wp.vec3),
    bary_out: wp.array(dtype=wp.vec3),
    disp_out: wp.array(dtype=wp.vec3),
):
    """Per cloth vertex: closest collider point within radius of the offset surface, or inside at any depth."""
    v = wp.tid()
    p = positions[v]
    face = int(-1)
    sdist = float(radius)
    normal = wp.vec3(0.0)
    cpt = p
    bary = wp.vec3(0.0)
    disp = wp.vec3(0.0)
    q = wp.mesh_query_point(mesh, p, radius + offset)
    found = q.result
    if not found and deep_check != 0:
        # a vertex deeper inside than the query radius: only possible within the collider's box
        if _inside_box(p, bounds[0], bounds[1]):
            q = wp.mesh_query_point(mesh, p, 1.0e10)
            found = q.result and q.sign < 0.0
    if found:
        i0 = collider_tris[q.face, 0]
        i1 = collider_tris[q.face, 1]
        i2 = collider_tris[q.face, 2]
        a = collider_points[i0]
        b = collider_points[i1]
        c = collider_points[i2]
        # exact closest point on the face Warp found, in the same arithmetic as the solver's contact funcs
        cpt, bary = closest_point_triangle(p, a, b, c)
        diff = p - cpt
        d = wp.length(diff)
        fn = wp.normalize(wp.cross(b - a, c - a))
        if q.sign < 0.0:
            sdist = -d - offset
            normal = fn
        else:
            sdist = d - offset
            normal = fn
            if d > 1.0e-6 * (wp.length(b - a) + wp.length(c - a)):
                normal = diff / d
        if sdist < radius:
            face = q.face
            disp = cpt - (bary[0] * collider_prev[i0] + bary[1] * collider_prev[i1] + bary[2] * collider_prev[i2])
        else:
            sdist = radius
    face_out[v] = face
    dist_out[v] = sdist
    normal_out[v] = normal
    point_out[v] = cpt
    bary_out[v] = bary
    disp_out[v] = disp


@wp.kernel(module="unique", enable_backward=False)  # launched with query_block_dim: see its docstring
def edge_collider_kernel(
    edge_bvh: wp.uint64,
    collider_points: wp.array(dtype=wp.vec3),
    collider_edges: wp.array2d(dtype=wp.int32),
    positions: wp.array(dtype=wp.vec3),
    edges: wp.array2d(dtype=wp.int32),
    radius: float,
    capacity: int,
    interior_only: int,
    ee_count: wp.array(dtype=wp.int32),
    ee_edge: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """Per cloth edge e: collider edges within radius, in BVH traversal order. interior_only != 0 keeps only
    pairs whose closest points are inside both edges (an edge crossing, which no vertex contact sees);
    a closest point at an end is a vertex–edge or vertex–vertex proximity, which the vertex contacts
    (cloth vertex against the collider surface) and the triangle–vertex pairs already hold."""
    e = wp.tid()
    p0 = positions[edges[e, 0]]
    p1 = positions[edges[e, 1]]
    query = wp.bvh_query_aabb(edge_bvh, wp.min(p0, p1) - wp.vec3(radius), wp.max(p0, p1) + wp.vec3(radius))
    f = int(0)
    count = int(0)
    while wp.bvh_query_next(query, f):
        s, t, d = closest_points_edge_edge(p0, p1, collider_points[collider_edges[f, 0]], collider_points[collider_edges[f, 1]])
        keep = d < radius
        if interior_only != 0 and (s <= 0.0 or s >= 1.0 or t <= 0.0 or t >= 1.0):
            keep = False
        if keep:
            if count < capacity:
                ee_edge[e * capacity + count] = f
            count += 1
    if count > capacity:
        wp.atomic_add(overflow, 0, 1)
        wp.atomic_max(required, 0, count)
    ee_count[e] = wp.min(count, capacity)


@wp.kernel(module="unique", enable_backward=False)  # launched with query_block_dim: see its docstring
def triangle_collider_vertex_kernel(
    vertex_bvh: wp.uint64,
    collider_points: wp.array(dtype=wp.vec3),
    positions: wp.array(dtype=wp.vec3),
    triangles: wp.array2d(dtype=wp.int32),
    radius: float,
    capacity: int,
    interior_only: int,
    tv_count: wp.array(dtype=wp.int32),
    tv_vertex: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """Per cloth triangle t: collider vertices within radius, in BVH traversal order. interior_only != 0
    keeps only vertices whose closest point is inside the triangle (all three weights > 0): a collider
    vertex nearest an edge or a corner of the triangle is held by the edge–edge pairs or by the cloth
    vertex's own contact."""
    t = wp.tid()
    a = positions[triangles[t, 0]]
    b = positions[triangles[t, 1]]
    c = positions[triangles[t, 2]]
    lo = wp.min(wp.min(a, b), c) - wp.vec3(radius)
    hi = wp.max(wp.max(a, b), c) + wp.vec3(radius)
    query = wp.bvh_query_aabb(vertex_bvh, lo, hi)
    v = int(0)
    count = int(0)
    while wp.bvh_query_next(query, v):
        p = collider_points[v]
        cp, w = closest_point_triangle(p, a, b, c)
        keep = wp.length(p - cp) < radius
        if interior_only != 0 and (w[0] <= 0.0 or w[1] <= 0.0 or w[2] <= 0.0):
            keep = False
        if keep:
            if count < capacity:
                tv_vertex[t * capacity + count] = v
            count += 1
    if count > capacity:
        wp.atomic_add(overflow, 0, 1)
        wp.atomic_max(required, 1, count)
    tv_count[t] = wp.min(count, capacity)


# --------------------------------------------------------------------------------------
# classes


class MeshCollider:
    """A closed triangle mesh whose vertices may move every frame.

    Args:
        vertices: ``(N, 3)`` [m] (numpy or wp.array).
        triangles: ``(M, 3)`` int vertex indices, wound counter-clockwise seen from outside.
        device: Warp device.
        thickness_offset: [m] the effective surface is offset outward by this much (e.g. skin, or
            a coarse collider mesh lying inside the true body); contact distances are measured to it.

    Device arrays: ``points`` (N,) vec3 [m] current vertices, ``prev_points`` (N,) vec3 [m] the
    vertices before the last :meth:`update_vertices`, ``triangles`` (M, 3) int32, ``edges`` (E, 2)
    int32 (unique, ``edges[e, 0] < edges[e, 1]``), ``bounds`` (2,) vec3 [m] AABB lower/upper.
    ``mesh`` is the ``wp.Mesh`` (triangle BVH), ``edge_bvh`` and ``vertex_bvh`` are ``wp.Bvh``.
    """

    def __init__(self, vertices, triangles, device=None, thickness_offset: float = 0.0):
        self.device = wp.get_device(device)
        self.thickness_offset = float(thickness_offset)
        dev = self.device
        self.points = wp.clone(as_vec3_array(vertices, dev))
        self.prev_points = wp.clone(self.points)
        self.triangles = as_index_array(triangles, 3, dev)
        self.edges = wp.array(unique_edges(self.triangles.numpy()), dtype=wp.int32, device=dev)
        self.vertex_count = self.points.shape[0]
        self.triangle_count = self.triangles.shape[0]
        self.edge_count = self.edges.shape[0]
        if self.triangle_count == 0:
            raise ValueError("MeshCollider needs at least one triangle")
        idx = self.triangles.numpy()
        if idx.min() < 0 or idx.max() >= self.vertex_count:
            raise ValueError(f"MeshCollider triangle indices must be in [0, {self.vertex_count}), got [{idx.min()}, {idx.max()}]")
        self.bounds = wp.zeros(2, dtype=wp.vec3, device=dev)
        self.vertex_lowers = wp.zeros(self.vertex_count, dtype=wp.vec3, device=dev)
        self.vertex_uppers = wp.zeros(self.vertex_count, dtype=wp.vec3, device=dev)
        self.edge_lowers = wp.zeros(self.edge_count, dtype=wp.vec3, device=dev)
        self.edge_uppers = wp.zeros(self.edge_count, dtype=wp.vec3, device=dev)
        self._update_bounds()
        self.mesh = wp.Mesh(points=self.points, indices=self.triangles.flatten())
        self.vertex_bvh = wp.Bvh(self.vertex_lowers, self.vertex_uppers)
        self.edge_bvh = wp.Bvh(self.edge_lowers, self.edge_uppers)

    def _update_bounds(self):
        dev = self.device
        wp.launch(reset_bounds_kernel, dim=1, inputs=[], outputs=[self.bounds], device=dev)
        wp.launch(collider_vertex_kernel, dim=self.vertex_count, inputs=[self.points],
                  outputs=[self.vertex_lowers, self.vertex_uppers, self.bounds], device=dev)
        wp.launch(edge_bounds_kernel, dim=self.edge_count, inputs=[self.points, self.edges],
                  outputs=[self.edge_lowers, self.edge_uppers], device=dev)

    def _refit(self):
        self._update_bounds()
        self.mesh.refit()
        self.vertex_bvh.refit()
        self.edge_bvh.refit()

    def _copy_in(self, new_vertices):
        if isinstance(new_vertices, wp.array) and new_vertices.dtype == wp.vec3 and new_vertices.device == self.device:
            src = new_vertices
        else:
            src = as_vec3_array(new_vertices, self.device)
        if src.shape[0] != self.vertex_count:
            raise ValueError(f"update_vertices: expected {self.vertex_count} vertices, got {src.shape[0]}")
        wp.copy(self.points, src)

    def update_vertices(self, new_vertices):
        """Move the collider: previous ← current, current ← ``new_vertices`` ``(N, 3)`` [m]; refit the BVHs.

        With a wp.array of vec3 on the collider's device this is copies and kernel launches only
        (capturable in a CUDA graph; not on the CPU, where Warp 1.19's graph capture does not record
        ``wp.Mesh.refit``); numpy input is uploaded first.
        """
        wp.copy(self.prev_points, self.points)
        self._copy_in(new_vertices)
        self._refit()

    def reset_vertices(self, new_vertices):
        """Place the collider without motion: previous = current = ``new_vertices`` (no velocity)."""
        self._copy_in(new_vertices)
        wp.copy(self.prev_points, self.points)
        self._refit()

    def release(self):
        """Free the device buffers and BVHs (idempotent)."""
        for name in ("mesh", "vertex_bvh", "edge_bvh", "points", "prev_points", "triangles", "edges", "bounds",
                     "vertex_lowers", "vertex_uppers", "edge_lowers", "edge_uppers"):
            setattr(self, name, None)


class ClothColliderContacts:
    """Cloth-vs-collider contacts for one cloth vertex set and one :class:`MeshCollider`.

    Args:
        collider: the :class:`MeshCollider`.
        vertex_count: number of cloth vertices N; ``detect()`` reads ``positions[0:N]``.
        edges: cloth edges ``(E, 2)`` int.
        triangles: cloth triangles ``(T, 3)`` int, or None to skip the triangle–collider-vertex lists.
        edge_capacity: Ke, collider edges stored per cloth edge.
        triangle_capacity: Kt, collider vertices stored per cloth triangle.
        device: Warp device (default: the collider's).
        deep_check: also find vertices inside the collider deeper than the query radius (one
            unbounded closest-point query with a ray-parity sign per vertex inside the collider's box
            and not already in contact).

    Per-vertex arrays (N,) after :meth:`detect`:
        ``vertex_face`` int32: collider face of the contact, -1 = no contact;
        ``vertex_dist`` float [m]: signed distance to the offset surface (negative inside), R if no contact;
        ``vertex_normal`` vec3: unit outward normal (p − closest)/|p − closest| outside, the face normal inside;
        ``vertex_point`` vec3 [m]: closest point on the collider surface (not offset);
        ``vertex_bary`` vec3: barycentric weights of that point in ``vertex_face``;
        ``vertex_disp`` vec3 [m]: displacement of that collider point over the last update_vertices()
        (velocity = disp / frame dt), for friction.
    Edge lists: ``ee_count`` (E,) int32, ``ee_edge`` (E * Ke,) int32, ``ee_edge[e * Ke + k]`` = collider
    edge index (into ``collider.edges``). Triangle lists: ``tv_count`` (T,), ``tv_vertex`` (T * Kt,),
    collider vertex indices. ``overflow`` (1,) int32 counts overflowing lists since :meth:`reset_overflow`;
    ``required`` (2,) int32 the longest (ee, tv) list seen.
    """

    def __init__(
        self,
        collider: MeshCollider,
        vertex_count: int,
        edges,
        triangles=None,
        edge_capacity: int = 8,
        triangle_capacity: int = 4,
        device=None,
        *,
        deep_check: bool = True,
    ):
        self.collider = collider
        self.device = wp.get_device(device) if device is not None else collider.device
        if self.device != collider.device:
            raise ValueError(f"collider lives on {collider.device}, contacts requested on {self.device}")
        dev = self.device
        self.vertex_count = int(vertex_count)
        self.edges = as_index_array(edges, 2, dev)
        self.triangles = as_index_array(triangles, 3, dev) if triangles is not None else None
        self.edge_count = self.edges.shape[0]
        self.triangle_count = self.triangles.shape[0] if self.triangles is not None else 0
        self.edge_capacity = int(edge_capacity)
        self.triangle_capacity = int(triangle_capacity)
        self.deep_check = bool(deep_check)
        n = self.vertex_count
        self.vertex_face = wp.zeros(n, dtype=wp.int32, device=dev)
        self.vertex_dist = wp.zeros(n, dtype=float, device=dev)
        self.vertex_normal = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.vertex_point = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.vertex_bary = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.vertex_disp = wp.zeros(n, dtype=wp.vec3, device=dev)
        self.ee_count = wp.zeros(self.edge_count, dtype=wp.int32, device=dev)
        self.tv_count = wp.zeros(self.triangle_count, dtype=wp.int32, device=dev)
        self.overflow = wp.zeros(1, dtype=wp.int32, device=dev)
        self.required = wp.zeros(2, dtype=wp.int32, device=dev)
        self._allocate_lists()

    def _allocate_lists(self):
        dev = self.device
        self.ee_edge = wp.zeros(self.edge_count * self.edge_capacity, dtype=wp.int32, device=dev)
        self.tv_vertex = wp.zeros(self.triangle_count * self.triangle_capacity, dtype=wp.int32, device=dev)

    def detect(self, positions: wp.array, query_radius: float):
        """Fill every per-vertex, per-edge (and per-triangle) array for the cloth at ``positions`` [m].

        ``positions``: ``wp.array(dtype=wp.vec3)`` with at least N entries on the same device.
        Kernel launches only (capturable; ``query_radius`` is fixed into a captured graph). The
        collider must be up to date (:meth:`MeshCollider.update_vertices`).
        """
        if positions.shape[0] < self.vertex_count or positions.device != self.device:
            raise ValueError(f"positions: need >= {self.vertex_count} vec3 on {self.device}")
        col = self.collider
        r = float(query_radius)
        dev = self.device
        wp.launch(vertex_collider_kernel, dim=self.vertex_count,
                  inputs=[col.mesh.id, col.points, col.prev_points, col.triangles, col.bounds, positions, r,
                          col.thickness_offset, int(self.deep_check)],
                  outputs=[self.vertex_face, self.vertex_dist, self.vertex_normal, self.vertex_point,
                           self.vertex_bary, self.vertex_disp], device=dev,
                  block_dim=query_block_dim(dev, self.vertex_count))  # fmt: skip
        if self.edge_count:
            wp.launch(edge_collider_kernel, dim=self.edge_count,
                      inputs=[col.edge_bvh.id, col.points, col.edges, positions, self.edges,
                              r + col.thickness_offset, self.edge_capacity, 0],
                      outputs=[self.ee_count, self.ee_edge, self.overflow, self.required], device=dev,
                      block_dim=query_block_dim(dev, self.edge_count))  # fmt: skip
        if self.triangle_count:
            wp.launch(triangle_collider_vertex_kernel, dim=self.triangle_count,
                      inputs=[col.vertex_bvh.id, col.points, positions, self.triangles,
                              r + col.thickness_offset, self.triangle_capacity, 0],
                      outputs=[self.tv_count, self.tv_vertex, self.overflow, self.required], device=dev,
                      block_dim=query_block_dim(dev, self.triangle_count))  # fmt: skip

    def reset_overflow(self):
        """Zero ``overflow`` and ``required`` (capturable memsets)."""
        self.overflow.zero_()
        self.required.zero_()

    def overflowed(self) -> bool:
        """Whether a list overflowed since the last reset (one int read back)."""
        return int(self.overflow.numpy()[0]) > 0

    def grow(self) -> dict:
        """Double the capacity of each list kind that overflowed until it fits the longest list seen
        (every kind if none is recorded; past ``MAX_LIST_ENTRIES`` entries in one array, the largest that
        fits, else a SimulationError with nothing changed); reallocates the lists and resets the counters."""
        req = self.required.numpy()
        counts = (self.edge_count, self.triangle_count)
        caps = grown_capacities(
            [self.edge_capacity, self.triangle_capacity], req, counts, MAX_LIST_ENTRIES,
            ["collider contact cloth edge-collider edge", "collider contact cloth triangle-collider vertex"],
            lambda: "The collider's mesh is much finer than the cloth's near it: use a coarser collider mesh or a "
                    "finer cloth.")
        self.edge_capacity, self.triangle_capacity = caps
        self._allocate_lists()
        self.reset_overflow()
        return {"ee": self.edge_capacity, "tv": self.triangle_capacity}

    def memory_bytes(self) -> int:
        """Bytes held in this detector's wp.arrays."""
        names = ("vertex_face", "vertex_dist", "vertex_normal", "vertex_point", "vertex_bary", "vertex_disp",
                 "ee_count", "ee_edge", "tv_count", "tv_vertex", "overflow", "required", "edges", "triangles")
        return sum(getattr(self, n).capacity for n in names if getattr(self, n, None) is not None)

    def release(self):
        """Free the device buffers (idempotent). Does not release the collider (it has its own owner)."""
        for name in ("vertex_face", "vertex_dist", "vertex_normal", "vertex_point", "vertex_bary", "vertex_disp",
                     "ee_count", "ee_edge", "tv_count", "tv_vertex", "overflow", "required", "edges", "triangles"):
            setattr(self, name, None)
        self.collider = None

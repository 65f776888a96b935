"""Exact triangle–triangle intersection counting and penetration depth (diagnostics).

Used by tests and by the simulator's end-of-run checks ("zero intersections", "no vertex
deeper than the contact tolerance inside the collider"). These functions allocate and read
back to the host; they are diagnostics, not part of the step.

Intersection semantics: triangles are closed sets. Two triangles intersect when they share
at least one point, with a distance tolerance ``eps`` [m] (default ``1e-6`` times the largest
absolute coordinate of the inputs, at least ``1e-9`` m: a few float32 ulps at that scale).
So triangles that touch at a vertex or along an edge count as intersecting, coplanar
triangles that overlap count, and triangles further apart than ``eps`` do not.
Zero-area triangles (normal shorter than 1e-20 m²) never intersect anything.

Algorithm (per pair, float32): plane-side test of each triangle against the other's plane
(distances snapped to 0 within ``eps``); if neither rejects, the two triangles' intersection
intervals on the planes' common line are compared (Möller 1997). Pairs whose planes are within
1e-4 rad of parallel, or part by at most 10·eps across the pair's extent (s·L ≤ 10·eps, s the sine
of the angle between them, L the longest edge), are treated as coplanar: projected to 2D and
tested by edge crossings and vertex containment. (With the interval test there, a vertex snapped
onto the other plane may lie eps/s off the planes' common line: on H200 drapes, two nearly flat
triangles 5 mm apart on one 5 mm cloth were counted as intersecting.) A 3D intersection point
lies in both 2D projections, so the 2D test misses none; it may count triangles up to 10·eps
apart as touching. Broad phase: ``wp.mesh_query_aabb`` on a BVH of the triangles.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ._arrays import as_index_array, as_vec3_array, resolve_device

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster

# --------------------------------------------------------------------------------------
# helpers


@wp.func
def _snap(d: float, eps: float) -> float:
    if wp.abs(d) <= eps:
        return 0.0
    return d


@wp.func
def _same_side(d0: float, d1: float, d2: float) -> bool:
    # all strictly on one side of a plane
    return (d0 > 0.0 and d1 > 0.0 and d2 > 0.0) or (d0 < 0.0 and d1 < 0.0 and d2 < 0.0)


@wp.func
def _line_interval(v0: wp.vec3, v1: wp.vec3, v2: wp.vec3, d0: float, d1: float, d2: float, axis: wp.vec3) -> wp.vec2:
    """Extent along ``axis`` of (triangle v0 v1 v2) ∩ (plane where the signed distances d are 0)."""
    lo = float(1.0e30)
    hi = float(-1.0e30)
    if d0 == 0.0:
        t = wp.dot(axis, v0)
        lo = wp.min(lo, t)
        hi = wp.max(hi, t)
    if d1 == 0.0:
        t = wp.dot(axis, v1)
        lo = wp.min(lo, t)
        hi = wp.max(hi, t)
    if d2 == 0.0:
        t = wp.dot(axis, v2)
        lo = wp.min(lo, t)
        hi = wp.max(hi, t)
    if d0 * d1 < 0.0:
        t = wp.dot(axis, v0 + (v1 - v0) * (d0 / (d0 - d1)))
        lo = wp.min(lo, t)
        hi = wp.max(hi, t)
    if d1 * d2 < 0.0:
        t = wp.dot(axis, v1 + (v2 - v1) * (d1 / (d1 - d2)))
        lo = wp.min(lo, t)
        hi = wp.max(hi, t)
    if d2 * d0 < 0.0:
        t = wp.dot(axis, v2 + (v0 - v2) * (d2 / (d2 - d0)))
        lo = wp.min(lo, t)
        hi = wp.max(hi, t)
    return wp.vec2(lo, hi)


@wp.func
def _project2d(v: wp.vec3, drop: int) -> wp.vec2:
    if drop == 0:
        return wp.vec2(v[1], v[2])
    if drop == 1:
        return wp.vec2(v[2], v[0])
    return wp.vec2(v[0], v[1])


@wp.func
def _side2d(p: wp.vec2, q: wp.vec2, x: wp.vec2, eps: float) -> float:
    """Signed distance of x from the line p→q (0 within eps; also 0 for a zero-length p→q)."""
    e = q - p
    n = wp.length(e)
    if n <= 0.0:
        return 0.0
    return _snap((e[0] * (x[1] - p[1]) - e[1] * (x[0] - p[0])) / n, eps)


@wp.func
def _segments_touch2d(p0: wp.vec2, p1: wp.vec2, q0: wp.vec2, q1: wp.vec2, eps: float) -> bool:
    o0 = _side2d(p0, p1, q0, eps)
    o1 = _side2d(p0, p1, q1, eps)
    o2 = _side2d(q0, q1, p0, eps)
    o3 = _side2d(q0, q1, p1, eps)
    if o0 == 0.0 and o1 == 0.0:
        # collinear (within eps): overlap of the projections on p's direction
        e = p1 - p0
        n2 = wp.dot(e, e)
        if n2 <= 0.0:
            e = q1 - q0
            n2 = wp.dot(e, e)
            if n2 <= 0.0:
                return wp.length(p0 - q0) <= eps
        inv = 1.0 / wp.sqrt(n2)
        a0 = wp.dot(p0, e) * inv
        a1 = wp.dot(p1, e) * inv
        b0 = wp.dot(q0, e) * inv
        b1 = wp.dot(q1, e) * inv
        return wp.max(wp.min(a0, a1), wp.min(b0, b1)) <= wp.min(wp.max(a0, a1), wp.max(b0, b1)) + eps
    return o0 * o1 <= 0.0 and o2 * o3 <= 0.0


@wp.func
def _point_in_tri2d(x: wp.vec2, a: wp.vec2, b: wp.vec2, c: wp.vec2, eps: float) -> bool:
    s0 = _side2d(a, b, x, eps)
    s1 = _side2d(b, c, x, eps)
    s2 = _side2d(c, a, x, eps)
    return (s0 >= 0.0 and s1 >= 0.0 and s2 >= 0.0) or (s0 <= 0.0 and s1 <= 0.0 and s2 <= 0.0)


@wp.func
def _coplanar_tri_tri(
    a0: wp.vec3, a1: wp.vec3, a2: wp.vec3, b0: wp.vec3, b1: wp.vec3, b2: wp.vec3, n: wp.vec3, eps: float
) -> bool:
    drop = int(2)
    an = wp.vec3(wp.abs(n[0]), wp.abs(n[1]), wp.abs(n[2]))
    if an[0] >= an[1] and an[0] >= an[2]:
        drop = 0
    elif an[1] >= an[2]:
        drop = 1
    p0 = _project2d(a0, drop)
    p1 = _project2d(a1, drop)
    p2 = _project2d(a2, drop)
    q0 = _project2d(b0, drop)
    q1 = _project2d(b1, drop)
    q2 = _project2d(b2, drop)
    if _segments_touch2d(p0, p1, q0, q1, eps) or _segments_touch2d(p0, p1, q1, q2, eps):
        return True
    if _segments_touch2d(p0, p1, q2, q0, eps) or _segments_touch2d(p1, p2, q0, q1, eps):
        return True
    if _segments_touch2d(p1, p2, q1, q2, eps) or _segments_touch2d(p1, p2, q2, q0, eps):
        return True
    if _segments_touch2d(p2, p0, q0, q1, eps) or _segments_touch2d(p2, p0, q1, q2, eps):
        return True
    if _segments_touch2d(p2, p0, q2, q0, eps):
        return True
    return _point_in_tri2d(p0, q0, q1, q2, eps) or _point_in_tri2d(q0, p0, p1, p2, eps)


NEAR_PARALLEL_EPS = wp.constant(10.0)  # see tri_tri_intersect


@wp.func
def tri_tri_intersect(
    a0: wp.vec3, a1: wp.vec3, a2: wp.vec3, b0: wp.vec3, b1: wp.vec3, b2: wp.vec3, eps: float
) -> bool:
    """True when the closed triangles (a0 a1 a2) and (b0 b1 b2) share a point, within eps [m]."""
    na = wp.cross(a1 - a0, a2 - a0)
    nb = wp.cross(b1 - b0, b2 - b0)
    la = wp.length(na)
    lb = wp.length(nb)
    if la <= 1.0e-20 or lb <= 1.0e-20:
        return False
    na = na / la
    nb = nb / lb
    # signed distances [m] of each triangle's vertices from the other's plane
    da0 = _snap(wp.dot(nb, a0 - b0), eps)
    da1 = _snap(wp.dot(nb, a1 - b0), eps)
    da2 = _snap(wp.dot(nb, a2 - b0), eps)
    if _same_side(da0, da1, da2):
        return False
    db0 = _snap(wp.dot(na, b0 - a0), eps)
    db1 = _snap(wp.dot(na, b1 - a0), eps)
    db2 = _snap(wp.dot(na, b2 - a0), eps)
    if _same_side(db0, db1, db2):
        return False
    axis = wp.cross(na, nb)
    s = wp.length(axis)
    coplanar = (da0 == 0.0 and da1 == 0.0 and da2 == 0.0) or (db0 == 0.0 and db1 == 0.0 and db2 == 0.0)
    # planes that part by at most NEAR_PARALLEL_EPS·eps across the pair's extent are coplanar within the
    # tolerance: there a vertex snapped onto the other plane can lie eps/s away from the planes' common line
    # (millimetres), and the interval test on that line reported triangles a whole edge apart as touching
    ext = wp.max(wp.max(wp.max(wp.length(a1 - a0), wp.length(a2 - a0)), wp.length(a2 - a1)),
                 wp.max(wp.max(wp.length(b1 - b0), wp.length(b2 - b0)), wp.length(b2 - b1)))
    if coplanar or s < 1.0e-4 or s * ext <= NEAR_PARALLEL_EPS * eps:
        return _coplanar_tri_tri(a0, a1, a2, b0, b1, b2, na, eps)
    axis = axis / s
    ia = _line_interval(a0, a1, a2, da0, da1, da2, axis)
    ib = _line_interval(b0, b1, b2, db0, db1, db2, axis)
    return ia[0] <= ib[1] + eps and ib[0] <= ia[1] + eps


@wp.func
def _tri_bounds_lo(a: wp.vec3, b: wp.vec3, c: wp.vec3, pad: float) -> wp.vec3:
    return wp.min(wp.min(a, b), c) - wp.vec3(pad)


@wp.func
def _tri_bounds_hi(a: wp.vec3, b: wp.vec3, c: wp.vec3, pad: float) -> wp.vec3:
    return wp.max(wp.max(a, b), c) + wp.vec3(pad)


# --------------------------------------------------------------------------------------
# kernels


@wp.kernel
def self_intersection_count_kernel(
    mesh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    tris: wp.array2d(dtype=wp.int32),
    eps: float,
    offsets: wp.array(dtype=wp.int32),
    write: int,
    counts: wp.array(dtype=wp.int32),
    pairs: wp.array2d(dtype=wp.int32),
):
    """counts[t] = number of triangles u > t, sharing no vertex with t, that intersect t; with ``write`` != 0
    also the pairs (t, u) from row ``offsets[t]`` of ``pairs`` on (a second pass, after the counts' prefix sum)."""
    t = wp.tid()
    i0 = tris[t, 0]
    i1 = tris[t, 1]
    i2 = tris[t, 2]
    a0 = points[i0]
    a1 = points[i1]
    a2 = points[i2]
    query = wp.mesh_query_aabb(mesh, _tri_bounds_lo(a0, a1, a2, eps), _tri_bounds_hi(a0, a1, a2, eps))
    u = int(0)
    n = int(0)
    while wp.mesh_query_next(query, u):
        if u <= t:
            continue
        j0 = tris[u, 0]
        j1 = tris[u, 1]
        j2 = tris[u, 2]
        if j0 == i0 or j0 == i1 or j0 == i2 or j1 == i0 or j1 == i1 or j1 == i2:
            continue
        if j2 == i0 or j2 == i1 or j2 == i2:
            continue
        if tri_tri_intersect(a0, a1, a2, points[j0], points[j1], points[j2], eps):
            if write != 0:
                pairs[offsets[t] + n, 0] = t
                pairs[offsets[t] + n, 1] = u
            n += 1
    counts[t] = n


@wp.kernel
def mesh_intersection_count_kernel(
    mesh_b: wp.uint64,
    points_a: wp.array(dtype=wp.vec3),
    tris_a: wp.array2d(dtype=wp.int32),
    points_b: wp.array(dtype=wp.vec3),
    tris_b: wp.array2d(dtype=wp.int32),
    eps: float,
    counts: wp.array(dtype=wp.int32),
):
    """counts[t] = number of triangles of mesh b that intersect triangle t of mesh a."""
    t = wp.tid()
    a0 = points_a[tris_a[t, 0]]
    a1 = points_a[tris_a[t, 1]]
    a2 = points_a[tris_a[t, 2]]
    query = wp.mesh_query_aabb(mesh_b, _tri_bounds_lo(a0, a1, a2, eps), _tri_bounds_hi(a0, a1, a2, eps))
    u = int(0)
    n = int(0)
    while wp.mesh_query_next(query, u):
        if tri_tri_intersect(a0, a1, a2, points_b[tris_b[u, 0]], points_b[tris_b[u, 1]], points_b[tris_b[u, 2]], eps):
            n += 1
    counts[t] = n


@wp.kernel
def penetration_depth_kernel(
    mesh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    depth: wp.array(dtype=float),
):
    """depth[i] = distance [m] from points[i] to the closed mesh surface if inside, else 0."""
    i = wp.tid()
    p = points[i]
    q = wp.mesh_query_point(mesh, p, 1.0e10)
    d = float(0.0)
    if q.result:
        if q.sign < 0.0:
            d = wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    depth[i] = d


# --------------------------------------------------------------------------------------
# host API


def default_eps(*positions: np.ndarray) -> float:
    """Default tolerance [m]: 1e-6 × the largest absolute coordinate, at least 1e-9 m."""
    m = max((float(np.abs(p).max()) if len(p) else 0.0) for p in positions)
    return max(1.0e-6 * m, 1.0e-9)


def _mesh(points: wp.array, tris: wp.array) -> wp.Mesh:
    return wp.Mesh(points=points, indices=tris.flatten())


def self_intersection_counts(positions, triangles, device=None, eps: float | None = None) -> np.ndarray:
    """Per-triangle counts, ``(M,)`` int32: entry t counts the triangles u > t that share no
    vertex with t and intersect it. ``sum()`` is :func:`count_self_intersections`."""
    return _self_intersections(positions, triangles, device, eps, False)[0]


def self_intersection_pairs(positions, triangles, device=None, eps: float | None = None) -> np.ndarray:
    """The intersecting pairs, ``(K, 2)`` int32 rows (t, u) with t < u, sorted: triangles that share no vertex and
    intersect (:func:`count_self_intersections` is K). Where a cloth passes through itself, for a strain or
    debug view or to ask which primitives the self-contact left out (``benchmarks/intersection_pairs.py``)."""
    return _self_intersections(positions, triangles, device, eps, True)[1]


def _self_intersections(positions, triangles, device, eps, want_pairs: bool):
    device = resolve_device(device, positions, triangles)
    pts = as_vec3_array(positions, device)
    tris = as_index_array(triangles, 3, device)
    none = np.zeros((0, 2), dtype=np.int32)
    if tris.shape[0] == 0:
        return np.zeros(0, dtype=np.int32), none
    if eps is None:
        eps = default_eps(pts.numpy())
    mesh = _mesh(pts, tris)
    counts = wp.zeros(tris.shape[0], dtype=wp.int32, device=device)
    offsets = wp.zeros(tris.shape[0], dtype=wp.int32, device=device)
    pairs = wp.zeros((1, 2), dtype=wp.int32, device=device)  # not written by the counting pass
    wp.launch(self_intersection_count_kernel, dim=tris.shape[0], inputs=[mesh.id, pts, tris, float(eps), offsets, 0],
              outputs=[counts, pairs], device=device)
    c = counts.numpy()
    total = int(c.sum())
    if not want_pairs or total == 0:
        return c, none
    offsets = wp.array(np.concatenate([[0], np.cumsum(c[:-1])]).astype(np.int32), dtype=wp.int32, device=device)
    pairs = wp.zeros((total, 2), dtype=wp.int32, device=device)
    wp.launch(self_intersection_count_kernel, dim=tris.shape[0], inputs=[mesh.id, pts, tris, float(eps), offsets, 1],
              outputs=[counts, pairs], device=device)
    out = pairs.numpy()
    return c, out[np.lexsort((out[:, 1], out[:, 0]))]


def count_self_intersections(positions, triangles, device=None, eps: float | None = None) -> int:
    """Number of unordered pairs of triangles of one mesh that intersect, excluding pairs that share a vertex.

    Args:
        positions: vertex positions [m], ``(N, 3)`` float (numpy or wp.array, or ``(N,)`` wp.vec3).
        triangles: vertex indices, ``(M, 3)`` int (numpy, wp.array2d int32 or ``(M,)`` wp.vec3i).
        device: Warp device; default: that of a wp.array input, else Warp's default device.
        eps: distance tolerance [m]; default :func:`default_eps`.
    """
    return int(self_intersection_counts(positions, triangles, device, eps).sum())


def count_mesh_intersections(pos_a, tri_a, pos_b, tri_b, device=None, eps: float | None = None) -> int:
    """Number of pairs (triangle of mesh a, triangle of mesh b) that intersect (cloth vs collider).

    Shapes and units as :func:`count_self_intersections`; the meshes share no vertices.
    """
    device = resolve_device(device, pos_a, tri_a, pos_b, tri_b)
    pa = as_vec3_array(pos_a, device)
    pb = as_vec3_array(pos_b, device)
    ta = as_index_array(tri_a, 3, device)
    tb = as_index_array(tri_b, 3, device)
    if ta.shape[0] == 0 or tb.shape[0] == 0:
        return 0
    if eps is None:
        eps = default_eps(pa.numpy(), pb.numpy())
    mesh_b = _mesh(pb, tb)
    counts = wp.zeros(ta.shape[0], dtype=wp.int32, device=device)
    wp.launch(mesh_intersection_count_kernel, dim=ta.shape[0], inputs=[mesh_b.id, pa, ta, pb, tb, float(eps)],
              outputs=[counts], device=device)
    return int(counts.numpy().sum())


def penetration_depths(points, mesh_vertices, mesh_triangles, device=None) -> np.ndarray:
    """Per-point depth [m] inside the closed, outward-wound mesh, ``(P,)`` float32, 0 outside.

    Inside/outside is ``wp.mesh_query_point``'s ray-parity vote; depth is the distance to the
    closest surface point.
    """
    device = resolve_device(device, points, mesh_vertices, mesh_triangles)
    pts = as_vec3_array(points, device)
    mv = as_vec3_array(mesh_vertices, device)
    mt = as_index_array(mesh_triangles, 3, device)
    depth = wp.zeros(pts.shape[0], dtype=float, device=device)
    if pts.shape[0] == 0 or mt.shape[0] == 0:
        return depth.numpy()
    mesh = _mesh(mv, mt)
    wp.launch(penetration_depth_kernel, dim=pts.shape[0], inputs=[mesh.id, pts], outputs=[depth], device=device)
    return depth.numpy()


def max_penetration(points, mesh_vertices, mesh_triangles, device=None) -> float:
    """Deepest penetration [m] of ``points`` ``(P, 3)`` inside the closed mesh; 0.0 if none is inside."""
    d = penetration_depths(points, mesh_vertices, mesh_triangles, device)
    return float(d.max()) if d.size else 0.0

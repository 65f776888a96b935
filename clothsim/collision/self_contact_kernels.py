"""The self-contact searches' kernels (:class:`clothsim.collision.self_contact.SelfContactDetector` launches
them): the positions copied and bounded for the BVHs, the rest-neighbour tests, and the per-vertex
(vertex–triangle) and per-edge (edge–edge) BVH queries that fill the lists; ``edge_edge_half_kernel`` is the
edge–edge query for the CPU's threaded search (each pair in its lower edge's list only).
"""

from __future__ import annotations

import warp as wp

from .contact_funcs import closest_point_triangle, closest_points_edge_edge
from .contact_lists import record_overflow

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    atomicMin(reinterpret_cast<int*>(dist.data) + index, value > 0.0f ? __float_as_int(value) : 0);
    #else
    float v = value > 0.0f ? value : 0.0f;
    if (v < dist.data[index]) dist.data[index] = v;
    #endif
    """
)
def min_nonnegative(dist: wp.array(dtype=float), index: int, value: float):
    """``dist[index] = min(dist[index], value)`` for distances (>= 0; -0 and below count as +0): on CUDA one
    integer atomicMin on the bits, since non-negative IEEE floats order as their bits do as integers. Warp's float
    atomic_min is a compare-and-swap loop that retries while other threads lower the same entry, and in a pile
    many threads lower the same vertices: the edge-edge search took 3.78 ms with it, 2.40 ms with this (H200, fold
    N = 256, ``benchmarks/detect_variants.py`` group8_floatmin / group8_intmin). On the CPU Warp runs a launch on
    one thread (the threaded search gives each thread its own ``dist``): a plain compare and write, as Warp's own
    CPU atomic_min. ``dist`` must be contiguous (the detector's own arrays are)."""
    ...


@wp.kernel
def copy_points_kernel(
    positions: wp.array(dtype=wp.vec3),
    points: wp.array(dtype=wp.vec3),
):
    """Copy positions into the detector's own points."""
    v = wp.tid()
    points[v] = positions[v]


@wp.kernel
def edge_bounds_kernel(
    positions: wp.array(dtype=wp.vec3),
    edges: wp.array2d(dtype=wp.int32),
    lowers: wp.array(dtype=wp.vec3),
    uppers: wp.array(dtype=wp.vec3),
):
    e = wp.tid()
    p0 = positions[edges[e, 0]]
    p1 = positions[edges[e, 1]]
    lowers[e] = wp.min(p0, p1)
    uppers[e] = wp.max(p0, p1)


@wp.kernel
def triangle_bounds_kernel(
    positions: wp.array(dtype=wp.vec3),
    triangles: wp.array2d(dtype=wp.int32),
    lowers: wp.array(dtype=wp.vec3),
    uppers: wp.array(dtype=wp.vec3),
):
    t = wp.tid()
    p0 = positions[triangles[t, 0]]
    p1 = positions[triangles[t, 1]]
    p2 = positions[triangles[t, 2]]
    lowers[t] = wp.min(wp.min(p0, p1), p2)
    uppers[t] = wp.max(wp.max(p0, p1), p2)


@wp.func
def rest_neighbour_triangle(v: int, i0: int, i1: int, i2: int, rest: wp.array(dtype=wp.vec3),
                            panel: wp.array(dtype=wp.int32), rest_radius: float):
    """Vertex v and triangle (i0, i1, i2) lie closer than ``rest_radius`` in the rest shape of one panel:
    neighbours, not contacts (only a fold tighter than the radius could bring them together).

    Two cheap bounds decide most pairs without the closest point: a corner closer than the radius makes the
    triangle closer (True); a vertex farther from the centroid than the radius plus the corners' largest
    distance from it is farther from the whole triangle (False)."""
    if panel[v] != panel[i0]:
        return False
    p = rest[v]
    a = rest[i0]
    b = rest[i1]
    c = rest[i2]
    r2 = rest_radius * rest_radius
    if wp.min(wp.min(wp.length_sq(p - a), wp.length_sq(p - b)), wp.length_sq(p - c)) < r2:
        return True
    g = (a + b + c) / 3.0
    reach = wp.sqrt(wp.max(wp.max(wp.length_sq(a - g), wp.length_sq(b - g)), wp.length_sq(c - g)))
    if wp.length(p - g) >= rest_radius + reach:
        return False
    cp, w = closest_point_triangle(p, a, b, c)
    return wp.length(p - cp) < rest_radius


@wp.func
def rest_neighbour_edges(i0: int, i1: int, j0: int, j1: int, rest: wp.array(dtype=wp.vec3),
                         panel: wp.array(dtype=wp.int32), rest_radius: float):
    """Edges (i0, i1) and (j0, j1) lie closer than ``rest_radius`` in the rest shape of one panel (the same
    two bounds first: endpoints closer than the radius; midpoints farther apart than the radius plus both
    half-lengths)."""
    if panel[i0] != panel[j0]:
        return False
    a0 = rest[i0]
    a1 = rest[i1]
    b0 = rest[j0]
    b1 = rest[j1]
    r2 = rest_radius * rest_radius
    if wp.min(wp.min(wp.length_sq(a0 - b0), wp.length_sq(a0 - b1)),
              wp.min(wp.length_sq(a1 - b0), wp.length_sq(a1 - b1))) < r2:
        return True
    if wp.length(0.5 * (a0 + a1 - b0 - b1)) >= rest_radius + 0.5 * (wp.length(a1 - a0) + wp.length(b1 - b0)):
        return False
    s, u, d = closest_points_edge_edge(a0, a1, b0, b1)
    return d < rest_radius


@wp.func
def edge_pair_distance(e: int, f: int, a: wp.vec4i, p0: wp.vec3, p1: wp.vec3, points: wp.array(dtype=wp.vec3),
                       edge_info: wp.array(dtype=wp.vec4i), rest: wp.array(dtype=wp.vec3),
                       panel: wp.array(dtype=wp.int32), rest_radius: float):
    """Edge e (``a = edge_info[e]``: endpoints and their weld ids) at (p0, p1) against a BVH candidate f: the
    distance of their closest points, or -1 when the pair is not tested here (f <= e: the lower edge tests each
    pair; sharing a vertex, also through a seam; rest neighbours). Also f's endpoints."""
    if f <= e:
        return -1.0, 0, 0
    b = edge_info[f]
    if b[2] == a[2] or b[2] == a[3] or b[3] == a[2] or b[3] == a[3]:
        return -1.0, b[0], b[1]
    if rest_radius > 0.0:  # rest neighbours first: in a flat region most candidates, settled by cheap bounds
        if rest_neighbour_edges(a[0], a[1], b[0], b[1], rest, panel, rest_radius):
            return -1.0, b[0], b[1]
    s, u, d = closest_points_edge_edge(p0, p1, points[b[0]], points[b[1]])
    return d, b[0], b[1]


@wp.kernel(enable_backward=False)  # CPU only (threads of its own): the block size does not matter
def edge_edge_half_kernel(
    edge_bvh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    edge_info: wp.array(dtype=wp.vec4i),
    rest: wp.array(dtype=wp.vec3),
    panel: wp.array(dtype=wp.int32),
    rest_radius: float,
    radius: float,
    capacity: int,
    first: int,
    half_count: wp.array(dtype=wp.int32),
    half_edge: wp.array(dtype=wp.int32),
    upper_need: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
):
    """:func:`edge_edge_kernel`'s search for edges ``first + tid``, writing each pair (e, f) to its lower edge's list
    only (``half_count[e]``: every pair found, stored or not) and counting it in ``upper_need[f]``. Threads
    searching disjoint edge ranges, each with its own ``upper_need`` and ``min_dist``, then share nothing that
    is written (Warp's CPU atomics are plain reads and writes); ``edge_edge_scatter_kernel`` makes the
    two-sided lists afterwards, and the lengths they need are ``half_count`` plus every thread's ``upper_need``."""
    e = first + wp.tid()
    a = edge_info[e]
    p0 = points[a[0]]
    p1 = points[a[1]]
    query = wp.bvh_query_aabb(edge_bvh, wp.min(p0, p1) - wp.vec3(radius), wp.max(p0, p1) + wp.vec3(radius))
    f = int(0)
    dmin = radius
    c = int(0)
    while wp.bvh_query_next(query, f):
        d, j0, j1 = edge_pair_distance(e, f, a, p0, p1, points, edge_info, rest, panel, rest_radius)
        if d >= 0.0 and d < radius:
            if c < capacity:
                half_edge[e * capacity + c] = f
            c += 1
            upper_need[f] = upper_need[f] + 1
            dmin = wp.min(dmin, d)
            min_nonnegative(min_dist, j0, d)
            min_nonnegative(min_dist, j1, d)
    half_count[e] = c
    if dmin < radius:
        min_nonnegative(min_dist, a[0], dmin)
        min_nonnegative(min_dist, a[1], dmin)


# --------------------------------------------------------------------------------------
# CUDA: one query per block, its threads traversing the BVH together


TILE_LANES = 32  # threads of a block that traverse one query (wp.tile_bvh_query_aabb) and test its candidates


@wp.kernel
def pack_edges_kernel(
    edges: wp.array2d(dtype=wp.int32),
    weld: wp.array(dtype=wp.int32),
    edge_info: wp.array(dtype=wp.vec4i),
):
    """Per edge: its endpoints and their weld representatives, read as one 16-byte load by the tiled search."""
    e = wp.tid()
    i0 = edges[e, 0]
    i1 = edges[e, 1]
    edge_info[e] = wp.vec4i(i0, i1, weld[i0], weld[i1])


@wp.kernel
def pack_triangles_kernel(
    triangles: wp.array2d(dtype=wp.int32),
    weld: wp.array(dtype=wp.int32),
    tri_info: wp.array(dtype=wp.vec4i),
    tri_weld: wp.array(dtype=wp.vec4i),
):
    """Per triangle: its corners and their weld representatives (16-byte loads; the fourth entry unused)."""
    t = wp.tid()
    i0 = triangles[t, 0]
    i1 = triangles[t, 1]
    i2 = triangles[t, 2]
    tri_info[t] = wp.vec4i(i0, i1, i2, 0)
    tri_weld[t] = wp.vec4i(weld[i0], weld[i1], weld[i2], 0)


@wp.kernel(module="unique", enable_backward=False)  # launched with query_block_dim
def vertex_triangle_kernel(
    triangle_bvh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    tri_info: wp.array(dtype=wp.vec4i),
    tri_weld: wp.array(dtype=wp.vec4i),
    weld: wp.array(dtype=wp.int32),
    rest: wp.array(dtype=wp.vec3),
    panel: wp.array(dtype=wp.int32),
    rest_radius: float,
    radius: float,
    over_face_cos: float,
    capacity: int,
    tv_capacity: int,
    vt_count: wp.array(dtype=wp.int32),
    vt_tri: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
    tv_count: wp.array(dtype=wp.int32),
    tv_append: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """The vertex–triangle search with one thread a vertex: the CPU's, and CUDA's for meshes large enough to fill
    the GPU with one query a thread (``SelfContactDetector.vt_threads``). Per vertex v, the triangles not holding v
    (nor a vertex welded to it) within radius, less rest neighbours, written in BVH order straight into ``vt_tri``
    (this thread owns v's list: no atomic, no ranking); each pair appended to its triangle's list (``tv_count``:
    every pair counted, stored or not; put in order afterwards) and lowering ``min_dist`` of v and the corners
    (it starts at the radius; atomic min, order-free). The current distance is tested before the rest neighbours:
    in a pile most candidates are other layers, and the other order made this search 18 % slower there (H200,
    fold N = 256, session 17). Until session 33 the CPU counted the triangles' pairs here and inverted the vertex
    lists in a second pass. H200, fold
    N = 1024 after 8 frames (1.5 M pairs; ``benchmarks/detect_variants.py``, session 33): 6.18 ms grouped
    (ranked), 3.45 ms this way; at N = 512 0.87 and 0.91 ms."""
    v = wp.tid()
    p = points[v]
    wv = weld[v]
    query = wp.bvh_query_aabb(triangle_bvh, p - wp.vec3(radius), p + wp.vec3(radius))
    t = int(0)
    count = int(0)
    dmin = radius
    while wp.bvh_query_next(query, t):
        w = tri_weld[t]
        if w[0] == wv or w[1] == wv or w[2] == wv:
            continue
        c = tri_info[t]
        a = points[c[0]]
        b = points[c[1]]
        g = points[c[2]]
        cp, bw = closest_point_triangle(p, a, b, g)
        d = wp.length(p - cp)
        if d >= radius:
            continue
        if rest_radius > 0.0:
            if rest_neighbour_triangle(v, c[0], c[1], c[2], rest, panel, rest_radius):
                if over_face_cos <= 0.0:
                    continue
                # a rest neighbour that has come over the face (separation along its normal) is a contact
                n = wp.cross(b - a, g - a)
                nn = wp.length(n)
                if nn <= 0.0 or wp.abs(wp.dot(p - cp, n)) < over_face_cos * d * nn:
                    continue
        if count < capacity:
            vt_tri[v * capacity + count] = t
        count += 1
        dmin = wp.min(dmin, d)
        min_nonnegative(min_dist, c[0], d)
        min_nonnegative(min_dist, c[1], d)
        min_nonnegative(min_dist, c[2], d)
        slot = wp.atomic_add(tv_count, t, 1)
        if slot < tv_capacity:
            tv_append[t * tv_capacity + slot] = v
    record_overflow(count, capacity, 0, overflow, required)
    vt_count[v] = wp.min(count, capacity)
    if dmin < radius:
        min_nonnegative(min_dist, v, dmin)


@wp.kernel(module="unique", enable_backward=False)  # launched with query_block_dim
def edge_edge_kernel(
    edge_bvh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    edge_info: wp.array(dtype=wp.vec4i),
    rest: wp.array(dtype=wp.vec3),
    panel: wp.array(dtype=wp.int32),
    rest_radius: float,
    radius: float,
    capacity: int,
    ee_count: wp.array(dtype=wp.int32),
    ee_edge: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
):
    """The edge–edge search with one thread an edge: the CPU's (without worker threads), and CUDA's for meshes
    large enough to fill the GPU with one query a thread (``SelfContactDetector.ee_threads``). Per edge e: edges
    f > e sharing no vertex (nor a weld) with e within radius, less rest neighbours, appended to both e's and f's
    list (``ee_count`` zeroed before; put in order afterwards); lowers ``min_dist`` of the four endpoints. Each
    pair is tested once, by its lower edge. Until session 33 this kernel ran the tests through
    :func:`edge_pair_distance` (as ``edge_edge_half_kernel`` still does); written out in the loop it ran twice as
    fast on CUDA (the same on the CPU): H200, fold after 8 frames, ``benchmarks/detect_variants.py`` session 33 (without ``min_dist``),
    10.2 against 19.3 ms at N = 1024, 1.22 against 2.32 ms at N = 512. This kernel, lists ranked: 12.66 ms at
    N = 1024 and 1.56 ms at N = 512, where the grouped search took 15.25 and 2.43 ms."""
    e = wp.tid()
    a = edge_info[e]
    p0 = points[a[0]]
    p1 = points[a[1]]
    query = wp.bvh_query_aabb(edge_bvh, wp.min(p0, p1) - wp.vec3(radius), wp.max(p0, p1) + wp.vec3(radius))
    f = int(0)
    dmin = radius
    while wp.bvh_query_next(query, f):
        if f <= e:  # each pair tested once, by its lower edge
            continue
        b = edge_info[f]
        if b[2] == a[2] or b[2] == a[3] or b[3] == a[2] or b[3] == a[3]:
            continue
        if rest_radius > 0.0:
            if rest_neighbour_edges(a[0], a[1], b[0], b[1], rest, panel, rest_radius):
                continue
        s, u, d = closest_points_edge_edge(p0, p1, points[b[0]], points[b[1]])
        if d < radius:
            slot = wp.atomic_add(ee_count, e, 1)
            if slot < capacity:
                ee_edge[e * capacity + slot] = f
            slot = wp.atomic_add(ee_count, f, 1)
            if slot < capacity:
                ee_edge[f * capacity + slot] = e
            dmin = wp.min(dmin, d)
            min_nonnegative(min_dist, b[0], d)
            min_nonnegative(min_dist, b[1], d)
    if dmin < radius:
        min_nonnegative(min_dist, a[0], dmin)
        min_nonnegative(min_dist, a[1], dmin)


@wp.func
def vertex_triangle_append(v: int, p: wp.vec3, wv: int, t: int, points: wp.array(dtype=wp.vec3),
                           tri_info: wp.array(dtype=wp.vec4i), tri_weld: wp.array(dtype=wp.vec4i),
                           rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rest_radius: float,
                           radius: float, over_face_cos: float, capacity: int, vt_count: wp.array(dtype=wp.int32),
                           vt_append: wp.array(dtype=wp.int32), min_dist: wp.array(dtype=float),
                           tv_capacity: int, tv_count: wp.array(dtype=wp.int32), tv_append: wp.array(dtype=wp.int32)):
    """Vertex v (at p, weld id wv) against candidate triangle t: the pair appended to v's list and to t's
    (``vt_count``, ``tv_count``: every pair counted, stored or not) and lowering the four ``min_dist`` when it
    is a contact (the tiled and grouped searches). Appending to t's list here, where an inversion of the vertex
    lists took a second pass until session 29 (session 33 on the CPU), lets t's list be ranked without waiting
    for the vertex lists' ranking."""
    w = tri_weld[t]
    if w[0] != wv and w[1] != wv and w[2] != wv:
        c = tri_info[t]
        a = points[c[0]]
        b = points[c[1]]
        g = points[c[2]]
        cp, bw = closest_point_triangle(p, a, b, g)
        d = wp.length(p - cp)
        keep = d < radius
        if keep and rest_radius > 0.0:
            if rest_neighbour_triangle(v, c[0], c[1], c[2], rest, panel, rest_radius):
                keep = False
                if over_face_cos > 0.0:  # a rest neighbour come over the face is a contact after all
                    n = wp.cross(b - a, g - a)
                    nn = wp.length(n)
                    if nn > 0.0 and wp.abs(wp.dot(p - cp, n)) >= over_face_cos * d * nn:
                        keep = True
        if keep:
            slot = wp.atomic_add(vt_count, v, 1)
            if slot < capacity:
                vt_append[v * capacity + slot] = t
            min_nonnegative(min_dist, v, d)
            min_nonnegative(min_dist, c[0], d)
            min_nonnegative(min_dist, c[1], d)
            min_nonnegative(min_dist, c[2], d)
            slot = wp.atomic_add(tv_count, t, 1)
            if slot < tv_capacity:
                tv_append[t * tv_capacity + slot] = v


@wp.func
def edge_edge_append(e: int, a: wp.vec4i, p0: wp.vec3, p1: wp.vec3, f: int, points: wp.array(dtype=wp.vec3),
                     edge_info: wp.array(dtype=wp.vec4i), rest: wp.array(dtype=wp.vec3),
                     panel: wp.array(dtype=wp.int32), rest_radius: float, radius: float, capacity: int,
                     ee_count: wp.array(dtype=wp.int32), ee_edge: wp.array(dtype=wp.int32),
                     min_dist: wp.array(dtype=float)):
    """Edge e (``a = edge_info[e]``, at p0, p1) against candidate f > e: the pair appended to both lists and
    lowering the four ``min_dist`` when it is a contact (the tiled and grouped searches)."""
    b = edge_info[f]
    if b[2] != a[2] and b[2] != a[3] and b[3] != a[2] and b[3] != a[3]:
        keep = True
        if rest_radius > 0.0:
            if rest_neighbour_edges(a[0], a[1], b[0], b[1], rest, panel, rest_radius):
                keep = False
        if keep:
            s, u, d = closest_points_edge_edge(p0, p1, points[b[0]], points[b[1]])
            if d < radius:
                slot = wp.atomic_add(ee_count, e, 1)
                if slot < capacity:
                    ee_edge[e * capacity + slot] = f
                slot = wp.atomic_add(ee_count, f, 1)
                if slot < capacity:
                    ee_edge[f * capacity + slot] = e
                min_nonnegative(min_dist, a[0], d)
                min_nonnegative(min_dist, a[1], d)
                min_nonnegative(min_dist, b[0], d)
                min_nonnegative(min_dist, b[1], d)


@wp.kernel(module="unique", enable_backward=False)  # launched tiled (TILE_LANES threads a block): a module of its own
def vertex_triangle_tiled_kernel(
    triangle_bvh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    tri_info: wp.array(dtype=wp.vec4i),
    tri_weld: wp.array(dtype=wp.vec4i),
    weld: wp.array(dtype=wp.int32),
    rest: wp.array(dtype=wp.vec3),
    panel: wp.array(dtype=wp.int32),
    rest_radius: float,
    radius: float,
    over_face_cos: float,
    capacity: int,
    tv_capacity: int,
    vt_count: wp.array(dtype=wp.int32),
    vt_append: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
    tv_count: wp.array(dtype=wp.int32),
    tv_append: wp.array(dtype=wp.int32),
):
    """:func:`vertex_triangle_kernel` with a block per vertex: the block's threads traverse the triangle BVH
    together (``wp.tile_bvh_query_aabb``) and each tests the candidates handed to it, appending the pairs to
    ``vt_append`` (``vt_count`` zeroed before: every pair counted, stored or not; put in order by
    ``rank_lists_warp_kernel``). The same pairs, tests and ``min_dist`` as the one-thread query. In a pile a vertex has
    tens of candidates, so one thread a query left an H200 latency bound (fold, 30 frames: 0.59 → 0.28 ms at
    N = 128, 4.4 → 1.5 ms at N = 256; ``benchmarks/detect_variants.py``)."""
    v, lane = wp.tid()
    p = points[v]
    wv = weld[v]
    query = wp.tile_bvh_query_aabb(triangle_bvh, p - wp.vec3(radius), p + wp.vec3(radius))
    while wp.tile_query_valid(query):
        t = wp.untile(wp.tile_bvh_query_next(query))
        if t >= 0:
            vertex_triangle_append(v, p, wv, t, points, tri_info, tri_weld, rest, panel, rest_radius, radius,
                                   over_face_cos, capacity, vt_count, vt_append, min_dist, tv_capacity, tv_count,
                                   tv_append)


@wp.kernel(module="unique", enable_backward=False)  # launched tiled (TILE_LANES threads a block): a module of its own
def edge_edge_tiled_kernel(
    edge_bvh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    edge_info: wp.array(dtype=wp.vec4i),
    rest: wp.array(dtype=wp.vec3),
    panel: wp.array(dtype=wp.int32),
    rest_radius: float,
    radius: float,
    capacity: int,
    ee_count: wp.array(dtype=wp.int32),
    ee_edge: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
):
    """:func:`edge_edge_kernel` with a block per edge traversing the edge BVH together, each thread testing the
    candidates handed to it (the endpoints and their weld ids in one load: ``edge_info``). Same pairs, lists
    and ``min_dist`` (fold, 30 frames: 1.77 → 0.84 ms at N = 128, 9.1 → 5.4 ms at N = 256; H200)."""
    e, lane = wp.tid()
    a = edge_info[e]
    p0 = points[a[0]]
    p1 = points[a[1]]
    query = wp.tile_bvh_query_aabb(edge_bvh, wp.min(p0, p1) - wp.vec3(radius), wp.max(p0, p1) + wp.vec3(radius))
    while wp.tile_query_valid(query):
        f = wp.untile(wp.tile_bvh_query_next(query))
        if f > e:  # each pair tested once, by its lower edge
            edge_edge_append(e, a, p0, p1, f, points, edge_info, rest, panel, rest_radius, radius, capacity,
                             ee_count, ee_edge, min_dist)


# --------------------------------------------------------------------------------------
# CUDA: one query per group of primitives that lie together in the rest shape


# primitives a grouped query searches for (SelfContactDetector's vt_order / ee_order: a Morton order of the rest
# shape). H200, piled fold, 20 frames (benchmarks/detect_variants.py, results/detect_variants_h200_s28_flip.*),
# one query a primitive against groups of 8 / 16 / 32 / 64: edge-edge 4.25 -> 2.20 / 2.36 / 3.37 / 6.14 ms at N = 256,
# 0.74 -> 0.38 / 0.63 / 1.17 / 2.55 ms at N = 128; vertex-triangle 1.09 -> 0.75 / 1.22 / 2.49 / 4.54 ms at N = 256,
# 0.22 -> 0.27 / 0.45 / 0.85 / 1.34 ms at N = 128
GROUP_SIZE = 8


@wp.func
def group_box(order: wp.array(dtype=wp.int32), g: int, group: int, lane: int, lanes: int,
              lowers: wp.array(dtype=wp.vec3), uppers: wp.array(dtype=wp.vec3), radius: float):
    """The box holding the query boxes (``lowers``/``uppers`` grown by ``radius``) of group g's primitives: each
    of the block's ``lanes`` threads bounds its share, then a block-wide min and max (6 reductions)."""
    rv = wp.vec3(radius)
    lo = wp.vec3(1.0e30)
    hi = wp.vec3(-1.0e30)
    s = lane
    while s < group:
        i = order[g * group + s]
        if i >= 0:
            lo = wp.min(lo, lowers[i] - rv)
            hi = wp.max(hi, uppers[i] + rv)
        s += lanes
    glo = wp.vec3(wp.tile_min(wp.tile(lo[0]))[0], wp.tile_min(wp.tile(lo[1]))[0], wp.tile_min(wp.tile(lo[2]))[0])
    ghi = wp.vec3(wp.tile_max(wp.tile(hi[0]))[0], wp.tile_max(wp.tile(hi[1]))[0], wp.tile_max(wp.tile(hi[2]))[0])
    return glo, ghi


@wp.func
def boxes_overlap(alo: wp.vec3, ahi: wp.vec3, blo: wp.vec3, bhi: wp.vec3):
    return not (alo[0] > bhi[0] or alo[1] > bhi[1] or alo[2] > bhi[2]
                or ahi[0] < blo[0] or ahi[1] < blo[1] or ahi[2] < blo[2])


@wp.kernel(module="unique", enable_backward=False)  # launched tiled (TILE_LANES threads a block): a module of its own
def vertex_triangle_group_kernel(
    triangle_bvh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    triangle_lowers: wp.array(dtype=wp.vec3),
    triangle_uppers: wp.array(dtype=wp.vec3),
    order: wp.array(dtype=wp.int32),
    group: int,
    lanes: int,
    tri_info: wp.array(dtype=wp.vec4i),
    tri_weld: wp.array(dtype=wp.vec4i),
    weld: wp.array(dtype=wp.int32),
    rest: wp.array(dtype=wp.vec3),
    panel: wp.array(dtype=wp.int32),
    rest_radius: float,
    radius: float,
    over_face_cos: float,
    capacity: int,
    tv_capacity: int,
    vt_count: wp.array(dtype=wp.int32),
    vt_append: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
    tv_count: wp.array(dtype=wp.int32),
    tv_append: wp.array(dtype=wp.int32),
):
    """The vertex–triangle search for a group of ``group`` vertices at a time (``order[g * group:(g + 1) *
    group]``, -1 padding; neighbours in the rest shape, so close together in any pose): the block traverses the
    triangle BVH once with the box of the group's query boxes, and each thread (``lanes`` of them) tests the
    candidate handed to it against every vertex of the group, their query boxes first, then as
    :func:`vertex_triangle_tiled_kernel` does. The same pairs, appends and ``min_dist``; one traversal for
    ``group`` vertices."""
    g, lane = wp.tid()
    rv = wp.vec3(radius)
    glo, ghi = group_box(order, g, group, lane, lanes, points, points, radius)
    query = wp.tile_bvh_query_aabb(triangle_bvh, glo, ghi)
    while wp.tile_query_valid(query):
        t = wp.untile(wp.tile_bvh_query_next(query))
        if t >= 0:
            tlo = triangle_lowers[t]
            thi = triangle_uppers[t]
            for k in range(group):
                v = order[g * group + k]
                if v >= 0:
                    p = points[v]
                    if boxes_overlap(p - rv, p + rv, tlo, thi):
                        vertex_triangle_append(v, p, weld[v], t, points, tri_info, tri_weld, rest, panel, rest_radius,
                                               radius, over_face_cos, capacity, vt_count, vt_append, min_dist,
                                               tv_capacity, tv_count, tv_append)


@wp.kernel(module="unique", enable_backward=False)  # launched tiled (TILE_LANES threads a block): a module of its own
def edge_edge_group_kernel(
    edge_bvh: wp.uint64,
    points: wp.array(dtype=wp.vec3),
    edge_lowers: wp.array(dtype=wp.vec3),
    edge_uppers: wp.array(dtype=wp.vec3),
    order: wp.array(dtype=wp.int32),
    group: int,
    lanes: int,
    edge_info: wp.array(dtype=wp.vec4i),
    rest: wp.array(dtype=wp.vec3),
    panel: wp.array(dtype=wp.int32),
    rest_radius: float,
    radius: float,
    capacity: int,
    ee_count: wp.array(dtype=wp.int32),
    ee_edge: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
):
    """The edge–edge search for a group of ``group`` edges at a time, as :func:`vertex_triangle_group_kernel`:
    one traversal of the edge BVH with the box of the group's query boxes, each thread testing its candidate
    against every edge of the group (boxes first, each pair by its lower edge), then as
    :func:`edge_edge_tiled_kernel`. The same pairs, appends and ``min_dist``."""
    g, lane = wp.tid()
    rv = wp.vec3(radius)
    glo, ghi = group_box(order, g, group, lane, lanes, edge_lowers, edge_uppers, radius)
    query = wp.tile_bvh_query_aabb(edge_bvh, glo, ghi)
    while wp.tile_query_valid(query):
        f = wp.untile(wp.tile_bvh_query_next(query))
        if f >= 0:
            flo = edge_lowers[f]
            fhi = edge_uppers[f]
            for k in range(group):
                e = order[g * group + k]
                if e >= 0 and f > e:
                    if boxes_overlap(edge_lowers[e] - rv, edge_uppers[e] + rv, flo, fhi):
                        a = edge_info[e]
                        edge_edge_append(e, a, points[a[0]], points[a[1]], f, points, edge_info, rest, panel,
                                         rest_radius, radius, capacity, ee_count, ee_edge, min_dist)

"""The self-contact search variants that ``detect_variants.py`` times beside clothsim's own kernels (one query a
thread with a box, sphere or capsule query, packed loads, a block a query, Morton-sorted launches, the float atomic
min): benchmark code only, each checked there against the solver's pairs."""

from __future__ import annotations

import warp as wp

import clothsim.collision.self_contact_kernels as det_kernels
from clothsim.collision.contact_funcs import closest_point_triangle, closest_points_edge_edge
from clothsim.collision.self_contact_kernels import (boxes_overlap, edge_pair_distance, group_box,
                                                     rest_neighbour_edges, rest_neighbour_triangle)

wp.set_module_options({"enable_backward": False})


@wp.func
def vt_pair(v: int, t: int, p: wp.vec3, wv: int, points: wp.array(dtype=wp.vec3), triangles: wp.array2d(dtype=wp.int32),
            weld: wp.array(dtype=wp.int32), rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32),
            rest_radius: float, radius: float):
    """vertex_triangle_kernel's test (no over-face rule): the distance, or -1 when the pair is left out."""
    i0 = triangles[t, 0]
    i1 = triangles[t, 1]
    i2 = triangles[t, 2]
    if weld[i0] == wv or weld[i1] == wv or weld[i2] == wv:
        return -1.0
    cp, w = closest_point_triangle(p, points[i0], points[i1], points[i2])
    d = wp.length(p - cp)
    if d < radius and rest_radius > 0.0:
        if rest_neighbour_triangle(v, i0, i1, i2, rest, panel, rest_radius):
            return -1.0
    return d


@wp.func
def ee_record(e: int, f: int, d: float, radius: float, cap: int, count: wp.array(dtype=wp.int32),
              items: wp.array(dtype=wp.int32)):
    if d >= 0.0 and d < radius:
        slot = wp.atomic_add(count, e, 1)
        if slot < cap:
            items[e * cap + slot] = f
        slot = wp.atomic_add(count, f, 1)
        if slot < cap:
            items[f * cap + slot] = e


@wp.func
def vt_record(v: int, t: int, d: float, radius: float, cap: int, count: wp.array(dtype=wp.int32),
              items: wp.array(dtype=wp.int32)):
    if d >= 0.0 and d < radius:
        slot = wp.atomic_add(count, v, 1)
        if slot < cap:
            items[v * cap + slot] = t


@wp.kernel
def ee_box(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), edges: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32),
           packed: wp.array(dtype=wp.vec4i),
           rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
           count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    e = wp.tid()
    i0 = edges[e, 0]
    i1 = edges[e, 1]
    p0 = points[i0]
    p1 = points[i1]
    q = wp.bvh_query_aabb(bvh, wp.min(p0, p1) - wp.vec3(r), wp.max(p0, p1) + wp.vec3(r))
    f = int(0)
    while wp.bvh_query_next(q, f):
        d, j0, j1 = edge_pair_distance(e, f, wp.vec4i(i0, i1, weld[i0], weld[i1]), p0, p1, points, packed, rest,
                                       panel, rr)
        ee_record(e, f, d, r, cap, count, items)


@wp.kernel
def ee_capsule(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), edges: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32),
           packed: wp.array(dtype=wp.vec4i),
               rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
               count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    e = wp.tid()
    i0 = edges[e, 0]
    i1 = edges[e, 1]
    p0 = points[i0]
    p1 = points[i1]
    q = wp.bvh_query_capsule(bvh, p0, p1 - p0, r)
    f = int(0)
    while wp.bvh_query_next(q, f, 1.0):
        d, j0, j1 = edge_pair_distance(e, f, wp.vec4i(i0, i1, weld[i0], weld[i1]), p0, p1, points, packed, rest,
                                       panel, rr)
        ee_record(e, f, d, r, cap, count, items)


@wp.kernel
def pack_edges(edges: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32), packed: wp.array(dtype=wp.vec4i)):
    e = wp.tid()
    packed[e] = wp.vec4i(edges[e, 0], edges[e, 1], weld[edges[e, 0]], weld[edges[e, 1]])


@wp.kernel
def ee_packed(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), packed: wp.array(dtype=wp.vec4i),
              rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
              count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    e = wp.tid()
    a = packed[e]
    p0 = points[a[0]]
    p1 = points[a[1]]
    q = wp.bvh_query_aabb(bvh, wp.min(p0, p1) - wp.vec3(r), wp.max(p0, p1) + wp.vec3(r))
    f = int(0)
    while wp.bvh_query_next(q, f):
        if f <= e:
            continue
        b = packed[f]
        if b[2] == a[2] or b[2] == a[3] or b[3] == a[2] or b[3] == a[3]:
            continue
        if rr > 0.0:
            if rest_neighbour_edges(a[0], a[1], b[0], b[1], rest, panel, rr):
                continue
        s, u, d = closest_points_edge_edge(p0, p1, points[b[0]], points[b[1]])
        ee_record(e, f, d, r, cap, count, items)


@wp.kernel
def ee_tiled(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), edges: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32),
           packed: wp.array(dtype=wp.vec4i),
             rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
             count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    e, lane = wp.tid()
    i0 = edges[e, 0]
    i1 = edges[e, 1]
    p0 = points[i0]
    p1 = points[i1]
    q = wp.tile_bvh_query_aabb(bvh, wp.min(p0, p1) - wp.vec3(r), wp.max(p0, p1) + wp.vec3(r))
    while wp.tile_query_valid(q):
        f = wp.untile(wp.tile_bvh_query_next(q))
        if f >= 0:
            d, j0, j1 = edge_pair_distance(e, f, wp.vec4i(i0, i1, weld[i0], weld[i1]), p0, p1, points, packed, rest,
                                           panel, rr)
            ee_record(e, f, d, r, cap, count, items)


@wp.kernel(module="unique", enable_backward=False)
def vt_thread_append(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), tri_info: wp.array(dtype=wp.vec4i),
                     tri_weld: wp.array(dtype=wp.vec4i), weld: wp.array(dtype=wp.int32), rest: wp.array(dtype=wp.vec3),
                     panel: wp.array(dtype=wp.int32), rr: float, r: float, over_face_cos: float, cap: int, tv_cap: int,
                     vt_count: wp.array(dtype=wp.int32), vt_append: wp.array(dtype=wp.int32),
                     min_dist: wp.array(dtype=float), tv_count: wp.array(dtype=wp.int32),
                     tv_append: wp.array(dtype=wp.int32)):
    """Session 33: clothsim's grouped search's test and appends (both lists, min_dist) with one thread a vertex
    and its own traversal, as Newton's ``vertex_triangle_collision_detection_kernel`` runs its query."""
    v = wp.tid()
    p = points[v]
    wv = weld[v]
    q = wp.bvh_query_aabb(bvh, p - wp.vec3(r), p + wp.vec3(r))
    t = int(0)
    while wp.bvh_query_next(q, t):
        det_kernels.vertex_triangle_append(v, p, wv, t, points, tri_info, tri_weld, rest, panel, rr, r, over_face_cos,
                                           cap, vt_count, vt_append, min_dist, tv_cap, tv_count, tv_append)


@wp.kernel
def vt_box(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), triangles: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32),
           rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
           count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    v = wp.tid()
    p = points[v]
    q = wp.bvh_query_aabb(bvh, p - wp.vec3(r), p + wp.vec3(r))
    t = int(0)
    wv = weld[v]
    while wp.bvh_query_next(q, t):
        vt_record(v, t, vt_pair(v, t, p, wv, points, triangles, weld, rest, panel, rr, r), r, cap, count, items)


@wp.kernel
def vt_sphere(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), triangles: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32),
              rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
              count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    v = wp.tid()
    p = points[v]
    q = wp.bvh_query_sphere(bvh, p, r)
    t = int(0)
    wv = weld[v]
    while wp.bvh_query_next(q, t):
        vt_record(v, t, vt_pair(v, t, p, wv, points, triangles, weld, rest, panel, rr, r), r, cap, count, items)


@wp.kernel
def vt_tiled(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), triangles: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32),
             rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
             count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    v, lane = wp.tid()
    p = points[v]
    wv = weld[v]
    q = wp.tile_bvh_query_aabb(bvh, p - wp.vec3(r), p + wp.vec3(r))
    while wp.tile_query_valid(q):
        t = wp.untile(wp.tile_bvh_query_next(q))
        if t >= 0:
            vt_record(v, t, vt_pair(v, t, p, wv, points, triangles, weld, rest, panel, rr, r), r, cap, count, items)


@wp.kernel
def ee_tiled_packed(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), packed: wp.array(dtype=wp.vec4i),
                    rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
                    count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    e, lane = wp.tid()
    a = packed[e]
    p0 = points[a[0]]
    p1 = points[a[1]]
    q = wp.tile_bvh_query_aabb(bvh, wp.min(p0, p1) - wp.vec3(r), wp.max(p0, p1) + wp.vec3(r))
    while wp.tile_query_valid(q):
        f = wp.untile(wp.tile_bvh_query_next(q))
        if f > e:
            b = packed[f]
            if b[2] != a[2] and b[2] != a[3] and b[3] != a[2] and b[3] != a[3]:
                keep = True
                if rr > 0.0:
                    if rest_neighbour_edges(a[0], a[1], b[0], b[1], rest, panel, rr):
                        keep = False
                if keep:
                    s, u, d = closest_points_edge_edge(p0, p1, points[b[0]], points[b[1]])
                    ee_record(e, f, d, r, cap, count, items)


@wp.kernel
def pack_triangles(triangles: wp.array2d(dtype=wp.int32), weld: wp.array(dtype=wp.int32), tri4: wp.array(dtype=wp.vec4i),
                   weld4: wp.array(dtype=wp.vec4i)):
    t = wp.tid()
    tri4[t] = wp.vec4i(triangles[t, 0], triangles[t, 1], triangles[t, 2], 0)
    weld4[t] = wp.vec4i(weld[triangles[t, 0]], weld[triangles[t, 1]], weld[triangles[t, 2]], 0)


@wp.kernel
def vt_tiled_packed(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), tri4: wp.array(dtype=wp.vec4i),
                    weld4: wp.array(dtype=wp.vec4i), weld: wp.array(dtype=wp.int32),
                    rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
                    count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    v, lane = wp.tid()
    p = points[v]
    wv = weld[v]
    q = wp.tile_bvh_query_aabb(bvh, p - wp.vec3(r), p + wp.vec3(r))
    while wp.tile_query_valid(q):
        t = wp.untile(wp.tile_bvh_query_next(q))
        if t >= 0:
            w = weld4[t]
            if w[0] != wv and w[1] != wv and w[2] != wv:
                c = tri4[t]
                cp, bw = closest_point_triangle(p, points[c[0]], points[c[1]], points[c[2]])
                d = wp.length(p - cp)
                if d < r and rr > 0.0:
                    if rest_neighbour_triangle(v, c[0], c[1], c[2], rest, panel, rr):
                        d = -1.0
                vt_record(v, t, d, r, cap, count, items)


@wp.kernel
def ee_tiled_sorted(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), packed: wp.array(dtype=wp.vec4i),
                    order: wp.array(dtype=wp.int32),
                    rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
                    count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    """ee_tiled_packed with the blocks launched along a Morton curve of the rest shape (``order``)."""
    b, lane = wp.tid()
    e = order[b]
    a = packed[e]
    p0 = points[a[0]]
    p1 = points[a[1]]
    q = wp.tile_bvh_query_aabb(bvh, wp.min(p0, p1) - wp.vec3(r), wp.max(p0, p1) + wp.vec3(r))
    while wp.tile_query_valid(q):
        f = wp.untile(wp.tile_bvh_query_next(q))
        if f >= 0:
            d, j0, j1 = edge_pair_distance(e, f, a, p0, p1, points, packed, rest, panel, rr)
            ee_record(e, f, d, r, cap, count, items)


@wp.kernel
def vt_tiled_sorted(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), triangles: wp.array2d(dtype=wp.int32),
                    weld: wp.array(dtype=wp.int32), order: wp.array(dtype=wp.int32),
                    rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32), rr: float, r: float, cap: int,
                    count: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32)):
    """vt_tiled with the blocks launched along a Morton curve of the rest shape (``order``)."""
    b, lane = wp.tid()
    v = order[b]
    p = points[v]
    wv = weld[v]
    q = wp.tile_bvh_query_aabb(bvh, p - wp.vec3(r), p + wp.vec3(r))
    while wp.tile_query_valid(q):
        t = wp.untile(wp.tile_bvh_query_next(q))
        if t >= 0:
            vt_record(v, t, vt_pair(v, t, p, wv, points, triangles, weld, rest, panel, rr, r), r, cap, count, items)


@wp.kernel
def ee_group_floatmin(bvh: wp.uint64, points: wp.array(dtype=wp.vec3), lowers: wp.array(dtype=wp.vec3),
                    uppers: wp.array(dtype=wp.vec3), order: wp.array(dtype=wp.int32), group: int, lanes: int,
                    edge_info: wp.array(dtype=wp.vec4i), rest: wp.array(dtype=wp.vec3), panel: wp.array(dtype=wp.int32),
                    rest_radius: float, radius: float, capacity: int, ee_count: wp.array(dtype=wp.int32),
                    ee_edge: wp.array(dtype=wp.int32), min_dist: wp.array(dtype=float)):
    """clothsim's edge_edge_group_kernel with min_dist lowered by Warp's float atomic_min (a compare-and-swap loop),
    as it was until session 29; clothsim's lowers it by ``min_nonnegative`` (the same lists and min_dist)."""
    g, lane = wp.tid()
    rv = wp.vec3(radius)
    glo, ghi = group_box(order, g, group, lane, lanes, lowers, uppers, radius)
    q = wp.tile_bvh_query_aabb(bvh, glo, ghi)
    while wp.tile_query_valid(q):
        f = wp.untile(wp.tile_bvh_query_next(q))
        if f >= 0:
            flo = lowers[f]
            fhi = uppers[f]
            for k in range(group):
                e = order[g * group + k]
                if e >= 0 and f > e:
                    if boxes_overlap(lowers[e] - rv, uppers[e] + rv, flo, fhi):
                        a = edge_info[e]
                        d, j0, j1 = edge_pair_distance(e, f, a, points[a[0]], points[a[1]], points, edge_info, rest,
                                                       panel, rest_radius)
                        if d >= 0.0 and d < radius:
                            slot = wp.atomic_add(ee_count, e, 1)
                            if slot < capacity:
                                ee_edge[e * capacity + slot] = f
                            slot = wp.atomic_add(ee_count, f, 1)
                            if slot < capacity:
                                ee_edge[f * capacity + slot] = e
                            wp.atomic_min(min_dist, a[0], d)
                            wp.atomic_min(min_dist, a[1], d)
                            wp.atomic_min(min_dist, j0, d)
                            wp.atomic_min(min_dist, j1, d)

"""Contact blocks of the VBD vertex solve: penalty planes (ground, collider vertex contacts, collider
feature pairs), self-contact pairs, and the planes a trial step would cross (see kernels.vertex_update).
Warp functions only, called from the solve kernels in kernels.py."""

import warp as wp

from ..collision.contact_funcs import (
    closest_point_triangle,
    closest_points_edge_edge,
    ee_contact_force_hessian,
    vt_contact_force_hessian,
)


@wp.func
def contact_plane(
    x: wp.vec3, x_prev: wp.vec3, point: wp.vec3, normal: wp.vec3, wall_vel: wp.vec3,
    r: float, kc: float, mu: float, h: float, eps_u: float, kd: float,
):
    """Penalty ½·kc·(r − d)² against the plane (point, normal), d = (x − point)·normal, plus friction
    and normal damping.

    Damping: −kd·v_n·n on the normal velocity relative to the wall, v_n = ((x − x_prev)/h − wall_vel)·n,
    while in contact (kd = kc·β [N·s/m], β the contact damping time), so a contact does not ring.

    Friction is Coulomb with the normal force λ = kc·(r − d), on the tangential displacement over the
    substep relative to the wall, smoothed below eps_u·h (IPC-style), with a PSD Hessian.
    """
    f = wp.vec3(0.0)
    H = wp.mat33(0.0)
    d = wp.dot(x - point, normal)
    if d < r:
        pen = r - d
        lam = kc * pen
        du = (x - x_prev) - wall_vel * h
        f = (lam - kd * wp.dot(du, normal) / h) * normal
        H = (kc + kd / h) * wp.outer(normal, normal)
        if mu > 0.0:
            ut = du - wp.dot(du, normal) * normal
            ul = wp.length(ut)
            thr = eps_u * h
            scale = mu * lam / wp.max(ul, thr)
            f = f - scale * ut
            T = wp.identity(n=3, dtype=float) - wp.outer(normal, normal)
            H = H + scale * T
    return f, H


@wp.func
def collider_vertex_pair(k: int, ids: wp.vec3i, x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3),
                         cp: wp.vec3):
    """A collider vertex cp against cloth triangle ids: the triangle's closest point now and at the substep
    start (same weights), and corner k's weight."""
    qc, bw = closest_point_triangle(cp, x[ids[0]], x[ids[1]], x[ids[2]])
    q_prev = bw[0] * x_prev[ids[0]] + bw[1] * x_prev[ids[1]] + bw[2] * x_prev[ids[2]]
    return qc, q_prev, bw[k]


@wp.func
def collider_edge_pair(k: int, ea: wp.vec2i, x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3),
                       c0: wp.vec3, c1: wp.vec3):
    """A collider edge (c0, c1) against cloth edge ea: the cloth edge's closest point now and at the
    substep start, end k's weight, and the collider edge's parameter."""
    se, ue, dist = closest_points_edge_edge(x[ea[0]], x[ea[1]], c0, c1)
    wk = 1.0 - se
    if k == 1:
        wk = se
    return wp.lerp(x[ea[0]], x[ea[1]], se), wp.lerp(x_prev[ea[0]], x_prev[ea[1]], se), wk, ue


@wp.func
def edge_pair_plane(w: wp.vec3, nt: wp.vec4, r: float):
    """Contact normal and force weight of a cloth edge against a collider edge: w = cloth closest point −
    collider closest point, nt = the collider edge's (outward normal n, tan of its half turn t) from
    :func:`clothsim.solver.collider_contacts.collider_edge_normals_kernel` (t = tan of a ridge's half turn, 0 for
    a crease), r the contact thickness [m]. Seen along the edge, w has a = w·n along n and b = |w − a·n| across.

    * The cloth edge has crossed the collider edge: w is inside the collider's wedge (below both face planes,
      a < −t·b) and within the cone under the edge, b < |a| + r: normal n, so the pair's distance is a (< 0) and
      the cloth is pushed back out along n (one-sided).
    * Otherwise w's direction, weight 1: the pair's distance is the edges' distance |w|.

    The plane along n alone was unbounded: a cloth edge lying beside a ridge of the arm, over the next face and
    2.5 mm clear of it, sat below the tilted plane, was pushed off it and fell back every substep (a sleeve-hem
    vertex ringing at 0.2 m/s held the 20 mm T-shirt's residual at the threshold; tests/test_collision_mesh_collider.py
    has the prism case). The cone keeps the plane to where the edge itself is crossed: on a convex body a point of
    the surface itself, a centimetre past a ridge (pairs are listed up to the contact margin away), is below both
    face planes of that ridge, by b·t and more, and the plane would push it out by that much (reasoned; not seen
    in a drape).

    The plane's weight fades toward whichever boundary of wedge and cone is nearer: with s = max(b/(r − a),
    t·b/(−a)) (1 on the cone's edge, 1 on a face plane) it goes from 1 at s = 0.5 to 0 at s = 1 (a smoothstep).
    With a hard edge two hem vertices of the 20 mm T-shirt popped there by 0.5-0.75 mm (2-core CPU, fine-only
    drape settled at frame 54; 44 with the fade). So the push is continuous where the cone ends (a mild ridge:
    there the edges' distance is beyond r). On a sharp ridge (t > ~1, a box) a face plane comes first, and past
    it the edges' distance pushes from r − |w| on where |w| < r: a contact switching on at the body's surface,
    as any does. Handing the plane over to that push instead (blending the two) pushed points inside the wedge
    inward along w and let the moving box of tests/test_contacts.py cut the cloth (8 crossings); a fade over a
    band outside the cone let a vertex 14.6 mm into it."""
    n = wp.vec3(nt[0], nt[1], nt[2])
    a = wp.dot(w, n)
    b = wp.length(w - a * n)
    wl = wp.length(w)
    if wl < 1.0e-12:
        return n, 1.0
    if a < -nt[3] * b and b < r - a:
        s = wp.max(b / (r - a), nt[3] * b / (-a))   # a < 0 here: the wedge is below the ridge
        u = wp.clamp(2.0 * s - 1.0, 0.0, 1.0)
        return n, 1.0 - u * u * (3.0 - 2.0 * u)
    return w / wl, 1.0


@wp.func
def partner(j: int, own: int, vertex_color: wp.array(dtype=wp.int32), x: wp.array(dtype=wp.vec3),
            x_iter: wp.array(dtype=wp.vec3)):
    """Self-contact partner j of a vertex of colour ``own``: its position (at the iteration's start if it
    has the same colour: it is being solved at the same time) and 1 if it has, else 0."""
    if vertex_color[j] == own:
        return x_iter[j], 1
    return x[j], 0


@wp.func
def vertex_pair_contacts(
    i: int, lane: int, lanes: int,
    x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3),
    tri: wp.array(dtype=wp.vec3i), v_tri_offsets: wp.array(dtype=wp.int32), v_tri: wp.array(dtype=wp.int32),
    edges: wp.array(dtype=wp.vec2i), v_edge_offsets: wp.array(dtype=wp.int32), v_edge: wp.array(dtype=wp.int32),
    r: float, kc: float, mu: float, h: float, friction_eps: float, kd: float,
    collider_enabled: int, cpts: wp.array(dtype=wp.vec3), cvel: wp.array(dtype=wp.vec3), cvn: wp.array(dtype=wp.vec3),
    cedges: wp.array2d(dtype=wp.int32), cen: wp.array(dtype=wp.vec4), kce: int, ce_count: wp.array(dtype=wp.int32),
    ce_edge: wp.array(dtype=wp.int32), kct: int, ct_count: wp.array(dtype=wp.int32), ct_vertex: wp.array(dtype=wp.int32),
    self_enabled: int, kv: int, kt: int, ke: int, vt_count: wp.array(dtype=wp.int32), vt_tri: wp.array(dtype=wp.int32),
    tv_count: wp.array(dtype=wp.int32), tv_vertex: wp.array(dtype=wp.int32), ee_count: wp.array(dtype=wp.int32),
    ee_edge: wp.array(dtype=wp.int32), vertex_color: wp.array(dtype=wp.int32), x_iter: wp.array(dtype=wp.vec3),
):
    """Contact blocks of vertex i from pair lists (collider features, self contact), this lane's share.

    The pairs are numbered in one running sequence over the vertex's triangles, edges and own list, and
    lane l evaluates pairs l, l + lanes, ... : the lanes share the pairs, not only the 6 triangles and 6
    edges (so a triangle with 30 pairs is not left to one lane while the others idle).

    Self-contact partners of i's own colour are read at the iteration's start and their pair's Hessian
    doubled (:func:`partner`; clothsim.solver.self_collision has why).
    """
    f = wp.vec3(0.0)
    H = wp.mat33(0.0)
    if collider_enabled == 0 and self_enabled == 0:
        return f, H  # no pair lists: skip the walk over the vertex's triangles and edges
    xi = x[i]
    xpi = x_prev[i]
    eps_h = friction_eps * h
    own = int(-2)
    if self_enabled != 0:
        own = vertex_color[i]
    q = int(0)  # running pair number
    # over the triangles i is a corner of: collider vertices and (self) cloth vertices touching them
    for a in range(v_tri_offsets[i], v_tri_offsets[i + 1]):
        code = v_tri[a]
        t = code // 3
        k = code - 3 * t
        ids = tri[t]
        if collider_enabled != 0:
            # plane through the collider vertex with its outward normal, on the triangle's closest point
            nc = ct_count[t]
            for b in range((lane - q % lanes + lanes) % lanes, nc, lanes):
                p = ct_vertex[t * kct + b]
                cp = cpts[p]
                qc, q_prev, wk = collider_vertex_pair(k, ids, x, x_prev, cp)
                if wk > 0.0:
                    fc, Hc = contact_plane(qc, q_prev, cp, cvn[p], cvel[p], r, kc, mu, h, friction_eps, kd)
                    f += wk * fc
                    H += (wk * wk) * Hc
            q += nc
        if self_enabled != 0:
            ns = tv_count[t]
            for b in range((lane - q % lanes + lanes) % lanes, ns, lanes):
                p = tv_vertex[t * kt + b]
                xp, same = partner(p, own, vertex_color, x, x_iter)
                fc, Hc = vt_contact_force_hessian(k + 1, xp, x[ids[0]], x[ids[1]], x[ids[2]],
                                                  x_prev[p], x_prev[ids[0]], x_prev[ids[1]], x_prev[ids[2]],
                                                  r, kc, mu, eps_h)
                f += fc
                H += float(1 + same) * Hc
            q += ns
    # over the edges i is an end of: collider edges and (self) cloth edges touching them
    for a in range(v_edge_offsets[i], v_edge_offsets[i + 1]):
        code = v_edge[a]
        e = code // 2
        k = code - 2 * e
        ea = edges[e]
        if collider_enabled != 0:
            # plane through the collider edge's closest point with the edge's outward normal
            nc = ce_count[e]
            for b in range((lane - q % lanes + lanes) % lanes, nc, lanes):
                g = ce_edge[e * kce + b]
                q0 = cedges[g, 0]
                q1 = cedges[g, 1]
                qc, q_prev, wk, ue = collider_edge_pair(k, ea, x, x_prev, cpts[q0], cpts[q1])
                if wk > 0.0:
                    cq = wp.lerp(cpts[q0], cpts[q1], ue)
                    npl, fade = edge_pair_plane(qc - cq, cen[g], r)
                    fc, Hc = contact_plane(qc, q_prev, cq, npl, wp.lerp(cvel[q0], cvel[q1], ue), r, kc, mu, h,
                                           friction_eps, kd)
                    f += (fade * wk) * fc
                    H += (fade * wk * wk) * Hc
            q += nc
        if self_enabled != 0:
            ns = ee_count[e]
            for b in range((lane - q % lanes + lanes) % lanes, ns, lanes):
                eb = edges[ee_edge[e * ke + b]]
                xb0, s0 = partner(eb[0], own, vertex_color, x, x_iter)
                xb1, s1 = partner(eb[1], own, vertex_color, x, x_iter)
                fc, Hc = ee_contact_force_hessian(k, x[ea[0]], x[ea[1]], xb0, xb1,
                                                  x_prev[ea[0]], x_prev[ea[1]], x_prev[eb[0]], x_prev[eb[1]],
                                                  r, kc, mu, eps_h)
                f += fc
                H += float(1 + wp.max(s0, s1)) * Hc
            q += ns
    # i as the point of vertex-triangle pairs (self)
    if self_enabled != 0:
        for a in range((lane - q % lanes + lanes) % lanes, vt_count[i], lanes):
            t = vt_tri[i * kv + a]
            ids = tri[t]
            x0, s0 = partner(ids[0], own, vertex_color, x, x_iter)
            x1, s1 = partner(ids[1], own, vertex_color, x, x_iter)
            x2, s2 = partner(ids[2], own, vertex_color, x, x_iter)
            fc, Hc = vt_contact_force_hessian(0, xi, x0, x1, x2,
                                              xpi, x_prev[ids[0]], x_prev[ids[1]], x_prev[ids[2]], r, kc, mu, eps_h)
            f += fc
            H += float(1 + wp.max(wp.max(s0, s1), s2)) * Hc
    return f, H


@wp.func
def crossing_plane(
    xi: wp.vec3, xpi: wp.vec3, xn: wp.vec3, point: wp.vec3, normal: wp.vec3, wall_vel: wp.vec3,
    r: float, kc: float, h: float, kd: float,
):
    """The contact plane (point, normal) as an active quadratic at x_i, if x_i is clear of it (d ≥ r) but
    the step to xn crosses it (d < r); else zero. Force and Hessian as in :func:`contact_plane` without
    friction (the normal force at x_i is ≤ 0)."""
    f = wp.vec3(0.0)
    H = wp.mat33(0.0)
    d0 = wp.dot(xi - point, normal)
    if d0 >= r and wp.dot(xn - point, normal) < r:
        du = (xi - xpi) - wall_vel * h
        f = (kc * (r - d0) - kd * wp.dot(du, normal) / h) * normal
        H = (kc + kd / h) * wp.outer(normal, normal)
    return f, H


@wp.func
def collider_pair_crossings(
    i: int, lane: int, lanes: int, dx: wp.vec3,
    x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3),
    tri: wp.array(dtype=wp.vec3i), v_tri_offsets: wp.array(dtype=wp.int32), v_tri: wp.array(dtype=wp.int32),
    edges: wp.array(dtype=wp.vec2i), v_edge_offsets: wp.array(dtype=wp.int32), v_edge: wp.array(dtype=wp.int32),
    r: float, kc: float, h: float, kd: float,
    cpts: wp.array(dtype=wp.vec3), cvel: wp.array(dtype=wp.vec3), cvn: wp.array(dtype=wp.vec3),
    cedges: wp.array2d(dtype=wp.int32), cen: wp.array(dtype=wp.vec4), kce: int, ce_count: wp.array(dtype=wp.int32),
    ce_edge: wp.array(dtype=wp.int32), kct: int, ct_count: wp.array(dtype=wp.int32), ct_vertex: wp.array(dtype=wp.int32),
):
    """Collider feature planes that vertex i's trial step dx crosses: clear at x (d ≥ r), crossed at the
    feature's closest point moved by w_k·dx (d < r); each as an active quadratic linearised at x, weighted
    as in :func:`vertex_pair_contacts`, this lane's share. See :func:`vertex_update` for why."""
    f = wp.vec3(0.0)
    H = wp.mat33(0.0)
    q = int(0)
    for a in range(v_tri_offsets[i], v_tri_offsets[i + 1]):
        code = v_tri[a]
        t = code // 3
        k = code - 3 * t
        ids = tri[t]
        nc = ct_count[t]
        for b in range((lane - q % lanes + lanes) % lanes, nc, lanes):
            p = ct_vertex[t * kct + b]
            cp = cpts[p]
            qc, q_prev, wk = collider_vertex_pair(k, ids, x, x_prev, cp)
            if wk > 0.0:
                fc, Hc = crossing_plane(qc, q_prev, qc + wk * dx, cp, cvn[p], cvel[p], r, kc, h, kd)
                f += wk * fc
                H += (wk * wk) * Hc
        q += nc
    for a in range(v_edge_offsets[i], v_edge_offsets[i + 1]):
        code = v_edge[a]
        e = code // 2
        k = code - 2 * e
        ea = edges[e]
        nc = ce_count[e]
        for b in range((lane - q % lanes + lanes) % lanes, nc, lanes):
            g = ce_edge[e * kce + b]
            q0 = cedges[g, 0]
            q1 = cedges[g, 1]
            qc, q_prev, wk, ue = collider_edge_pair(k, ea, x, x_prev, cpts[q0], cpts[q1])
            if wk > 0.0:
                cq = wp.lerp(cpts[q0], cpts[q1], ue)
                npl, fade = edge_pair_plane(qc - cq, cen[g], r)
                fc, Hc = crossing_plane(qc, q_prev, qc + wk * dx, cq, npl, wp.lerp(cvel[q0], cvel[q1], ue), r, kc,
                                        h, kd)
                f += (fade * wk) * fc
                H += (fade * wk * wk) * Hc
        q += nc
    return f, H

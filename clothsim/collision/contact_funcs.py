"""Contact building blocks (``@wp.func``) that the VBD solver calls per vertex.

All quantities SI, float32: positions [m], stiffness k [N/m], contact thickness r [m],
friction coefficient mu [-], friction smoothing eps_u [m] (= eps_v · dt, a displacement).

Contact model (He Chen et al. 2024, VBD; friction after Li et al. 2020, IPC):

* a contact pairs two closest points, c_p on one primitive and c_q on the other, both affine
  in the primitive's vertices: ``c_p - c_q = Σ_j β_j x_j``. The roles and weights are
  vertex–triangle (point p vs triangle abc with barycentric w of the closest point):
  role 0 = p (β = 1), roles 1..3 = a, b, c (β = −w_a, −w_b, −w_c);
  edge–edge (p0p1 vs q0q1 with closest parameters s, t): roles 0..3 = p0, p1, q0, q1
  (β = 1−s, s, −(1−t), −t).
* distance d = |c_p − c_q|, normal n = (c_p − c_q)/d. Energy E = ½ k (r − d)² for d < r, else 0.
  Force on role j: F_j = −∂E/∂x_j = β_j λ n with λ = k (r − d) (the closest-point parameters
  are held at their optimum, which is exact for the gradient). Hessian block: β_j² k n nᵀ, the
  Gauss–Newton part (the dropped term −λ β_j² ∂²d/∂x² is negative semidefinite), so PSD.
* lagged friction: u = Σ_j β_j (x_j − x_j_prev), the relative displacement of the two closest
  points over the step (x_prev = positions at the start of the step, same β); its tangential
  part u_t = (I − n nᵀ) u, y = |u_t|. Dissipative potential D = μ λ f0(y) with IPC's C1
  mollifier f1(y) = f0'(y) = 2y/ε − y²/ε² for y < ε, 1 otherwise (ε = eps_u). Force on role j:
  −β_j μ λ f1(y)/y u_t; Hessian block β_j² μ λ f1(y)/y (I − n nᵀ) (PSD; f1(y)/y → 2/ε at y = 0).
  λ and n are taken from the current iterate and treated as constants (lagged).

Degenerate cases: if d < 1e-3 r (where the direction c_p − c_q is float32 round-off) the normal falls back to the triangle normal (vertex–
triangle) or the edges' common normal (edge–edge), oriented to the side the pair was on at the
start of the step; if that is undefined too (parallel coincident edges) the contact is zero.
"""

from __future__ import annotations

import warp as wp

_NORMAL_EPS_REL = wp.constant(1.0e-3)  # below d = 1e-3 r the direction c_p - c_q is float32 noise


# --------------------------------------------------------------------------------------
# closest points


@wp.func
def closest_point_triangle(p: wp.vec3, a: wp.vec3, b: wp.vec3, c: wp.vec3):
    """Closest point of the closed triangle abc to p (Ericson, Real-Time Collision Detection 5.1.5).

    Returns (point [m], barycentric weights vec3(w_a, w_b, w_c), which sum to 1).
    A zero-area triangle returns its closest vertex or edge point.
    """
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return a, wp.vec3(1.0, 0.0, 0.0)
    bp = p - b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return b, wp.vec3(0.0, 1.0, 0.0)
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
        v = d1 / (d1 - d3)
        return a + v * ab, wp.vec3(1.0 - v, v, 0.0)
    cp = p - c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return c, wp.vec3(0.0, 0.0, 1.0)
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0 and d2 - d6 > 0.0:
        w = d2 / (d2 - d6)
        return a + w * ac, wp.vec3(1.0 - w, 0.0, w)
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0 and (d4 - d3) + (d5 - d6) > 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return b + w * (c - b), wp.vec3(0.0, 1.0 - w, w)
    s = va + vb + vc
    if s <= 0.0:
        # zero-area triangle that none of the region tests resolved: nearest vertex
        da = wp.length_sq(p - a)
        db = wp.length_sq(p - b)
        dc = wp.length_sq(p - c)
        if da <= db and da <= dc:
            return a, wp.vec3(1.0, 0.0, 0.0)
        if db <= dc:
            return b, wp.vec3(0.0, 1.0, 0.0)
        return c, wp.vec3(0.0, 0.0, 1.0)
    # s is the squared double area: on a crushed triangle (a folded pile presses some flat) it is a
    # difference of rounded products and the quotients can leave [0, 1] by far; kept in the simplex, the
    # weights (the contact force's shares) stay bounded
    v = wp.clamp(vb / s, 0.0, 1.0)
    w = wp.clamp(vc / s, 0.0, 1.0 - v)
    return a + ab * v + ac * w, wp.vec3(1.0 - v - w, v, w)


@wp.func
def closest_points_edge_edge(p0: wp.vec3, p1: wp.vec3, q0: wp.vec3, q1: wp.vec3):
    """Closest points of the segments p0p1 and q0q1 (Ericson 5.1.9, with parallel handling).

    Returns (s, t, distance [m]) with the closest points p0 + s (p1 − p0) and q0 + t (q1 − q0),
    s, t in [0, 1]. For (nearly, sin² < 1e-6) parallel segments whose projections overlap, s is
    the middle of the overlap, so the contact point moves continuously; zero-length segments work.
    """
    d1 = p1 - p0
    d2 = q1 - q0
    rr = p0 - q0
    a = wp.dot(d1, d1)
    e = wp.dot(d2, d2)
    f = wp.dot(d2, rr)
    s = float(0.0)
    t = float(0.0)
    if a <= 1.0e-20 and e <= 1.0e-20:
        s = 0.0
        t = 0.0
    elif a <= 1.0e-20:
        s = 0.0
        t = wp.clamp(f / e, 0.0, 1.0)
    else:
        c = wp.dot(d1, rr)
        if e <= 1.0e-20:
            t = 0.0
            s = wp.clamp(-c / a, 0.0, 1.0)
        else:
            b = wp.dot(d1, d2)
            denom = a * e - b * b
            if denom > 1.0e-6 * a * e:
                s = wp.clamp((b * f - c * e) / denom, 0.0, 1.0)
            else:
                # parallel: middle of the overlap of q's projection onto p's line, clamped to [0, 1]
                sq0 = -c / a
                sq1 = (b - c) / a
                lo = wp.max(wp.min(sq0, sq1), 0.0)
                hi = wp.min(wp.max(sq0, sq1), 1.0)
                if lo <= hi:
                    s = 0.5 * (lo + hi)
                elif hi < 0.0:
                    s = 0.0
                else:
                    s = 1.0
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = wp.clamp(-c / a, 0.0, 1.0)
            elif t > 1.0:
                t = 1.0
                s = wp.clamp((b - c) / a, 0.0, 1.0)
    dist = wp.length((p0 + s * d1) - (q0 + t * d2))
    return s, t, dist


# --------------------------------------------------------------------------------------
# energy, friction mollifier


@wp.func
def contact_energy(d: float, r: float, k: float) -> float:
    """E = ½ k (r − d)² for d < r, else 0 [J]."""
    if d >= r:
        return 0.0
    return 0.5 * k * (r - d) * (r - d)


@wp.func
def friction_f0(y: float, eps_u: float) -> float:
    """IPC friction potential mollifier f0 (f0' = f1, f0(ε) = ε): −y³/(3ε²) + y²/ε + ε/3 for y < ε, y else."""
    if y >= eps_u:
        return y
    return -y * y * y / (3.0 * eps_u * eps_u) + y * y / eps_u + eps_u / 3.0


@wp.func
def friction_f1_over_y(y: float, eps_u: float) -> float:
    """f1(y)/y with f1(y) = 2y/ε − y²/ε² for y < ε, 1 else; finite (2/ε) at y = 0."""
    if y >= eps_u:
        return 1.0 / y
    return (2.0 - y / eps_u) / eps_u


@wp.func
def vt_contact_energy(p: wp.vec3, a: wp.vec3, b: wp.vec3, c: wp.vec3, r: float, k: float) -> float:
    """Vertex–triangle contact energy ½ k (r − d)² [J], d = distance from p to triangle abc."""
    cp, w = closest_point_triangle(p, a, b, c)
    return contact_energy(wp.length(p - cp), r, k)


@wp.func
def ee_contact_energy(p0: wp.vec3, p1: wp.vec3, q0: wp.vec3, q1: wp.vec3, r: float, k: float) -> float:
    """Edge–edge contact energy ½ k (r − d)² [J], d = distance between segments p0p1 and q0q1."""
    s, t, d = closest_points_edge_edge(p0, p1, q0, q1)
    return contact_energy(d, r, k)


@wp.func
def contact_force_hessian(
    diff: wp.vec3,
    disp: wp.vec3,
    fallback_normal: wp.vec3,
    beta: float,
    r: float,
    k: float,
    mu: float,
    eps_u: float,
):
    """Force [N] and PSD Hessian block [N/m] on a vertex of weight ``beta`` in a contact.

    diff = c_p − c_q (closest points, now), disp = relative displacement of the closest points
    over the step, fallback_normal = unit normal used when |diff| < 1e-3 r (zero vector: no contact).
    """
    f = wp.vec3(0.0)
    h = wp.mat33(0.0)
    d = wp.length(diff)
    if d >= r:
        return f, h
    n = fallback_normal
    if d > _NORMAL_EPS_REL * r:
        n = diff / d
    if wp.length_sq(n) == 0.0:
        return f, h
    lam = k * (r - d)
    nnT = wp.outer(n, n)
    f = lam * n
    h = k * nnT
    if mu > 0.0:
        ut = disp - wp.dot(disp, n) * n
        y = wp.length(ut)
        g = mu * lam * friction_f1_over_y(y, eps_u)
        f = f - g * ut
        h = h + g * (wp.identity(3, dtype=float) - nnT)
    return beta * f, (beta * beta) * h


@wp.func
def _oriented(n: wp.vec3, side: wp.vec3) -> wp.vec3:
    """Unit n flipped to point along ``side``; zero if n is (near) zero."""
    ln = wp.length(n)
    if ln <= 1.0e-20:
        return wp.vec3(0.0)
    n = n / ln
    if wp.dot(n, side) < 0.0:
        return -n
    return n


# --------------------------------------------------------------------------------------
# per-vertex contact blocks


@wp.func
def vt_contact_force_hessian(
    role: int,
    p: wp.vec3,
    a: wp.vec3,
    b: wp.vec3,
    c: wp.vec3,
    p_prev: wp.vec3,
    a_prev: wp.vec3,
    b_prev: wp.vec3,
    c_prev: wp.vec3,
    r: float,
    k: float,
    mu: float,
    eps_u: float,
):
    """Vertex–triangle contact: (force vec3 [N], Hessian mat33 [N/m]) on one vertex.

    role 0 = the point p, 1/2/3 = triangle vertex a/b/c. Contact is active when the distance
    from p to the triangle is below r. ``*_prev`` are the positions at the start of the step.
    """
    cp, w = closest_point_triangle(p, a, b, c)
    beta = float(1.0)
    if role == 1:
        beta = -w[0]
    elif role == 2:
        beta = -w[1]
    elif role == 3:
        beta = -w[2]
    cq_prev = w[0] * a_prev + w[1] * b_prev + w[2] * c_prev
    disp = (p - p_prev) - (cp - cq_prev)
    fallback = _oriented(wp.cross(b - a, c - a), p_prev - cq_prev)
    return contact_force_hessian(p - cp, disp, fallback, beta, r, k, mu, eps_u)


@wp.func
def ee_contact_force_hessian(
    role: int,
    p0: wp.vec3,
    p1: wp.vec3,
    q0: wp.vec3,
    q1: wp.vec3,
    p0_prev: wp.vec3,
    p1_prev: wp.vec3,
    q0_prev: wp.vec3,
    q1_prev: wp.vec3,
    r: float,
    k: float,
    mu: float,
    eps_u: float,
):
    """Edge–edge contact: (force vec3 [N], Hessian mat33 [N/m]) on one vertex.

    role 0/1 = p0/p1 of the first edge, 2/3 = q0/q1 of the second. Active when the segment
    distance is below r. ``*_prev`` are the positions at the start of the step.
    """
    s, t, d = closest_points_edge_edge(p0, p1, q0, q1)
    beta = 1.0 - s
    if role == 1:
        beta = s
    elif role == 2:
        beta = t - 1.0
    elif role == 3:
        beta = -t
    cp = p0 + s * (p1 - p0)
    cq = q0 + t * (q1 - q0)
    cp_prev = p0_prev + s * (p1_prev - p0_prev)
    cq_prev = q0_prev + t * (q1_prev - q0_prev)
    disp = (cp - cp_prev) - (cq - cq_prev)
    fallback = _oriented(wp.cross(p1 - p0, q1 - q0), cp_prev - cq_prev)
    return contact_force_hessian(cp - cq, disp, fallback, beta, r, k, mu, eps_u)

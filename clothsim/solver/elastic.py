"""Elastic energies as per-vertex force and Hessian blocks (Warp functions).

Each function returns, for ONE vertex of an element, the force ``-∂E/∂x`` [N] and a symmetric
positive semi-definite 3×3 block of ``∂²E/∂x²`` [N/m] — what a Vertex Block Descent update needs.

Membrane (per triangle, rest area ``A``, rest-shape inverse ``Dm⁻¹``)::

    F = [x1−x0, x2−x0]·Dm⁻¹ (3×2),  E = ½(FᵀF − I),  S = ∂ψ/∂E,
    ψ = ½C11·E11² + C12·E11·E22 + ½C22·E22² + 2G·E12²,   energy = A·ψ

The membrane's Hessian block is StVK's own (Gauss–Newton plus the positive part of the stress term;
``nh_block`` = 0, the default) or (``nh_block`` = 1, ``Simulator(membrane_hessian="neo-hookean")``)
the PSD-projected tangent of a stable Neo-Hookean membrane with the same small-strain stiffness (μ = G, λ = C12, Smith et al. 2018,
the law Newton's VBD uses), plus fibre terms for the orthotropic excess C11 − C12 − 2G and
C22 − C12 − 2G along the deformed warp and weft. The force (and so every converged result) is StVK's;
only the per-vertex Newton step changes. StVK's energy is quartic in a vertex's out-of-plane motion
and its Gauss–Newton block has no out-of-plane stiffness on a flat or compressed triangle, so the
Gauss–Seidel sweep overshoots there; the Neo-Hookean tangent keeps the isotropic μ·|∇F|² floor.
Measured (the pinned 32×32 sheet of benchmarks/sim_grid.py, no damping, 10 frames from rest, CPU,
first guess y): RMS error after one iteration per substep 9.4e-3 m with this block against 3.7e-2 m
with StVK's own (Newton 1.8: 1.0e-2 m). The damping's block is its own Gauss–Newton block (k_d/h)·C:∂E∂E:
scaling the whole Neo-Hookean block by (1 + k_d/h) instead converged faster on that sheet but left a
box swept through draped cloth (tests/test_contacts.py) with 4 edge crossings. The price of the
isotropic floor is in bending-dominated settling, where it is stiffness the cloth does not have: the
ASTM cantilever (tests/test_cantilever.py, 60 iterations, 90 frames) recovered B 15–20 % low with it,
within 8 % with StVK's block; hence StVK's block stays the default and moving cloth opts in.

Bending (per interior edge, stencil x0–x1 shared, x2/x3 opposite)::

    energy = ½·k·(θ − θ0)²,   θ the signed dihedral angle; Hessian ≈ k·∇θ∇θᵀ (Gauss–Newton, PSD)
"""

import warp as wp


@wp.func
def sym_block(
    iso: float, a: float, u: wp.vec3, b: float, w: wp.vec3, alpha: float, beta: float, gamma: float,
    f0: wp.vec3, f1: wp.vec3,
):
    """iso·I + a·uuᵀ + b·wwᵀ + alpha·f0f0ᵀ + beta·(f0f1ᵀ + f1f0ᵀ) + gamma·f1f1ᵀ, one symmetric 3×3
    matrix built from its six distinct entries (the sum of five outer products, at a third of the cost)."""
    p = a * u
    q = b * w
    s0 = alpha * f0 + beta * f1
    s1 = beta * f0 + gamma * f1
    m00 = iso + p[0] * u[0] + q[0] * w[0] + s0[0] * f0[0] + s1[0] * f1[0]
    m11 = iso + p[1] * u[1] + q[1] * w[1] + s0[1] * f0[1] + s1[1] * f1[1]
    m22 = iso + p[2] * u[2] + q[2] * w[2] + s0[2] * f0[2] + s1[2] * f1[2]
    m01 = p[0] * u[1] + q[0] * w[1] + s0[0] * f0[1] + s1[0] * f1[1]
    m02 = p[0] * u[2] + q[0] * w[2] + s0[0] * f0[2] + s1[0] * f1[2]
    m12 = p[1] * u[2] + q[1] * w[2] + s0[1] * f0[2] + s1[1] * f1[2]
    return wp.mat33(m00, m01, m02, m01, m11, m12, m02, m12, m22)


@wp.func
def membrane_force_hessian(
    x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, p0: wp.vec3, p1: wp.vec3, p2: wp.vec3,
    dm_inv: wp.mat22, area: float, k: int, coef: wp.vec4, kd_h: float, nh_block: int,
):
    """Force and PSD Hessian block of the orthotropic StVK membrane on local vertex ``k`` (0, 1, 2).

    coef = (C11, C12, C22, G) [N/m]. Viscous (Kelvin–Voigt) damping: the stress gains
    ``(k_d/h)·C:ΔE`` with ``ΔE = E(x) − E(p)`` the strain change since the step start (p0, p1, p2), exact, so
    a rigid motion is not damped at any order. (Up to session 36 ΔE was linearised at the current F,
    sym(Fᵀ·ΔF) = ΔE + ½ΔFᵀΔF: a triangle turning by ωh in a substep was damped as if strained by (ωh)²/2. The
    step's residual (benchmarks/step_residual.py) measured it: on the swinging 12×12 sheet of sim_grid (27 mm
    edges, k_d 2 ms), Newton's VBD, whose damping takes the exact change of FᵀF, converged to a point that left
    0.34 of the vertices' weight unbalanced under the linearised law and 0.036 under the exact one.)
    ``kd_h`` = k_d/h [1]. Returns (force vec3 [N], hessian mat33 [N/m]).
    """
    e1 = x1 - x0
    e2 = x2 - x0
    f0 = e1 * dm_inv[0, 0] + e2 * dm_inv[1, 0]
    f1 = e1 * dm_inv[0, 1] + e2 * dm_inv[1, 1]
    E11 = 0.5 * (wp.dot(f0, f0) - 1.0)
    E22 = 0.5 * (wp.dot(f1, f1) - 1.0)
    E12 = 0.5 * wp.dot(f0, f1)
    c11 = coef[0]
    c12 = coef[1]
    c22 = coef[2]
    g = coef[3]
    # strain change over the step, E(x) − E(p): F_p the deformation gradient at the step start
    q1 = p1 - p0
    q2 = p2 - p0
    fp0 = q1 * dm_inv[0, 0] + q2 * dm_inv[1, 0]
    fp1 = q1 * dm_inv[0, 1] + q2 * dm_inv[1, 1]
    D11 = E11 + kd_h * 0.5 * (wp.dot(f0, f0) - wp.dot(fp0, fp0))
    D22 = E22 + kd_h * 0.5 * (wp.dot(f1, f1) - wp.dot(fp1, fp1))
    D12 = E12 + kd_h * 0.5 * (wp.dot(f0, f1) - wp.dot(fp0, fp1))
    S11 = c11 * D11 + c12 * D22
    S22 = c12 * D11 + c22 * D22
    S12 = 2.0 * g * D12
    # gradient vector of vertex k in F = sum_k x_k g_k^T
    ga = 0.0
    gb = 0.0
    if k == 0:
        ga = -(dm_inv[0, 0] + dm_inv[1, 0])
        gb = -(dm_inv[0, 1] + dm_inv[1, 1])
    elif k == 1:
        ga = dm_inv[0, 0]
        gb = dm_inv[0, 1]
    else:
        ga = dm_inv[1, 0]
        gb = dm_inv[1, 1]
    P0 = f0 * S11 + f1 * S12
    P1 = f0 * S12 + f1 * S22
    force = -area * (P0 * ga + P1 * gb)
    if nh_block == 0:
        # StVK's own block: Gauss–Newton plus the geometric (stress) term where positive, times (1 + k_d/h)
        # on the Gauss–Newton part for the damping
        s = wp.max(S11 * ga * ga + 2.0 * S12 * ga * gb + S22 * gb * gb, 0.0)
        mat = 1.0 + kd_h
        alpha = (c11 * ga * ga + g * gb * gb) * mat
        beta = ((c12 + g) * ga * gb) * mat
        gamma = (g * ga * ga + c22 * gb * gb) * mat
        return force, area * sym_block(s, 0.0, f0, 0.0, f1, alpha, beta, gamma, f0, f1)
    # Hessian block (module docstring): the PSD tangent of a stable Neo-Hookean membrane with μ = G,
    # λ = C12, the orthotropic excess along the deformed fibres, StVK's stress term where positive (the
    # stiffening of a stretched membrane); and the damping's own Gauss–Newton block (k_d/h)·C:(∂E)(∂E)
    lam = c12 + g
    av = wp.cross(f0, f1)
    js = wp.sqrt(wp.max(wp.dot(av, av), 1.0e-20))
    nrm = av / js
    g0 = wp.cross(f1, nrm)  # ∂J/∂f0
    g1 = wp.cross(nrm, f0)  # ∂J/∂f1
    r = wp.max(lam * (js - 1.0) - g, 0.0) / js  # clamped area stress / J: 0 unless the area grew
    dj = g0 * ga + g1 * gb
    w = f1 * ga - f0 * gb
    sg = wp.max(S11 * ga * ga + 2.0 * S12 * ga * gb + S22 * gb * gb, 0.0)
    iso = g * (ga * ga + gb * gb) + r * wp.dot(w, w) + sg
    # the fibre excess and the damping block share the outer products of the deformed fibres
    alpha = wp.max(c11 - c12 - 2.0 * g, 0.0) * (ga * ga) + (c11 * ga * ga + g * gb * gb) * kd_h
    beta = ((c12 + g) * ga * gb) * kd_h
    gamma = wp.max(c22 - c12 - 2.0 * g, 0.0) * (gb * gb) + (g * ga * ga + c22 * gb * gb) * kd_h
    return force, area * sym_block(iso, lam - r, dj, -r, w, alpha, beta, gamma, f0, f1)


# atan on |z| ≤ tan(π/8): z + z³·P(z²), a least-squares fit at Chebyshev nodes; in float32 within 3.4e-8 rad
# of the true value (float32's own spacing near π/8 is 3e-8). Inlined, it costs about a third of libm's
# atan2f, and the angle runs once per hinge of every vertex in every iteration.
ATAN_C1 = wp.constant(-0.33332762)
ATAN_C2 = wp.constant(0.19972010)
ATAN_C3 = wp.constant(-0.13825589)
ATAN_C4 = wp.constant(0.07905684)
TAN_PI_8 = wp.constant(0.41421356)


@wp.func
def fast_atan2(y: float, x: float):
    """atan2(y, x) [rad] in (−π, π], within 2e-7 rad of float64 atan2 (tests/test_elastic_kernels.py); 0 at (0, 0)."""
    ax = wp.abs(x)
    ay = wp.abs(y)
    mx = wp.max(ax, ay)
    mn = wp.min(ax, ay)
    r = float(0.0)
    if mx > 0.0:
        z = mn / mx
        off = float(0.0)
        if mn > TAN_PI_8 * mx:
            # atan(a) = π/4 + atan((a − 1)/(a + 1)), the argument back in [−tan(π/8), 0]
            z = (mn - mx) / (mn + mx)
            off = 0.25 * wp.pi
        s = z * z
        r = off + z + z * s * (ATAN_C1 + s * (ATAN_C2 + s * (ATAN_C3 + s * ATAN_C4)))
        if ay > ax:
            r = 0.5 * wp.pi - r
        if x < 0.0:
            r = wp.pi - r
        if y < 0.0:
            r = -r
    return r


@wp.func
def dihedral_angle(x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, x3: wp.vec3):
    """Signed dihedral angle [rad] at edge x0–x1 between triangles (x0, x1, x2) and (x1, x0, x3); 0 when flat.

    θ = atan2(((na × nb)·e)/|e|, na·nb) with na, nb the two faces' normals; atan2 is scale-free, so |e|
    multiplies the cosine instead. :func:`bending_force_hessian` computes the same angle the same way."""
    e = x1 - x0
    na = wp.cross(e, x2 - x0)
    nb = wp.cross(x0 - x1, x3 - x1)
    el = wp.sqrt(wp.max(wp.dot(e, e), 1.0e-30))
    return fast_atan2(wp.dot(wp.cross(na, nb), e), wp.dot(na, nb) * el)


@wp.func
def dihedral_gradient(x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, x3: wp.vec3, k: int):
    """∂θ/∂x_k for the angle of :func:`dihedral_angle` (k = 0..3)."""
    e = x1 - x0
    el2 = wp.max(wp.dot(e, e), 1.0e-30)
    el = wp.sqrt(el2)
    na = wp.cross(x1 - x0, x2 - x0)
    nb = wp.cross(x0 - x1, x3 - x1)
    la2 = wp.max(wp.dot(na, na), 1.0e-30)
    lb2 = wp.max(wp.dot(nb, nb), 1.0e-30)
    # gradient of the opposite vertices: -|e| n / |n|^2 (moving x2 along its face normal closes the angle)
    g2 = -el / la2 * na
    g3 = -el / lb2 * nb
    # edge vertices: barycentric split of the opposite vertices' projections on the edge
    t2 = wp.dot(x2 - x0, e) / el2
    t3 = wp.dot(x3 - x0, e) / el2
    out = wp.vec3(0.0)
    if k == 0:
        out = -(1.0 - t2) * g2 - (1.0 - t3) * g3
    elif k == 1:
        out = -t2 * g2 - t3 * g3
    elif k == 2:
        out = g2
    else:
        out = g3
    return out


@wp.func
def bending_force_hessian(
    x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, x3: wp.vec3, theta_prev: float, k: int, stiffness: float, rest: float,
    kd_h: float,
):
    """Force and Gauss–Newton Hessian block of ½·stiffness·(θ − rest)² on stencil vertex k, with viscous
    damping ``(k_d/h)·stiffness·(θ − θ_prev)`` on the angle's change since the step start.

    The angle and its gradient are :func:`dihedral_angle` and :func:`dihedral_gradient`, computed here
    from one set of face normals (this runs once per hinge of every vertex in every iteration)."""
    e = x1 - x0
    el2 = wp.max(wp.dot(e, e), 1.0e-30)
    el = wp.sqrt(el2)
    na = wp.cross(e, x2 - x0)
    nb = wp.cross(x0 - x1, x3 - x1)
    theta = fast_atan2(wp.dot(wp.cross(na, nb), e), wp.dot(na, nb) * el)  # dihedral_angle
    d = theta - rest + kd_h * (theta - theta_prev)
    g2 = (-el / wp.max(wp.dot(na, na), 1.0e-30)) * na
    g3 = (-el / wp.max(wp.dot(nb, nb), 1.0e-30)) * nb
    grad = g3
    if k == 2:
        grad = g2
    elif k < 2:
        inv_el2 = 1.0 / el2
        t2 = wp.dot(x2 - x0, e) * inv_el2
        t3 = wp.dot(x3 - x0, e) * inv_el2
        if k == 0:
            grad = -(1.0 - t2) * g2 - (1.0 - t3) * g3
        else:
            grad = -t2 * g2 - t3 * g3
    return -stiffness * d * grad, (stiffness * (1.0 + kd_h)) * wp.outer(grad, grad)

"""The solver's per-element Warp functions against float64 references.

- ``fast_atan2`` (the polynomial atan2 the bending angle uses) against numpy's ``arctan2`` in float64 on
  the same float32 inputs, over all four quadrants, the axes and ratios near tan(π/8) where its two
  ranges meet. Tolerance 3 units of float32's spacing at the true angle: the fit's own error is
  3.4e-8 rad (a quarter of the spacing near π/4), and the float32 quotient, polynomial and quadrant
  shift (π − r) each round once. libm's atan2f, held to 2 units here (the spacing is taken at the true
  angle, which can sit just below a power of two), measured 2.4e-7 rad at most, the fast one 2.6e-7 rad
  (200 000 random angles).
- ``bending_force_hessian`` (angle and gradient from one set of face normals) against the hinge energy
  ½k(θ − θ0)² differentiated by central differences in float64 (θ from ``clothsim.model._dihedral_np``),
  on random non-degenerate stencils, for each of the four stencil vertices. Tolerance 1e-3 relative to
  the force scale: float32 positions of ~1 m carry 6e-8 m of rounding, over edges of ~0.1 m that is
  ~1e-6 rad of angle error, and the central difference's O(δ²) error at δ = 1e-6 m is far below that.
- ``membrane_force_hessian`` with Kelvin–Voigt damping against the float64 gradient of its two potentials, the
  orthotropic StVK energy A·ψ(E) and the dissipation (k_d/h)·A·ψ(E(x) − E(p)) with the step start p held
  (ψ the same quadratic form), by central differences, on random strained and moved triangles; tolerance
  1e-3 of the force scale, as for bending. And objectivity: a triangle turned rigidly from its step start by
  up to 0.3 rad gets the same force with damping as without (ΔE = 0 exactly), to float32 rounding (1e-4 of
  the force scale). Until session 37 the strain change was linearised (sym(Fᵀ·ΔF) = ΔE + ½ΔFᵀΔF), which
  fails both checks: a turn of θ damped as a strain of θ²/2.
"""

import numpy as np
import warp as wp

from clothsim.model import _dihedral_np
from clothsim.solver.elastic import bending_force_hessian, dihedral_angle, fast_atan2, membrane_force_hessian

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _atan2_kernel(y: wp.array(dtype=float), x: wp.array(dtype=float), fast: wp.array(dtype=float),
                  libm: wp.array(dtype=float)):
    i = wp.tid()
    fast[i] = fast_atan2(y[i], x[i])
    libm[i] = wp.atan2(y[i], x[i])


@wp.kernel
def _bend_kernel(q: wp.array(dtype=wp.vec3, ndim=2), k: float, rest: float, theta: wp.array(dtype=float),
                 force: wp.array(dtype=wp.vec3, ndim=2), hess_trace: wp.array(dtype=float, ndim=2)):
    e, j = wp.tid()
    x0 = q[e, 0]
    x1 = q[e, 1]
    x2 = q[e, 2]
    x3 = q[e, 3]
    if j == 0:
        theta[e] = dihedral_angle(x0, x1, x2, x3)
    th = dihedral_angle(x0, x1, x2, x3)
    f, H = bending_force_hessian(x0, x1, x2, x3, th, j, k, rest, 0.0)
    force[e, j] = f
    hess_trace[e, j] = H[0, 0] + H[1, 1] + H[2, 2]


def test_fast_atan2_matches_arctan2():
    rng = np.random.default_rng(3)
    ang = rng.uniform(-np.pi, np.pi, 20000)
    rad = 10.0 ** rng.uniform(-6, 3, 20000)
    y = rad * np.sin(ang)
    x = rad * np.cos(ang)
    # the axes, the diagonals, the seam of the two ranges (ratio tan(π/8)) and both signs of each
    t = np.tan(np.pi / 8)
    special = [(0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, -1), (1, -1), (-1, 1), (t, 1), (-t, 1),
               (1, t), (t * (1 + 1e-7), 1), (t * (1 - 1e-7), -1), (1e-30, 1.0), (-1e-30, 1.0), (0, 0)]
    y = np.concatenate([y, [s[0] for s in special]]).astype(np.float32)
    x = np.concatenate([x, [s[1] for s in special]]).astype(np.float32)
    fast = wp.zeros(len(x), dtype=float, device="cpu")
    libm = wp.zeros(len(x), dtype=float, device="cpu")
    wp.launch(_atan2_kernel, len(x), inputs=[wp.array(y, device="cpu"), wp.array(x, device="cpu")],
              outputs=[fast, libm], device="cpu")
    ref = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    ref[(x == 0) & (y == 0)] = 0.0
    # errors in units of float32's spacing at the true angle (tiny angles are held relatively)
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    ulp[ref == 0] = np.spacing(np.float32(0))
    err_fast = np.abs(fast.numpy() - ref) / ulp
    err_libm = np.abs(libm.numpy() - ref) / ulp
    assert err_libm.max() <= 2.0
    assert err_fast.max() <= 3.0, (err_fast.max(), int(err_fast.argmax()))


def _energy_grad(q, k, rest, delta=1e-6):
    """Central differences of ½k(θ − rest)² in float64, per stencil vertex: (E, 4, 3)."""
    g = np.zeros_like(q)
    for j in range(4):
        for c in range(3):
            qp = q.copy()
            qm = q.copy()
            qp[:, j, c] += delta
            qm[:, j, c] -= delta
            ep = 0.5 * k * (_dihedral_np(*[qp[:, i] for i in range(4)]) - rest) ** 2
            em = 0.5 * k * (_dihedral_np(*[qm[:, i] for i in range(4)]) - rest) ** 2
            g[:, j, c] = (ep - em) / (2 * delta)
    return g


def test_bending_force_is_the_energy_gradient():
    rng = np.random.default_rng(7)
    n = 400
    # a hinge along x of length ~0.1 m, wings folded to random angles in (−150°, 150°), the stencil
    # moved and turned at random
    L = rng.uniform(0.05, 0.15, n)
    a = rng.uniform(-2.6, 2.6, n)
    wa = rng.uniform(0.03, 0.1, n)
    wb = rng.uniform(0.03, 0.1, n)
    sa = rng.uniform(0.2, 0.8, n)
    sb = rng.uniform(0.2, 0.8, n)
    q = np.zeros((n, 4, 3))
    q[:, 1, 0] = L
    q[:, 2] = np.stack([sa * L, wa, np.zeros(n)], 1)
    q[:, 3] = np.stack([sb * L, -wb * np.cos(a), wb * np.sin(a)], 1)
    for e in range(n):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        q[e] = q[e] @ Q.T + rng.uniform(-1, 1, 3)
    q32 = q.astype(np.float32).astype(np.float64)
    k, rest = 2.0e-3, 0.3
    theta = wp.zeros(n, dtype=float, device="cpu")
    force = wp.zeros((n, 4), dtype=wp.vec3, device="cpu")
    tr = wp.zeros((n, 4), dtype=float, device="cpu")
    wp.launch(_bend_kernel, (n, 4), inputs=[wp.array(q32.astype(np.float32), dtype=wp.vec3, device="cpu"), k, rest],
              outputs=[theta, force, tr], device="cpu")
    th_ref = _dihedral_np(*[q32[:, i] for i in range(4)])
    assert np.abs(theta.numpy() - th_ref).max() < 1e-5
    f_ref = -_energy_grad(q32, k, rest)
    f = force.numpy().astype(np.float64)
    scale = np.abs(f_ref).max(axis=(1, 2), keepdims=True)
    assert np.abs(f - f_ref).max() / 1.0 < 1e-3 * scale.max()
    assert (np.abs(f - f_ref) / scale).max() < 1e-3
    # the Gauss–Newton block k·∇θ∇θᵀ: trace k·|∇θ|², from the reference gradient of θ itself
    grad_theta = -f_ref / (k * (th_ref - rest))[:, None, None]
    tr_ref = k * np.sum(grad_theta ** 2, axis=2)
    ok = np.abs(th_ref - rest) > 1e-2  # the quotient above is ill-conditioned where θ ≈ rest
    assert np.allclose(tr.numpy()[ok], tr_ref[ok], rtol=2e-3)


@wp.kernel
def _membrane_kernel(x: wp.array(dtype=wp.vec3, ndim=2), p: wp.array(dtype=wp.vec3, ndim=2),
                     dm_inv: wp.array(dtype=wp.mat22), area: float, coef: wp.vec4, kd_h: float,
                     force: wp.array(dtype=wp.vec3, ndim=2)):
    e, k = wp.tid()
    f, H = membrane_force_hessian(x[e, 0], x[e, 1], x[e, 2], p[e, 0], p[e, 1], p[e, 2], dm_inv[e], area, k, coef,
                                  kd_h, 0)
    force[e, k] = f


def _membrane_forces(x, p, dm_inv, area, coef, kd_h):
    n = len(x)
    out = wp.zeros((n, 3), dtype=wp.vec3)
    wp.launch(_membrane_kernel, (n, 3), inputs=[wp.array(x.astype(np.float32), dtype=wp.vec3),
                                                wp.array(p.astype(np.float32), dtype=wp.vec3),
                                                wp.array(dm_inv.astype(np.float32), dtype=wp.mat22), area,
                                                wp.vec4(*coef), kd_h, out])
    return out.numpy().astype(np.float64)


def _strain(x, dm_inv):
    F = np.stack([x[1] - x[0], x[2] - x[0]], axis=1) @ dm_inv  # 3x2
    return 0.5 * (F.T @ F - np.eye(2))


def _psi(E, coef):
    c11, c12, c22, g = coef
    return 0.5 * c11 * E[0, 0] ** 2 + c12 * E[0, 0] * E[1, 1] + 0.5 * c22 * E[1, 1] ** 2 + 2.0 * g * E[0, 1] ** 2


def _membrane_triangles(rng, count, edge=0.02):
    """Rest triangles (2D, random shapes), their Dm⁻¹, and strained 3D placements of them."""
    rest = rng.uniform(-edge, edge, (count, 3, 2))
    rest[:, 1] += [edge, 0.0]
    rest[:, 2] += [0.0, edge]
    dm = np.stack([rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0]], axis=2)  # columns: the rest edges
    keep = np.abs(np.linalg.det(dm)) > 0.2 * edge * edge
    rest, dm = rest[keep], dm[keep]
    dm_inv = np.linalg.inv(dm)
    return rest, dm_inv


def _rotation(axis, angle):
    axis = axis / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def test_membrane_damping_force_is_the_gradient_of_its_potentials():
    rng = np.random.default_rng(11)
    rest, dm_inv = _membrane_triangles(rng, 40)
    coef = (300.0, 60.0, 200.0, 50.0)  # orthotropic C11, C12, C22, G [N/m]
    area, kd_h = 1.0, 1.2  # area 1: the reference scales alike; k_d/h of the benchmarks' 2 ms over 1/600 s
    xs, ps = [], []
    for r in rest:
        base = np.c_[r, np.zeros(3)] @ _rotation(rng.normal(size=3), rng.uniform(0, 3)).T
        p = base * (1.0 + rng.uniform(-0.05, 0.08, (1, 3))) + rng.normal(0, 4e-4, (3, 3))  # strained, moved
        x = p @ _rotation(rng.normal(size=3), rng.uniform(0, 0.2)).T + rng.normal(0, 4e-4, (3, 3))
        xs.append(x)
        ps.append(p)
    xs, ps = np.array(xs), np.array(ps)
    got = _membrane_forces(xs, ps, dm_inv, area, coef, kd_h)

    def energy(x, p, di):
        e = _strain(x, di)
        return area * (_psi(e, coef) + kd_h * _psi(e - _strain(p, di), coef))

    d = 1e-7
    for t in range(len(xs)):
        want = np.zeros((3, 3))
        for k in range(3):
            for c in range(3):
                xp, xm = xs[t].copy(), xs[t].copy()
                xp[k, c] += d
                xm[k, c] -= d
                want[k, c] = -(energy(xp, ps[t], dm_inv[t]) - energy(xm, ps[t], dm_inv[t])) / (2 * d)
        scale = np.abs(want).max()
        assert np.abs(got[t] - want).max() < 1e-3 * scale, (t, got[t], want)


def test_membrane_damping_does_not_damp_a_rigid_turn():
    rng = np.random.default_rng(12)
    rest, dm_inv = _membrane_triangles(rng, 40)
    coef = (300.0, 60.0, 200.0, 50.0)
    ps, xs = [], []
    for r in rest:
        p = np.c_[r, np.zeros(3)] * (1.0 + rng.uniform(-0.05, 0.08, (1, 3)))  # strained at the step start
        turn = _rotation(rng.normal(size=3), rng.uniform(0.05, 0.3))
        c = p.mean(axis=0)
        ps.append(p)
        xs.append((p - c) @ turn.T + c + rng.normal(0, 0.01, 3))  # turned and carried along, not strained
    xs, ps = np.array(xs), np.array(ps)
    damped = _membrane_forces(xs, ps, dm_inv, 1.0, coef, 1.2)
    plain = _membrane_forces(xs, ps, dm_inv, 1.0, coef, 0.0)
    scale = np.abs(plain).max(axis=(1, 2), keepdims=True)
    assert np.abs(damped - plain).max() < 1e-4 * scale.max(), np.abs(damped - plain).max() / scale.max()

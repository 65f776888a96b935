"""Contact building blocks (clothsim.collision.contact_funcs).

References:
* closest point on a triangle: trimesh.triangles.closest_point (float64);
* segment–segment distance: dense parameter grid (401×401) in float64, refined by the exact
  minimum along each grid optimum's neighbourhood — the Warp result must not be farther;
* contact force = −∂E/∂x_j with E = ½ k (r − d)²: central finite differences of the Warp energy;
* friction force = −∂D/∂x_j with D = μ λ f0(|(I − n nᵀ) u|), λ, n, β lagged: float64 FD in numpy;
* Hessian blocks: symmetric and PSD; their normal part nᵀ H n = k β² (the exact second
  derivative along n while the closest point stays inside the face).
Tolerances: float32 evaluation, FD step chosen so that relative errors are ~1e-4; asserted at 2e-3.
"""

import numpy as np
import pytest
import warp as wp

from clothsim.collision.contact_funcs import (
    closest_point_triangle,
    closest_points_edge_edge,
    ee_contact_energy,
    ee_contact_force_hessian,
    friction_f0,
    friction_f1_over_y,
    vt_contact_energy,
    vt_contact_force_hessian,
)



@wp.kernel
def _closest_tri_kernel(
    p: wp.array(dtype=wp.vec3),
    a: wp.array(dtype=wp.vec3),
    b: wp.array(dtype=wp.vec3),
    c: wp.array(dtype=wp.vec3),
    out_point: wp.array(dtype=wp.vec3),
    out_bary: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    q, w = closest_point_triangle(p[i], a[i], b[i], c[i])
    out_point[i] = q
    out_bary[i] = w


@wp.kernel
def _closest_ee_kernel(
    x: wp.array2d(dtype=wp.vec3),
    out: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    s, t, d = closest_points_edge_edge(x[i, 0], x[i, 1], x[i, 2], x[i, 3])
    out[i] = wp.vec3(s, t, d)


@wp.kernel
def _contact_kernel(
    kind: int,
    x: wp.array2d(dtype=wp.vec3),
    x_prev: wp.array2d(dtype=wp.vec3),
    params: wp.vec4,
    energy: wp.array(dtype=float),
    force: wp.array2d(dtype=wp.vec3),
    hessian: wp.array2d(dtype=wp.mat33),
):
    """Row i holds the 4 vertices of one contact; kind 0 = vertex-triangle, 1 = edge-edge."""
    i = wp.tid()
    r = params[0]
    k = params[1]
    mu = params[2]
    eps_u = params[3]
    if kind == 0:
        energy[i] = vt_contact_energy(x[i, 0], x[i, 1], x[i, 2], x[i, 3], r, k)
    else:
        energy[i] = ee_contact_energy(x[i, 0], x[i, 1], x[i, 2], x[i, 3], r, k)
    for role in range(4):
        if kind == 0:
            f, h = vt_contact_force_hessian(
                role, x[i, 0], x[i, 1], x[i, 2], x[i, 3], x_prev[i, 0], x_prev[i, 1], x_prev[i, 2], x_prev[i, 3],
                r, k, mu, eps_u,
            )
        else:
            f, h = ee_contact_force_hessian(
                role, x[i, 0], x[i, 1], x[i, 2], x[i, 3], x_prev[i, 0], x_prev[i, 1], x_prev[i, 2], x_prev[i, 3],
                r, k, mu, eps_u,
            )
        force[i, role] = f
        hessian[i, role] = h


def run_contacts(kind, x, x_prev, r, k, mu, eps_u, device):
    n = x.shape[0]
    xw = wp.array(x.astype(np.float32), dtype=wp.vec3, device=device)
    xpw = wp.array(x_prev.astype(np.float32), dtype=wp.vec3, device=device)
    e = wp.zeros(n, dtype=float, device=device)
    f = wp.zeros((n, 4), dtype=wp.vec3, device=device)
    h = wp.zeros((n, 4), dtype=wp.mat33, device=device)
    wp.launch(_contact_kernel, dim=n, inputs=[kind, xw, xpw, wp.vec4(r, k, mu, eps_u)], outputs=[e, f, h], device=device)
    return e.numpy().astype(np.float64), f.numpy().astype(np.float64), h.numpy().astype(np.float64)


def test_closest_point_triangle_matches_trimesh(device):
    import trimesh

    rng = np.random.default_rng(0)
    n = 2000
    tri = rng.normal(size=(n, 3, 3))
    # a few degenerate-ish and far-away points in the mix
    p = rng.normal(size=(n, 3)) * 2.0
    pw = [wp.array(v.astype(np.float32), dtype=wp.vec3, device=device) for v in (p, tri[:, 0], tri[:, 1], tri[:, 2])]
    q = wp.zeros(n, dtype=wp.vec3, device=device)
    w = wp.zeros(n, dtype=wp.vec3, device=device)
    wp.launch(_closest_tri_kernel, dim=n, inputs=pw, outputs=[q, w], device=device)
    q, w = q.numpy(), w.numpy()
    ref = trimesh.triangles.closest_point(tri.astype(np.float32).astype(np.float64), p.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(q, ref, atol=2e-5)
    np.testing.assert_allclose(w.sum(1), 1.0, atol=1e-5)
    assert (w >= -1e-6).all()
    np.testing.assert_allclose(np.einsum("ni,nij->nj", w, tri), ref, atol=2e-5)


def _segment_distance_grid(x):
    s = np.linspace(0, 1, 401)
    P = x[0] + s[:, None] * (x[1] - x[0])
    Q = x[2] + s[:, None] * (x[3] - x[2])
    return np.sqrt(((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1)).min()


def _ee(x, device):
    xw = wp.array(x.astype(np.float32), dtype=wp.vec3, device=device)
    out = wp.zeros(len(x), dtype=wp.vec3, device=device)
    wp.launch(_closest_ee_kernel, dim=len(x), inputs=[xw], outputs=[out], device=device)
    return out.numpy().astype(np.float64)


def test_edge_edge_random_vs_grid(device):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(120, 4, 3))
    x = x.astype(np.float32).astype(np.float64)
    got = _ee(x, device)
    for i in range(len(x)):
        s, t, d = got[i]
        cp = x[i, 0] + s * (x[i, 1] - x[i, 0])
        cq = x[i, 2] + t * (x[i, 3] - x[i, 2])
        assert abs(np.linalg.norm(cp - cq) - d) < 1e-5
        assert d <= _segment_distance_grid(x[i]) + 1e-5
        assert 0 <= s <= 1 and 0 <= t <= 1


def test_edge_edge_parallel_and_degenerate(device):
    x = np.array(
        [
            [[0, 0, 0], [1, 0, 0], [0.5, 0.01, 0], [2.0, 0.01, 0]],  # parallel, overlap [0.5, 1]
            [[0, 0, 0], [1, 0, 0], [2.0, 0.01, 0], [3.0, 0.01, 0]],  # parallel, no overlap
            [[0, 0, 0], [1, 0, 0], [1.0, 0.02, 0], [0.0, 0.02, 0]],  # antiparallel, full overlap
            [[0, 0, 0], [0, 0, 0], [0.3, 1.0, 0], [0.3, -1.0, 0]],  # zero-length first edge
            [[0, 0, 0], [1, 0, 0], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]],  # zero-length second edge
        ],
        dtype=np.float64,
    )
    got = _ee(x, device)
    np.testing.assert_allclose(got[0], [0.75, 0.25 / 1.5, 0.01], atol=1e-6)
    np.testing.assert_allclose(got[1], [1.0, 0.0, np.hypot(1.0, 0.01)], atol=1e-6)
    np.testing.assert_allclose(got[2], [0.5, 0.5, 0.02], atol=1e-6)
    np.testing.assert_allclose(got[3][2], 0.3, atol=1e-6)
    np.testing.assert_allclose(got[4], [0.5, 0.0, np.sqrt(0.5)], atol=1e-6)


def _random_vt(rng, n, r):
    """Triangles of ~5 cm and points within r of their interior (closest point inside the face)."""
    x = np.zeros((n, 4, 3))
    for i in range(n):
        a, b, c = rng.normal(size=(3, 3)) * 0.03
        w = rng.dirichlet([3, 3, 3])
        nrm = np.cross(b - a, c - a)
        nrm /= np.linalg.norm(nrm)
        d = rng.uniform(0.2, 0.9) * r
        x[i] = [w @ np.array([a, b, c]) + nrm * d * rng.choice([-1, 1]), a, b, c]
    return x


def _random_ee(rng, n, r):
    """Crossing edges at distance < r whose closest points are interior to both."""
    x = np.zeros((n, 4, 3))
    for i in range(n):
        u, v = rng.normal(size=(2, 3))
        u /= np.linalg.norm(u)
        v -= (v @ u) * u
        v /= np.linalg.norm(v)
        m = np.cross(u, v)
        s, t = rng.uniform(0.3, 0.7, 2)
        L1, L2 = rng.uniform(0.03, 0.06, 2)
        c = rng.normal(size=3) * 0.05
        d = rng.uniform(0.2, 0.9) * r
        p0 = c - s * L1 * u
        q0 = c + m * d - t * L2 * (u * 0.3 + v)
        x[i] = [p0, p0 + L1 * u, q0, q0 + L2 * (u * 0.3 + v)]
    return x


def _roles_beta(kind, x, device):
    """Closest-point weights β (float64 reference)."""
    import trimesh

    if kind == 0:
        q = trimesh.triangles.closest_point(x[:, 1:4], x[:, 0])
        w = trimesh.triangles.points_to_barycentric(x[:, 1:4], q)
        return np.concatenate([np.ones((len(x), 1)), -w], axis=1)
    st = _ee(x, device)
    s, t = st[:, 0], st[:, 1]
    return np.stack([1 - s, s, t - 1, -t], axis=1)


@pytest.mark.parametrize("kind", [0, 1])
def test_contact_force_is_minus_energy_gradient(kind, device):
    rng = np.random.default_rng(2 + kind)
    r, k = 0.01, 1.0e4
    x = (_random_vt if kind == 0 else _random_ee)(rng, 40, r)
    x = x.astype(np.float32).astype(np.float64)
    e, f, h = run_contacts(kind, x, x, r, k, 0.0, 1e-4, device)
    assert (e > 0).all()
    h_step = 1e-5
    fd = np.zeros_like(f)
    for role in range(4):
        for ax in range(3):
            xp = x.copy()
            xm = x.copy()
            xp[:, role, ax] += h_step
            xm[:, role, ax] -= h_step
            xp32 = xp.astype(np.float32)
            xm32 = xm.astype(np.float32)
            step = xp32[:, role, ax].astype(np.float64) - xm32[:, role, ax].astype(np.float64)  # the step actually taken
            ep, _, _ = run_contacts(kind, xp32, xp32, r, k, 0.0, 1e-4, device)
            em, _, _ = run_contacts(kind, xm32, xm32, r, k, 0.0, 1e-4, device)
            fd[:, role, ax] = -(ep - em) / step
    scale = np.abs(f).max(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(f / scale, fd / scale, atol=2e-3)
    # forces balance (the energy is translation invariant)
    np.testing.assert_allclose(f.sum(1) / scale[:, 0], 0.0, atol=1e-5)

    # Hessians: symmetric PSD; normal part k β²
    beta = _roles_beta(kind, x, device)
    n = f[:, 0] / np.linalg.norm(f[:, 0], axis=1, keepdims=True) * np.sign(beta[:, :1])
    for role in range(4):
        H = h[:, role]
        np.testing.assert_allclose(H, np.swapaxes(H, 1, 2), atol=1e-6 * k)
        assert (np.linalg.eigvalsh(H) >= -1e-6 * k).all()
        np.testing.assert_allclose(np.einsum("ni,nij,nj->n", n, H, n), k * beta[:, role] ** 2, rtol=2e-3, atol=1e-3 * k)


@pytest.mark.parametrize("kind", [0, 1])
def test_friction_matches_lagged_potential(kind, device):
    """Friction = −∂/∂x_j [μ λ f0(|P u|)], with λ, n, β from the current iterate held fixed."""
    rng = np.random.default_rng(5 + kind)
    r, k, mu = 0.01, 1.0e4, 0.4
    x = (_random_vt if kind == 0 else _random_ee)(rng, 30, r)
    x = x.astype(np.float32).astype(np.float64)
    eps_u = 1e-3
    # start-of-step positions: tangential slips on both sides of eps_u (stick and slide regimes)
    slip = rng.normal(size=x.shape) * rng.choice([2e-4, 3e-3], size=(len(x), 1, 1))
    x_prev = (x - slip).astype(np.float32).astype(np.float64)
    _, f0, h0 = run_contacts(kind, x, x, r, k, 0.0, eps_u, device)  # normal part only
    _, f, h = run_contacts(kind, x, x_prev, r, k, mu, eps_u, device)
    beta = _roles_beta(kind, x, device)
    # lagged quantities from the normal force on role 0: F_0 = β_0 λ n
    lam_n = f0[:, 0] / beta[:, :1]
    lam = np.linalg.norm(lam_n, axis=1)
    n = lam_n / lam[:, None]
    P = np.eye(3)[None] - n[:, :, None] * n[:, None, :]

    def f0_np(y):
        return np.where(y >= eps_u, y, -(y**3) / (3 * eps_u**2) + y**2 / eps_u + eps_u / 3)

    def D(xx):
        u = np.einsum("nj,nji->ni", beta, xx - x_prev)
        return mu * lam * f0_np(np.linalg.norm(np.einsum("nij,nj->ni", P, u), axis=1))

    hs = 1e-7
    for role in range(4):
        fd = np.zeros((len(x), 3))
        for ax in range(3):
            xp = x.copy()
            xm = x.copy()
            xp[:, role, ax] += hs
            xm[:, role, ax] -= hs
            fd[:, ax] = -(D(xp) - D(xm)) / (2 * hs)
        fric = f[:, role] - f0[:, role]
        scale = mu * lam[:, None]
        np.testing.assert_allclose(fric / scale, fd / scale, atol=2e-3)
        H = h[:, role]
        np.testing.assert_allclose(H, np.swapaxes(H, 1, 2), atol=1e-6 * k)
        assert (np.linalg.eigvalsh(H) >= -1e-6 * np.abs(H).max()).all()
        # tangential stiffness μ λ β² f1(y)/y
        u = np.einsum("nj,nji->ni", beta, x - x_prev)
        y = np.linalg.norm(np.einsum("nij,nj->ni", P, u), axis=1)
        g = np.where(y >= eps_u, 1 / np.maximum(y, 1e-30), (2 - y / eps_u) / eps_u)
        np.testing.assert_allclose(
            np.trace(H - h0[:, role], axis1=1, axis2=2), 2 * mu * lam * beta[:, role] ** 2 * g, rtol=5e-3, atol=1e-6
        )


def test_contact_inactive_beyond_thickness_and_fallback_normal(device):
    r, k = 0.01, 1.0e4
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float64)
    x = np.array(
        [
            [[0.2, 0.2, 0.02], *tri],  # 2 cm above: no contact
            [[0.2, 0.2, 0.0], *tri],  # exactly on the face, came from below
        ]
    )
    x_prev = x.copy()
    x_prev[1, 0, 2] = -0.005
    e, f, h = run_contacts(0, x, x_prev, r, k, 0.0, 1e-4, device)
    assert e[0] == 0 and np.abs(f[0]).max() == 0 and np.abs(h[0]).max() == 0
    # pushed back to the side it came from with the full force k r
    np.testing.assert_allclose(f[1, 0], [0, 0, -k * r], rtol=1e-5)
    np.testing.assert_allclose(f[1, 1:].sum(0), [0, 0, k * r], rtol=1e-5)


@wp.kernel
def _mollifier_kernel(y: wp.array(dtype=float), eps_u: float, f0: wp.array(dtype=float), g: wp.array(dtype=float)):
    i = wp.tid()
    f0[i] = friction_f0(y[i], eps_u)
    g[i] = friction_f1_over_y(y[i], eps_u)


def test_mollifier_is_c1(device):
    eps_u = 1e-3
    y = np.array([0.0, 0.25e-3, 0.5e-3, 1e-3 - 1e-9, 1e-3, 2e-3], dtype=np.float32)
    yw = wp.array(y, dtype=float, device=device)
    f0 = wp.zeros(len(y), dtype=float, device=device)
    g = wp.zeros(len(y), dtype=float, device=device)
    wp.launch(_mollifier_kernel, dim=len(y), inputs=[yw, eps_u], outputs=[f0, g], device=device)
    f0, g = f0.numpy(), g.numpy()
    assert f0[0] == pytest.approx(eps_u / 3)
    assert f0[3] == pytest.approx(eps_u, rel=1e-5) and f0[4] == pytest.approx(eps_u)
    assert g[0] == pytest.approx(2 / eps_u)
    assert g[3] * y[3] == pytest.approx(1.0, rel=1e-5) and g[5] * y[5] == pytest.approx(1.0)

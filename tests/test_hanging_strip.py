"""A soft strip hanging from its pinned top edge, settled, against the St. Venant–Kirchhoff closed form.

Reference. A strip of areal density ρ [kg/m²] and uniaxial stiffness k [N/m] (Poisson ratio 0),
reference length L, hangs under gravity g. At reference distance s from the free end the first
Piola tension per unit width of the StVK law ψ = ½·k·E², E = (λ² − 1)/2, balances the weight below:

    k·λ(λ² − 1)/2 = ρ·g·s                                           (1)

and the hanging position of the material point s is y(s) = y_top − ∫_s^L λ(s′) ds′.

Why Poisson 0: (1) assumes the strip contracts freely across its width. With ν ≠ 0 the pinned top
row cannot contract, which stiffens the top by up to 1/(1 − ν²) over a length of about one width;
with ν = 0 the membrane law has no E11–E22 coupling and (1) holds everywhere.

Discrete solution. With lumped masses every band of triangles between two vertex rows carries the
weight of the rows below it, ρ·g·W·s_mid (s_mid its midpoint), so at equilibrium each band's
stretch is λ(s_mid) from (1) exactly; row positions are the sums Σ λ(s_mid)·Δ (the midpoint rule
for ∫λ ds). This is the converged discrete solution (what infinitely many iterations give). The
discrete and continuous positions differ by at most the midpoint-rule error (Δ²/24)·∫|λ″| ds =
(Δ²/24)·(λ′(0) − λ′(L)) (λ″ < 0 keeps one sign), which is how the mesh resolution enters.

Tolerances. The strip is "settled" when no vertex moves faster than V_SETTLED for a whole period of
the slowest mode (one slow frame can be a turning point of an oscillation); a mode of angular
frequency ω then has an amplitude of at most V_SETTLED/ω, and the slowest mode (the fixed–free
longitudinal one, ω₁ ≥ (π/2L)·√(k/ρ), since the tangent stiffness k(3λ² − 1)/2 ≥ k) bounds it.
Position tolerance against the discrete solution: 2·V_SETTLED/ω₁ (both ends of a span) plus float32
rounding of the ny row positions (ny·ulp); against the continuum: that plus the midpoint-rule bound.
"""

import math

import numpy as np

import clothsim as cs

L, W = 0.5, 0.05  # m: aspect ratio 10
NX, NY = 3, 21  # 63 vertices, Δ = 2.5 cm along the strip
RHO = 0.13  # kg/m² (cotton shirting)
GRAV = 9.81
LAM_TOP = 1.075  # 7.5 % strain at the top: sets k
K = 2.0 * RHO * GRAV * L / (LAM_TOP * (LAM_TOP**2 - 1.0))  # ≈ 7.6 N/m, from (1) at s = L
V_SETTLED = 1.0e-3  # m/s
MAX_FRAMES = 160


def _stretch(s):
    """λ(s) solving (1), λ ≥ 1 (Newton on λ³ − λ − 2ρgs/k, float64)."""
    s = np.asarray(s, dtype=np.float64)
    c = 2.0 * RHO * GRAV * s / K
    lam = np.ones_like(s)
    for _ in range(60):
        lam -= (lam**3 - lam - c) / (3.0 * lam**2 - 1.0)
    return lam


def _continuum_rows(d):
    """y of each vertex row (bottom first, top at +L/2): y(s) = y_top − ∫_s^L λ ds′ (fine Simpson)."""
    s_rows = np.arange(NY) * d
    out = np.empty(NY)
    for j, s in enumerate(s_rows):
        q = np.linspace(s, L, 2001)
        lam = _stretch(q)
        dq = q[1] - q[0]
        integral = dq / 3.0 * (lam[0] + lam[-1] + 4.0 * lam[1:-1:2].sum() + 2.0 * lam[2:-1:2].sum()) if s < L else 0.0
        out[j] = 0.5 * L - integral
    return out


def _discrete_rows(d):
    lam_mid = _stretch((np.arange(NY - 1) + 0.5) * d)
    y = np.empty(NY)
    y[-1] = 0.5 * L
    for j in range(NY - 2, -1, -1):
        y[j] = y[j + 1] - lam_mid[j] * d
    return y, lam_mid


def _settle(device, damping, iterations, max_frames=MAX_FRAMES):
    fabric = cs.Fabric(name="soft strip", density=RHO, stretch_warp=K, stretch_weft=K, poisson=0.0, shear=K / 4.0,
                       damping=damping)
    cloth = cs.Cloth.grid(size=(W, L), resolution=(NX, NY), fabric=fabric, plane="xy", center=(0.0, 0.0, 0.0))
    cloth.pin(cloth.boundary("top"))
    sim = cs.Simulator(cloth, device=device, dt=1.0 / 60.0, substeps=10, iterations=iterations, drag=0.0)
    # settled = slow for a whole period of the slowest mode (a single slow frame may be a turning point)
    window = math.ceil(2.0 * math.pi / _omega1() / sim.dt)
    calm = 0
    for f in range(1, max_frames + 1):
        sim.step()
        calm = calm + 1 if np.abs(sim.velocities()).max() < V_SETTLED else 0
        if calm >= window:
            return sim, f
    return sim, None


def _omega1():
    return math.pi / (2.0 * L) * math.sqrt(K / RHO)


def test_hanging_strip_matches_stvk_closed_form(device):
    """Rows settle (max speed < V_SETTLED) and match (1): discrete solution within 2·V/ω₁ + ny·ulp,
    continuum within that plus (Δ²/24)·(λ′(0) − λ′(L)); see the module docstring."""
    d = L / (NY - 1)
    sim, frames = _settle(device, damping=0.01, iterations=20)
    assert frames is not None, f"not settled (max speed >= {V_SETTLED} m/s) after {MAX_FRAMES} frames"
    x = sim.positions().astype(np.float64).reshape(NY, NX, 3)
    y = x[:, :, 1].mean(axis=1)
    y_disc, lam_mid = _discrete_rows(d)
    y_cont = _continuum_rows(d)

    fp = NY * float(np.spacing(np.float32(L)))
    tol_disc = 2.0 * V_SETTLED / _omega1() + fp
    dlam = lambda lam: (2.0 * RHO * GRAV / K) / (3.0 * lam**2 - 1.0)  # noqa: E731  λ′(s) from (1)
    tol_mid = d * d / 24.0 * (dlam(1.0) - dlam(_stretch(L)))
    tol_cont = tol_disc + tol_mid

    err_disc = np.abs(y - y_disc).max()
    err_cont = np.abs(y - y_cont).max()
    ext_sim, ext_cf = y[-1] - y[0] - L, y_cont[-1] - y_cont[0] - L
    lam_sim = np.diff(y) / d
    print(f"\nhanging strip: settled after {frames} frames; top strain {lam_sim[-1] - 1:.4f} (closed form "
          f"{lam_mid[-1] - 1:.4f}); extension {ext_sim * 1e3:.3f} mm vs closed form {ext_cf * 1e3:.3f} mm "
          f"({(ext_sim - ext_cf) / ext_cf:+.2%}); max |y - y_discrete| = {err_disc:.2e} m (tol {tol_disc:.2e}); "
          f"max |y - y_continuum| = {err_cont:.2e} m (tol {tol_cont:.2e}, midpoint-rule part {tol_mid:.1e}); "
          f"max |λ - λ(s_mid)| = {np.abs(lam_sim - lam_mid).max():.2e}")
    assert 0.05 <= lam_mid[-1] - 1.0 <= 0.10  # the brief: a soft strip, 5–10 % strain at the top
    assert err_disc <= tol_disc
    assert err_cont <= tol_cont
    # elongation profile: each band's stretch, a difference of two rows Δ apart
    assert np.abs(lam_sim - lam_mid).max() <= 2.0 * tol_disc / d
    # the strip hangs straight: no sideways drift larger than the position tolerance
    assert np.abs(x[:, :, 0] - x[-1:, :, 0]).max() <= 2.0 * V_SETTLED / _omega1() + 1e-4


def test_static_state_does_not_depend_on_damping(device):
    """Damping must not change a static equilibrium: at the default 10 iterations and damping 0.02 s
    the settled extension should match (1) as well as the 20-iteration run does (within 1 %)."""
    d = L / (NY - 1)
    sim, frames = _settle(device, damping=0.02, iterations=10, max_frames=90)
    y = sim.positions().astype(np.float64).reshape(NY, NX, 3)[:, :, 1].mean(axis=1)
    y_disc, _ = _discrete_rows(d)
    ext_sim, ext_disc = y[-1] - y[0] - L, y_disc[-1] - y_disc[0] - L
    print(f"\ndamping 0.02 s, 10 iterations: settled after {frames} frames, extension {ext_sim * 1e3:.3f} mm vs "
          f"{ext_disc * 1e3:.3f} mm ({(ext_sim - ext_disc) / ext_disc:+.1%})")
    assert abs(ext_sim - ext_disc) <= 0.01 * ext_disc

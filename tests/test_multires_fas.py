"""The hierarchy inside the solve: conservative forces, the FAS coarse correction, curved prolongation.

What is checked, with the reason for each tolerance:

* ``ForceModel.forces`` is minus the gradient of the energy that :func:`mechanical_energy` evaluates (an
  independent numpy formula of the same model), by central differences with ε = 1e-6 m: the truncation error
  is ε²/6·|E'''| (~1e-12 N here) and the float64 round-off |E|·1e-16/ε ~ 1e-10 N, so 1e-6 of the largest
  force (~1e-5 N) is far above both;
* FAS's fixed point: at a fine rest state (a cloth hanging from two corners, settled at the fine level
  with no contacts) the τ-corrected coarse problem is at rest at the restricted state, so one correction
  moves the fine state only by the coarse response to the restricted fine residual (linear in that
  residual, which float32 settling leaves at ~1 % of a vertex weight); the plain correction moves it toward
  the coarse level's own rest state, a discretisation difference independent of the residual. So the FAS
  move must be below 1 % of the plain one (measured: 0.26 %);
* curved (PN-triangle) prolongation reproduces a flat placement exactly (linear precision of the cubic
  patch: float64 round-off, 1e-12 m) and a sphere of radius R away from the boundary to third order in h:
  within h³/(8R²) of the sphere (the quadratic sagitta h²/(8R) of linear prolongation times h/R), where
  linear prolongation is off by about h²/(8R).
"""

from __future__ import annotations

import numpy as np
import pytest

import clothsim as cs
from clothsim.multires import CoarseCorrection, LevelSet, MultiResSimulator, live_warp_array_bytes
from clothsim.multires.energy import mechanical_energy
from clothsim.multires.fas import FASCorrection
from clothsim.multires.forces import ForceModel

G = 9.81


def test_forces_are_minus_the_energy_gradient(device):
    from clothsim import garments

    h = garments.load_shipped("straight_skirt").hierarchy((0.08,))
    cloth = h.level(0).to_cloth("cotton", pin=True)
    assert len(cloth.seams) > 0
    sim = cs.Simulator([cloth], device=device)
    rng = np.random.default_rng(3)
    x = sim.positions().astype(np.float64) + rng.normal(0.0, 5e-3, (sim.particle_count, 3))
    f = ForceModel(sim).forces(x)
    zero_v = np.zeros_like(x)

    def energy(y):
        e = mechanical_energy(sim, y, zero_v)
        return e["elastic"] + e["gravity"]

    eps = 1e-6
    seam_vertex = int(cloth.seams[0, 0])
    for i in [seam_vertex, *rng.choice(sim.particle_count, 12, replace=False)]:
        for d in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, d] += eps
            xm[i, d] -= eps
            fd = -(energy(xp) - energy(xm)) / (2 * eps)
            assert abs(fd - f[i, d]) <= 1e-6 * np.abs(f).max(), (i, d, fd, f[i, d])
    sim.release()


def _corner_levels():
    def build(i):
        res = ((5, 5), (9, 9))[i]
        c = cs.Cloth.grid(size=(0.4, 0.4), resolution=res, fabric="cotton", center=(0.0, 1.0, 0.0), plane="xy")
        top = c.boundary("top")
        c.pin([top[0], top[-1]])
        return [c]

    return LevelSet(build, None, 2, (0.1, 0.05), name="corners")


def test_fas_correction_vanishes_at_a_fine_rest_state_and_the_plain_one_does_not(device):
    lv = _corner_levels()
    base = live_warp_array_bytes(device)
    sim = MultiResSimulator(lv, level=1, device=device, air_damping=5.0, substeps=10, iterations=10)
    sim.step(200)
    v = sim.velocities()
    assert np.abs(v).max() < 1e-4  # at rest (settling leaves float32 noise: ~1e-6 m/s measured on the CPU)
    x = sim.positions()
    moves = {}
    for name in ("plain", "fas"):
        sim.set_positions(x)
        sim.set_velocities(np.zeros_like(x))
        if name == "plain":
            corr = CoarseCorrection(sim, 0, coarse_frames=8)
        else:
            corr = FASCorrection(sim, 0, coarse_steps=8, velocities="zero")
        assert corr.nbytes() > 0
        corr.correct()
        moves[name] = float(np.linalg.norm(sim.positions() - x, axis=1).max())
        if name == "fas":
            # τ makes the coarse force at the restricted state the restricted fine force (Pᵀ·f_f)
            xf = x.astype(np.float64)
            xc0 = lv.map(xf, 1, 0)
            fc = corr.coarse_forces.forces(xc0) + corr.coarse.external_forces()
            rf = corr.fine_forces.forces(xf)
            rf[sim.simulator.model.host_pinned] = 0.0
            rc = np.asarray(corr.P.T @ rf)
            free_c = ~corr.coarse.model.host_pinned
            assert np.abs(fc[free_c] - rc[free_c]).max() < 1e-6 * np.abs(corr.coarse_forces.forces(xc0)).max()
        corr.release()
    assert moves["plain"] > 1e-4, moves  # the coarse level's own rest state is measurably elsewhere
    # "vanishes" down to float32: the fine forces evaluated in float64 at the settled float32 positions
    # are not zero (~6e-5 N at most here, position rounding times the membrane stiffness), and the FAS
    # correction moves the cloth by what that residual asks for. Measured on the CPU: plain 0.72 mm, FAS
    # 3.1 um after these 200 settling frames (2.7 um before the bending kernel's rounding changed in
    # 20a8b75; 10 um after only 100 frames, when the sheet had not yet stopped, 5.2 um after 400)
    assert moves["fas"] < 0.01 * moves["plain"], moves
    sim.release()
    assert live_warp_array_bytes(device) == base


def test_fas_bad_input(device):
    lv = _corner_levels()
    sim = MultiResSimulator(lv, level=1, device=device)
    with pytest.raises(cs.InputError, match="velocities must be"):
        FASCorrection(sim, 0, velocities="bounce")
    with pytest.raises(cs.InputError, match="coarse_steps"):
        FASCorrection(sim, 0, coarse_steps=0)
    with pytest.raises(cs.InputError, match="coarser than the active level"):
        FASCorrection(sim, 1)
    sim.release()


def test_curved_prolongation_is_exact_on_flat_and_third_order_on_a_sphere():
    lv = LevelSet.grid(size=(1.0, 1.0), resolutions=((9, 9), (17, 17)), plane="xz", center=(0.0, 0.0, 0.0), pin=None)
    xc_flat = lv.cloths(0)[0].vertices.astype(np.float64) @ np.array([[1, 0, 0], [0, 0.6, 0.8], [0, -0.8, 0.6]])
    assert np.abs(lv.prolong_curved(xc_flat, 0, 1) - lv.map(xc_flat, 0, 1)).max() < 1e-12
    R = 0.5

    def wrap(p):  # the plane onto the sphere |x| = R, distances from the centre kept along meridians
        r = np.hypot(p[:, 0], p[:, 2])
        a = r / R
        s = np.sin(a) / np.maximum(r, 1e-12)
        return np.stack([R * s * p[:, 0], R * np.cos(a), R * s * p[:, 2]], axis=1)

    xc = wrap(lv.cloths(0)[0].vertices.astype(np.float64))
    lin = np.abs(np.linalg.norm(lv.map(xc, 0, 1), axis=1) - R)
    cur = np.abs(np.linalg.norm(lv.prolong_curved(xc, 0, 1), axis=1) - R)
    p = lv.cloths(1)[0].vertices
    inner = (np.abs(p[:, 0]) < 0.3) & (np.abs(p[:, 2]) < 0.3)  # boundary normals are one-sided
    h = lv.edge_lengths[0]
    assert lin[inner].max() > 0.5 * h * h / (8 * R)
    assert cur[inner].max() < h ** 3 / (8 * R * R), (cur[inner].max(), h ** 3 / (8 * R * R))
    # coarser destination: the plain map
    assert np.array_equal(lv.prolong_curved(lv.map(xc, 0, 1), 1, 0), lv.map(lv.map(xc, 0, 1), 1, 0))


def test_collider_proxy_is_close_oriented_and_follows_the_pose(device):
    """Vertex clustering of a 1280-triangle sphere (R = 0.2 m) at 5 cm: fewer triangles; every proxy vertex
    inside the sphere (a mean of points on it) by no more than 3·cell²/(2R) (the sagitta of a chord as long
    as a cell's diagonal, cell·√3); the enclosed volume keeps its sign (orientation) and lies between that of
    the ball of radius R − 3·cell²/(2R) and the sphere's (facets cut a little deeper than the vertices). A pose (a rigid motion) maps to the proxy exactly (cluster means are affine)."""
    from clothsim.multires.proxy import cluster_proxy

    R, cell = 0.2, 0.05
    sph = cs.Collider.sphere(radius=R)
    p = cluster_proxy(sph.vertices, sph.triangles, cell)
    assert 20 < len(p.triangles) < len(sph.triangles) // 2
    r = np.linalg.norm(p.vertices, axis=1)
    assert r.max() <= R + 1e-9 and r.min() >= R - 3 * cell * cell / (2 * R)
    tri = p.vertices[p.triangles]
    vol = np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2])).sum() / 6.0
    ratio = vol / (4 / 3 * np.pi * R ** 3)
    assert (1 - 3 * cell * cell / (2 * R * R)) ** 3 < ratio <= 1.0, ratio  # measured 0.955
    th = 0.4
    rot = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]])
    moved = sph.vertices @ rot.T + np.array([0.1, 0.2, -0.3])
    assert np.abs(p.pose(moved) - (p.vertices @ rot.T + np.array([0.1, 0.2, -0.3]))).max() < 1e-12
    with pytest.raises(cs.InputError, match="cell must be a positive length"):
        cluster_proxy(sph.vertices, sph.triangles, 0.0)


def test_coarse_level_collides_with_the_proxy_and_the_fine_level_with_the_body(device):
    from clothsim.multires.proxy import cluster_proxy

    lv = LevelSet.grid(size=(0.4, 0.4), resolutions=((5, 5), (9, 9)), plane="xz", center=(0.0, 0.4, 0.0), pin=None)
    sph = cs.Collider.sphere(center=(0.0, 0.2, 0.0), radius=0.1)
    proxy = cluster_proxy(sph.vertices, sph.triangles, 0.04)
    sim = MultiResSimulator(lv, level=0, device=device, substeps=4, iterations=4)
    sim.add_collider(sph, proxy_cells={0: 0.04})
    buf = sim.simulator.solver.colliders[0]
    assert buf.vertex_count == len(proxy.vertices)
    est = sim.estimate_level_bytes(0)["total"]
    assert est == sim.memory_report()["total"]  # the estimate counts the proxy, not the full body
    target = sph.vertices + np.array([0.0, 0.05, 0.0])  # the collider moves up 5 cm during the next frame
    sim.set_collider_vertices(0, target)
    assert np.abs(buf.end.numpy() - proxy.pose(target)).max() < 1e-6
    sim.step(1)
    sim.set_level(1)
    buf = sim.simulator.solver.colliders[0]
    assert buf.vertex_count == len(sph.vertices)
    assert np.abs(buf.start.numpy() - target).max() < 1e-6  # the full body, in its latest pose
    sim.release()

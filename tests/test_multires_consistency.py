"""Level consistency for coarse-to-fine draping: what a coarse level is given so that its rest state is the
fine level's and its prolongation is intersection-free (clothsim.multires.proxy chord offsets, the
MultiResSimulator's ``level_offsets`` and ``level_thickness``).

References and tolerances:

* curvature of an icosphere of radius R (Collider.sphere, 1280 triangles): every vertex's largest normal
  curvature is 1/R; the pair-circle estimate −2·n·d/|d|² is exact on a sphere for the exact (radial) normal,
  and a normal off by ε changes it by at most 2ε/|d|, so with pairs at |d| ≥ R/4 (scale R/2) the estimate
  is within 8ε·(1/R) of 1/R, ε the largest angle between an area-weighted vertex normal and the radius
  (measured in the test, about 1°); a plane has 0;
* chord offsets (h² − h_f²)·κ/12 follow from the circumscribed polygon h = 2R·tan(π/n) (see
  :func:`chord_offsets`); checked against that exact relation on a circle: a ring of n sides of length h
  fits a circle of radius h/(2·tan(π/n)), L/(2π) minus h²/(12R) to O(h⁴/R³);
* an offset level's collider is the body moved in along its vertex normals (a sphere of radius R − δ, within
  the same normal error), at that level only, following the body's poses;
* level thickness is the fabric thickness that level simulates with, at that level only, and again after the
  level is left and rebuilt from its host snapshot.
"""

from __future__ import annotations

import numpy as np
import pytest

import clothsim as cs
from clothsim.multires import LevelSet, MultiResSimulator
from clothsim.multires.proxy import OffsetProxy, chord_offsets, convex_curvature


def test_convex_curvature_of_a_sphere_and_a_plane():
    from clothsim.multires.proxy import vertex_normals

    R = 0.2
    sph = cs.Collider.sphere(radius=R)
    n = vertex_normals(sph.vertices, sph.triangles)
    eps = float(np.arccos(np.clip(np.einsum("ij,ij->i", n, sph.vertices / R), -1, 1)).max())
    assert eps < np.radians(2.0)
    k = convex_curvature(sph.vertices, sph.triangles, scale=R / 2)
    assert np.all(np.abs(k * R - 1.0) <= 8 * eps), (k.min() * R, k.max() * R, 8 * eps)
    # over the mesh's own edges (22 mm) the same normal error weighs more, but the estimate is never below 1/R
    # by more than that bound on this mesh either
    k1 = convex_curvature(sph.vertices, sph.triangles)
    assert k1.min() * R > 1 - 8 * eps
    # a flat grid (open, one-sided): no curvature anywhere
    c = cs.Cloth.grid(size=(0.5, 0.5), resolution=(6, 6))
    assert np.abs(convex_curvature(c.vertices, c.triangles)).max() < 1e-9


def test_chord_offsets_follow_the_circumscribed_polygon():
    # the exact relation behind the offsets: n sides of length h around a circle of radius R
    R = 0.12
    for h in (0.04, 0.02, 0.01):
        n = 2 * np.pi * R / h  # sides of rest length h on a ring of rest length L = 2πR
        r_fit = h / (2 * np.tan(np.pi / n))  # the circle such a ring fits
        assert abs((R - r_fit) - h * h / (12 * R)) < 0.2 * h ** 4 / R ** 3
    from clothsim.multires.proxy import vertex_normals

    sph = cs.Collider.sphere(radius=R)  # edges 13 mm: pairs at 20-40 mm for a 40 mm cloth edge
    n = vertex_normals(sph.vertices, sph.triangles)
    eps = float(np.arccos(np.clip(np.einsum("ij,ij->i", n, sph.vertices / R), -1, 1)).max())
    d = chord_offsets(sph.vertices, sph.triangles, 0.04, 0.01, cap=0.003)
    expect = (0.04 ** 2 - 0.01 ** 2) / (12 * R)  # 1.04 mm
    n_err = 2 * eps * R / 0.02  # relative: 2ε/|d| against κ = 1/R (see the sphere test), |d| >= 20 mm
    assert np.all(np.abs(d - expect) <= n_err * expect), (d.min(), d.max(), expect)
    assert np.all(chord_offsets(sph.vertices, sph.triangles, 0.04, 0.01, cap=5e-4) == 5e-4)  # capped
    assert np.all(chord_offsets(sph.vertices, sph.triangles, 0.01, 0.01, cap=0.003) == 0.0)  # same level: none


def _levels():
    return LevelSet.grid(size=(0.4, 0.4), resolutions=((5, 5), (9, 9)), plane="xz", center=(0.0, 0.4, 0.0), pin=None)


def test_offset_level_collides_with_the_body_moved_in(device):
    R, off = 0.1, 0.004
    sph = cs.Collider.sphere(center=(0.0, 0.2, 0.0), radius=R)
    sim = MultiResSimulator(_levels(), level=0, device=device, substeps=4, iterations=4)
    sim.add_collider(sph, level_offsets={0: off})
    r0 = np.linalg.norm(sim.simulator.solver.colliders[0].points.numpy() - [0.0, 0.2, 0.0], axis=1)
    assert np.all(np.abs(r0 - (R - off)) < 0.05 * off)
    target = sph.vertices + np.array([0.0, 0.05, 0.0])  # the body moves up 5 cm during the next frame
    sim.set_collider_vertices(0, target)
    end = sim.simulator.solver.colliders[0].end.numpy()
    assert np.abs(end - OffsetProxy(sph.triangles, np.full(len(target), off)).pose(target)).max() < 1e-6
    sim.step(1)
    sim.set_level(1)  # the fine level: the body itself, in its latest pose
    assert np.abs(sim.simulator.solver.colliders[0].start.numpy() - target).max() < 1e-6
    sim.release()
    s2 = MultiResSimulator(_levels(), level=0, device=device, substeps=4, iterations=4)
    with pytest.raises(cs.InputError, match="both a proxy cell and an offset"):
        s2.add_collider(sph, proxy_cells={0: 0.04}, level_offsets={0: off})
    with pytest.raises(cs.InputError, match=r"level_offsets\[0\] must be a number or \d+ numbers"):
        s2.add_collider(sph, level_offsets={0: [0.001, 0.002]})
    s2.release()


def test_level_thickness_applies_at_its_level_only(device):
    t_fab = cs.Fabric.resolve("cotton").thickness  # 0.3 mm
    sim = MultiResSimulator(_levels(), level=0, device=device, substeps=4, iterations=4, level_thickness={0: 0.002})

    def thickness():
        return float(sim.simulator.model.mat_thickness.numpy()[0])

    assert thickness() == pytest.approx(0.002)
    assert sim.simulator.model.fabrics[0].thickness == pytest.approx(0.002)
    sim.set_level(1)
    assert thickness() == pytest.approx(t_fab)
    sim.set_level(0)  # rebuilt from the level's host snapshot: thickened again
    assert thickness() == pytest.approx(0.002)
    sim.set_fabric(cs.Fabric.resolve("cotton").replace(friction=0.2))  # a fabric change keeps the level's thickness
    assert thickness() == pytest.approx(0.002)
    sim.set_level(1)
    assert thickness() == pytest.approx(t_fab) and sim.simulator.model.fabrics[0].friction == pytest.approx(0.2)
    sim.release()
    with pytest.raises(cs.InputError, match=r"level_thickness\[0\] must be a thickness in \(0, 0.05\] m"):
        MultiResSimulator(_levels(), device=device, level_thickness={0: -1.0})

"""Contacts: cloth on a sphere, on a moving box at the documented collider speed, folded onto itself.

References: a contact holds the cloth at the fabric thickness r outside a collider, so no vertex may
lie inside a closed collider deeper than the contact tolerance. The penalty ½·k_c·(r − d)² carries a
vertex's share of weight w = m·g (and its inertia) at a depth (w + m·a)/k_c below r; with m ≈ 1e-4 kg
and k_c = 1e4 N/m that is < 1e-6 m at rest, so the tolerance is set by the collider's speed instead:
the collider surface moves v·h per substep (h the substep), and a vertex caught by it is pushed back
within that substep, so the tolerance is v·h (1 cm at the documented speed) for the moving box, and
the thickness r for the resting sphere. Triangle–triangle intersections must be zero at the end, cloth
with itself and cloth with collider (a collider's facet edges and corners must not cross the cloth between
its vertices: the solver's collider edge/vertex contacts, clothsim/solver/collider_contacts.py).
"""

import dataclasses

import numpy as np
import pytest

import clothsim as cs
from clothsim.collision import count_mesh_intersections, count_self_intersections, max_penetration


@pytest.mark.parametrize("initial_guess,sweep", [("adaptive", "gauss-seidel"), ("extrapolate", "gauss-seidel"),
                                                  ("adaptive", "jacobi")])
def test_drop_on_sphere(device, initial_guess, sweep):
    # also with the extrapolated first guess (the benchmark's, for moving cloth): contacts bound what the
    # guess starts from, whatever acceleration the last substep had; and with Jacobi sweeps, where every
    # vertex steps from the same iterate (contact planes and pairs as in Gauss–Seidel)
    cloth = cs.Cloth.grid(size=(0.6, 0.6), resolution=(20, 20), fabric="cotton", center=(0.0, 0.62, 0.0), plane="xz")
    sim = cs.Simulator(cloth, device=device, ground=0.0, self_collision=True, initial_guess=initial_guess, sweep=sweep)
    sphere = cs.Collider.sphere(center=(0.0, 0.4, 0.0), radius=0.15, subdivisions=2)
    sim.add_collider(sphere)
    sim.step(40)
    x = sim.positions()
    depth = max_penetration(x, sphere.vertices, sphere.triangles)
    print(f"\nsphere: deepest vertex inside {depth:.2e} m, lowest point {x[:, 1].min():.3f} m")
    assert depth <= cloth.fabric.thickness
    assert x[:, 1].max() < 0.56  # it fell onto the sphere (top at 0.55 + thickness)
    assert count_self_intersections(x, sim.triangles) == 0
    crossings = count_mesh_intersections(x, sim.triangles, sphere.vertices, sphere.triangles)
    print(f"cloth-sphere triangle intersections: {crossings}")
    assert crossings == 0


def test_moving_box_at_documented_speed(device):
    cloth = cs.Cloth.grid(size=(0.4, 0.4), resolution=(16, 16), fabric="cotton", center=(0.0, 0.42, 0.0), plane="xz")
    sim = cs.Simulator(cloth, device=device, ground=0.0, self_collision=True)
    box = cs.Collider.box(center=(0.0, 0.25, 0.0), half_extents=(0.1, 0.15, 0.1))  # clear of the ground: a box sliding on the ground would run over the cloth lying there
    h = sim.add_collider(box)
    v = sim.max_collider_speed  # documented: contact_margin / substep
    assert v <= sim.contact_margin / sim.substep_dt
    sim.step(20)  # drape over the box
    verts = box.vertices.copy()
    worst = 0.0
    for _ in range(6):  # then sweep it sideways at the documented speed
        verts[:, 0] += v * sim.dt
        sim.set_collider_vertices(h, verts)
        sim.step()
        worst = max(worst, max_penetration(sim.positions(), verts, box.triangles))
    for _ in range(10):  # and hold it still while the cloth catches up
        sim.set_collider_vertices(h, verts)
        sim.step()
    x = sim.positions()
    tol = v * sim.substep_dt
    end = max_penetration(x, verts, box.triangles)
    print(f"\nbox at {v:.2f} m/s: deepest vertex while moving {worst:.2e} m (tolerance {tol:.2e}), at the end {end:.2e} m")
    # on CUDA this was a known gap until session 14 (session 12, H200: a vertex 3.57e-3 m inside against 0 on
    # the CPU); session 15 measured 0 on the H200 with session 14's code and with its own, so it is asserted
    assert worst <= tol
    assert end <= cloth.fabric.thickness
    assert count_self_intersections(x, sim.triangles) == 0
    crossings = count_mesh_intersections(x, sim.triangles, verts, box.triangles)
    print(f"cloth-box triangle intersections: {crossings}")
    assert crossings == 0


@pytest.mark.parametrize("sweep", ["gauss-seidel", "jacobi"])
def test_fold_onto_itself(device, sweep):
    """A cloth whose two halves fall onto each other on the ground ends with no self-intersections."""
    cloth = cs.Cloth.grid(size=(0.4, 0.2), resolution=(24, 12), fabric="cotton", center=(0.0, 0.0, 0.0), plane="xy")
    # fold: the left half lies flat on the ground, the right half stands above it, tilted over it
    v = cloth.vertices.copy()
    u = v[:, 0]
    flat = u <= 0.0
    x = np.where(flat, u, 0.0)
    y = np.where(flat, 0.004, 0.004 + u * np.cos(0.3))
    xx = np.where(flat, x, -u * np.sin(0.3) * 0.2)
    cloth.vertices = np.stack([xx, y, v[:, 1]], axis=1)
    sim = cs.Simulator(cloth, device=device, ground=0.0, self_collision=True, sweep=sweep)
    sim.step(45)
    p = sim.positions()
    n = count_self_intersections(p, sim.triangles)
    print(f"\nfold: self-intersections {n}, height range {p[:, 1].min():.4f}..{p[:, 1].max():.4f} m")
    assert n == 0
    assert p[:, 1].max() < 0.05  # the standing half came down


def _pulled_into_ground(device, iterations, surface="ground", pin_depth=0.03):
    """A 20 cm cloth lying on the ground (y = r), its border pinned ``pin_depth`` below the ground, no gravity:
    the membrane pulls the free vertices into the ground plane, which holds them. ``surface="box"``: the
    ground is instead the top face of a box collider (y = 0). Returns (lowest free vertex's height, r)."""
    cloth = cs.Cloth.grid(size=(0.2, 0.2), resolution=(9, 9), fabric="cotton", center=(0.0, 0.0, 0.0), plane="xz")
    r = cloth.fabric.thickness
    cloth.vertices[:, 1] = r
    border = np.where((np.abs(cloth.vertices[:, 0]) > 0.099) | (np.abs(cloth.vertices[:, 2]) > 0.099))[0]
    targets = cloth.vertices[border].copy()
    targets[:, 1] = -pin_depth
    cloth.pin(border, targets)
    sim = cs.Simulator(cloth, device=device, ground=0.0 if surface == "ground" else None, gravity=(0.0, 0.0, 0.0),
                       substeps=1, iterations=iterations, self_collision=False)
    if surface == "box":
        sim.add_collider(cs.Collider.box(center=(0.0, -0.5, 0.0), half_extents=(1.0, 0.5, 1.0)))
    sim.step(1)
    free = np.setdiff1d(np.arange(cloth.vertex_count), border)
    return float(sim.positions()[free, 1].min()), r


def test_few_iterations_do_not_cross_a_contact_plane(device):
    """A vertex block that starts clear of a contact plane must not step through it: the local solve adds a
    plane its Newton step crosses (clothsim/solver/kernels.py, vertex_update). Reference: the converged
    solution (100 iterations) with the border pinned 1 cm under a box collider's top face, where the penalty
    holds the deepest vertex inside the contact layer (compression r − y ≈ 0.03 mm of r = 0.3 mm), clear of
    the surface, so the collider floor (position_limits.above_collider_planes) does not decide it. Bound: at 1 and 2
    iterations the compression within 0.1·r of the converged one. Without the crossing solve the 1-iteration
    Newton step goes through the layer (on the ground it left a vertex 9 mm deep before the floor) and ends on
    the floor, a compression of r. Pinned 3 cm under, the penalty's equilibrium lies under the surface: the
    ground and the box are floors, and on both, at any iteration count, no free vertex ends inside them
    (within the collider floor's COLLIDER_FLOOR_TOL = 1 µm on the box) and the membrane pulls them onto the
    surface (within 0.1 r)."""
    y_conv, r = _pulled_into_ground(device, 100, "box", pin_depth=0.01)
    converged = r - y_conv
    assert 0.0 < converged < 0.5 * r
    for its in (1, 2):
        y, _ = _pulled_into_ground(device, its, "box", pin_depth=0.01)
        print(f"\n{its} iteration(s), box: compression {1e3 * (r - y):.4f} mm, converged {1e3 * converged:.4f} mm")
        assert abs((r - y) - converged) <= 0.1 * r
    for surface, tol in (("ground", 0.0), ("box", 1.0e-6)):
        for its in (1, 2, 100):
            y, _ = _pulled_into_ground(device, its, surface)
            print(f"{its} iteration(s), {surface}: lowest {1e3 * y:.5f} mm")
            assert -tol <= y <= 0.1 * r


def _squeezed(device, iterations, chebyshev_rho=0.0, surface="ground", sweep="gauss-seidel"):
    """A 10 cm cloth 1 mm above the ground under one pinned 2.5 mm above it, both 4 mm thick, no gravity:
    inside the thickness of the ground and of each other, the pinned layer presses the free one down.
    ``surface``: the ground plane, or instead a collider whose top touches y = 0 (a box 2 m wide, a sphere of
    radius 0.5 m). Returns the free layer's positions, the two layers' crossings and the collider."""
    fab = dataclasses.replace(cs.Fabric.resolve("cotton"), thickness=0.004)
    bottom = cs.Cloth.grid(size=(0.1, 0.1), resolution=(11, 11), fabric=fab, center=(0.0, 0.001, 0.0), plane="xz")
    top = cs.Cloth.grid(size=(0.1, 0.1), resolution=(11, 11), fabric=fab, center=(0.005, 0.0025, 0.005), plane="xz")
    top.pin(np.arange(top.vertex_count))
    sim = cs.Simulator([bottom, top], device=device, ground=0.0 if surface == "ground" else None,
                       gravity=(0.0, 0.0, 0.0), iterations=iterations, self_collision=True,
                       chebyshev_rho=chebyshev_rho, sweep=sweep,
                       # every vertex here is near the other layer, which the default ("skip") leaves out of the
                       # Chebyshev step: extrapolate them, so that the step's floor and planes are what is tested
                       chebyshev_contacts="extrapolate")
    collider = None
    if surface == "box":
        collider = cs.Collider.box(center=(0.0, -0.5, 0.0), half_extents=(1.0, 0.5, 1.0))
    elif surface == "sphere":
        collider = cs.Collider.sphere(center=(0.0, -0.5, 0.0), radius=0.5)
    if collider is not None:
        sim.add_collider(collider)
    sim.step(10)
    x = sim.positions()
    return x[: bottom.vertex_count], count_self_intersections(x, sim.triangles), collider


@pytest.mark.parametrize("iterations,chebyshev_rho", [(1, 0.0), (50, 0.0), (10, 0.93)])
def test_pressed_cloth_stays_above_the_ground(device, iterations, chebyshev_rho):
    """The bottom layer of a pile is pressed down by many self-contact pairs of the contact stiffness k_c
    and held up by one ground penalty of the same stiffness, so the penalty equilibrium lies below the
    plane: here, without the floor, the deepest vertex ended 2.17 mm under the ground at 1 iteration and
    at 50 (converged), and a 256×256 fold piled on the ground sank 4.7 cm in 100 frames (H200, 2
    iterations) until two vertices met and the state went non-finite. Reference: the plane, exactly
    (position_limits.above_floor raises a step that ends below it); the layer is pressed onto it (within 0.1 mm)
    and the two layers do not intersect. With Chebyshev acceleration the extrapolation after an iteration is
    kept above the floor too (kernels.chebyshev_kernel)."""
    xb, crossings, _ = _squeezed(device, iterations, chebyshev_rho)
    print(f"\n{iterations} iteration(s): lowest {1e3 * xb[:, 1].min():.4f} mm, crossings {crossings}")
    assert xb[:, 1].min() >= 0.0
    assert xb[:, 1].min() <= 1.0e-4
    assert crossings == 0


@pytest.mark.parametrize("surface", ["box", "sphere"])
@pytest.mark.parametrize("iterations,chebyshev_rho,sweep", [(1, 0.0, "gauss-seidel"), (50, 0.0, "gauss-seidel"),
                                                            (10, 0.93, "gauss-seidel"), (10, 0.0, "jacobi")])
def test_pressed_cloth_stays_outside_a_collider(device, surface, iterations, chebyshev_rho, sweep):
    """The squeeze of test_pressed_cloth_stays_above_the_ground on a collider: the collider's one penalty
    against the pile's many self-contact pairs put the bottom layer 1.79 mm into a box's top face and up to
    1.29 mm into a sphere (1 to 50 iterations, every sweep). A collider contact plane is a floor for a vertex
    that starts the substep outside it (position_limits.above_collider_planes). Reference: the surface; tolerance
    1 µm, the floor's COLLIDER_FLOOR_TOL for float32 rounding of a point put on a plane (measured: at most
    0.4 µm by max_penetration's float32 inside test, the box's lowest vertex at 0). The layer is pressed onto
    the surface (the box: lowest vertex within 0.1 mm of its top) and the layers do not cross."""
    xb, crossings, col = _squeezed(device, iterations, chebyshev_rho, surface, sweep)
    depth = max_penetration(xb, col.vertices, col.triangles)
    print(f"\n{surface}, {iterations} iteration(s), rho {chebyshev_rho}, {sweep}: deepest {1e3 * depth:.5f} mm "
          f"inside, lowest {1e3 * xb[:, 1].min():.5f} mm, crossings {crossings}")
    assert depth <= 1.0e-6
    if surface == "box":
        assert -1.0e-6 <= xb[:, 1].min() <= 1.0e-4
    assert crossings == 0

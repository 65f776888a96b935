"""Pins hold exactly; moving pin targets are reached exactly; a seam closes.

References:
* a pinned vertex is not a degree of freedom: after every frame its position is its target, bit for
  bit (the float32 value of the target given; the pin kernel writes lerp(start, end, 1) = end exactly);
* a moving target set with ``set_pin_targets`` is reached at the end of the next frame, bit for bit,
  and the pinned vertex moves linearly in between;
* a seam is a zero-length spring between free pieces of cloth with no external load, so its only
  equilibrium is gap = 0. "Closed" means below the fabric thickness (the distance the cloth keeps from
  colliders and itself; a smaller gap is invisible and inside the contact tolerance), within a few
  frames; after that the gap decays to float32 resolution, a few ulp of the coordinates.
"""

import numpy as np

import clothsim as cs


def _hanging(device):
    cloth = cs.Cloth.grid(size=(0.3, 0.3), resolution=(7, 7), center=(0.0, 1.0, 0.0), plane="xz")  # flat: it swings down
    top = cloth.boundary("top")
    cloth.pin(top)
    sim = cs.Simulator(cloth, device=device, substeps=5, iterations=5)
    return cloth, top, sim


def test_pinned_vertices_exactly_fixed(device):
    """x[pins] == float32(pin target) bit for bit after every frame, while the rest of the cloth moves."""
    cloth, top, sim = _hanging(device)
    target = cloth.vertices[top].astype(np.float32)
    x_start = sim.positions()
    for _ in range(8):
        sim.step()
        x = sim.positions()
        assert np.array_equal(x[top], target), "a pinned vertex left its target"
    free = np.setdiff1d(np.arange(sim.particle_count), top)
    assert np.abs(x[free] - x_start[free]).max() > 1e-3  # the cloth did move under the pins


def test_moving_pin_targets_reached_exactly(device):
    """After set_pin_targets(T) and one frame, x[pins] == float32(T) bit for bit; a second target then a
    third (sliding the edge sideways and up) are reached too; the cloth follows (stays finite, moves)."""
    cloth, top, sim = _hanging(device)
    base = cloth.vertices[top]
    for f, offset in enumerate([(0.02, 0.0, 0.0), (0.05, 0.01, 0.0), (0.05, 0.03, -0.02), (0.05, 0.03, -0.02)]):
        targets = base + np.asarray(offset)
        sim.set_pin_targets(targets)
        sim.step()
        x = sim.positions()
        assert np.array_equal(x[top], targets.astype(np.float32)), f"frame {f + 1}: pins missed their targets"
    assert np.all(np.isfinite(sim.positions()))


def _two_strips(device, gap):
    a = cs.Cloth.grid(size=(0.1, 0.1), resolution=(5, 5), center=(-0.05 - gap / 2, 0.5, 0.0), plane="xz")
    b = cs.Cloth.grid(size=(0.1, 0.1), resolution=(5, 5), center=(0.05 + gap / 2, 0.5, 0.0), plane="xz")
    n = a.vertex_count
    cloth = cs.Cloth.from_mesh(
        np.vstack([a.vertices, b.vertices]), np.vstack([a.triangles, b.triangles + n]),
        rest_uv=np.vstack([a.rest_uv - [0.05 + gap / 2, 0.0], b.rest_uv + [0.05 + gap / 2, 0.0]]), name="two strips")
    cloth.add_seam(a.boundary("right"), b.boundary("left") + n)
    sim = cs.Simulator(cloth, device=device, gravity=(0.0, 0.0, 0.0), substeps=10, iterations=10)
    return cloth, sim


def test_seam_closes(device):
    """Two strips 2 cm apart, sewn along facing edges, no gravity, no pins: max seam gap below the
    fabric thickness after 3 frames, and below 4 ulp of the coordinates after 10 (module docstring)."""
    gap0 = 0.02
    cloth, sim = _two_strips(device, gap0)
    a, b = cloth.seams[:, 0], cloth.seams[:, 1]
    gaps = []
    for _ in range(10):
        sim.step()
        x = sim.positions()
        gaps.append(float(np.linalg.norm(x[a] - x[b], axis=1).max()))
    thickness = cloth.fabric.thickness
    fp = 4.0 * float(np.spacing(np.float32(np.abs(x).max())))
    print(f"\nseam gap [m] by frame (start {gap0}): " + ", ".join(f"{g:.2e}" for g in gaps)
          + f"; thickness {thickness:.1e}, float32 bound {fp:.1e}")
    assert gaps[2] < thickness
    assert gaps[-1] <= fp
    assert np.all(np.isfinite(x))

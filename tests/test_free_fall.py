"""Free fall: an unpinned cloth with no drag follows the backward-Euler discrete closed form.

Reference (per substep of length h, n substeps after the start, t = n·h): with no elastic force
acting on a rigid translation, one VBD substep is exactly backward Euler,

    v_{n+1} = v_n + h·g,   x_{n+1} = x_n + h·v_{n+1}
    ⇒ v_n = v0 + g·t,      x_n = x0 + v0·t + g·h²·n(n+1)/2,

which differs from the continuous x0 + v0·t + ½·g·t² by exactly ½·g·h·t (the method's O(h) error).

Float32 bound: each substep rounds the position update to half a unit in the last place (ulp) of
|x|, and the velocity is read back as (x_{n+1} − x_n)/h, so every rounding is carried into all later
substeps: the position error after n substeps is at most ulp·n(n+1)/2 and the velocity error at most
n·ulp/h (ulp of the largest coordinate reached, float32). That is the tolerance; nothing else.
"""

import numpy as np
import pytest

import clothsim as cs

G = np.array([0.0, -9.81, 0.0])
V0 = np.array([0.3, 1.0, -0.2])  # m/s: a throw, so the v0·t term is checked too


def _ulp32(x: np.ndarray) -> float:
    return float(np.spacing(np.float32(np.max(np.abs(x)))))


@pytest.mark.parametrize("substeps", [4, 10])
def test_free_fall_matches_backward_euler(device, substeps):
    """x_n = x0 + v0·t + g·h²·n(n+1)/2 and v_n = v0 + g·t, to float32 rounding (module docstring)."""
    cloth = cs.Cloth.grid(size=(0.4, 0.4), resolution=(7, 7), center=(0.0, 0.5, 0.0), plane="xz")
    sim = cs.Simulator(cloth, device=device, dt=1.0 / 60.0, substeps=substeps, iterations=4, drag=0.0,
                       gravity=tuple(G))
    x0 = sim.positions().astype(np.float64)
    sim.set_velocities(np.tile(V0, (sim.particle_count, 1)))
    h = sim.substep_dt
    frames = 12
    for f in range(1, frames + 1):
        sim.step()
        n = f * substeps
        t = n * h
        x = sim.positions().astype(np.float64)
        v = sim.velocities().astype(np.float64)
        x_disc = x0 + V0 * t + G * h * h * n * (n + 1) / 2.0
        ulp = _ulp32(np.concatenate([x0, x]))
        x_tol = ulp * n * (n + 1) / 2.0
        v_tol = n * ulp / h
        x_err = np.abs(x - x_disc).max()
        v_err = np.abs(v - (V0 + G * t)).max()
        assert x_err <= x_tol, f"frame {f}: |x - x_disc| = {x_err:.3g} m > float32 bound {x_tol:.3g} m"
        assert v_err <= v_tol, f"frame {f}: |v - (v0 + g t)| = {v_err:.3g} m/s > float32 bound {v_tol:.3g} m/s"
    print(f"\nfree fall, {substeps} substeps, t = {t:.3f} s: |x - x_disc| = {x_err:.3g} m (bound {x_tol:.3g}), "
          f"|v - g t| = {v_err:.3g} m/s (bound {v_tol:.3g})")


@pytest.mark.parametrize("substeps", [4, 10])
def test_free_fall_within_first_order_of_continuous(device, substeps):
    """|x − (x0 + v0·t + ½·g·t²)| = ½·|g|·h·t (backward Euler's O(h) error), plus the float32 bound above.

    The cloth must also fall *further* than the continuous parabola (backward Euler uses the
    end-of-substep velocity), i.e. the deviation has the sign of g."""
    cloth = cs.Cloth.grid(size=(0.4, 0.4), resolution=(7, 7), center=(0.0, 0.5, 0.0), plane="xz")
    sim = cs.Simulator(cloth, device=device, dt=1.0 / 60.0, substeps=substeps, iterations=4, drag=0.0)
    x0 = sim.positions().astype(np.float64)
    frames = 12
    sim.step(frames)
    h = sim.substep_dt
    n = frames * substeps
    t = n * h
    x = sim.positions().astype(np.float64)
    dev = x - (x0 + 0.5 * G * t * t)
    bound = 0.5 * 9.81 * h * t
    fp = _ulp32(np.concatenate([x0, x])) * n * (n + 1) / 2.0
    assert np.abs(dev).max() <= bound + fp
    # the deviation is exactly the first-order term, pointing along g
    np.testing.assert_allclose(dev[:, 1], -bound, rtol=0, atol=fp)
    np.testing.assert_allclose(dev[:, [0, 2]], 0.0, rtol=0, atol=fp)
    print(f"\nfree fall vs ½gt², {substeps} substeps: deviation {-dev[:, 1].mean():.4g} m, ½ g h t = {bound:.4g} m")


def test_external_forces_add_to_gravity_and_survive_checkpoint(device, tmp_path):
    """Per-vertex forces f_i (Simulator.set_external_forces) act as an extra acceleration f_i/m_i: with a
    uniform f_i = m_i·a (a rigid push, no elastic response) the backward-Euler closed form above holds
    with g + a; pinned vertices stay put; a checkpoint keeps the forces, so resuming is bit-identical."""
    a = np.array([2.0, 0.0, -1.0])
    cloth = cs.Cloth.grid(size=(0.4, 0.4), resolution=(7, 7), center=(0.0, 0.5, 0.0), plane="xz")
    sim = cs.Simulator(cloth, device=device, dt=1.0 / 60.0, substeps=4, iterations=4, drag=0.0, gravity=tuple(G))
    x0 = sim.positions().astype(np.float64)
    m = np.asarray(sim.model.host_mass)[:, None]
    sim.set_external_forces(m * a)
    np.testing.assert_allclose(sim.external_forces(), m * a, rtol=1e-6)
    frames = 6
    sim.step(frames)
    n = frames * 4
    h = sim.substep_dt
    x = sim.positions().astype(np.float64)
    x_disc = x0 + (G + a) * h * h * n * (n + 1) / 2.0
    tol = _ulp32(np.concatenate([x0, x])) * n * (n + 1) / 2.0
    assert np.abs(x - x_disc).max() <= tol
    path = tmp_path / "ext.npz"
    sim.save_checkpoint(path)
    sim.step(3)
    ref = sim.positions()
    sim.set_external_forces(None)
    assert sim.external_forces() is None
    sim.load_checkpoint(path)
    sim.step(3)
    np.testing.assert_array_equal(sim.positions(), ref)

    pinned = cs.Cloth.grid(size=(0.4, 0.4), resolution=(7, 7), center=(0.0, 0.5, 0.0), plane="xz")
    pinned.pin([0, 1])
    sim = cs.Simulator(pinned, device=device, substeps=4, iterations=4, gravity=(0.0, 0.0, 0.0))
    x0 = sim.positions()
    sim.set_external_forces(np.tile([5.0, 0.0, 0.0], (sim.particle_count, 1)))
    sim.step(2)
    np.testing.assert_array_equal(sim.positions()[[0, 1]], x0[[0, 1]])

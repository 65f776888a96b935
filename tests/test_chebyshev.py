"""Chebyshev acceleration of the VBD iterations (Simulator(chebyshev_rho=...)), and where they start
(Simulator(initial_guess=...)).

The acceleration changes how fast the iterations approach the substep's minimiser, never the
minimiser: (1) with enough iterations, runs with and without it agree to the solver's convergence
level; (2) at a fixed, small iteration count the accelerated run is closer to the converged
reference (RMS position distance after the same simulated time). Scene: a pinned, swinging
16 x 16 sheet, the benchmark's (benchmarks/sim_grid.py) physics at a size a test can afford.
"""

import numpy as np
import pytest

import clothsim as cs


def _run(device, iterations, rho, frames=4, initial_guess="inertia", **chebyshev):
    """Final positions of the test sheet; ``chebyshev``: chebyshev_delay / chebyshev_cap for the Simulator."""
    cloth = cs.Cloth.grid(size=(0.5, 0.5), resolution=(16, 16), fabric="cotton", center=(0.0, 1.0, 0.0), plane="xz")
    cloth.pin(cloth.boundary("top"))
    sim = cs.Simulator(cloth, device=device, substeps=5, iterations=iterations, chebyshev_rho=rho,
                       initial_guess=initial_guess, **chebyshev)
    sim.step(frames)
    return sim.positions().astype(np.float64)


def _rms(a, b):
    return float(np.sqrt(np.mean(np.sum((a - b) ** 2, axis=1))))


def test_chebyshev_converges_faster_to_the_same_solution(device):
    ref = _run(device, 400, 0.0)
    swing = _rms(ref, _run(device, 400, 0.0, frames=0))  # how far the sheet moved: the scale of the errors
    # same minimiser: at 400 iterations both are converged to well under 0.1 % of the motion
    assert _rms(_run(device, 400, 0.8), ref) < 1e-3 * swing
    # the gain grows with the iteration count (Chebyshev's ω rises from 1 over the first iterations):
    # measured on this scene (CPU) 0.85x the plain error at 3 iterations, 0.74x at 6, 0.59x at 12,
    # 0.43x at 24; the bound at 12 leaves ~25 % for other platforms' rounding, and fails if the
    # acceleration does nothing (1x) or diverges
    plain = _rms(_run(device, 12, 0.0), ref)
    fast = _rms(_run(device, 12, 0.8), ref)
    print(f"\n12 iterations: error {plain:.3e} m plain, {fast:.3e} m with Chebyshev (rho 0.8); motion {swing:.3e} m")
    assert fast < 0.75 * plain


def test_chebyshev_delay_runs_plain_iterations_first(device):
    # delay d (Wang 2015's S): the first d iterations of each substep are plain Gauss-Seidel sweeps, and
    # the acceleration needs two iterations of its own to act: with d + 1 iterations or fewer the run is
    # the plain one, bit for bit
    plain = _run(device, 3, 0.0, frames=2, chebyshev_delay=0)
    assert np.array_equal(_run(device, 3, 0.95, frames=2, chebyshev_delay=2), plain)
    assert not np.array_equal(_run(device, 3, 0.95, frames=2, chebyshev_delay=1), plain)


def test_chebyshev_delay_lets_a_larger_rho_converge(device):
    ref = _run(device, 400, 0.0)
    assert _rms(_run(device, 400, 0.95, chebyshev_delay=1), ref) < 1e-3 * _rms(ref, _run(device, 400, 0.0, frames=0))
    # a larger rho overshoots when the acceleration starts from the first, far-off iterate (on the
    # benchmark's 64 x 64 sheet rho 0.9 with no delay left an error of 0.16 m after 2 iterations, and
    # 0.95 diverged); after one plain sweep rho 0.95 is stable and converges faster. Measured on this
    # scene (CPU, 12 iterations): 1.64e-3 m plain, 9.7e-4 m rho 0.8 from the start, 2.6e-4 m rho 0.95
    # delay 1 (0.27x); the bound leaves room for other platforms' rounding
    plain = _rms(_run(device, 12, 0.0), ref)
    early = _rms(_run(device, 12, 0.8), ref)
    delayed = _rms(_run(device, 12, 0.95, chebyshev_delay=1), ref)
    print(f"\n12 iterations: error {plain:.3e} m plain, {early:.3e} m rho 0.8, {delayed:.3e} m rho 0.95 delay 1")
    assert delayed < 0.5 * early


def test_chebyshev_delay_is_checked():
    cloth = cs.Cloth.grid(size=(0.5, 0.5), resolution=(4, 4), fabric="cotton")
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(cs.InputError, match="chebyshev_delay"):
            cs.Simulator(cloth, device="cpu", chebyshev_delay=bad)


def test_chebyshev_cap_keeps_the_first_sweeps_from_overshooting(device):
    # the recurrence's ω starts above its limit ω∞ = 2/(1 + √(1 − ρ²)) (ρ 0.93: 1.76 at the second sweep
    # against 1.46); capped, a large ρ helps from the second sweep on, with no plain sweep first
    ref = _run(device, 400, 0.0)
    assert _rms(_run(device, 400, 0.93, chebyshev_cap=True), ref) < 1e-3 * _rms(ref, _run(device, 400, 0.0, frames=0))
    errs = {(k, name): _rms(run(), ref) for k in (2, 12) for name, run in (
        ("plain", lambda: _run(device, k, 0.0)), ("rho 0.8", lambda: _run(device, k, 0.8)),
        ("rho 0.93", lambda: _run(device, k, 0.93)), ("rho 0.93 capped", lambda: _run(device, k, 0.93, chebyshev_cap=True)))}
    print("\n" + "\n".join(f"{k} iterations, {name}: {e:.3e} m" for (k, name), e in errs.items()))
    # measured on this scene (CPU): 2 iterations 3.80e-3 m uncapped, 3.73e-3 capped (ρ 0.8: 3.74e-3, plain
    # 3.60e-3: on this small sheet no acceleration pays at 2 sweeps); 12 iterations 4.9e-4 m capped
    # against 9.7e-4 for ρ 0.8 (0.50x) and 3.5e-4 uncapped (the cap costs some speed where the recurrence
    # does not overshoot; on the benchmark's 64 x 64 sheet it did, see the Simulator docstring)
    assert errs[2, "rho 0.93 capped"] < errs[2, "rho 0.93"]
    assert errs[12, "rho 0.93 capped"] < 0.7 * errs[12, "rho 0.8"]


def test_chebyshev_cap_is_checked():
    cloth = cs.Cloth.grid(size=(0.5, 0.5), resolution=(4, 4), fabric="cotton")
    for bad in (1, "yes", None):
        with pytest.raises(cs.InputError, match="chebyshev_cap"):
            cs.Simulator(cloth, device="cpu", chebyshev_cap=bad)


def test_extrapolated_guess_starts_closer_and_converges_to_the_same_solution(device):
    # initial_guess="extrapolate" starts each substep at x + h·v + h²·a (a: the last substep's acceleration,
    # clamped to 2 g) instead of the inertial target x + h·v + h²·g; the minimiser is the same
    ref = _run(device, 400, 0.0)
    swing = _rms(ref, _run(device, 400, 0.0, frames=0))
    assert _rms(_run(device, 400, 0.0, initial_guess="extrapolate"), ref) < 1e-3 * swing
    # at few iterations it is much closer to the converged run: measured on this scene (CPU, plain sweeps)
    # 3.60e-3 -> 1.91e-3 m at 2 iterations (0.53x), 2.97e-3 -> 1.05e-3 m at 4 (0.35x); the bounds leave
    # ~30 % for other platforms' rounding and fail if the guess does nothing
    for k, bound in ((2, 0.7), (4, 0.5)):
        inertia = _rms(_run(device, k, 0.0), ref)
        extrapolated = _rms(_run(device, k, 0.0, initial_guess="extrapolate"), ref)
        print(f"\n{k} iterations: error {inertia:.3e} m from the inertial target, {extrapolated:.3e} m extrapolated")
        assert extrapolated < bound * inertia


def test_initial_guess_is_checked():
    cloth = cs.Cloth.grid(size=(0.5, 0.5), resolution=(4, 4), fabric="cotton")
    with pytest.raises(cs.InputError, match="initial_guess must be 'inertia', 'adaptive' or 'extrapolate'"):
        cs.Simulator(cloth, device="cpu", initial_guess="previous")


def _worst_bound_ratio(device, rho, sweep, frames=6, contacts="skip"):
    """Largest ratio, over vertices and frames, of a vertex's move in a substep to what the self-contact
    conservative bound allows it (``bound_fraction`` × its distance to the nearest non-adjacent primitive at
    the substep's detection). One substep a frame, so a frame's move is the substep's. A sheet thrown at
    3 m/s onto a pinned sheet 6 mm below: the bound, not the contact, stops it in the first substeps."""
    top = cs.Cloth.grid(size=(0.3, 0.3), resolution=(12, 12), fabric="cotton", center=(0.0, 0.106, 0.0), plane="xz")
    bottom = cs.Cloth.grid(size=(0.4, 0.4), resolution=(12, 12), fabric="cotton", center=(0.0, 0.1, 0.0), plane="xz")
    bottom.pin(list(range(bottom.vertex_count)))
    sim = cs.Simulator([top, bottom], device=device, substeps=1, iterations=10, chebyshev_rho=rho, sweep=sweep,
                       self_collision=True, ground=0.0, chebyshev_contacts=contacts)
    v = np.zeros((sim.positions().shape[0], 3), np.float32)
    v[: top.vertex_count, 1] = -3.0
    v[: top.vertex_count, 0] = np.linspace(-1.0, 1.0, top.vertex_count)  # and sheared sideways
    sim.set_velocities(v)
    worst = 0.0
    for _ in range(frames):
        x0 = sim.positions().astype(np.float64)
        sim.step()
        move = np.linalg.norm(sim.positions().astype(np.float64) - x0, axis=1)
        sc = sim.solver.self_contacts
        allowed = sc.bound_fraction * sc.detector.min_dist.numpy().astype(np.float64) + 1.0e-7  # float32 rounding
        worst = max(worst, float(np.max(move / allowed)))
    return worst


@pytest.mark.parametrize("rho,sweep,contacts", [(0.93, "gauss-seidel", "extrapolate"), (0.93, "gauss-seidel", "skip"),
                                               (0.93, "jacobi", "skip"), (0.0, "jacobi", "skip")])
def test_extrapolation_stays_inside_the_self_contact_bound(device, rho, sweep, contacts):
    """The conservative bound (He Chen et al. 2024) keeps every pair from crossing within a substep only if
    every position a vertex takes stays in its ball. The Chebyshev step ω(x − x⁽ⁿ⁻²⁾) + x⁽ⁿ⁻²⁾ (ω up to ~1.5
    at ρ = 0.93) and Jacobi's over-relaxation start from points inside the ball and can end outside it:
    without bounding them again (position_limits.bounded) this scene moved vertices 2.63× (Gauss–Seidel) and 2.41×
    (Jacobi) as far as the bound allows, and 1.0004× (Jacobi, relaxation only) on this CPU. Reference: 1,
    up to float32 rounding (1e-4 relative and 0.1 µm)."""
    worst = _worst_bound_ratio(device, rho, sweep, contacts=contacts)
    print(f"\nrho {rho}, {sweep}, {contacts}: largest move / bound {worst:.6f}")
    assert worst <= 1.0 + 1.0e-4


def test_chebyshev_step_skips_vertices_near_other_cloth(device):
    """kernels.chebyshev_kernel with Simulator(chebyshev_contacts="skip"): a vertex whose nearest non-adjacent
    primitive at detection (min_dist) lies closer than the search radius keeps its solved position; the others
    move to ω(x − x⁽ⁿ⁻²⁾) + x⁽ⁿ⁻²⁾ (exact: no bound, floor or collider reaches them here); either way the history
    shifts. With a skip distance of 0 ("extrapolate") every vertex moves."""
    import warp as wp

    from clothsim.solver import kernels as K

    r, omega = 0.006, 1.4
    x0 = np.array([[0.0, 1.0, 0.0], [0.1, 1.0, 0.0], [0.2, 1.0, 0.0]], np.float32)
    prev = x0 + np.float32(1e-4)
    prev2 = x0 - np.float32(2e-4)
    for skip, kept in ((r, [True, False, True]), (0.0, [False, False, False])):
        arr = {k: wp.array(v, dtype=wp.vec3, device=device) for k, v in
               (("x", x0), ("prev", prev), ("prev2", prev2), ("x_prev", x0), ("c", np.zeros((1, 3), np.float32)))}
        # vertex 0 has a primitive 0.4 r away, vertex 1 none (min_dist stays at the radius), vertex 2 at 0.9999 r
        min_dist = wp.array(np.array([0.4 * r, r, 0.9999 * r], np.float32), dtype=float, device=device)
        wp.launch(K.chebyshev_kernel, 3, inputs=[3, 1, omega, wp.array(np.ones(3, np.float32), dtype=float, device=device),
                                                 arr["x"], arr["prev"], arr["prev2"], 0, 0.0, arr["x_prev"], 1,
                                                 min_dist, 1.0e6, arr["c"], arr["c"],
                                                 wp.zeros(1, dtype=wp.int32, device=device), 0, skip], device=device)
        x = arr["x"].numpy()
        want = omega * (x0.astype(np.float64) - prev2) + prev2
        for i in range(3):
            expect = x0[i] if kept[i] else want[i]
            np.testing.assert_allclose(x[i], expect, rtol=0, atol=1e-6, err_msg=f"skip distance {skip}, vertex {i}")
        np.testing.assert_array_equal(arr["prev2"].numpy(), prev)
        np.testing.assert_array_equal(arr["prev"].numpy(), x)


def _squeeze_and_sheet(device, contacts):
    """A free 12×12 sheet dropped 4 mm onto a pinned one (both 2 mm thick, so the pair is inside the search
    radius from the start) beside a free sheet far from any other cloth, 10 iterations with Chebyshev."""
    fab = "cotton"
    free = cs.Cloth.grid(size=(0.1, 0.1), resolution=(12, 12), fabric=fab, center=(0.0, 0.104, 0.0), plane="xz")
    base = cs.Cloth.grid(size=(0.12, 0.12), resolution=(12, 12), fabric=fab, center=(0.0, 0.1, 0.0), plane="xz")
    base.pin(list(range(base.vertex_count)))
    alone = cs.Cloth.grid(size=(0.1, 0.1), resolution=(12, 12), fabric=fab, center=(1.0, 0.5, 0.0), plane="xy")
    alone.pin(alone.boundary("top"))
    sim = cs.Simulator([free, base, alone], device=device, substeps=2, iterations=10, chebyshev_rho=0.93,
                       chebyshev_delay=1, self_collision=True, contact_margin=0.004, chebyshev_contacts=contacts)
    sim.step(3)
    x = sim.positions()
    n0, n1 = free.vertex_count, free.vertex_count + base.vertex_count
    return x[:n0], x[n1:]


def test_chebyshev_contacts_changes_only_the_vertices_near_other_cloth(device):
    """Skipping and extrapolating give the same hanging sheet, bit for bit, where no other cloth is within the
    search radius (its vertices' min_dist stays at the radius), and different piles where the dropped sheet
    meets the pinned one."""
    pile_skip, alone_skip = _squeeze_and_sheet(device, "skip")
    pile_ext, alone_ext = _squeeze_and_sheet(device, "extrapolate")
    np.testing.assert_array_equal(alone_skip, alone_ext)
    assert not np.array_equal(pile_skip, pile_ext)


def test_chebyshev_contacts_is_checked():
    cloth = cs.Cloth.grid(size=(0.5, 0.5), resolution=(4, 4), fabric="cotton")
    with pytest.raises(cs.InputError, match="chebyshev_contacts must be one of 'skip', 'extrapolate'"):
        cs.Simulator(cloth, device="cpu", chebyshev_contacts="never")


@pytest.mark.parametrize("iterations", [2, 4])
def test_chebyshev_keeps_the_speed_cap(device, iterations):
    """A sheet falling with self contact is held to the conservative bound's speed cap: every substep moves a
    vertex at most bound × (thickness + margin) (He Chen et al. 2024), so it falls at exactly
    v_cap = bound · r / h once gravity has brought it there (0.425 · 0.6 mm · 600 /s = 0.153 m/s here). The
    Chebyshev step must not hold it under that: its oldest history point is the substep's first guess, past
    the bound, and extrapolating from it pulled capped vertices back (0.1457 m/s at 4 iterations before
    session 35). Tolerance 0.5 % of the cap (the sheet's frame-3 speed without the step is v_cap to 1e-4)."""
    fabric = cs.Fabric.preset("cotton").replace(thickness=0.0003)
    cloth = cs.Cloth.grid(size=(0.03, 0.03), resolution=(8, 8), fabric=fabric, center=(0.0, 1.0, 0.0), plane="xz")
    dt, substeps, bound = 1.0 / 60.0, 10, 0.425
    cap = bound * (0.0003 + 0.0003) * substeps / dt

    def speed(rho):
        sim = cs.Simulator(cloth, device=device, dt=dt, substeps=substeps, iterations=iterations, chebyshev_rho=rho,
                           initial_guess="inertia", self_collision=True, contact_margin=0.0003,
                           self_contact_bound=bound)
        sim.step(2)
        y0 = sim.positions()[:, 1].mean()
        sim.step(1)
        v = float((y0 - sim.positions()[:, 1].mean()) / dt)
        sim.release()
        return v

    plain, accelerated = speed(0.0), speed(0.93)
    assert plain == pytest.approx(cap, rel=1e-3)
    assert accelerated == pytest.approx(cap, rel=5e-3), (accelerated, cap)

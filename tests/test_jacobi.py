"""Jacobi sweeps (Simulator(sweep="jacobi")): every free vertex takes its block step from the same
iterate in one launch, instead of colour by colour (Gauss–Seidel), each step scaled by ``jacobi_omega``.

The sweep changes how the iterations approach each substep's minimiser, never the minimiser: with
enough iterations a Jacobi run agrees with a Gauss–Seidel run. The solver alternates two iterate arrays
(the Chebyshev step is fused into the launch), so pins, an odd or even iteration count and the
thread count must not change what a step computes. Scene: a pinned, swinging 16 x 16 sheet, the
benchmark's (benchmarks/sim_grid.py) physics at a size a test can afford.
"""

import numpy as np
import pytest

import clothsim as cs


def _sheet(res=16):
    cloth = cs.Cloth.grid(size=(0.5, 0.5), resolution=(res, res), fabric="cotton", center=(0.0, 1.0, 0.0), plane="xz")
    cloth.pin(cloth.boundary("top"))
    return cloth


def _run(device, iterations, frames=4, sweep="jacobi", omega=0.66, rho=0.0, res=16, **kw):
    sim = cs.Simulator(_sheet(res), device=device, substeps=5, iterations=iterations, sweep=sweep, jacobi_omega=omega,
                       chebyshev_rho=rho, initial_guess="inertia", **kw)
    sim.step(frames)
    x = sim.positions().astype(np.float64)
    sim.release()
    return x


def _rms(a, b):
    return float(np.sqrt(np.mean(np.sum((a - b) ** 2, axis=1))))


def test_jacobi_converges_to_the_gauss_seidel_solution(device):
    ref = _run(device, 400, sweep="gauss-seidel")
    swing = _rms(ref, _run(device, 400, frames=0, sweep="gauss-seidel"))
    # same minimiser: plain damped Jacobi, and Jacobi with Chebyshev acceleration (fused into the sweep),
    # end within 0.1 % of the motion of the converged Gauss–Seidel run
    assert _rms(_run(device, 400), ref) < 1e-3 * swing
    assert _rms(_run(device, 400, rho=0.9, chebyshev_delay=1, chebyshev_cap=True), ref) < 1e-3 * swing
    # and the error falls with the iteration count
    errs = [_rms(_run(device, k), ref) for k in (1, 4, 16, 64)]
    print(f"\nJacobi (omega 0.66) error after 1/4/16/64 iterations: {errs} m; motion {swing:.3e} m")
    assert all(b < a for a, b in zip(errs, errs[1:]))


def test_jacobi_keeps_pins_exactly_fixed_for_odd_and_even_iteration_counts(device):
    cloth = _sheet()
    pins = np.asarray(cloth.pins)
    for iterations in (1, 2, 3):
        sim = cs.Simulator(cloth, device=device, substeps=3, iterations=iterations, sweep="jacobi",
                           jacobi_omega=0.66, chebyshev_rho=0.9, chebyshev_delay=1)
        start = sim.positions()
        sim.step(3)
        x = sim.positions()
        assert np.array_equal(x[pins], start[pins])
        free = np.setdiff1d(np.arange(len(x)), pins)
        assert np.isfinite(x).all() and np.abs(x[free] - start[free]).max() > 1e-3  # the rest of the sheet fell
        sim.release()


def test_jacobi_result_does_not_depend_on_the_cpu_thread_count():
    # a Jacobi sweep's vertices are independent, so any split of them gives the same bits (48 x 48: two
    # chunks of at least clothsim.solver.vbd.CPU_CHUNK_MIN vertices, so the sweep is really split)
    a = _run("cpu", 3, frames=2, res=48, cpu_threads=1)
    b = _run("cpu", 3, frames=2, res=48, cpu_threads=2)
    assert np.array_equal(a, b)
    # with self contact too (a Gauss–Seidel sweep then stays in one thread; a Jacobi sweep still splits)
    a = _run("cpu", 2, frames=1, res=48, cpu_threads=1, self_collision=True)
    b = _run("cpu", 2, frames=1, res=48, cpu_threads=2, self_collision=True)
    assert np.array_equal(a, b)


def test_sweep_settings_are_checked():
    cloth = cs.Cloth.grid(size=(0.5, 0.5), resolution=(4, 4), fabric="cotton")
    with pytest.raises(cs.InputError, match="sweep"):
        cs.Simulator(cloth, device="cpu", sweep="red-black")
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(cs.InputError, match="jacobi_omega"):
            cs.Simulator(cloth, device="cpu", sweep="jacobi", jacobi_omega=bad)
    # fixed at construction: the solver sized its second iterate array by it
    sim = cs.Simulator(cloth, device="cpu")
    with pytest.raises(cs.InputError, match="sweep is fixed at construction"):
        sim.sweep = "jacobi"
    assert sim.sweep == "gauss-seidel"
    sim.release()

"""CPU threads: a colour's vertices are independent, so splitting each colour over threads
(Simulator(cpu_threads=...)) must give bit-identical positions to one thread, with and without a
collider, and with self contact (a partner of the solved vertex's own colour is read at the iteration's
start; the contact search is shared between the threads too)."""

import numpy as np
import pytest

import clothsim as cs


def _sheet(n=80):
    c = cs.Cloth.grid(size=(0.8, 0.8), resolution=(n, n), center=(0.0, 0.6, 0.0), plane="xz")
    c.pin(c.boundary("top")[:: n // 4])
    return c


@pytest.mark.parametrize("collider", [False, True])
def test_threads_bit_identical(device, collider, monkeypatch):
    if device != "cpu":
        pytest.skip("CPU threading")
    from clothsim.solver import vbd

    monkeypatch.setattr(vbd, "CPU_CHUNK_MIN", 256)  # split this small sheet's colours (the tuned threshold is 1024)
    out = []
    for threads in (1, 2, 3):
        sim = cs.Simulator(_sheet(), device="cpu", substeps=4, iterations=3, cpu_threads=threads, drag=0.5)
        if collider:
            sim.add_collider(cs.Collider.sphere(center=(0.0, 0.3, 0.0), radius=0.2))
        # the colours of an 80 x 80 sheet (~910 vertices each, over 3 x CPU_CHUNK_MIN) are really split
        assert sim.solver._cpu_split() and min(c for _, c in sim.model.color_ranges) >= 3 * 256
        sim.step(6)
        out.append(sim.positions())
        sim.release()
    assert sim.solver._pool is None  # release() shut the worker threads down
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0], out[2])


def test_bad_thread_count():
    with pytest.raises(cs.errors.InputError, match="cpu_threads"):
        cs.Simulator(_sheet(8), cpu_threads=0)


def test_collider_at_rest_after_its_move(device):
    """set_collider_vertices moves a collider during the next frame only: afterwards it is still (velocity
    zero, no per-substep pose updates); setting the same pose again is no move."""
    sim = cs.Simulator(_sheet(8), device=device, substeps=2, iterations=2)
    col = cs.Collider.sphere(center=(0.0, 0.3, 0.0), radius=0.2)
    h = sim.add_collider(col)
    buf = sim.solver.collider(h)
    assert not buf.moving
    sim.set_collider_vertices(h, col.vertices + np.array([0.0, 0.0, 0.05]))
    assert buf.moving and np.allclose(buf.velocities.numpy()[:, 2], 0.05 * 60.0, rtol=1e-5)
    sim.step()
    assert not buf.moving and not buf.velocities.numpy().any()
    np.testing.assert_allclose(buf.points.numpy(), col.vertices + np.array([0.0, 0.0, 0.05]), atol=1e-6)
    sim.set_collider_vertices(h, col.vertices + np.array([0.0, 0.0, 0.05]))
    assert not buf.moving
    sim.step()
    sim.release()


def _leaning_sheet(n=24):
    base = cs.Cloth.grid(size=(0.3, 0.3), resolution=(n, n), center=(0.0, 0.16, 0.0), plane="xy")
    v = base.vertices.copy()
    v[:, 2] += 0.09 * (v[:, 1] - 0.01)  # leaning: it folds over as it lands
    return cs.Cloth.from_mesh(v, base.triangles, rest_uv=base.rest_uv)


def test_threads_bit_identical_with_self_contact(device, monkeypatch):
    """The fold: self contact (the contact search shared out, the colours swept by every thread at once,
    meeting at a barrier after each colour: SolverVBD._solve_cpu_sweep; or colour by colour, each split over
    the threads) gives the same positions, bit for bit, with 1, 2 and 3 threads; the sheet really folds
    (pairs are found). 3 threads sweep too here, more threads
    than this 2-core machine has (the solver would split colour by colour instead: a thread waiting at the
    barrier spins), which checks the barrier with an odd count and threads that are not all running."""
    if device != "cpu":
        pytest.skip("CPU threading")
    import os

    from clothsim.solver import vbd

    monkeypatch.setattr(vbd, "CPU_CONTACT_CHUNK_MIN", 32)  # split this small sheet's colours (96 vertices each)
    monkeypatch.setattr(vbd, "CPU_SWEEP_COLOR_MIN", 32)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))  # let 3 threads sweep
    cloth = _leaning_sheet()
    out = []
    for threads, sweep in ((1, True), (2, True), (3, True), (2, False)):
        sim = cs.Simulator(cloth, device="cpu", substeps=4, iterations=2, cpu_threads=threads, ground=0.0,
                           self_collision=True)
        assert sim.solver._cpu_split() and min(c for _, c in sim.model.color_ranges) >= 3 * 32
        assert sim.solver._sweep_ok()
        if not sweep:  # the colour-by-colour split (the fallback with more threads than cores)
            monkeypatch.setattr(sim.solver, "_sweep_ok", lambda: False)
        sim.step(12)
        det = sim.solver.self_contacts.detector
        out.append((sim.positions(), int(det.ee_count.numpy().sum()), int(det.vt_count.numpy().sum())))
        sim.release()
    assert out[0][1] > 0 and out[0][2] > 0, "no self-contact pairs: the test does not exercise them"
    for o in out[1:]:
        np.testing.assert_array_equal(out[0][0], o[0])
        assert o[1:] == out[0][1:]


def test_sweep_without_its_other_thread_raises(device, monkeypatch):
    """A sweep thread that never arrives at a colour's barrier (here its launch is never run) does not hang
    the solve: the waiting thread gives up after SWEEP_WAIT_CYCLES time-stamp cycles (a few seconds), and the
    step raises an error that says so and how to avoid the threaded sweep."""
    if device != "cpu":
        pytest.skip("CPU threading")
    import concurrent.futures

    from clothsim.solver import vbd

    monkeypatch.setattr(vbd, "CPU_SWEEP_COLOR_MIN", 32)
    sim = cs.Simulator(_leaning_sheet(), device="cpu", substeps=1, iterations=1, cpu_threads=2, ground=0.0,
                       self_collision=True)
    assert sim.solver._sweep_ok()

    class Lost:  # an executor whose threads never run what they are given
        def submit(self, fn, *args):
            f = concurrent.futures.Future()
            f.set_result(None)
            return f

    monkeypatch.setattr(sim.solver, "_workers", lambda: Lost())
    monkeypatch.setattr(sim.solver, "_detect_pool", lambda: None)
    with pytest.raises(RuntimeError, match="did not reach a colour's barrier"):
        sim.step()
    sim.release()

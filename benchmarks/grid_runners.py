"""The two solvers behind one interface, for benchmarks/sim_grid.py and the scripts built on it: build for an
iteration count (kept between runs), reset to the start, step a frame, read positions; the runs made of them
(a trajectory for errors, timed frames); Newton's contact-list report."""

from __future__ import annotations

import numpy as np

from grid_scenes import Scene
from newton_side import FRAME_DT, BenchMaterial, NewtonCloth, time_frames

# the sensitivity floor's start perturbation (trajectory(perturb=)) is drawn from this seed
SENSITIVITY_SEED = 0


def _sync(device):
    import warp as wp

    wp.synchronize_device(device)


def case_chebyshev_delay(kind: str) -> int:
    """Plain sweeps before the Chebyshev step (Simulator(chebyshev_delay=)) in the benchmarks' clothsim runs when no
    --chebyshev-delay is given: one for the pinned sheet, whose extrapolated first guess overshoots without it
    (32×32 sheet, CPU: 4.5e-2 m after 2 iterations capped with no delay, 1.8e-3 m with one; session 12), none for
    the fold, which starts at the inertial target and, with the step skipping vertices near other cloth, gains from
    the second iteration on (N = 128, this 2-core CPU, 3 starts, errors to the 100-iteration run at 2 / 3 / 4
    iterations: 10.35 / 10.08 / 9.41 mm against 11.10 / 10.65 / 10.21 with one plain sweep; session 34)."""
    return 0 if kind == "fold" else 1


class ClothsimRunner:
    """clothsim Simulator for one scene, built once, its iteration count changed between runs (public API)."""

    name = "clothsim"

    def __init__(self, cs, scene: Scene, mat: BenchMaterial, device: str, substeps: int,
                 initial_guess: str = "inertia", chebyshev_rho: float = 0.93,
                 membrane_hessian: str = "neo-hookean", cpu_threads: int | None = None,
                 chebyshev_delay: int | None = None, chebyshev_cap: bool = False, sweep: str = "gauss-seidel",
                 jacobi_omega: float = 1.0, name: str = "clothsim", over_face: float = 0.0,
                 self_contact_bound: float | None = None, deterministic: bool | None = None,
                 frame_dt: float = FRAME_DT, chebyshev_contacts: str | None = None):
        self.name = name
        # Simulator(chebyshev_contacts=) when set (older trees, ab_frame.py's --a, have no such argument)
        self.chebyshev_contacts = chebyshev_contacts
        self.frame_dt = frame_dt  # one step() advances this much, in ``substeps`` substeps
        # Simulator(deterministic=) when set (older trees, ab_frame.py's --a, have no such argument)
        self.deterministic = deterministic
        # with self collision: Simulator(self_contact_over_face=, self_contact_bound=); None = clothsim's default
        self.over_face, self.self_contact_bound = over_face, self_contact_bound
        self.sweep, self.jacobi_omega = sweep, jacobi_omega
        self.cpu_threads = cpu_threads
        # None: the case's (case_chebyshev_delay)
        self.chebyshev_delay = case_chebyshev_delay(scene.kind) if chebyshev_delay is None else int(chebyshev_delay)
        self.chebyshev_cap = chebyshev_cap
        self.cs, self.scene, self.mat, self.device, self.substeps = cs, scene, mat, device, substeps
        self.initial_guess = initial_guess  # moving cloth: start each substep at the inertial target
        self.chebyshev_rho = chebyshev_rho
        self.membrane_hessian = membrane_hessian
        self.sim = None
        self.iterations = None

    def build(self, iterations: int):
        if self.sim is not None and self.iterations == iterations:
            return
        if self.sim is not None and isinstance(getattr(type(self.sim), "iterations", None), property):
            # one simulator for every iteration count (Simulator.iterations set between runs; reset() restores
            # positions and velocities, the lists keep their grown capacity): a fresh one per count ends in the
            # same place (tests/test_api.py) but takes 24 s to build at N = 1024 on the H200. Older clothsim
            # (ab_frame.py's --a tree) has no such setter: a new simulator there.
            self.sim.iterations = iterations
            self.iterations = iterations
            return
        if self.sim is not None and hasattr(self.sim, "release"):
            self.sim.release()
        sc = self.scene
        self.sim = self.cs.Simulator(sc.cloth, device=self.device, dt=self.frame_dt, substeps=self.substeps,
                                     iterations=iterations, ground=sc.ground, self_collision=sc.self_collision,
                                     contact_stiffness=self.mat.contact_ke, contact_margin=self.mat.contact_gap,
                                     initial_guess=self.initial_guess, chebyshev_rho=self.chebyshev_rho,
                                     chebyshev_delay=self.chebyshev_delay, chebyshev_cap=self.chebyshev_cap,
                                     membrane_hessian=self.membrane_hessian,
                                     cpu_threads=self.cpu_threads, sweep=self.sweep, jacobi_omega=self.jacobi_omega,
                                     self_contact_over_face=self.over_face if sc.self_collision else 0.0,
                                     # only when set: older trees (ab_frame.py's --a) have no such argument
                                     **({"self_contact_bound": self.self_contact_bound}
                                        if self.self_contact_bound is not None and sc.self_collision else {}),
                                     **({"deterministic": self.deterministic} if self.deterministic is not None else {}),
                                     **({"chebyshev_contacts": self.chebyshev_contacts}
                                        if self.chebyshev_contacts is not None and sc.self_collision else {}))
        self.iterations = iterations
        self.x0 = self.sim.positions().copy()
        self.v0 = np.zeros_like(self.x0)

    def reset(self):
        self.sim.set_positions(self.x0)
        self.sim.set_velocities(self.v0)
        _sync(self.device)

    def step(self):
        self.sim.step()

    def positions(self):
        return self.sim.positions()

    def set_positions(self, x):
        """Move the start (after reset(); velocities stay zero)."""
        self.sim.set_positions(np.asarray(x, dtype=np.float32))

    def set_state(self, x, v):
        """Positions and velocities (a state taken from another run)."""
        self.sim.set_positions(np.asarray(x, dtype=np.float32))
        self.sim.set_velocities(np.asarray(v, dtype=np.float32))

    def velocities(self):
        return self.sim.velocities()

    def sync(self):
        _sync(self.device)


class NewtonRunner:
    """Newton SolverVBD for one scene; iterations changed in place (graph recaptured)."""

    name = "newton"

    def __init__(self, scene: Scene, mat: BenchMaterial, device: str, substeps: int,
                 vertex_buffer: int | None = None, edge_buffer: int | None = None,
                 self_contact_detection: str = "pre-post-init", topological_filter: int | None = None,
                 frame_dt: float = FRAME_DT, graph: bool = True):
        self.scene, self.mat, self.device, self.substeps = scene, mat, device, substeps
        self.frame_dt, self.graph = frame_dt, graph
        self.buffers = {"vertex_buffer": vertex_buffer, "edge_buffer": edge_buffer,
                        "self_contact_detection": self_contact_detection, "topological_filter": topological_filter}
        self.cloth = None
        self.iterations = None
        self.initial_guess = "inertia"

    def set_initial_guess(self, mode: str):
        """Newton's first guess: "inertia" (its own) or "extrapolate" (clothsim's; NewtonCloth.set_initial_guess),
        applied now if the model is built, else when it is."""
        self.initial_guess = mode
        if self.cloth is not None:
            self.cloth.set_initial_guess(mode)

    def build(self, iterations: int):
        if self.cloth is None:
            sc = self.scene
            self.cloth = NewtonCloth(sc.vertices, sc.triangles, sc.pins, self.mat, device=self.device,
                                     substeps=self.substeps, iterations=iterations, ground=sc.ground,
                                     self_collision=sc.self_collision, frame_dt=self.frame_dt, graph=self.graph,
                                     **self.buffers)
            if self.initial_guess != "inertia":
                self.cloth.set_initial_guess(self.initial_guess)
        elif self.iterations != iterations:
            self.cloth.set_iterations(iterations)
        self.iterations = iterations

    def reset(self):
        self.cloth.reset()

    def step(self):
        self.cloth.step()

    def positions(self):
        return self.cloth.positions()

    def set_positions(self, x):
        """Move the start (after reset(); velocities stay zero)."""
        self.cloth.set_positions(x)

    def set_state(self, x, v):
        """Positions and velocities (a state taken from another run)."""
        self.cloth.set_state(x, v)

    def velocities(self):
        return self.cloth.state_0.particle_qd.numpy().copy()

    def contact_report(self):
        """Newton's self-contact lists since the last reset: longest, buffer, pairs dropped (or None)."""
        return self.cloth.contact_report()

    def sync(self):
        self.cloth.synchronize()


def trajectory(runner, iterations: int, frames: int, perturb: float = 0.0, seed: int = SENSITIVITY_SEED):
    """Final positions after `frames` frames from the start (one untimed run); ``perturb`` > 0 moves every
    start position by that much times a standard normal drawn from ``seed`` first (the sensitivity floor)."""
    runner.build(iterations)
    runner.reset()
    if perturb > 0.0:
        x0 = np.asarray(runner.positions(), dtype=np.float64)
        noise = np.random.default_rng(seed).standard_normal(x0.shape)
        runner.set_positions(x0 + perturb * noise)
    for _ in range(frames):
        runner.step()
    runner.sync()
    return runner.positions()


def timing(runner, iterations: int, frames: int, runs: int, warmup: int | None = None):
    """ms per frame over `runs` runs of the same `frames` frames, after one untimed run of them: clothsim's
    contact lists grow (and its CUDA graph is recaptured) the first time a frame needs more than their
    capacity, once per simulation; the warm-up run keeps that one-off cost out of the steady per-frame time
    (the fold at N = 64 on the 2-core CPU: 4 redone frames and 557 ms a frame in a first run, none and 489 ms in
    the next). Newton gets the same warm-up. Without self contact (the pinned sheet) one frame warms up.
    ``warmup`` (--warmup-frames) overrides it: in the sweep each point's error run, on the same simulator, has
    already grown the lists and captured the graph, so at N = 1024 one frame is enough."""
    runner.build(iterations)
    warm = warmup if warmup is not None else (frames if runner.scene.self_collision else 1)
    return time_frames(runner.step, runner.sync, frames, runs=runs, reset_fn=runner.reset, warmup_frames=warm)


def contact_report(runner) -> dict | None:
    """Newton's self-contact list report for the run just finished (None for clothsim, which never drops a
    pair: its lists grow and the frame is redone)."""
    f = getattr(runner, "contact_report", None)
    return f() if f is not None else None


def describe_contacts(rep: dict) -> str:
    """One line: each list's longest count against its buffer, and the pairs dropped."""
    return "Newton lists " + ", ".join(f"{k} longest {v['longest']}/{v['buffer']} dropped {v['dropped_pairs']}"
                                       for k, v in rep.items())

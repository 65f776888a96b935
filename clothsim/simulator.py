"""Simulator: the researcher-facing object that owns a model, a state and the VBD solver.

    sim = Simulator(cloth, device="cpu", dt=1/60, substeps=10, iterations=10)
    sim.step()              # one frame
    x = sim.positions()     # numpy (N, 3) float32 copy
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from .cloth import Cloth
from .colliders import Collider, ColliderBuffers
from .errors import InputError, SimulationError
from .fabric import Fabric
from .model import ClothModel
from .solver.self_collision import BOUND_FRACTION
from .solver.vbd import CHEBYSHEV_CONTACTS, SolverVBD, default_cpu_threads
from .state import ClothState


class Simulator:
    """Simulates one or more cloths (flat arrays, per-cloth offsets) on one device.

    Args:
        cloths: a :class:`Cloth` or a list of them.
        device: "cpu", "cuda", "cuda:0", ...
        dt: frame length [s] (one :meth:`step`); substeps: substeps per frame; iterations: VBD
            iterations per substep.
        gravity: [m/s²]; ground: height [m] of a ground plane (y up), or None.
        wind: wind velocity [m/s]; drag: aerodynamic drag along the normal [N·s/m³]; air_damping: c [1/s],
            a force −c·m·v on every vertex (all directions, rigid motion included: for settling a drape,
            as garment tools' "air damping"; 0 = none, the default).
        self_collision: keep cloth from passing through itself (thickness = fabric thickness).
        contact_stiffness: penalty stiffness of contacts [N/m]; contact_damping: damping time β [s] of
            contacts with the ground and colliders (normal damping coefficient k_c·β [N·s/m]; 2e-4 s is
            about critical for a 0.1 g vertex at 1e4 N/m; off by default: with 2e-4 s a box swept at the
            documented collider speed left vertices 2.4 cm inside, against 0.5 mm without); contact_margin: how far [m] beyond the
            thickness contacts are searched each substep (sets the largest safe collider speed, see
            :attr:`max_collider_speed`).
        initial_guess: where each substep's iterations start: "adaptive" (VBD's adaptive initialisation,
            the default: best for cloth at or near rest, as in a drape, where starting from the inertial
            target leaves a sag bias of unconverged iterations), "inertia" (x + h·v + h²·g) or "extrapolate"
            (x + h·v + h²·a, a the vertex's acceleration over the last substep, its length clamped to 2 g:
            for cloth in motion; benchmarks/sim_grid.py uses it). On the swinging 32×32 sheet of
            benchmarks/sim_grid.py (CPU, 10 frames, ρ 0.93 after one plain sweep, capped) the error after
            1/2/4/8 iterations per substep was 2.0e-2/1.6e-2/1.0e-2/5.1e-3 m from the inertial target and
            5.1e-3/1.8e-3/2.1e-4/3.0e-5 m extrapolated (2 g was the best clamp of 1, 2 and 4 g at one
            iteration; unclamped, one iteration diverged). The converged solution is the same. Not for
            drapes: settling on a body, the contacts' accelerations feed back into the guess; the 20 mm
            straight skirt (benchmarks/drape.py, CPU) never settled with it (residual 0.29 after 300 frames,
            fine-only and coarse-to-fine) where it settles in 70 frames adaptive.
        chebyshev_rho: Chebyshev semi-iterative acceleration of the iterations (Wang 2015, as in VBD's
            sec. 3.7) with spectral radius estimate ρ; 0 = off (the default). On the swinging 32×32 sheet of
            benchmarks/sim_grid.py (neo-hookean block, damping 2 ms) ρ = 0.8 cut the error after 16
            iterations from 7.4e-3 m to 5.1e-3 m (ρ = 0.85: 4.4e-3 m). The converged solution is the same.
            The extrapolation is held to self-contact's conservative bound, the ground's floor and the
            collider planes like every other position (position_limits.bounded); with self collision it
            leaves out the vertices near other cloth (``chebyshev_contacts``).
        chebyshev_delay: plain sweeps of each substep before the acceleration starts (Wang 2015's S;
            default 0). Started from the first, far-off iterate, a large ρ overshoots (ρ = 0.9 left a 0.16 m
            error after 2 iterations on benchmarks/sim_grid.py's 64×64 sheet, ρ = 0.95 diverged); after one
            plain sweep ρ up to 0.93 is stable and converges faster: H200, 10 frames, N = 128, error after
            16/32/100 iterations 1.59e-2/1.21e-2/6.7e-3 m (ρ 0.8, delay 0) → 1.34e-2/9.9e-3/4.5e-3 m (ρ 0.93,
            delay 1), and 4e-5 m after 300. ρ 0.95 converged faster at first but stalled near 1e-3 m at
            300–500 iterations, and 0.97 diverged at N = 256. With delay + 1 iterations or fewer the
            acceleration has nothing to do. benchmarks/sim_grid.py uses ρ 0.93, delay 1, capped (session 12;
            with the extrapolated first guess, the delay kept 2–4 iterations from overshooting: 32×32 sheet,
            CPU, error after 2 iterations 4.5e-2 m capped without delay, 1.8e-3 m with it).
        chebyshev_cap: keep ω at or below its limit ω∞ = 2/(1 + √(1 − ρ²)) (default False). Wang's
            recurrence starts above it (ρ 0.93: ω = 1.76 at the second sweep, limit 1.46), which is what
            overshoots from a far-off iterate; capped, the acceleration is a constant ω∞ from the second
            sweep on (Golub and Varga's second-order iteration) and needs no plain sweep first. CPU, the
            64×64 benchmark sheet, 10 frames, ρ 0.93: error after 2/4/16/100 iterations 2.19e-2/1.58e-2/
            7.8e-3/1.6e-5 m capped with no delay, against 2.44e-2/1.59e-2/7.6e-3/1.7e-5 m uncapped with
            delay 1 and 2.19e-2/1.67e-2/9.6e-3/7.5e-4 m for ρ 0.8 uncapped.
        chebyshev_contacts: with self_collision, which vertices the Chebyshev step moves: "skip" (the default)
            leaves a vertex where its solve put it when the substep's detection found a non-adjacent primitive
            within the search radius (thickness + contact_margin) of it, "extrapolate" moves every vertex (this
            applies to Gauss–Seidel sweeps; a Jacobi sweep does its step inside the solve and moves every vertex). ρ is
            an estimate for the elastic iteration; a vertex in a pile is held by contact pairs switching on
            and off between iterates, where extrapolating overshoots and the conservative bound cuts the step
            short. benchmarks/sim_grid.py's fold, N = 128, this project's 2-core CPU, 12 frames, error to the
            100-iteration run, mean of 3 starts 1e-6 m apart (benchmarks/fold_spread.py, ρ 0.93, delay 1): 3 /
            4 / 5 / 6 iterations 10.65 / 10.21 / 9.70 / 9.60 mm skipping, 11.20 / 11.53 / 10.89 / 10.44 mm
            extrapolating, 10.81 / 10.54 / 10.61 / 10.52 mm without Chebyshev.
        membrane_hessian: the membrane's 3×3 block in each vertex's Newton step: "stvk" (its own Gauss–Newton
            block, the default: right for bending-dominated settling such as drapes and the cantilever) or
            "neo-hookean" (a stable Neo-Hookean tangent with the same small-strain stiffness: converges
            about 4× faster per iteration on swinging, membrane-dominated cloth; benchmarks/sim_grid.py
            uses it). Forces, and so converged results, are StVK's either way (clothsim/solver/elastic.py).
        sweep: how an iteration visits the vertices, fixed at construction: "gauss-seidel" (the default:
            colour by colour, each colour seeing the ones moved before it; on CUDA one launch a colour) or
            "jacobi" (every free vertex from the same iterate, one launch an iteration, each block step
            scaled by ``jacobi_omega``; the solver alternates two iterate arrays and does the Chebyshev step
            in the same launch). Per iteration Jacobi converges more slowly, but a small cloth's CUDA frame
            is bound by launches, not work: H200, benchmarks/sim_grid.py's pinned sheet, N = 128, 10
            substeps, ω 0.66, ρ 0.96: 1 iteration 0.40 ms a frame and an error of 2.95e-2 m against
            Gauss–Seidel's 0.70 ms and 2.69e-2 m; 8 iterations 2.5 ms / 7.3e-3 m against 5.2 ms / 9.2e-3 m.
            With Chebyshev it stalls near 1e-4 m (N = 128 after 100 iterations: 3.6e-4 m, Gauss–Seidel
            1.2e-5 m), so converged answers and CPU runs (where work, not launches, counts) want
            Gauss–Seidel. Contacts, pins and seams work the same in both.
        jacobi_omega: the Jacobi step's scale ω in (0, 1] (default 0.66). ω = 1 overshoots: the stiff
            membrane's neighbours all move toward each other at once (CPU, N = 64 sheet, error after one
            iteration 0.62 m with ω 1, 4.3e-2 m with 0.75, 2.3e-2 m with 0.66).
        self_contact_over_face: with self_collision, keep a rest-neighbour vertex–triangle pair as a contact
            when the vertex has come over the face: the cosine of the angle between its separation from the
            face and the face normal is at least this value (0 = off, the default). Self contact leaves out
            pairs that lie closer than the search radius in the rest shape (a flat cloth's own neighbours,
            which only a fold tighter than the radius brings together), so such a hairpin fold could pass
            through itself; a neighbour over the face is that case, while in a flat or gently curved sheet
            neighbours' separations lie in the surface (cosine near 0). benchmarks/sim_grid.py's fold, H200,
            N = 256, 30 frames, 1 / 2 / 4 iterations: intersections at the end 13 667 / 4 343 / 1 227 without
            it, 1 733 / 399 / 53 with 0.9, and frames 175 / 144 / 124 ms against 96 / 98 / 101 ms (tangled
            cloth has longer contact lists); but the errors after 12 frames grew from 9.6e-3 / 9.2e-3 /
            1.0e-2 m to 1.39e-2 / 1.54e-2 / 1.48e-2 m, so it is off by default. Edge–edge pairs are not
            affected.
        self_contact_bound: with self_collision, the fraction of its distance to the nearest non-adjacent
            primitive a vertex may move in a substep (He Chen et al.'s conservative bound; default 0.4, below
            0.5 so that two sides of a gap together close less than all of it). It also caps every vertex's
            speed (``max_self_contact_speed``). Newton 1.8's SolverVBD lets a vertex move 0.5 × its
            ``dat_conservative_bound_relaxation`` (0.85) × the search radius between detections, 0.425, and by
            default detects twice a substep (clothsim: once): benchmarks/sim_grid.py's ``--self-contact-bound
            0.425 --newton-self-contact-detection pre-init`` gives both solvers the same cap.
        deterministic: with self_collision, put every self-contact list in order after its search (the default),
            so CUDA runs are bit-identical run to run (the solve sums a vertex's contacts in list order, and
            the searches append to the lists with atomics, in an order that varies on CUDA). False skips that
            pass on CUDA (the lists keep their appends' order): faster, and runs then differ by rounding that
            the fold's buckling amplifies (README, "Physics model"). The CPU's appends come in one order, so its
            runs are bit-identical either way.
        cpu_threads: on the CPU, how many threads share each colour's vertices (a colour's vertices are
            independent, so the result is bit-identical for any count); default: the machine's cores (at
            most 8). A colour is split when it has at least ``2 * clothsim.solver.vbd.CPU_CHUNK_MIN``
            vertices (``CPU_CONTACT_CHUNK_MIN`` with self contact or collider features: a partner of the
            solved vertex's own colour is read at the iteration's start, so those vertices are independent
            too); with self contact the contact search is shared between the threads as well
            (``SelfContactDetector.detect(executor=, workers=)``). 1 = one thread.
        model: a :class:`ClothModel` of exactly these cloths already built on ``device`` (e.g. restored
            from a host snapshot by :mod:`clothsim.multires`); the simulator takes ownership of it and frees
            it in :meth:`release`. Default: built here from ``cloths``.
    """

    @property
    def sweep(self) -> str:
        """"gauss-seidel" or "jacobi", fixed at construction (a Jacobi sweep's second iterate array is
        allocated with the solver)."""
        return self._sweep

    @sweep.setter
    def sweep(self, value) -> None:
        raise InputError(f"Simulator: sweep is fixed at construction ({self._sweep!r}); build a new Simulator "
                         f"with sweep={value!r}")

    @property
    def iterations(self) -> int:
        """VBD iterations per substep. May be changed between steps (e.g. an accuracy-versus-time sweep on one
        simulator): the next frame uses the new count; on CUDA the captured frame graph, which holds the count
        as launches, is recaptured once. Contact lists, colouring and buffers are kept."""
        return self._iterations

    @iterations.setter
    def iterations(self, value) -> None:
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise InputError(f"Simulator: iterations must be an integer >= 1, got {value!r}")
        self._iterations = int(value)
        solver = self.__dict__.get("solver")
        if solver is not None:
            solver._graph = None

    def __init__(self, cloths, *, device="cpu", dt: float = 1.0 / 60.0, substeps: int = 10, iterations: int = 10,
                 gravity=(0.0, -9.81, 0.0), ground: float | None = None, wind=(0.0, 0.0, 0.0), drag: float = 0.0,
                 air_damping: float = 0.0,
                 self_collision: bool = False, contact_stiffness: float = 1.0e4, contact_damping: float = 0.0,
                 contact_margin: float = 0.01,
                 friction_eps: float = 1.0e-2, initial_guess: str = "adaptive", chebyshev_rho: float = 0.0,
                 chebyshev_delay: int = 0, chebyshev_cap: bool = False, chebyshev_contacts: str = "skip",
                 membrane_hessian: str = "stvk",
                 model: ClothModel | None = None, cpu_threads: int | None = None, sweep: str = "gauss-seidel",
                 jacobi_omega: float = 0.66, self_contact_over_face: float = 0.0,
                 self_contact_bound: float = BOUND_FRACTION, deterministic: bool = True):
        if isinstance(cloths, Cloth):
            cloths = [cloths]
        cloths = list(cloths)
        if not cloths or not all(isinstance(c, Cloth) for c in cloths):
            raise InputError("Simulator: expected a Cloth or a non-empty list of Cloths")
        _check_positive("dt", dt)
        for name, val in (("substeps", substeps), ("iterations", iterations)):
            if int(val) != val or val < 1:
                raise InputError(f"Simulator: {name} must be an integer >= 1, got {val!r}")
        for name, val in (("contact_stiffness", contact_stiffness), ("contact_margin", contact_margin)):
            _check_positive(name, val)
        for name, vec in (("gravity", gravity), ("wind", wind)):
            a = np.asarray(vec, dtype=np.float64)
            if a.shape != (3,) or not np.all(np.isfinite(a)):
                raise InputError(f"Simulator: {name} must be 3 finite numbers, got {vec!r}")
        if ground is not None and not math.isfinite(ground):
            raise InputError(f"Simulator: ground must be a finite height or None, got {ground!r}")
        if not (math.isfinite(drag) and drag >= 0):
            raise InputError(f"Simulator: drag must be >= 0, got {drag!r}")
        if not (math.isfinite(air_damping) and air_damping >= 0):
            raise InputError(f"Simulator: air_damping must be >= 0 [1/s], got {air_damping!r}")
        try:
            self.device = wp.get_device(device)
        except Exception as e:  # noqa: BLE001 - Warp raises plain RuntimeError/ValueError
            raise InputError(f"Simulator: device {device!r} is not available ({e})") from None
        self.dt = float(dt)
        self.substeps = int(substeps)
        self.iterations = int(iterations)
        self.gravity = tuple(float(g) for g in gravity)
        self.ground = None if ground is None else float(ground)
        self.wind = tuple(float(w) for w in wind)
        self.drag = float(drag)
        self.air_damping = float(air_damping)
        self.self_collision = bool(self_collision)
        self.contact_stiffness = float(contact_stiffness)
        if not (math.isfinite(contact_damping) and contact_damping >= 0):
            raise InputError(f"Simulator: contact_damping must be >= 0 [s], got {contact_damping!r}")
        self.contact_damping = float(contact_damping)
        self.contact_margin = float(contact_margin)
        self.friction_eps = float(friction_eps)
        if initial_guess not in ("inertia", "adaptive", "extrapolate"):
            raise InputError(f"Simulator: initial_guess must be 'inertia', 'adaptive' or 'extrapolate', got {initial_guess!r}")
        self.initial_guess = initial_guess
        if not (math.isfinite(chebyshev_rho) and 0.0 <= chebyshev_rho < 1.0):
            raise InputError(f"Simulator: chebyshev_rho must be in [0, 1), got {chebyshev_rho!r}")
        self.chebyshev_rho = float(chebyshev_rho)
        if isinstance(chebyshev_delay, bool) or not isinstance(chebyshev_delay, (int, np.integer)) or chebyshev_delay < 0:
            raise InputError(f"Simulator: chebyshev_delay must be an integer >= 0 (plain iterations before the "
                             f"acceleration starts), got {chebyshev_delay!r}")
        self.chebyshev_delay = int(chebyshev_delay)
        if not isinstance(chebyshev_cap, (bool, np.bool_)):
            raise InputError(f"Simulator: chebyshev_cap must be True or False, got {chebyshev_cap!r}")
        self.chebyshev_cap = bool(chebyshev_cap)
        if chebyshev_contacts not in CHEBYSHEV_CONTACTS:
            raise InputError(f"Simulator: chebyshev_contacts must be one of {', '.join(map(repr, CHEBYSHEV_CONTACTS))}, "
                             f"got {chebyshev_contacts!r}")
        self.chebyshev_contacts = chebyshev_contacts
        if membrane_hessian not in ("stvk", "neo-hookean"):
            raise InputError(f"Simulator: membrane_hessian must be 'stvk' or 'neo-hookean', got {membrane_hessian!r}")
        self.membrane_hessian = membrane_hessian
        if sweep not in ("gauss-seidel", "jacobi"):
            raise InputError(f"Simulator: sweep must be 'gauss-seidel' or 'jacobi', got {sweep!r}")
        self._sweep = sweep  # read-only (the property below): the solver sizes its second iterate array by it
        if not (math.isfinite(jacobi_omega) and 0.0 < jacobi_omega <= 1.0):
            raise InputError(f"Simulator: jacobi_omega must be in (0, 1], got {jacobi_omega!r}")
        self.jacobi_omega = float(jacobi_omega)
        if not (isinstance(self_contact_over_face, (int, float, np.floating)) and math.isfinite(self_contact_over_face)
                and 0.0 <= self_contact_over_face <= 1.0):
            raise InputError(f"Simulator: self_contact_over_face must be a cosine in [0, 1] (0 = off), "
                             f"got {self_contact_over_face!r}")
        self.self_contact_over_face = float(self_contact_over_face)
        if not (isinstance(self_contact_bound, (int, float, np.floating)) and not isinstance(self_contact_bound, bool)
                and math.isfinite(self_contact_bound) and 0.0 < self_contact_bound < 0.5):
            raise InputError(f"Simulator: self_contact_bound must be a fraction in (0, 0.5) (two sides of a gap each "
                             f"move at most this fraction of it, so together less than all of it), "
                             f"got {self_contact_bound!r}")
        self.self_contact_bound = float(self_contact_bound)
        if not isinstance(deterministic, (bool, np.bool_)):
            raise InputError(f"Simulator: deterministic must be True or False, got {deterministic!r}")
        self.deterministic = bool(deterministic)
        if cpu_threads is None:
            cpu_threads = default_cpu_threads()
        if int(cpu_threads) != cpu_threads or cpu_threads < 1:
            raise InputError(f"Simulator: cpu_threads must be a positive integer, got {cpu_threads!r}")
        self.cpu_threads = int(cpu_threads)
        self.frame = 0
        self._released = False
        self._views = []

        with wp.ScopedDevice(self.device):
            if model is None:
                model = ClothModel(cloths, self.device)
            elif not isinstance(model, ClothModel) or model.device != self.device or \
                    model.particle_count != sum(c.vertex_count for c in cloths):
                raise InputError("Simulator: model must be a ClothModel of the given cloths on the same device")
            self.model = model
            self.state = ClothState(self.model)
            self.solver = SolverVBD(self.model, self)
            self._reset_guess_history()

    # ------------------------------------------------------------------ properties
    @property
    def particle_count(self) -> int:
        return self.model.particle_count

    @property
    def cloth_offsets(self) -> np.ndarray:
        return self.model.cloth_offsets.copy()

    @property
    def time(self) -> float:
        return self.frame * self.dt

    @property
    def substep_dt(self) -> float:
        return self.dt / self.substeps

    @property
    def max_collider_speed(self) -> float:
        """Largest collider speed [m/s] for which cloth cannot pass through: the contact search
        reaches ``contact_margin`` beyond the thickness every substep, so a collider surface may move at
        most that far per substep before a vertex is checked again. With self-collision on, a vertex may
        move at most ``self_contact_bound·(thickness + contact_margin)`` per substep (the conservative bound);
        to get out of the way of a collider it must outrun it, so the collider may move at most half of that
        per substep. (A vertex pressed between the collider and another cloth layer closer than the search
        radius moves less still; no speed is guaranteed for it.)"""
        v = self.contact_margin / self.substep_dt
        if self.self_collision:
            r = self.contact_margin + min(f.thickness for f in self.model.fabrics)
            v = min(v, 0.5 * self.self_contact_bound * r / self.substep_dt)
        return v

    @property
    def max_self_contact_speed(self) -> float | None:
        """With self-collision on, the fastest any vertex can move [m/s], free fall included; None without it.

        The conservative bound lets a vertex move at most ``self_contact_bound`` × its distance to the nearest
        non-adjacent primitive per substep, and that distance is only looked for up to the search radius
        r = thickness + contact_margin (a vertex with nothing nearer counts r), so no vertex moves more than
        ``self_contact_bound``·r a substep: ``self_contact_bound·r·substeps/dt``, 2.47 m/s at the defaults with cotton
        (0.3 mm). A cloth that would fall faster (after about 0.31 m of free fall at the defaults) falls
        at this speed instead; raise ``substeps`` or ``contact_margin`` for faster motion (Newton's SolverVBD
        truncates moves by the same kind of bound). ``tests/test_api.py`` drops a cloth onto nothing and finds its speed
        levelling off here."""
        if not self.self_collision:
            return None
        return self.self_contact_bound * self.solver.query_radius / self.substep_dt

    @property
    def triangles(self) -> np.ndarray:
        return self.model.host_triangles.copy()

    # ------------------------------------------------------------------ scene setup
    def add_collider(self, collider: Collider) -> int:
        """Add a collider; returns its handle for :meth:`set_collider_vertices`."""
        self._check_alive()
        if not isinstance(collider, Collider):
            raise InputError(f"add_collider: expected a clothsim.Collider, got {type(collider).__name__}")
        return self.solver.add_collider(ColliderBuffers(collider, self.device))

    def set_collider_vertices(self, handle: int, vertices) -> None:
        """Pose of collider ``handle`` at the end of the next frame (N, 3) [m]; the BVH is refit."""
        self._check_alive()
        buf = self.solver.collider(handle)
        from .cloth import _as_float_array

        v = _as_float_array(vertices, "collider vertices", (buf.vertex_count, 3), where=f"collider {handle}")
        buf.set_target(v, self.dt)

    def set_pin_targets(self, targets) -> None:
        """Targets (P, 3) [m] that the pinned vertices reach at the end of the next frame (in pin order)."""
        self._check_alive()
        from .cloth import _as_float_array

        t = _as_float_array(targets, "pin targets", (len(self.model.host_pin_indices), 3), where="set_pin_targets")
        self.state.pin_end.assign(t.astype(np.float32))

    def set_external_forces(self, forces) -> None:
        """Per-vertex external forces (N, 3) [N], added to gravity from the next step on and kept until
        changed; ``None`` removes them. Pinned vertices ignore them. Saved in checkpoints."""
        self._check_alive()
        if forces is None:
            self.solver.set_external_accelerations(None)
            return
        f = self._checked_vec3(forces, "external forces")
        mass = np.asarray(self.model.host_mass, dtype=np.float64)
        inv = np.where(self.model.host_pinned | (mass <= 0), 0.0, 1.0 / np.where(mass > 0, mass, 1.0))
        self.solver.set_external_accelerations((f * inv[:, None]).astype(np.float32))

    def external_forces(self) -> np.ndarray | None:
        """The external forces set by :meth:`set_external_forces` (N, 3) [N] (zero on pinned vertices), or None."""
        self._check_alive()
        if self.solver.ext_acc is None:
            return None
        return self.solver.ext_acc.numpy() * np.asarray(self.model.host_mass, dtype=np.float32)[:, None]

    def set_fabric(self, fabric, cloth: int = 0) -> None:
        """Change cloth ``cloth``'s fabric between steps (preset name, Fabric or dict); no recompilation."""
        self._check_alive()
        if not (0 <= cloth < len(self.model.cloths)):
            raise InputError(f"set_fabric: cloth index {cloth} out of range [0, {len(self.model.cloths)})")
        self.model.set_fabric(cloth, Fabric.resolve(fabric))
        self.solver.materials_changed()

    # ------------------------------------------------------------------ stepping
    def step(self, frames: int = 1) -> None:
        """Advance ``frames`` frames of ``dt`` seconds each."""
        self._check_alive()
        if int(frames) != frames or frames < 0:
            raise InputError(f"step: frames must be a non-negative integer, got {frames!r}")
        for _ in range(int(frames)):
            try:
                self.solver.frame(self.state)
            except SimulationError as e:  # e.g. contact lists that cannot grow: the state is the frame's start
                raise SimulationError(f"frame {self.frame + 1} (t = {self.time + self.dt:.4f} s): {e}") from None
            if self.solver.read_bad_flag():
                raise SimulationError(
                    f"the state became non-finite during frame {self.frame + 1} (t = {self.time + self.dt:.4f} s); "
                    "lower dt or raise substeps/iterations, or check the fabric's numbers"
                )
            self.frame += 1

    # ------------------------------------------------------------------ state access
    def positions(self) -> np.ndarray:
        """Vertex positions (N, 3) float32 [m], a copy."""
        self._check_alive()
        return self.state.x.numpy().copy()

    def velocities(self) -> np.ndarray:
        """Vertex velocities (N, 3) float32 [m/s], a copy."""
        self._check_alive()
        return self.state.v.numpy().copy()

    def set_positions(self, x) -> None:
        self._check_alive()
        self.state.x.assign(self._checked_vec3(x, "positions"))

    def set_velocities(self, v) -> None:
        self._check_alive()
        self.state.v.assign(self._checked_vec3(v, "velocities"))
        self._reset_guess_history()

    def _reset_guess_history(self) -> None:
        """No velocity history (a new state, or velocities set from outside): make the adaptive and the
        extrapolated initial guess of the next substep the inertial target, as if the cloth had followed gravity so far
        (v_last = v − h·g), instead of a guess without gravity that the iterations must make up for."""
        h = self.dt / self.substeps
        v = self.state.v.numpy()
        self.state.v_last.assign((v - h * np.asarray(self.gravity, dtype=np.float32)).astype(np.float32))

    def positions_warp(self) -> wp.array:
        """The live position array (wp.array of vec3, zero-copy; valid until :meth:`release`)."""
        self._check_alive()
        return self.state.x

    def positions_torch(self):
        """Positions as a torch tensor (N, 3), zero-copy; raises StaleViewError once the state is released."""
        return self._torch_view(self.state.x, "positions")

    def velocities_torch(self):
        return self._torch_view(self.state.v, "velocities")

    def _torch_view(self, arr, what):
        self._check_alive()
        from .views import guarded_torch_view

        t, token = guarded_torch_view(arr, f"Simulator.{what}_torch()")
        self._views.append(token)
        return t

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, path) -> None:
        """Write the full state (positions, velocities, pins, collider poses, frame) to ``path`` (.npz), atomically."""
        from .checkpoint import save_checkpoint

        self._check_alive()
        save_checkpoint(self, path)

    def load_checkpoint(self, path) -> None:
        """Restore a state written by :meth:`save_checkpoint` into this simulator (same cloths and settings)."""
        from .checkpoint import load_checkpoint

        self._check_alive()
        load_checkpoint(self, path)

    # ------------------------------------------------------------------ memory
    def memory_report(self) -> dict:
        """Bytes of device memory by owner: model, state, solver scratch, colliders, contacts."""
        self._check_alive()
        rep = {"model": self.model.nbytes(), "state": self.state.nbytes()}
        rep.update(self.solver.memory_report())
        rep["total"] = sum(rep.values())
        return rep

    def release(self) -> None:
        """Free every device buffer; idempotent. Views handed out earlier become stale."""
        if self._released:
            return
        for token in self._views:
            token.invalidate()
        self._views.clear()
        self.solver.release()
        self.state.release()
        self.model.release()
        self._released = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    # ------------------------------------------------------------------ helpers
    def _check_alive(self):
        if self._released:
            raise SimulationError("this Simulator has been released")

    def _checked_vec3(self, a, what) -> np.ndarray:
        from .cloth import _as_float_array

        return _as_float_array(a, what, (self.particle_count, 3), where=f"set_{what}").astype(np.float32)


def _check_positive(name, val):
    try:
        ok = math.isfinite(val) and val > 0
    except TypeError:
        ok = False
    if not ok:
        raise InputError(f"Simulator: {name} must be a positive finite number, got {val!r}")

"""Newton ``SolverVBD`` on the same cloth as clothsim's benchmark grid.

This module is the Newton half of ``benchmarks/sim_grid.py --compare newton``.
It only imports ``newton`` inside functions, so the rest of the benchmark works
where Newton is not installed (check with :func:`newton_available`).

Units: SI (m, kg, s, N). Y is up, like clothsim (Newton's builder is told so).

The parameter mapping (clothsim material -> Newton parameters) and the Newton
source lines it rests on are written down in ``benchmarks/newton_mapping.md``;
``newton_mapping.newton_parameters`` is that mapping in code.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

# the material mapping and its mesh helpers (numpy only), kept importable from here
from newton_mapping import interior_edges, newton_parameters, triangle_areas  # noqa: F401

FRAME_DT = 1.0 / 60.0

# Newton's per-primitive self-contact lists (SolverVBD particle_vertex_contact_buffer_size = 32,
# particle_edge_contact_buffer_size = 64 by default) have a fixed length: its detection kernels count every pair
# but store only what fits and, in its own words, drop the rest silently. NewtonCloth(watch_contacts=True) counts,
# after every substep, the pairs that did not fit and the longest list (contact_report()).
WATCH_LISTS = ("vertex_triangle", "triangle_vertex", "edge_edge")


# --------------------------------------------------------------------------- material


@dataclass(frozen=True)
class BenchMaterial:
    """An isotropic cloth material in clothsim's terms (SI units).

    stretch:      E*t, membrane tensile stiffness [N/m] (same along warp and weft)
    poisson:      Poisson ratio nu [-]
    shear:        in-plane shear stiffness G [N/m per rad]; ``None`` means the
                  isotropic value E*t / (2 (1 + nu)), the only one Newton's
                  isotropic membrane can represent
    bending:      bending rigidity B [N*m]
    density:      areal density [kg/m^2]
    damping:      stiffness-proportional (Rayleigh) damping k_d [s]
    thickness:    contact thickness [m] (self contact and ground)
    friction:     Coulomb friction coefficient [-]
    contact_ke:   contact penalty stiffness [N/m] (clothsim Simulator(contact_stiffness=))
    contact_gap:  contact search distance beyond the thickness [m] (clothsim Simulator(contact_margin=))
    bend_calibration: the factor c in clothsim's per-edge bending coefficient
                  k_e = c * B * 3 |e|^2 / (A1 + A2)
    """

    stretch: float = 500.0
    poisson: float = 0.3
    shear: float | None = None
    bending: float = 5.0e-6
    density: float = 0.15
    damping: float = 0.0
    thickness: float = 0.004
    friction: float = 0.3
    contact_ke: float = 1.0e4
    contact_gap: float = 0.01
    bend_calibration: float = 2.0 / 3.0

    @property
    def shear_modulus(self) -> float:
        if self.shear is None:
            return self.stretch / (2.0 * (1.0 + self.poisson))
        return self.shear

    @property
    def lame_mu(self) -> float:
        """Lame mu of the 2D St.Venant-Kirchhoff membrane [N/m] (= G)."""
        return self.shear_modulus

    @property
    def lame_lambda(self) -> float:
        """Lame lambda of the 2D St.Venant-Kirchhoff membrane [N/m] = nu E / (1 - nu^2) (= C12)."""
        return self.poisson * self.stretch / (1.0 - self.poisson**2)

    def replace(self, **kw) -> "BenchMaterial":
        return dataclasses.replace(self, **kw)


# --------------------------------------------------------------------------- mesh


def grid_mesh(n: int, size: float, height: float = 0.0, diagonals: str = "alternate"):
    """A square n x n vertex grid lying in the xz plane at y = height.

    Vertices are row-major, v = j*n + i, at x = -L/2 + i*L/(n-1), z = -L/2 + j*L/(n-1).
    Each cell (i, j) with corners a=(i,j), b=(i+1,j), c=(i,j+1), d=(i+1,j+1) is cut
    along one diagonal: "alternate" uses a-d when (i + j) is even and b-c otherwise
    (a union-jack-free checker pattern); "right" always a-d, "left" always b-c.
    Triangles are wound so their normal points to +y.

    Returns (vertices (n*n, 3) float64 [m], triangles (2 (n-1)^2, 3) int32).

    The benchmark takes the mesh from ``clothsim.Cloth.grid`` whenever clothsim
    is importable; this generator is only the fallback and the cross-check.
    """
    L = float(size)
    xs = -0.5 * L + np.arange(n) * (L / (n - 1))
    X, Z = np.meshgrid(xs, xs, indexing="xy")  # X[j, i] = xs[i], Z[j, i] = xs[j]
    verts = np.stack([X.ravel(), np.full(n * n, float(height)), Z.ravel()], axis=1)
    tris = []
    for j in range(n - 1):
        for i in range(n - 1):
            a = j * n + i
            b = a + 1
            c = a + n
            d = c + 1
            if diagonals == "right":
                cut_ad = True
            elif diagonals == "left":
                cut_ad = False
            else:
                cut_ad = (i + j) % 2 == 0
            # normal +y: (x-axis) x (z-axis) = -y, so order a, c, b (z then x) gives +y
            if cut_ad:
                tris.append((a, c, d))
                tris.append((a, d, b))
            else:
                tris.append((a, c, b))
                tris.append((b, c, d))
    return verts, np.asarray(tris, dtype=np.int32)


# --------------------------------------------------------------------------- Newton


_WATCH_KERNEL = None


def _watch_kernel():
    """The drop-counting kernel (built on first use: Warp is only imported where Newton runs)."""
    global _WATCH_KERNEL
    if _WATCH_KERNEL is None:
        import warp as wp

        @wp.kernel
        def count_dropped_pairs(count: wp.array(dtype=wp.int32), capacity: wp.array(dtype=wp.int32), slot: int,
                                longest: wp.array(dtype=wp.int32), dropped: wp.array(dtype=wp.float64)):
            # one list a thread: its true pair count against what its buffer holds
            i = wp.tid()
            c = count[i]
            wp.atomic_max(longest, slot, c)
            if c > capacity[i]:
                wp.atomic_add(dropped, slot, wp.float64(c - capacity[i]))

        _WATCH_KERNEL = count_dropped_pairs
    return _WATCH_KERNEL


def newton_available() -> tuple[bool, str]:
    """(True, version) when ``import newton`` works, else (False, reason)."""
    try:
        import newton  # noqa: F401

        return True, getattr(newton, "__version__", "?")
    except Exception as exc:  # pragma: no cover - depends on the environment
        return False, f"{type(exc).__name__}: {exc}"


# NewtonCloth(self_contact_detection=) -> Newton's CollisionFrequencyType for its self-contact slot: when, in a
# substep, SolverVBD detects self contact (its default: before and after initialising the substep's first guess)
SELF_CONTACT_DETECTION = {"pre-post-init": "PRE_POST_INIT", "pre-init": "PRE_INIT"}


class NewtonCloth:
    """One Newton model + SolverVBD + states + collision pipeline, stepped per 60 Hz frame.

    Mirrors Newton's own cloth examples (newton/examples/cloth/example_cloth_hanging.py):
    ``collision_pipeline.collide`` + ``solver.step`` per substep, states swapped,
    the whole frame captured once with ``wp.ScopedCapture`` and replayed with
    ``wp.capture_launch`` (on CUDA; on CPU Warp 1.19 records a CPU graph too,
    used when ``graph=True`` and it captures cleanly).
    """

    def __init__(
        self,
        verts: np.ndarray,
        tris: np.ndarray,
        pinned: np.ndarray,
        material: BenchMaterial,
        *,
        device: str = "cpu",
        substeps: int = 10,
        iterations: int = 10,
        ground: float | None = None,
        self_collision: bool = False,
        gravity: float = -9.81,
        graph: bool = True,
        tile_solve: bool | None = None,
        watch_contacts: bool = True,
        vertex_buffer: int | None = None,
        edge_buffer: int | None = None,
        self_contact_detection: str = "pre-post-init",
        topological_filter: int | None = None,
        frame_dt: float = FRAME_DT,
    ):
        if self_contact_detection not in SELF_CONTACT_DETECTION:
            raise ValueError(f"NewtonCloth: self_contact_detection must be one of {', '.join(SELF_CONTACT_DETECTION)}, "
                             f"got {self_contact_detection!r}")
        import newton
        import warp as wp

        self.wp = wp
        self.newton = newton
        self.device = wp.get_device(device)
        self.substeps = int(substeps)
        self.iterations = int(iterations)
        self.dt = float(frame_dt) / self.substeps
        self.self_collision = bool(self_collision)
        self.self_contact_detection = self_contact_detection
        self.ground = ground
        self.use_graph = bool(graph)
        self.gravity = np.array([0.0, float(gravity), 0.0], dtype=np.float32)
        self.params = p = newton_parameters(material, verts, tris)
        self.n_particles = len(verts)
        self.tris = np.asarray(tris, dtype=np.int32)

        with wp.ScopedDevice(self.device):
            builder = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=(0.0, float(gravity), 0.0))
            if ground is not None:
                cfg = builder.default_shape_cfg.copy()
                # body-particle contact material = mean(ke), mean(kd), sqrt(mu0*mu1):
                # give the plane the same numbers so the mix is the intended value.
                cfg.ke = p["contact_ke"]
                cfg.kd = 0.0
                cfg.mu = p["friction"]
                builder.add_ground_plane(height=float(ground), cfg=cfg)

            ntri = len(tris)
            builder.add_particles(
                [tuple(map(float, v)) for v in verts],
                [(0.0, 0.0, 0.0)] * len(verts),
                mass=[0.0] * len(verts),
                radius=[p["particle_radius"]] * len(verts),
            )
            areas = builder.add_triangles(
                tris[:, 0].tolist(),
                tris[:, 1].tolist(),
                tris[:, 2].tolist(),
                tri_ke=[p["tri_ke"]] * ntri,
                tri_ka=[p["tri_ka"]] * ntri,
                tri_kd=[p["tri_kd"]] * ntri,
                tri_drag=[0.0] * ntri,
                tri_lift=[0.0] * ntri,
            )
            # lumped mass: density * area / 3 per corner (same as add_cloth_mesh)
            mass = np.zeros(len(verts))
            np.add.at(mass, np.asarray(tris).ravel(), np.repeat(p["density"] * np.asarray(areas) / 3.0, 3))
            e = p["edges"]
            builder.add_edges(
                e[:, 0].tolist(),
                e[:, 1].tolist(),
                e[:, 2].tolist(),
                e[:, 3].tolist(),
                edge_ke=p["edge_ke"].tolist(),
                edge_kd=p["edge_kd"].tolist(),
            )
            pinned_set = set(int(i) for i in np.asarray(pinned).ravel())
            active = int(newton.ParticleFlags.ACTIVE)
            for v in range(len(verts)):
                if v in pinned_set:
                    builder.particle_mass[v] = 0.0
                    builder.particle_flags[v] = builder.particle_flags[v] & ~active
                else:
                    builder.particle_mass[v] = float(mass[v])
            builder.color(include_bending=True)
            self.model = model = builder.finalize()
            model.soft_contact_ke = p["contact_ke"]
            model.soft_contact_kd = 0.0
            model.soft_contact_mu = p["friction"]

            self.collision_pipeline = None
            self.contacts = None
            if ground is not None:
                self.collision_pipeline = newton.CollisionPipeline(model)
            kw = {}
            if tile_solve is not None:
                kw["particle_enable_tile_solve"] = tile_solve
            if self_collision:
                kw.update(
                    particle_enable_self_contact=True,
                    particle_self_contact_margin=p["contact_margin"],
                    particle_self_contact_gap=p["contact_gap"],
                    # clothsim leaves out pairs closer than its search radius in the rest shape (the flat
                    # cloth's own neighbours); Newton's option for the same filter
                    particle_rest_shape_contact_exclusion_radius=p["contact_margin"] + p["contact_gap"],
                )
                if self_contact_detection != "pre-post-init":  # Newton's default: leave it unset
                    sb = newton.solvers.SolverBase
                    kw["collision_frequency_type"] = {
                        sb.CollisionSlot.SOFT_SELF_CONTACT: sb.CollisionFrequencyType[SELF_CONTACT_DETECTION[
                            self_contact_detection]]}
                if vertex_buffer is not None:
                    kw["particle_vertex_contact_buffer_size"] = int(vertex_buffer)
                if edge_buffer is not None:
                    kw["particle_edge_contact_buffer_size"] = int(edge_buffer)
                # Newton holds each list kind in one int32 array of 2 × count × buffer entries; past 2³¹ − 1 Warp
                # refuses it after minutes of set-up (N = 1024: 3.1M edges, so an edge buffer of at most 342)
                for what, whats, count, size in (("vertex", "vertices", model.particle_count, vertex_buffer),
                                                 ("edge", "edges", model.edge_count, edge_buffer)):
                    if size is not None and 2 * count * int(size) > 2**31 - 1:
                        raise ValueError(f"Newton's {what} contact buffer of {size} per {what} over {count} {whats} "
                                         f"needs 2 x {count} x {size} > 2^31 - 1 int32 entries in one array; the "
                                         f"largest that fits is {(2**31 - 1) // (2 * count)}")
                if topological_filter is not None:  # Newton's default 2: pairs within two edge rings left out
                    kw["particle_topological_contact_filter_threshold"] = int(topological_filter)
                from newton_filters import use_fast_contact_filters  # beside this file (on sys.path with it)

                use_fast_contact_filters()  # the same filter lists, built in numpy (N = 1024: minutes otherwise)
            self.solver = newton.solvers.SolverVBD(model, iterations=self.iterations, **kw)
            self._watch = self._watch_lists() if (self_collision and watch_contacts) else None
            if self._watch is not None:
                self.watch_longest = wp.zeros(len(WATCH_LISTS), dtype=wp.int32)
                self.watch_dropped = wp.zeros(len(WATCH_LISTS), dtype=wp.float64)
            self.state_0 = model.state()
            self.state_1 = model.state()
            self.control = model.control()
            if self.collision_pipeline is not None:
                self.contacts = self.collision_pipeline.contacts()
            self.graph = None
            self.q0 = self.state_0.particle_q.numpy().copy()
            self.initial_guess = "inertia"
            self._v_last = None
            self._capture()

    def _watch_lists(self):
        """(slot, count array, capacity array) for each of Newton's self-contact lists it fills, or None."""
        info = getattr(self.solver, "trimesh_collision_info", None)
        if info is None:
            return None
        lists = []
        for slot, (count, cap) in enumerate((
                ("vertex_colliding_triangles_count", "vertex_colliding_triangles_buffer_sizes"),
                ("triangle_colliding_vertices_count", "triangle_colliding_vertices_buffer_sizes"),
                ("edge_colliding_edges_count", "edge_colliding_edges_buffer_sizes"))):
            c, b = getattr(info, count, None), getattr(info, cap, None)
            if c is not None and b is not None and c.shape == b.shape:
                lists.append((slot, c, b))
        return lists or None

    def _count_dropped(self):
        for slot, count, cap in self._watch:
            self.wp.launch(_watch_kernel(), dim=count.shape[0], inputs=[count, cap, slot],
                           outputs=[self.watch_longest, self.watch_dropped], device=self.device)

    def contact_report(self) -> dict | None:
        """Since the last reset(): per list, the longest (true) pair count seen after any substep, its buffer
        length, and the pairs Newton counted but could not store (summed over substeps; 0 = nothing dropped).
        None without self contact."""
        if self._watch is None:
            return None
        longest, dropped = self.watch_longest.numpy(), self.watch_dropped.numpy()
        out = {}
        for slot, _count, cap in self._watch:
            name = WATCH_LISTS[slot]
            out[name] = {"longest": int(longest[slot]), "buffer": int(cap.numpy().max()),
                         "dropped_pairs": int(dropped[slot])}
        return out

    # -- stepping

    def _simulate(self):
        if self.self_collision:
            # Newton's self-contact example (example_cloth_twist.py): re-split the self-contact BVHs once
            # per frame; refitting alone lets the boxes grow as the cloth crumples
            self.solver.rebuild_bvh(self.state_0)
        for _ in range(self.substeps):
            self.state_0.clear_forces()
            if self.collision_pipeline is not None:
                self.collision_pipeline.collide(self.state_0, self.contacts)
            self.solver.step(self.state_0, self.state_1, self.control, self.contacts, self.dt)
            if self._watch is not None:  # one small launch a watched list a substep (2 here: vertex-triangle, edge-edge)
                self._count_dropped()
            self.state_0, self.state_1 = self.state_1, self.state_0

    def _capture(self):
        """Capture one frame as a graph. The states' swap after each substep happens in Python, so a graph reads and
        writes the buffers it was captured with: with an even substep count a replay ends in the buffer it started
        from, with an odd one it would read the first frame's start again at every replay. An odd count so runs
        without a graph (capture_error says so)."""
        wp = self.wp
        self.graph = None
        if not self.use_graph:
            return
        if self.substeps % 2:
            self.capture_error = f"{self.substeps} substeps a frame (odd): replays would restart from one buffer"
            return
        if self.device.is_cpu:
            # CPU graphs need the module compiled first and are only worth it when they
            # capture; fall back to plain launches when they do not.
            self._simulate()  # warm-up/compile (one frame), then restore
            self.reset()
        try:
            with wp.ScopedDevice(self.device):
                with wp.ScopedCapture() as capture:
                    self._simulate()
            self.graph = capture.graph
            # the capture swapped the Python references substeps times; after a replay the
            # data is where the last captured write put it, which is the current state_0.
        except Exception as exc:  # pragma: no cover
            self.graph = None
            self.capture_error = f"{type(exc).__name__}: {exc}"
        self.reset()

    def max_self_contact_speed(self) -> float | None:
        """With self contact, the fastest any vertex can move [m/s] (None without it). Newton 1.8's SolverVBD
        truncates each vertex's move since the last self-contact detection at 0.5 × its
        ``dat_conservative_bound_relaxation`` (default 0.85) × the search radius (margin + gap), a fraction of
        0.425 (clothsim's default is 0.4, ``Simulator(self_contact_bound=)``). By default (``PRE_POST_INIT``) it
        detects twice a substep: at the substep's start, and again at the first guess once that is truncated
        (``solver_vbd.py``: ``_initialize_particles`` truncates the inertial step, then ``_mid_step_detection``
        resets the truncation's reference to it), so a vertex can move twice that in a substep. With
        ``self_contact_detection="pre-init"`` it detects once, at the start, as clothsim does."""
        if not self.self_collision:
            return None
        s = self.solver
        per_detection = 0.5 * s.dat_conservative_bound_relaxation * s._self_contact_query_radius / self.dt
        return per_detection * (2.0 if self.self_contact_detection == "pre-post-init" else 1.0)

    def set_initial_guess(self, mode: str):
        """Where each substep's iterations start: "inertia" (Newton's own, y = x + h·v + h²·g; the default and
        what every timed run uses) or "extrapolate" (clothsim's extrapolated guess x + h·v + h²·a, a the last
        substep's acceleration clamped to 2 g; for references only). At 1 mm edges Gauss–Seidel sweeps from
        the inertial guess converge slowly (benchmarks/ref_convergence.py): this shows whether Newton's own
        kernels, started where clothsim's are, end where clothsim's do. The guess is changed between
        Newton's ``forward_step`` and its first truncation (the self-contact bound still applies to it); the
        solver itself is untouched. The frame's graph is recaptured."""
        if mode not in ("inertia", "extrapolate"):
            raise ValueError(f"NewtonCloth.set_initial_guess: mode must be 'inertia' or 'extrapolate', got {mode!r}")
        if mode == self.initial_guess:
            return
        from newton_guess import use_extrapolated_guess  # beside this file (on sys.path with it)

        if mode == "extrapolate" and self._v_last is None:
            self._v_last = self.wp.zeros(self.n_particles, dtype=self.wp.vec3, device=self.device)
            self._reset_guess_history(self.state_0.particle_qd.numpy())
        use_extrapolated_guess(self.solver, mode == "extrapolate", self.n_particles, self.dt, self._v_last, self.device)
        self.initial_guess = mode
        self._capture()

    def _reset_guess_history(self, v):
        """As clothsim's Simulator does on new velocities: v_{t-1} = v − h·g, so the next extrapolated guess is
        the inertial one (a = g), not a guess without gravity."""
        if self._v_last is not None:
            self._v_last.assign((np.asarray(v, dtype=np.float32) - self.dt * self.gravity).astype(np.float32))

    def set_iterations(self, k: int):
        self.iterations = int(k)
        self.solver.iterations = int(k)
        self._capture()

    def reset(self):
        """Back to the rest positions, zero velocity (both state buffers)."""
        for s in (self.state_0, self.state_1):
            s.particle_q.assign(self.q0)
            s.particle_qd.zero_()
        self._reset_guess_history(np.zeros((self.n_particles, 3), dtype=np.float32))
        if self._watch is not None:
            self.watch_longest.zero_()
            self.watch_dropped.zero_()
        self.wp.synchronize_device(self.device)

    def set_positions(self, x):
        """Particle positions of both state buffers (after reset(): a moved start, velocities zero)."""
        x = np.asarray(x, dtype=np.float32)
        if x.shape != (self.state_0.particle_q.shape[0], 3):
            raise ValueError(f"set_positions: shape {x.shape}, the cloth has {self.state_0.particle_q.shape[0]} particles")
        for s in (self.state_0, self.state_1):
            s.particle_q.assign(x)
        self.wp.synchronize_device(self.device)

    def set_state(self, x, v):
        """Positions and velocities of both state buffers (a state taken from another run)."""
        n = self.state_0.particle_q.shape[0]
        x, v = np.asarray(x, dtype=np.float32), np.asarray(v, dtype=np.float32)
        if x.shape != (n, 3) or v.shape != (n, 3):
            raise ValueError(f"set_state: shapes {x.shape} / {v.shape}, the cloth has {n} particles")
        for s in (self.state_0, self.state_1):
            s.particle_q.assign(x)
            s.particle_qd.assign(v)
        self._reset_guess_history(v)
        self.wp.synchronize_device(self.device)

    def step(self, frames: int = 1):
        for _ in range(frames):
            if self.graph is not None:
                self.wp.capture_launch(self.graph)
            else:
                self._simulate()

    def positions(self) -> np.ndarray:
        return self.state_0.particle_q.numpy().copy()

    def synchronize(self):
        self.wp.synchronize_device(self.device)


def build_newton_grid(
    n: int,
    size: float,
    material: BenchMaterial,
    device: str = "cpu",
    self_collision: bool = False,
    ground: float | None = None,
    *,
    height: float = 0.0,
    diagonals: str = "alternate",
    mesh=None,
    pinned=None,
    substeps: int = 10,
    iterations: int = 10,
    graph: bool = True,
    tile_solve: bool | None = None,
) -> NewtonCloth:
    """Newton cloth for the benchmark grid.

    mesh: optional (vertices, triangles) to use exactly (e.g. from clothsim's
    ``Cloth.grid``); otherwise :func:`grid_mesh`. pinned: vertex indices held fixed;
    default the row j = 0 (z = -L/2), i.e. vertices 0..n-1.
    """
    if mesh is None:
        verts, tris = grid_mesh(n, size, height=height, diagonals=diagonals)
    else:
        verts, tris = (np.asarray(mesh[0], dtype=np.float64), np.asarray(mesh[1], dtype=np.int32))
    if pinned is None:
        pinned = np.arange(n)
    return NewtonCloth(
        verts,
        tris,
        np.asarray(pinned),
        material,
        device=device,
        substeps=substeps,
        iterations=iterations,
        ground=ground,
        self_collision=self_collision,
        graph=graph,
        tile_solve=tile_solve,
    )


def time_frames(step_fn, sync_fn, frames: int, runs: int = 5, reset_fn=None, warmup_frames: int = 1):
    """Median / p10 / p90 of ms per frame over `runs` runs of `frames` frames, after warm-up.

    Each run starts from reset_fn() (if given) so every run simulates the same frames.
    Returns dict with ms_median, ms_p10, ms_p90, runs_ms (list of per-run ms/frame).
    """
    if reset_fn is not None:
        reset_fn()
    for _ in range(warmup_frames):
        step_fn()
    sync_fn()
    per_run = []
    for _ in range(runs):
        if reset_fn is not None:
            reset_fn()
        sync_fn()
        t0 = time.perf_counter()
        for _ in range(frames):
            step_fn()
        sync_fn()
        per_run.append((time.perf_counter() - t0) * 1000.0 / frames)
    arr = np.asarray(per_run)
    return {
        "ms_median": float(np.median(arr)),
        "ms_p10": float(np.percentile(arr, 10)),
        "ms_p90": float(np.percentile(arr, 90)),
        "runs_ms": [float(x) for x in arr],
    }


def run_newton(
    n: int,
    size: float,
    material: BenchMaterial,
    *,
    device: str = "cpu",
    frames: int = 10,
    substeps: int = 10,
    iterations: int = 10,
    self_collision: bool = False,
    ground: float | None = None,
    height: float = 0.0,
    mesh=None,
    pinned=None,
    runs: int = 5,
    graph: bool = True,
    cloth: NewtonCloth | None = None,
) -> dict:
    """Simulate `frames` 60 Hz frames with Newton; positions per frame and timing.

    Returns {"positions": (frames, N, 3) float32 of the first run, "ms_median",
    "ms_p10", "ms_p90", "runs_ms", "graph": bool}.
    """
    if cloth is None:
        cloth = build_newton_grid(
            n, size, material, device, self_collision, ground, height=height, mesh=mesh,
            pinned=pinned, substeps=substeps, iterations=iterations, graph=graph,
        )
    elif cloth.iterations != iterations:
        cloth.set_iterations(iterations)
    cloth.reset()
    traj = []
    for _ in range(frames):
        cloth.step()
        traj.append(cloth.positions())
    timing = time_frames(cloth.step, cloth.synchronize, frames, runs=runs, reset_fn=cloth.reset)
    timing["positions"] = np.stack(traj)
    timing["graph"] = cloth.graph is not None
    return timing


def _smoke():  # python benchmarks/newton_side.py
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--substeps", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--self-collision", action="store_true")
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--tile", choices=["default", "on", "off"], default="default")
    a = ap.parse_args()
    tile = {"default": None, "on": True, "off": False}[a.tile]
    mat = BenchMaterial()
    ground = -0.5 if a.self_collision else None
    t0 = time.perf_counter()
    cloth = build_newton_grid(a.n, 1.0, mat, a.device, a.self_collision, ground,
                              substeps=a.substeps, iterations=a.iterations, graph=not a.no_graph,
                              tile_solve=tile)
    print(f"build+capture {time.perf_counter() - t0:.1f}s graph={cloth.graph is not None} "
          f"{getattr(cloth, 'capture_error', '')}")
    r = run_newton(a.n, 1.0, mat, frames=a.frames, iterations=a.iterations, runs=a.runs, cloth=cloth)
    x = r["positions"][-1]
    print(f"N={a.n} ms/frame median {r['ms_median']:.1f} p10 {r['ms_p10']:.1f} p90 {r['ms_p90']:.1f}; "
          f"y range {x[:, 1].min():.3f}..{x[:, 1].max():.3f} finite={np.isfinite(x).all()}")


if __name__ == "__main__":
    _smoke()

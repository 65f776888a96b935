"""SolverVBD: advances a ClothState by one frame of Vertex Block Descent substeps.

It owns its scratch buffers (inertial target, step-start positions, normals, contact planes) and
the colliders' device buffers; it allocates them when built (or when a collider is added) and
frees them in :meth:`release`. Nothing is allocated inside a frame; on CUDA a frame's launches are
captured once as a graph and replayed.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import warp as wp

from ..collision._arrays import query_block_dim
from ..cpu_threads import taker
from . import collider_planes as CP
from .cpu_sweep import SWEEP_MAX_COLORS, SWEEP_WAIT_CYCLES
from . import kernels as K
from . import collider_contacts as CC
from .self_collision import SelfCollision, disabled_bound_args, disabled_kernel_args

# CUDA: a colour of at most TILE_MAX_VERTICES vertices is solved by a half warp (K.LANES = 16 threads) per
# vertex, two vertices per warp, BLOCK_DIM threads per block; larger colours without contact pairs by one
# thread per vertex.
# A grid vertex has 6 triangles, up to 12 bending hinges and 6 edges with their contact lists, so 16
# lanes take one or two of each (Newton's VBD does the same). Both numbers can be set before a frame
# is captured (benchmarks/sim_grid.py --tile-max-vertices / --block-dim sweeps them). H200, pinned grid,
# 6 colours, 10x10 iterations, ms/frame with a 4096 / unlimited threshold: N=256 (10.9k per colour)
# 23.5 / 13.1, N=1024 (175k per colour) 110.9 / 178.8; block 64 or 128 within 2 %.
TILE_MAX_VERTICES = 32768
# The same with contact pairs (self contact, collider features): no limit. One thread per vertex walks its
# vertex's contact lists alone, and in a pile those hold hundreds of pairs, while the half warp splits them over
# 16 lanes. H200, fold N = 1024 (colours of ~175k), 0.75 mm contact, frames 7-12 (the pile), graph ms/frame
# with 32768 / no limit / no limit and 32 lanes: 1 iteration 557.4 / 362.6 / 438.4, 4 iterations 736.5 /
# 624.3 / 933.8; the solve kernel 4.01 against 1.78 ms a launch at 1 iteration
# (benchmarks/kernel_profile.py, kernel_profile_h200_s31_fold1024_{untiled,tiled16,tiled32}.json). Frames 1-6,
# before the cloth lands, were not timed.
TILE_MAX_CONTACT_VERTICES = 2**31 - 1
# ... but only where the lists are long: a contact radius (thickness + margin) of at least this many median
# edges. Under it (a radius under the triangle altitude, what a run that must end without self-intersections
# uses: README, Contacts) a vertex has few pairs, the half warp's sums cost more than the walk saves, and
# colours above TILE_MAX_VERTICES take one thread a vertex. H200, fold N = 1024, 0.3 + 0.3 mm contact on
# 0.98 mm edges, 12 frames, one thread against a half warp: 111.3 against 159.8 ms a frame at 1 iteration,
# 122.9 against 242.2 at 2 (benchmarks/ab_frame.py, ab_frame_h200_s35_tile1024_r06.json); the 1.5 mm contact
# above (1.53 edges) keeps the half warp.
TILE_CONTACT_RADIUS_EDGES = 1.0

# CPU: a colour is split over Simulator.cpu_threads threads (each runs one recorded Warp CPU launch over a
# contiguous chunk; Warp releases the GIL while a CPU kernel runs) when every chunk gets at least this
# many vertices. The hand-off to a worker thread costs ~130 µs per colour here (2-core EPYC), and the
# gain measured small: pinned grid, 1 iteration, 2 threads against 1: N = 128 (2 chunks of ~1.4k)
# 171 vs 192 ms/frame; N = 64 with 256-vertex chunks 0.93x (slower), hence no split below 1024.
CPU_CHUNK_MIN = 1024


def default_cpu_threads() -> int:
    """Simulator(cpu_threads=None): the machine's cores, at most 8."""
    return min(8, os.cpu_count() or 1)


# CPU: the same with contact pairs (self contact, collider features): a vertex costs more there, so a
# colour pays for its hand-off sooner (the fold at N = 64: 6 colours of 683 vertices)
CPU_CONTACT_CHUNK_MIN = 256
# CPU, contact pairs: a split colour goes in this many chunks per thread, each thread taking the next
# until none is left (1: one contiguous chunk a thread)
CPU_CONTACT_CHUNKS_PER_THREAD = 4
# CPU: the same for a Jacobi sweep, which is one launch over every free vertex an iteration (one hand-off,
# not one a colour)
JACOBI_CHUNK_MIN = 256
# CPU: vertices one Warp thread of the solve sweeps in order (a Warp CPU thread's set-up, reading the
# kernel's arguments, costs ~10 ns, paid once per thread)
CPU_SLOTS_PER_THREAD = 64
# CPU colour sweep (SolverVBD._solve_cpu_sweep): vertices of a colour per chunk a thread claims, and the
# vertices a colour needs for the sweep to be used (it hands work to the workers once an iteration, not once a
# colour, so it pays sooner than the colour-by-colour split: 2-core CPU, 2 threads, the T-shirt drape at level
# 1, colours of 382, 510 -> 404 ms a frame; the pinned 64×64 sheet without contacts, colours of 672, 32 -> 21 ms)
CPU_SWEEP_CHUNK = 32
CPU_SWEEP_COLOR_MIN = 128
BLOCK_DIM = 64
# CUDA threads per vertex when the model has contact pairs (collider features or self contact):
# K.LANES (16, a half warp) or K.WARP_LANES (32, a whole warp); on the H200 the fold case of
# benchmarks/sim_grid.py (N = 128) ran 109 ms/frame with 16 and 101 with 32 (one run each, session 5); session
# 27, side by side (benchmarks/ab_frame.py, fold, bound 0.425, 2 rounds; ab_h200_s27_contact_lanes32.json), 32
# against 16: N = 128 0.95 at 1 iteration, 1.09 at 4; N = 256 0.98 and 1.23. BLOCK_DIM 128 against 64: 0.99-1.00
# (ab_h200_s27_block128.json)
CONTACT_LANES = 16
# CUDA threads per vertex without contact pairs: 16 (lanes 0-5 take a triangle and a hinge each, 6-11 a
# hinge) or 32 (one element per lane: a shorter critical path, half the vertices per warp)
ELASTIC_LANES = 16


# Simulator(chebyshev_contacts=...): with self collision, whether the Chebyshev step skips the vertices that
# the substep's detection found within the search radius of a non-adjacent primitive (min_dist below it)
CHEBYSHEV_CONTACTS = ("skip", "extrapolate")

# Simulator(initial_guess=...) -> predict_kernel's guess_mode
GUESS_MODES = {"inertia": 0, "adaptive": 1, "extrapolate": 2}
# initial_guess="extrapolate": the last substep's acceleration is clamped to this length [m/s²] (2 g). On the
# swinging 32×32 sheet of benchmarks/sim_grid.py (CPU, 10 frames, ρ 0.93 after one plain sweep, capped) the
# error after 1 iteration per substep was 1.38e-2 m with 1 g, 5.1e-3 m with 2 g, 9.5e-3 m with 4 g; unclamped
# it diverged; from 4 iterations on 1 g was worse and 2 g and 4 g the same.
EXTRAPOLATE_MAX_ACC = 2.0 * 9.80665


def _arg_key(a):
    """What identifies a launch argument for replaying a recorded launch: an array by identity (the
    recorded launch holds its pointer), a vector by its components, a scalar by value."""
    if isinstance(a, wp.array):
        return id(a)
    return tuple(a) if wp.types.type_is_vector(type(a)) else a


class SolverVBD:
    def __init__(self, model, settings):
        self.model = model
        self.s = settings
        d = model.device
        n = model.particle_count
        self.x_prev = wp.zeros(n, dtype=wp.vec3, device=d)
        self.y = wp.zeros(n, dtype=wp.vec3, device=d)
        self.normals = wp.zeros(n, dtype=wp.vec3, device=d)
        self.bad = wp.zeros(1, dtype=wp.int32, device=d)
        # Chebyshev history (two previous iterates), allocated with the solver so that switching the
        # acceleration on between frames allocates nothing
        self.cheb_prev = wp.zeros(n, dtype=wp.vec3, device=d)
        self.cheb_prev2 = wp.zeros(n, dtype=wp.vec3, device=d)
        self.theta_prev = wp.zeros(len(model.host_bend), dtype=float, device=d)
        # a Jacobi sweep's copy of the iterate (Simulator(sweep="jacobi")); 1 element otherwise
        self.x_jac = wp.zeros(n if settings.sweep == "jacobi" else 1, dtype=wp.vec3, device=d)
        # per-vertex external acceleration (set_external_forces); allocated on first use
        self.ext_acc = None
        self._ext_off = wp.zeros(1, dtype=wp.vec3, device=d)
        self._free_count = sum(c for _, c in model.color_ranges)
        # the CPU sweep's colour offsets (padded with the total: colours past the last are empty), its barrier
        # and failure flag, and its chunk claims (one per free vertex on the CPU) (K.vbd_solve_sweep_kernel;
        # passed, unused, to the other solve kernels)
        offsets = [start for start, _ in model.color_ranges] + [self._color_end()]
        offsets += [offsets[-1]] * (SWEEP_MAX_COLORS + 1 - len(offsets))
        self._sweep_offsets = wp.array(offsets[: SWEEP_MAX_COLORS + 1], dtype=wp.int32, device=d)
        self._sweep_sync = wp.zeros(2, dtype=wp.int32, device=d)
        self._sweep_fits = None  # (colouring suits the sweep, cores this process may run on): _sweep_ok
        self._sweep_claims = wp.zeros(max(1, self._color_end()) if d.is_cpu else 1, dtype=wp.int32, device=d)
        self.colliders: list = []
        self._alloc_contacts()
        self.self_contacts = None
        if settings.self_collision:
            self.self_contacts = SelfCollision(model, settings)
        self._bound_off_args = disabled_bound_args(d)
        self._self_off_args = disabled_kernel_args(d, self._bound_off_args)
        self.collider_contacts = None
        self._collider_off_args = CC.disabled_kernel_args(d)
        # frame backup (positions, velocities, last velocities) to redo a frame after a contact-list
        # overflow; allocated with the first contact lists (self-collision or a collider)
        self.backup = []
        if self.self_contacts is not None:
            self._alloc_backup()
        self.overflow_redos = 0
        self.materials_changed()
        self._graph = None
        self._graph_key = None
        # a collider stopped at the end of the last frame: the contact features' copy of its (now zero)
        # velocities is gathered once more
        self._cc_refresh = False
        self._pool = None  # CPU worker threads (created on first use, shut down by release)
        # CPU recorded launches: (colour range, chunks) or (kernel, site) -> (argument keys, launch(es), args)
        self._cpu_launches = {}

    def materials_changed(self) -> None:
        """Fabric numbers changed: contact search radii follow the thickness; a captured graph holds the
        old radii as constants, so it is dropped and recaptured on the next frame."""
        self.query_radius = self.s.contact_margin + float(max(f.thickness for f in self.model.fabrics))
        if self.self_contacts is not None:
            self.self_contacts.query_radius = self.query_radius
        self._graph = None

    # ------------------------------------------------------------------ colliders
    def add_collider(self, buf) -> int:
        self.colliders.append(buf)
        self._alloc_contacts()
        if self.collider_contacts is not None:
            self.collider_contacts.release()
        self.collider_contacts = CC.ColliderContacts(self.model, self.colliders)
        self._alloc_backup()
        self._graph = None
        return len(self.colliders) - 1

    @property
    def _ext_arg(self):
        return self.ext_acc if self.ext_acc is not None else self._ext_off

    def set_external_accelerations(self, acc) -> None:
        """Per-vertex external acceleration (N, 3) float32 host array, or None to remove it. The array is
        allocated on first use and overwritten in place afterwards (a captured graph stays valid)."""
        if acc is None:
            if self.ext_acc is not None:
                self.ext_acc = None
                self._graph = None
            return
        if self.ext_acc is None:
            self.ext_acc = wp.array(acc, dtype=wp.vec3, device=self.model.device)
            self._graph = None
        else:
            self.ext_acc.assign(acc)

    def _alloc_backup(self):
        if not self.backup:
            n, d = self.model.particle_count, self.model.device
            self.backup = [wp.zeros(n, dtype=wp.vec3, device=d) for _ in range(3)]

    def collider(self, handle: int):
        if not (0 <= handle < len(self.colliders)):
            from ..errors import InputError

            raise InputError(f"collider handle {handle} out of range [0, {len(self.colliders)})")
        return self.colliders[handle]

    def _alloc_contacts(self):
        d = self.model.device
        k = max(1, len(self.colliders)) * self.model.particle_count
        self.c_point = wp.zeros(k, dtype=wp.vec3, device=d)
        self.c_normal = wp.zeros(k, dtype=wp.vec3, device=d)
        self.c_vel = wp.zeros(k, dtype=wp.vec3, device=d)
        self.c_active = wp.zeros(k, dtype=wp.int32, device=d)

    # ------------------------------------------------------------------ stepping
    def frame(self, state) -> None:
        detectors = [det for det in (self.self_contacts and self.self_contacts.detector, self.collider_contacts) if det]
        if not detectors:
            self._run_frame(state)
        else:
            # contacts are never dropped: an overflow of any list (read once per frame) grows the
            # lists, drops the captured graph and redoes the frame from its saved start
            self._save(state)
            while True:
                for det in detectors:
                    det.reset_overflow()
                self._run_frame(state)
                grown = [det for det in detectors if det.overflowed()]
                if not grown:
                    break
                self._restore(state)
                for det in grown:
                    det.grow()
                self._graph = None
                self.overflow_redos += 1
        self._cc_refresh = any(c.moving for c in self.colliders)
        for c in self.colliders:
            c.end_frame()
        wp.copy(state.pin_start, state.pin_end)

    def _save(self, state):
        for dst, src in zip(self.backup, (state.x, state.v, state.v_last)):
            wp.copy(dst, src)

    def _restore(self, state):
        for src, dst in zip(self.backup, (state.x, state.v, state.v_last)):
            wp.copy(dst, src)

    def _run_frame(self, state) -> None:
        dev = self.model.device
        if dev.is_cuda:
            key = (self._cc_refresh, *(c.moving for c in self.colliders))  # launches differ for still colliders
            if self._graph is not None and key != self._graph_key:
                self._graph = None
            self._graph_key = key
            if self._graph is None:
                with wp.ScopedCapture(device=dev) as cap:
                    self._frame_launches(state)
                self._graph = cap.graph
            wp.capture_launch(self._graph)
        else:
            self._frame_launches(state)

    def read_bad_flag(self) -> bool:
        return bool(self.bad.numpy()[0])

    def _frame_launches(self, state) -> None:
        m = self.model
        s = self.s
        n = m.particle_count
        dev = m.device
        S = s.substeps
        h = s.dt / S
        gravity = wp.vec3(*s.gravity)
        slots = len(self.colliders)
        nbend = len(m.host_bend)
        cpu_args = None
        # (self_enabled, min_dist, bound_fraction): the Chebyshev step is held to the solve's bound too
        cheb_bound = self.self_contacts.bound_args() if self.self_contacts is not None else self._bound_off_args
        rho, delay = s.chebyshev_rho, s.chebyshev_delay
        # chebyshev_cap: ω never above its limit ω∞ = 2/(1 + √(1 − ρ²)) (the recurrence starts above it)
        omega_cap = 2.0 / (1.0 + math.sqrt(1.0 - rho * rho)) if s.chebyshev_cap else math.inf
        # Chebyshev semi-iterative acceleration (Wang 2015; VBD sec. 3.7): after ``delay`` plain
        # iterations (Wang's S), x ← ω(x̂ − x⁽ⁿ⁻²⁾) + x⁽ⁿ⁻²⁾ after every iteration but the first of the
        # accelerated run (ω = 1 there: only the history x⁽⁰⁾, x⁽¹⁾ is recorded); with fewer than
        # delay + 2 iterations it has nothing to do
        cheb = rho > 0.0 and s.iterations > delay + 1
        # chebyshev_contacts="skip": vertices with a primitive closer than the search radius keep the solve's position
        cheb_skip = self.query_radius if (self.self_contacts is not None
                                          and getattr(s, "chebyshev_contacts", "skip") == "skip") else 0.0
        # Jacobi sweeps (Simulator(sweep="jacobi")): one launch an iteration, the Chebyshev step inside it
        jacobi = s.sweep == "jacobi"
        for sub in range(S):
            alpha = float(sub + 1) / S
            for c in self.colliders:
                if c.moving:  # a still collider keeps its pose and BVH
                    wp.launch(CP.lerp_points_kernel, c.vertex_count, inputs=[c.start, c.end, alpha], outputs=[c.points],
                              device=dev)
                    c.mesh.refit()
            # the inertial step, the pins and (Chebyshev without delay) the history x⁽⁰⁾ in one launch
            self._launch(K.predict_kernel, n, [state.x, state.v, state.v_last, m.inv_mass, gravity, h, 1.0 / (1.0 + s.air_damping * h),
                                               GUESS_MODES[s.initial_guess], EXTRAPOLATE_MAX_ACC, self._ext_arg, int(self.ext_acc is not None),
                                               m.pin_slot, state.pin_start, state.pin_end, alpha,
                                               int(jacobi or (cheb and delay == 0)),
                                               self.x_prev, self.y, self.x_jac if jacobi else self.cheb_prev2], site=sub)
            if s.drag > 0.0:
                wp.launch(K.vertex_normals_kernel, n, inputs=[self.x_prev, m.tri, m.v_tri_offsets, m.v_tri], outputs=[self.normals], device=dev)
            for k, c in enumerate(self.colliders):
                wp.launch(CP.collider_detect_kernel, n,
                          inputs=[self.x_prev, c.mesh.id, k, slots, self.query_radius, int(c.closed)],
                          outputs=[self.c_point, self.c_normal, self.c_vel, self.c_active], device=dev,
                          block_dim=query_block_dim(dev, n))
            if self.collider_contacts is not None:
                self.collider_contacts.detect(self.x_prev, self.query_radius,
                                              moved=self._cc_refresh or any(c.moving for c in self.colliders))
            if self.self_contacts is not None:
                # re-split the BVHs once per frame, refit them in the other substeps
                self.self_contacts.detect(self.x_prev, rebuild=(sub == 0), executor=self._detect_pool())
            if sub == 0:  # later substeps get the angles from the previous one's finish_substep_kernel
                self._launch(K.edge_angles_kernel, nbend, [self.x_prev, m.bend, self.theta_prev])
            omega = 1.0
            for it in range(s.iterations):
                j = it - delay                       # index within the accelerated run
                if cheb and j >= 0:
                    omega = 1.0 if j == 0 else (2.0 / (2.0 - rho * rho) if j == 1 else 4.0 / (4.0 - rho * rho * omega))
                    omega = min(omega, omega_cap)
                if jacobi:
                    # every free vertex at once: iteration it reads one iterate array and writes the other,
                    # the last one writing state.x (predict_kernel put the first guess in both)
                    out = state.x if (s.iterations - 1 - it) % 2 == 0 else self.x_jac
                    jac = (self.x_jac if out is state.x else state.x, out, omega if cheb and j > 0 else 1.0)
                    if dev.is_cpu:
                        self._solve_cpu(self._solve_args(state, h, slots, jac), 0, self._free_count,
                                        self._cpu_threads(), split=True, site=("jacobi", it))
                    else:
                        self._solve_color(state, 0, self._free_count, h, slots, jacobi=jac)
                    continue
                if self.self_contacts is not None:   # same-colour partners are read here (SelfCollision)
                    wp.copy(self.self_contacts.x_iter, state.x)
                if cheb and j == 0 and delay > 0:    # with no delay, predict_kernel recorded x⁽⁰⁾
                    wp.copy(self.cheb_prev2, state.x)
                if dev.is_cpu and cpu_args is None:
                    cpu_args = self._solve_args(state, h, slots)  # the same arrays and values all frame
                if dev.is_cpu and self._cpu_threads() > 1 and self._sweep_ok():
                    # every colour in one launch per thread, the threads meeting at a barrier after each
                    self._solve_cpu_sweep(cpu_args, self._cpu_threads())
                elif dev.is_cpu and self._cpu_threads() > 1 and self._cpu_split():
                    # each colour's vertices split over threads; colour by colour (same result, bit for bit)
                    for start, count in m.color_ranges:
                        self._solve_cpu(cpu_args, start, count, self._cpu_threads())
                elif dev.is_cpu:
                    # Warp runs a CPU launch's threads one after another in index order, so one launch over
                    # all colours in sequence is exactly the colour-by-colour Gauss–Seidel sweep (bit for bit)
                    # at a tenth of the launch overhead.
                    self._solve_cpu(cpu_args, 0, self._free_count, 1)
                else:
                    for start, count in m.color_ranges:
                        self._solve_color(state, start, count, h, slots)
                if cheb and j == 0:
                    wp.copy(self.cheb_prev, state.x)
                elif cheb and j > 0:
                    self._launch(K.chebyshev_kernel, n, [omega, m.inv_mass, state.x, self.cheb_prev, self.cheb_prev2,
                                                         int(s.ground is not None), float(s.ground or 0.0), self.x_prev,
                                                         *cheb_bound, self.c_point, self.c_normal, self.c_active,
                                                         slots, cheb_skip],
                                 site=it)
            angles = nbend if sub + 1 < S else 0  # the next substep's start angles, within this frame
            self._launch(K.finish_substep_kernel, max(n, angles), [n, state.x, self.x_prev, h, state.v, self.bad, angles, m.bend,
                                                                   self.theta_prev], site=int(angles > 0))

    def _launch(self, kernel, dim, args, site=0):
        """wp.launch of a small per-substep kernel over ``dim`` items (``args``: its arguments after count and
        chunk, inputs then outputs, in the kernel's order).

        On CUDA the frame is a captured graph and this is wp.launch. On the CPU the launch is recorded
        once per call site (kernel, ``site``) and replayed while its arguments stay the same arrays and
        values: packing arguments costs ~30 µs a launch there, as much as the kernel itself on a 64×64
        cloth. One entry per site, replaced when an argument changes, so no released array stays held."""
        dev = self.model.device
        if dev.is_cuda:
            wp.launch(kernel, dim, inputs=[dim, 1, *args], device=dev)
            return
        ids = (dim, *(_arg_key(a) for a in args))
        entry = self._cpu_launches.get((kernel.key, site))
        if entry is None or entry[0] != ids:
            c = CPU_SLOTS_PER_THREAD
            entry = (ids, wp.launch(kernel, (dim + c - 1) // c, inputs=[dim, c, *args], device=dev, record_cmd=True),
                     args)
            self._cpu_launches[(kernel.key, site)] = entry
        entry[1].launch()

    def _workers(self) -> ThreadPoolExecutor:
        if self._pool is None:
            # sized for the most threads a sweep may use (a Jacobi sweep splits even with self contact)
            self._pool = ThreadPoolExecutor(max_workers=max(1, int(getattr(self.s, "cpu_threads", 1)) - 1),
                                            thread_name_prefix="clothsim-vbd")
        return self._pool

    def _detect_pool(self):
        """CPU with more than one thread: the worker threads that run the edge–edge contact search beside the
        vertex–triangle one (SelfContactDetector.detect(executor=)); None otherwise."""
        if self.model.device.is_cpu and int(getattr(self.s, "cpu_threads", 1)) > 1:
            return self._workers()
        return None

    def _cpu_threads(self) -> int:
        """Threads for the CPU colour sweep. Self-contact partners of the solved vertex's own colour are read
        at the iteration's start (SelfCollision.x_iter), so a colour's vertices are independent with self
        contact too: split or not, the sweep gives the same result, bit for bit."""
        return max(1, int(getattr(self.s, "cpu_threads", 1)))

    def _chunk_min(self) -> int:
        return CPU_CONTACT_CHUNK_MIN if self._pair_contacts() else CPU_CHUNK_MIN

    def _cpu_split(self) -> bool:
        """CPU: split the colours over threads only if one is big enough (else one launch sweeps them all)."""
        return any(c >= 2 * self._chunk_min() for _, c in self.model.color_ranges)

    def _solve_cpu(self, args, start, count, threads, split=False, site=None):
        """Colour vertices [start, start + count) on the CPU, in contiguous chunks on ``threads`` threads
        (worker threads and this one) when each thread gets at least CPU_CHUNK_MIN vertices
        (CPU_CONTACT_CHUNK_MIN with contact pairs, in CPU_CONTACT_CHUNKS_PER_THREAD chunks a thread, taken
        in turn).

        Each chunk is a recorded Warp launch, kept while the arguments stay the same arrays and values:
        packing the solve kernel's ~90 arguments anew costs more than a small cloth's whole sweep
        (pinned 64×64 grid, 1 iteration: 2.7 ms of a 45 ms frame is launch overhead)."""
        m = self.model
        t = max(1, min(threads, count // self._chunk_min()))
        if split:  # a Jacobi sweep: any vertices may share a chunking, contact pairs or not
            t = max(1, min(int(getattr(self.s, "cpu_threads", 1)), count // JACOBI_CHUNK_MIN))
        # a Jacobi sweep's launches differ per iteration (arrays alternate, Chebyshev ω): one entry per ``site``
        key = (start, count, t) if site is None else (start, count, t, site)
        entry = self._cpu_launches.get(key)
        if entry is not None and entry[2] is not args:  # a new argument list (one per frame): compare it
            ids = tuple(_arg_key(a) for a in args)
            entry = (ids, entry[1], args) if entry[0] == ids else None
            if entry is not None:
                self._cpu_launches[key] = entry
        if entry is None:
            ids = tuple(_arg_key(a) for a in args)
            # one entry per chunking: a changed argument replaces it, so no released array stays referenced
            # with contact pairs the work per vertex is uneven (a fold's layers lie in some rows, not others):
            # more chunks than threads, taken in turn; without, one even chunk a thread
            n = t * CPU_CONTACT_CHUNKS_PER_THREAD if t > 1 and self._pair_contacts() else t
            bounds = [start + (count * c) // n for c in range(n + 1)]
            kern = K.vbd_solve_kernel if self._pair_contacts() else K.vbd_solve_elastic_kernel
            launches = [wp.launch(kern, (b1 - b0 + CPU_SLOTS_PER_THREAD - 1) // CPU_SLOTS_PER_THREAD,
                                  inputs=[*self._lead(b0, b1 - b0, 1, CPU_SLOTS_PER_THREAD), *args],
                                  device=m.device, record_cmd=True) for b0, b1 in zip(bounds, bounds[1:])]
            entry = (ids, launches, args)  # args: keeps the arrays (and so their ids) alive
            self._cpu_launches[key] = entry
        launches = entry[1]
        if t == 1:
            launches[0].launch()
            return
        if len(launches) == t:
            futures = [self._workers().submit(cmd.launch) for cmd in launches[1:]]
            launches[0].launch()
        else:
            take = taker()
            futures = [self._workers().submit(take, launches) for _ in range(t - 1)]
            take(launches)
        for f in futures:
            f.result()

    def _color_end(self) -> int:
        """One past the last free vertex in colour order."""
        return self.model.color_ranges[-1][0] + self.model.color_ranges[-1][1] if self.model.color_ranges else 0

    def _lead(self, start, count, lanes, chunk) -> list:
        """The solve kernels' leading arguments: the colour's vertices [start, start + count), lanes per vertex,
        vertices per thread, and the CPU sweep's offsets, barrier, chunk claims and thread count (0: not a
        sweep)."""
        return [self.model.color_vertices, start, count, lanes, chunk, self._sweep_offsets, self._sweep_sync,
                self._sweep_claims, 0]

    def _sweep_ok(self) -> bool:
        """Whether the CPU sweep (one launch per thread an iteration) applies to the Gauss–Seidel iterations:
        a colour of at least CPU_SWEEP_COLOR_MIN vertices, at most
        SWEEP_MAX_COLORS colours in colour order without gaps, and no more threads than this process may
        run at once (a thread waiting at the barrier spins: one without a core of its own would hold up the
        others until the scheduler moved it)."""
        if self._sweep_fits is None:  # the colouring and the cores do not change: once per solver
            ranges = self.model.color_ranges
            contiguous = all(a[0] + a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            try:
                cores = len(os.sched_getaffinity(0))
            except AttributeError:  # not on Linux
                cores = os.cpu_count() or 1
            shaped = (0 < len(ranges) <= SWEEP_MAX_COLORS and contiguous
                      and any(c >= CPU_SWEEP_COLOR_MIN for _, c in ranges))
            self._sweep_fits = (shaped, cores)
        shaped, cores = self._sweep_fits
        return shaped and self._cpu_threads() <= cores

    def _solve_cpu_sweep(self, args, threads) -> None:
        """One Gauss–Seidel iteration over every colour on ``threads`` CPU threads: one recorded launch of
        K.vbd_solve_sweep_kernel (K.vbd_solve_sweep_elastic_kernel without contact pairs) per thread (this one and the workers), each solving the chunks of
        CPU_SWEEP_CHUNK vertices of the current colour that no other thread has claimed and waiting at a spin
        barrier for the others before the next colour. The colour-by-colour split (_solve_cpu per colour)
        handed work to the worker thread once a colour, ~110 µs a hand-off on this 2-core machine (an empty
        submit and result), as long as a 683-vertex colour takes in one thread; here once an iteration. A colour's
        vertices read other colours' positions, written before the barrier, and same-colour partners at the
        iteration's start (SelfCollision.x_iter), so the result is the same, bit for bit, as one thread's."""
        m = self.model
        key = ("sweep", threads)
        entry = self._cpu_launches.get(key)
        if entry is None or entry[2] is not args:
            ids = tuple(_arg_key(a) for a in args)
            if entry is None or entry[0] != ids:
                launches = []
                for t in range(threads):  # color_start: the thread's index
                    lead = self._lead(t, len(m.color_ranges), 1, CPU_SWEEP_CHUNK)
                    lead[-1] = threads
                    kern = K.vbd_solve_sweep_kernel if self._pair_contacts() else K.vbd_solve_sweep_elastic_kernel
                    launches.append(wp.launch(kern, 1, inputs=[*lead, *args], device=m.device, record_cmd=True))
                entry = (ids, launches, args)
            else:
                entry = (ids, entry[1], args)
            self._cpu_launches[key] = entry
        launches = entry[1]
        self._sweep_sync.zero_()
        self._sweep_claims.zero_()
        futures = [self._workers().submit(cmd.launch) for cmd in launches[1:]]
        try:
            launches[0].launch()
        finally:
            for f in futures:
                f.result()
        if self._sweep_sync.numpy()[1] != 0:
            raise RuntimeError(f"CPU solve: a thread of the {threads}-thread colour sweep did not reach a colour's "
                               f"barrier within {SWEEP_WAIT_CYCLES} time-stamp cycles (a few seconds: are other "
                               f"processes holding the cores?); Simulator(cpu_threads=1) avoids the threaded sweep")

    def _pair_contacts(self) -> bool:
        """Whether the solve needs the kernel variant with the contact-pair loops."""
        return self.collider_contacts is not None or self.self_contacts is not None

    def _solve_args(self, state, h, slots, jacobi=None):
        """The solve kernel's arguments after its first five. A Gauss–Seidel sweep reads and writes
        ``state.x``; a Jacobi sweep (``jacobi`` = (input, output, Chebyshev ω)) reads one of the two
        iterate arrays and writes the other (kernels.vertex_update)."""
        m = self.model
        s = self.s
        x_in = state.x if jacobi is None else jacobi[0]
        self_args = self.self_contacts.kernel_args() if self.self_contacts is not None else self._self_off_args
        if jacobi is not None and self.self_contacts is not None:
            self_args = [*self_args[:-1], x_in]  # same-colour partners: every vertex reads the sweep's input
        return [
            x_in, self.x_prev, self.y, self.normals, self.theta_prev, *self.element_args(h, slots),
            m.edges, m.v_edge_offsets, m.v_edge,
            *(self.collider_contacts.kernel_args() if self.collider_contacts is not None else self._collider_off_args),
            *self_args,
            *((0, state.x, 1.0, 1.0) if jacobi is None else (1, jacobi[1], float(s.jacobi_omega), float(jacobi[2]))),
        ]

    def element_args(self, h, slots) -> list:
        """The solve kernel's arguments from ``mass`` to ``slots``: the model's element arrays, the materials, the
        substep h, the environment and the collider contact planes (also what benchmarks/step_residual.py's kernel
        takes after the state, to score a step with the same element code)."""
        m = self.model
        s = self.s
        return [
            m.mass, m.vertex_area, m.vertex_cloth,
            m.tri, m.tri_dm_inv, m.tri_area, m.v_tri_offsets, m.v_tri,
            m.bend, m.bend_k, m.bend_rest, m.v_bend_offsets, m.v_bend,
            m.spring, m.spring_k, m.v_spring_offsets, m.v_spring,
            m.mat_coef, m.mat_damping, m.mat_friction, m.mat_thickness,
            h, s.drag, wp.vec3(*s.wind), int(s.ground is not None), float(s.ground or 0.0),
            s.contact_stiffness, s.contact_damping, s.friction_eps, int(s.membrane_hessian == "neo-hookean"),
            self.c_point, self.c_normal, self.c_vel, self.c_active, slots,
        ]

    def contact_tile_max_vertices(self) -> int:
        """CUDA: the largest colour the solve with contact pairs runs a half warp a vertex on (read when a
        frame is captured; a fabric change recaptures): TILE_MAX_CONTACT_VERTICES where the contact radius
        reaches TILE_CONTACT_RADIUS_EDGES median edges, else TILE_MAX_VERTICES as without pairs."""
        if self.query_radius >= TILE_CONTACT_RADIUS_EDGES * self.model.median_edge_length:
            return TILE_MAX_CONTACT_VERTICES
        return min(TILE_MAX_VERTICES, TILE_MAX_CONTACT_VERTICES)

    def _solve_color(self, state, start, count, h, slots, jacobi=None):
        """One colour on CUDA (the CPU sweeps go through _solve_cpu); with ``jacobi`` all free vertices."""
        m = self.model
        args = self._solve_args(state, h, slots, jacobi)
        pairs = self._pair_contacts()
        if count <= (self.contact_tile_max_vertices() if pairs else TILE_MAX_VERTICES):
            lanes = K.WARP_LANES if (CONTACT_LANES if pairs else ELASTIC_LANES) == K.WARP_LANES else K.LANES
            per_block = BLOCK_DIM // lanes
            blocks = (count + per_block - 1) // per_block
            if lanes == K.WARP_LANES:
                kern = K.vbd_solve_warp_kernel if pairs else K.vbd_solve_warp_elastic_kernel
            else:
                kern = K.vbd_solve_half_warp_kernel if pairs else K.vbd_solve_half_warp_elastic_kernel
            wp.launch(kern, blocks * BLOCK_DIM, inputs=[*self._lead(start, count, lanes, 1), *args],
                      block_dim=BLOCK_DIM, device=m.device)
        else:
            kern = K.vbd_solve_kernel if pairs else K.vbd_solve_elastic_kernel
            wp.launch(kern, count, inputs=[*self._lead(start, count, 1, 1), *args], device=m.device)

    # ------------------------------------------------------------------ memory
    def memory_report(self) -> dict:
        scratch = [self.x_prev, self.y, self.normals, self.bad, self.theta_prev, self.cheb_prev, self.cheb_prev2, self.x_jac,
                   self._ext_off, self._sweep_offsets, self._sweep_sync, self._sweep_claims] + (
                       [self.ext_acc] if self.ext_acc is not None else [])
        contacts = [self.c_point, self.c_normal, self.c_vel, self.c_active]
        rep = {
            "solver_scratch": sum(a.capacity for a in scratch),
            "collider_contacts": sum(a.capacity for a in contacts),
            "colliders": sum(c.nbytes() for c in self.colliders),
        }
        if self.self_contacts is not None:
            rep["self_contacts"] = self.self_contacts.nbytes()
        if self.collider_contacts is not None:
            rep["collider_feature_contacts"] = self.collider_contacts.nbytes()
        rep["frame_backup"] = sum(a.capacity for a in self.backup)
        return rep

    def release(self) -> None:
        self._graph = None
        self._cpu_launches = {}
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for c in self.colliders:
            c.release()
        self.colliders = []
        if self.self_contacts is not None:
            self.self_contacts.release()
            self.self_contacts = None
        if self.collider_contacts is not None:
            self.collider_contacts.release()
            self.collider_contacts = None
        self.backup = []
        self._collider_off_args = []
        self.x_prev = self.y = self.normals = self.bad = self.theta_prev = self.cheb_prev = self.cheb_prev2 = self.x_jac = None
        self.ext_acc = self._ext_off = None
        self._self_off_args = []
        self._bound_off_args = []
        self._sweep_offsets = self._sweep_sync = self._sweep_claims = None
        self.c_point = self.c_normal = self.c_vel = self.c_active = None

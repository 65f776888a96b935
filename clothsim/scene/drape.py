"""Drape: a built scene (garments as Cloths, seams, pins, the avatar collider) that steps and measures.

    with Drape(scene, level="coarsest", device="cpu") as drape:
        result = drape.run(progress=True)        # until settled or the frame cap
        result.passed, result.failures           # the scene's checks

What is measured (each frame unless noted; symbols: m_i vertex mass [kg], v_i velocity [m/s],
Δt the frame length [s], g = 9.81 m/s²):

* kinetic energy per kilogram of cloth, ``Σ ½ m_i |v_i|² / Σ m_i`` [J/kg];
* residual: the implicit step solves ``m_i (v_i⁺ − v_i)/Δt = F_i(x⁺)``, so ``m_i |Δv_i| / Δt`` is the
  net force left on vertex i; divided by its weight ``m_i g`` it is ``|Δv_i| / (g Δt)``; the RMS of that
  over free vertices is the residual [-] (0 at a static equilibrium, 1 = a vertex in free fall);
* seam gaps, ``|x_a − x_b|`` of every sewn pair, largest per garment [m];
* at the end: the deepest cloth vertex inside the body mesh (signed distance by
  ``wp.mesh_query_point``; the body, not the offset collider), cloth–body triangle intersections and
  cloth–cloth triangle intersections (all garments as one mesh), from
  :mod:`clothsim.collision.intersections`.

A drape is settled when, after ``min_frames``, energy and residual stay under the scene's thresholds for
``settle_frames`` consecutive frames. It passes when it settled within ``frame_cap`` frames, every
seam gap is under ``checks.seam_gap``, no vertex is deeper than ``checks.penetration`` and there are
no intersections.

Coarse-to-fine (``refine_from``, or the scene's ``simulation.refine_from``): every garment is sewn and
settled at the coarser level ``refine_from`` first, then the drape switches one level finer
(:meth:`clothsim.multires.MultiResSimulator.set_level`: positions and velocities carried by the pattern
hierarchy's prolongation, sewn pairs put together, vertices projected out of the body, a brief relaxation)
and settles again, level by level, up to the garments' level. Each level runs until it has settled (the same
thresholds, held for ``settle_frames`` frames; ``min_frames`` only at the first level) or ``frame_cap``
frames of that level. Seams are zero-length springs: at a fine level Gauss–Seidel moves whole panels slowly,
so closing them at a coarse level first is what lets a fine drape close its seams (and quicker). The checks
are made at the final (fine) level; :attr:`DrapeResult.levels` has frames, time and the end state of each
level. :meth:`Drape.positions` always returns the final level's vertices (coarser levels mapped through the
hierarchy), so a frame cache has one topology.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import InputError
from .schema import Scene
from .seams import untangle, weld_seams

G = 9.81
# coarse-to-fine: a level before the final one hands over once kinetic energy and residual are under this
# multiple of the scene's thresholds (its motion is re-settled at the finer level anyway; see Drape)
COARSE_SLACK = 4.0
# coarse-to-fine: a level before the final one keeps its layers (and the body) at least this fraction of its
# edge length apart (2 mm at 40 mm, 1 mm at 20 mm; the fabric's own thickness where that is larger). Linear
# prolongation puts the finer level on the coarse triangles, but a fine triangle that spans a coarse fold line
# cuts across the fold; with cotton's 0.3 mm the layers of a 40 mm fold are closer than that and the circle
# skirt came out of the 40 -> 20 mm switch with 5 cloth-cloth intersections (0 with 2 mm, tests/test_drape_refine.py)
COARSE_THICKNESS_PER_EDGE = 0.05


@dataclass
class FrameStats:
    """One frame's measurements (see the module docstring for the definitions)."""

    frame: int
    kinetic_energy: float  # J/kg
    residual: float  # RMS |Δv|/(g Δt) over free vertices
    seam_gap: float  # m, largest over all garments
    seconds: float  # wall time of the step


class FrameMeter:
    """Measures a drape frame by frame (the module docstring has the definitions): kinetic energy per
    kilogram, the residual RMS |Δv|/(g Δt) over free vertices (Δv against the previous frame's velocities,
    :attr:`v_prev`), and the largest seam gap. ``seams``: one (S, 2) array of vertex pairs per garment,
    in simulator indices."""

    def __init__(self, model, seams: list, v) -> None:
        self.mass = model.host_mass.astype(np.float64)
        self.free = ~model.host_pinned
        self.seams = seams
        self.v_prev = np.asarray(v, dtype=np.float64)

    def measure(self, frame: int, x, v, dt: float, seconds: float) -> FrameStats:
        x = np.asarray(x, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        m = self.mass
        ke = float(0.5 * np.sum(m * np.einsum("ij,ij->i", v, v)) / max(float(m.sum()), 1e-30))
        dv = np.linalg.norm(v - self.v_prev, axis=1)[self.free]
        residual = float(np.sqrt(np.mean((dv / (G * dt)) ** 2))) if dv.size else 0.0
        self.v_prev = v
        gap = max((float(np.linalg.norm(x[s[:, 0]] - x[s[:, 1]], axis=1).max()) for s in self.seams if len(s)),
                  default=0.0)
        return FrameStats(frame=frame, kinetic_energy=ke, residual=residual, seam_gap=gap, seconds=seconds)


@dataclass
class GarmentReport:
    name: str
    vertices: int
    triangles: int
    level: int
    edge_length_m: float | None
    worst_penetration_m: float  # deepest vertex inside the body mesh (0 if none)
    largest_seam_gap_m: float
    seam_pairs: int
    body_intersections: int  # garment triangle x body triangle pairs that intersect
    self_intersections: int  # within this garment


@dataclass
class DrapeResult:
    scene: str
    device: str
    frames: int
    settled: bool
    settle_frame: int | None  # first frame of the final run of settle_frames quiet frames
    kinetic_energy: float  # J/kg, last frame
    residual: float  # last frame
    cloth_intersections: int  # all garments as one mesh (cloth–cloth, incl. garment vs garment)
    garments: list[GarmentReport]
    timings_s: dict
    thresholds: dict
    failures: list[str] = field(default_factory=list)
    history: list[FrameStats] = field(default_factory=list)
    # coarse-to-fine: one LevelStage dict per level visited, coarsest first (empty for a one-level drape)
    levels: list[dict] = field(default_factory=list)
    stopped_by: str = ""  # "settled", "frame cap" or "time cap"

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def worst_penetration_m(self) -> float:
        return max(g.worst_penetration_m for g in self.garments)

    @property
    def largest_seam_gap_m(self) -> float:
        return max(g.largest_seam_gap_m for g in self.garments)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["passed"] = self.passed
        d["worst_penetration_m"] = self.worst_penetration_m
        d["largest_seam_gap_m"] = self.largest_seam_gap_m
        d["history"] = [dataclasses.asdict(h) for h in self.history]
        return d


@dataclass
class LevelStage:
    """One level of a coarse-to-fine drape: what it took and where it ended (last frame's measurements)."""

    level: int
    edge_length_m: float
    vertices: int
    first_frame: int  # frame number of the first step at this level
    frames: int  # frames stepped at this level
    settled: bool  # a level before the final one: under coarse_slack x the thresholds (its hand-over test)
    settle_frame: int | None
    step_s: float  # wall time of the steps at this level
    switch_s: float  # wall time of the switch into this level (mapping, projection, relaxation; 0 for the first)
    kinetic_energy: float  # J/kg
    residual: float
    seam_gap_m: float
    switch_max_displacement_m: float = 0.0  # largest move of the switch's projection + relaxation
    # cloth-cloth triangle intersections right after the switch into this level (sewn pairs welded; -1 for
    # the first level): linear prolongation cuts corners, and in tight folds a chord can pass through the
    # next layer, which self-collision then cannot undo (it keeps layers from crossing, not uncrossing)
    switch_intersections: int = -1
    check_s: float = 0.0  # wall time of that count and of the untangling (not in switch_s)
    # the switch's intersections removed by :func:`untangle` (Drape's ``untangle=True``): the count before each
    # smoothing iteration and after the last (empty when there was nothing to remove)
    untangle_counts: list = field(default_factory=list)
    untangle_max_move_m: float = 0.0  # largest move the untangling made


class Drape:
    """A scene built for simulation: one :class:`clothsim.Simulator` with every garment and the avatar.

    Args:
        scene: a loaded :class:`~clothsim.scene.Scene`.
        level: resolution level for every garment: an index (0 = coarsest), "coarsest", "finest", or
            None (each garment's own ``level``/``edge_length`` from the scene).
        device: overrides the scene's ``simulation.device`` ("auto" = CUDA if present, else CPU).
        frame_cap: overrides ``simulation.frame_cap`` (coarse-to-fine: the cap of each level).
        refine_from: coarse-to-fine (see the module docstring): the level index (0 = coarsest, or
            "coarsest") to sew and settle at first; None: the scene's ``simulation.refine_from``. Equal to the
            garments' level: a one-level drape. Needs pattern garments, all at one level.
        refine_relax: relaxation steps after each switch (:class:`clothsim.multires.MultiResSimulator`'s
            ``relax_substeps``; default its 8).
        coarse_slack: a level before the final one hands over to the next once kinetic energy and residual
            are under ``coarse_slack`` times the scene's thresholds (for ``settle_frames`` frames): its
            remaining motion is re-settled at the finer level anyway. The final level uses the thresholds.
        coarse_substeps: substeps per frame at the levels before the final one (default: half the scene's,
            rounded up); the final level uses the scene's settings unchanged.
        contact_per_area: the scene's ``contact_stiffness`` holds at the coarsest level (40 mm) and a level of
            edge h uses k·(h/40 mm)², so contacts are as stiff relative to the vertices they hold at every
            level (see :meth:`_contact_stiffness`); False uses the scene's number at every level.

    Coarse-to-fine example (20 mm straight skirt, sewn at 40 mm first)::

        scene = clothsim.load_scene("scenes/straight_skirt.toml")
        with Drape(scene, level=1, refine_from=0, device="cpu") as drape:
            result = drape.run()
        for st in result.levels:                 # frames, time and end state per level
            print(st["level"], st["frames"], st["step_s"], st["switch_s"])
        result.passed, result.largest_seam_gap_m  # the checks, at the 20 mm level
    """

    def __init__(self, scene: Scene, *, level: int | str | None = None, device: str | None = None,
                 frame_cap: int | None = None, refine_from: int | str | None = None,
                 refine_relax: int | None = None, coarse_slack: float = COARSE_SLACK,
                 coarse_substeps: int | None = None, chord_offset: bool = True,
                 coarse_thickness: float | None = COARSE_THICKNESS_PER_EDGE, untangle: bool = True,
                 contact_per_area: bool = True):
        import warp as wp

        from ..colliders import Collider
        from ..simulator import Simulator
        from . import sources

        t0 = time.perf_counter()
        self.scene = scene
        sim_spec = scene.simulation
        self.frame_cap = int(frame_cap if frame_cap is not None else sim_spec.frame_cap)
        if self.frame_cap < 1:
            raise InputError(f"Drape: frame_cap must be >= 1, got {frame_cap!r}")
        dev = device or sim_spec.device
        self.device = str(wp.get_preferred_device()) if dev == "auto" else dev
        self.history: list[FrameStats] = []
        self.stages: list[LevelStage] = []
        self._stage_start = 0  # index into history where the current level's frames begin
        self._pose_end = 0
        self.body = sources.build_body(scene)
        self.contact_per_area = bool(contact_per_area)
        rf = refine_from if refine_from is not None else sim_spec.refine_from
        self.fine_level = None  # the final level of a coarse-to-fine drape (None: one level)
        if rf is not None:
            k = self._refine_target(scene, level, rf)
            if k is not None:
                if not (isinstance(coarse_slack, (int, float)) and coarse_slack >= 1.0):
                    raise InputError(f"Drape: coarse_slack must be a number >= 1, got {coarse_slack!r}")
                if coarse_substeps is not None and (int(coarse_substeps) != coarse_substeps or coarse_substeps < 1):
                    raise InputError(f"Drape: coarse_substeps must be an integer >= 1 or None, got {coarse_substeps!r}")
                self.coarse_slack = float(coarse_slack)
                self.chord_offset = bool(chord_offset)
                if coarse_thickness is not None and not (isinstance(coarse_thickness, (int, float))
                                                         and 0.0 <= coarse_thickness <= 0.5):
                    raise InputError(f"Drape: coarse_thickness must be a fraction of the edge length in [0, 0.5] "
                                     f"or None, got {coarse_thickness!r}")
                self.coarse_thickness = coarse_thickness
                self.untangle = bool(untangle)
                self.coarse_substeps = int(coarse_substeps if coarse_substeps is not None
                                           else max(1, (sim_spec.substeps + 1) // 2))
                self._init_refine(scene, k[0], k[1], refine_relax)
                self.setup_s = time.perf_counter() - t0
                return
        self.garments = [sources.build_garment(scene, g, level, self.body) for g in scene.garments]
        self.cloths = [g.cloth for g in self.garments]
        edges = [g.edge_length for g in self.garments if g.edge_length is not None]
        garment_levels = {g.level for g in self.garments}
        if len(garment_levels) > 1 and sim_spec.levels:
            raise InputError(f"{scene.path}: simulation.levels: the garments are at levels "
                             f"{sorted(garment_levels, key=str)}, so a per-level setting is ambiguous; "
                             f"give every garment the same level")
        substeps, iterations = sim_spec.at_level(next(iter(garment_levels), None))
        self.sim = Simulator(self.cloths, device=self.device, dt=sim_spec.dt, substeps=substeps,
                             iterations=iterations, ground=sim_spec.ground,
                             self_collision=sim_spec.self_collision,
                             contact_stiffness=self._contact_stiffness(sim_spec.contact_stiffness,
                                                                       min(edges, default=None)),
                             contact_damping=sim_spec.contact_damping, drag=sim_spec.drag,
                             air_damping=sim_spec.air_damping, initial_guess="adaptive",
                             sweep=sim_spec.sweep_at(next(iter(garment_levels), None)),
                             chebyshev_rho=sim_spec.chebyshev_rho, chebyshev_delay=sim_spec.chebyshev_delay)
        try:
            self.collider = Collider.mesh(self.body.collider_vertices, self.body.triangles, name="avatar")
            self.collider_handle = self.sim.add_collider(self.collider)
            self.offsets = self.sim.cloth_offsets
            self.meter = FrameMeter(self.sim.model, [g.cloth.seams + self.offsets[i] for i, g in enumerate(self.garments)],
                                    self.sim.velocities())
        except BaseException:
            self.sim.release()
            raise
        self.setup_s = time.perf_counter() - t0
        self._pose_schedule = sources.pose_schedule(scene, self.body)
        self._pose_end = scene.pose.blend_frames if self._pose_schedule else 0

    # ------------------------------------------------------------------ coarse-to-fine set-up
    @staticmethod
    def _refine_target(scene: Scene, level, refine_from) -> tuple[int, int] | None:
        """(start level, final level) of a coarse-to-fine drape, or None when they are the same level."""
        from . import sources

        key = f"{scene.path}: simulation.refine_from"
        if any(g.pattern is None for g in scene.garments):
            bad = next(g.name for g in scene.garments if g.pattern is None)
            raise InputError(f"{key}: coarse-to-fine draping needs sewing-pattern garments (they have a resolution "
                             f"hierarchy); garment {bad!r} is a mesh file with one level")
        levels = sources.DEFAULT_LEVELS
        ks = {sources._level_index(levels, g, level, f"{scene.path}: garments.{g.name}") for g in scene.garments}
        if len(ks) != 1:
            raise InputError(f"{key}: coarse-to-fine draping runs every garment at one level, but the garments are "
                             f"at levels {sorted(ks)}; give them the same level (or pass one level)")
        k = ks.pop()
        if refine_from == "coarsest":
            r = 0
        elif isinstance(refine_from, (int, np.integer)) and not isinstance(refine_from, bool) and refine_from >= 0:
            r = int(refine_from)
        else:
            raise InputError(f"{key}: expected 'coarsest' or a level index >= 0, got {refine_from!r}")
        if r > k:
            raise InputError(f"{key}: level {r} ({1e3 * levels[min(r, len(levels) - 1)]:g} mm) is not coarser than "
                             f"the garments' level {k} ({1e3 * levels[k]:g} mm); expected an index in [0, {k}]")
        return None if r == k else (r, k)

    def _init_refine(self, scene: Scene, r: int, k: int, refine_relax: int | None) -> None:
        """A :class:`clothsim.multires.MultiResSimulator` over the pattern hierarchies, starting at level r."""
        from ..colliders import Collider
        from ..multires import MultiResSimulator
        from . import sources

        s = scene.simulation
        self.levels, self._built = sources.scene_level_set(scene, self.body)
        self.fine_level = k
        self.start_level = r
        relax_kw = {} if refine_relax is None else {"relax_substeps": int(refine_relax)}
        over = {}  # drafts at half the substeps, the final level the scene's, unless [simulation.levels] says
        for i in range(r, k + 1):
            sub, it = s.at_level(i, self.coarse_substeps if i < k else None)
            over[i] = {"substeps": sub, "iterations": it, "sweep": s.sweep_at(i)}
        e = self.levels.edge_lengths
        for i in range(r, k + 1):  # contact stiffness per vertex area (see _contact_stiffness)
            over.setdefault(i, {})["contact_stiffness"] = self._contact_stiffness(s.contact_stiffness, float(e[i]))
        fab_t = min(float(c.fabric.thickness) for c in self.levels.cloths(r))  # the thinnest garment's [m]
        thick = {i: self.coarse_thickness * e[i] for i in range(r, k)
                 if self.coarse_thickness and self.coarse_thickness * e[i] > fab_t}
        self.sim = MultiResSimulator(self.levels, level=r, device=self.device, dt=s.dt, substeps=s.substeps,
                                     level_settings=over, level_thickness=thick,
                                     iterations=s.iterations, ground=s.ground, self_collision=s.self_collision,
                                     contact_stiffness=s.contact_stiffness, contact_damping=s.contact_damping,
                                     drag=s.drag, air_damping=s.air_damping, initial_guess="adaptive",
                                     chebyshev_rho=s.chebyshev_rho, chebyshev_delay=s.chebyshev_delay, **relax_kw)
        try:
            self.levels.cloths(k)  # the final level's garments (what is exported and checked), built up front
            self.garments = self._built[k]
            self.cloths = [g.cloth for g in self.garments]
            self.offsets = np.concatenate([[0], np.cumsum([c.vertex_count for c in self.cloths])]).astype(np.int64)
            self.collider = Collider.mesh(self.body.collider_vertices, self.body.triangles, name="avatar")
            offsets = {}
            if self.chord_offset:  # coarse levels wrap the body as tight as the final one (chord_offsets), and
                # a coarse level's extra thickness (level_thickness) is taken off the body too
                from ..multires.proxy import chord_offsets

                offsets = {i: chord_offsets(self.body.collider_vertices, self.body.triangles, e[i], e[k],
                                            cap=self.body.skin_thickness) + (thick.get(i, fab_t) - fab_t)
                           for i in range(r, k)}
            self.collider_handle = self.sim.add_collider(self.collider, level_offsets=offsets)
            self._pose_schedule = sources.pose_schedule(scene, self.body)
            self._pose_end = scene.pose.blend_frames if self._pose_schedule else 0
            self._new_stage(0.0, 0.0)
        except BaseException:
            self.sim.release()
            raise

    def _new_stage(self, switch_s: float, displacement: float) -> None:
        lv = self.sim.level
        off = self.sim.cloth_offsets
        self.meter = FrameMeter(self.sim.simulator.model, [g.cloth.seams + off[i] for i, g in enumerate(self._built[lv])],
                                self.sim.velocities())
        self._stage_start = len(self.history)
        self.stages.append(LevelStage(level=lv, edge_length_m=float(self.levels.edge_lengths[lv]),
                                      vertices=int(self.sim.particle_count), first_frame=self.sim.frame + 1, frames=0,
                                      settled=False, settle_frame=None, step_s=0.0, switch_s=switch_s,
                                      kinetic_energy=math.nan, residual=math.nan, seam_gap_m=math.nan,
                                      switch_max_displacement_m=displacement))

    def _contact_stiffness(self, k: float, edge: float | None) -> float:
        """Body and cloth contact stiffness [N/m per vertex] at a level of edge length ``edge`` [m].

        A scene's ``contact_stiffness`` holds at the coarsest level of the pattern hierarchy (40 mm, where
        the scenes are tuned). A vertex's mass and the weight it presses on the body with shrink with its
        area, (h/h0)² per level, so a per-vertex stiffness held fixed makes each finer level's contacts 4x
        stiffer relative to the vertices they hold: at 10 mm the T-shirt came to rest but its residual
        stayed at 0.11 (0.14 for the 20 mm T-shirt at the 10 mm level's relative stiffness, where it
        settles in 23 frames at its own). With ``contact_per_area`` (default) the stiffness scales with the
        vertex area, k·(h/h0)², so every level presses into the body by the same few micrometres; mesh
        garments (one level) keep the scene's number."""
        from .sources import DEFAULT_LEVELS

        if not self.contact_per_area or edge is None:
            return float(k)
        return float(k) * (float(edge) / DEFAULT_LEVELS[0]) ** 2

    @property
    def level(self) -> int | None:
        """The level being simulated (coarse-to-fine: changes during :meth:`run`); None for a mesh garment."""
        return self.sim.level if self.fine_level is not None else (self.garments[0].level if self.garments else None)

    def refine(self) -> LevelStage:
        """Coarse-to-fine: switch one level finer (state carried over, see the module docstring); returns the
        new level's :class:`LevelStage`."""
        if self.fine_level is None or self.sim.level >= self.fine_level:
            raise InputError("Drape.refine: this drape is not coarse-to-fine or is already at its final level")
        st = self.stages[-1]
        st.settled = self.settled()
        st.settle_frame = self.history[-self.scene.simulation.checks.settle_frames].frame if st.settled else None
        t = time.perf_counter()
        rep = self.sim.set_level(self.sim.level + 1)
        self._new_stage(time.perf_counter() - t, rep.max_displacement_m)
        t = time.perf_counter()
        st = self.stages[-1]
        st.switch_intersections = self._cloth_intersections()
        if st.switch_intersections and self.untangle:
            self._untangle(st)
        st.check_s = time.perf_counter() - t
        return st

    def _untangle(self, st: LevelStage) -> None:
        """Remove the switch's cloth-cloth intersections (:func:`untangle`), then project the moved vertices out
        of the body again; moved vertices start at rest."""
        from ..multires.transfer import project_out

        sim = self.sim.simulator
        x = sim.positions()
        off = self.sim.cloth_offsets
        cl = self.levels.cloths(self.sim.level)
        seams = np.concatenate([c.seams + off[i] for i, c in enumerate(cl)])
        x2, counts = untangle(x, self.sim.triangles, seams, ~sim.model.host_pinned)
        moved = np.linalg.norm(x2 - x, axis=1) > 0
        v = sim.velocities()
        v[moved] = 0.0
        sim.set_positions(x2)
        sim.set_velocities(v)
        import warp as wp

        wp.copy(sim.state.v_last, sim.state.v)
        project_out(sim)
        st.untangle_counts = counts
        st.untangle_max_move_m = float(np.linalg.norm(sim.positions() - x, axis=1).max(initial=0.0))

    def _cloth_intersections(self) -> int:
        """Cloth-cloth triangle intersections of the level being simulated (sewn pairs welded)."""
        from ..collision.intersections import count_self_intersections

        x = self.sim.positions()
        off = self.sim.cloth_offsets
        cl = self.levels.cloths(self.sim.level)
        seams = np.concatenate([c.seams + off[i] for i, c in enumerate(cl)])
        xw, tw = weld_seams(x, self.sim.triangles, seams)
        return int(count_self_intersections(xw, tw, device="cpu"))

    # ------------------------------------------------------------------ stepping
    @property
    def frame(self) -> int:
        return self.sim.frame

    def positions(self) -> np.ndarray:
        """All garments' vertex positions (N, 3) float32 [m] (garment i: ``offsets[i]:offsets[i+1]``).
        Coarse-to-fine: always the final level's vertices (from a coarser level through the hierarchy's
        prolongation, a fine vertex at the barycentric combination of its coarse triangle's corners)."""
        x = self.sim.positions()
        if self.fine_level is not None and self.sim.level != self.fine_level:
            x = self.levels.map(x, self.sim.level, self.fine_level).astype(np.float32)
        return x

    def garment_positions(self, i: int) -> np.ndarray:
        x = self.positions()
        return x[self.offsets[i]:self.offsets[i + 1]]

    def _triangles(self) -> np.ndarray:
        """All garments' triangles in :meth:`positions` indices."""
        if self.fine_level is None:
            return self.sim.triangles
        return np.concatenate([g.cloth.triangles + self.offsets[i] for i, g in enumerate(self.garments)])

    def step(self) -> FrameStats:
        """Advance one frame (moving the avatar along the pose schedule) and measure it."""
        target = self._pose_schedule(self.sim.frame + 1) if self._pose_schedule else None  # sets body.current_vertices
        if target is not None:
            self.sim.set_collider_vertices(self.collider_handle, target)
        t = time.perf_counter()
        self.sim.step()
        seconds = time.perf_counter() - t
        st = self.meter.measure(self.sim.frame, self.sim.positions(), self.sim.velocities(), self.sim.dt, seconds)
        self.history.append(st)
        if self.stages:
            g = self.stages[-1]
            g.frames += 1
            g.step_s += seconds
            g.kinetic_energy, g.residual, g.seam_gap_m = st.kinetic_energy, st.residual, st.seam_gap
        return st

    @property
    def level_frames(self) -> int:
        """Frames stepped at the current level (coarse-to-fine), else all frames."""
        return len(self.history) - self._stage_start

    def settled(self) -> bool:
        """The current level has settled: after ``min_frames`` (first level) and the pose blend, kinetic energy
        and residual under the scene's thresholds for the last ``settle_frames`` frames of this level."""
        c = self.scene.simulation.checks
        h = self.history[self._stage_start:]
        first = not self.stages or len(self.stages) == 1
        if self.sim.frame < max(self.scene.simulation.min_frames if first else 0, self._pose_end) or len(h) < c.settle_frames:
            return False
        f = self.coarse_slack if self.fine_level is not None and self.sim.level < self.fine_level else 1.0
        return all(s.kinetic_energy <= f * c.kinetic_energy and s.residual <= f * c.residual for s in h[-c.settle_frames:])

    def run(self, *, progress: bool = False, on_frame: Callable[[FrameStats, "Drape"], None] | None = None,
            desc: str | None = None, max_seconds: float | None = None) -> "DrapeResult":
        """Step until settled (see module docstring) or the frame cap, then measure. ``on_frame`` is
        called after every frame (e.g. to fill a frame cache). Coarse-to-fine: each level until it has
        settled or ``frame_cap`` frames of that level, then the next finer one. ``max_seconds``: stop
        stepping after this much wall time [s] (reported as not settled, ``stopped_by = "time cap"``)."""
        from tqdm import tqdm

        t0 = time.perf_counter()
        n_levels = 1 if self.fine_level is None else self.fine_level - self.start_level + 1
        bar = tqdm(total=self.frame_cap * n_levels, desc=desc or f"drape {self.scene.name} on {self.device}",
                   unit="frame", disable=not progress, dynamic_ncols=True)
        if progress:
            bar.set_postfix_str("first frame: compiling Warp kernels unless cached", refresh=True)
        stop = "frame cap"
        try:
            while True:
                while self.level_frames < self.frame_cap:
                    st = self.step()
                    if on_frame is not None:
                        on_frame(st, self)
                    bar.update(1)
                    lv = f"level {self.sim.level}, " if self.fine_level is not None else ""
                    bar.set_postfix_str(f"{lv}KE {st.kinetic_energy:.1e} J/kg, residual {st.residual:.2f}, "
                                        f"seam gap {1e3 * st.seam_gap:.1f} mm", refresh=False)
                    if self.settled():
                        stop = "settled"
                        break
                    if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
                        stop = "time cap"
                        break
                if stop == "time cap" or self.fine_level is None or self.sim.level >= self.fine_level:
                    break
                if stop != "settled":  # a coarse level that did not settle within its cap still hands on
                    bar.update(self.frame_cap - self.level_frames)
                stop = "frame cap"
                self.refine()
        finally:
            bar.close()
        run_s = time.perf_counter() - t0
        r = self.measure(timings={"setup": self.setup_s, "run": run_s})
        r.stopped_by = stop
        return r

    # ------------------------------------------------------------------ checks
    def measure(self, timings: dict | None = None) -> DrapeResult:
        """The scene's checks on the current state (see module docstring)."""
        from ..collision.intersections import count_mesh_intersections, count_self_intersections, penetration_depths

        t0 = time.perf_counter()
        c = self.scene.simulation.checks
        x = self.positions()
        body_v = self.body.current_vertices
        body_t = self.body.triangles
        reports = []
        for i, g in enumerate(self.garments):
            xi = x[self.offsets[i]:self.offsets[i + 1]]
            tri = g.cloth.triangles
            depth = penetration_depths(xi, body_v, body_t, device="cpu")
            s = g.cloth.seams
            gap = float(np.linalg.norm(xi[s[:, 0]] - xi[s[:, 1]], axis=1).max()) if len(s) else 0.0
            xw, tw = weld_seams(xi, tri, s)
            reports.append(GarmentReport(
                name=g.name, vertices=len(xi), triangles=len(tri), level=g.level, edge_length_m=g.edge_length,
                worst_penetration_m=float(depth.max()) if depth.size else 0.0, largest_seam_gap_m=gap,
                seam_pairs=len(s),
                body_intersections=count_mesh_intersections(xi, tri, body_v, body_t, device="cpu"),
                self_intersections=count_self_intersections(xw, tw, device="cpu")))
        all_seams = np.concatenate([g.cloth.seams + self.offsets[i] for i, g in enumerate(self.garments)]) \
            if self.garments else np.zeros((0, 2), np.int64)
        xw, tw = weld_seams(x, self._triangles(), all_seams)
        cloth_int = count_self_intersections(xw, tw, device="cpu")
        h = self.history
        at_final = self.fine_level is None or self.sim.level == self.fine_level
        settled = self.settled() and at_final
        settle_frame = (h[-c.settle_frames].frame if settled else None)
        stages = []
        if self.stages:
            self.stages[-1].settled = self.settled()
            self.stages[-1].settle_frame = h[-c.settle_frames].frame if self.stages[-1].settled else None
            stages = [dataclasses.asdict(g) for g in self.stages]
        failures = []
        if not at_final:
            failures.append(f"stopped at level {self.sim.level} before the final level {self.fine_level} (the checks "
                            f"below are on the coarser drape mapped to level {self.fine_level})")
        if not settled:
            last = h[-1] if h else None
            per = " of the final level" if self.fine_level is not None else ""
            failures.append(f"did not settle within {self.frame_cap} frames{per} (last frame: kinetic energy "
                            f"{last.kinetic_energy:.2e} J/kg vs {c.kinetic_energy:.1e}, residual {last.residual:.3f} "
                            f"vs {c.residual})" if last else "no frame was simulated")
        for r in reports:
            if r.largest_seam_gap_m > c.seam_gap:
                failures.append(f"{r.name}: largest seam gap {1e3 * r.largest_seam_gap_m:.2f} mm > {1e3 * c.seam_gap:.2f} mm")
            if r.worst_penetration_m > c.penetration:
                failures.append(f"{r.name}: a vertex is {1e3 * r.worst_penetration_m:.2f} mm inside the body "
                                f"(tolerance {1e3 * c.penetration:.2f} mm)")
            if r.body_intersections:
                failures.append(f"{r.name}: {r.body_intersections} cloth-body triangle intersections")
        if cloth_int:
            failures.append(f"{cloth_int} cloth-cloth triangle intersections")
        timings = dict(timings or {})
        timings["measure"] = time.perf_counter() - t0
        return DrapeResult(
            scene=self.scene.name, device=self.device, frames=self.sim.frame, settled=settled,
            settle_frame=settle_frame, kinetic_energy=h[-1].kinetic_energy if h else math.nan,
            residual=h[-1].residual if h else math.nan, cloth_intersections=cloth_int, garments=reports,
            timings_s=timings, thresholds=dataclasses.asdict(c), failures=failures, history=list(h), levels=stages)

    # ------------------------------------------------------------------ lifetime
    def release(self) -> None:
        self.sim.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

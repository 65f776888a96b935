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

G = 9.81


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


def weld_seams(x: np.ndarray, triangles: np.ndarray, seams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge sewn vertex pairs into one vertex (at the mean of the sewn group) for intersection counts.

    Two panels sewn together touch along the seam: their triangles share points but not vertex indices,
    and :func:`count_self_intersections` (which counts touching triangles, and skips only pairs that
    share a vertex) would count every closed seam as intersections. Welding the pairs makes the sewn
    mesh what it stands for. Returns positions (N', 3) and triangles (M, 3) of the welded mesh.
    """
    n = len(x)
    parent = np.arange(n)
    if len(seams) == 0:
        return x, triangles

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in np.asarray(seams, dtype=np.int64):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    root = np.array([find(i) for i in range(n)])
    uniq, new = np.unique(root, return_inverse=True)
    xs = np.zeros((len(uniq), 3))
    np.add.at(xs, new, x.astype(np.float64))
    xs /= np.bincount(new, minlength=len(uniq))[:, None]
    t = new[np.asarray(triangles, dtype=np.int64)]
    ok = (t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])
    return xs.astype(np.float32), t[ok]


class Drape:
    """A scene built for simulation: one :class:`clothsim.Simulator` with every garment and the avatar.

    Args:
        scene: a loaded :class:`~clothsim.scene.Scene`.
        level: resolution level for every garment: an index (0 = coarsest), "coarsest", "finest", or
            None (each garment's own ``level``/``edge_length`` from the scene).
        device: overrides the scene's ``simulation.device`` ("auto" = CUDA if present, else CPU).
        frame_cap: overrides ``simulation.frame_cap``.
    """

    def __init__(self, scene: Scene, *, level: int | str | None = None, device: str | None = None,
                 frame_cap: int | None = None):
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
        self.body = sources.build_body(scene)
        self.garments = [sources.build_garment(scene, g, level, self.body) for g in scene.garments]
        self.cloths = [g.cloth for g in self.garments]
        self.sim = Simulator(self.cloths, device=self.device, dt=sim_spec.dt, substeps=sim_spec.substeps,
                             iterations=sim_spec.iterations, ground=sim_spec.ground,
                             self_collision=sim_spec.self_collision, contact_stiffness=sim_spec.contact_stiffness,
                             contact_damping=sim_spec.contact_damping, drag=sim_spec.drag,
                             air_damping=sim_spec.air_damping, initial_guess="adaptive")
        try:
            self.collider = Collider.mesh(self.body.collider_vertices, self.body.triangles, name="avatar")
            self.collider_handle = self.sim.add_collider(self.collider)
            self.offsets = self.sim.cloth_offsets
            self.meter = FrameMeter(self.sim.model, [g.cloth.seams + self.offsets[i] for i, g in enumerate(self.garments)],
                                    self.sim.velocities())
        except BaseException:
            self.sim.release()
            raise
        self.history: list[FrameStats] = []
        self.setup_s = time.perf_counter() - t0
        self._pose_schedule = sources.pose_schedule(scene, self.body)

    # ------------------------------------------------------------------ stepping
    @property
    def frame(self) -> int:
        return self.sim.frame

    def positions(self) -> np.ndarray:
        """All garments' vertex positions (N, 3) float32 [m] (garment i: ``offsets[i]:offsets[i+1]``)."""
        return self.sim.positions()

    def garment_positions(self, i: int) -> np.ndarray:
        x = self.sim.positions()
        return x[self.offsets[i]:self.offsets[i + 1]]

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
        return st

    def settled(self) -> bool:
        c = self.scene.simulation.checks
        h = self.history
        pose_end = self.scene.pose.blend_frames if self._pose_schedule else 0
        if self.sim.frame < max(self.scene.simulation.min_frames, pose_end) or len(h) < c.settle_frames:
            return False
        return all(s.kinetic_energy <= c.kinetic_energy and s.residual <= c.residual for s in h[-c.settle_frames:])

    def run(self, *, progress: bool = False, on_frame: Callable[[FrameStats, "Drape"], None] | None = None,
            desc: str | None = None) -> "DrapeResult":
        """Step until settled (see module docstring) or the frame cap, then measure. ``on_frame`` is
        called after every frame (e.g. to fill a frame cache)."""
        from tqdm import tqdm

        t0 = time.perf_counter()
        bar = tqdm(total=self.frame_cap, desc=desc or f"drape {self.scene.name} on {self.device}", unit="frame",
                   disable=not progress, dynamic_ncols=True)
        if progress:
            bar.set_postfix_str("first frame: compiling Warp kernels unless cached", refresh=True)
        try:
            while self.sim.frame < self.frame_cap:
                st = self.step()
                if on_frame is not None:
                    on_frame(st, self)
                bar.update(1)
                bar.set_postfix_str(f"KE {st.kinetic_energy:.1e} J/kg, residual {st.residual:.2f}, "
                                    f"seam gap {1e3 * st.seam_gap:.1f} mm", refresh=False)
                if self.settled():
                    break
        finally:
            bar.close()
        run_s = time.perf_counter() - t0
        return self.measure(timings={"setup": self.setup_s, "run": run_s})

    # ------------------------------------------------------------------ checks
    def measure(self, timings: dict | None = None) -> DrapeResult:
        """The scene's checks on the current state (see module docstring)."""
        from ..collision.intersections import count_mesh_intersections, count_self_intersections, penetration_depths

        t0 = time.perf_counter()
        c = self.scene.simulation.checks
        x = self.sim.positions()
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
        all_seams = np.concatenate(self.meter.seams) if self.meter.seams else np.zeros((0, 2), np.int64)
        xw, tw = weld_seams(x, self.sim.triangles, all_seams)
        cloth_int = count_self_intersections(xw, tw, device="cpu")
        h = self.history
        settled = self.settled()
        settle_frame = (h[-c.settle_frames].frame if settled else None)
        failures = []
        if not settled:
            last = h[-1] if h else None
            failures.append(f"did not settle within {self.frame_cap} frames (last frame: kinetic energy "
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
            timings_s=timings, thresholds=dataclasses.asdict(c), failures=failures, history=list(h))

    # ------------------------------------------------------------------ lifetime
    def release(self) -> None:
        self.sim.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

"""Coarse-level correction for settling at a fine level (two-level, in pseudo-time).

Settling (finding the rest state) at a fine level is slow because the low-frequency motion (the garment
sliding and swinging into place as a whole) travels across many fine vertices per Gauss–Seidel sweep, and
each fine frame is expensive. Every ``every`` fine frames this corrector

1. restricts the fine state to the coarse level: x_c⁰ = R·x_f, v_c⁰ = R·v_f;
2. runs ``coarse_frames`` frames of the coarse level from there (its own Simulator, same settings and
   colliders, owned here): the coarse mesh carries the low-frequency motion at a fraction of the cost;
3. prolongs the coarse change back as a smooth correction: x_f += P·(x_c − x_c⁰), v_f += P·(v_c − v_c⁰)
   (pinned fine vertices stay), then projects the fine vertices out of colliders;

and the fine frames in between remove the high-frequency error the correction leaves. The coarse frames are
pseudo-time (the fine clock does not advance during them): this is for reaching a rest state, not for
dynamics. Near the rest state the coarse level's own equilibrium (a slightly different discretisation) would
pull the fine one away from its own, so corrections stop once the fine residual is below ``stop_residual``.

Measured (benchmarks/results/multires_cpu_2core.md, straight skirt 80 → 40 mm on the avatar): this does not
pay. Without it the 40 mm drape reaches the residual target in 62 frames; with a correction every 2 frames
(4 coarse frames each, velocities prolonged or zeroed) the residual stays near 1 for 300 frames. Restricting
a fine state that has fine folds gives a compressed coarse state (its edges are chords of the folds), whose
coarse frames turn that compression into motion that the prolongation hands back; and without a
τ-correction (full approximation scheme: a per-vertex force R·r_f − r_c(R·x_f) added to the coarse solve,
which the solver does not take today) the coarse level pulls toward its own rest state, not the fine one's.
Kept as the measured baseline for that work; :class:`~clothsim.multires.fas.FASCorrection` adds the
τ-correction (and measures it).

The coarse level's buffers are allocated here when the corrector is built and freed by :meth:`release`
(report them with :meth:`nbytes`); nothing is allocated per frame except the host transfers.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..simulator import Simulator
from .transfer import project_out

G = 9.81


class CoarseCorrection:
    """Two-level settling accelerator for a :class:`~clothsim.multires.MultiResSimulator` at a fine level.

    Args:
        sim: the multi-resolution simulator (its active level is the fine level).
        coarse_level: the level that carries the correction (coarser than the active one).
        every: fine frames between corrections. coarse_frames: coarse frames per correction.
        stop_residual: no more corrections once the fine residual (RMS |Δv|/(g·dt) over free vertices, as in
            :mod:`clothsim.scene.drape`) of the last fine frame is below this.
        velocities: "prolong" (v_f += P·(v_c − v_c⁰)) or "zero" (the fine velocities are set to zero after a
            correction: the corrected state restarts from rest, as in dynamic relaxation).
    """

    def __init__(self, sim, coarse_level: int, *, every: int = 4, coarse_frames: int = 4,
                 stop_residual: float = 0.0, velocities: str = "prolong"):
        from ..errors import InputError

        self.sim = sim
        self.levels = sim.levels
        self.fine = sim.level
        self.coarse_level = self.levels.index(coarse_level)
        if self.coarse_level >= self.fine:
            raise InputError(f"CoarseCorrection: coarse_level {coarse_level} must be coarser than the active level {self.fine}")
        self.every = int(every)
        self.coarse_frames = int(coarse_frames)
        self.stop_residual = float(stop_residual)
        if velocities not in ("prolong", "zero"):
            raise InputError(f"CoarseCorrection: velocities must be 'prolong' or 'zero', got {velocities!r}")
        self.velocities = velocities
        self.coarse = Simulator(self.levels.cloths(self.coarse_level), device=sim.device, **sim._sim_kwargs)
        for slot in sim._colliders:
            self.coarse.add_collider(slot.collider(self.coarse_level))  # its proxy at that level, if any
        self.corrections = 0
        self.coarse_seconds = 0.0
        self._frames = 0
        self._v_prev = sim.velocities().astype(np.float64)
        self.residual = float("inf")
        fm = sim.simulator.model
        self._free = ~fm.host_pinned

    def step(self, frames: int = 1) -> None:
        """``frames`` fine frames, with a coarse correction before every ``every``-th one."""
        import time

        for _ in range(int(frames)):
            if self._frames % self.every == 0 and self.residual > self.stop_residual:
                t = time.perf_counter()
                self.correct()
                self.coarse_seconds += time.perf_counter() - t
                self._v_prev = self.sim.velocities().astype(np.float64)  # the residual is the fine step's
            self.sim.step()
            self._frames += 1
            v = self.sim.velocities().astype(np.float64)
            dv = np.linalg.norm(v - self._v_prev, axis=1)[self._free]
            self.residual = float(np.sqrt(np.mean((dv / (G * self.sim.dt)) ** 2))) if dv.size else 0.0
            self._v_prev = v

    def correct(self) -> None:
        """One coarse correction (steps 1–3 of the module docstring)."""
        L, f, c = self.levels, self.fine, self.coarse_level
        xf = self.sim.positions().astype(np.float64)
        vf = self.sim.velocities().astype(np.float64)
        xc0 = L.map(xf, f, c)
        vc0 = L.map(vf, f, c)
        cs = self.coarse
        cs.set_positions(xc0)
        cs.set_velocities(vc0)
        cs.state.v_last.assign(vc0.astype(np.float32))
        idx = cs.model.host_pin_indices
        if len(idx):
            t = xc0[idx].astype(np.float32)
            cs.state.pin_start.assign(t)
            cs.state.pin_end.assign(t)
        cs.step(self.coarse_frames)
        dx = L.map(cs.positions().astype(np.float64) - xc0, c, f)
        dv = L.map(cs.velocities().astype(np.float64) - vc0, c, f)
        pinned = self.sim.simulator.model.host_pinned
        dx[pinned] = 0.0
        dv[pinned] = 0.0
        self.sim.set_positions(xf + dx)
        self.sim.set_velocities(vf + dv if self.velocities == "prolong" else np.zeros_like(vf))
        wp.copy(self.sim.simulator.state.v_last, self.sim.simulator.state.v)
        project_out(self.sim.simulator)
        self.corrections += 1

    def nbytes(self) -> int:
        """Device bytes of the coarse level this corrector owns."""
        return int(self.coarse.memory_report()["total"]) if not self.coarse._released else 0

    def release(self) -> None:
        self.coarse.release()

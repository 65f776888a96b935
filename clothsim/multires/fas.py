"""Full approximation scheme (FAS) coarse correction for settling at a fine level.

:class:`~clothsim.multires.coarse_correction.CoarseCorrection` runs the coarse level from the restricted fine
state with the coarse level's own forces, so the coarse level pulls toward its OWN rest state (and turns
the compression a restricted fold leaves into motion). FAS gives the coarse problem a per-vertex external
force τ that makes its forces at the restricted state equal the restricted fine forces:

    x_c⁰ = R·x_f                                  (state restriction: the reverse embedding)
    τ    = Pᵀ·f_f(x_f) − f_c(x_c⁰)                 (residual restriction Pᵀ, P the prolongation)
    coarse solve of  f_c(x_c) + τ + contacts_c(x_c) = 0  from x_c⁰   (``coarse_steps`` steps, τ as
                                                   Simulator.set_external_forces)
    x_f ← x_f + P·(x_c − x_c⁰), pinned fine vertices unchanged, projected out of colliders,

then fine frames (post-smoothing) remove the high-frequency error the correction leaves. f is the
conservative force of :mod:`clothsim.multires.forces` (membrane, bending, seams, gravity); contacts are left
to each level's own solver (both levels meet the same body at nearly the same points, so the contact part of
τ would be the difference of two penalty forces of a few micrometres of compression). At a fine rest state
(f_f + contacts_f = 0) the coarse problem is at rest at x_c⁰ up to that difference, so the correction
vanishes there instead of pulling toward the coarse level's own rest state.

The coarse solve is either ``coarse_steps`` dynamic coarse frames from rest (``coarse_dt`` None: the
simulation's own dt, substeps and iterations) or ``coarse_steps`` quasi-static implicit steps of length
``coarse_dt`` from rest (:func:`clothsim.multires.transfer.relax`, a proximal descent of the τ-corrected
coarse potential). The fine clock does not advance during it (pseudo-time: for reaching a rest state).
Measured (benchmarks/results/multires_cpu_2core_fas*.md, straight skirt 80 → 40 mm on the mannequin, kinetic
damping): exact at a rest state without contacts (tests/test_multires_fas.py: one correction moves a settled
hanging cloth 1.9e-6 m, the plain correction 7.2e-4 m), but it does not pay for settling a drape: without a
correction the 40 mm drape holds the residual target from frame 36; with FAS every 2 frames (4 coarse
frames, fine velocities kept) or every 4 (8 coarse frames, velocities zeroed) the residual stays at 2-3 for
150 frames (the plain correction: ~1.2; FAS with ``post_relax=10``: 1.6 after 120 frames). A prolonged coarse displacement is piecewise linear over coarse
triangles; on a curved, nearly inextensible drape it strains the fine membrane by far more than the weight
it moves (a 1 mm kink across a 40 mm edge of cotton is ~1 N against a 2 mN vertex weight), so each
correction leaves a fine residual far above the target that the next fine frames must remove, and the
low-frequency motion it was meant to carry (the garment sliding a few mm on the body) is governed by
contact and friction, which τ leaves to each level. Quasi-static coarse steps (``coarse_dt``) are unstable
from compressed states (a settled hanging cloth moved 9 cm in 8 steps of 0.05 s).
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..errors import InputError
from .coarse_correction import CoarseCorrection
from .forces import ForceModel
from .transfer import project_out, relax


class FASCorrection(CoarseCorrection):
    """Two-level FAS settling accelerator for a :class:`~clothsim.multires.MultiResSimulator` at a fine level.

    Args:
        sim: the multi-resolution simulator (its active level is the fine level).
        coarse_level: the coarser level that carries the correction.
        every: fine frames between corrections (the post-smoothing).
        coarse_steps: coarse frames (``coarse_dt`` None) or quasi-static coarse steps per correction.
        coarse_dt: [s] length of each quasi-static coarse step, or None for dynamic coarse frames.
        coarse_iterations: VBD iterations per quasi-static step (default the simulation's).
        stop_residual: no more corrections once the fine residual (RMS |Δv|/(g·dt) over free vertices) of
            the last fine frame is below this.
        velocities: after a correction the fine velocities are kept ("keep"), zeroed ("zero"), or get the
            prolonged coarse velocity change ("prolong", dynamic coarse frames only).
        damping: scale of the prolonged position correction (1 = the full coarse change).
        tau: how the fine and coarse forces in τ are evaluated: "forces" (the conservative forces of
            :mod:`~clothsim.multires.forces` at x_f and x_c⁰: no contacts) or "frame" (the net force m·Δv/dt
            of the last fine frame, and of one coarse frame run from x_c⁰ without τ: contacts, friction and
            damping included, measured as the settling residual is).
        coarse_kinetic: kinetic damping in the coarse frames (velocities zeroed whenever the coarse kinetic
            energy falls), so that they descend toward the τ-corrected coarse rest state.
        post_relax: quasi-static fine substeps (length the fine substep, from rest; velocities put back)
            after each correction, to relax the membrane strain the interpolated correction leaves.
    """

    def __init__(self, sim, coarse_level: int, *, every: int = 4, coarse_steps: int = 4,
                 coarse_dt: float | None = None, coarse_iterations: int | None = None, stop_residual: float = 0.0,
                 velocities: str = "keep", damping: float = 1.0, tau: str = "forces", coarse_kinetic: bool = False,
                 post_relax: int = 0):
        if tau not in ("forces", "frame"):
            raise InputError(f"FASCorrection: tau must be 'forces' or 'frame', got {tau!r}")
        if velocities not in ("keep", "zero", "prolong"):
            raise InputError(f"FASCorrection: velocities must be 'keep', 'zero' or 'prolong', got {velocities!r}")
        if velocities == "prolong" and coarse_dt is not None:
            raise InputError("FASCorrection: velocities='prolong' needs dynamic coarse frames (coarse_dt=None)")
        if int(coarse_steps) != coarse_steps or coarse_steps < 1:
            raise InputError(f"FASCorrection: coarse_steps must be an integer >= 1, got {coarse_steps!r}")
        if coarse_dt is not None and not (coarse_dt > 0):
            raise InputError(f"FASCorrection: coarse_dt must be a positive step length [s] or None, got {coarse_dt!r}")
        super().__init__(sim, coarse_level, every=every, coarse_frames=int(coarse_steps), stop_residual=stop_residual,
                         velocities="prolong" if velocities == "prolong" else "zero")
        self.velocity_mode = velocities
        self.coarse_dt = coarse_dt
        self.coarse_iterations = coarse_iterations
        self.damping = float(damping)
        self.tau_mode = tau
        self.coarse_kinetic = bool(coarse_kinetic)
        self.post_relax = int(post_relax)
        self._fine_frame_force = None
        self._fine_mass = np.asarray(sim.simulator.model.host_mass, dtype=np.float64)[:, None]
        self._coarse_mass = np.asarray(self.coarse.model.host_mass, dtype=np.float64)[:, None]
        self.fine_forces = ForceModel(sim.simulator)
        self.coarse_forces = ForceModel(self.coarse)
        self.P = self.levels.transfer(self.coarse_level, self.fine)  # (N_f, N_c)
        self.last_tau_norm = 0.0
        self.last_restricted_residual = 0.0
        self.last_correction_m = 0.0

    def step(self, frames: int = 1) -> None:
        """``frames`` fine frames, a correction before every ``every``-th one (see CoarseCorrection.step);
        with ``tau="frame"`` each fine frame's net force m·Δv/dt is kept for the next correction."""
        for _ in range(int(frames)):
            v0 = self.sim.velocities().astype(np.float64)
            super().step(1)
            if self.tau_mode == "frame":
                v1 = self.sim.velocities().astype(np.float64)
                self._fine_frame_force = self._fine_mass * (v1 - v0) / self.sim.dt

    def _frame_force_coarse(self, xc0: np.ndarray, vc0: np.ndarray) -> np.ndarray:
        """m_c·Δv/dt of one coarse frame from (x_c⁰, v_c⁰) without τ: the coarse net force there, contacts and
        damping included, measured the way the fine one is."""
        cs = self.coarse
        cs.set_external_forces(np.zeros_like(xc0))  # zeros, not None: the force buffer stays allocated
        self._place_coarse(xc0, vc0)
        cs.step(1)
        return self._coarse_mass * (cs.velocities().astype(np.float64) - vc0) / cs.dt

    def _place_coarse(self, xc0: np.ndarray, vc0: np.ndarray) -> None:
        cs = self.coarse
        cs.set_positions(xc0)
        cs.set_velocities(vc0)
        idx = cs.model.host_pin_indices
        if len(idx):
            t = xc0[idx].astype(np.float32)
            cs.state.pin_start.assign(t)
            cs.state.pin_end.assign(t)

    def tau(self, xf: np.ndarray, xc0: np.ndarray) -> np.ndarray:
        """τ = Pᵀ·f_f(x_f) − f_c(x_c⁰) (N_c, 3) [N]; fine pinned vertices contribute no residual (their pin
        holds whatever force acts on them)."""
        rf = self.fine_forces.forces(xf)
        rf[self.sim.simulator.model.host_pinned] = 0.0
        rc = np.asarray(self.P.T @ rf)
        self.last_restricted_residual = float(np.sqrt(np.mean(np.sum(rc * rc, axis=1))))
        return rc - self.coarse_forces.forces(xc0)

    def correct(self) -> None:
        """One FAS correction (module docstring). With ``tau="frame"`` and no fine frame run yet, nothing."""
        if self.tau_mode == "frame" and self._fine_frame_force is None:
            return
        L, f, c = self.levels, self.fine, self.coarse_level
        xf = self.sim.positions().astype(np.float64)
        vf = self.sim.velocities().astype(np.float64)
        xc0 = L.map(xf, f, c)
        vc0 = L.map(vf, f, c) if self.velocity_mode == "prolong" else np.zeros_like(xc0)
        if self.tau_mode == "frame" and self._fine_frame_force is not None:
            rf = self._fine_frame_force.copy()
            rf[self.sim.simulator.model.host_pinned] = 0.0
            rc = np.asarray(self.P.T @ rf)
            self.last_restricted_residual = float(np.sqrt(np.mean(np.sum(rc * rc, axis=1))))
            tau = rc - self._frame_force_coarse(xc0, vc0)
        else:
            tau = self.tau(xf, xc0)
        self.last_tau_norm = float(np.sqrt(np.mean(np.sum(tau * tau, axis=1))))
        cs = self.coarse
        cs.set_external_forces(tau)
        self._place_coarse(xc0, vc0)
        if self.coarse_dt is None:
            ke_prev = None
            for _ in range(self.coarse_frames):
                cs.step(1)
                if self.coarse_kinetic:
                    vc = cs.velocities().astype(np.float64)
                    ke = float(np.sum(self._coarse_mass[:, 0] * np.sum(vc * vc, axis=1)))
                    if ke_prev is not None and ke < ke_prev:
                        cs.set_velocities(np.zeros_like(vc))
                        ke = 0.0
                    ke_prev = ke
        else:
            for _ in range(self.coarse_frames):
                relax(cs, substeps=1, iterations=self.coarse_iterations, dt=self.coarse_dt)
            cs.state.v.zero_()
        dx = self.damping * L.map(cs.positions().astype(np.float64) - xc0, c, f)
        pinned = self.sim.simulator.model.host_pinned
        dx[pinned] = 0.0
        self.last_correction_m = float(np.abs(dx).max(initial=0.0))
        self.sim.set_positions(xf + dx)
        if self.velocity_mode == "prolong":
            dv = L.map(cs.velocities().astype(np.float64) - vc0, c, f)
            dv[pinned] = 0.0
            self.sim.set_velocities(vf + dv)
        elif self.velocity_mode == "zero":
            self.sim.set_velocities(np.zeros_like(vf))
        wp.copy(self.sim.simulator.state.v_last, self.sim.simulator.state.v)
        project_out(self.sim.simulator)
        if self.post_relax:
            fs = self.sim.simulator
            v_keep = fs.velocities()
            relax(fs, substeps=self.post_relax)
            fs.set_velocities(v_keep)
            wp.copy(fs.state.v_last, fs.state.v)
        self.corrections += 1


__all__ = ["FASCorrection"]

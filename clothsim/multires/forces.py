"""Conservative forces of a simulator's model at any positions, evaluated on the host (numpy, float64).

    f(x) = −∇(E_membrane + E_bending + E_seams)(x) + m·g        [N], shape (N, 3)

the same energies as :mod:`clothsim.solver.elastic` (and :func:`clothsim.multires.energy.mechanical_energy`):
orthotropic StVK membrane A·ψ(E), dihedral bending ½k(θ − θ0)², seam springs ½k|xa − xb|², and gravity.
Velocity-dependent terms (material damping, drag, air damping) vanish at rest and are left out; contacts
(bodies, ground, self) are left out too: they are evaluated by each level's own solver (see
:mod:`clothsim.multires.fas`). This is what the full approximation scheme needs: the force of one level at a
point that is not its current state (the restriction of the finer level's state).
"""

from __future__ import annotations

import numpy as np


class ForceModel:
    """Host copies of a :class:`clothsim.Simulator`'s constant model data, to evaluate :meth:`forces` many
    times without device reads. Rebuild it after ``set_fabric`` (materials are copied here)."""

    def __init__(self, sim):
        m = sim.model
        self.n = int(m.particle_count)
        self.mass = np.asarray(m.host_mass, dtype=np.float64)
        self.gravity = np.asarray(sim.gravity, dtype=np.float64)
        self.tri = np.asarray(m.host_triangles, dtype=np.int64)
        self.dm_inv = m.tri_dm_inv.numpy().astype(np.float64)
        self.area = np.asarray(m.host_tri_area, dtype=np.float64)
        self.coef = m.mat_coef.numpy().astype(np.float64)[m.tri_cloth.numpy()]
        self.bend = np.asarray(m.host_bend, dtype=np.int64).reshape(-1, 4)
        self.bend_k = m.bend_k.numpy().astype(np.float64)
        self.bend_rest = m.bend_rest.numpy().astype(np.float64)
        self.springs = np.asarray(m.host_springs, dtype=np.int64).reshape(-1, 2)
        self.spring_k = m.spring_k.numpy().astype(np.float64)

    def forces(self, x, *, gravity: bool = True) -> np.ndarray:
        """(N, 3) float64 force [N] on every vertex at positions ``x`` (N, 3) [m] (pinned vertices included)."""
        x = np.asarray(x, dtype=np.float64)
        f = np.zeros((self.n, 3))
        # membrane: F = [e1, e2]·Dm⁻¹ = [f0, f1]; P = F·S; force on vertex k = −A·(P0·ga_k + P1·gb_k)
        t, dm = self.tri, self.dm_inv
        e1 = x[t[:, 1]] - x[t[:, 0]]
        e2 = x[t[:, 2]] - x[t[:, 0]]
        f0 = e1 * dm[:, 0, 0, None] + e2 * dm[:, 1, 0, None]
        f1 = e1 * dm[:, 0, 1, None] + e2 * dm[:, 1, 1, None]
        E11 = 0.5 * (np.einsum("ij,ij->i", f0, f0) - 1.0)
        E22 = 0.5 * (np.einsum("ij,ij->i", f1, f1) - 1.0)
        E12 = 0.5 * np.einsum("ij,ij->i", f0, f1)
        c = self.coef
        S11 = c[:, 0] * E11 + c[:, 1] * E22
        S22 = c[:, 1] * E11 + c[:, 2] * E22
        S12 = 2.0 * c[:, 3] * E12
        P0 = f0 * S11[:, None] + f1 * S12[:, None]
        P1 = f0 * S12[:, None] + f1 * S22[:, None]
        ga = np.stack([-(dm[:, 0, 0] + dm[:, 1, 0]), dm[:, 0, 0], dm[:, 1, 0]], axis=1)
        gb = np.stack([-(dm[:, 0, 1] + dm[:, 1, 1]), dm[:, 0, 1], dm[:, 1, 1]], axis=1)
        for k in range(3):
            fk = -self.area[:, None] * (P0 * ga[:, k, None] + P1 * gb[:, k, None])
            np.add.at(f, t[:, k], fk)
        # bending: −k(θ − θ0)·∂θ/∂x_k (clothsim.solver.elastic.dihedral_gradient)
        if len(self.bend):
            b = self.bend
            x0, x1, x2, x3 = (x[b[:, k]] for k in range(4))
            e = x1 - x0
            el2 = np.maximum(np.einsum("ij,ij->i", e, e), 1e-30)
            el = np.sqrt(el2)
            na = np.cross(x1 - x0, x2 - x0)
            nb = np.cross(x0 - x1, x3 - x1)
            s = np.einsum("ij,ij->i", np.cross(na, nb), e) / np.maximum(el, 1e-20)
            theta = np.arctan2(s, np.einsum("ij,ij->i", na, nb))
            la2 = np.maximum(np.einsum("ij,ij->i", na, na), 1e-30)
            lb2 = np.maximum(np.einsum("ij,ij->i", nb, nb), 1e-30)
            g2 = -(el / la2)[:, None] * na
            g3 = -(el / lb2)[:, None] * nb
            t2 = (np.einsum("ij,ij->i", x2 - x0, e) / el2)[:, None]
            t3 = (np.einsum("ij,ij->i", x3 - x0, e) / el2)[:, None]
            grads = (-(1.0 - t2) * g2 - (1.0 - t3) * g3, -t2 * g2 - t3 * g3, g2, g3)
            s_k = (-self.bend_k * (theta - self.bend_rest))[:, None]
            for k in range(4):
                np.add.at(f, b[:, k], s_k * grads[k])
        # seams: −k(xa − xb) on a, +k(xa − xb) on b
        if len(self.springs):
            a, bb = self.springs[:, 0], self.springs[:, 1]
            d = (x[a] - x[bb]) * self.spring_k[:, None]
            np.add.at(f, a, -d)
            np.add.at(f, bb, d)
        if gravity:
            f += self.mass[:, None] * self.gravity[None, :]
        return f


def conservative_forces(sim, x=None, *, gravity: bool = True) -> np.ndarray:
    """(N, 3) float64 forces [N] of ``sim``'s membrane, bending, seams (and gravity) at ``x`` (default: its
    positions). See the module docstring."""
    return ForceModel(sim).forces(sim.positions() if x is None else x, gravity=gravity)


__all__ = ["ForceModel", "conservative_forces"]

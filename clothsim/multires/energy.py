"""Mechanical energy of a simulator's state, evaluated on the host (numpy) from the same model the solver
uses: kinetic ½Σm|v|², gravitational −Σm g·x, membrane Σ A·ψ(E) (orthotropic StVK, E = ½(FᵀF − I),
F = [x1−x0, x2−x0]·Dm⁻¹, ψ = ½C11·E11² + C12·E11·E22 + ½C22·E22² + 2G·E12²), bending Σ ½k(θ−θ0)² and seams
Σ ½k|xa−xb|² (see :mod:`clothsim.solver.elastic`). All in joules."""

from __future__ import annotations

import numpy as np


def _dihedral(x0, x1, x2, x3):
    na = np.cross(x1 - x0, x2 - x0)
    nb = np.cross(x0 - x1, x3 - x1)
    e = x1 - x0
    el = np.maximum(np.linalg.norm(e, axis=1), 1e-20)
    s = np.einsum("ij,ij->i", np.cross(na, nb), e) / el
    c = np.einsum("ij,ij->i", na, nb)
    return np.arctan2(s, c)


def mechanical_energy(sim, x=None, v=None) -> dict:
    """{"kinetic", "gravity", "membrane", "bending", "seams", "elastic", "total"} [J] of ``sim`` (a
    :class:`clothsim.Simulator`) at its state, or at positions ``x`` (N, 3) [m] / velocities ``v`` [m/s]."""
    m = sim.model
    x = sim.positions() if x is None else np.asarray(x)
    v = sim.velocities() if v is None else np.asarray(v)
    x = x.astype(np.float64)
    v = v.astype(np.float64)
    mass = m.host_mass
    ke = 0.5 * float(np.sum(mass * np.einsum("ij,ij->i", v, v)))
    pe = -float(np.sum(mass[:, None] * x * np.asarray(sim.gravity)))
    tri = m.host_triangles
    dm_inv = m.tri_dm_inv.numpy().astype(np.float64)
    tri_cloth = m.tri_cloth.numpy()
    coef = m.mat_coef.numpy().astype(np.float64)[tri_cloth]
    e1 = x[tri[:, 1]] - x[tri[:, 0]]
    e2 = x[tri[:, 2]] - x[tri[:, 0]]
    f0 = e1 * dm_inv[:, 0, 0, None] + e2 * dm_inv[:, 1, 0, None]
    f1 = e1 * dm_inv[:, 0, 1, None] + e2 * dm_inv[:, 1, 1, None]
    e11 = 0.5 * (np.einsum("ij,ij->i", f0, f0) - 1.0)
    e22 = 0.5 * (np.einsum("ij,ij->i", f1, f1) - 1.0)
    e12 = 0.5 * np.einsum("ij,ij->i", f0, f1)
    psi = 0.5 * coef[:, 0] * e11 ** 2 + coef[:, 1] * e11 * e22 + 0.5 * coef[:, 2] * e22 ** 2 + 2.0 * coef[:, 3] * e12 ** 2
    membrane = float(np.sum(m.host_tri_area * psi))
    st = m.host_bend
    bending = 0.0
    if len(st):
        th = _dihedral(x[st[:, 0]], x[st[:, 1]], x[st[:, 2]], x[st[:, 3]])
        bending = float(np.sum(0.5 * m.bend_k.numpy() * (th - m.bend_rest.numpy()) ** 2))
    seams = 0.0
    if len(m.host_springs):
        d = x[m.host_springs[:, 0]] - x[m.host_springs[:, 1]]
        seams = float(np.sum(0.5 * m.spring_k.numpy() * np.einsum("ij,ij->i", d, d)))
    el = membrane + bending + seams
    return {"kinetic": ke, "gravity": pe, "membrane": membrane, "bending": bending, "seams": seams, "elastic": el,
            "total": ke + pe + el, "mass": float(mass.sum())}

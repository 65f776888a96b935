"""The clothsim material in Newton's terms: ``newton_parameters`` is benchmarks/newton_mapping.md in code, with
the mesh helpers it rests on (interior hinges, triangle areas) and the check of which hinges Newton 1.8's
bending leaves out (``newton_hinges_without_bending``). No ``newton`` import: numpy only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from newton_side import BenchMaterial


def interior_edges(tris: np.ndarray, with_triangles: bool = False):
    """Interior edges of a manifold triangle mesh.

    Returns an (E, 4) int array in Newton's ``add_edge`` order (o0, o1, v0, v1):
    o0, o1 the opposite vertices, (v0, v1) the shared edge, oriented so the two
    triangles are (o0, v0, v1) and (o1, v1, v0) counter-clockwise, i.e. the edge
    v0->v1 appears in o0's triangle in that direction. Edges come in the order of
    their half-edge a->b (a < b) over the triangles' corners. ``with_triangles``: also
    the two triangles of each edge, (E, 2).
    """
    t = np.asarray(tris, dtype=np.int64).reshape(-1, 3)
    a, b, c = t.ravel(), np.roll(t, -1, axis=1).ravel(), np.roll(t, -2, axis=1).ravel()  # half-edge a->b, opposite c
    nv = int(t.max()) + 1 if t.size else 0
    key = a * nv + b
    order = np.argsort(key, kind="stable")
    sk = key[order]
    if np.any(sk[1:] == sk[:-1]):
        raise ValueError("interior_edges: a directed edge appears twice (the mesh is not consistently oriented "
                         "or not manifold)")
    rev = b * nv + a
    pos = np.searchsorted(sk, rev)
    found = pos < len(sk)
    found[found] = sk[pos[found]] == rev[found]
    sel = np.nonzero(found & (a < b))[0]  # in half-edge (triangle, corner) order
    twin = order[pos[sel]]
    edges = np.stack([c[sel], c[twin], a[sel], b[sel]], axis=1).reshape(-1, 4)
    if with_triangles:
        return edges, np.stack([sel // 3, twin // 3], axis=1)
    return edges


def triangle_areas(verts: np.ndarray, tris: np.ndarray) -> np.ndarray:
    e1 = verts[tris[:, 1]] - verts[tris[:, 0]]
    e2 = verts[tris[:, 2]] - verts[tris[:, 0]]
    return 0.5 * np.linalg.norm(np.cross(e1, e2), axis=1)


# --------------------------------------------------------------------------- mapping


# Newton 1.8's dihedral bending (particle_vbd_kernels.evaluate_dihedral_angle_based_bending_force_hessian)
# returns no force for a hinge whose triangle normal |(x2 - x0) x (x3 - x0)| (twice the triangle's area) is
# under 1e-6 m^2: a grid with edges under 1 mm has no bending in Newton at all (the N = 1024 sheet of 1 m:
# 0.978 mm edges, 9.56e-7 m^2)
NEWTON_BEND_EPS = 1.0e-6


def newton_hinges_without_bending(verts: np.ndarray, tris: np.ndarray) -> tuple[int, int]:
    """(hinges whose bending Newton 1.8 skips at the rest shape, all interior hinges): see NEWTON_BEND_EPS."""
    edges, edge_tris = interior_edges(tris, with_triangles=True)
    twice_area = 2.0 * triangle_areas(verts, tris)
    small = (twice_area[edge_tris[:, 0]] < NEWTON_BEND_EPS) | (twice_area[edge_tris[:, 1]] < NEWTON_BEND_EPS)
    return int(small.sum()), len(edges)


def newton_parameters(material: BenchMaterial, verts: np.ndarray, tris: np.ndarray) -> dict:
    """clothsim material -> Newton SolverVBD parameters (see newton_mapping.md).

    Returns a dict with scalar ``tri_ke``, ``tri_ka``, ``tri_kd``, ``density``,
    per-edge arrays ``edges`` (E,4), ``edge_ke`` (E,), ``edge_kd`` (E,), and
    the contact numbers.
    """
    mu = material.lame_mu
    lam = material.lame_lambda
    edges, edge_tris = interior_edges(tris, with_triangles=True)
    # the two triangles' areas of each edge -> A1 + A2
    areas = triangle_areas(verts, tris)
    a12 = areas[edge_tris[:, 0]] + areas[edge_tris[:, 1]]
    elen = np.linalg.norm(verts[edges[:, 3]] - verts[edges[:, 2]], axis=1)
    # clothsim: E_e = 1/2 k_e (theta - theta0)^2, k_e = c B 3 |e|^2 / (A1 + A2)
    # Newton:   E_e = 1/2 (edge_ke * |e|_rest) (theta - theta0)^2
    k_e = material.bend_calibration * material.bending * 3.0 * elen**2 / a12
    edge_ke = k_e / elen
    # damping: Newton R_e = 1/2 edge_kd |e| thetadot^2 ; Rayleigh: 1/2 k_d k_e thetadot^2
    edge_kd = material.damping * edge_ke
    # membrane damping: Newton R = 1/2 tri_kd A |dC/dt|^2 = 2 tri_kd A |dE/dt|^2 ;
    # Rayleigh shear part k_d A mu |dE/dt|^2 -> tri_kd = k_d mu / 2 (no lambda part in Newton)
    tri_kd = material.damping * mu / 2.0
    return {
        "tri_ke": mu,
        "tri_ka": lam,
        "tri_kd": tri_kd,
        "density": material.density,
        "edges": edges,
        "edge_ke": edge_ke,
        "edge_kd": edge_kd,
        "k_e": k_e,
        "contact_margin": material.thickness,
        "particle_radius": material.thickness,
        "contact_ke": material.contact_ke,
        "contact_gap": material.contact_gap,
        "friction": material.friction,
    }

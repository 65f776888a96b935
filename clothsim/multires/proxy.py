"""Coarse collision proxies: a collider mesh simplified by vertex clustering, for the coarse levels.

A coarse cloth level (e.g. 80 mm edges) cannot resolve body detail finer than its own edges, yet a frame's
cost at that level is mostly the body's: on the straight skirt at 80 mm, 0.32 s of CPU per frame with the
28k-triangle mannequin against 0.05 s without a collider (benchmarks/results/multires_*.md). A proxy
clusters the collider's vertices in a grid of cubes of side ``cell`` [m], puts each cluster's vertex at the
mean of its members and keeps the triangles whose three corners fall in three different clusters (each once,
orientation kept). Each proxy vertex lies within ``cell``·√3 of every member of its cluster (both are
in the same cube); on a smooth convex surface of radius R the means sit inside it by about 3·cell²/(2R).
The fine levels keep the full collider.

The proxy's vertices are a linear function of the collider's (the cluster means), given as a sparse
(N_proxy, N) matrix, so a moving collider's poses map to the proxy's with one product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError


@dataclass
class ColliderProxy:
    """A simplified collider mesh and the map from the full mesh's vertex positions to its own.

    Attributes:
        vertices: (Np, 3) float64 [m] proxy vertices for the full mesh's rest pose.
        triangles: (Tp, 3) int64 proxy triangles.
        matrix: scipy.sparse CSR (Np, N): proxy vertices = matrix @ full vertices.
        cell: the clustering cell [m].
    """

    vertices: np.ndarray
    triangles: np.ndarray
    matrix: object
    cell: float

    def pose(self, full_vertices) -> np.ndarray:
        """Proxy vertices (Np, 3) for a pose (N, 3) [m] of the full mesh."""
        return np.asarray(self.matrix @ np.asarray(full_vertices, dtype=np.float64))


def cluster_proxy(vertices, triangles, cell: float) -> ColliderProxy:
    """Vertex-clustering proxy of the mesh (``vertices`` (N, 3) [m], ``triangles`` (T, 3)) at ``cell`` [m]."""
    import scipy.sparse as sp

    if not (cell > 0):
        raise InputError(f"cluster_proxy: cell must be a positive length [m], got {cell!r}")
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64)
    key = np.floor((v - v.min(axis=0)) / cell).astype(np.int64)
    _, cid = np.unique(key, axis=0, return_inverse=True)
    cid = cid.ravel()
    nc = int(cid.max()) + 1 if len(cid) else 0
    counts = np.bincount(cid, minlength=nc).astype(np.float64)
    m = sp.csr_matrix((1.0 / counts[cid], (cid, np.arange(len(v)))), shape=(nc, len(v)))
    tc = cid[t]
    keep = (tc[:, 0] != tc[:, 1]) & (tc[:, 1] != tc[:, 2]) & (tc[:, 0] != tc[:, 2])
    tc = tc[keep]
    # one triangle per set of three clusters (the first one met keeps its orientation)
    _, first = np.unique(np.sort(tc, axis=1), axis=0, return_index=True)
    tc = tc[np.sort(first)]
    # drop clusters no triangle uses
    used = np.unique(tc)
    remap = -np.ones(nc, dtype=np.int64)
    remap[used] = np.arange(len(used))
    m = m[used]
    return ColliderProxy(np.asarray(m @ v), remap[tc], m.tocsr(), float(cell))


def vertex_normals(vertices, triangles) -> np.ndarray:
    """(N, 3) unit area-weighted vertex normals of a triangle mesh (zero rows for unused vertices)."""
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64)
    fn = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    n = np.zeros_like(v)
    for k in range(3):
        np.add.at(n, t[:, k], fn)
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    return n / np.where(ln > 0, ln, 1.0)


def convex_curvature(vertices, triangles, scale: float | None = None) -> np.ndarray:
    """(N,) largest normal curvature [1/m] of a closed, outward-oriented triangle mesh at each vertex, clipped
    at 0 (concave and flat places get 0).

    For a pair of vertices (i, j) the circle through p_j tangent to the surface at p_i has curvature
    κ_ij = −2·n_i·(p_j − p_i)/|p_j − p_i|² (n_i the area-weighted vertex normal); a sphere of radius R gives
    1/R for every pair, a cylinder 1/R around it and 0 along it; the largest over j is the largest principal
    curvature. ``scale`` [m]: the pairs with scale/2 ≤ |p_j − p_i| ≤ scale (the curvature a cloth of that
    edge length sees); None: the vertex's mesh edges. A normal that is off by ε radians changes κ_ij by
    about 2ε/|p_j − p_i|, so pairs further apart than the mesh's edges are less sensitive to the
    tessellation's normal noise (a 1280-triangle icosphere, normals off the radius by up to 1°: +15 % over
    its 22 mm edges, +7 % at scale = R/2)."""
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64)
    n = vertex_normals(v, t)
    if scale is None:
        e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
        e = np.concatenate([e, e[:, ::-1]])
    else:
        from scipy.spatial import cKDTree

        pairs = cKDTree(v).query_pairs(float(scale), output_type="ndarray")
        pairs = pairs[np.linalg.norm(v[pairs[:, 1]] - v[pairs[:, 0]], axis=1) >= 0.5 * float(scale)]
        e = np.concatenate([pairs, pairs[:, ::-1]]).astype(np.int64)
    used = np.zeros(len(v), dtype=bool)
    used[t.ravel()] = True
    e = e[used[e[:, 0]] & used[e[:, 1]]]
    d = v[e[:, 1]] - v[e[:, 0]]
    k = -2.0 * np.einsum("ij,ij->i", n[e[:, 0]], d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-30)
    out = np.zeros(len(v))
    np.maximum.at(out, e[:, 0], k)
    return np.maximum(out, 0.0)


@dataclass
class OffsetProxy:
    """The collider mesh moved inward along its vertex normals by ``offset`` (N,) [m] per vertex (same
    triangles), for a coarse cloth level whose polygonal wrap around a curved body is wider than the finer
    level's (see :func:`chord_offsets`)."""

    triangles: np.ndarray
    offset: np.ndarray

    def pose(self, full_vertices) -> np.ndarray:
        v = np.asarray(full_vertices, dtype=np.float64)
        return v - self.offset[:, None] * vertex_normals(v, self.triangles)


def chord_offsets(vertices, triangles, edge: float, target_edge: float, cap: float) -> np.ndarray:
    """(N,) inward offsets [m] that make a cloth of edge length ``edge`` wrap a convex body as tight as one of
    ``target_edge`` does.

    A closed ring of cloth resting on a body of curvature κ touches it with its edges (edge contacts), so it
    is the polygon circumscribed about the surface: n sides of rest length h around a circle of radius R give
    h = 2R·tan(π/n), so a ring of rest length L = n·h fits a circle of radius R = L/(2π)·(1 − h²κ²/12 + …),
    i.e. it sits h²κ/12 further out than a smooth ring would. A coarse level (h) and a fine one (h_f) on the
    same body thus differ by (h² − h_f²)·κ/12 in the radius they need: the coarse ring, wider for its
    rest length, rides higher on a body that widens downward (a skirt 6 mm higher at 40 mm than at 20 mm on
    the hips). Moving the coarse level's collider in by that amount (κ from :func:`convex_curvature`,
    capped at ``cap``, e.g. the skin offset, so it never goes inside the body) gives both levels the same
    rest girth: the coarse rest state is the fine one's, up to O(h⁴κ³). κ is taken at the scale of the coarse
    edge (:func:`convex_curvature` with ``scale=edge``), the curvature its ring sees."""
    k = convex_curvature(vertices, triangles, scale=edge)
    d = max(float(edge) ** 2 - float(target_edge) ** 2, 0.0) * k / 12.0
    return np.minimum(d, float(cap))


__all__ = ["ColliderProxy", "OffsetProxy", "chord_offsets", "cluster_proxy", "convex_curvature", "vertex_normals"]

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


__all__ = ["ColliderProxy", "cluster_proxy"]

"""Mesh topology on the host (numpy): edges, bending stencils, vertex adjacency, colouring checks.

Everything here runs once when a model is built; nothing runs per step.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError


def unique_edges(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Undirected edges of a triangle mesh.

    Returns:
        edges: (E, 2) int64, sorted pairs (a < b), in lexicographic order.
        tri_edge: (M, 3) int64, the edge index of each triangle's edge k (opposite vertex k).
    """
    t = np.asarray(triangles, dtype=np.int64)
    # edge k of a triangle is opposite vertex k: (v1,v2), (v2,v0), (v0,v1)
    he = np.stack([t[:, [1, 2]], t[:, [2, 0]], t[:, [0, 1]]], axis=1).reshape(-1, 2)
    he_sorted = np.sort(he, axis=1)
    n = int(t.max(initial=0)) + 1
    keys, inverse = np.unique(he_sorted[:, 0] * n + he_sorted[:, 1], return_inverse=True)
    edges = np.stack([keys // n, keys % n], axis=1)
    return edges, inverse.reshape(-1, 3)


def bending_stencils(triangles: np.ndarray, return_triangles: bool = False):
    """Interior-edge stencils (x0, x1, x2, x3): x0-x1 is the shared edge, x2 / x3 the opposite vertices.

    Orientation: triangle (x0, x1, x2) is one of the input triangles with its winding, and
    (x1, x0, x3) the other, so the two normals agree on a flat, consistently wound sheet.
    Non-manifold edges (more than two triangles) raise an error naming the edge. With
    ``return_triangles`` also returns (B, 2) the indices of the two triangles of each stencil.
    """
    t = np.asarray(triangles, dtype=np.int64)
    he = np.stack([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]], axis=1).reshape(-1, 2)
    opp = np.stack([t[:, 2], t[:, 0], t[:, 1]], axis=1).reshape(-1)
    key = np.sort(he, axis=1)
    order = np.lexsort((key[:, 1], key[:, 0]))
    key_s = key[order]
    same_next = np.all(key_s[1:] == key_s[:-1], axis=1)
    if np.any(same_next[1:] & same_next[:-1]):
        i = int(np.nonzero(same_next[1:] & same_next[:-1])[0][0])
        raise InputError(f"triangles: edge {tuple(key_s[i + 1])} is shared by more than two triangles (non-manifold)")
    first = order[:-1][same_next]
    second = order[1:][same_next]
    a = he[first]
    x3 = opp[second]
    st = np.stack([a[:, 0], a[:, 1], opp[first], x3], axis=1)
    if return_triangles:  # the triangles (x0, x1, x2) and (x1, x0, x3) of each stencil
        return st, np.stack([first // 3, second // 3], axis=1)
    return st


def csr(owner: np.ndarray, payload: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Group ``payload`` by ``owner`` (both 1D) into CSR (offsets (count+1,), values), stable order."""
    owner = np.asarray(owner, dtype=np.int64)
    order = np.argsort(owner, kind="stable")
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.add.at(offsets, owner + 1, 1)
    return np.cumsum(offsets), np.asarray(payload)[order]


def adjacency(n: int, groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Vertex adjacency (CSR, no self loops, unique) from element index arrays (K, arity)."""
    rows, cols = [], []
    for g in groups:
        g = np.asarray(g, dtype=np.int64)
        if g.size == 0:
            continue
        k = g.shape[1]
        for a in range(k):
            for b in range(k):
                if a != b:
                    rows.append(g[:, a])
                    cols.append(g[:, b])
    if not rows:
        return np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    pairs = np.unique(r * n + c)
    r, c = pairs // n, pairs % n
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.add.at(offsets, r + 1, 1)
    return np.cumsum(offsets), c


def check_coloring(offsets: np.ndarray, neighbors: np.ndarray, color: np.ndarray) -> None:
    deg = np.diff(offsets)
    owner = np.repeat(np.arange(len(color)), deg)
    bad = color[owner] == color[neighbors]
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise AssertionError(f"colouring conflict between vertices {owner[i]} and {neighbors[i]}")


def weld_representatives(n: int, pairs: np.ndarray) -> np.ndarray:
    """For vertices joined by ``pairs`` (K, 2) (seams, transitively), the smallest vertex index of each
    joined group; every other vertex represents itself. Shape (n,) int64."""
    rep = np.arange(n, dtype=np.int64)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(pairs) == 0:
        return rep
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    g = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, label = connected_components(g, directed=False)
    smallest = np.full(label.max() + 1, n, dtype=np.int64)
    np.minimum.at(smallest, label, np.arange(n))
    return smallest[label]


def panels(n: int, triangles: np.ndarray) -> np.ndarray:
    """Connected piece ("panel") of each of ``n`` vertices through the triangles (seams do not join
    pieces); shape (n,) int32. A vertex in no triangle is a piece of its own."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    a = np.concatenate([t[:, 0], t[:, 1]])
    b = np.concatenate([t[:, 1], t[:, 2]])
    g = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _, label = connected_components(g, directed=False)
    return label.astype(np.int32)

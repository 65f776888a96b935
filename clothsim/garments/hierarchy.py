"""A garment at several resolutions, and the embeddings between them.

Level 0 is the coarsest. Every vertex of one level is located, in its own panel's 2D rest space, in
a triangle of the same panel of another level, with barycentric weights (w0, w1, w2), sum 1. Then

    prolong(x_coarse)[i] = Σ_k w_ik · x_coarse[tri_i[k]]        (coarse → fine)
    restrict(x_fine)[j]  = Σ_k w'_jk · x_fine[tri'_j[k]]         (fine → coarse, the reverse embedding)

Both are linear interpolation, so they reproduce any placement that is affine on a panel exactly
(a flat panel), and a curved one within M·d²/2 (M bounds the placement's second derivative, d the
distance to the triangle's vertices). Boundary vertices of curved outlines may sit just outside the
other level's polygon (a chord cuts the curve); they take the nearest triangle of their own panel
and slightly negative weights (linear extrapolation, same error bound with Σ|w| in front).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError


@dataclass
class LevelMapping:
    """Embedding of level ``fine``'s vertices in level ``coarse``'s triangles.

    Attributes:
        fine, coarse: level indices. triangle: (N_fine,) int64 index of the coarse triangle each fine
        vertex lies in; vertices: (N_fine, 3) int64 its coarse vertices; weights: (N_fine, 3) float64
        barycentric weights (sum 1; >= 0 inside, slightly negative just outside a curved boundary).
    """

    fine: int
    coarse: int
    triangle: np.ndarray
    vertices: np.ndarray
    weights: np.ndarray
    coarse_count: int

    def prolong(self, x_coarse) -> np.ndarray:
        """Values (N_fine, ...) interpolated from per-vertex values (N_coarse, ...) of the coarse level."""
        x = np.asarray(x_coarse)
        if x.shape[0] != self.coarse_count:
            raise InputError(f"prolong: expected {self.coarse_count} rows (level {self.coarse}), got {x.shape[0]}")
        w = self.weights.reshape(self.weights.shape + (1,) * (x.ndim - 1))
        return np.sum(w * x[self.vertices], axis=1)

    def matrix(self):
        """The prolongation as a scipy.sparse CSR matrix (N_fine, N_coarse)."""
        import scipy.sparse as sp

        n = len(self.triangle)
        return sp.csr_matrix((self.weights.ravel(), (np.repeat(np.arange(n), 3), self.vertices.ravel())),
                             shape=(n, self.coarse_count))


class _Levels(Sequence):
    """Lazy sequence of GarmentMesh levels: a level is triangulated the first time it is read."""

    def __init__(self, h):
        self._h = h

    def __len__(self):
        return len(self._h.edge_lengths)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return self._h.level(i)


class GarmentHierarchy:
    """A pattern meshed at several edge lengths (coarse to fine), built lazily, with mappings.

    Attributes:
        pattern: the :class:`~clothsim.garments.pattern.Pattern`.
        edge_lengths: tuple of target edge lengths [m], strictly decreasing (level 0 = coarsest).
        levels: lazy sequence of :class:`~clothsim.garments.mesh.GarmentMesh`; ``levels[i]`` meshes
            level i on first use (the finest, 5 mm, is large: only build it when needed).
    """

    def __init__(self, pattern, edge_lengths=(0.04, 0.02, 0.01, 0.005), *, min_angle: float = 30.0):
        h = tuple(float(x) for x in edge_lengths)
        if not h or any(not (x > 0) for x in h) or any(a <= b for a, b in zip(h, h[1:])):
            raise InputError(f"{pattern.source}: hierarchy levels must be positive edge lengths [m], coarse to fine "
                             f"(strictly decreasing), got {tuple(edge_lengths)!r}")
        self.pattern = pattern
        self.edge_lengths = h
        self.min_angle = min_angle
        self._meshes = {}
        self._maps = {}
        self.levels = _Levels(self)

    def level(self, i: int):
        """The GarmentMesh of level ``i`` (0 = coarsest), meshed on first use."""
        i = self._index(i)
        if i not in self._meshes:
            self._meshes[i] = self.pattern.mesh(self.edge_lengths[i], min_angle=self.min_angle)
        return self._meshes[i]

    def built(self) -> list:
        """Indices of the levels meshed so far."""
        return sorted(self._meshes)

    def mapping(self, fine: int, coarse: int) -> LevelMapping:
        """Where each vertex of level ``fine`` lies in level ``coarse`` (any two different levels)."""
        fine, coarse = self._index(fine), self._index(coarse)
        if fine == coarse:
            raise InputError(f"mapping: fine and coarse are the same level {fine}")
        key = (fine, coarse)
        if key not in self._maps:
            self._maps[key] = embed(self.level(fine), self.level(coarse), fine, coarse)
        return self._maps[key]

    def prolong(self, x_coarse, coarse: int, fine: int) -> np.ndarray:
        """Per-vertex values of level ``coarse`` (N_c, ...) interpolated onto level ``fine``."""
        return self.mapping(fine, coarse).prolong(x_coarse)

    def restrict(self, x_fine, fine: int, coarse: int) -> np.ndarray:
        """Per-vertex values of level ``fine`` (N_f, ...) interpolated onto level ``coarse``'s vertices
        (the reverse embedding: each coarse vertex located in the fine triangles)."""
        return self.mapping(coarse, fine).prolong(x_fine)

    def _index(self, i) -> int:
        n = len(self.edge_lengths)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
            raise InputError(f"level index must be an integer in [0, {n}), got {i!r}")
        return int(i) % n


def embed(src, dst, src_level: int = 0, dst_level: int = 0, k: int = 12) -> LevelMapping:
    """Locate every vertex of mesh ``src`` in a triangle of mesh ``dst`` of the same panel (2D panel space)."""
    from scipy.spatial import cKDTree

    n = src.vertex_count
    tri = np.full(n, -1, dtype=np.int64)
    w = np.zeros((n, 3))
    for pi in range(len(src.panel_names)):
        vs = np.nonzero(src.panel_id == pi)[0]
        ts = np.nonzero(dst.triangle_panel == pi)[0]
        if len(ts) == 0:
            raise InputError(f"embed: panel {src.panel_names[pi]!r} has no triangles in the target level")
        p = src.panel_xy[vs]
        corners = dst.panel_xy[dst.triangles[ts]]  # (T, 3, 2)
        tree = cKDTree(corners.mean(axis=1))
        kk = min(k, len(ts))
        _, cand = tree.query(p, k=kk)
        cand = cand.reshape(len(p), kk)
        bary = _barycentric(p[:, None, :], corners[cand])  # (V, kk, 3)
        score = bary.min(axis=2)
        best = np.argmax(score, axis=1)
        b_best = bary[np.arange(len(p)), best]
        t_best = cand[np.arange(len(p)), best]
        # a vertex just outside a curved boundary (beyond a chord) scores slightly < 0 with the triangle on
        # that chord; far below that means the k nearest triangles missed it: search the whole panel
        miss = score[np.arange(len(p)), best] < -0.25
        if miss.any():
            for j in np.nonzero(miss)[0]:
                ball = _barycentric(p[j][None, None, :], corners[None])[0]
                bj = int(np.argmax(ball.min(axis=1)))
                b_best[j], t_best[j] = ball[bj], bj
        tri[vs] = ts[t_best]
        w[vs] = b_best
    return LevelMapping(fine=src_level, coarse=dst_level, triangle=tri, vertices=dst.triangles[tri], weights=w,
                        coarse_count=dst.vertex_count)


def _barycentric(p, c):
    """Barycentric weights (..., 3) of points p (..., 2) in triangles c (..., 3, 2)."""
    a, b, cc = c[..., 0, :], c[..., 1, :], c[..., 2, :]
    v0, v1, v2 = b - a, cc - a, p - a
    d = v0[..., 0] * v1[..., 1] - v0[..., 1] * v1[..., 0]
    l1 = (v2[..., 0] * v1[..., 1] - v2[..., 1] * v1[..., 0]) / d
    l2 = (v0[..., 0] * v2[..., 1] - v0[..., 1] * v2[..., 0]) / d
    return np.stack([1.0 - l1 - l2, l1, l2], axis=-1)

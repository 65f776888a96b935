"""LevelSet: the cloths of a simulation at several resolutions (level 0 = coarsest) and the linear maps
between levels.

Every vertex of a level is located in a triangle of another level in the 2D rest (material) space, with
barycentric weights w (Σw = 1): :func:`clothsim.garments.hierarchy.embed`. Going finer, a fine vertex takes
the weighted sum of its coarse triangle's corners (prolongation P, shape (N_fine, N_coarse)); going coarser,
a coarse vertex takes the weighted sum of the fine triangle it lies in (restriction R, the reverse embedding,
shape (N_coarse, N_fine)). Both reproduce any placement that is affine over a triangle exactly; a curved
placement is reproduced within κ·h²/8 (κ its largest curvature [1/m], h the edge length of the level
interpolated from), the sagitta of a chord of length h on a circle of radius 1/κ.

Sources: a :class:`~clothsim.garments.GarmentHierarchy` (or several, one garment each), a square grid at
several resolutions (``LevelSet.grid``), or lists of Cloths with ``rest_uv`` (``LevelSet.from_cloths``).
Levels are built lazily (host data only: numpy); nothing here touches a device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cloth import Cloth
from ..errors import InputError


@dataclass
class _FlatMesh:
    """The attributes :func:`embed` reads, for a one-piece cloth whose rest_uv is its panel space."""

    panel_xy: np.ndarray
    triangles: np.ndarray
    panel_id: np.ndarray
    triangle_panel: np.ndarray
    panel_names: list

    @property
    def vertex_count(self) -> int:
        return len(self.panel_xy)


def _flat(cloth: Cloth) -> _FlatMesh:
    if cloth.rest_uv is None:
        raise InputError(f"{cloth.name}: a multi-resolution level needs rest_uv (the 2D rest shape the levels "
                         "are embedded in); build the cloth with rest_uv=")
    return _FlatMesh(cloth.rest_uv, cloth.triangles, np.zeros(cloth.vertex_count, np.int64),
                     np.zeros(len(cloth.triangles), np.int64), [cloth.name])


class LevelSet:
    """Cloths at ``count`` resolutions, coarsest first, with prolongation/restriction between any two.

    Args:
        build: callable ``build(i) -> list[Cloth]`` for level i (the same garments, in the same order,
            at every level); called once per level, on first use.
        embedding: callable ``embedding(src_level, dst_level, garment) -> LevelMapping`` locating level
            ``src``'s vertices of that garment in level ``dst``'s triangles.
        count: number of levels. edge_lengths: nominal edge length [m] of each level (for bounds/reports).
        name: a label.
    """

    def __init__(self, build, embedding, count: int, edge_lengths, name: str = "levels"):
        if count < 1:
            raise InputError(f"LevelSet {name}: needs at least one level, got {count}")
        self.name = name
        self.count = int(count)
        self.edge_lengths = tuple(float(e) for e in edge_lengths)
        if len(self.edge_lengths) != self.count:
            raise InputError(f"LevelSet {name}: {len(self.edge_lengths)} edge lengths for {count} levels")
        self._build = build
        self._embedding = embedding
        self._cloths: dict[int, list] = {}
        self._maps: dict[tuple, object] = {}

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_hierarchy(cls, hierarchies, *, levels=None, fabric=None, pin: bool = True) -> "LevelSet":
        """Garments from :class:`~clothsim.garments.GarmentHierarchy` objects (one or a list), at the
        hierarchy levels ``levels`` (indices, coarse to fine; default all). Seams and pins come from each
        level's GarmentMesh (:meth:`GarmentMesh.to_cloth`)."""
        from ..garments.hierarchy import GarmentHierarchy

        hs = [hierarchies] if isinstance(hierarchies, GarmentHierarchy) else list(hierarchies)
        if not hs or not all(isinstance(h, GarmentHierarchy) for h in hs):
            raise InputError("LevelSet.from_hierarchy: expected a GarmentHierarchy or a list of them")
        n = min(len(h.edge_lengths) for h in hs)
        idx = list(range(n)) if levels is None else [int(i) for i in levels]
        if any(not 0 <= i < n for i in idx) or any(a >= b for a, b in zip(idx, idx[1:])):
            raise InputError(f"LevelSet.from_hierarchy: levels must be increasing indices in [0, {n}), got {levels!r}")

        def build(i):
            return [h.level(idx[i]).to_cloth(fabric, pin=pin) for h in hs]

        def embedding(src, dst, g):
            return hs[g].mapping(idx[src], idx[dst])

        return cls(build, embedding, len(idx), [hs[0].edge_lengths[i] for i in idx],
                   name="+".join(h.pattern.name if hasattr(h.pattern, "name") else "garment" for h in hs))

    @classmethod
    def grid(cls, size=(1.0, 1.0), resolutions=((16, 16), (32, 32)), *, fabric="cotton", center=(0.0, 1.0, 0.0),
             plane="xy", pin: str | None = "top", name: str = "grid") -> "LevelSet":
        """A rectangular cloth (:meth:`Cloth.grid`) at each of ``resolutions`` (vertices (nx, ny), coarse to
        fine); ``pin``: a boundary side to pin at every level ("top", ...) or None."""
        res = [tuple(int(r) for r in rr) for rr in resolutions]
        if any(a[0] * a[1] >= b[0] * b[1] for a, b in zip(res, res[1:])):
            raise InputError(f"LevelSet.grid: resolutions must grow from coarse to fine, got {resolutions!r}")
        w = float(size[0])

        def build(i):
            c = Cloth.grid(size=size, resolution=res[i], fabric=fabric, center=center, plane=plane, name=name)
            if pin:
                c.pin(c.boundary(pin))
            return [c]

        return cls(build, None, len(res), [w / (r[0] - 1) for r in res], name=name)

    @classmethod
    def from_cloths(cls, levels, name: str = "cloths") -> "LevelSet":
        """Levels given as lists of Cloths (``levels[i][g]`` is garment g at level i, coarse to fine); each
        cloth is one piece with ``rest_uv`` (levels are embedded in rest_uv space)."""
        lv = [[c] if isinstance(c, Cloth) else list(c) for c in levels]
        if not lv or any(len(x) != len(lv[0]) for x in lv):
            raise InputError("LevelSet.from_cloths: every level needs the same number of cloths")
        for x in lv:
            for c in x:
                _flat(c)
        edge = []
        for x in lv:
            t = x[0].triangles
            e = x[0].rest_uv[t[:, [1, 2, 0]]] - x[0].rest_uv[t]
            edge.append(float(np.mean(np.linalg.norm(e, axis=2))))
        return cls(lambda i: lv[i], None, len(lv), edge, name=name)

    # ------------------------------------------------------------------ access
    def cloths(self, i: int) -> list:
        """The Cloths of level ``i`` (host data, built on first use)."""
        i = self.index(i)
        if i not in self._cloths:
            cl = list(self._build(i))
            if not cl or not all(isinstance(c, Cloth) for c in cl):
                raise InputError(f"LevelSet {self.name}: level {i} did not build a list of Cloths")
            if i and self._cloths and len(cl) != len(next(iter(self._cloths.values()))):
                raise InputError(f"LevelSet {self.name}: level {i} has a different number of garments")
            self._cloths[i] = cl
        return self._cloths[i]

    def vertex_counts(self, i: int) -> list:
        return [c.vertex_count for c in self.cloths(i)]

    def index(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -self.count <= i < self.count:
            raise InputError(f"level must be an integer in [0, {self.count}), got {i!r}")
        return int(i) % self.count

    def transfer(self, src: int, dst: int):
        """The sparse matrix (N_dst, N_src) that carries per-vertex values of level ``src`` to level ``dst``:
        prolongation when dst is finer, restriction (reverse embedding) when coarser."""
        import scipy.sparse as sp

        src, dst = self.index(src), self.index(dst)
        if src == dst:
            raise InputError(f"transfer: source and destination are the same level {src}")
        key = (src, dst)
        if key not in self._maps:
            blocks = []
            for g, (cd, cs) in enumerate(zip(self.cloths(dst), self.cloths(src))):
                if self._embedding is not None:
                    m = self._embedding(dst, src, g)
                else:
                    from ..garments.hierarchy import embed

                    m = embed(_flat(cd), _flat(cs), dst, src)
                blocks.append(m.matrix())
            self._maps[key] = sp.block_diag(blocks, format="csr")
        return self._maps[key]

    def containing_triangles(self, src: int, dst: int) -> np.ndarray:
        """(N_dst,) global index of the level-``src`` triangle each level-``dst`` vertex is located in."""
        src, dst = self.index(src), self.index(dst)
        out, tri_off = [], 0
        for g, (cd, cs) in enumerate(zip(self.cloths(dst), self.cloths(src))):
            if self._embedding is not None:
                m = self._embedding(dst, src, g)
            else:
                from ..garments.hierarchy import embed

                m = embed(_flat(cd), _flat(cs), dst, src)
            out.append(m.triangle + tri_off)
            tri_off += len(cs.triangles)
        return np.concatenate(out)

    def prolong_curved(self, x, src: int, dst: int, amount: float = 1.0) -> np.ndarray:
        """Positions (N_src, 3) [m] of the coarser level ``src`` carried to the finer level ``dst`` on a curved
        patch per coarse triangle (Vlachos et al. 2001, PN triangles): the cubic Bézier triangle through the
        triangle's corners whose tangent planes there are the area-weighted vertex normals of level ``src``.
        Linear prolongation puts a fine vertex on the flat coarse triangle, up to κ·h²/8 inside a surface of
        curvature κ (5 mm at h = 80 mm on a 0.15 m radius hip) with a crease along every coarse edge; the
        curved patch reproduces a sphere to third order and is continuous across coarse edges (an edge's
        curve depends on its two end points and normals only). ``amount`` scales the offset from the flat
        triangle (0 = :meth:`map`). Coarser ``dst`` than ``src``: the plain map."""
        src, dst = self.index(src), self.index(dst)
        xs = np.asarray(x, dtype=np.float64)
        flat = self.map(xs, src, dst)
        if dst <= src or amount == 0.0:
            return flat
        tri_all = np.concatenate([c.triangles + o for c, o in zip(
            self.cloths(src), np.concatenate([[0], np.cumsum(self.vertex_counts(src))])[:-1])])
        # area-weighted vertex normals per garment piece
        fn = np.cross(xs[tri_all[:, 1]] - xs[tri_all[:, 0]], xs[tri_all[:, 2]] - xs[tri_all[:, 0]])
        vn = np.zeros_like(xs)
        for k in range(3):
            np.add.at(vn, tri_all[:, k], fn)
        vn /= np.maximum(np.linalg.norm(vn, axis=1, keepdims=True), 1e-20)
        ct = self.containing_triangles(src, dst)
        t = tri_all[ct]  # (N_dst, 3) coarse corners of each fine vertex
        P = self.transfer(src, dst)
        rows = np.repeat(np.arange(len(ct)), 3)
        w = np.asarray(P[rows, t.ravel()]).reshape(-1, 3)
        p1, p2, p3 = (xs[t[:, k]] for k in range(3))
        n1, n2, n3 = (vn[t[:, k]] for k in range(3))

        def b(pi, pj, ni):  # edge control point near pi toward pj
            return (2.0 * pi + pj - np.einsum("ij,ij->i", pj - pi, ni)[:, None] * ni) / 3.0

        b210, b120 = b(p1, p2, n1), b(p2, p1, n2)
        b021, b012 = b(p2, p3, n2), b(p3, p2, n3)
        b102, b201 = b(p3, p1, n3), b(p1, p3, n1)
        e = (b210 + b120 + b021 + b012 + b102 + b201) / 6.0
        v = (p1 + p2 + p3) / 3.0
        b111 = e + 0.5 * (e - v)
        w1, w2, w3 = (w[:, k, None] for k in range(3))
        curved = (p1 * w1 ** 3 + p2 * w2 ** 3 + p3 * w3 ** 3
                  + 3.0 * (b210 * w1 * w1 * w2 + b120 * w1 * w2 * w2 + b201 * w1 * w1 * w3
                           + b021 * w2 * w2 * w3 + b102 * w1 * w3 * w3 + b012 * w2 * w3 * w3)
                  + 6.0 * b111 * w1 * w2 * w3)
        # rows whose weights do not sum to 1 over the containing triangle (none for an embedding) stay linear
        ok = np.abs(w.sum(axis=1) - 1.0) < 1e-6
        out = flat.copy()
        out[ok] = flat[ok] + amount * (curved[ok] - flat[ok])
        return out

    def map(self, values, src: int, dst: int) -> np.ndarray:
        """Per-vertex values (N_src, ...) of level ``src`` carried to level ``dst`` (N_dst, ...)."""
        a = np.asarray(values)
        t = self.transfer(src, dst)
        if a.shape[0] != t.shape[1]:
            raise InputError(f"map: expected {t.shape[1]} rows (level {src}), got {a.shape[0]}")
        return np.asarray(t @ a.reshape(a.shape[0], -1)).reshape((t.shape[0],) + a.shape[1:])

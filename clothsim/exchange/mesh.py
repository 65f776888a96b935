"""ImportedMesh: a welded triangle mesh for physics plus a per-corner UV layout for rendering.

Conventions (DESIGN.md): positions in metres, Y up, right-handed, triangles counter-clockwise seen
from the front. UVs use the OBJ/USD convention: origin at the bottom-left of the texture, ``v`` up
(trimesh converts glTF's top-left origin to this on load and back on export).

UV seams. A garment must be simulated on a *welded* mesh (one vertex per point of cloth, so the
cloth cannot tear along a UV seam), but UVs are per triangle corner: a vertex on a UV seam has two
or more UVs. ImportedMesh keeps both:

* ``vertices`` (N, 3) / ``triangles`` (M, 3): the welded mesh, for physics and collisions.
* ``corner_uv`` (M, 3, 2): the UV of each triangle corner (or None when the file has no UVs).
* :meth:`ImportedMesh.uv_split` builds the *split* mesh renderers and glTF want: one render vertex
  per distinct (welded vertex, UV) pair, ``split_to_weld`` (K,) maps each render vertex to the
  welded vertex whose position it takes, so simulated positions ``x`` (N, 3) render as
  ``x[split_to_weld]`` with ``split_uv`` (K, 2) and ``split_triangles`` (M, 3).
* ``uv`` (N, 2) is a per-welded-vertex UV when the layout has no seams, else None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import InputError

__all__ = ["ImportedMesh", "UVSplit", "UNITS", "check_finite", "drop_unreferenced", "from_y_up", "meters_per_unit",
           "normalize_up", "to_y_up", "validate_mesh", "weld_by_position"]

#: metres per unit for the unit names import_mesh accepts
UNITS = {"m": 1.0, "meters": 1.0, "metres": 1.0, "cm": 0.01, "centimeters": 0.01, "centimetres": 0.01,
         "mm": 0.001, "millimeters": 0.001, "millimetres": 0.001, "in": 0.0254, "inches": 0.0254,
         "ft": 0.3048, "feet": 0.3048, "dm": 0.1, "km": 1000.0}


@dataclass(frozen=True)
class UVSplit:
    """A mesh split along its UV seams, for renderers and file formats with one UV per vertex.

    Attributes:
        split_to_weld: (K,) int64, the welded vertex each render vertex copies its position from.
        uv: (K, 2) float64 texture coordinates (origin bottom-left, v up).
        triangles: (M, 3) int64 triangles over the K render vertices (same order as the welded ones).
    """

    split_to_weld: np.ndarray
    uv: np.ndarray
    triangles: np.ndarray

    @property
    def vertex_count(self) -> int:
        return len(self.split_to_weld)

    @classmethod
    def from_corner_uv(cls, triangles: np.ndarray, corner_uv: np.ndarray) -> "UVSplit":
        """Split the welded ``triangles`` (M, 3) wherever ``corner_uv`` (M, 3, 2) differs at a vertex.

        Render vertices are sorted by welded vertex (copies of one vertex in order of first
        appearance), so a seamless layout keeps the welded numbering: ``split_to_weld == arange(N)``.
        """
        t = np.asarray(triangles, dtype=np.int64).reshape(-1)
        uv = np.asarray(corner_uv, dtype=np.float64).reshape(-1, 2)
        key = np.concatenate([t[:, None].astype(np.float64), uv], axis=1)
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        # renumber unique (vertex, uv) pairs by first appearance, vertex index first for seamless meshes
        order = np.lexsort((first, t[first]))
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        return cls(split_to_weld=t[first[order]], uv=uv[first[order]],
                   triangles=rank[inverse.reshape(-1)].reshape(-1, 3))


@dataclass(frozen=True)
class ImportedMesh:
    """A mesh read from a file, converted to metres and Y up.

    Attributes:
        vertices: (N, 3) float64 welded positions [m], Y up.
        triangles: (M, 3) int64 vertex indices, counter-clockwise seen from the front.
        corner_uv: (M, 3, 2) float64 UV per triangle corner, or None (no UVs in the file).
        name: a label (file stem, or the mesh's name in the file).
        source: the file it came from.
        source_units: metres per unit the file declared (or the caller chose).
        source_up: "Y" or "Z", the up axis the file declared (or the caller chose).
    """

    vertices: np.ndarray
    triangles: np.ndarray
    corner_uv: np.ndarray | None = None
    name: str = "mesh"
    source: str = ""
    source_units: float = 1.0
    source_up: str = "Y"

    @property
    def vertex_count(self) -> int:
        return len(self.vertices)

    @property
    def triangle_count(self) -> int:
        return len(self.triangles)

    def uv_split(self) -> UVSplit | None:
        """The render (split-at-UV-seams) mesh, or None without UVs. Computed once."""
        return self._uv_split

    @cached_property
    def _uv_split(self) -> UVSplit | None:
        if self.corner_uv is None:
            return None
        return UVSplit.from_corner_uv(self.triangles, self.corner_uv)

    @property
    def has_uv_seams(self) -> bool:
        s = self.uv_split()
        return s is not None and s.vertex_count != self.vertex_count

    @property
    def uv(self) -> np.ndarray | None:
        """(N, 2) one UV per welded vertex when the layout has no seams; None otherwise (see uv_split)."""
        s = self.uv_split()
        if s is None or s.vertex_count != self.vertex_count:
            return None
        out = np.empty((self.vertex_count, 2))
        out[s.split_to_weld] = s.uv
        return out

    def area(self) -> float:
        """Total 3D surface area [m²]."""
        x = self.vertices[self.triangles]
        return float(0.5 * np.linalg.norm(np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), axis=1).sum())

    def uv_area(self) -> float:
        """Total UV area (unsigned, in UV units²); 0 without UVs."""
        if self.corner_uv is None:
            return 0.0
        return float(np.abs(_signed_area_2d(self.corner_uv)).sum())


def _signed_area_2d(p: np.ndarray) -> np.ndarray:
    """Signed areas of 2D triangles p (M, 3, 2); positive when counter-clockwise."""
    e1 = p[:, 1] - p[:, 0]
    e2 = p[:, 2] - p[:, 0]
    return 0.5 * (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])


def meters_per_unit(units, where: str) -> float:
    """Metres per file unit from a name ("cm", "mm", "in", ...) or a positive number."""
    if isinstance(units, str):
        key = units.strip().lower()
        if key not in UNITS:
            raise InputError(f"{where}: unknown units {units!r}; expected one of {sorted(set(UNITS))} "
                             "or a positive number of metres per unit")
        return UNITS[key]
    try:
        mpu = float(units)
    except (TypeError, ValueError):
        raise InputError(f"{where}: units must be a unit name or metres per unit, got {units!r}") from None
    if not (mpu > 0 and math.isfinite(mpu)):
        raise InputError(f"{where}: units must be a positive finite number of metres per unit, got {units!r}")
    return mpu


def normalize_up(up, where: str) -> str:
    u = str(up).strip().upper().lstrip("+")
    if u not in ("Y", "Z"):
        raise InputError(f"{where}: up axis must be 'Y' or 'Z', got {up!r}")
    return u


def to_y_up(points: np.ndarray, up: str) -> np.ndarray:
    """Rotate points from a Z-up frame to Y up: (x, y, z) -> (x, z, -y), a right-handed rotation of
    -90° about +X (the Blender -> glTF convention); Y-up points are returned unchanged."""
    p = np.asarray(points, dtype=np.float64)
    if up == "Y":
        return p
    return np.stack([p[:, 0], p[:, 2], -p[:, 1]], axis=1)


def from_y_up(points: np.ndarray, up: str) -> np.ndarray:
    """Inverse of :func:`to_y_up`: (x, y, z) -> (x, -z, y) for a Z-up target."""
    p = np.asarray(points, dtype=np.float64)
    if up == "Y":
        return p
    return np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1)


def weld_by_position(vertices: np.ndarray, triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge vertices with bit-identical positions (how OBJ/glTF loaders split them at UV seams).

    Returns (welded vertices (N', 3), triangles (M, 3) re-indexed, old_to_new (N,)). Welded
    vertices keep the order of first appearance. Vertices that merely lie close are not merged.
    """
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    _, first, inverse = np.unique(v, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    old_to_new = rank[inverse.reshape(-1)]
    return v[first[order]], old_to_new[np.asarray(triangles, dtype=np.int64)], old_to_new


def check_finite(v: np.ndarray, where: str, offset: int = 0) -> None:
    """Raise InputError naming the first vertex (``offset`` + row) with a non-finite coordinate.

    Called on the file's own coordinates, before any transform (a matrix product would spread one
    NaN over all three coordinates)."""
    bad = ~np.isfinite(v)
    if bad.any():
        i, k = (int(a) for a in np.argwhere(bad)[0])
        raise InputError(f"{where}: vertex {i + offset} has a non-finite coordinate {'xyz'[k]} = {v[i, k]}; "
                         "expected finite numbers")


def drop_unreferenced(vertices: np.ndarray, triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Remove vertices no triangle uses (stray points cannot be simulated); keeps the order."""
    used = np.zeros(len(vertices), dtype=bool)
    used[triangles.ravel()] = True
    if used.all():
        return vertices, triangles
    new = np.cumsum(used) - 1
    return vertices[used], new[triangles]


def validate_mesh(vertices: np.ndarray, triangles: np.ndarray, corner_uv: np.ndarray | None, where: str) -> None:
    """Raise InputError naming ``where`` (the file) when the mesh cannot be simulated or collided.

    Checks: at least one triangle; finite positions and UVs; indices in range; no degenerate
    triangle (a repeated vertex, or 3D area <= 1e-12 of the largest triangle's); no non-manifold
    edge (an undirected edge shared by more than two triangles).
    """
    v, t = vertices, triangles
    if len(v) == 0 or len(t) == 0:
        raise InputError(f"{where}: the mesh is empty ({len(v)} vertices, {len(t)} triangles); "
                         "expected at least one triangle")
    check_finite(v, where)
    if t.min() < 0 or t.max() >= len(v):
        raise InputError(f"{where}: triangle indices span [{t.min()}, {t.max()}] but the mesh has {len(v)} vertices")
    if corner_uv is not None:
        badu = ~np.isfinite(corner_uv)
        if badu.any():
            tri = int(np.argwhere(badu)[0][0])
            raise InputError(f"{where}: triangle {tri} has a non-finite UV {corner_uv[tri].tolist()}; "
                             "expected finite numbers")
    rep = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2])
    x = v[t]
    area = 0.5 * np.linalg.norm(np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), axis=1)
    degenerate = rep | (area <= 1e-12 * max(float(area.max()), 1e-300))
    if degenerate.any():
        k = int(np.nonzero(degenerate)[0][0])
        raise InputError(f"{where}: triangle {k} (vertices {t[k].tolist()}) is degenerate (area {area[k]:.3g} m^2); "
                         f"{int(degenerate.sum())} degenerate triangle(s) in all; expected non-zero area")
    e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    edges, counts = np.unique(e, axis=0, return_counts=True)
    if (counts > 2).any():
        k = int(np.argmax(counts))
        raise InputError(f"{where}: edge {edges[k].tolist()} is shared by {counts[k]} triangles (non-manifold); "
                         f"{int((counts > 2).sum())} non-manifold edge(s) in all; expected at most 2 per edge")

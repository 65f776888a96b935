"""The scenes of benchmarks/sim_grid.py (host data) and the measures taken on their results.

``Scene(cs, "pinned" | "fold", n, size, mat)``: an N×N sheet pinned along its top edge, or standing on the
ground, tilted 5°, to buckle and fold onto itself; ``folded_fraction`` tells whether cloth lies in several
layers; ``count_intersections`` counts triangle-triangle intersections (clothsim.collision)."""

from __future__ import annotations

import math
import os

import numpy as np

from newton_side import BenchMaterial


def fabric_for(cs, mat: BenchMaterial):
    """clothsim Fabric equal to the isotropic benchmark material."""
    return cs.Fabric(
        name="bench-isotropic",
        density=mat.density,
        stretch_warp=mat.stretch,
        stretch_weft=mat.stretch,
        poisson=mat.poisson,
        shear=mat.shear_modulus,
        bend_warp=mat.bending,
        bend_weft=mat.bending,
        bend_bias=mat.bending,
        friction=mat.friction,
        thickness=mat.thickness,
        damping=mat.damping,
    )


class Scene:
    """Mesh, pins, ground and flags of one benchmark case (host data)."""

    def __init__(self, cs, kind: str, n: int, size: float, mat: BenchMaterial):
        self.kind, self.n, self.size = kind, n, size
        self.cs_root = os.path.dirname(os.path.abspath(cs.__file__))  # the clothsim sources simulated
        self.fabric = fabric_for(cs, mat)
        if kind == "pinned":
            cloth = cs.Cloth.grid(size=(size, size), resolution=(n, n), fabric=self.fabric,
                                  center=(0.0, 1.0, 0.0), plane="xz", diagonals="alternate")
            cloth.pin(cloth.boundary("top"))
            self.ground, self.self_collision = None, False
        elif kind == "fold":
            lift, tilt = 0.01, math.radians(5.0)
            base = cs.Cloth.grid(size=(size, size), resolution=(n, n), fabric=self.fabric,
                                 center=(0.0, 0.5 * size + lift, 0.0), plane="xy", diagonals="alternate")
            v = base.vertices.copy()
            h = v[:, 1] - lift
            v[:, 1] = lift + h * math.cos(tilt)
            v[:, 2] = v[:, 2] + h * math.sin(tilt)
            cloth = cs.Cloth.from_mesh(v, base.triangles, rest_uv=base.rest_uv, fabric=self.fabric, name="fold")
            self.ground, self.self_collision = 0.0, True
        else:
            raise ValueError(kind)
        self.cloth = cloth
        self.vertices = np.asarray(cloth.vertices, dtype=np.float64)
        self.triangles = np.asarray(cloth.triangles, dtype=np.int32)
        self.pins = np.asarray(cloth.pins, dtype=np.int64)
        self.rest_uv = np.asarray(cloth.rest_uv if cloth.rest_uv is not None else self.vertices[:, [0, 2]])
        self.edge = size / (n - 1)


def folded_fraction(x: np.ndarray, rest_uv: np.ndarray, h: float) -> float:
    """Fraction of vertices sharing a (1.5 h)^3 cell with cloth at least 4 h away in the rest shape.

    0 for a single layer; > 0 when the cloth lies in several layers (has folded onto itself).
    """
    cell = np.floor(x / (1.5 * h)).astype(np.int64)
    cell -= cell.min(axis=0)
    dims = cell.max(axis=0) + 1
    key = (cell[:, 0] * dims[1] + cell[:, 1]) * dims[2] + cell[:, 2]
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.r_[0, np.nonzero(np.diff(k))[0] + 1]
    r = rest_uv[order]
    span = np.zeros(len(starts))
    for d in range(r.shape[1]):
        span = np.maximum(span, np.maximum.reduceat(r[:, d], starts) - np.minimum.reduceat(r[:, d], starts))
    counts = np.diff(np.r_[starts, len(k)])
    return float(counts[span > 4.0 * h].sum()) / len(x)


def count_intersections(x, tris):
    try:
        from clothsim.collision import count_self_intersections
    except Exception as exc:  # pragma: no cover
        return None, f"count_self_intersections unavailable ({exc})"
    return int(count_self_intersections(np.asarray(x, dtype=np.float32), tris)), ""

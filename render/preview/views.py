"""What the preview can show besides the shaded garment: per-vertex quantities and their colour scales.

Plain numpy (no GL): the GL side is :mod:`render.preview.overlay`.

Strain: for a triangle with rest corners ``u_0, u_1, u_2`` (2D rest shape [m]) and current corners
``x_0, x_1, x_2`` (3D [m]) the deformation gradient is ``F = [x_1 - x_0, x_2 - x_0] [u_1 - u_0,
u_2 - u_0]^-1`` (3 x 2); its singular values are the principal stretches ``λ_1 >= λ_2`` (1 = rest
length). The map shows the stretch ``λ_1 - 1`` (0.05 = 5 % longer than cut), as garment tools'
strain maps do, averaged to the vertices with triangle rest-area weights.
"""

from __future__ import annotations

from enum import Enum

import numpy as np


class View(str, Enum):
    """The preview's views (``view NAME`` in the command interface)."""

    SHADED = "shaded"
    WIREFRAME = "wireframe"
    LOD = "lod"            # colour by simulation resolution level, with the mesh edges
    STRAIN = "strain"
    PENETRATION = "penetration"
    PINS_SEAMS = "pins"

    @classmethod
    def parse(cls, text: str) -> "View":
        import clothsim as cs

        for v in cls:
            if text == v.value or text == v.name.lower():
                return v
        raise cs.InputError(f"unknown view {text!r}; expected one of {', '.join(v.value for v in cls)}")


# Colours of the resolution levels (0 = 40 mm ... 3 = 5 mm), sRGB.
LEVEL_COLOURS = ((0.89, 0.42, 0.18), (0.95, 0.77, 0.20), (0.30, 0.69, 0.42), (0.24, 0.50, 0.82))
PIN_COLOUR = (0.85, 0.10, 0.12)
SEAM_COLOUR = (0.10, 0.35, 0.95)
WIRE_COLOUR = (0.08, 0.08, 0.10)

# The strain colour scale: stops (fraction of the range, sRGB), blue -> cyan -> green -> yellow -> red
# (the "stretch" maps of garment tools). One table feeds both the shader (a 1D texture) and the legend.
STRAIN_STOPS = ((0.0, (0.13, 0.25, 0.75)), (0.25, (0.10, 0.65, 0.85)), (0.5, (0.20, 0.75, 0.30)),
                (0.75, (0.97, 0.85, 0.15)), (1.0, (0.85, 0.12, 0.10)))
# Penetration: grey outside the body, orange to red with depth.
PENETRATION_STOPS = ((0.0, (0.72, 0.72, 0.74)), (0.001, (1.0, 0.55, 0.10)), (1.0, (0.80, 0.0, 0.0)))


def colour_table(stops, size: int = 256) -> np.ndarray:
    """(size, 4) uint8 RGBA sampled linearly between ``stops`` ((position in [0, 1], sRGB), ...)."""
    pos = np.array([s[0] for s in stops])
    col = np.array([s[1] for s in stops])
    t = np.linspace(0.0, 1.0, size)
    rgb = np.stack([np.interp(t, pos, col[:, k]) for k in range(3)], axis=1)
    return np.concatenate([np.round(rgb * 255), np.full((size, 1), 255)], axis=1).astype(np.uint8)


def principal_stretches(x: np.ndarray, rest_uv: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(M, 2) principal stretches (λ_1 >= λ_2) of every triangle (see the module docstring).

    Args:
        x: current positions (N, 3) [m]; rest_uv: rest shape (N, 2) [m]; triangles: (M, 3).
    Degenerate rest triangles (zero area) get (1, 1).
    """
    x = np.asarray(x, np.float64)
    u = np.asarray(rest_uv, np.float64)
    t = np.asarray(triangles, np.int64)
    ds = np.stack([x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]]], axis=2)   # (M, 3, 2)
    dm = np.stack([u[t[:, 1]] - u[t[:, 0]], u[t[:, 2]] - u[t[:, 0]]], axis=2)   # (M, 2, 2)
    det = dm[:, 0, 0] * dm[:, 1, 1] - dm[:, 0, 1] * dm[:, 1, 0]
    ok = np.abs(det) > 1e-14
    inv = np.zeros_like(dm)
    d = np.where(ok, det, 1.0)
    inv[:, 0, 0], inv[:, 0, 1] = dm[:, 1, 1] / d, -dm[:, 0, 1] / d
    inv[:, 1, 0], inv[:, 1, 1] = -dm[:, 1, 0] / d, dm[:, 0, 0] / d
    f = ds @ inv                                                                   # (M, 3, 2)
    # singular values of F from the 2 x 2 right Cauchy-Green tensor C = F^T F (closed form)
    c = np.transpose(f, (0, 2, 1)) @ f
    tr = c[:, 0, 0] + c[:, 1, 1]
    dt = c[:, 0, 0] * c[:, 1, 1] - c[:, 0, 1] * c[:, 1, 0]
    disc = np.sqrt(np.maximum(0.25 * tr * tr - dt, 0.0))
    l1 = np.sqrt(np.maximum(0.5 * tr + disc, 0.0))
    l2 = np.sqrt(np.maximum(0.5 * tr - disc, 0.0))
    out = np.stack([l1, l2], axis=1)
    out[~ok] = 1.0
    return out


def vertex_stretch(x: np.ndarray, rest_uv: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Per-vertex stretch ``λ_1 - 1`` (N,) float32: triangle values averaged with rest-area weights.
    Vertices without a rest shape (NaN rest_uv) or triangles get 0."""
    n = len(x)
    t = np.asarray(triangles, np.int64)
    u = np.asarray(rest_uv, np.float64)
    valid = np.isfinite(u[t]).all(axis=(1, 2))
    out = np.zeros(n, np.float32)
    if not valid.any():
        return out
    t = t[valid]
    s = principal_stretches(x, np.nan_to_num(u), t)[:, 0] - 1.0
    e1, e2 = u[t[:, 1]] - u[t[:, 0]], u[t[:, 2]] - u[t[:, 0]]
    area = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
    num = np.zeros(n)
    den = np.zeros(n)
    for k in range(3):
        num += np.bincount(t[:, k], weights=area * s, minlength=n)
        den += np.bincount(t[:, k], weights=area, minlength=n)
    out[:] = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return out


def unique_edges(triangles: np.ndarray) -> np.ndarray:
    """(E, 2) int32 edges of a triangle mesh, each once (for the wireframe)."""
    t = np.asarray(triangles, np.int64)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    e.sort(axis=1)
    return np.unique(e, axis=0).astype(np.int32)


class ClusterProxy:
    """A coarse stand-in for a dense mesh (the avatar) while the camera moves: vertex clustering.

    Vertices are grouped by the cubic cell of side ``cell`` [m] they fall in (computed once, from the
    first pose); a group's position is the mean of its members, so the proxy follows the mesh when it
    moves; triangles whose corners collapse into fewer than three groups, and duplicates, are dropped.
    The T-shirt scene's mannequin goes from 28,108 to ~9,600 triangles at 2 cm, which takes its share of a
    llvmpipe frame from ~15 ms to ~8 ms. The full mesh is drawn again once the camera stops.
    """

    def __init__(self, vertices: np.ndarray, triangles: np.ndarray, cell: float = 0.02) -> None:
        v = np.asarray(vertices, np.float64)
        key = np.floor((v - v.min(axis=0)) / cell).astype(np.int64)
        _, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
        self.group = inv.ravel()
        self.counts = counts.astype(np.float64)
        t = self.group[np.asarray(triangles, np.int64)]
        t = t[(t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])]
        _, first = np.unique(np.sort(t, axis=1), axis=0, return_index=True)
        self.triangles = np.ascontiguousarray(t[np.sort(first)], np.int32)
        self.vertex_count = len(vertices)

    def positions(self, vertices: np.ndarray) -> np.ndarray:
        """Proxy vertex positions (G, 3) float32 for the full mesh's ``vertices`` (N, 3)."""
        v = np.asarray(vertices, np.float64)
        out = np.empty((len(self.counts), 3), np.float32)
        for k in range(3):
            out[:, k] = np.bincount(self.group, weights=v[:, k], minlength=len(self.counts)) / self.counts
        return out

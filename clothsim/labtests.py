"""Textile-lab tests run in the simulator: the ASTM D1388 cantilever.

The cantilever (option A, Peirce): a strip is pushed over a horizontal ledge; the overhang ``l`` at
which the line from the ledge edge to the strip's tip reaches 41.5° below horizontal gives the bending
length ``c = l/2`` (exact for the elastica at that angle) and the flexural rigidity
``G = W·g·c³`` (W the areal mass). Here the strip is clamped over its first two rows of vertices at the
ledge, settled at several fixed overhangs, and ``l`` at 41.5° is interpolated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cloth import Cloth
from .fabric import Fabric
from .simulator import Simulator

ASTM_ANGLE_DEG = 41.5
G_STD = 9.81


@dataclass
class CantileverResult:
    """Measured rigidity and the data it came from."""

    fabric: Fabric
    rows_along: str
    overhangs: np.ndarray  # [m]
    angles_deg: np.ndarray  # line ledge→tip below horizontal [deg]
    overhang_at_41_5: float  # [m]
    bending_length: float  # c [m]
    rigidity: float  # G [N·m]
    frames: int

    @property
    def relative_error(self) -> float:
        return self.rigidity / self.fabric.bend_warp - 1.0


def bending_length(fabric: Fabric, direction: str = "warp") -> float:
    """c = (B / (W·g))^(1/3) [m] for the fabric's rigidity along ``direction``."""
    b = getattr(fabric, f"bend_{direction}")
    return (b / (fabric.density * G_STD)) ** (1.0 / 3.0)


def cantilever_test(fabric: Fabric, *, rows_along: str = "x", overhang_factors=(1.7, 1.85, 2.0, 2.15, 2.3),
                    elements_per_c: float = 6.0, width: float = 0.025, frames: int = 240, substeps: int = 10,
                    iterations: int = 20, damping: float = 0.0, settle_rate: float = 1.8, device="cpu") -> CantileverResult:
    """Simulate the cantilever on a strip cut along warp, meshed with near-equilateral triangles.

    ``rows_along`` picks the mesh orientation ("x": one edge family along the strip; "y": turned 90°).
    Overhangs are ``factor·c_expected``; each is its own cloth, all in one simulator (one launch each).
    The strip comes to rest within ``frames`` under air drag tuned near critical damping of its first
    mode (ω₁ ≈ 0.88·√(g/c) at l = 2c; drag rate α = settle_rate·√(g/c) [1/s]). Drag acts on velocity only:
    it changes how fast the strip comes to rest, not where. The static state does not depend on the
    iteration count either: each substep starts from the previous position (adaptive initialisation),
    which is the solution once the strip is at rest.
    """
    c0 = bending_length(fabric)
    a = c0 / elements_per_c
    fab = fabric.replace(damping=damping)
    cloths, ledges, tips = [], [], []
    for k, fct in enumerate(overhang_factors):
        l = fct * c0
        clamp = 1.6 * a  # two rows of vertices lie on the ledge
        total = clamp + l
        z = k * 3.0 * width
        cl = Cloth.lattice(size=(total, width), edge_length=a, fabric=fab, center=(total / 2, 0.0, z),
                           plane="xz", rows_along=rows_along, name=f"strip{k}")
        x = cl.vertices[:, 0]
        clamped = x <= clamp + 1e-9  # the first two columns of vertices (a lattice column may zigzag)
        cl.pin(np.nonzero(clamped)[0])
        # the ledge edge: the clamp's boundary line; on a jagged lattice column it zigzags, so take the
        # mean position of the clamped vertices that share a triangle with a free one
        t = cl.triangles
        mixed = clamped[t].any(axis=1) & ~clamped[t].all(axis=1)
        rim = np.unique(t[mixed][clamped[t[mixed]]])
        ledge = float(x[rim].mean())
        tip = np.nonzero(x >= x.max() - 1e-9)[0]
        cloths.append(cl)
        ledges.append(ledge)
        tips.append(tip)
    sim = Simulator(cloths, device=device, dt=1.0 / 60.0, substeps=substeps, iterations=iterations,
                    gravity=(0.0, -G_STD, 0.0), drag=settle_rate * np.sqrt(G_STD / c0) * fabric.density)
    sim.step(frames)
    x = sim.positions().astype(np.float64)
    off = sim.cloth_offsets
    angles, overhangs = [], []
    for k, cl in enumerate(cloths):
        xi = x[off[k]:off[k + 1]]
        tip = xi[tips[k]].mean(axis=0)
        drop = -tip[1]
        run = tip[0] - ledges[k]
        angles.append(np.degrees(np.arctan2(drop, run)))
        overhangs.append(cl.vertices[:, 0].max() - ledges[k])
    angles = np.asarray(angles)
    overhangs = np.asarray(overhangs)
    sim.release()
    if not (angles.min() <= ASTM_ANGLE_DEG <= angles.max()):
        raise RuntimeError(f"cantilever: angles {np.round(angles, 2)} do not bracket {ASTM_ANGLE_DEG} deg; widen the overhangs")
    order = np.argsort(angles)
    l41 = float(np.interp(ASTM_ANGLE_DEG, angles[order], overhangs[order]))
    c = 0.5 * l41
    G = fabric.density * G_STD * c ** 3
    return CantileverResult(fabric, rows_along, overhangs, angles, l41, c, G, frames)

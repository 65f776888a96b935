"""Garments from sewing patterns: load a pattern, triangulate it at several resolutions, sew it.

    from clothsim import garments
    pattern = garments.load_pattern(garments.shipped_path("tshirt"))
    mesh = pattern.mesh(0.02)                  # GarmentMesh, 20 mm edges
    cloth = mesh.to_cloth()                    # clothsim.Cloth with seams (and pins)
    h = pattern.hierarchy((0.04, 0.02, 0.01))  # GarmentHierarchy, levels built lazily
    x_fine = h.prolong(x_coarse, coarse=0, fine=1)

The pattern format is documented in ``assets/garments/README.md``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .hierarchy import GarmentHierarchy, LevelMapping
from .mesh import GarmentMesh, mesh_pattern, triangle_angles
from .pattern import Panel, Pattern, Placement, Seam, Wrap, load_pattern, pattern_from_dict

ASSET_DIR = Path(__file__).resolve().parents[2] / "assets" / "garments"
"""Folder of the shipped pattern files."""

_SHIPPED = ("tshirt", "circle_skirt", "straight_skirt", "trousers", "cape")


def shipped() -> tuple:
    """Names of the shipped garments (patterns for the default avatar)."""
    return _SHIPPED


def shipped_path(name: str) -> Path:
    """Path of a shipped garment's pattern file."""
    if name not in _SHIPPED:
        raise InputError(f"unknown shipped garment {name!r}; expected one of {', '.join(_SHIPPED)}")
    return ASSET_DIR / f"{name}.toml"


def load_shipped(name: str) -> Pattern:
    """The shipped pattern ``name`` (see :func:`shipped`), loaded and validated."""
    return load_pattern(shipped_path(name))


__all__ = ["GarmentHierarchy", "GarmentMesh", "LevelMapping", "Panel", "Pattern", "Placement", "Seam", "Wrap",
           "load_pattern", "load_shipped", "mesh_pattern", "pattern_from_dict", "shipped", "shipped_path",
           "triangle_angles", "ASSET_DIR"]

"""The Renderer's per-frame choices: how maps and ids are rasterised, which colour pass shades the
frame, and where the forward pass lights and shadows each mesh (RenderSettings' "auto" rules)."""

from __future__ import annotations

import math

import numpy as np

from .camera import Camera
from .material import Material
from .settings import (DEFERRED_MIN_TRIANGLES_PER_PIXEL, RASTER_AUTO_HARDWARE_GPU, RASTER_AUTO_SOFTWARE,
                       VERTEX_SHADING_AUTO_SOFTWARE, VERTEX_SHADING_MAX_EDGE_PX, VERTEX_SHADING_MIN_ROUGHNESS,
                       VERTEX_SHADOW_MAX_EDGE_TEXELS, VISIBILITY_AUTO_HARDWARE, VISIBILITY_AUTO_SOFTWARE, RenderSettings)
from .visibility import unsupported_reason


def raster_mode(s: RenderSettings, software_raster: bool) -> str:
    """How this frame's id pass and depth-only maps are rasterised: "compute" or "hardware"
    (RenderSettings.raster; "auto" as documented there)."""
    if s.raster != "auto":
        return s.raster
    auto = RASTER_AUTO_SOFTWARE if software_raster else RASTER_AUTO_HARDWARE_GPU
    return "compute" if auto else "hardware"


def shading_mode(s: RenderSettings, software_raster: bool, visible_items, samples: int, pixels: int,
                 vertex_lit: bool = False) -> str:
    """The colour pass's mode for settings ``s``: "forward", "deferred" or "visibility"
    (RenderSettings.shading; "auto" as documented there). ``vertex_lit``: the forward pass would
    light every visible mesh per vertex (shading_rate): then forward on software rasterisers,
    where it beat the visibility path (1 M triangles at 1080p on llvmpipe: 1212 vs 1798 ms CPU)."""
    reason = unsupported_reason(visible_items, samples)
    if s.shading == "visibility":
        return "visibility" if reason is None else "forward"
    if s.shading != "auto":
        return s.shading
    if not software_raster:
        return "visibility" if reason is None and VISIBILITY_AUTO_HARDWARE else "forward"
    tris = sum(len(m.triangles) for m in visible_items)
    if tris < DEFERRED_MIN_TRIANGLES_PER_PIXEL * pixels or vertex_lit:
        return "forward"
    return "visibility" if reason is None and VISIBILITY_AUTO_SOFTWARE else "deferred"


def vertex_shadow(s: RenderSettings, software_raster: bool, gm, texel: float) -> bool:
    """Whether the forward pass looks the key shadow up per vertex for mesh ``gm`` (render.gpu_mesh._GpuMesh)
    (RenderSettings.shadow_sampling; ``texel``: the shadow map's texel [m])."""
    if s.shadow_sampling != "auto":
        return s.shadow_sampling == "vertex"
    return (software_raster and gm.mean_edge is not None
            and gm.mean_edge <= VERTEX_SHADOW_MAX_EDGE_TEXELS * texel)


def vertex_shading(s: RenderSettings, software_raster: bool, mat: Material, gm, camera: Camera, aspect: float,
                   height: int) -> bool:
    """Whether the forward pass lights mesh ``gm`` per vertex (RenderSettings.shading_rate):
    never for textured or normal-mapped materials; "auto" as documented there, the mean edge
    projected at the distance of the mesh's centre."""
    if s.shading_rate == "pixel" or mat.textured:
        return False
    if s.shading_rate == "vertex":
        return True
    if (not (software_raster and VERTEX_SHADING_AUTO_SOFTWARE) or gm.mean_edge is None or gm.bounds is None
            or mat.roughness < VERTEX_SHADING_MIN_ROUGHNESS):
        return False
    centre = 0.5 * (gm.bounds[0] + gm.bounds[1])
    dist = max(float(np.linalg.norm(np.subtract(camera.position, centre))), 1e-6)
    _, fov_y = camera.fov(aspect)
    px_per_m = height / (2.0 * math.tan(0.5 * fov_y) * dist)
    return gm.mean_edge * px_per_m <= VERTEX_SHADING_MAX_EDGE_PX

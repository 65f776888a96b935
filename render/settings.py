"""Render settings and the pure-numpy helpers of the renderer (no GL here)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import clothsim as cs

from .lighting import SceneLights, StudioRig
from .material import parse_colour

MAX_IMAGE_SIDE = 8192
GL_SRGB8_ALPHA8 = 0x8C43
TONEMAPS = {"neutral": 0, "filmic": 1}
SHADING = ("auto", "deferred", "forward", "visibility")
RASTERS = ("auto", "compute", "hardware")
SHADOW_SAMPLINGS = ("auto", "pixel", "vertex")
# shadow_sampling "auto": per vertex on software rasterisers (forward shading) for meshes whose mean
# edge is at most this many shadow-map texels (the soft shadow's narrowest penumbra is 2.5 texels
# each side, so such a mesh samples it at least as finely as its filter does; see benchmarks/render.py)
VERTEX_SHADOW_MAX_EDGE_TEXELS = 5.0
SHADING_RATES = ("auto", "pixel", "vertex")
# shading_rate "auto": per vertex on software rasterisers (forward shading) for untextured meshes whose
# mean edge projects to at most this many pixels, with roughness >= VERTEX_SHADING_MIN_ROUGHNESS (the
# lighting of such a surface changes little across a triangle: the 100 k-triangle sheet at 1080p, mean
# edge 5.2 px, 0.85% of its pixels over 8 levels off per-pixel shading, frame 568 -> 305 ms CPU; see
# tests/test_render_vertex_lighting.py)
VERTEX_SHADING_MAX_EDGE_PX = 6.0
VERTEX_SHADING_MIN_ROUGHNESS = 0.4
# False: shading_rate "auto" always lights per pixel. The price of True, per-pixel difference on the 100 k
# sheet at 960 x 540 (2.6 px edges) under the studio rig / a side light: navy 0.8-1.7% of the cloth's
# pixels over 8 levels, red 1.1-6.0% (thin sheen lines on fold crests and self-shadow streaks placed
# slightly differently), mean over the image <= 0.21 levels, max 78
VERTEX_SHADING_AUTO_SOFTWARE = True
# raster "auto": the compute rasteriser (render.raster) on GPUs (not on software rasterisers, where
# the GL rasteriser is itself a multithreaded binning rasteriser on the CPU; see benchmarks/render.py)
RASTER_AUTO_HARDWARE_GPU = True
RASTER_AUTO_SOFTWARE = False
# "auto": deferred from this many triangles per image pixel on (1080p llvmpipe, shadows: forward was
# 1.17x faster at 0.05 triangles/px (100 k), deferred 1.8x faster at 0.48 (1 M); see benchmarks/render.py)
DEFERRED_MIN_TRIANGLES_PER_PIXEL = 0.2
# ... and only on software rasterisers: on the H200 (NVIDIA driver, EGL) the 32 B/sample G-buffer made
# the 1 M-triangle 1080p frame slower, 19.4 ms deferred against 12.3 ms forward
# (benchmarks/results/render_gpu_h200_s5.json)
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "lavapipe")
# "auto" on software rasterisers, from DEFERRED_MIN_TRIANGLES_PER_PIXEL on: the visibility path
# (where the meshes allow it) rather than deferred: 1 M triangles at 1080p on llvmpipe, 1.09-1.13 s
# vs 1.24-1.28 s a frame (forward 2.1 s); at 100 k forward stays fastest (0.63 s, visibility 0.74 s)
VISIBILITY_AUTO_SOFTWARE = True
# ... and on GPUs (all densities). H200, 1080p, 4x MSAA, texture-fetch version of the path
# (benchmarks/results/render_gpu_h200_s6b.json, medians of 9 frames): 1 M triangles 7.7 ms with the
# shadow/contact maps redrawn every frame (forward 10.6) and 4.65 ms with them reused (forward 7.6);
# 100 k 4.3 / 3.6 ms (forward 5.3 / 4.6). The 19 ms stall of the first (storage-buffer) version
# (render_gpu_h200_s6.json) is gone. Chosen from the frame's content and settings only.
VISIBILITY_AUTO_HARDWARE = True

@dataclass(frozen=True)
class RenderSettings:
    """How a frame is made.

    Attributes:
        width, height: image size [px], 1..8192 each.
        samples: MSAA samples (1 = off; clamped to what the driver offers).
        transparent: background alpha 0; the ground shows only its shadow (PNG with alpha).
        background: sRGB backdrop colour (opaque mode); the floor matches it seamlessly.
        tonemap: "neutral" (Khronos PBR Neutral) or "filmic" (ACES fit).
        exposure: linear multiplier before the tone map.
        shadows: key-light shadow map and ground contact shadow.
        ground: draw the shadow-catching floor at the lowest point of all meshes (or ``ground_y``).
        ground_y: floor height [m]; None = lowest vertex of all meshes.
        shadow_map_size, contact_map_size: [px].
        shading: "deferred" (a G-buffer pass, then each pixel's distinct MSAA samples shaded
            once, the resolve folded in), "visibility" (a triangle id per sample, then a compute
            shader reconstructs and shades each pixel's distinct triangles and resolves:
            render.visibility; frames it cannot take, e.g. more than 64 visible meshes or a
            textured one after the 6th, are drawn forward), "forward" (every fragment shaded; used
            anyway for 1 sample, overlays and window framebuffers) or "auto" (default: on a
            software rasteriser such as llvmpipe, visibility (else deferred) when the visible meshes
            have >= DEFERRED_MIN_TRIANGLES_PER_PIXEL triangles per image pixel, where small
            triangles make forward shading wasteful, unless the forward pass lights them all per
            vertex (shading_rate), else forward; on a GPU forward, or visibility
            with VISIBILITY_AUTO_HARDWARE). Same image within a few levels at edges.
        raster: how the id pass (visibility shading) and the depth-only shadow and contact maps
            are rasterised: "compute" (a compute shader per triangle, render.raster: on GPUs whose
            graphics pipeline runs on a few units, such as the H100/H200, it is not bound by their
            triangle rate), "hardware" (the GL rasteriser) or "auto" (default: compute on GPUs,
            hardware on software rasterisers such as llvmpipe). The same ids and depths up to
            samples exactly on a shared edge or at equal depth.
        shadow_sampling: where the forward pass looks the key light's soft shadow up: "pixel"
            (every fragment), "vertex" (once per vertex, interpolated: on a dense mesh the same
            shadow at a fraction of the cost on a software rasteriser, where the lookups were half
            the frame) or "auto" (default: vertex for meshes whose mean edge is at most
            VERTEX_SHADOW_MAX_EDGE_TEXELS shadow-map texels, on software rasterisers only; else
            pixel). The other shading modes look up per pixel.
        shading_rate: where the forward pass lights untextured surfaces: "pixel" (every fragment),
            "vertex" (once per vertex and side, interpolated (Gouraud), including the shadow lookup;
            meshes with textures or a normal map stay per pixel) or "auto" (default: vertex on
            software rasterisers for meshes whose mean edge projects to at most
            VERTEX_SHADING_MAX_EDGE_PX pixels and whose roughness is at least
            VERTEX_SHADING_MIN_ROUGHNESS; else pixel). The other shading modes light per pixel.
        reuse_maps: keep the key shadow map and the contact map while the meshes' positions and
            the light's projection are unchanged (views of one drape under scene lights, or the
            same view again); False redraws them every frame.
        rig: the lights: the camera-relative :class:`StudioRig` (default) or world-fixed
            :class:`SceneLights` (a list of SceneLight is wrapped into one).
    """

    width: int = 512
    height: int = 512
    samples: int = 4
    transparent: bool = False
    background: tuple[float, float, float] | str = "#f3f2f0"
    tonemap: str = "neutral"
    exposure: float = 0.8
    shadows: bool = True
    ground: bool = True
    ground_y: float | None = None
    shadow_map_size: int = 2048
    contact_map_size: int = 512
    rig: StudioRig | SceneLights = field(default_factory=StudioRig)
    shading: str = "auto"
    reuse_maps: bool = True
    raster: str = "auto"
    shadow_sampling: str = "auto"
    shading_rate: str = "auto"

    def __post_init__(self) -> None:
        for key in ("width", "height"):
            v = getattr(self, key)
            if not isinstance(v, (int, np.integer)) or not (1 <= v <= MAX_IMAGE_SIDE):
                raise cs.InputError(f"image {key} must be an integer in [1, {MAX_IMAGE_SIDE}] px, got {v!r}")
        if self.tonemap not in TONEMAPS:
            raise cs.InputError(f"tonemap must be one of {', '.join(TONEMAPS)}, got {self.tonemap!r}")
        if self.shading not in SHADING:
            raise cs.InputError(f"shading must be one of {', '.join(SHADING)}, got {self.shading!r}")
        if self.shadow_sampling not in SHADOW_SAMPLINGS:
            raise cs.InputError(f"shadow_sampling must be one of {', '.join(SHADOW_SAMPLINGS)}, got {self.shadow_sampling!r}")
        if self.shading_rate not in SHADING_RATES:
            raise cs.InputError(f"shading_rate must be one of {', '.join(SHADING_RATES)}, got {self.shading_rate!r}")
        if self.raster not in RASTERS:
            raise cs.InputError(f"raster must be one of {', '.join(RASTERS)}, got {self.raster!r}")
        if self.samples < 1:
            raise cs.InputError(f"samples must be >= 1, got {self.samples}")
        object.__setattr__(self, "background", parse_colour(self.background))
        if isinstance(self.rig, (list, tuple)):
            object.__setattr__(self, "rig", SceneLights(tuple(self.rig)))
        if not isinstance(self.rig, (StudioRig, SceneLights)):
            raise cs.InputError(f"rig must be a StudioRig or SceneLights, got {type(self.rig).__name__}")


def vertex_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals, (N, 3) float32 (bincount; fast for 1M triangles)."""
    v = vertices.astype(np.float32, copy=False)
    t = triangles
    fn = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    n = np.empty_like(v)
    idx = t.ravel()
    for k in range(3):
        n[:, k] = np.bincount(idx, weights=np.repeat(fn[:, k], 3), minlength=len(v))
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return n / np.where(length > 0, length, 1.0)


def _bounds(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of (N, 3) points. Column-wise: numpy's axis-0 reduction over (N, 3) is ~30x slower."""
    return (np.array([v[:, k].min() for k in range(3)], np.float64),
            np.array([v[:, k].max() for k in range(3)], np.float64))


def _ortho(left, right, bottom, top, near, far) -> np.ndarray:
    m = np.eye(4)
    m[0, 0] = 2.0 / (right - left)
    m[1, 1] = 2.0 / (top - bottom)
    m[2, 2] = -2.0 / (far - near)
    m[0, 3] = -(right + left) / (right - left)
    m[1, 3] = -(top + bottom) / (top - bottom)
    m[2, 3] = -(far + near) / (far - near)
    return m


def mean_edge_length(vertices: np.ndarray, triangles: np.ndarray, samples: int = 4096) -> float:
    """Mean triangle edge length [m] of a mesh, estimated from up to ``samples`` triangles spread
    evenly over the index list (O(samples), so it can run on every upload)."""
    if len(triangles) == 0:
        return 0.0
    step = max(len(triangles) // samples, 1)
    t = triangles[::step]
    v = vertices
    e = (np.linalg.norm(v[t[:, 1]] - v[t[:, 0]], axis=1) + np.linalg.norm(v[t[:, 2]] - v[t[:, 1]], axis=1)
         + np.linalg.norm(v[t[:, 0]] - v[t[:, 2]], axis=1))
    return float(e.mean() / 3.0)

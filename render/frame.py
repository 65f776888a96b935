"""One frame of the Renderer: what its passes share (sizes, camera, bounds, lights, the shadow and
contact maps once drawn), the uniform bindings every shading pass reads, and the per-pass clock.

A Frame lives for one ``Renderer.render`` call; the GL objects it refers to belong to the Renderer.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .camera import Camera
from .gl import mat4_bytes as _f32, set_uniform as _set
from .settings import TONEMAPS, RenderSettings


class PassClock:
    """``mark(name)`` after each pass: with ``renderer.profile`` it waits for the GL (glFinish) and adds the
    pass's wall time [s] to ``renderer.stats``; names in ``renderer.finish_after`` wait without timing."""

    def __init__(self, renderer) -> None:
        self.renderer = renderer
        self.t = time.perf_counter()

    def mark(self, name: str) -> None:
        r = self.renderer
        if name in r.finish_after and not r.profile:
            r.ctx.finish()
        if r.profile:
            r.ctx.finish()
            t = time.perf_counter()
            r.stats[name] = r.stats.get(name, 0.0) + t - self.t
            self.t = t


@dataclass
class Frame:
    """What the passes of one frame share. Lengths [m]; matrices 4x4 float64, column vectors."""

    s: RenderSettings
    meshes: list                  # MeshItems, in draw order
    gms: list                     # their GL mirrors (render.gpu_mesh._GpuMesh)
    camera: Camera
    sheen_lut: object             # the Renderer's sheen albedo table (texture)
    compute: bool                 # maps and ids from the compute rasteriser
    lo: np.ndarray                # bounds of all meshes
    hi: np.ndarray
    center: np.ndarray
    radius: float
    ground_y: float
    near: float
    far: float
    view_proj: np.ndarray
    lights: object                # render.lighting resolved rig
    w: int = 0                    # image size [px]
    h: int = 0
    aspect: float = 1.0
    key_dir: np.ndarray | None = None   # towards the key light (None: no key shadow)
    key_shadow: bool = False      # shadows on and a key light that casts them
    draw_ground: bool = False     # the ground catcher (shadows on the floor)
    bg_srgb: np.ndarray | None = None   # the backdrop colour (sRGB)
    tonemap: int = 0              # TONEMAPS[settings.tonemap]
    # the floor around the meshes where a shadow can fall (with shadows on)
    s_lo: np.ndarray | None = None
    s_hi: np.ndarray | None = None
    # key-light shadow map (render.passes.maps.draw_shadow_map)
    shadow_objs: tuple | None = None
    light_vp: np.ndarray | None = None
    s_radius: float = 0.0
    light_size_uv: float = 0.0
    # contact map (render.passes.maps.draw_contact_map)
    contact_objs: tuple | None = None
    contact_vp: np.ndarray | None = None
    contact_lod: float = 0.0
    blur_px: float = 0.0

    @classmethod
    def start(cls, s: RenderSettings, meshes, gms, camera: Camera, los, his, sheen_lut, compute: bool) -> "Frame":
        """Bounds of the meshes (``los``/``his``: each mesh's), near/far planes fitted to them, the view and
        the lights; with shadows, the floor region the key's shadow can reach."""
        lo = np.min(los, axis=0).astype(np.float64)
        hi = np.max(his, axis=0).astype(np.float64)
        center = 0.5 * (lo + hi)
        radius = max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)
        ground_y = float(lo[1]) if s.ground_y is None else float(s.ground_y)
        dist = float(np.linalg.norm(np.subtract(camera.position, center)))
        near = camera.near or max(0.02 * dist, dist - 2.5 * radius, 1e-3)
        far = camera.far or (dist + 5.0 * radius)
        view = camera.view_matrix()
        proj = camera.projection_matrix(s.width / s.height, near, far)
        lights = s.rig.resolve(camera)
        f = cls(s, meshes, gms, camera, sheen_lut, compute, lo, hi, center, radius, ground_y, near, far, proj @ view,
                lights, w=s.width, h=s.height, aspect=s.width / s.height, key_dir=lights.shadow_dir,
                key_shadow=s.shadows and lights.shadow_dir is not None, draw_ground=s.ground and s.shadows,
                bg_srgb=np.asarray(s.background), tonemap=TONEMAPS[s.tonemap])
        if s.shadows:
            if f.key_shadow:
                # the shadow of the top reaches height / tan(elevation) sideways across the floor
                key_el = max(math.asin(min(max(f.key_dir[1], -1.0), 1.0)), math.radians(15.0))
                floor_pad = (hi[1] - ground_y) / math.tan(key_el) + 0.15 * radius
            else:
                floor_pad = 0.3 * radius
            f.s_lo = np.array([lo[0] - floor_pad, ground_y, lo[2] - floor_pad])
            f.s_hi = np.array([hi[0] + floor_pad, hi[1], hi[2] + floor_pad])
        return f

    @property
    def clear_colour(self) -> tuple:
        """What the shading passes write where nothing was drawn (sRGB, alpha)."""
        return (0.0, 0.0, 0.0, 0.0) if self.s.transparent else (*self.bg_srgb, 1.0)

    @property
    def ground_extent(self) -> tuple:
        return (self.s_lo[0], self.s_lo[2], self.s_hi[0], self.s_hi[2])

    # ------------------------------------------------------------------ uniforms
    def bind_shadows(self, prog) -> None:
        self.shadow_objs[2].use(location=1)
        self.shadow_objs[3].use(location=2)
        _set(prog, "u_shadow_cmp", 1)
        _set(prog, "u_shadow_depth", 2)
        _set(prog, "u_light_view_proj", _f32(self.light_vp))
        _set(prog, "u_light_size_uv", self.light_size_uv)
        _set(prog, "u_shadow_bias", 0.0015)

    def bind_lighting(self, prog) -> None:
        """Lights, environment, sheen table, exposure, shadow map: what shade_surface reads."""
        lights = self.lights
        _set(prog, "u_camera_pos", tuple(self.camera.position))
        _set(prog, "u_exposure", self.s.exposure)
        self.sheen_lut.use(location=0)
        _set(prog, "u_sheen_lut", 0)
        _set(prog, "u_env_intensity", lights.env_intensity)
        _set(prog, "u_env_top", lights.env_top)
        _set(prog, "u_env_horizon", lights.env_horizon)
        _set(prog, "u_env_bottom", lights.env_bottom)
        if lights.count:
            _set(prog, "u_light_vec", lights.vec.tobytes())
            _set(prog, "u_light_radiance", lights.radiance.tobytes())
            _set(prog, "u_light_axis", lights.axis.tobytes())
            _set(prog, "u_light_cone", lights.cone.tobytes())
        if self.key_shadow:
            self.bind_shadows(prog)

    def bind_ground(self, prog) -> None:
        s_lo, s_hi = self.s_lo, self.s_hi
        _set(prog, "u_view_proj", _f32(self.view_proj))
        _set(prog, "u_ground_y", self.ground_y)
        # only where a shadow can fall (the key's shadow-map footprint on the floor); outside
        # it the cleared backdrop is the same colour, so the floor needs no shading there
        _set(prog, "u_ground_extent", self.ground_extent)
        _set(prog, "u_ground_fade", 0.25 * min(s_hi[0] - s_lo[0], s_hi[2] - s_lo[2]))
        _set(prog, "u_background", tuple(self.bg_srgb))
        _set(prog, "u_shadow_strength", 0.38)
        _set(prog, "u_contact_strength", 0.55)
        if self.key_shadow:
            self.bind_shadows(prog)
        self.contact_objs[1].use(location=5)
        _set(prog, "u_contact_occ", 5)
        _set(prog, "u_contact_view_proj", _f32(self.contact_vp))
        _set(prog, "u_contact_lod", self.contact_lod)
        _set(prog, "u_contact_radius_uv", self.blur_px / self.s.contact_map_size)

"""The colour pass of a frame into the MSAA target: "forward" (shade every fragment; the preview window
and overlays), "deferred" (a G-buffer of each sample's surface) or "visibility" (a triangle id per sample,
from the GL rasteriser or the compute rasteriser), then the ground catcher."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import clothsim as cs

from ..gl import mat4_bytes as _f32, set_uniform as _set
from ..material import Material, srgb_to_linear
from ..shading_modes import shading_mode, vertex_shading, vertex_shadow
from ..visibility import GROUND_OBJECT, object_bits

GROUND_SLOT = 4095   # the floor's slot in the G-buffer (meshes are 1, 2, ...; 0 = nothing drawn)
MAX_ID_BUFFER_BYTES = 2 ** 31   # the compute id pass's storage buffer, at most


@dataclass
class ColourPass:
    """How a frame's colour pass draws and what it leaves for the shading pass."""

    mode: str                     # "forward", "deferred" or "visibility"
    samples: int                  # MSAA samples asked for (clamped to the driver's)
    compute_ids: bool             # visibility ids from the compute rasteriser
    visible_items: list           # the MeshItems with visible materials
    visible: list = field(default_factory=list)   # their materials, in slot order (set while drawing)
    fbo: object = None            # the framebuffer drawn into (None: compute ids)
    g: tuple | None = None        # deferred: the G-buffer target
    vis: tuple | None = None      # visibility: the id target (or, compute ids, the output image alone)
    vis_ids: object = None        # compute ids: the id buffer and its sample count
    vis_samples: int | None = None
    inv_vp: np.ndarray | None = None

    @property
    def deferred(self) -> bool:
        return self.mode == "deferred"

    @property
    def visibility(self) -> bool:
        return self.mode == "visibility"


def choose_colour_pass(r, f, overlay, framebuffer) -> ColourPass:
    """The colour pass's mode and sample count for frame ``f``; sets ``r.frame_info`` ("shading", and
    "raster" when the ids fall back to the GL rasteriser). Overlays and window framebuffers take forward."""
    s, w, h = f.s, f.w, f.h
    samples = max(1, min(s.samples, r.max_samples))
    visible_items = [m for m in f.meshes if m.material.visible]
    vertex_lit = bool(visible_items) and all(
        vertex_shading(s, r.software_raster, item.material, gm, f.camera, f.aspect, h)
        for item, gm in zip(f.meshes, f.gms) if item.material.visible)
    mode = shading_mode(s, r.software_raster, visible_items, samples, w * h, vertex_lit)
    if mode != "forward" and (overlay is not None or framebuffer is not None or samples < 2):
        mode = "forward"
    visibility = mode == "visibility"
    r.frame_info["shading"] = mode
    # the compute id pass keeps 8 bytes per sample in one storage buffer: up to 2 GiB (4x MSAA up to
    # ~8k x 8k); beyond, the GL id pass
    compute_ids = (visibility and f.compute
                   and w * h * len(r.compute_raster.sample_positions(samples)) * 8 <= MAX_ID_BUFFER_BYTES)
    if visibility and f.compute and not compute_ids:
        r.frame_info["raster"] = "compute maps, hardware ids"
    return ColourPass(mode, samples, compute_ids, visible_items)


def begin_colour_pass(r, f, cp: ColourPass) -> None:
    """Bind and clear the colour pass's target; depth test on, no culling, no blending."""
    ctx, w, h, samples = r.ctx, f.w, f.h, cp.samples
    if cp.deferred:
        cp.g = r._target("gbuffer", (w, h), samples)
        cp.fbo = cp.g[0]
        cp.fbo.use()
        cp.fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)       # slot 0: nothing drawn
    elif cp.compute_ids:   # ids from the compute rasteriser (draw_compute_ids)
        cp.fbo = None
        cp.vis = (None, None, None, *r._target("visibility_out", (w, h)))
    elif cp.visibility:
        cp.vis = r._target("visibility", (w, h), samples)
        cp.fbo = cp.vis[0]
        cp.fbo.use()
        cp.fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)       # id 0: nothing drawn
    else:
        msaa = r._target("msaa", (w, h), samples if samples > 1 else 0)
        cp.fbo = msaa[0]
        cp.fbo.use()
        if f.s.transparent:
            cp.fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        else:
            cp.fbo.clear(*f.bg_srgb, 1.0, depth=1.0)
    ctx.enable(ctx.DEPTH_TEST)
    ctx.disable(ctx.CULL_FACE)
    ctx.disable(ctx.BLEND)


def draw_meshes(r, f, cp: ColourPass) -> None:
    """The visible meshes into the colour target (none with compute ids: only their slots are counted)."""
    for item, gm in zip(f.meshes, f.gms):
        mat: Material = item.material
        if not mat.visible:
            continue
        cp.visible.append(mat)
        uv_ok = item.uvs is not None
        if mat.textured and not uv_ok:
            raise cs.InputError(f"mesh {item.name!r}: material {mat.name!r} has textures but the mesh has no uvs")
        uv_ok = uv_ok and mat.textured
        if cp.compute_ids:
            continue
        if cp.visibility:   # positions only; the compute pass fetches the rest by triangle id
            prog = r.programs.get("depth.vert", "visibility.frag")
            _set(prog, "u_view_proj", _f32(f.view_proj))
            _set(prog, "u_object", object_bits(len(cp.visible) - 1))
            cp.fbo.use()
            r._vao(gm, prog, False, True).render()
            continue
        _draw_mesh(r, f, cp, item, gm, uv_ok)


def _draw_mesh(r, f, cp: ColourPass, item, gm, uv_ok: bool) -> None:
    """One mesh, forward-shaded or into the G-buffer."""
    s, mat, deferred = f.s, item.material, cp.deferred
    vertex_shaded = not deferred and vertex_shading(s, r.software_raster, mat, gm, f.camera, f.aspect, f.h)
    vertex_shadowed = f.key_shadow and not deferred and (
        vertex_shaded or vertex_shadow(s, r.software_raster, gm, 2.0 * f.s_radius / s.shadow_map_size))
    if vertex_shadowed:
        r.frame_info["shadow_sampling"] = "vertex"
    if vertex_shaded:
        r.frame_info["shading_rate"] = "vertex"
    defines = {"HAS_UV": uv_ok, "HAS_BASE_TEXTURE": mat.base_texture is not None, "VERTEX_SHADOW": vertex_shadowed,
               "VERTEX_SHADING": vertex_shaded,
               "HAS_NORMAL_MAP": mat.normal_map is not None,
               "HAS_MR_TEXTURE": mat.metallic_roughness_texture is not None}
    if deferred:
        defines["GBUFFER"] = True
    else:
        defines.update({"TONEMAP": f.tonemap, "SHADOWS": f.key_shadow, "LIGHT_COUNT": f.lights.count})
    prog = r.programs.get("mesh.vert", "mesh.frag", defines)
    _set(prog, "u_view_proj", _f32(f.view_proj))
    _set(prog, "u_base_color", tuple(srgb_to_linear(mat.base_color)) + (1.0,))
    _set(prog, "u_metallic", mat.metallic)
    _set(prog, "u_roughness", mat.roughness)
    if deferred:
        _set(prog, "u_slot", float(len(cp.visible)))
    else:
        _set(prog, "u_sheen_color", tuple(srgb_to_linear(mat.sheen_color)))
        _set(prog, "u_sheen_roughness", mat.sheen_roughness)
        f.bind_lighting(prog)
    if mat.textured:
        _set(prog, "u_uv_scale", tuple(mat.uv_scale))
    if mat.base_texture is not None:
        r._texture(mat.base_texture, srgb=True).use(location=3)
        _set(prog, "u_base_texture", 3)
    if mat.normal_map is not None:
        r._texture(mat.normal_map, srgb=False).use(location=4)
        _set(prog, "u_normal_map", 4)
        _set(prog, "u_normal_scale", (mat.normal_scale, -mat.normal_scale if mat.normal_y_flip else mat.normal_scale))
    if mat.metallic_roughness_texture is not None:
        r._texture(mat.metallic_roughness_texture, srgb=False).use(location=6)
        _set(prog, "u_mr_texture", 6)
    cp.fbo.use()
    r._vao(gm, prog, uv_ok, False).render()


def draw_compute_ids(r, f, cp: ColourPass) -> None:
    """Visibility ids of the visible meshes (and the floor) from the compute rasteriser."""
    vis_gms = [gm for item, gm in zip(f.meshes, f.gms) if item.material.visible]
    ground = (f.ground_y, f.ground_extent) if f.draw_ground else None
    cp.inv_vp = np.linalg.inv(f.view_proj)
    cp.vis_ids, cp.vis_samples = r.compute_raster.ids(vis_gms, [object_bits(k) for k in range(len(vis_gms))],
                                                      f.view_proj, (f.w, f.h), cp.samples, ground, cp.inv_vp)


def draw_ground(r, f, cp: ColourPass) -> None:
    """The ground catcher, drawn after the meshes: the depth test keeps it behind them, and it never
    overwrites cloth."""
    ctx, s = r.ctx, f.s
    if cp.visibility:
        prog = r.programs.get("ground.vert", "visibility.frag")
        _set(prog, "u_view_proj", _f32(f.view_proj))
        _set(prog, "u_ground_y", f.ground_y)
        _set(prog, "u_ground_extent", f.ground_extent)
        _set(prog, "u_object", GROUND_OBJECT << 24)
    elif cp.deferred:
        prog = r.programs.get("ground.vert", "ground.frag", {"GBUFFER": True})
        _set(prog, "u_view_proj", _f32(f.view_proj))
        _set(prog, "u_ground_y", f.ground_y)
        _set(prog, "u_ground_extent", f.ground_extent)
        _set(prog, "u_slot", float(GROUND_SLOT))
    else:
        prog = r.programs.get("ground.vert", "ground.frag", {"TRANSPARENT": s.transparent, "KEY_SHADOW": f.key_shadow})
        f.bind_ground(prog)
    cp.fbo.use()
    ctx.depth_func = "<="
    r._ground_vao(prog).render(mode=ctx.TRIANGLE_STRIP, vertices=4)
    ctx.depth_func = "<"

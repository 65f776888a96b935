"""Depth-only maps of a frame: the key light's shadow map (PCSS, orthographic, fitted to the meshes and
the floor around them) and the ground contact map (occlusion of the lowest surface seen from the floor).
Either map is kept while the meshes and its view stay the same (RenderSettings.reuse_maps)."""

from __future__ import annotations

import math

import numpy as np

from ..camera import Camera
from ..gl import mat4_bytes as _f32, set_uniform as _set
from ..settings import _ortho


def draw_shadow_map(r, f) -> None:
    """The key light's shadow map into the Renderer ``r``'s depth target; sets ``f.shadow_objs``,
    ``f.light_vp``, ``f.s_radius``, ``f.light_size_uv`` and ``r.frame_info["shadow_map"]``."""
    s, ctx, key_dir = f.s, r.ctx, f.key_dir
    s_center = 0.5 * (f.s_lo + f.s_hi)
    s_radius = 0.5 * float(np.linalg.norm(f.s_hi - f.s_lo))
    light_cam = Camera(position=tuple(s_center + key_dir * 2.0 * s_radius), target=tuple(s_center),
                       up=(0.0, 1.0, 0.0) if abs(key_dir[1]) < 0.99 else (0.0, 0.0, 1.0), name="key")
    light_vp = _ortho(-s_radius, s_radius, -s_radius, s_radius, s_radius * 0.5, s_radius * 3.5) @ light_cam.view_matrix()
    size = (s.shadow_map_size, s.shadow_map_size)
    shadow_objs = r._target("depth", size)
    map_key = ("shadow", tuple(gm.version for gm in f.gms), light_vp.tobytes())
    target_key = ("depth", size, 0)
    if not s.reuse_maps or r._map_keys.get(target_key) != map_key:
        if f.compute:
            r.compute_raster.depth_map(f.gms, light_vp, size, shadow_objs[0])
        else:
            fbo = shadow_objs[0]
            fbo.use()
            fbo.clear(depth=1.0)
            ctx.enable(ctx.DEPTH_TEST)
            ctx.disable(ctx.CULL_FACE)
            r._draw_depth(f.meshes, f.gms, light_vp)
        r._map_keys[target_key] = map_key
        r.frame_info["shadow_map"] = "drawn"
    else:
        r.frame_info["shadow_map"] = "reused"
    depth_range = 3.0 * s_radius
    f.shadow_objs, f.light_vp, f.s_radius = shadow_objs, light_vp, s_radius
    f.light_size_uv = depth_range * math.tan(math.radians(f.lights.key_angle_deg)) / (2.0 * s_radius)


def draw_contact_map(r, f) -> None:
    """The contact map: from the floor looking up, occlusion of the lowest surface (mipmapped: the blur);
    sets ``f.contact_objs``, ``f.contact_vp``, ``f.contact_lod``, ``f.blur_px`` and
    ``r.frame_info["contact_map"]``."""
    s, ctx, lo, hi, center, ground_y = f.s, r.ctx, f.lo, f.hi, f.center, f.ground_y
    contact_h0 = 0.04 * (hi[1] - ground_y) + 0.004
    c_half = float(max(hi[0] - lo[0], hi[2] - lo[2])) * 0.5 + 0.3 * f.radius
    c_cam = Camera(position=(center[0], ground_y - 1e-4, center[2]), target=(center[0], ground_y + 1.0, center[2]),
                   up=(0.0, 0.0, -1.0), name="contact")
    contact_vp = _ortho(-c_half, c_half, -c_half, c_half, 0.0, 12.0 * contact_h0) @ c_cam.view_matrix()
    size = (s.contact_map_size, s.contact_map_size)
    contact_objs = r._target("contact", size)
    # (either rasteriser's map serves both: the same depths and heights up to edge ties)
    map_key = ("contact", tuple(gm.version for gm in f.gms), contact_vp.tobytes(), ground_y, contact_h0)
    target_key = ("contact", size, 0)
    if f.compute and (not s.reuse_maps or r._map_keys.get(target_key) != map_key):
        r.compute_raster.contact_map(f.gms, contact_vp, size, ground_y, contact_h0, contact_objs[1])
        contact_objs[1].build_mipmaps()
        r._map_keys[target_key] = map_key
        r.frame_info["contact_map"] = "drawn"
    elif not s.reuse_maps or r._map_keys.get(target_key) != map_key:
        contact_objs[0].use()
        contact_objs[0].clear(0.0, 0.0, 0.0, 0.0)
        ctx.disable(ctx.DEPTH_TEST)
        ctx.enable(ctx.BLEND)
        ctx.blend_equation = ctx.MAX
        prog = r.programs.get("contact.vert", "contact.frag")
        _set(prog, "u_view_proj", _f32(contact_vp))
        _set(prog, "u_ground_y", ground_y)
        _set(prog, "u_contact_height", contact_h0)
        for gm in f.gms:
            r._vao(gm, prog, False, True).render()
        ctx.blend_equation = ctx.FUNC_ADD
        ctx.disable(ctx.BLEND)
        contact_objs[1].build_mipmaps()
        r._map_keys[target_key] = map_key
        r.frame_info["contact_map"] = "drawn"
    else:
        r.frame_info["contact_map"] = "reused"
    # blur radius ~ 2.5% of the contact map's width
    f.contact_objs, f.contact_vp = contact_objs, contact_vp
    f.blur_px = 0.025 * s.contact_map_size
    f.contact_lod = math.log2(max(f.blur_px, 1.0))

"""After the colour pass: shading of the visibility ids (a compute shader that reconstructs, shades
and resolves each pixel; render.visibility) or of the G-buffer (a full-screen pass over each pixel's
distinct samples), the MSAA resolve of the forward pass, and the readback to numpy."""

from __future__ import annotations

import math

import numpy as np

from ..gl import mat4_bytes as _f32, set_uniform as _set
from ..material import srgb_to_linear
from ..visibility import GEOMETRY_UNIT, LOCAL_SIZE, MAX_TEXTURED_SLOT, TEX_WIDTH, material_uniforms, slot_defines
from .colour import GROUND_SLOT, ColourPass


def shade_visibility(r, f, cp: ColourPass):
    """Per pixel, reconstruct and shade each distinct triangle, resolve, tone map; returns the framebuffer
    of the shaded image."""
    ctx, s, w, h = r.ctx, f.s, f.w, f.h
    vis, vis_ids, visible_items = cp.vis, cp.vis_ids, cp.visible_items
    defines = {"SAMPLES": cp.vis_samples if vis_ids is not None else r._texture_samples(cp.samples),
               "COMPUTE_IDS": vis_ids is not None, "GEOMETRY_BUFFERS": r._vis_geometry.use_buffers,
               "LIGHT_COUNT": f.lights.count,
               "SHADOWS": f.key_shadow,
               "KEY_SHADOW": f.key_shadow, "TRANSPARENT": s.transparent, "HAS_GROUND": f.draw_ground,
               "TONEMAP": f.tonemap, "MERGE": r.visibility_merge, "TEX_WIDTH": TEX_WIDTH, **slot_defines(visible_items)}
    prog = r.programs.get_compute("visibility.comp", defines)
    f.bind_lighting(prog)
    if f.draw_ground:
        f.bind_ground(prog)
    vis_gms = [gm for item, gm in zip(f.meshes, f.gms) if item.material.visible]
    r._vis_geometry.bind(visible_items, vis_gms, defines["UV_MASK"], first_unit=GEOMETRY_UNIT)
    _set(prog, "u_vertex_base", r._vis_geometry.vertex_base.tobytes())
    _set(prog, "u_triangle_base", r._vis_geometry.triangle_base.tobytes())
    for name, value in material_uniforms(visible_items).items():
        _set(prog, name, value)
    # llvmpipe: material textures through a sampler without anisotropy (its anisotropic
    # filter reads quad derivatives, which a compute shader lacks: blurred or wrong texels
    # even with textureGrad/textureLod)
    iso = r._isotropic_sampler() if r.software_raster else None
    iso_units = []
    for k, item in enumerate(visible_items[:MAX_TEXTURED_SLOT]):
        mat = item.material
        kinds = ((mat.base_texture, True), (mat.normal_map, False), (mat.metallic_roughness_texture, False))
        for unit, (path, srgb) in zip((8, 8 + MAX_TEXTURED_SLOT, 8 + 2 * MAX_TEXTURED_SLOT), kinds):
            if path is not None and item.uvs is not None:
                r._texture(path, srgb=srgb).use(location=unit + k)
                if iso is not None:
                    iso.use(location=unit + k)
                    iso_units.append(unit + k)
    if vis_ids is not None:
        vis_ids.bind_to_storage_buffer(4)
    else:
        vis[1].use(location=7)
        _set(prog, "u_vis", 7)
    vis[3].bind_to_image(0, read=False, write=True)
    inv_vp = cp.inv_vp if vis_ids is not None else np.linalg.inv(f.view_proj)
    _set(prog, "u_inv_view_proj", _f32(inv_vp))
    _set(prog, "u_size", (w, h))
    _set(prog, "u_ground_y", f.ground_y)
    _set(prog, "u_clear", f.clear_colour)
    prog.run((w + LOCAL_SIZE - 1) // LOCAL_SIZE, (h + LOCAL_SIZE - 1) // LOCAL_SIZE, 1)
    ctx.memory_barrier()
    for unit in iso_units:
        iso.clear(location=unit)
    return vis[4]


def shade_deferred(r, f, cp: ColourPass):
    """Shade each pixel's distinct G-buffer samples once, tone map, average (the resolve folded in);
    returns the framebuffer of the shaded image."""
    ctx, s, h = r.ctx, f.s, f.h
    visible = cp.visible
    src = r._target("resolve", (f.w, h))[0]
    src.use()
    ctx.disable(ctx.DEPTH_TEST)
    defines = {"SAMPLES": r._texture_samples(cp.samples), "SLOTS": max(len(visible), 1),
               "GROUND_SLOT": GROUND_SLOT,
               "LIGHT_COUNT": f.lights.count, "SHADOWS": f.key_shadow, "KEY_SHADOW": f.key_shadow,
               "TRANSPARENT": s.transparent, "HAS_GROUND": f.draw_ground, "TONEMAP": f.tonemap}
    prog = r.programs.get("deferred.vert", "deferred.frag", defines)
    f.bind_lighting(prog)
    if f.draw_ground:
        f.bind_ground(prog)
    for loc, (name, tex) in enumerate(zip(("u_g_position", "u_g_normal", "u_g_base"), cp.g[1:4]), start=7):
        tex.use(location=loc)
        _set(prog, name, loc)
    _set(prog, "u_clear", f.clear_colour)
    _, fov_y = f.camera.fov(f.aspect)
    _set(prog, "u_merge_scale", 0.5 * 2.0 * math.tan(0.5 * fov_y) / h)
    if visible:
        _set(prog, "u_sheen_colors", np.array([srgb_to_linear(m.sheen_color) for m in visible], np.float32).tobytes())
        _set(prog, "u_sheen_roughnesses",
             np.array([min(max(m.sheen_roughness, 0.03), 1.0) for m in visible], np.float32).tobytes())
    r._ground_vao(prog).render(mode=ctx.TRIANGLES, vertices=3)
    ctx.enable(ctx.DEPTH_TEST)
    return src


def resolve(r, f, cp: ColourPass):
    """The MSAA colour target averaged into a single-sampled one; returns it."""
    src = r._target("resolve", (f.w, f.h))[0]
    r.ctx.copy_framebuffer(src, cp.fbo)
    return src


def read_back(src, f) -> np.ndarray:
    """The image of framebuffer ``src`` as (H, W, 4) uint8, top row first, alpha as drawn (premultiplied)."""
    # read straight into a fresh array (no zero fill, no intermediate bytes) and return it
    # flipped as a view (GL's first row is the bottom one): no extra 8 MB copy at 1080p
    buf = np.empty((f.h, f.w, 4), dtype=np.uint8)
    src.read_into(buf, components=4, alignment=1)
    return buf[::-1]


def _unpremultiply(img: np.ndarray) -> np.ndarray:
    """Premultiplied RGBA (what the resolve averaged) -> straight alpha, as PNG stores it."""
    a = img[..., 3:4].astype(np.float32)
    rgb = img[..., :3].astype(np.float32)
    out = img.copy()
    out[..., :3] = np.where(a > 0, np.clip(np.round(rgb * 255.0 / np.maximum(a, 1.0)), 0, 255), 0).astype(np.uint8)
    return out

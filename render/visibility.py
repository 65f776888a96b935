"""The visibility-buffer path's data: triangle ids, per-slot material uniforms, mesh buffers.

The main raster pass writes one 32-bit id per MSAA sample (``shaders/visibility.frag``): the
object in bits 24-31 (mesh slot + 1; :data:`GROUND_OBJECT` the floor; 0 nothing drawn) and the
triangle's index in its draw call in bits 0-23. ``shaders/visibility.comp`` then fetches each
distinct triangle's vertices from vertex textures and shades it. This module holds the pure parts
(limits, defines, uniform arrays) and :class:`VisibilityGeometry`, the vertex textures of a frame.
No GL objects are created outside a Renderer's context.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .material import Material, MeshItem, srgb_to_linear

GROUND_OBJECT = 255
MAX_SLOTS = 64            # meshes per frame (uniform arrays of the compute shader)
MAX_TEXTURED_SLOT = 6     # textured meshes must be among the first 6 (texture units 8..25)
GEOMETRY_UNIT = 26        # first of the 4 texture units of VisibilityGeometry (26..29)
MAX_TRIANGLES = 1 << 24   # per mesh (24-bit primitive id)
LOCAL_SIZE = 8            # visibility.comp's work group is LOCAL_SIZE x LOCAL_SIZE pixels


def object_bits(slot: int) -> int:
    """The id's high byte for mesh ``slot`` (0-based), as visibility.frag's ``u_object``."""
    return (slot + 1) << 24


def unsupported_reason(items: Sequence[MeshItem], samples: int) -> str | None:
    """Why the visible meshes ``items`` cannot take the visibility path (None: they can)."""
    if samples < 2:
        return "needs MSAA (samples >= 2)"
    if len(items) > MAX_SLOTS:
        return f"more than {MAX_SLOTS} visible meshes"
    for k, item in enumerate(items):
        if len(item.triangles) >= MAX_TRIANGLES:
            return f"mesh {item.name!r} has {len(item.triangles)} >= 2^24 triangles"
        if k >= MAX_TEXTURED_SLOT and item.material.textured:
            return f"textured mesh {item.name!r} after the first {MAX_TEXTURED_SLOT} meshes"
    return None


def slot_defines(items: Sequence[MeshItem]) -> dict:
    """Bit masks of the slots with uvs and each texture kind (visibility.comp's defines)."""
    masks = {"UV_MASK": 0, "BASE_TEX_MASK": 0, "NORMAL_MAP_MASK": 0, "MR_TEX_MASK": 0}
    for k, item in enumerate(items):
        mat: Material = item.material
        if not (mat.textured and item.uvs is not None):
            continue
        masks["UV_MASK"] |= 1 << k
        if mat.base_texture is not None:
            masks["BASE_TEX_MASK"] |= 1 << k
        if mat.normal_map is not None:
            masks["NORMAL_MAP_MASK"] |= 1 << k
        if mat.metallic_roughness_texture is not None:
            masks["MR_TEX_MASK"] |= 1 << k
    masks["SLOTS"] = max(len(items), 1)
    return masks


def material_uniforms(items: Sequence[MeshItem]) -> dict[str, bytes]:
    """Per-slot material arrays (raw bytes, as mesh.frag's uniforms of each slot)."""
    mats = [item.material for item in items]
    base = np.array([tuple(srgb_to_linear(m.base_color)) + (1.0,) for m in mats], np.float32)
    sheen = np.array([srgb_to_linear(m.sheen_color) for m in mats], np.float32)
    params = np.array([(m.metallic, m.roughness, m.sheen_roughness, 0.0) for m in mats], np.float32)
    uv = np.array([(*m.uv_scale, m.normal_scale, -m.normal_scale if m.normal_y_flip else m.normal_scale)
                   for m in mats], np.float32)
    return {"u_base_colors": base.tobytes(), "u_sheen_colors": sheen.tobytes(),
            "u_mat_params": params.tobytes(), "u_uv_params": uv.tobytes()}


TEX_WIDTH = 4096          # texels per row of the vertex/index textures (visibility.comp's TEX_WIDTH)


class VisibilityGeometry:
    """The visible meshes' vertex data as textures, for visibility.comp's texelFetch: positions and
    normals (RGB32F), uvs (RG32F), triangles (RGB32UI, one texel per triangle, indices local to the
    mesh), every mesh back to back in rows of :data:`TEX_WIDTH` texels.

    Textures on llvmpipe: it fetches texels ~2.4x faster than it loads storage buffer elements at
    per-lane addresses (a probe of 12 coherent loads per pixel at 1080p: 91 vs 214 ms). Filled on
    the GPU from the meshes' GL buffers (``copy_buffer`` into a staging buffer padded to whole rows,
    then a pixel-buffer upload), only when a mesh's GL content changed. ``use_buffers`` (GPUs): the
    data stays in storage buffers, one per kind, filled by ``copy_buffer`` alone (visibility.comp's
    GEOMETRY_BUFFERS): the NVIDIA driver's pixel upload into these textures took ~10 ms for 1 M
    triangles on the H200 (a conversion path), paid on every frame whose positions changed.
    Owned by the Renderer; no numpy round trip.
    """

    KINDS = {"positions": (3, "f4", 12), "normals": (3, "f4", 12), "uvs": (2, "f4", 8), "indices": (3, "u4", 12)}

    def __init__(self, ctx, use_buffers: bool = False) -> None:
        self._ctx = ctx
        self.use_buffers = use_buffers
        self._buffers: dict[str, object] = {}
        self._staging = None
        self._textures: dict[str, object] = {}
        self._key = None
        self.vertex_base = np.zeros(1, np.uint32)
        self.triangle_base = np.zeros(1, np.uint32)

    def nbytes(self) -> int:
        n = sum(t.width * t.height * self.KINDS[k][2] for k, t in self._textures.items())
        n += sum(b.size for b in self._buffers.values())
        return int(n + (self._staging.size if self._staging is not None else 0))

    def release(self) -> None:
        for t in self._textures.values():
            t.release()
        self._textures.clear()
        for b in self._buffers.values():
            b.release()
        self._buffers.clear()
        if self._staging is not None:
            self._staging.release()
            self._staging = None
        self._key = None

    def _texture(self, kind: str, count: int):
        components, dtype, _ = self.KINDS[kind]
        rows = max((count + TEX_WIDTH - 1) // TEX_WIDTH, 1)
        tex = self._textures.get(kind)
        if tex is None or tex.height != rows:
            if tex is not None:
                tex.release()
            tex = self._textures[kind] = self._ctx.texture((TEX_WIDTH, rows), components, dtype=dtype)
            tex.filter = (self._ctx.NEAREST, self._ctx.NEAREST)
        return tex

    def _fill(self, kind: str, count: int, sources) -> None:
        """Texture ``kind`` <- the buffers ``sources`` [(buffer, texel count, first texel)]."""
        texel = self.KINDS[kind][2]
        if self.use_buffers:
            buf = self._buffers.get(kind)
            if buf is None or buf.size < count * texel:
                if buf is not None:
                    buf.release()
                buf = self._buffers[kind] = self._ctx.buffer(reserve=max(count * texel, 16))
            for src, n, first in sources:
                self._ctx.copy_buffer(buf, src, n * texel, 0, first * texel)
            return
        tex = self._texture(kind, count)
        size = tex.height * TEX_WIDTH * texel
        if self._staging is None or self._staging.size < size:
            if self._staging is not None:
                self._staging.release()
            self._staging = self._ctx.buffer(reserve=size)
        for buf, n, first in sources:
            self._ctx.copy_buffer(self._staging, buf, n * texel, 0, first * texel)
        tex.write(self._staging, alignment=4)

    def bind(self, items: Sequence[MeshItem], gms: Sequence, uv_slots: int, first_unit: int) -> None:
        """Bind the textures (positions, normals, uvs, triangles) to units ``first_unit`` + 0..3 for
        meshes ``items`` with GL mirrors ``gms`` (render.gpu_mesh._GpuMesh); sets
        :attr:`vertex_base` and :attr:`triangle_base`. ``uv_slots``: bit mask of the slots whose uvs
        the shader reads."""
        n_v = np.array([gm.vertex_count for gm in gms], np.int64)
        n_t = np.array([gm.index_count // 3 for gm in gms], np.int64)
        self.vertex_base = np.concatenate([[0], np.cumsum(n_v)[:-1]]).astype(np.uint32)
        self.triangle_base = np.concatenate([[0], np.cumsum(n_t)[:-1]]).astype(np.uint32)
        key = tuple((gm.version, id(gm.vbo_pos), id(gm.ibo), id(item.uvs) if (uv_slots >> k) & 1 else None)
                    for k, (item, gm) in enumerate(zip(items, gms)))
        total_v, total_t = int(n_v.sum()), int(n_t.sum())
        if key != self._key:
            vb, tb = self.vertex_base.tolist(), self.triangle_base.tolist()
            self._fill("positions", total_v, [(gm.vbo_pos, gm.vertex_count, b) for gm, b in zip(gms, vb)])
            self._fill("normals", total_v, [(gm.vbo_nrm, gm.vertex_count, b) for gm, b in zip(gms, vb)])
            self._fill("indices", total_t, [(gm.ibo, gm.index_count // 3, b) for gm, b in zip(gms, tb)])
            if uv_slots:
                self._fill("uvs", total_v, [(gm.vbo_uv, gm.vertex_count, b) for k, (gm, b) in enumerate(zip(gms, vb))
                                            if (uv_slots >> k) & 1])
            self._key = key
        for unit, kind in enumerate(("positions", "normals", "uvs", "indices")):
            if self.use_buffers:   # storage bindings 5..8 (visibility.comp's GEOMETRY_BUFFERS)
                (self._buffers.get(kind) or self._buffers["positions"]).bind_to_storage_buffer(5 + unit)
                continue
            tex = self._textures.get(kind) or self._textures["positions"]
            tex.use(location=first_unit + unit)

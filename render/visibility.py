"""The visibility-buffer path's data: triangle ids, per-slot material uniforms, mesh buffers.

The main raster pass writes one 32-bit id per MSAA sample (``shaders/visibility.frag``): the
object in bits 24-31 (mesh slot + 1; :data:`GROUND_OBJECT` the floor; 0 nothing drawn) and the
triangle's index in its draw call in bits 0-23. ``shaders/visibility.comp`` then fetches each
distinct triangle's vertices from storage buffers and shades it. This module holds the pure parts
(limits, defines, uniform arrays) and :class:`VisibilityGeometry`, the storage buffers of a
multi-mesh frame. No GL objects are created outside a Renderer's context.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .material import Material, MeshItem, srgb_to_linear

GROUND_OBJECT = 255
MAX_SLOTS = 64            # meshes per frame (uniform arrays of the compute shader)
MAX_TEXTURED_SLOT = 8     # textured meshes must be among the first 8 (texture units 8..31)
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


class VisibilityGeometry:
    """Storage buffers holding every visible mesh of a frame back to back (positions, normals, uvs,
    indices), for frames of two or more meshes; one mesh binds its own GL buffers. Copied on the
    GPU (``copy_buffer``) only when a mesh's GL content changed. Owned by the Renderer."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self._bufs: dict[str, object] = {}
        self._key = None
        self.vertex_base = np.zeros(1, np.uint32)
        self.triangle_base = np.zeros(1, np.uint32)

    def nbytes(self) -> int:
        return int(sum(b.size for b in self._bufs.values()))

    def release(self) -> None:
        for b in self._bufs.values():
            b.release()
        self._bufs.clear()
        self._key = None

    def _buffer(self, name: str, size: int):
        b = self._bufs.get(name)
        if b is None or b.size < size:
            if b is not None:
                b.release()
            b = self._bufs[name] = self._ctx.buffer(reserve=max(size, 4))
            self._key = None    # new storage: copy everything again
        return b

    def bind(self, items: Sequence[MeshItem], gms: Sequence, uv_slots: int) -> None:
        """Bind storage buffers 0-3 (positions, normals, uvs, indices) for meshes ``items`` with GL
        mirrors ``gms`` (render.renderer._GpuMesh); sets :attr:`vertex_base`, :attr:`triangle_base`.
        ``uv_slots``: bit mask of the slots whose uvs the shader reads."""
        n_v = np.array([gm.vertex_count for gm in gms], np.int64)
        n_t = np.array([gm.index_count // 3 for gm in gms], np.int64)
        self.vertex_base = np.concatenate([[0], np.cumsum(n_v)[:-1]]).astype(np.uint32)
        self.triangle_base = np.concatenate([[0], np.cumsum(n_t)[:-1]]).astype(np.uint32)
        if len(gms) == 1:
            gm = gms[0]
            srcs = (gm.vbo_pos, gm.vbo_nrm, gm.vbo_uv if uv_slots and gm.vbo_uv is not None else gm.vbo_pos, gm.ibo)
            for binding, buf in enumerate(srcs):
                buf.bind_to_storage_buffer(binding)
            return
        key = tuple((gm.version, id(gm.vbo_pos), id(gm.ibo), id(item.uvs) if (uv_slots >> k) & 1 else None)
                    for k, (item, gm) in enumerate(zip(items, gms)))
        total_v, total_t = int(n_v.sum()), int(n_t.sum())
        pos = self._buffer("positions", 12 * total_v)
        nrm = self._buffer("normals", 12 * total_v)
        uvb = self._buffer("uvs", 8 * total_v) if uv_slots else pos
        idx = self._buffer("indices", 12 * total_t)
        if key != self._key:
            ctx = self._ctx
            for k, gm in enumerate(gms):
                vb, tb = int(self.vertex_base[k]), int(self.triangle_base[k])
                ctx.copy_buffer(pos, gm.vbo_pos, 12 * gm.vertex_count, 0, 12 * vb)
                ctx.copy_buffer(nrm, gm.vbo_nrm, 12 * gm.vertex_count, 0, 12 * vb)
                ctx.copy_buffer(idx, gm.ibo, 4 * gm.index_count, 0, 12 * tb)
                if (uv_slots >> k) & 1:
                    ctx.copy_buffer(uvb, gm.vbo_uv, 8 * gm.vertex_count, 0, 8 * vb)
            self._key = key
        for binding, buf in enumerate((pos, nrm, uvb, idx)):
            buf.bind_to_storage_buffer(binding)

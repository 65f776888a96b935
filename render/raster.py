"""The compute-shader rasteriser: triangle ids per sample and depth-only maps without the GL raster pipeline.

A GPU such as the H100/H200 (GH100) runs its graphics pipeline (raster, ROPs) on a couple of its TPCs
while compute shaders run on every SM: a 1 M-triangle id or depth pass is bound by that small raster
rate. ``shaders/raster.comp`` rasterises instead with one invocation per triangle (Laine & Karras 2011,
"High-Performance Software Rasterization on GPUs"; Nanite's small-triangle path): 1/256-px snapped
vertices, exact integer edge functions with the top-left rule at the driver's own sample positions,
window depth kept with atomicMin on the bits of a float (one 64-bit atomicMin of depth|id where the
driver has GL_NV_shader_atomic_int64, else a depth pass then an id pass). Triangles with a vertex at
or behind the eye plane, or a pixel box larger than :data:`MAX_PIXELS`, go to the GL rasteriser
through an indirect draw of the triangles the compute pass listed (``raster_fallback.*``), writing
the same target.

Three products, each what the hardware pass makes: the visibility path's triangle id per sample (a
storage buffer that ``visibility.comp`` reads with ``COMPUTE_IDS``; the floor put in by the clear,
analytically), the key light's shadow map (the depths copied into the depth texture) and the contact
map (lowest height per texel -> occlusion, as contact.frag's MAX blend). Owned by a Renderer; every
GL object is released in :meth:`ComputeRaster.release`.
"""

from __future__ import annotations

import numpy as np

from .gl import mat4_bytes as _f32, set_uniform as _set
from .shaders import ShaderSourceError

SUBPIXEL = 256            # raster.comp snaps window positions to 1/SUBPIXEL px
MAX_PIXELS = 1024         # larger pixel boxes (or a side over 64 px) go to the GL rasteriser
LOCAL_SIZE = 128          # raster.comp's work group (triangles)
CLEAR_LOCAL = 256         # raster_clear.comp's work group (samples)
EMPTY_ID = 0xFFFFFFFF     # nothing drawn (visibility.comp maps it to id 0)
# The floor's depth in the id clear is moved this much nearer: the GL pass draws it after the meshes with
# "<=" against 24-bit depths, so a mesh sample must be nearer by about a depth unit (2^-24) to keep it.
# Cloth lying on the floor (the drape's hem): 2 units left 0-5 of 81,920 samples differing from the GL
# pass on llvmpipe, none 7-36, 4 units 1-5.
GROUND_TIE_DEPTH = 2.0 / 2 ** 24
INT64_EXTENSION = "GL_NV_shader_atomic_int64"


def _groups(count: int, local: int) -> tuple[int, int]:
    """A 2D work-group grid covering ``count`` invocations of ``local`` each (x <= 65535)."""
    n = max((count + local - 1) // local, 1)
    gx = min(n, 65535)
    return gx, (n + gx - 1) // gx




class ComputeRaster:
    """Compute-shader rasterisation of a Renderer's meshes (module docstring).

    Args:
        ctx: the Renderer's moderngl context (GL 4.5: compute shaders, storage-buffer atomics).
        programs: the Renderer's :class:`render.shaders.ProgramCache`.

    Attributes:
        use_int64: one 64-bit atomicMin per sample for ids (None: where the driver offers
            GL_NV_shader_atomic_int64 and the shader compiles; False: the two 32-bit passes).
        count_fallbacks: read back how many triangles each pass sent to the GL rasteriser into
            :attr:`fallbacks` (a GPU round trip per mesh: tests and diagnostics only).
    """

    def __init__(self, ctx, programs) -> None:
        self.ctx = ctx
        self.programs = programs
        self.use_int64: bool | None = None
        self.int64_error: str | None = None
        self.count_fallbacks = False
        self.fallbacks: dict[str, int] = {}
        self._buffers: dict[str, object] = {}
        self._positions: dict[int, np.ndarray] = {}
        self._fill_rule: tuple[int, int] | None = None
        self._fallback_targets: dict[tuple, tuple] = {}
        self._fallback_vaos: dict[int, object] = {}

    # ------------------------------------------------------------------ lifetime
    def release(self) -> None:
        for buf in self._buffers.values():
            buf.release()
        self._buffers.clear()
        for objs in self._fallback_targets.values():
            for o in objs:
                o.release()
        self._fallback_targets.clear()
        for vao in self._fallback_vaos.values():
            vao.release()
        self._fallback_vaos.clear()

    def nbytes(self) -> int:
        return int(sum(b.size for b in self._buffers.values()))

    def _buffer(self, name: str, size: int):
        buf = self._buffers.get(name)
        if buf is None or buf.size < size:
            if buf is not None:
                buf.release()
            buf = self._buffers[name] = self.ctx.buffer(reserve=max(int(size), 16))
        return buf

    # ------------------------------------------------------------------ sample positions
    def sample_positions(self, samples: int) -> np.ndarray:
        """The driver's sample positions of a ``samples``-sample target, (S, 2) float32 in the pixel
        ([0, 1)^2, GL window axes: y up), indexed by gl_SampleID; S is the count the driver gives
        (llvmpipe makes 2x targets 4x). 1 sample: the pixel centre. Probed once per count."""
        got = self._positions.get(samples)
        if got is not None:
            return got
        if samples <= 1:
            got = np.array([[0.5, 0.5]], np.float32)
        else:
            ctx = self.ctx
            rb = ctx.renderbuffer((1, 1), 1, samples=samples, dtype="f1")
            fbo = ctx.framebuffer([rb])
            buf = ctx.buffer(reserve=4 + 8 * 64)
            prog = self.programs.get("sample_positions.vert", "sample_positions.frag")
            vao = ctx.vertex_array(prog, [])
            try:
                buf.clear()
                buf.bind_to_storage_buffer(0)
                fbo.use()
                ctx.disable(ctx.DEPTH_TEST | ctx.BLEND)
                vao.render(mode=ctx.TRIANGLES, vertices=3)
                ctx.memory_barrier()
                raw = buf.read()
                count = int(np.frombuffer(raw[:4], np.int32)[0])
                got = np.frombuffer(raw[4:], np.float32)[:2 * count].reshape(count, 2).copy()
            finally:
                vao.release()
                fbo.release()
                rb.release()
                buf.release()
            if count < 1:
                raise RuntimeError(f"sample-position probe of a {samples}-sample target returned {count} samples")
        self._positions[samples] = got
        return got

    def _offsets(self, positions: np.ndarray) -> bytes:
        return np.round(positions * SUBPIXEL).astype(np.int32).tobytes()

    # ------------------------------------------------------------------ programs
    def _int64(self) -> bool:
        if self.use_int64 is None:
            self.use_int64 = INT64_EXTENSION in self.ctx.extensions
            if self.use_int64:
                try:
                    self.programs.get_compute("raster.comp", self._defines("MODE_ID64", 4))
                    self.programs.get("raster_fallback.vert", "raster_fallback.frag", {"MODE_ID64": True, "SAMPLES": 4})
                except ShaderSourceError as e:   # the extension is listed but the shader does not build
                    self.use_int64 = False
                    self.int64_error = str(e)
        return self.use_int64

    def _defines(self, mode: str, samples: int) -> dict:
        dy, dx = self.fill_rule()
        return {mode: True, "SAMPLES": samples, "MAX_PIXELS": MAX_PIXELS, "LOCAL_SIZE": LOCAL_SIZE,
                "FILL_DY_SIGN": dy, "FILL_DX_SIGN": dx}

    def fill_rule(self) -> tuple[int, int]:
        """The GL rasteriser's rule for samples exactly on an edge, as raster.comp's (FILL_DY_SIGN,
        FILL_DX_SIGN): a counter-clockwise triangle (GL window, y up) owns such a sample on an edge
        whose direction (dx, dy) has FILL_DY_SIGN * dy > 0, or dy == 0 and FILL_DX_SIGN * dx > 0.
        Probed once: a triangle whose bottom edge runs through a row of pixel centres of a 4 x 4
        target (does it get them?), one whose left edge runs through a column."""
        if self._fill_rule is None:
            ctx = self.ctx
            tex = ctx.texture((4, 4), 1, dtype="u4")
            fbo = ctx.framebuffer([tex])
            prog = self.programs.get("depth.vert", "visibility.frag")
            # above the row y = 1.5 px (NDC -0.25), right of the column x = 1.5 px
            tris = {"bottom": [(-1.0, -0.25), (1.0, -0.25), (0.0, 1.0)], "left": [(-0.25, -1.0), (1.0, 0.0), (-0.25, 1.0)]}
            got = {}
            try:
                for name, corners in tris.items():
                    vbo = ctx.buffer(np.array([(x, y, 0.0) for x, y in corners], np.float32).tobytes())
                    vao = ctx.vertex_array(prog, [(vbo, "3f", "in_position")])
                    try:
                        fbo.use()
                        fbo.clear(0.0, 0.0, 0.0, 0.0)
                        ctx.disable(ctx.DEPTH_TEST | ctx.CULL_FACE | ctx.BLEND)
                        _set(prog, "u_view_proj", _f32(np.eye(4)))
                        _set(prog, "u_object", 1 << 24)
                        vao.render(mode=ctx.TRIANGLES, vertices=3)
                        ids = np.frombuffer(fbo.read(components=1, dtype="u4"), np.uint32).reshape(4, 4)
                    finally:
                        vao.release()
                        vbo.release()
                    got[name] = bool((ids[1, :] != 0).all()) if name == "bottom" else bool((ids[:, 1] != 0).all())
            finally:
                fbo.release()
                tex.release()
            # its bottom edge runs right (dx > 0) when counter-clockwise; its left edge runs down (dy < 0)
            self._fill_rule = (-1 if got["left"] else 1, 1 if got["bottom"] else -1)
        return self._fill_rule

    def _fallback_target(self, size: tuple[int, int], samples: int):
        key = (size, samples)
        objs = self._fallback_targets.get(key)
        if objs is None:
            rb = self.ctx.renderbuffer(size, 1, samples=samples if samples > 1 else 0, dtype="f1")
            objs = self._fallback_targets[key] = (self.ctx.framebuffer([rb]), rb)
        return objs[0]

    # ------------------------------------------------------------------ raster
    def _clear(self, target, count: int, value: int) -> None:
        prog = self.programs.get_compute("raster_clear.comp", {"MODE_FILL": True})
        target.bind_to_storage_buffer(2)
        _set(prog, "u_value", int(value))
        _set(prog, "u_count", int(count))
        prog.run(*_groups(count, CLEAR_LOCAL))

    def _raster(self, mode: str, target, gms, objects, view_proj, size, positions: np.ndarray,
                ground_y: float = 0.0, passes=(0,)) -> None:
        """Rasterise the meshes ``gms`` (render.gpu_mesh._GpuMesh: vbo_pos, ibo) into ``target``;
        ``objects``: each mesh's id high bits (ID modes)."""
        ctx = self.ctx
        samples = len(positions)
        defines = self._defines(mode, samples)
        prog = self.programs.get_compute("raster.comp", defines)
        fb_prog = self.programs.get("raster_fallback.vert", "raster_fallback.frag", {mode: True, "SAMPLES": samples})
        vp = _f32(view_proj)
        offsets = self._offsets(positions)
        for p in (prog, fb_prog):
            _set(p, "u_view_proj", vp)
            _set(p, "u_size", tuple(size))
            _set(p, "u_ground_y", float(ground_y))
        _set(prog, "u_sample_offsets", offsets)
        fbo = self._fallback_target(size, samples)
        vao = self._fallback_vaos.get(id(fb_prog))
        if vao is None:
            vao = self._fallback_vaos[id(fb_prog)] = ctx.vertex_array(fb_prog, [])
        target.bind_to_storage_buffer(2)
        # MODE_ID32: every mesh's depth pass before any id pass (an id pass compares against the
        # nearest depth of all meshes); each mesh keeps its own fallback list for its second pass
        for pass_ in passes:
            _set(prog, "u_pass", pass_)
            _set(fb_prog, "u_pass", pass_)
            for k, (gm, obj) in enumerate(zip(gms, objects)):
                n = gm.index_count // 3
                if n == 0:
                    continue
                fallback = self._buffer(f"fallback{k}", 16 + 4 * n)
                gm.vbo_pos.bind_to_storage_buffer(0)
                gm.ibo.bind_to_storage_buffer(1)
                fallback.bind_to_storage_buffer(3)
                if pass_ == passes[0]:
                    fallback.write(np.array([0, 1, 0, 0], np.uint32).tobytes())
                _set(prog, "u_triangle_count", n)
                _set(prog, "u_object", int(obj))
                _set(fb_prog, "u_object", int(obj))
                _set(prog, "u_fallback_capacity", n)
                prog.run(*_groups(n, LOCAL_SIZE))
                ctx.memory_barrier()
                fbo.use()
                ctx.disable(ctx.DEPTH_TEST | ctx.BLEND | ctx.CULL_FACE)
                vao.render_indirect(fallback, mode=ctx.TRIANGLES, count=1)
                ctx.memory_barrier()
        if self.count_fallbacks:
            self.fallbacks[mode] = sum(int(np.frombuffer(self._buffers[f"fallback{k}"].read(4), np.uint32)[0]) // 3
                                       for k, gm in enumerate(gms) if gm.index_count)

    def ids(self, gms, objects, view_proj: np.ndarray, size: tuple[int, int], samples: int,
            ground: tuple[float, tuple] | None = None, inv_view_proj: np.ndarray | None = None):
        """Triangle id and depth per sample of the meshes ``gms`` seen through ``view_proj``:
        returns (storage buffer of uvec2 (id, depth bits) per sample, pixel-major, the sample count).
        ``objects``: each mesh's id high bits; ``ground``: (floor height [m], extent (x0, z0, x1,
        z1) [m]) to put the floor in, None for none."""
        positions = self.sample_positions(samples)
        s = len(positions)
        count = size[0] * size[1] * s
        target = self._buffer("ids", 8 * count)
        defines = {"MODE_IDS": True, "SAMPLES": s, "HAS_GROUND": ground is not None, "GROUND_OBJECT": "255u",
                   "GROUND_TIE": repr(GROUND_TIE_DEPTH)}
        prog = self.programs.get_compute("raster_clear.comp", defines)
        target.bind_to_storage_buffer(2)
        _set(prog, "u_count", count)
        _set(prog, "u_size", tuple(size))
        _set(prog, "u_sample_positions", positions.astype(np.float32).tobytes())
        if ground is not None:
            _set(prog, "u_view_proj", _f32(view_proj))
            _set(prog, "u_inv_view_proj", _f32(inv_view_proj if inv_view_proj is not None else np.linalg.inv(view_proj)))
            _set(prog, "u_ground_y", float(ground[0]))
            _set(prog, "u_ground_extent", tuple(float(x) for x in ground[1]))
        prog.run(*_groups(count, CLEAR_LOCAL))
        self.ctx.memory_barrier()
        if self._int64():
            self._raster("MODE_ID64", target, gms, objects, view_proj, size, positions)
        else:
            self._raster("MODE_ID32", target, gms, objects, view_proj, size, positions, passes=(0, 1))
        return target, s

    def depth_map(self, gms, view_proj: np.ndarray, size: tuple[int, int], framebuffer) -> None:
        """The depth-only pass into ``framebuffer`` (a depth texture of ``size`` as its depth
        attachment): window depth of the nearest surface per texel centre, 1.0 where none (the
        shadow map). The depths go from the storage buffer into the texture through a full-screen
        draw (raster_depth_copy.frag), not a pixel-buffer upload (slow on the NVIDIA driver)."""
        ctx = self.ctx
        count = size[0] * size[1]
        target = self._buffer("depth", 4 * count)
        self._clear(target, count, 0x3F800000)    # 1.0f
        ctx.memory_barrier()
        self._raster("MODE_DEPTH", target, gms, [0] * len(gms), view_proj, size, self.sample_positions(1))
        prog = self.programs.get("deferred.vert", "raster_depth_copy.frag")
        vao = self._fallback_vaos.get(id(prog))
        if vao is None:
            vao = self._fallback_vaos[id(prog)] = ctx.vertex_array(prog, [])
        target.bind_to_storage_buffer(2)
        _set(prog, "u_width", int(size[0]))
        framebuffer.use()
        ctx.disable(ctx.BLEND | ctx.CULL_FACE)
        ctx.enable(ctx.DEPTH_TEST)
        ctx.depth_func = "1"      # always: every texel written
        vao.render(mode=ctx.TRIANGLES, vertices=3)
        ctx.depth_func = "<"

    def contact_map(self, gms, view_proj: np.ndarray, size: tuple[int, int], ground_y: float,
                    contact_height: float, texture) -> None:
        """The contact map into ``texture`` (R16F of ``size``, level 0; the caller builds the
        mipmaps): exp(-h / contact_height) of the lowest surface at height h [m] above
        ``ground_y`` inside the map's depth range, 0 where none."""
        ctx = self.ctx
        count = size[0] * size[1]
        target = self._buffer("height", 4 * count)
        self._clear(target, count, 0x7F800000)    # +inf
        ctx.memory_barrier()
        self._raster("MODE_HEIGHT", target, gms, [0] * len(gms), view_proj, size, self.sample_positions(1), ground_y)
        prog = self.programs.get_compute("raster_contact.comp")
        target.bind_to_storage_buffer(2)
        texture.bind_to_image(1, read=False, write=True)
        _set(prog, "u_size", tuple(size))
        _set(prog, "u_contact_height", float(contact_height))
        prog.run((size[0] + 7) // 8, (size[1] + 7) // 8, 1)
        ctx.memory_barrier()

    def hardware_ids(self, texture, size: tuple[int, int], samples: int) -> np.ndarray:
        """The hardware id pass's MSAA id texture (``samples`` per pixel) in :meth:`ids`'s layout, as
        (H, W, samples) uint32 with GL's bottom row first (EMPTY_ID where nothing was drawn): for
        comparing the two rasterisers sample by sample. A GPU round trip: tests only."""
        count = size[0] * size[1] * samples
        buf = self.ctx.buffer(reserve=8 * count)
        try:
            prog = self.programs.get_compute("raster_copy_ids.comp", {"SAMPLES": samples})
            texture.use(location=7)
            _set(prog, "u_vis", 7)
            _set(prog, "u_size", tuple(size))
            buf.bind_to_storage_buffer(2)
            prog.run((size[0] + 7) // 8, (size[1] + 7) // 8, 1)
            self.ctx.memory_barrier()
            return np.frombuffer(buf.read(), np.uint32)[0::2].reshape(size[1], size[0], samples).copy()
        finally:
            buf.release()

    @staticmethod
    def read_ids(buffer, size: tuple[int, int], samples: int) -> np.ndarray:
        """:meth:`ids`'s buffer as (H, W, samples) uint32 ids, bottom row first."""
        count = size[0] * size[1] * samples
        return np.frombuffer(buffer.read(8 * count), np.uint32)[0::2].reshape(size[1], size[0], samples).copy()

"""The Renderer: owns the GL context and every GL object; draws MeshItems to numpy images.

Scene and simulation objects are plain arrays and dataclasses (render.material.MeshItem,
render.camera.Camera); the Renderer keeps the GL buffers that mirror them, keyed by mesh name,
and releases everything in :meth:`Renderer.release` (idempotent; also on ``with`` exit). No GL
call ever runs from ``__del__``.

Frame: key-light shadow map (PCSS) -> ground contact map -> MSAA colour pass (ground catcher,
then meshes; linear shading, tone map, sRGB encode in the fragment shader) -> resolve -> read.
Other shading modes replace the colour pass and resolve: "deferred" (a G-buffer, then a full-screen
shading pass) and "visibility" (a triangle id per sample, then a compute shader that reconstructs,
shades and resolves each pixel; render.visibility).
"""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np

import clothsim as cs

from .camera import Camera
from .gl import create_headless_context, upload_indices
from .gl import mat4_bytes as _f32, set_uniform as _set
from .material import EmbeddedImage, Material, MeshItem, srgb_to_linear
from .settings import (  # noqa: F401  (RenderSettings and the constants are re-exported from here)
    DEFERRED_MIN_TRIANGLES_PER_PIXEL, GL_SRGB8_ALPHA8, MAX_IMAGE_SIDE, RASTER_AUTO_HARDWARE_GPU, RASTER_AUTO_SOFTWARE,
    RASTERS, SHADING, SHADING_RATES, SHADOW_SAMPLINGS, SOFTWARE_RENDERERS, TONEMAPS, VERTEX_SHADING_MAX_EDGE_PX,
    VERTEX_SHADING_AUTO_SOFTWARE, VERTEX_SHADING_MIN_ROUGHNESS, VERTEX_SHADOW_MAX_EDGE_TEXELS,
    VISIBILITY_AUTO_HARDWARE, VISIBILITY_AUTO_SOFTWARE, RenderSettings, _bounds, _ortho, mean_edge_length, vertex_normals,
)
from .raster import ComputeRaster
from .shaders import ProgramCache
from .sheen import stored_sheen_albedo_table
from .visibility import (GEOMETRY_UNIT, GROUND_OBJECT, LOCAL_SIZE, MAX_TEXTURED_SLOT, TEX_WIDTH, VisibilityGeometry, material_uniforms,
                         object_bits, slot_defines, unsupported_reason)

_VERSIONS = itertools.count(1)   # GL content versions, unique across meshes (shadow-map reuse keys)
GROUND_SLOT = 4095   # the floor's slot in the G-buffer (meshes are 1, 2, ...; 0 = nothing drawn)
MAX_ID_BUFFER_BYTES = 2 ** 31   # the compute id pass's storage buffer, at most



class _GpuMesh:
    """GL buffers mirroring one MeshItem (positions, normals, uvs, indices) and its VAOs."""

    def __init__(self) -> None:
        self.vbo_pos = self.vbo_nrm = self.vbo_uv = self.ibo = None
        self.vertex_count = 0
        self.index_count = 0
        self.triangles_ref = None
        self.vertices_ref = None
        self.version = 0        # a new number whenever the GL positions or triangles change (map reuse)
        self.vaos: dict[tuple, object] = {}
        self.bounds: tuple[np.ndarray, np.ndarray] | None = None
        self.mean_edge: float | None = None   # [m], estimated on each CPU upload; None: unknown (device positions)

    def release(self) -> None:
        for vao in self.vaos.values():
            vao.release()
        self.vaos.clear()
        for name in ("vbo_pos", "vbo_nrm", "vbo_uv", "ibo"):
            buf = getattr(self, name)
            if buf is not None:
                buf.release()
                setattr(self, name, None)


class Renderer:
    """Headless renderer: ``with Renderer() as r: rgba = r.render(meshes, camera, settings)``.

    Args:
        ctx: an existing moderngl context to draw with (the preview window passes its own);
            None creates a standalone EGL context that this Renderer owns and releases.
        backend: the standalone backend ("egl").

    Raises:
        render.gl.GLUnavailableError: no GL 4.5 driver; the message names the Debian packages.
    """

    def __init__(self, ctx=None, *, backend: str = "egl") -> None:
        self._owns_ctx = ctx is None
        self.ctx = create_headless_context(backend) if ctx is None else ctx
        gl_name = str(self.ctx.info.get("GL_RENDERER", "")).lower()
        self.software_raster = any(k in gl_name for k in SOFTWARE_RENDERERS)
        self.programs = ProgramCache(self.ctx)
        self._meshes: dict[str, _GpuMesh] = {}
        self._textures: dict[tuple, object] = {}
        self._targets: dict[tuple, tuple] = {}
        # what each shadow/contact map holds: reused while the meshes and the light stay the same
        # (views of one drape under lights fixed in the world, or the same view again)
        self._map_keys: dict[tuple, tuple] = {}
        self._released = False
        self.max_samples = int(self.ctx.max_samples)
        self._interop = None
        # vertex data as storage buffers on GPUs, textures on software rasterisers (render.visibility)
        self._vis_geometry = VisibilityGeometry(self.ctx, use_buffers=not self.software_raster)
        #: the compute rasteriser (RenderSettings.raster; render.raster)
        self.compute_raster = ComputeRaster(self.ctx, self.programs)
        self._sample_counts: dict[int, int] = {}
        lut = stored_sheen_albedo_table()
        self._sheen_lut = self.ctx.texture(lut.shape[::-1], 1, lut.tobytes(), dtype="f4")
        self._sheen_lut.filter = (self.ctx.LINEAR, self.ctx.LINEAR)
        self._sheen_lut.repeat_x = self._sheen_lut.repeat_y = False
        self.stats: dict[str, float] = {}
        #: True: every pass ends with glFinish and its wall time [s] goes to ``stats`` (setup,
        #: shadow, contact, main, ground, resolve, readback). Serialises CPU and GL: profiling only.
        self.profile = False
        #: pass names (as in ``stats``) after which the frame waits for the GL (glFinish) without
        #: profiling: a diagnostic for driver stalls between passes (benchmarks/render.py)
        self.finish_after: set[str] = set()
        #: how the last frame was made: {"shading": "forward"|"deferred"|"visibility", "shadow_map"/"contact_map":
        #: "drawn"|"reused"|"none"}
        self.frame_info: dict[str, str] = {}
        #: visibility path: True: samples of distinct triangles of one mesh that share a vertex share
        #: one shading (fewer shadings on dense meshes; up to ~80 levels off forward on a few
        #: silhouette pixels where cloth folds over itself). False (default): every distinct
        #: triangle of a pixel is shaded, as the forward pass does (on llvmpipe merging saved nothing
        #: measurable at 1 M triangles, 1080p)
        self.visibility_merge = False

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> "Renderer":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        """Free every GL object (and the context if this Renderer created it). Idempotent."""
        if self._released:
            return
        self._released = True
        with self.ctx:
            self._release_objects()
        if self._owns_ctx:
            self.ctx.release()

    def _release_objects(self) -> None:
        if self._interop is not None:
            self._interop.release()
            self._interop = None
        self._vis_geometry.release()
        self.compute_raster.release()
        for mesh in self._meshes.values():
            mesh.release()
        self._meshes.clear()
        for tex in self._textures.values():
            tex.release()
        self._textures.clear()
        for objs in self._targets.values():
            for o in objs:
                o.release()
        self._targets.clear()
        self._sheen_lut.release()
        self.programs.release()

    def _check_alive(self) -> None:
        if self._released:
            raise RuntimeError("this Renderer was released; create a new one")

    # ------------------------------------------------------------------ resources
    def _target(self, kind: str, size: tuple[int, int], samples: int = 0):
        key = (kind, size, samples)
        objs = self._targets.get(key)
        if objs is None:
            ctx = self.ctx
            if kind == "msaa":
                color = ctx.renderbuffer(size, 4, samples=samples)
                depth = ctx.depth_renderbuffer(size, samples=samples)
                objs = (ctx.framebuffer([color], depth), color, depth)
            elif kind == "gbuffer":   # deferred shading: position+slot (32F), normal+roughness, base+metallic (16F)
                tex = [ctx.texture(size, 4, dtype=dt, samples=samples) for dt in ("f4", "f2", "f2")]
                depth = ctx.depth_renderbuffer(size, samples=samples)
                objs = (ctx.framebuffer(tex, depth), *tex, depth)
            elif kind == "visibility":   # triangle id per sample (R32UI) + depth; the shaded RGBA8 image
                ids = ctx.texture(size, 1, dtype="u4", samples=samples)
                depth = ctx.depth_renderbuffer(size, samples=samples)
                out = ctx.texture(size, 4)
                objs = (ctx.framebuffer([ids], depth), ids, depth, out, ctx.framebuffer([out]))
            elif kind == "visibility_out":   # the shaded RGBA8 image of the compute-raster visibility path
                out = ctx.texture(size, 4)
                objs = (out, ctx.framebuffer([out]))
            elif kind == "resolve":
                color = ctx.renderbuffer(size, 4)
                objs = (ctx.framebuffer([color]), color)
            elif kind == "depth":  # shadow / contact / depth readback: a sampled depth texture
                tex = ctx.depth_texture(size)
                tex.repeat_x = tex.repeat_y = False
                tex.filter = (ctx.NEAREST, ctx.NEAREST)
                cmp = ctx.sampler(texture=tex, compare_func="<=", filter=(ctx.LINEAR, ctx.LINEAR),
                                  repeat_x=False, repeat_y=False)
                raw = ctx.sampler(texture=tex, filter=(ctx.LINEAR, ctx.LINEAR), repeat_x=False, repeat_y=False)
                raw.compare_func = ""
                objs = (ctx.framebuffer(depth_attachment=tex), tex, cmp, raw)
            elif kind == "contact":  # contact occlusion: R16F colour, mipmapped (the blur)
                tex = ctx.texture(size, 1, dtype="f2")
                tex.repeat_x = tex.repeat_y = False
                tex.filter = (ctx.LINEAR_MIPMAP_LINEAR, ctx.LINEAR)
                # the whole mip chain now: with level 0 alone the texture is incomplete, and the
                # NVIDIA driver drops the compute rasteriser's imageStore into an incomplete
                # texture (the first frame of a Renderer had no contact shadow on the H200)
                tex.build_mipmaps()
                objs = (ctx.framebuffer([tex]), tex)
            else:
                raise ValueError(kind)
            self._targets[key] = objs
        return objs

    def _texture(self, path: Path | EmbeddedImage, srgb: bool):
        if isinstance(path, EmbeddedImage):
            key = ("embedded", path.source, path.key, hash(path.data), srgb)
        else:
            path = Path(path)
            try:
                stat = path.stat()
            except OSError as e:
                raise cs.InputError(f"texture file not found or unreadable: {path} ({e.strerror or e})") from e
            key = (str(path.resolve()), stat.st_mtime_ns, srgb)
        tex = self._textures.get(key)
        if tex is None:
            import imageio.v3 as iio

            try:
                img = np.asarray(iio.imread(path.data if isinstance(path, EmbeddedImage) else path))
            except Exception as e:
                raise cs.InputError(f"cannot read texture {path}: {e}") from e
            if img.ndim == 2:
                img = np.repeat(img[..., None], 3, axis=2)
            if img.dtype != np.uint8:
                img = (np.clip(img.astype(np.float64) / np.iinfo(img.dtype).max, 0, 1) * 255).astype(np.uint8) \
                    if np.issubdtype(img.dtype, np.integer) else (np.clip(img, 0, 1) * 255).astype(np.uint8)
            if img.shape[2] == 3:
                img = np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
            img = np.ascontiguousarray(img[..., :4])
            # glTF UVs have (0, 0) at the image's top-left: upload rows top-first, sample as is.
            kw = {"internal_format": GL_SRGB8_ALPHA8} if srgb else {}
            tex = self.ctx.texture((img.shape[1], img.shape[0]), 4, img.tobytes(), **kw)
            tex.build_mipmaps()
            tex.anisotropy = 8.0
            tex.repeat_x = tex.repeat_y = True
            self._textures[key] = tex
        return tex

    def _gpu_mesh(self, key: str, item: MeshItem, upload: bool = True) -> _GpuMesh:
        gm = self._meshes.get(key)
        if gm is None:
            gm = self._meshes[key] = _GpuMesh()
        ctx = self.ctx
        n = len(item.vertices)
        if gm.vertex_count != n or gm.vbo_pos is None:
            gm.release()
            gm.vbo_pos = ctx.buffer(reserve=n * 12, dynamic=True)
            gm.vbo_nrm = ctx.buffer(reserve=n * 12, dynamic=True)
            gm.vertex_count = n
            gm.triangles_ref = gm.vertices_ref = None
        if gm.triangles_ref is not item.triangles:
            upload_indices(ctx, gm, item.triangles)
            gm.version = next(_VERSIONS)
        if upload and gm.vertices_ref is not item.vertices:
            # CPU path: a plain upload of positions and normals (the GPU path is render.interop)
            gm.vbo_pos.write(item.vertices.tobytes())
            gm.vbo_nrm.write(vertex_normals(item.vertices, item.triangles).tobytes())
            gm.vertices_ref = item.vertices
            gm.version = next(_VERSIONS)
            gm.bounds = _bounds(item.vertices)
            gm.mean_edge = mean_edge_length(item.vertices, item.triangles)
        has_uv = item.uvs is not None
        if has_uv and (gm.vbo_uv is None or gm.vbo_uv.size != n * 8):
            if gm.vbo_uv is not None:
                gm.vbo_uv.release()
            gm.vbo_uv = ctx.buffer(item.uvs.tobytes())
            for vao in gm.vaos.values():
                vao.release()
            gm.vaos.clear()
        elif has_uv:
            gm.vbo_uv.write(item.uvs.tobytes())
        return gm

    def _vao(self, gm: _GpuMesh, program, with_uv: bool, depth_only: bool):
        key = (id(program), with_uv)
        vao = gm.vaos.get(key)
        if vao is None:
            content = [(gm.vbo_pos, "3f", "in_position")]
            if not depth_only:
                content.append((gm.vbo_nrm, "3f", "in_normal"))
                if with_uv:
                    content.append((gm.vbo_uv, "2f", "in_uv"))
            vao = self.ctx.vertex_array(program, content, index_buffer=gm.ibo, index_element_size=4)
            gm.vaos[key] = vao
        return vao

    def forget(self, key: str) -> None:
        """Free the GL buffers kept for mesh ``key`` (a name passed in a MeshItem)."""
        gm = self._meshes.pop(key, None)
        if gm is not None:
            gm.release()

    # ------------------------------------------------------------------ warp interop
    def _upload_device_positions(self, gm: _GpuMesh, key: str, positions) -> tuple[np.ndarray, np.ndarray]:
        """GPU path: Warp CUDA array -> GL vertex buffer (and normals) on the device; returns the
        bounds (lo, hi) [m], the only data that comes back to the host (24 bytes)."""
        from .interop import WarpGLInterop

        if self._interop is None:
            self._interop = WarpGLInterop()
        self._interop.copy_positions(gm, key, positions)
        gm.vertices_ref = None  # the GL data came from the device; the next numpy frame re-uploads
        gm.mean_edge = None
        gm.version = next(_VERSIONS)
        return self._interop.bounds(positions)

    # ------------------------------------------------------------------ frame
    @staticmethod
    def scene_bounds(meshes: Sequence[MeshItem]) -> tuple[np.ndarray, np.ndarray]:
        b = [_bounds(m.vertices) for m in meshes]
        lo = np.min([x[0] for x in b], axis=0)
        hi = np.max([x[1] for x in b], axis=0)
        return lo, hi

    def _draw_depth(self, items, gms, view_proj: np.ndarray) -> None:
        prog = self.programs.get("depth.vert", "depth.frag")
        _set(prog, "u_view_proj", _f32(view_proj))
        for item, gm in zip(items, gms):
            self._vao(gm, prog, False, True).render()

    def render(self, meshes: Sequence[MeshItem], camera: Camera, settings: RenderSettings | None = None, *,
               device_positions: dict | None = None, framebuffer=None, overlay=None,
               **overrides) -> np.ndarray | None:
        """Draw ``meshes`` seen by ``camera``; returns (H, W, 4) uint8 sRGB with straight alpha.

        ``overrides`` are RenderSettings fields (e.g. ``width=256, transparent=True``).
        Meshes are keyed by name: one with the same name as last frame reuses its GL buffers
        and only re-uploads arrays that are new objects.

        ``device_positions`` ({mesh name: wp.array of (N,) vec3 on CUDA}) is the GPU path: those
        meshes' positions go from the Warp array into the GL vertex buffer through Warp's OpenGL
        interop, with no host round trip (their MeshItem supplies triangles, uvs and material).
        The Renderer's context is made current
        for the call (another library's context may have been made current in between).

        ``framebuffer`` (a moderngl Framebuffer of the image's size, e.g. a window's screen): the
        frame is resolved into it and nothing is read back; returns None. ``overlay``: a callable
        ``overlay(ctx, view_proj, camera, near, far)`` run with the colour pass's framebuffer bound
        (depth test on, after the meshes and the floor), for extra geometry such as the preview's
        wireframe and strain map.
        """
        self._check_alive()
        with self.ctx:
            return self._render(meshes, camera, settings, device_positions, framebuffer=framebuffer,
                                overlay=overlay, **overrides)

    def _render(self, meshes: Sequence[MeshItem], camera: Camera, settings: RenderSettings | None,
                device_positions, framebuffer=None, overlay=None, **overrides) -> np.ndarray | None:
        s = settings or RenderSettings()
        if overrides:
            s = RenderSettings(**{**s.__dict__, **overrides})
        meshes = list(meshes)
        if not meshes:
            raise cs.InputError("render: nothing to draw (no meshes)")
        for m in meshes:
            m.material.check_files()
        ctx = self.ctx
        clock = [time.perf_counter()]
        self.frame_info = {"shadow_map": "none", "contact_map": "none"}
        compute = self._raster_mode(s) == "compute"
        self.frame_info["raster"] = "compute" if compute else "hardware"
        self.frame_info["shadow_sampling"] = "pixel"
        self.frame_info["shading_rate"] = "pixel"
        if self.profile:
            self.stats = {}

        def mark(name: str) -> None:
            if name in self.finish_after and not self.profile:
                ctx.finish()
            if self.profile:
                ctx.finish()
                t = time.perf_counter()
                self.stats[name] = self.stats.get(name, 0.0) + t - clock[0]
                clock[0] = t
        w, h = s.width, s.height
        aspect = w / h
        device_positions = dict(device_positions or {})
        unknown = set(device_positions) - {m.name for m in meshes}
        if unknown:
            raise cs.InputError(f"device_positions for meshes not drawn: {sorted(unknown)}")
        gms, los, his = [], [], []
        for i, m in enumerate(meshes):
            key = f"{i}:{m.name}"
            on_device = m.name in device_positions
            gm = self._gpu_mesh(key, m, upload=not on_device)
            if on_device:
                lo_i, hi_i = self._upload_device_positions(gm, key, device_positions[m.name])
            else:
                lo_i, hi_i = gm.bounds   # computed once per uploaded positions array
            gms.append(gm)
            los.append(lo_i)
            his.append(hi_i)
        lo = np.min(los, axis=0).astype(np.float64)
        hi = np.max(his, axis=0).astype(np.float64)
        center = 0.5 * (lo + hi)
        radius = max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)
        ground_y = float(lo[1]) if s.ground_y is None else float(s.ground_y)
        dist = float(np.linalg.norm(np.subtract(camera.position, center)))
        near = camera.near or max(0.02 * dist, dist - 2.5 * radius, 1e-3)
        far = camera.far or (dist + 5.0 * radius)
        view = camera.view_matrix()
        proj = camera.projection_matrix(aspect, near, far)
        view_proj = proj @ view
        lights = s.rig.resolve(camera)
        key_dir = lights.shadow_dir
        mark("setup")
        draw_ground = s.ground and s.shadows
        key_shadow = s.shadows and key_dir is not None

        # ---- key-light shadow map: orthographic, fitted to the meshes plus the floor around them
        shadow_objs = contact_objs = None
        if s.shadows:
            if key_shadow:
                # the shadow of the top reaches height / tan(elevation) sideways across the floor
                key_el = max(math.asin(min(max(key_dir[1], -1.0), 1.0)), math.radians(15.0))
                floor_pad = (hi[1] - ground_y) / math.tan(key_el) + 0.15 * radius
            else:
                floor_pad = 0.3 * radius
            s_lo = np.array([lo[0] - floor_pad, ground_y, lo[2] - floor_pad])
            s_hi = np.array([hi[0] + floor_pad, hi[1], hi[2] + floor_pad])
        if key_shadow:
            s_center = 0.5 * (s_lo + s_hi)
            s_radius = 0.5 * float(np.linalg.norm(s_hi - s_lo))
            light_cam = Camera(position=tuple(s_center + key_dir * 2.0 * s_radius), target=tuple(s_center),
                               up=(0.0, 1.0, 0.0) if abs(key_dir[1]) < 0.99 else (0.0, 0.0, 1.0), name="key")
            light_vp = _ortho(-s_radius, s_radius, -s_radius, s_radius, s_radius * 0.5, s_radius * 3.5) @ light_cam.view_matrix()
            shadow_objs = self._target("depth", (s.shadow_map_size, s.shadow_map_size))
            versions = tuple(gm.version for gm in gms)
            map_key = ("shadow", versions, light_vp.tobytes())
            target_key = ("depth", (s.shadow_map_size, s.shadow_map_size), 0)
            if not s.reuse_maps or self._map_keys.get(target_key) != map_key:
                if compute:
                    self.compute_raster.depth_map(gms, light_vp, (s.shadow_map_size, s.shadow_map_size), shadow_objs[0])
                else:
                    fbo = shadow_objs[0]
                    fbo.use()
                    fbo.clear(depth=1.0)
                    ctx.enable(ctx.DEPTH_TEST)
                    ctx.disable(ctx.CULL_FACE)
                    self._draw_depth(meshes, gms, light_vp)
                self._map_keys[target_key] = map_key
                self.frame_info["shadow_map"] = "drawn"
            else:
                self.frame_info["shadow_map"] = "reused"
            depth_range = 3.0 * s_radius
            light_size_uv = depth_range * math.tan(math.radians(lights.key_angle_deg)) / (2.0 * s_radius)
            mark("shadow")

        if s.shadows:
            # ---- contact map: from the floor looking up, occlusion of the lowest surface
            contact_h0 = 0.04 * (hi[1] - ground_y) + 0.004
            c_half = float(max(hi[0] - lo[0], hi[2] - lo[2])) * 0.5 + 0.3 * radius
            c_cam = Camera(position=(center[0], ground_y - 1e-4, center[2]), target=(center[0], ground_y + 1.0, center[2]),
                           up=(0.0, 0.0, -1.0), name="contact")
            contact_vp = _ortho(-c_half, c_half, -c_half, c_half, 0.0, 12.0 * contact_h0) @ c_cam.view_matrix()
            contact_objs = self._target("contact", (s.contact_map_size, s.contact_map_size))
            # (either rasteriser's map serves both: the same depths and heights up to edge ties)
            map_key = ("contact", tuple(gm.version for gm in gms), contact_vp.tobytes(), ground_y, contact_h0)
            target_key = ("contact", (s.contact_map_size, s.contact_map_size), 0)
            if compute and (not s.reuse_maps or self._map_keys.get(target_key) != map_key):
                self.compute_raster.contact_map(gms, contact_vp, (s.contact_map_size, s.contact_map_size), ground_y,
                                                contact_h0, contact_objs[1])
                contact_objs[1].build_mipmaps()
                self._map_keys[target_key] = map_key
                self.frame_info["contact_map"] = "drawn"
            elif not s.reuse_maps or self._map_keys.get(target_key) != map_key:
                contact_objs[0].use()
                contact_objs[0].clear(0.0, 0.0, 0.0, 0.0)
                ctx.disable(ctx.DEPTH_TEST)
                ctx.enable(ctx.BLEND)
                ctx.blend_equation = ctx.MAX
                prog = self.programs.get("contact.vert", "contact.frag")
                _set(prog, "u_view_proj", _f32(contact_vp))
                _set(prog, "u_ground_y", ground_y)
                _set(prog, "u_contact_height", contact_h0)
                for gm in gms:
                    self._vao(gm, prog, False, True).render()
                ctx.blend_equation = ctx.FUNC_ADD
                ctx.disable(ctx.BLEND)
                contact_objs[1].build_mipmaps()
                self._map_keys[target_key] = map_key
                self.frame_info["contact_map"] = "drawn"
            else:
                self.frame_info["contact_map"] = "reused"
            # blur radius ~ 2.5% of the contact map's width
            blur_px = 0.025 * s.contact_map_size
            contact_lod = math.log2(max(blur_px, 1.0))
            mark("contact")

        # ---- colour pass into the MSAA target: forward (shade every fragment; the preview window
        # and overlays) or deferred (G-buffer, then shade each pixel's distinct samples once)
        samples = max(1, min(s.samples, self.max_samples))
        visible_items = [m for m in meshes if m.material.visible]
        vertex_lit = bool(visible_items) and all(
            self._vertex_shading(s, item.material, gm, camera, aspect, h)
            for item, gm in zip(meshes, gms) if item.material.visible)
        mode = self._shading_mode(s, visible_items, samples, w * h, vertex_lit)
        if mode != "forward" and (overlay is not None or framebuffer is not None or samples < 2):
            mode = "forward"
        deferred = mode == "deferred"
        visibility = mode == "visibility"
        self.frame_info["shading"] = mode
        # the compute id pass keeps 8 bytes per sample in one storage buffer: up to 2 GiB (4x MSAA up to
        # ~8k x 8k); beyond, the GL id pass
        compute_ids = (visibility and compute
                       and w * h * len(self.compute_raster.sample_positions(samples)) * 8 <= MAX_ID_BUFFER_BYTES)
        if visibility and compute and not compute_ids:
            self.frame_info["raster"] = "compute maps, hardware ids"
        bg_srgb = np.asarray(s.background)
        if deferred:
            g = self._target("gbuffer", (w, h), samples)
            fbo = g[0]
            fbo.use()
            fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)       # slot 0: nothing drawn
        elif compute_ids:   # ids from the compute rasteriser (after the loop below)
            fbo = None
            vis = (None, None, None, *self._target("visibility_out", (w, h)))
        elif visibility:
            vis = self._target("visibility", (w, h), samples)
            fbo = vis[0]
            fbo.use()
            fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)       # id 0: nothing drawn
        else:
            msaa = self._target("msaa", (w, h), samples if samples > 1 else 0)
            fbo = msaa[0]
            fbo.use()
            if s.transparent:
                fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
            else:
                fbo.clear(*bg_srgb, 1.0, depth=1.0)
        ctx.enable(ctx.DEPTH_TEST)
        ctx.disable(ctx.CULL_FACE)
        ctx.disable(ctx.BLEND)

        def bind_shadows(prog) -> None:
            shadow_objs[2].use(location=1)
            shadow_objs[3].use(location=2)
            _set(prog, "u_shadow_cmp", 1)
            _set(prog, "u_shadow_depth", 2)
            _set(prog, "u_light_view_proj", _f32(light_vp))
            _set(prog, "u_light_size_uv", light_size_uv)
            _set(prog, "u_shadow_bias", 0.0015)

        def bind_lighting(prog) -> None:
            """Lights, environment, sheen table, exposure, shadow map: what shade_surface reads."""
            _set(prog, "u_camera_pos", tuple(camera.position))
            _set(prog, "u_exposure", s.exposure)
            self._sheen_lut.use(location=0)
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
            if key_shadow:
                bind_shadows(prog)

        def bind_ground(prog) -> None:
            _set(prog, "u_view_proj", _f32(view_proj))
            _set(prog, "u_ground_y", ground_y)
            # only where a shadow can fall (the key's shadow-map footprint on the floor); outside
            # it the cleared backdrop is the same colour, so the floor needs no shading there
            _set(prog, "u_ground_extent", (s_lo[0], s_lo[2], s_hi[0], s_hi[2]))
            _set(prog, "u_ground_fade", 0.25 * min(s_hi[0] - s_lo[0], s_hi[2] - s_lo[2]))
            _set(prog, "u_background", tuple(bg_srgb))
            _set(prog, "u_shadow_strength", 0.38)
            _set(prog, "u_contact_strength", 0.55)
            if key_shadow:
                bind_shadows(prog)
            contact_objs[1].use(location=5)
            _set(prog, "u_contact_occ", 5)
            _set(prog, "u_contact_view_proj", _f32(contact_vp))
            _set(prog, "u_contact_lod", contact_lod)
            _set(prog, "u_contact_radius_uv", blur_px / s.contact_map_size)

        tonemap = TONEMAPS[s.tonemap]
        visible = []
        for item, gm in zip(meshes, gms):
            mat: Material = item.material
            if not mat.visible:
                continue
            visible.append(mat)
            uv_ok = item.uvs is not None
            if mat.textured and not uv_ok:
                raise cs.InputError(f"mesh {item.name!r}: material {mat.name!r} has textures but the mesh has no uvs")
            uv_ok = uv_ok and mat.textured
            if compute_ids:
                continue
            if visibility:   # positions only; the compute pass fetches the rest by triangle id
                prog = self.programs.get("depth.vert", "visibility.frag")
                _set(prog, "u_view_proj", _f32(view_proj))
                _set(prog, "u_object", object_bits(len(visible) - 1))
                fbo.use()
                self._vao(gm, prog, False, True).render()
                continue
            vertex_shading = not deferred and self._vertex_shading(s, mat, gm, camera, aspect, h)
            vertex_shadow = key_shadow and not deferred and (
                vertex_shading or self._vertex_shadow(s, gm, 2.0 * s_radius / s.shadow_map_size))
            if vertex_shadow:
                self.frame_info["shadow_sampling"] = "vertex"
            if vertex_shading:
                self.frame_info["shading_rate"] = "vertex"
            defines = {"HAS_UV": uv_ok, "HAS_BASE_TEXTURE": mat.base_texture is not None, "VERTEX_SHADOW": vertex_shadow,
                       "VERTEX_SHADING": vertex_shading,
                       "HAS_NORMAL_MAP": mat.normal_map is not None,
                       "HAS_MR_TEXTURE": mat.metallic_roughness_texture is not None}
            if deferred:
                defines["GBUFFER"] = True
            else:
                defines.update({"TONEMAP": tonemap, "SHADOWS": key_shadow, "LIGHT_COUNT": lights.count})
            prog = self.programs.get("mesh.vert", "mesh.frag", defines)
            _set(prog, "u_view_proj", _f32(view_proj))
            _set(prog, "u_base_color", tuple(srgb_to_linear(mat.base_color)) + (1.0,))
            _set(prog, "u_metallic", mat.metallic)
            _set(prog, "u_roughness", mat.roughness)
            if deferred:
                _set(prog, "u_slot", float(len(visible)))
            else:
                _set(prog, "u_sheen_color", tuple(srgb_to_linear(mat.sheen_color)))
                _set(prog, "u_sheen_roughness", mat.sheen_roughness)
                bind_lighting(prog)
            if mat.textured:
                _set(prog, "u_uv_scale", tuple(mat.uv_scale))
            if mat.base_texture is not None:
                self._texture(mat.base_texture, srgb=True).use(location=3)
                _set(prog, "u_base_texture", 3)
            if mat.normal_map is not None:
                self._texture(mat.normal_map, srgb=False).use(location=4)
                _set(prog, "u_normal_map", 4)
                _set(prog, "u_normal_scale", (mat.normal_scale, -mat.normal_scale if mat.normal_y_flip else mat.normal_scale))
            if mat.metallic_roughness_texture is not None:
                self._texture(mat.metallic_roughness_texture, srgb=False).use(location=6)
                _set(prog, "u_mr_texture", 6)
            fbo.use()
            self._vao(gm, prog, uv_ok, False).render()

        vis_ids = None
        if compute_ids:
            vis_gms = [gm for item, gm in zip(meshes, gms) if item.material.visible]
            ground = (ground_y, (s_lo[0], s_lo[2], s_hi[0], s_hi[2])) if draw_ground else None
            inv_vp = np.linalg.inv(view_proj)
            vis_ids, vis_samples = self.compute_raster.ids(vis_gms, [object_bits(k) for k in range(len(vis_gms))],
                                                           view_proj, (w, h), samples, ground, inv_vp)
        elif draw_ground:
            if visibility:
                prog = self.programs.get("ground.vert", "visibility.frag")
                _set(prog, "u_view_proj", _f32(view_proj))
                _set(prog, "u_ground_y", ground_y)
                _set(prog, "u_ground_extent", (s_lo[0], s_lo[2], s_hi[0], s_hi[2]))
                _set(prog, "u_object", GROUND_OBJECT << 24)
            elif deferred:
                prog = self.programs.get("ground.vert", "ground.frag", {"GBUFFER": True})
                _set(prog, "u_view_proj", _f32(view_proj))
                _set(prog, "u_ground_y", ground_y)
                _set(prog, "u_ground_extent", (s_lo[0], s_lo[2], s_hi[0], s_hi[2]))
                _set(prog, "u_slot", float(GROUND_SLOT))
            else:
                prog = self.programs.get("ground.vert", "ground.frag", {"TRANSPARENT": s.transparent, "KEY_SHADOW": key_shadow})
                bind_ground(prog)
            fbo.use()
            # drawn after the meshes: the depth test keeps it behind them, and it never overwrites cloth
            ctx.depth_func = "<="
            self._ground_vao(prog).render(mode=ctx.TRIANGLE_STRIP, vertices=4)
            ctx.depth_func = "<"
        mark("main")

        if overlay is not None:
            fbo.use()
            ctx.enable(ctx.DEPTH_TEST)
            overlay(ctx, view_proj, camera, near, far)
            fbo.use()

        if framebuffer is not None:   # resolve straight into the caller's framebuffer (a window)
            ctx.copy_framebuffer(framebuffer, fbo)
            return None

        if visibility:
            # ---- compute: per pixel, reconstruct and shade each distinct triangle, resolve, tone map
            src = vis[4]
            defines = {"SAMPLES": vis_samples if vis_ids is not None else self._texture_samples(samples),
                       "COMPUTE_IDS": vis_ids is not None, "GEOMETRY_BUFFERS": self._vis_geometry.use_buffers,
                       "LIGHT_COUNT": lights.count,
                       "SHADOWS": key_shadow,
                       "KEY_SHADOW": key_shadow, "TRANSPARENT": s.transparent, "HAS_GROUND": draw_ground,
                       "TONEMAP": tonemap, "MERGE": self.visibility_merge, "TEX_WIDTH": TEX_WIDTH, **slot_defines(visible_items)}
            prog = self.programs.get_compute("visibility.comp", defines)
            bind_lighting(prog)
            if draw_ground:
                bind_ground(prog)
            vis_gms = [gm for item, gm in zip(meshes, gms) if item.material.visible]
            self._vis_geometry.bind(visible_items, vis_gms, defines["UV_MASK"], first_unit=GEOMETRY_UNIT)
            _set(prog, "u_vertex_base", self._vis_geometry.vertex_base.tobytes())
            _set(prog, "u_triangle_base", self._vis_geometry.triangle_base.tobytes())
            for name, value in material_uniforms(visible_items).items():
                _set(prog, name, value)
            # llvmpipe: material textures through a sampler without anisotropy (its anisotropic
            # filter reads quad derivatives, which a compute shader lacks: blurred or wrong texels
            # even with textureGrad/textureLod)
            iso = self._isotropic_sampler() if self.software_raster else None
            iso_units = []
            for k, item in enumerate(visible_items[:MAX_TEXTURED_SLOT]):
                mat = item.material
                kinds = ((mat.base_texture, True), (mat.normal_map, False), (mat.metallic_roughness_texture, False))
                for unit, (path, srgb) in zip((8, 8 + MAX_TEXTURED_SLOT, 8 + 2 * MAX_TEXTURED_SLOT), kinds):
                    if path is not None and item.uvs is not None:
                        self._texture(path, srgb=srgb).use(location=unit + k)
                        if iso is not None:
                            iso.use(location=unit + k)
                            iso_units.append(unit + k)
            if vis_ids is not None:
                vis_ids.bind_to_storage_buffer(4)
            else:
                vis[1].use(location=7)
                _set(prog, "u_vis", 7)
            vis[3].bind_to_image(0, read=False, write=True)
            if vis_ids is None:
                inv_vp = np.linalg.inv(view_proj)
            _set(prog, "u_inv_view_proj", _f32(inv_vp))
            _set(prog, "u_size", (w, h))
            _set(prog, "u_ground_y", ground_y)
            _set(prog, "u_clear", (0.0, 0.0, 0.0, 0.0) if s.transparent else (*bg_srgb, 1.0))
            prog.run((w + LOCAL_SIZE - 1) // LOCAL_SIZE, (h + LOCAL_SIZE - 1) // LOCAL_SIZE, 1)
            ctx.memory_barrier()
            for unit in iso_units:
                iso.clear(location=unit)
            mark("shade")
        elif deferred:
            # ---- shade each pixel's distinct samples once, tone map, average: the resolve folded in
            src = self._target("resolve", (w, h))[0]
            src.use()
            ctx.disable(ctx.DEPTH_TEST)
            defines = {"SAMPLES": self._texture_samples(samples), "SLOTS": max(len(visible), 1),
                       "GROUND_SLOT": GROUND_SLOT,
                       "LIGHT_COUNT": lights.count, "SHADOWS": key_shadow, "KEY_SHADOW": key_shadow,
                       "TRANSPARENT": s.transparent, "HAS_GROUND": draw_ground, "TONEMAP": tonemap}
            prog = self.programs.get("deferred.vert", "deferred.frag", defines)
            bind_lighting(prog)
            if draw_ground:
                bind_ground(prog)
            for loc, (name, tex) in enumerate(zip(("u_g_position", "u_g_normal", "u_g_base"), g[1:4]), start=7):
                tex.use(location=loc)
                _set(prog, name, loc)
            _set(prog, "u_clear", (0.0, 0.0, 0.0, 0.0) if s.transparent else (*bg_srgb, 1.0))
            _, fov_y = camera.fov(aspect)
            _set(prog, "u_merge_scale", 0.5 * 2.0 * math.tan(0.5 * fov_y) / h)
            if visible:
                _set(prog, "u_sheen_colors", np.array([srgb_to_linear(m.sheen_color) for m in visible], np.float32).tobytes())
                _set(prog, "u_sheen_roughnesses",
                     np.array([min(max(m.sheen_roughness, 0.03), 1.0) for m in visible], np.float32).tobytes())
            self._ground_vao(prog).render(mode=ctx.TRIANGLES, vertices=3)
            ctx.enable(ctx.DEPTH_TEST)
            mark("shade")
        elif samples > 1:
            # ---- resolve
            src = self._target("resolve", (w, h))[0]
            ctx.copy_framebuffer(src, fbo)
            mark("resolve")
        else:
            src = fbo
        # read straight into a fresh array (no zero fill, no intermediate bytes) and return it
        # flipped as a view (GL's first row is the bottom one): no extra 8 MB copy at 1080p
        buf = np.empty((h, w, 4), dtype=np.uint8)
        src.read_into(buf, components=4, alignment=1)
        mark("readback")
        img = buf[::-1]
        if s.transparent:
            img = _unpremultiply(img)
        return img

    def gl_nbytes(self) -> dict:
        """Bytes of GL memory this Renderer holds, by kind: mesh buffers, textures, render targets
        (sizes as allocated; MSAA targets count every sample)."""
        meshes = 0
        for gm in self._meshes.values():
            for name in ("vbo_pos", "vbo_nrm", "vbo_uv", "ibo"):
                buf = getattr(gm, name)
                if buf is not None:
                    meshes += buf.size
        textures = self._sheen_lut.width * self._sheen_lut.height * 4
        for tex in self._textures.values():
            textures += int(tex.width * tex.height * 4 * 4 / 3)   # with its mip chain
        targets = 0
        for key, objs in self._targets.items():
            if key[0] in ("ground", "sampler"):
                continue
            kind, (w, h), samples = key
            px = w * h * max(int(samples), 1)
            targets += {"msaa": 8 * px, "resolve": 4 * px, "depth": 4 * px, "contact": int(2 * px * 4 / 3),
                        "gbuffer": 36 * px, "visibility": 8 * px + 4 * w * h, "visibility_out": 4 * px}[kind]
        meshes += self._vis_geometry.nbytes()
        targets += self.compute_raster.nbytes()
        return {"meshes": int(meshes), "textures": int(textures), "targets": int(targets),
                "total": int(meshes + textures + targets)}

    def _texture_samples(self, samples: int) -> int:
        """The sample count of a multisampled texture asked for with ``samples`` (a driver may round
        up: llvmpipe makes 2x textures 4x). The per-pixel passes (deferred, visibility) read every
        sample of their targets, so their SAMPLES define is this. Asked once per count."""
        got = self._sample_counts.get(samples)
        if got is None:
            ctx = self.ctx
            tex = ctx.texture((1, 1), 1, dtype="u4", samples=samples)
            buf = ctx.buffer(reserve=4)
            try:
                prog = self.programs.get_compute("texture_samples.comp")
                tex.use(location=7)
                _set(prog, "u_texture", 7)
                buf.bind_to_storage_buffer(0)
                prog.run(1, 1, 1)
                ctx.memory_barrier()
                got = int(np.frombuffer(buf.read(), np.int32)[0])
            finally:
                tex.release()
                buf.release()
            self._sample_counts[samples] = got = max(got, samples)
        return got

    def _isotropic_sampler(self):
        """A trilinear, repeating sampler without anisotropic filtering (the visibility pass's
        material textures on software rasterisers); owned with the render targets."""
        objs = self._targets.get(("sampler", "isotropic"))
        if objs is None:
            ctx = self.ctx
            smp = ctx.sampler(filter=(ctx.LINEAR_MIPMAP_LINEAR, ctx.LINEAR), repeat_x=True, repeat_y=True,
                              anisotropy=1.0)
            objs = self._targets[("sampler", "isotropic")] = (smp,)
        return objs[0]

    def _shading_mode(self, s: RenderSettings, visible_items, samples: int, pixels: int, vertex_lit: bool = False) -> str:
        """The colour pass's mode for settings ``s``: "forward", "deferred" or "visibility"
        (RenderSettings.shading; "auto" as documented there). ``vertex_lit``: the forward pass would
        light every visible mesh per vertex (shading_rate): then forward on software rasterisers,
        where it beat the visibility path (1 M triangles at 1080p on llvmpipe: 1212 vs 1798 ms CPU)."""
        reason = unsupported_reason(visible_items, samples)
        if s.shading == "visibility":
            return "visibility" if reason is None else "forward"
        if s.shading != "auto":
            return s.shading
        if not self.software_raster:
            return "visibility" if reason is None and VISIBILITY_AUTO_HARDWARE else "forward"
        tris = sum(len(m.triangles) for m in visible_items)
        if tris < DEFERRED_MIN_TRIANGLES_PER_PIXEL * pixels or vertex_lit:
            return "forward"
        return "visibility" if reason is None and VISIBILITY_AUTO_SOFTWARE else "deferred"

    def _vertex_shadow(self, s: RenderSettings, gm: _GpuMesh, texel: float) -> bool:
        """Whether the forward pass looks the key shadow up per vertex for mesh ``gm``
        (RenderSettings.shadow_sampling; ``texel``: the shadow map's texel [m])."""
        if s.shadow_sampling != "auto":
            return s.shadow_sampling == "vertex"
        return (self.software_raster and gm.mean_edge is not None
                and gm.mean_edge <= VERTEX_SHADOW_MAX_EDGE_TEXELS * texel)

    def _vertex_shading(self, s: RenderSettings, mat: Material, gm: _GpuMesh, camera: Camera, aspect: float,
                        height: int) -> bool:
        """Whether the forward pass lights mesh ``gm`` per vertex (RenderSettings.shading_rate):
        never for textured or normal-mapped materials; "auto" as documented there, the mean edge
        projected at the distance of the mesh's centre."""
        if s.shading_rate == "pixel" or mat.textured:
            return False
        if s.shading_rate == "vertex":
            return True
        if (not (self.software_raster and VERTEX_SHADING_AUTO_SOFTWARE) or gm.mean_edge is None or gm.bounds is None
                or mat.roughness < VERTEX_SHADING_MIN_ROUGHNESS):
            return False
        centre = 0.5 * (gm.bounds[0] + gm.bounds[1])
        dist = max(float(np.linalg.norm(np.subtract(camera.position, centre))), 1e-6)
        _, fov_y = camera.fov(aspect)
        px_per_m = height / (2.0 * math.tan(0.5 * fov_y) * dist)
        return gm.mean_edge * px_per_m <= VERTEX_SHADING_MAX_EDGE_PX

    def _raster_mode(self, s: RenderSettings) -> str:
        """How this frame's id pass and depth-only maps are rasterised: "compute" or "hardware"
        (RenderSettings.raster; "auto" as documented there)."""
        if s.raster != "auto":
            return s.raster
        auto = RASTER_AUTO_SOFTWARE if self.software_raster else RASTER_AUTO_HARDWARE_GPU
        return "compute" if auto else "hardware"

    def _ground_vao(self, prog):
        key = ("ground", id(prog))
        vao = self._targets.get(key)
        if vao is None:
            vao = (self.ctx.vertex_array(prog, []),)
            self._targets[key] = vao
        return vao[0]

    def render_depth(self, meshes: Sequence[MeshItem], camera: Camera, width: int, height: int,
                     near: float | None = None, far: float | None = None) -> np.ndarray:
        """Linear depth along the view axis [m], (H, W) float32, 0 where nothing was drawn
        (pyrender's convention). Hidden materials are drawn too. Single-sampled at pixel centres."""
        self._check_alive()
        with self.ctx:
            return self._render_depth(meshes, camera, width, height, near, far)

    def _render_depth(self, meshes, camera, width, height, near, far) -> np.ndarray:
        RenderSettings(width=width, height=height)  # validates the size
        meshes = list(meshes)
        gms = [self._gpu_mesh(f"{i}:{m.name}", m) for i, m in enumerate(meshes)]
        lo, hi = self.scene_bounds(meshes)
        center = 0.5 * (lo + hi)
        radius = max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)
        dist = float(np.linalg.norm(np.subtract(camera.position, center)))
        near = near or camera.near or max(0.02 * dist, dist - 2.5 * radius, 1e-3)
        far = far or camera.far or (dist + 5.0 * radius)
        vp = camera.projection_matrix(width / height, near, far) @ camera.view_matrix()
        objs = self._target("depth", (width, height))
        self._map_keys.pop(("depth", (width, height), 0), None)   # no longer a shadow map
        objs[0].use()
        objs[0].clear(depth=1.0)
        self.ctx.enable(self.ctx.DEPTH_TEST)
        self.ctx.disable(self.ctx.CULL_FACE)
        self._draw_depth(meshes, gms, vp)
        d = np.frombuffer(objs[0].read(components=1, attachment=-1, dtype="f4"), dtype=np.float32).reshape(height, width)[::-1]
        z_ndc = 2.0 * d.astype(np.float64) - 1.0
        z = 2.0 * far * near / (far + near - z_ndc * (far - near))
        return np.where(d < 1.0, z, 0.0).astype(np.float32)



def _unpremultiply(img: np.ndarray) -> np.ndarray:
    """Premultiplied RGBA (what the resolve averaged) -> straight alpha, as PNG stores it."""
    a = img[..., 3:4].astype(np.float32)
    rgb = img[..., :3].astype(np.float32)
    out = img.copy()
    out[..., :3] = np.where(a > 0, np.clip(np.round(rgb * 255.0 / np.maximum(a, 1.0)), 0, 255), 0).astype(np.uint8)
    return out

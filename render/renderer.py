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

The passes live in render.passes (maps, colour, shade), what they share in render.frame, the
per-frame mode choices in render.shading_modes, targets and textures in render.targets and the
mesh mirrors in render.gpu_mesh; this module keeps the GL objects and runs the passes in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

import clothsim as cs

from .camera import Camera
from .frame import Frame, PassClock
from .gl import create_headless_context
from .gl import mat4_bytes as _f32, set_uniform as _set  # noqa: F401  (_f32, _set: re-exported, render.preview.overlay)
from .gpu_mesh import _VERSIONS, _GpuMesh
from .material import EmbeddedImage, MeshItem
from .passes import colour, maps, shade
from .passes.colour import GROUND_SLOT, MAX_ID_BUFFER_BYTES  # noqa: F401  (re-exported)
from .passes.shade import _unpremultiply
from .settings import (  # noqa: F401  (RenderSettings and the constants are re-exported from here)
    DEFERRED_MIN_TRIANGLES_PER_PIXEL, GL_SRGB8_ALPHA8, MAX_IMAGE_SIDE, RASTER_AUTO_HARDWARE_GPU, RASTER_AUTO_SOFTWARE,
    RASTERS, SHADING, SHADING_RATES, SHADOW_SAMPLINGS, SOFTWARE_RENDERERS, TONEMAPS, VERTEX_SHADING_MAX_EDGE_PX,
    VERTEX_SHADING_AUTO_SOFTWARE, VERTEX_SHADING_MIN_ROUGHNESS, VERTEX_SHADOW_MAX_EDGE_TEXELS,
    VISIBILITY_AUTO_HARDWARE, VISIBILITY_AUTO_SOFTWARE, RenderSettings, _bounds, _ortho, mean_edge_length, vertex_normals,
)
from .raster import ComputeRaster
from .shaders import ProgramCache
from .shading_modes import raster_mode
from .sheen import stored_sheen_albedo_table
from .targets import create_target, create_texture, target_nbytes, texture_key
from .visibility import VisibilityGeometry


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
            objs = self._targets[key] = create_target(self.ctx, kind, size, samples)
        return objs

    def _texture(self, path: Path | EmbeddedImage, srgb: bool):
        key = texture_key(path, srgb)
        tex = self._textures.get(key)
        if tex is None:
            tex = self._textures[key] = create_texture(self.ctx, path, srgb)
        return tex

    def _gpu_mesh(self, key: str, item: MeshItem, upload: bool = True) -> _GpuMesh:
        gm = self._meshes.get(key)
        if gm is None:
            gm = self._meshes[key] = _GpuMesh()
        gm.update(self.ctx, item, upload)
        return gm

    def _vao(self, gm: _GpuMesh, program, with_uv: bool, depth_only: bool):
        return gm.vao(self.ctx, program, with_uv, depth_only)

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
        clock = PassClock(self)
        self.frame_info = {"shadow_map": "none", "contact_map": "none"}
        compute = raster_mode(s, self.software_raster) == "compute"
        self.frame_info["raster"] = "compute" if compute else "hardware"
        self.frame_info["shadow_sampling"] = "pixel"
        self.frame_info["shading_rate"] = "pixel"
        if self.profile:
            self.stats = {}
        gms, los, his = self._upload_meshes(meshes, device_positions)
        f = Frame.start(s, meshes, gms, camera, los, his, self._sheen_lut, compute)
        clock.mark("setup")

        if f.key_shadow:
            maps.draw_shadow_map(self, f)
            clock.mark("shadow")
        if s.shadows:
            maps.draw_contact_map(self, f)
            clock.mark("contact")

        cp = colour.choose_colour_pass(self, f, overlay, framebuffer)
        colour.begin_colour_pass(self, f, cp)
        colour.draw_meshes(self, f, cp)
        if cp.compute_ids:
            colour.draw_compute_ids(self, f, cp)
        elif f.draw_ground:
            colour.draw_ground(self, f, cp)
        clock.mark("main")

        if overlay is not None:
            cp.fbo.use()
            ctx.enable(ctx.DEPTH_TEST)
            overlay(ctx, f.view_proj, camera, f.near, f.far)
            cp.fbo.use()
        if framebuffer is not None:   # resolve straight into the caller's framebuffer (a window)
            ctx.copy_framebuffer(framebuffer, cp.fbo)
            return None

        if cp.visibility:
            src = shade.shade_visibility(self, f, cp)
            clock.mark("shade")
        elif cp.deferred:
            src = shade.shade_deferred(self, f, cp)
            clock.mark("shade")
        elif cp.samples > 1:
            src = shade.resolve(self, f, cp)
            clock.mark("resolve")
        else:
            src = cp.fbo
        img = shade.read_back(src, f)
        clock.mark("readback")
        if s.transparent:
            img = _unpremultiply(img)
        return img

    def _upload_meshes(self, meshes: list[MeshItem], device_positions) -> tuple[list, list, list]:
        """The GL mirror of each mesh (positions from the host, or from a Warp array in ``device_positions``)
        and each mesh's bounds (lo, hi) [m]."""
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
        return gms, los, his

    def gl_nbytes(self) -> dict:
        """Bytes of GL memory this Renderer holds, by kind: mesh buffers, textures, render targets
        (sizes as allocated; MSAA targets count every sample)."""
        meshes = sum(gm.nbytes() for gm in self._meshes.values())
        textures = self._sheen_lut.width * self._sheen_lut.height * 4
        for tex in self._textures.values():
            textures += int(tex.width * tex.height * 4 * 4 / 3)   # with its mip chain
        targets = 0
        for key, objs in self._targets.items():
            if key[0] in ("ground", "sampler"):
                continue
            targets += target_nbytes(*key)
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

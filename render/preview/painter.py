"""The preview's fast look: what a DCC viewport draws while you work (Blender's solid / material preview),
not the catalog renderer's full PBR + PCSS + MSAA.

    painter = PreviewPainter(ctx, programs)
    painter.draw(items, camera, fbo, (1280, 720), samples=1, shadows=True)   # fbo: colour + depth
    painter.release()

Shading (``shaders/preview_light.glsl``, used by ``preview_shade.*``): hemisphere ambient (the studio dome's sky and floor), a key light
fixed in the world (the studio key as seen from the front view, so a front view looks like the catalog's)
with an optional shadow, a fill light on the camera's side (every view stays readable), a Blinn-Phong
highlight from the material's roughness and a grazing-angle sheen term from its sheen colour; the Khronos
PBR Neutral tone map and sRGB encoding as in the catalog renderer. Per pixel that is a handful of
multiply-adds and no texture lookup, against the catalog shader's GGX + Charlie sheen under three lights,
a sheen table and a 20-tap PCSS.

The key's shadow is a visibility per vertex: when the meshes move, a 1024^2 shadow map is drawn and
``shaders/preview_visibility.vert`` samples it at every vertex (3 x 3 bilinear PCF taps) into a buffer by
transform feedback; the colour pass interpolates it. On llvmpipe four PCF lookups per pixel cost as much
as the rest of the shading; per vertex they cost a fraction of a millisecond, once per simulated frame.
The shadow is as sharp as the mesh (soft on a 40 mm garment, crisp on the 14k-vertex avatar).

Closed meshes (every edge shared by two triangles in opposite directions, positive volume: the avatar) are
drawn with back faces culled, which halves the triangles the rasteriser sets up; garments stay two-sided.
Dense closed meshes are lit per vertex (``PER_VERTEX``: the avatar's 14k vertices against ~100k pixels it
covers); garments per pixel (a 40 mm garment's triangles span dozens of pixels) in a still view, per vertex
(both sides' colours, picked by the side a triangle shows) while the view moves (``gouraud``): the garment's
pixels then cost an interpolation, about half of their per-pixel cost on llvmpipe. The two differ by a few
levels inside large triangles (the interpolated normal is not renormalised, highlights are broad on fabric).

What it keeps between frames (Mesa llvmpipe draws a 1280x720 frame on 2 CPU cores, so nothing is redone
that did not change):

* mesh buffers per MeshItem name: positions and normals are uploaded only when the item's vertex array is a
  new object (the avatar, static during a drape, is uploaded once; the garment once per simulated frame);
* the key light's shadow map: the key is fixed in the world, so the map is redrawn only when a mesh's
  positions or the scene bounds change (a new simulated frame), never while the camera orbits;
* VAOs, programs (the Renderer's :class:`~render.shaders.ProgramCache`) and render targets.

Owns every GL object it creates; :meth:`release` frees them (idempotent). No GL in ``__del__``.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from ..camera import Camera
from ..gl import mat4_bytes as _f32, release_gl, set_uniform as _set, upload_indices
from ..lighting import Light, StudioRig
from ..material import MeshItem, srgb_to_linear
from ..settings import _bounds, _ortho, vertex_normals

_VERSIONS = itertools.count(1)

BACKGROUND = (243 / 255, 242 / 255, 240 / 255)   # the catalog backdrop #f3f2f0 (sRGB), so both looks match
SHADOW_MAP_SIZE = 1024                           # [px]; the map is redrawn only when the meshes move
# closed meshes with at least this many vertices are lit per vertex (the avatar, 14k vertices: its triangles
# cover a few pixels each, so the interpolated colour matches per-pixel lighting)
PER_VERTEX_MIN_VERTICES = 2000


@dataclass(frozen=True)
class PreviewLights:
    """The preview's lights, world space, linear RGB (units of :mod:`render.lighting`).

    ``key_dir``: unit vector towards the key, fixed in the world; ``fill_azimuth_deg`` / ``fill_elevation_deg``:
    the fill, relative to the camera like the studio rig's lights; ``sky`` / ``floor``: ambient radiance from
    straight up / down (mixed by the normal's height).
    """

    key_dir: tuple[float, float, float]
    key: tuple[float, float, float]
    fill: tuple[float, float, float]
    fill_azimuth_deg: float
    fill_elevation_deg: float
    sky: tuple[float, float, float]
    floor: tuple[float, float, float]
    exposure: float = 0.8

    @classmethod
    def studio(cls, rig: StudioRig | None = None) -> "PreviewLights":
        """From the catalog's studio rig: its key placed for the front view and kept there, a camera-side fill
        (the rig's fill and rim together, 1.9 lux, from 30 degrees right and 20 up) and the dome's irradiance
        formula (render's ``env_irradiance``) evaluated straight up and down."""
        rig = rig or StudioRig()
        front = Camera(position=(0.0, 1.0, 3.0), target=(0.0, 1.0, 0.0))
        key_dir = Light(rig.key.azimuth_deg, rig.key.elevation_deg, rig.key.radiance).direction(front)
        top, hor, bot = (np.asarray(c, np.float64) for c in (rig.env_top, rig.env_horizon, rig.env_bottom))
        sky = rig.env_intensity * (hor + 0.6 * (top - hor))
        floor = rig.env_intensity * (bot + 0.6 * (hor - bot))
        fill = np.asarray(rig.fill.radiance) + np.asarray(rig.rim.radiance)
        return cls(tuple(float(c) for c in key_dir), tuple(rig.key.radiance), tuple(float(c) for c in fill),
                   30.0, 20.0, tuple(float(c) for c in sky), tuple(float(c) for c in floor))


class _Mesh:
    """GL buffers of one MeshItem (positions, normals, indices) and its VAOs."""

    def __init__(self) -> None:
        self.pos = self.nrm = self.ibo = None
        self.vertex_count = self.index_count = 0
        self.vis = None                 # key-light visibility per vertex (float32), see the module docstring
        self.vis_key = None
        self.vertices_ref = self.triangles_ref = None
        self.version = 0
        self.bounds = None
        self.closed = False
        self.vaos: dict[int, object] = {}

    def release(self) -> None:
        release_gl(self, self.vaos, ("pos", "nrm", "ibo", "vis"))

    def nbytes(self) -> int:
        return sum(b.size for b in (self.pos, self.nrm, self.ibo, self.vis) if b is not None)


class PreviewPainter:
    """Draws MeshItems with the preview look into a framebuffer (see the module docstring).

    Args:
        ctx: the window's moderngl context; programs: a :class:`render.shaders.ProgramCache` of it.
        lights: :class:`PreviewLights` (default: from the studio rig).
    """

    def __init__(self, ctx, programs, lights: PreviewLights | None = None) -> None:
        self.ctx = ctx
        self.programs = programs
        self.lights = lights or PreviewLights.studio()
        self._meshes: dict[str, _Mesh] = {}
        self._targets: dict[tuple, tuple] = {}
        self._shadow = None
        self._shadow_key = None
        self._vis_prog = None
        self._released = False
        #: light dense closed meshes per vertex (see PER_VERTEX_MIN_VERTICES); False: everything per pixel
        self.per_vertex = True
        #: True: every phase ends with glFinish and its wall time [ms] goes to ``stats`` (profiling only)
        self.profile = False
        self.stats: dict[str, float] = {}
        #: how the last frame was made: samples, shadow map "drawn" / "reused" / "none"
        self.frame_info: dict[str, object] = {}

    # ------------------------------------------------------------------ resources
    def _mesh(self, key: str, item: MeshItem) -> _Mesh:
        gm = self._meshes.get(key)
        if gm is None:
            gm = self._meshes[key] = _Mesh()
        ctx = self.ctx
        n = len(item.vertices)
        if gm.pos is None or gm.vertex_count != n:
            gm.release()
            gm.pos = ctx.buffer(reserve=n * 12, dynamic=True)
            gm.nrm = ctx.buffer(reserve=n * 12, dynamic=True)
            gm.vis = ctx.buffer(reserve=n * 4, dynamic=True)
            gm.vis_key = None
            gm.vertex_count = n
            gm.vertices_ref = gm.triangles_ref = None
        if gm.triangles_ref is not item.triangles:
            upload_indices(ctx, gm, item.triangles)
            gm.vertices_ref = None      # normals depend on the triangles too
            gm.closed = is_closed_outward(item.vertices, item.triangles)
        if gm.vertices_ref is not item.vertices:
            gm.pos.write(item.vertices.tobytes())
            gm.nrm.write(vertex_normals(item.vertices, item.triangles).tobytes())
            gm.vertices_ref = item.vertices
            gm.bounds = _bounds(item.vertices)
            gm.version = next(_VERSIONS)
        return gm

    def _vao(self, gm: _Mesh, prog, attrs: tuple[str, ...] = ("pos",), indexed: bool = True):
        vao = gm.vaos.get(id(prog))
        if vao is None:
            fmt = {"pos": ("3f", "in_position"), "nrm": ("3f", "in_normal"), "vis": ("1f", "in_vis")}
            content = [(getattr(gm, a), *fmt[a]) for a in attrs]
            kw = {"index_buffer": gm.ibo, "index_element_size": 4} if indexed else {}
            vao = gm.vaos[id(prog)] = self.ctx.vertex_array(prog, content, **kw)
        return vao

    def _visibility_program(self):
        """The transform-feedback program (not in the ProgramCache: it needs its captured varying)."""
        if self._vis_prog is None:
            from ..shaders import load_source

            self._vis_prog = self.ctx.program(vertex_shader=load_source("preview_visibility.vert"),
                                              varyings=["out_vis"])
        return self._vis_prog

    def target(self, size: tuple[int, int], samples: int = 0, texture: bool = False):
        """A cached framebuffer of ``size`` [px] with an RGBA8 colour and a depth attachment: ``(fbo, colour,
        depth)``. ``samples`` > 1: multisampled; ``texture``: the colour is a (bilinear) texture."""
        key = (tuple(size), samples, texture)
        objs = self._targets.get(key)
        if objs is None:
            ctx = self.ctx
            if texture:
                colour = ctx.texture(size, 4)
                colour.filter = (ctx.LINEAR, ctx.LINEAR)
                colour.repeat_x = colour.repeat_y = False
            else:
                colour = ctx.renderbuffer(size, 4, samples=samples)
            depth = ctx.depth_renderbuffer(size, samples=samples)
            objs = self._targets[key] = (ctx.framebuffer([colour], depth), colour, depth)
        return objs

    def drop_targets(self, keep_size: tuple[int, int] | None = None) -> None:
        """Free cached render targets (all, or those not of ``keep_size``), e.g. after a window resize."""
        for key in [k for k in self._targets if keep_size is None or k[0] != tuple(keep_size)]:
            for o in self._targets.pop(key):
                o.release()

    def _shadow_objs(self):
        if self._shadow is None:
            ctx = self.ctx
            tex = ctx.depth_texture((SHADOW_MAP_SIZE, SHADOW_MAP_SIZE))
            tex.repeat_x = tex.repeat_y = False
            tex.filter = (ctx.LINEAR, ctx.LINEAR)
            tex.compare_func = "<="
            self._shadow = (ctx.framebuffer(depth_attachment=tex), tex)
        return self._shadow

    def nbytes(self) -> int:
        """GL bytes held: mesh buffers, render targets (every sample counted), the shadow map."""
        total = sum(gm.nbytes() for gm in self._meshes.values())
        for (size, samples, _), _objs in self._targets.items():
            total += 8 * size[0] * size[1] * max(samples, 1)
        if self._shadow is not None:
            total += 4 * SHADOW_MAP_SIZE * SHADOW_MAP_SIZE
        return int(total)

    # ------------------------------------------------------------------ frame
    def draw(self, items, camera: Camera, fbo, size: tuple[int, int], *, samples: int = 1, shadows: bool = True,
             gouraud: bool = False, background=BACKGROUND, overlay=None) -> None:
        """Draw ``items`` (MeshItems; hidden materials cast shadows only) seen by ``camera`` into ``fbo``.

        Args:
            fbo: the destination framebuffer of ``size`` [px]; it needs a depth attachment when ``samples`` is 1
                (drawn straight into it); with ``samples`` > 1 the frame is drawn into a multisampled target and
                resolved into ``fbo``'s colour.
            shadows: the key light's shadow map (cached: see the module docstring).
            gouraud: light every mesh per vertex (a moving view: the per-pixel work drops to interpolating a
                colour); False: only dense closed meshes (the avatar), garments per pixel.
            overlay: ``overlay(ctx, view_proj, camera, near, far)`` runs after the meshes, depth test on, in
                the same framebuffer (the preview's views), as with :meth:`render.Renderer.render`.
        """
        if self._released:
            raise RuntimeError("this PreviewPainter was released")
        ctx = self.ctx
        clock = [time.perf_counter()]
        stats = {}

        def mark(name: str) -> None:
            if self.profile:
                ctx.finish()
                t = time.perf_counter()
                stats[name] = 1e3 * (t - clock[0])
                clock[0] = t

        w, h = int(size[0]), int(size[1])
        samples = max(1, min(int(samples), int(ctx.max_samples)))
        gms = [self._mesh(f"{i}:{it.name}", it) for i, it in enumerate(items)]
        lo = np.min([gm.bounds[0] for gm in gms], axis=0)
        hi = np.max([gm.bounds[1] for gm in gms], axis=0)
        center = 0.5 * (lo + hi)
        radius = max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)
        dist = float(np.linalg.norm(np.subtract(camera.position, center)))
        near = camera.near or max(0.02 * dist, dist - 2.5 * radius, 1e-3)
        far = camera.far or (dist + 5.0 * radius)
        view_proj = camera.projection_matrix(w / h, near, far) @ camera.view_matrix()
        L = self.lights
        mark("upload")

        # ---- key-light shadow map: orthographic around the bounding sphere; redrawn only when meshes move
        info = {"samples": samples, "shadow_map": "none"}
        if shadows:
            key_dir = np.asarray(L.key_dir, np.float64)
            r = 1.05 * radius
            up = (0.0, 1.0, 0.0) if abs(key_dir[1]) < 0.99 else (0.0, 0.0, 1.0)
            light_cam = Camera(position=tuple(center + 2.0 * r * key_dir), target=tuple(center), up=up, name="key")
            light_vp = _ortho(-r, r, -r, r, 0.5 * r, 3.5 * r) @ light_cam.view_matrix()
            sfbo, stex = self._shadow_objs()
            key = (tuple(gm.version for gm in gms), light_vp.tobytes())
            if key != self._shadow_key:
                sfbo.use()
                sfbo.clear(depth=1.0)
                ctx.enable(ctx.DEPTH_TEST)
                ctx.disable(ctx.CULL_FACE | ctx.BLEND)
                prog = self.programs.get("preview_depth.vert", "preview_depth.frag")
                prog["u_view_proj"].write(_f32(light_vp))
                for gm in gms:
                    self._vao(gm, prog).render()
                self._shadow_key = key
                info["shadow_map"] = "drawn"
                # ---- per-vertex visibility from the new map (transform feedback, no rasterisation)
                texel_world = 2.0 * r / SHADOW_MAP_SIZE
                vprog = self._visibility_program()
                stex.use(location=0)
                _set(vprog, "u_shadow", 0)
                _set(vprog, "u_light_view_proj", _f32(light_vp))
                _set(vprog, "u_key_dir", tuple(float(c) for c in key_dir))
                _set(vprog, "u_shadow_texel", 1.0 / SHADOW_MAP_SIZE)
                _set(vprog, "u_texel_world", texel_world)
                _set(vprog, "u_shadow_bias", 1.5 * texel_world / (3.0 * r))   # 1.5 texels of the 3 r depth range
                for gm in gms:
                    self._vao(gm, vprog, ("pos", "nrm"), indexed=False).transform(gm.vis, mode=ctx.POINTS,
                                                                                  vertices=gm.vertex_count)
                    gm.vis_key = key
            else:
                info["shadow_map"] = "reused"
        for gm in gms:
            if not shadows and gm.vis_key != "lit":      # no shadow: every vertex fully lit
                gm.vis.write(np.ones(gm.vertex_count, np.float32).tobytes())
                gm.vis_key = "lit"
                self._shadow_key = None            # shadows back on: the visibility is recomputed
        mark("shadow")

        # ---- colour pass
        if samples > 1:
            dest = self.target((w, h), samples)[0]
        else:
            dest = fbo
        dest.use()
        ctx.viewport = (0, 0, w, h)
        dest.clear(*background, 1.0, depth=1.0)
        ctx.enable(ctx.DEPTH_TEST)
        ctx.disable(ctx.CULL_FACE | ctx.BLEND)
        cam_pos = tuple(float(c) for c in camera.position)
        fill_dir = tuple(float(c) for c in Light(L.fill_azimuth_deg, L.fill_elevation_deg, L.fill).direction(camera))
        progs = {}
        for it, gm in zip(items, gms):
            mat = it.material
            if not mat.visible:
                continue
            per_vertex = gouraud or (self.per_vertex and gm.closed and gm.vertex_count >= PER_VERTEX_MIN_VERTICES)
            defines = {"PER_VERTEX": per_vertex, "TWO_SIDED": per_vertex and not gm.closed}
            prog = progs.get(tuple(defines.values()))
            if prog is None:
                prog = progs[tuple(defines.values())] = self.programs.get("preview_shade.vert", "preview_shade.frag",
                                                                          defines)
                _set(prog, "u_view_proj", _f32(view_proj))
                _set(prog, "u_camera_pos", cam_pos)
                _set(prog, "u_key_dir", L.key_dir)
                _set(prog, "u_key", L.key)
                _set(prog, "u_fill_dir", fill_dir)
                _set(prog, "u_fill", L.fill)
                _set(prog, "u_sky", L.sky)
                _set(prog, "u_floor", L.floor)
                _set(prog, "u_exposure", L.exposure)
            base, sheen, spec, shininess = _material_uniforms(mat)
            _set(prog, "u_base", base)
            _set(prog, "u_sheen", sheen)
            _set(prog, "u_spec", spec)
            _set(prog, "u_shininess", shininess)
            if gm.closed:
                ctx.enable(ctx.CULL_FACE)
            self._vao(gm, prog, ("pos", "nrm", "vis")).render()
            if gm.closed:
                ctx.disable(ctx.CULL_FACE)
        mark("main")
        if overlay is not None:
            dest.use()
            ctx.enable(ctx.DEPTH_TEST)
            overlay(ctx, view_proj, camera, near, far)
            mark("overlay")
        if samples > 1:
            ctx.copy_framebuffer(fbo, dest)
            mark("resolve")
        self.frame_info = info
        if self.profile:
            self.stats = stats

    def release(self) -> None:
        """Free every GL object this painter made. Idempotent."""
        if self._released:
            return
        self._released = True
        for gm in self._meshes.values():
            gm.release()
        self._meshes.clear()
        self.drop_targets()
        if self._shadow is not None:
            for o in self._shadow:
                o.release()
            self._shadow = None
        if self._vis_prog is not None:
            self._vis_prog.release()
            self._vis_prog = None


def is_closed_outward(vertices: np.ndarray, triangles: np.ndarray) -> bool:
    """True when the mesh is closed and consistently wound with outward normals, so back faces can be culled:
    every directed edge (a, b) occurs once and its reverse (b, a) occurs too (each edge joins exactly two
    triangles that wind it in opposite directions), and the signed volume ``sum(v0 . (v1 x v2)) / 6`` is > 0
    (counter-clockwise seen from outside)."""
    t = np.asarray(triangles, np.int64)
    if len(t) < 4:
        return False
    n = int(t.max()) + 1
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    fwd = np.sort(a * n + b)
    if np.any(fwd[1:] == fwd[:-1]):
        return False                        # a directed edge twice: inconsistent winding or non-manifold
    rev = b * n + a
    if not np.all(fwd[np.clip(np.searchsorted(fwd, rev), 0, len(fwd) - 1)] == rev):
        return False                        # an edge with one triangle: a boundary (open mesh)
    v = np.asarray(vertices, np.float64)
    volume = np.einsum("ij,ij->i", v[t[:, 0]], np.cross(v[t[:, 1]], v[t[:, 2]])).sum() / 6.0
    return bool(volume > 0.0)


_MATERIAL_CACHE: dict[tuple, tuple] = {}


def _material_uniforms(mat) -> tuple:
    """(linear base colour, linear sheen colour, Blinn-Phong scale, exponent) of a :class:`Material`.

    The exponent is the usual Beckmann/GGX-to-Phong match ``s = 2 / alpha^2 - 2`` with ``alpha = roughness^2``,
    the scale ``F0 (s + 8) / (8 pi)`` (normalised Blinn-Phong, F0 = 0.04 for a dielectric, the base colour for
    a metal)."""
    key = (mat.base_color, mat.sheen_color, mat.roughness, mat.metallic)
    out = _MATERIAL_CACHE.get(key)
    if out is None:
        base = srgb_to_linear(np.asarray(mat.base_color, np.float64))
        sheen = srgb_to_linear(np.asarray(mat.sheen_color, np.float64))
        alpha = max(float(mat.roughness), 0.05) ** 2
        s = 2.0 / (alpha * alpha) - 2.0
        f0 = 0.04 * (1.0 - mat.metallic) + float(np.mean(base)) * mat.metallic
        diffuse = base * (1.0 - mat.metallic)
        out = (tuple(float(c) for c in diffuse), tuple(float(c) for c in sheen), f0 * (s + 8.0) / (8.0 * math.pi), s)
        _MATERIAL_CACHE[key] = out
    return out

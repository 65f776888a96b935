"""The preview's 3D view: camera framing, the MeshItems of the frame shown (garments, avatar, the avatar's
proxy while the camera moves), and drawing them with the fast look (render.preview.painter) or the catalog
Renderer, at full or reduced resolution, with the view overlay. A mixin of
:class:`render.preview.app.PreviewApp`.
"""

from __future__ import annotations

import numpy as np

import clothsim as cs

from ..material import Material, MeshItem
from ..renderer import RenderSettings
from ..sources import FABRIC_COLOURS, _close_seams
from .camera import VIEW_KEYS
from .commands import QUALITY
from .views import ClusterProxy, View, vertex_stretch

STILL_SAMPLES = 4                 # MSAA of the fast look once the view stops moving (none while it moves)


class SceneView:
    """Camera framing and the 3D view of the frame shown."""

    # ================================================================== camera
    def _bounds(self):
        t = self.topo
        if t is None or not t.history:
            return None
        x = t.history[-1][1]
        return x.min(axis=0), x.max(axis=0)

    def _frame_garment(self) -> None:
        b = self._bounds()
        if b is not None:
            w, h = self.fb_size
            self.orbit.frame(b[0], b[1], w / h)
            self._dirty = True

    def _standard_view(self, name: str) -> None:
        from ..camera import STANDARD_VIEWS

        name = VIEW_KEYS.get(name, name)
        if name not in STANDARD_VIEWS:
            raise cs.InputError(f"unknown camera view {name!r}; expected one of {', '.join(STANDARD_VIEWS)}")
        b = self._bounds()
        if b is not None:
            w, h = self.fb_size
            self.orbit.standard(name, b[0], b[1], w / h)
            self._dirty = True

    # ================================================================== drawing
    def _mesh_items(self, fr) -> list[MeshItem]:
        """MeshItems for the frame shown; the same arrays as last time when nothing moved (no re-upload)."""
        t = self.topo
        frame, x, body, _ = fr
        prev = self._items
        hidden = self.view in (View.STRAIN, View.PENETRATION, View.LOD)
        key = (t.generation, frame, id(x), hidden)
        if prev is not None and prev[0] == key:
            return prev[1]
        items = []
        seams = t.seams
        xs = _close_seams(x, seams) if len(seams) else x
        for i, name in enumerate(t.info["garments"]):
            a, b = int(t.offsets[i]), int(t.offsets[i + 1])
            fabric = t.info["fabrics"][i]["name"] if i < len(t.info["fabrics"]) else None
            colour = FABRIC_COLOURS.get(str(fabric).lower(), "#9a9da3")
            mat = Material.fabric(colour, name=f"{name}:{fabric}")
            if hidden:
                mat = mat.replace(visible=False)
            items.append(MeshItem(xs[a:b], t.garment_tris[i], mat, name=name))
        if body is not None and len(body):
            old_body = prev[2] if prev is not None and prev[3] == t.generation else None
            if old_body is not None and np.array_equal(old_body.vertices, body):
                items.append(old_body)
            else:
                items.append(MeshItem(body, t.body_triangles, Material.skin(), name="avatar"))
        self._items = (key, items, items[-1] if body is not None and len(body) else None, t.generation)
        self._overlay_x = xs
        return items

    def _proxy_items(self, items: list[MeshItem], body: np.ndarray) -> list[MeshItem]:
        """``items`` with the avatar replaced by its :class:`ClusterProxy` (drawn while the camera moves)."""
        if body is None or not len(body) or items[-1].name != "avatar":
            return items
        if self._proxy is None:
            self._proxy = [ClusterProxy(body, self.topo.body_triangles), None]
        proxy, cached = self._proxy
        if cached is None or cached[0] is not body:
            item = MeshItem(proxy.positions(body), proxy.triangles, items[-1].material, name="avatar_proxy")
            self._proxy[1] = cached = (body, item)
        return items[:-1] + [cached[1]]

    def _draw_scene(self, scale: float = 1.0, moving: bool = False, target=None) -> None:
        """Draw the 3D view into the cached scene image (or ``target``, a framebuffer of the window's size with a
        depth buffer: the screen). ``moving``: the view is redrawn in quick succession (camera dragged,
        playback): the fast look skips MSAA; ``scale`` < 1: drawn smaller and upscaled."""
        fr = self._display_frame()
        fbo = self._scene_fbo[0] if target is None else target
        if target is None:
            self._scene_valid = True
        w, h = self.fb_size
        if fr is None:
            fbo.use()
            fbo.clear(0.2, 0.2, 0.22, 1.0)
            return
        if not self._framed:
            self._framed = True
            self._standard_view("three_quarter")
        items = self._mesh_items(fr)
        t = self.topo
        overlay_on = self.view is not View.SHADED or self.show_markers
        rng = (0.0, 1.0)
        if self.view is View.STRAIN:
            rng = (0.0, self.strain_max)
        elif self.view is View.PENETRATION:
            rng = (0.0, 5.0 * float(t.info.get("penetration_tolerance", 0.002)))
        if overlay_on:
            # the view's per-vertex data and GL upload: once per displayed frame and view, not per redraw
            shaded = self.view in (View.STRAIN, View.PENETRATION, View.LOD)   # views that light the surface
            key = (self._items[0], self.view, shaded)
            if key != self._overlay_key:
                scalar = None
                if self.view is View.STRAIN:
                    scalar = vertex_stretch(self._overlay_x, t.rest_uv, t.triangles)
                elif self.view is View.PENETRATION:
                    depth = fr[3]
                    scalar = depth if depth is not None else np.zeros(len(fr[1]), np.float32)
                self.overlay.set_frame(self._overlay_x, scalar, normals=shaded)
                self._overlay_key = key
        cam = self.orbit.camera()
        level = int(t.info["level"])

        def overlay(ctx, view_proj, camera, near, far):
            self.overlay.draw(self.view, view_proj, camera.position, level=level, scalar_range=rng,
                              show_markers=self.show_markers)

        overlay = overlay if overlay_on else None
        fast = self.quality == "fast"
        if scale < 1.0:   # reduced resolution, then a bilinear upscale into the full-size image
            items = self._proxy_items(items, fr[2])
            lw, lh = max(1, round(w * scale)), max(1, round(h * scale))
            if self._lowres is None or self._lowres[1].size != (lw, lh):
                if self._lowres is not None:
                    for o in self._lowres:
                        o.release()
                tex = self.ctx.texture((lw, lh), 4)
                tex.filter = (self.ctx.LINEAR, self.ctx.LINEAR)
                tex.repeat_x = tex.repeat_y = False
                depth = self.ctx.depth_renderbuffer((lw, lh))
                self._lowres = (self.ctx.framebuffer([tex], depth), tex, depth, self.ctx.vertex_array(
                    self.renderer.programs.get("preview_blit.vert", "preview_blit.frag"), []))
            lfbo, tex, _, vao = self._lowres
            if fast:
                self.painter.draw(items, cam, lfbo, (lw, lh), samples=1, shadows=True, gouraud=True, overlay=overlay)
            else:
                settings = RenderSettings(width=lw, height=lh, **QUALITY[self.quality])
                self._render(items, cam, settings, framebuffer=lfbo, overlay=overlay)
            fbo.use()
            self.ctx.viewport = (0, 0, w, h)
            self.ctx.disable(self.ctx.DEPTH_TEST | self.ctx.BLEND)
            tex.use(0)
            vao.program["u_image"].value = 0
            vao.render(self.ctx.TRIANGLES, vertices=3)
        elif fast:
            self.painter.draw(items, cam, fbo, (w, h), samples=1 if moving else STILL_SAMPLES, shadows=True,
                              gouraud=moving, overlay=overlay)
        else:
            settings = RenderSettings(width=w, height=h, **QUALITY[self.quality])
            self._render(items, cam, settings, framebuffer=fbo, overlay=overlay)
        self.scene_draws += 1

    def _render(self, *args, **kwargs) -> None:
        """Renderer.render, then this window's context made current again: the Renderer wraps each frame in
        ``with ctx``, and on leaving it moderngl's standalone EGL context makes no context current (it restores
        what was current before the context was created), so GL calls after it would silently do nothing."""
        try:
            self.renderer.render(*args, **kwargs)
        finally:
            self.ctx.__enter__()

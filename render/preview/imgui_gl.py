"""Dear ImGui (imgui-bundle) drawn with moderngl: the font atlas and draw lists as GL objects.

GLSL in ``shaders/imgui.vert`` / ``imgui.frag``. Honours ImGui 1.92's dynamic textures
(``RendererHasTextures``): atlas pages are created, updated and destroyed on ImGui's request.
Owns every GL object it makes; :meth:`ImGuiRenderer.release` frees them (idempotent).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..shaders import ProgramCache


class ImGuiRenderer:
    """Draws ``imgui.get_draw_data()`` into the bound framebuffer of ``ctx``."""

    def __init__(self, ctx, programs: ProgramCache | None = None) -> None:
        from imgui_bundle import imgui

        self.imgui = imgui
        self.ctx = ctx
        self._own_programs = programs is None
        self.programs = programs or ProgramCache(ctx)
        self.prog = self.programs.get("imgui.vert", "imgui.frag")
        self._vbo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self._ibo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self._vao = self._make_vao()
        self._textures: dict[int, object] = {}
        self._next_id = 1
        io = imgui.get_io()
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        pio = imgui.get_platform_io()
        pio.renderer_texture_max_width = pio.renderer_texture_max_height = 8192
        self._released = False

    def _make_vao(self):
        imgui = self.imgui
        assert imgui.VERTEX_SIZE == 20, "ImDrawVert layout: pos 2f, uv 2f, col 4 x u8"
        return self.ctx.vertex_array(self.prog, [(self._vbo, "2f 2f 4f1", "in_pos", "in_uv", "in_color")],
                                     index_buffer=self._ibo, index_element_size=imgui.INDEX_SIZE)

    def nbytes(self) -> int:
        """GL bytes held: vertex/index buffers and textures."""
        tex = sum(t.width * t.height * 4 for t in self._textures.values())
        return int(self._vbo.size + self._ibo.size + tex)

    # ------------------------------------------------------------------ textures
    def _update_textures(self) -> None:
        imgui = self.imgui
        S = imgui.ImTextureStatus
        for tex in imgui.get_platform_io().textures:
            if tex.status == S.ok:
                continue
            if tex.status == S.want_create:
                gl = self.ctx.texture((tex.width, tex.height), 4, tex.get_pixels_array().tobytes())
                gl.filter = (self.ctx.LINEAR, self.ctx.LINEAR)
                gl.repeat_x = gl.repeat_y = False
                tid = self._next_id
                self._next_id += 1
                self._textures[tid] = gl
                tex.set_tex_id(tid)
                tex.status = S.ok
            elif tex.status == S.want_updates:
                gl = self._textures[tex.tex_id]
                px = tex.get_pixels_array().reshape(tex.height, tex.width, 4)
                for r in tex.updates:
                    sub = np.ascontiguousarray(px[r.y:r.y + r.h, r.x:r.x + r.w])
                    gl.write(sub.tobytes(), viewport=(r.x, r.y, r.w, r.h))
                tex.status = S.ok
            elif tex.status == S.want_destroy:
                gl = self._textures.pop(tex.tex_id, None)
                if gl is not None:
                    gl.release()
                tex.set_tex_id(0)
                tex.status = S.destroyed

    # ------------------------------------------------------------------ draw
    def render(self, draw_data, fb_size: tuple[int, int]) -> None:
        """Draw ``draw_data`` into the currently bound framebuffer of size ``fb_size`` [px]."""
        imgui, ctx = self.imgui, self.ctx
        self._update_textures()
        fb_w, fb_h = fb_size
        if fb_w <= 0 or fb_h <= 0 or draw_data.cmd_lists_count == 0:
            return
        dw, dh = draw_data.display_size
        dx, dy = draw_data.display_pos
        sx, sy = fb_w / max(dw, 1.0), fb_h / max(dh, 1.0)
        proj = np.array([[2.0 / dw, 0, 0, -(2 * dx + dw) / dw],
                         [0, -2.0 / dh, 0, (2 * dy + dh) / dh],
                         [0, 0, -1.0, 0],
                         [0, 0, 0, 1.0]], np.float32)
        self.prog["u_proj"].write(proj.T.tobytes())
        if "u_texture" in self.prog:
            self.prog["u_texture"].value = 0
        ctx.enable(ctx.BLEND)
        ctx.blend_equation = ctx.FUNC_ADD
        ctx.blend_func = ctx.SRC_ALPHA, ctx.ONE_MINUS_SRC_ALPHA, ctx.ONE, ctx.ONE_MINUS_SRC_ALPHA
        ctx.disable(ctx.DEPTH_TEST | ctx.CULL_FACE)
        ctx.wireframe = False
        old_scissor = ctx.scissor
        vsz, isz = imgui.VERTEX_SIZE, imgui.INDEX_SIZE
        for cl in draw_data.cmd_lists:
            vbytes = cl.vtx_buffer.size() * vsz
            ibytes = cl.idx_buffer.size() * isz
            if vbytes > self._vbo.size or ibytes > self._ibo.size:
                self._vao.release()
                if vbytes > self._vbo.size:
                    self._vbo.orphan(max(vbytes, 2 * self._vbo.size))
                if ibytes > self._ibo.size:
                    self._ibo.orphan(max(ibytes, 2 * self._ibo.size))
                self._vao = self._make_vao()
            self._vbo.write(ctypes.string_at(cl.vtx_buffer.data_address(), vbytes))
            self._ibo.write(ctypes.string_at(cl.idx_buffer.data_address(), ibytes))
            for cmd in cl.cmd_buffer:
                if cmd.elem_count == 0:
                    continue
                x0, y0, x1, y1 = cmd.clip_rect
                x0, y0 = (x0 - dx) * sx, (y0 - dy) * sy
                x1, y1 = (x1 - dx) * sx, (y1 - dy) * sy
                if x1 <= x0 or y1 <= y0:
                    continue
                ctx.scissor = (int(x0), int(fb_h - y1), int(x1 - x0), int(y1 - y0))
                tex = self._textures.get(cmd.tex_ref.get_tex_id())
                if tex is not None:
                    tex.use(0)
                self._vao.render(vertices=cmd.elem_count, first=cmd.idx_offset)
        # moderngl's vertex_array.render(first=) counts indices; base vertex offsets are 0 here
        # because ImGui is built with 32-bit indices (no vtx_offset splitting).
        ctx.scissor = old_scissor
        ctx.disable(ctx.BLEND)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        for t in self._textures.values():
            t.release()
        self._textures.clear()
        self._vao.release()
        self._vbo.release()
        self._ibo.release()
        if self._own_programs:
            self.programs.release()

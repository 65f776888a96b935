"""Window input of the preview (glfw callbacks): keys go to :mod:`render.preview.keys`, the mouse
orbits, pans and zooms the camera unless ImGui wants it. A mixin of
:class:`render.preview.app.PreviewApp`.
"""

from __future__ import annotations


class WindowInput:
    def _install_callbacks(self) -> None:
        import glfw

        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_char_callback(self.window, self._on_char)
        glfw.set_mouse_button_callback(self.window, self._on_mouse_button)
        glfw.set_cursor_pos_callback(self.window, self._on_cursor)
        glfw.set_scroll_callback(self.window, self._on_scroll)
        glfw.set_window_size_callback(self.window, lambda *_: setattr(self, "_dirty", True))
        glfw.set_window_refresh_callback(self.window, lambda *_: setattr(self, "_ui_frames", 2))

    def _on_key(self, window, key, scancode, action, mods) -> None:
        from .keys import handle_key

        handle_key(self, key, action, mods)

    def _on_char(self, window, codepoint) -> None:
        self.imgui.get_io().add_input_character(codepoint)
        self._ui_frames = 3

    def _on_mouse_button(self, window, button, action, mods) -> None:
        import glfw

        io = self.imgui.get_io()
        self._ui_frames = 3
        if 0 <= button < 5:
            io.add_mouse_button_event(button, action == glfw.PRESS)
        if action == glfw.PRESS and not io.want_capture_mouse:
            x, y = glfw.get_cursor_pos(window)
            pan = button in (glfw.MOUSE_BUTTON_RIGHT, glfw.MOUSE_BUTTON_MIDDLE) or bool(mods & glfw.MOD_SHIFT)
            self._mouse = ("pan" if pan else "orbit", x, y)
        elif action == glfw.RELEASE:
            self._mouse = None

    def _on_cursor(self, window, x, y) -> None:
        self.imgui.get_io().add_mouse_pos_event(x, y)
        self._ui_frames = 3
        if self._mouse is None:
            return
        mode, x0, y0 = self._mouse
        if mode == "orbit":
            self.orbit.orbit(x - x0, y - y0)
        else:
            self.orbit.pan(x - x0, y - y0, self.fb_size)
        self._mouse = (mode, x, y)
        self._dirty = True

    def _on_scroll(self, window, dx, dy) -> None:
        io = self.imgui.get_io()
        self._ui_frames = 3
        io.add_mouse_wheel_event(dx, dy)
        if not io.want_capture_mouse:
            self.orbit.zoom(dy)
            self._dirty = True

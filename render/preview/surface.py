"""The preview's drawing surface: a glfw window or, headless, an EGL context with an offscreen framebuffer;
the cached 3D image; Mesa llvmpipe's rasteriser threads while the context is created. A mixin of
:class:`render.preview.app.PreviewApp` (which owns and releases every object made here).
"""

from __future__ import annotations

import contextlib
import os

import clothsim as cs

from ..renderer import Renderer

# CPU cores left to others when Mesa llvmpipe draws the window: the simulation worker's and the window's own
# thread (which does the Python, the vertex work and, with no rasteriser threads, the rasterising too)
RESERVED_CORES = 2


@contextlib.contextmanager
def rasterizer_threads(count: int | None):
    """``LP_NUM_THREADS`` (Mesa llvmpipe's rasteriser threads; other drivers ignore it) set to ``count`` while
    the window's GL context is created, then restored (the process's environment is left as it was). None:
    ``cpu_count - RESERVED_CORES`` (at least 0 = rasterise in the calling thread), unless the user set
    ``LP_NUM_THREADS``. Why: the simulation worker steps on one core; llvmpipe's own default (one rasteriser
    thread per core) puts part of every frame on the simulation's core, while 0 threads keep the window's
    work (~14 ms a 1280x720 T-shirt frame) on one thread. On the shared 2-core machine
    (benchmarks/preview.py --lp-threads, orbiting at full size): at load ~2 the simulation kept 79 % of its
    solo speed with 0 threads against 72 % with 1 and 59 % with 2, at 34, 31 and 36 fps; at load 3.5-5 (other
    jobs) 0 and 2 threads both kept ~60 %, and 2 threads drew faster (35 against 24 fps): more threads take a
    larger share from the other jobs."""
    old = os.environ.get("LP_NUM_THREADS")
    if count is None and old is None:
        count = max(0, (os.cpu_count() or 1) - RESERVED_CORES)
    if count is not None:
        os.environ["LP_NUM_THREADS"] = str(int(count))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("LP_NUM_THREADS", None)
        else:
            os.environ["LP_NUM_THREADS"] = old


class Surface:
    """The window or headless context, the Renderer and the preview's GL helpers, the cached 3D image."""

    # ================================================================== setup
    def _open_gl(self, title: str) -> None:
        with rasterizer_threads(self.render_threads):
            self._create_context(title)
        self._setup_gl()

    def _create_context(self, title: str) -> None:
        if self.headless:
            from ..gl import create_headless_context

            self.window = None
            self.ctx = create_headless_context("egl")
        else:
            import glfw
            import moderngl

            if not glfw.init():
                raise cs.ClothsimError("cannot initialise GLFW: no display? (set DISPLAY, run under xvfb-run, "
                                       "or use --headless)")
            glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 4)
            glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 5)
            glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
            glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
            glfw.window_hint(glfw.SAMPLES, 0)
            self.window = glfw.create_window(self.size[0], self.size[1], title, None, None)
            if not self.window:
                glfw.terminate()
                raise cs.ClothsimError("cannot open a GL 4.5 core window (GLFW); try --headless")
            glfw.make_context_current(self.window)
            glfw.swap_interval(0)
            self.ctx = moderngl.create_context(require=450)
            self._install_callbacks()

    def _setup_gl(self) -> None:
        from .imgui_gl import ImGuiRenderer

        self.renderer = Renderer(self.ctx)
        self.gl_renderer = str(self.ctx.info.get("GL_RENDERER", ""))
        if self.interactive_scale is None:
            self.interactive_scale = 1.0
        from imgui_bundle import imgui

        self.imgui = imgui
        self._imgui_ctx = imgui.create_context()
        imgui.get_io().set_ini_filename("")     # no imgui.ini next to the user's files
        imgui.style_colors_dark()
        self.gui = ImGuiRenderer(self.ctx, self.renderer.programs)
        from .overlay import ViewOverlay

        self.overlay = ViewOverlay(self.ctx, self.renderer.programs)
        from .painter import PreviewPainter

        self.painter = PreviewPainter(self.ctx, self.renderer.programs)
        self._scene_fbo = None
        self._offscreen = None
        self._make_targets()

    def _make_targets(self) -> None:
        """The cached 3D image (redrawn only when something changed) and, headless, the output image."""
        for objs in (self._scene_fbo, self._offscreen):
            if objs:
                for o in objs:
                    o.release()
        w, h = self.fb_size
        rb = self.ctx.renderbuffer((w, h), 4)
        depth = self.ctx.depth_renderbuffer((w, h))   # the fast look draws straight into it
        self._scene_fbo = (self.ctx.framebuffer([rb], depth), rb, depth)
        self.painter.drop_targets(keep_size=(w, h))
        if self.headless:
            rb2 = self.ctx.renderbuffer((w, h), 4)
            depth2 = self.ctx.depth_renderbuffer((w, h))
            self._offscreen = (self.ctx.framebuffer([rb2], depth2), rb2, depth2)
        self._dirty = True

    @property
    def fb_size(self) -> tuple[int, int]:
        if self.window is None:
            return self.size
        import glfw

        w, h = glfw.get_framebuffer_size(self.window)
        return max(int(w), 1), max(int(h), 1)

    @property
    def screen(self):
        return self._offscreen[0] if self.headless else self.ctx.screen

"""The preview application: a window (glfw) or a headless EGL surface, the catalog Renderer, ImGui
panels, and a simulation worker process that it never waits on.

    app = PreviewApp("scenes/tshirt.toml", level=0)
    app.run(script=["play", "wait_frames 5", "pause", "sync", "screenshot out.png", "quit"])

Every user action is a command (:meth:`PreviewApp.command`), whether it comes from a key, a button,
a ``--script`` file or a test. Script-only commands wait without blocking the draw loop:
``wait SECONDS``, ``wait_frames N`` (N more simulated frames arrive), ``wait_level K``,
``sync`` (the worker has handled every command sent so far), ``record NAME`` (keep a snapshot of
the state in :attr:`PreviewApp.records`).

The window is assembled from mixins, one job each: :mod:`.surface` (window or headless context, cached
images), :mod:`.feed` (simulation events and frames kept for scrubbing), :mod:`.scene_view` (camera
framing and the 3D view), :mod:`.input` (keys and mouse), :mod:`.commands` (the command interface);
this module runs the loop, the UI, screenshots and shutdown.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

import clothsim as cs

from ..catalog import write_png
from .camera import OrbitCamera
from .commands import QUALITY, Commands, load_script  # noqa: F401  (load_script: re-exported)
from .feed import HISTORY_BYTES, SimFeed, Topology  # noqa: F401  (HISTORY_BYTES: re-exported)
from .input import WindowInput
from .scene_view import STILL_SAMPLES, SceneView  # noqa: F401  (STILL_SAMPLES: re-exported)
from .surface import RESERVED_CORES, Surface, rasterizer_threads  # noqa: F401  (re-exported)
from .views import View

log = logging.getLogger("render.preview")

IDLE_POLL_S = 1.0 / 30.0          # an idle window checks the simulation channel this often


class PreviewApp(Commands, WindowInput, Surface, SimFeed, SceneView):
    """The preview window.

    Args:
        scene: a scene file (.toml) to simulate, or None (load one from the window).
        level: resolution level (0 = coarsest, 40 mm) or None for the scene's own.
        size: window / image size [px].
        headless: no window: an EGL context and an offscreen framebuffer (GPU machines, benchmarks).
        device: Warp device for the simulation (None: the scene's ``simulation.device``).
        play: start simulating at once.
        quality: "fast" (the preview look, :mod:`render.preview.painter`: cheap shading, a cached shadow map,
            no MSAA while the view moves and 4x MSAA once it stops) or "high" (the catalog renderer's look).
        max_fps: draw-loop cap (leaves the CPU to the simulation); 0 = uncapped.
        continuous: redraw the 3D scene every loop even when nothing changed (benchmarks).
        interactive_scale: while the 3D view is redrawn in quick succession (camera dragged, fast
            playback) it is drawn at this fraction of the window's resolution and upscaled; 0.3 s after
            the motion stops it is redrawn at full resolution. None or 1: always full resolution (the
            fast look draws a 1280x720 frame of the T-shirt scene in ~12 ms on llvmpipe, 2 CPU cores).
        render_threads: Mesa llvmpipe's rasteriser threads for the window (``LP_NUM_THREADS``); None: the
            user's ``LP_NUM_THREADS``, else all cores but two (see :func:`rasterizer_threads`).

    The loop is event-driven: it draws only when something changed (a new simulated frame, input, a
    command, a screenshot) and otherwise sleeps in ``glfw.wait_events_timeout``, so an idle window
    leaves the CPU to the simulation.
    """

    def __init__(self, scene=None, *, level=None, size=(1280, 720), headless: bool = False, device=None,
                 play: bool = False, quality: str = "fast", max_fps: float = 60.0, continuous: bool = False,
                 interactive_scale: float | None = None, render_threads: int | None = None,
                 title: str = "clothsim preview") -> None:
        if quality not in QUALITY:
            raise cs.InputError(f"quality must be one of {', '.join(QUALITY)}, got {quality!r}")
        self.size = (int(size[0]), int(size[1]))
        self.headless = headless
        self.quality = quality
        self.max_fps = float(max_fps)
        self.continuous = continuous
        if interactive_scale is not None and not 0.1 <= interactive_scale <= 1.0:
            raise cs.InputError(f"interactive_scale must lie in [0.1, 1], got {interactive_scale!r}")
        self.interactive_scale = interactive_scale
        self.render_threads = render_threads
        self._ui_frames = 3            # draw the UI this many more loops (ImGui settles after input)
        self._last_3d = 0.0
        self._refine_at = None
        self._lowres = None
        self._proxy = None
        self._overlay_key = None
        self._scene_valid = False     # the cached 3D image shows the current state
        self._was_playing = False
        self.draws = 0
        self.view = View.SHADED
        self.show_markers = False
        self.show_help = False
        self.strain_max = 0.10
        self.orbit = OrbitCamera()
        self.records: dict[str, dict] = {}
        self.errors: list[str] = []
        self.messages: list[str] = []
        self.topo: Topology | None = None
        self.scrub: int | None = None          # history index shown, None = newest
        self.playing = False
        self.speed = 0.0
        self.sim_frame = 0                     # newest simulated frame received
        self.frames_received = 0
        self.step_ms = 0.0
        self.sim_stats = {}
        self.memory = {}
        self.handled = 0
        self.fps = 0.0
        self.draw_ms = 0.0
        self.scene_draws = 0
        self.loops = 0
        self.scene_path = str(scene) if scene is not None else ""
        self.load_field = self.scene_path
        self._framed = False
        self._dirty = True
        self._want_close = False
        self._script: list[str] = []
        self._wait = None
        self._items = None
        self._display = None                   # (frame, positions, body) shown
        self._mouse = None
        self._last_loop = None
        self._pending_shots: list[Path] = []
        self._shot_armed = False
        self._open_gl(title)
        self.sim = None
        self._device = device
        self.sim = self._start_sim(scene, level, device, play)


    # ================================================================== messages
    def _error(self, message: str) -> None:
        if self.errors and self.errors[-1] == message:
            return   # the same failure again (e.g. every loop): reported once
        self.errors.append(message)
        del self.errors[:-20]
        log.error(message)

    def _info(self, message: str) -> None:
        self.messages.append(message)
        del self.messages[:-50]
        log.info(message)


    # ================================================================== loop
    def draw(self, force: bool = False) -> bool:
        """One pass of the loop: simulation events, script, then (only if something changed, or ``force``)
        the 3D image and the UI. Returns whether it drew."""
        t0 = time.perf_counter()
        n_cmd = 0
        with self.ctx:   # a topology change uploads buffers; a headless context is current only inside
            self._poll_sim()
            while self._script and self._wait_done():
                self.command(self._script.pop(0))
                n_cmd += 1
                if self._pending_shots:
                    break      # draw this loop's frame (and save it) before the next command
            if not self._script and not self._pending_shots:
                self._wait_done()
        if n_cmd:
            self._ui_frames = max(self._ui_frames, 2)
        now = time.perf_counter()
        if self._refine_at is not None and now >= self._refine_at:
            self._refine_at = None
            self._dirty = True
        w, h = self.fb_size
        if self._scene_fbo[1].size != (w, h):
            self._make_targets()
        if self._was_playing and not self.playing:
            self._dirty = True          # playback stopped: redraw the still view sharp (MSAA)
        self._was_playing = self.playing
        redraw_3d = self._dirty or self.continuous
        if not (force or redraw_3d or self._ui_frames > 0 or self._pending_shots):
            return False
        self._ui_frames = max(0, self._ui_frames - 1)
        if self._last_loop is not None:
            dt = t0 - self._last_loop
            self.fps = 1.0 / dt if self.fps == 0.0 else 0.9 * self.fps + 0.1 / max(dt, 1e-6)
        self._last_loop = t0
        with self.ctx:
            screen = self.screen
            direct = False
            if redraw_3d:
                self._dirty = False
                # moving: redrawn in quick succession (camera dragged) or animating (playback); screenshots are
                # always drawn as a still view
                moving = (now - self._last_3d < 0.2 or self.playing) and not self._pending_shots
                scale = self.interactive_scale if moving else 1.0
                # a moving view in the fast look is drawn straight into the window (no 1280x720 copy: ~5 ms
                # on llvmpipe); the cached image is redrawn only if a later loop needs it (UI-only redraw)
                direct = moving and scale >= 1.0 and self.quality == "fast"
                self._draw_scene(scale, moving, target=screen if direct else None)
                if direct:
                    self._scene_valid = False
                self._last_3d = now
                # redrawn sharp (full size, MSAA) once the camera has stopped for 0.3 s (or playback stops)
                self._refine_at = now + 0.3 if moving and not self.playing else None
            elif not self._scene_valid:
                self._draw_scene(1.0, now - self._last_3d < 0.2)
            if not direct:
                self.ctx.copy_framebuffer(screen, self._scene_fbo[0])
            screen.use()
            self.ctx.viewport = (0, 0, w, h)
            self._draw_ui(w, h)
            if self._pending_shots:
                # saved one loop after the request: ImGui lays a new window out during its first frame
                if self._shot_armed:
                    for path in self._pending_shots:
                        self._write_screen(path, screen)
                    self._pending_shots.clear()
                self._shot_armed = not self._shot_armed and bool(self._pending_shots)
        if self.window is not None:
            import glfw

            glfw.swap_buffers(self.window)
        self.draw_ms = 1e3 * (time.perf_counter() - t0)
        self.loops += 1
        return True

    def _draw_ui(self, w: int, h: int) -> None:
        from .panels import draw_panels

        imgui = self.imgui
        io = imgui.get_io()
        io.display_size = imgui.ImVec2(w, h)
        io.delta_time = max(1e-4, 1.0 / max(self.fps, 1.0))
        imgui.new_frame()
        draw_panels(self)
        imgui.render()
        self.gui.render(imgui.get_draw_data(), (w, h))
    # ================================================================== screenshots
    def screenshot(self, path=None, ui: bool = True) -> Path:
        """Save the window as PNG (atomically). ``ui=False``: the 3D view alone. Returns the path."""
        if path is None:
            out = Path("screenshots")
            out.mkdir(exist_ok=True)
            path = out / time.strftime("preview_%Y%m%d_%H%M%S.png")
        path = Path(path)
        with self.ctx:
            if self._dirty or not self._scene_valid:
                self._dirty = False
                self._draw_scene()
            if ui:
                # the draw loop saves the window after this loop's UI is drawn (a script waits for it)
                self._pending_shots.append(path)
                self._wait = ("shot", path, time.perf_counter())
                return path
            self._write_screen(path, self._scene_fbo[0])
        return path

    def _write_screen(self, path: Path, fbo) -> None:
        w, h = self.fb_size
        img = np.frombuffer(fbo.read(viewport=(0, 0, w, h), components=3, alignment=1), np.uint8).reshape(h, w, 3)[::-1]
        try:
            write_png(path, np.ascontiguousarray(img))
            self._info(f"screenshot: {path}")
        except OSError as e:
            self._error(f"screenshot {path}: {e}")

    def read_image(self, ui: bool = False) -> np.ndarray:
        """The current 3D view (``ui=False``) or the whole window as (H, W, 3) uint8, top row first."""
        w, h = self.fb_size
        with self.ctx:
            if self._dirty or not self._scene_valid:
                self._dirty = False
                self._draw_scene()
            fbo = self.screen if ui else self._scene_fbo[0]
            return np.frombuffer(fbo.read(viewport=(0, 0, w, h), components=3, alignment=1),
                                 np.uint8).reshape(h, w, 3)[::-1].copy()

    # ================================================================== loop
    def run(self, script=None, max_seconds: float | None = None) -> int:
        """Draw until the window closes, ``quit`` or ``max_seconds``; ``script``: commands (list or file).
        Returns 0, or 1 when errors were reported."""
        self._want_close = False
        if script is not None:
            self._script = list(load_script(script))
        t_end = None if max_seconds is None else time.perf_counter() + max_seconds
        period = 1.0 / self.max_fps if self.max_fps > 0 else 0.0
        try:
            while not self._want_close:
                t0 = time.perf_counter()
                try:
                    drew = self.draw()
                except Exception as e:  # noqa: BLE001 - the window reports and goes on; it never crashes
                    import traceback

                    log.debug("draw failed", exc_info=True)
                    tb = traceback.extract_tb(e.__traceback__)
                    where = f" ({Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
                    self._error(f"drawing failed: {type(e).__name__}: {e}{where}")
                    self._dirty = False
                    self._ui_frames = 0
                    drew = False
                if t_end is not None and time.perf_counter() > t_end:
                    if self._script:
                        self._error(f"the script did not finish within {max_seconds:g} s "
                                    f"({len(self._script)} commands left, next: {self._script[0]!r})")
                    break
                # sleep until input arrives or the next check of the simulation channel is due
                rest = (period if drew else max(period, IDLE_POLL_S)) - (time.perf_counter() - t0)
                if self.window is not None:
                    import glfw

                    if rest > 0 and not self._busy():
                        glfw.wait_events_timeout(rest)
                    else:
                        if rest > 0:
                            time.sleep(rest)
                        glfw.poll_events()
                    if glfw.window_should_close(self.window):
                        break
                elif rest > 0:
                    time.sleep(rest)
            return 1 if self.errors else 0
        finally:
            # final loops so pending screenshots are written
            for _ in range(2):
                if self._pending_shots:
                    self.draw(force=True)

    def _busy(self) -> bool:
        """Something must be drawn next loop regardless of input."""
        return self._dirty or self.continuous or self._ui_frames > 0 or bool(self._pending_shots)

    def close(self) -> None:
        """Stop the worker, free GL objects, close the window. Idempotent."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        if self.sim is not None:
            self.sim.close()
        if self.topo is not None:
            self.topo.channel.close()
        with self.ctx:
            self.overlay.release()
            self.gui.release()
            for objs in (self._scene_fbo, self._offscreen, self._lowres):
                if objs:
                    for o in objs:
                        o.release()
            self.painter.release()
            self.renderer.release()
        try:
            self.imgui.destroy_context(self._imgui_ctx)
        except Exception:  # noqa: BLE001
            pass
        if self.window is not None:
            import glfw

            glfw.destroy_window(self.window)
            glfw.terminate()
        else:
            self.ctx.release()

    def __enter__(self) -> "PreviewApp":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def gl_nbytes(self) -> int:
        """GL memory of the window: the Renderer's objects, the view overlay, ImGui, cached images."""
        w, h = self.fb_size
        extra = 4 * w * h * (2 if self.headless else 1)
        return int(self.renderer.gl_nbytes()["total"] + self.painter.nbytes() + self.overlay.nbytes()
                   + self.gui.nbytes() + extra)

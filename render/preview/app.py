"""The preview application: a window (glfw) or a headless EGL surface, the catalog Renderer, ImGui
panels, and a simulation worker process that it never waits on.

    app = PreviewApp("scenes/tshirt.toml", level=0)
    app.run(script=["play", "wait_frames 5", "pause", "sync", "screenshot out.png", "quit"])

Every user action is a command (:meth:`PreviewApp.command`), whether it comes from a key, a button,
a ``--script`` file or a test. Script-only commands wait without blocking the draw loop:
``wait SECONDS``, ``wait_frames N`` (N more simulated frames arrive), ``wait_level K``,
``sync`` (the worker has handled every command sent so far), ``record NAME`` (keep a snapshot of
the state in :attr:`PreviewApp.records`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import clothsim as cs

from ..catalog import write_png
from ..material import Material, MeshItem
from ..renderer import RenderSettings, Renderer
from ..sources import FABRIC_COLOURS, _close_seams
from .camera import VIEW_KEYS, OrbitCamera
from .channel import FrameChannel
from .commands import QUALITY, Commands, load_script  # noqa: F401  (load_script: re-exported)
from .input import WindowInput
from .views import ClusterProxy, View, vertex_stretch

log = logging.getLogger("render.preview")

HISTORY_BYTES = 512 << 20          # frames kept for scrubbing, per resolution level
IDLE_POLL_S = 1.0 / 30.0          # an idle window checks the simulation channel this often
STILL_SAMPLES = 4                 # MSAA of the fast look once the view stops moving (none while it moves)
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


@dataclass
class Topology:
    """One mesh layout from the worker (a scene at a level) and its channel."""

    generation: int
    channel: FrameChannel
    info: dict
    triangles: np.ndarray
    offsets: np.ndarray
    garment_tris: list
    body_triangles: np.ndarray
    rest_uv: np.ndarray
    pins: np.ndarray
    seams: np.ndarray
    history: list = field(default_factory=list)   # [(frame, positions (N, 3) float32, body or None)]


class PreviewApp(Commands, WindowInput):
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

    def _start_sim(self, scene, level, device, play):
        from .sim import SimProcess

        if scene is not None and not Path(scene).exists():
            self._error(f"scene file not found: {scene}")
            scene = None
        return SimProcess(scene, level=level, device=device, playing=play)

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

    def _poll_sim(self) -> None:
        for ev in self.sim.poll():
            kind = ev.get("type")
            if kind == "topology":
                self._set_topology(ev)
            elif kind == "state":
                self.playing = bool(ev["playing"])
                self.speed = float(ev["speed"])
                self.handled = int(ev.get("handled", self.handled))
            elif kind == "memory":
                self.memory = ev["report"]
            elif kind == "fabrics" and self.topo is not None and ev["generation"] == self.topo.generation:
                self.topo.info["fabrics"] = ev["fabrics"]   # the garment's display colour follows its fabric
                self._items = None
                self._dirty = True
            elif kind == "error":
                self._error(ev["message"])
            elif kind == "log":
                self._info(ev["message"])
            elif kind == "exit":
                self._info("simulation worker exited")
        if self.sim is not None and not self.sim.alive and not getattr(self, "_dead_reported", False):
            self._dead_reported = True
            self._error(f"the simulation process ended (exit code {self.sim.proc.exitcode})")
        if self.topo is not None:
            self._read_channel()

    def _set_topology(self, ev: dict) -> None:
        old = self.topo
        try:
            ch = FrameChannel.attach(ev["shm"], ev["n"], ev["b"])
        except FileNotFoundError:
            return   # superseded: the worker has moved on to a newer layout (its event follows)
        offsets = np.asarray(ev["garment_offsets"], np.int64)
        tris = np.asarray(ev["triangles"], np.int32)
        g_tris = []
        for i in range(len(offsets) - 1):
            a, b = int(offsets[i]), int(offsets[i + 1])
            mask = (tris >= a).all(axis=1) & (tris < b).all(axis=1)
            g_tris.append(np.ascontiguousarray(tris[mask] - a, np.int32))
        self.topo = Topology(ev["generation"], ch, ev, tris, offsets, g_tris,
                             np.asarray(ev["body_triangles"], np.int32),
                             np.asarray(ev["rest_uv"], np.float32), np.asarray(ev["pins"]), np.asarray(ev["seams"]))
        self.overlay.set_topology(tris, self.topo.pins, self.topo.seams, ev["n"])
        self._overlay_key = None
        self.memory = ev.get("memory", {})
        self.scene_path = ev["scene_path"]
        if old is None or old.info["scene_path"] != ev["scene_path"]:
            self._framed = False
            self.load_field = ev["scene_path"]
        same_mesh = False
        if old is not None:
            old.channel.close()
            same_mesh = (old.info["scene_path"] == ev["scene_path"] and old.info["level"] == ev["level"]
                         and np.array_equal(old.triangles, tris) and ev["frame"] > 0)
            if same_mesh:   # rebuilt in place (e.g. a new fabric density): the frames simulated so far stay
                self.topo.history = [h for h in old.history if h[0] < ev["frame"]]
        if not same_mesh or (self.scrub is not None and self.scrub >= len(self.topo.history)):
            self.scrub = None
        self._last_seq = -1      # the new channel counts from 1 again
        self._display = None
        self._items = None
        self._proxy = None
        self._dirty = True

    def _read_channel(self) -> None:
        t = self.topo
        if t.history and t.channel.seq == getattr(self, "_last_seq", -1):
            return
        fr = t.channel.read()
        if fr is None:
            return
        self._last_seq = fr.seq
        body = fr.body
        if t.history and np.array_equal(t.history[-1][2], body):
            body = t.history[-1][2]   # a body that did not move is kept once, shared by the frames
        if t.history and t.history[-1][0] == fr.frame:
            # the same frame again (e.g. republished with penetration depths): replace it
            t.history[-1] = (fr.frame, fr.positions, body, fr.penetration)
        else:
            t.history.append((fr.frame, fr.positions, body, fr.penetration))
            if fr.seq > 1:
                self.frames_received += 1
            per = fr.positions.nbytes * 4 // 3 + (body.nbytes if body is fr.body else 0)
            while len(t.history) > 2 and len(t.history) * per > HISTORY_BYTES:
                t.history.pop(0)
                if self.scrub is not None:
                    self.scrub = max(0, self.scrub - 1)
        self.sim_frame = fr.frame
        self.step_ms = fr.step_ms
        self.sim_stats = {"kinetic_energy": fr.kinetic_energy, "residual": fr.residual, "seam_gap": fr.seam_gap}
        if self.scrub is None:
            self._dirty = True

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
    def _display_frame(self):
        t = self.topo
        if t is None or not t.history:
            return None
        return t.history[self.scrub if self.scrub is not None else -1]

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

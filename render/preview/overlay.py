"""GL side of the preview's views: the garment drawn with a per-vertex scalar or a level colour,
wireframe edges, pin and seam markers. Runs as the Renderer's ``overlay`` (inside its colour pass).

Owns its buffers and colour-scale textures; :meth:`ViewOverlay.release` frees them (idempotent).
Shaders: ``preview_surface.*`` and ``preview_lines.*`` in ``shaders/``.
"""

from __future__ import annotations

import numpy as np

from ..renderer import _f32, _set, vertex_normals
from .views import (LEVEL_COLOURS, PENETRATION_STOPS, PIN_COLOUR, SEAM_COLOUR, STRAIN_STOPS, WIRE_COLOUR, View,
                    colour_table, unique_edges)


class ViewOverlay:
    """Garment geometry for the preview views; ``set_topology`` on a new mesh, ``set_frame`` per frame."""

    def __init__(self, ctx, programs) -> None:
        self.ctx = ctx
        self.programs = programs
        self._bufs: dict[str, object] = {}
        self._vaos: dict[tuple, object] = {}
        self._tex = {}
        for name, stops in (("strain", STRAIN_STOPS), ("penetration", PENETRATION_STOPS)):
            table = colour_table(stops)
            t = ctx.texture((len(table), 1), 4, table.tobytes())
            t.filter = (ctx.LINEAR, ctx.LINEAR)
            t.repeat_x = t.repeat_y = False
            self._tex[name] = t
        self.n = 0
        self.counts = {}
        self._released = False

    # ------------------------------------------------------------------ data
    def _buffer(self, name: str, data: bytes):
        buf = self._bufs.get(name)
        if buf is not None and buf.size == len(data):
            buf.write(data)
            return buf
        if buf is not None:
            buf.release()
            for key in [k for k in self._vaos if name in k[1]]:
                self._vaos.pop(key).release()
        dynamic = name in ("pos", "nrm", "scalar")
        buf = self._bufs[name] = self.ctx.buffer(data if data else b"\0\0\0\0", dynamic=dynamic)
        return buf

    def set_topology(self, triangles: np.ndarray, pins: np.ndarray, seams: np.ndarray, n: int) -> None:
        for vao in self._vaos.values():
            vao.release()
        self._vaos.clear()
        for buf in self._bufs.values():
            buf.release()
        self._bufs.clear()
        self.n = int(n)
        self.triangles = np.ascontiguousarray(triangles, np.int32)
        edges = unique_edges(self.triangles)
        seam_v = np.unique(np.asarray(seams, np.int64).ravel()).astype(np.int32)
        self.counts = {"tri": self.triangles.size, "edge": edges.size, "pin": len(pins), "seam": len(seam_v)}
        self._buffer("pos", bytes(self.n * 12))
        self._buffer("nrm", bytes(self.n * 12))
        self._buffer("scalar", bytes(self.n * 4))
        self._buffer("tri", self.triangles.tobytes())
        self._buffer("edge", edges.tobytes())
        self._buffer("pin", np.asarray(pins, np.int32).tobytes())
        self._buffer("seam", seam_v.tobytes())

    def set_frame(self, positions: np.ndarray, scalar: np.ndarray | None = None, normals: bool = True) -> None:
        x = np.ascontiguousarray(positions, np.float32)
        self._bufs["pos"].write(x.tobytes())
        if normals:
            self._bufs["nrm"].write(vertex_normals(x, self.triangles).tobytes())
        if scalar is not None:
            self._bufs["scalar"].write(np.ascontiguousarray(scalar, np.float32).tobytes())

    def nbytes(self) -> int:
        return int(sum(b.size for b in self._bufs.values()) + sum(t.width * 4 for t in self._tex.values()))

    # ------------------------------------------------------------------ draw
    def _vao(self, prog, index: str, attrs: tuple[str, ...]):
        key = (id(prog), (index,) + attrs)
        vao = self._vaos.get(key)
        if vao is None:
            fmt = {"pos": ("3f", "in_position"), "nrm": ("3f", "in_normal"), "scalar": ("1f", "in_scalar")}
            content = [(self._bufs[a], fmt[a][0], fmt[a][1]) for a in attrs]
            vao = self.ctx.vertex_array(prog, content, index_buffer=self._bufs[index], index_element_size=4)
            self._vaos[key] = vao
        return vao

    def draw(self, view: View, view_proj: np.ndarray, camera_pos, *, level: int = 0, scalar_range=(0.0, 0.1),
             show_markers: bool = False) -> None:
        """Draw what ``view`` adds on top of (or instead of) the shaded garment."""
        if self.n == 0:
            return
        ctx = self.ctx
        vp = _f32(view_proj)
        if view in (View.STRAIN, View.PENETRATION, View.LOD):
            use_scalar = view is not View.LOD
            prog = self.programs.get("preview_surface.vert", "preview_surface.frag", {"USE_SCALAR": use_scalar})
            _set(prog, "u_view_proj", vp)
            _set(prog, "u_camera_pos", tuple(float(c) for c in camera_pos))
            if use_scalar:
                self._tex["strain" if view is View.STRAIN else "penetration"].use(0)
                _set(prog, "u_colormap", 0)
                _set(prog, "u_scalar_range", tuple(float(r) for r in scalar_range))
            else:
                _set(prog, "u_color", LEVEL_COLOURS[min(level, len(LEVEL_COLOURS) - 1)])
            attrs = ("pos", "nrm", "scalar") if use_scalar else ("pos", "nrm")
            self._vao(prog, "tri", attrs).render(ctx.TRIANGLES, vertices=self.counts["tri"])
        if view in (View.WIREFRAME, View.LOD):
            self._lines("edge", ctx.LINES, self.counts["edge"], vp, WIRE_COLOUR, bias=2e-4)
        if view is View.PINS_SEAMS or show_markers:
            self._lines("seam", ctx.POINTS, self.counts["seam"], vp, SEAM_COLOUR, bias=1e-3, size=5.0)
            self._lines("pin", ctx.POINTS, self.counts["pin"], vp, PIN_COLOUR, bias=1e-3, size=9.0)

    def _lines(self, index: str, mode, count: int, vp: bytes, colour, *, bias: float, size: float = 1.0) -> None:
        if count == 0:
            return
        ctx = self.ctx
        prog = self.programs.get("preview_lines.vert", "preview_lines.frag", {"ROUND_POINTS": mode == ctx.POINTS})
        _set(prog, "u_view_proj", vp)
        _set(prog, "u_color", tuple(colour))
        _set(prog, "u_depth_bias", bias)
        _set(prog, "u_point_size", size)
        ctx.enable(ctx.PROGRAM_POINT_SIZE)
        self._vao(prog, index, ("pos",)).render(mode, vertices=count)
        ctx.disable(ctx.PROGRAM_POINT_SIZE)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        for vao in self._vaos.values():
            vao.release()
        self._vaos.clear()
        for buf in self._bufs.values():
            buf.release()
        self._bufs.clear()
        for t in self._tex.values():
            t.release()
        self._tex.clear()

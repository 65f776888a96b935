"""The preview's side of the simulation worker: its events, the mesh layout of each scene and level
(:class:`Topology`), and the frames received, kept for scrubbing. A mixin of
:class:`render.preview.app.PreviewApp`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .channel import FrameChannel

HISTORY_BYTES = 512 << 20          # frames kept for scrubbing, per resolution level


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


class SimFeed:
    """The simulation worker's events and frames: the layout shown, the history kept for scrubbing."""

    def _start_sim(self, scene, level, device, play):
        from .sim import SimProcess

        if scene is not None and not Path(scene).exists():
            self._error(f"scene file not found: {scene}")
            scene = None
        return SimProcess(scene, level=level, device=device, playing=play)

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

    def _display_frame(self):
        t = self.topo
        if t is None or not t.history:
            return None
        return t.history[self.scrub if self.scrub is not None else -1]

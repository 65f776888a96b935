"""The simulation worker: a separate process (multiprocessing, spawn) that steps a scene's Drape and
publishes frames through a :class:`~render.preview.channel.FrameChannel`; the window never waits on it.

Commands arrive on a queue as tuples ``(name, *args)``:

==================  ==========================================================================
``play`` / ``pause``  start / stop stepping
``step [n]``          simulate n frames (default 1), then stay paused
``reset``             rebuild the scene at the current level; frame 0
``speed s``           at most s x real time (frame length ``dt``); 0 = as fast as it goes
``level k``           switch to resolution level k (0 = coarsest): positions and velocities carried
                      over by the garment hierarchy (clothsim.MultiResSimulator.set_level)
``fabric f [g]``      fabric preset name (or dict of SI fields) for garment g (default all)
``fabric_param name value [g]``  one SI field of the current fabric
``load path``         load and build another scene (a bad file keeps the current one)
``penetration on``    also compute each vertex's depth inside the body (for the highlight view)
``memory``            send the simulator's memory report
``quit``              release everything and exit
==================  ==========================================================================

Events go back on a second queue as dicts with a ``type``: ``topology`` (a new channel: its
shared-memory name, sizes, triangles, rest shape, pins, seams, body triangles, level, memory),
``state`` (playing, speed, frame), ``memory``, ``log`` and ``error`` (a message; the worker keeps
running). Nothing here imports GL.
"""

from __future__ import annotations

import os
import queue
import time
import traceback
from pathlib import Path

import numpy as np

from .channel import FrameChannel

MEMORY_EVERY_S = 2.0


class SimWorker:
    """The worker's state machine (runs inside the worker process; also usable in-process in tests)."""

    def __init__(self, events, *, device: str | None = None) -> None:
        self.events = events
        self.device = device
        self.scene = None
        self.drape = None
        self.channel: FrameChannel | None = None
        self.generation = 0
        self.level = None
        self.frame = 0
        self.playing = False
        self.pending = 0
        self.speed = 0.0
        self.penetration = False
        self.fabrics: list = []
        self._last_memory = 0.0
        self._last_step_ms = 0.0
        self._last_stats = None
        self.handled = 0

    # ------------------------------------------------------------------ events
    def emit(self, kind: str, **payload) -> None:
        payload["type"] = kind
        self.events.put(payload)

    def error(self, message: str) -> None:
        self.emit("error", message=message)

    def state(self) -> None:
        self.emit("state", playing=self.playing or self.pending > 0, speed=self.speed, frame=self.frame,
                  level=self.level, penetration=self.penetration, handled=self.handled)

    # ------------------------------------------------------------------ scene
    def load(self, path, level=None) -> None:
        """Load and build ``path`` at ``level`` (None: the scene's own). On error the current scene stays."""
        import clothsim as cs

        scene = cs.load_scene(path)   # validates: raises InputError naming the file and key
        drape = self._build(scene, level)
        self.scene = scene
        self.fabrics = [g.cloth.fabric for g in drape.garments]
        self._replace(drape, frame=0)
        self.emit("log", message=f"loaded {scene.path} (level {self.level}, {drape.sim.particle_count} vertices, "
                                 f"setup {drape.setup_s:.1f} s)")

    def _build(self, scene, level):
        """Pattern garments: a :class:`~render.preview.scene_sim.LevelledScene` (clothsim.MultiResSimulator);
        a scene with a mesh-file garment (one level): :class:`clothsim.scene.Drape`."""
        if all(g.pattern is not None for g in scene.garments):
            from .scene_sim import LevelledScene

            return LevelledScene(scene, level=level, device=self.device)
        from clothsim.scene import Drape

        return Drape(scene, level=level, device=self.device)

    def _replace(self, drape, frame: int) -> None:
        old, self.drape = self.drape, drape
        if old is not None and old is not drape:
            old.release()
        self.level = int(max(g.level for g in drape.garments))
        self.frame = frame
        if self.channel is not None:
            self.channel.close()
        n = drape.sim.particle_count
        b = len(drape.body.current_vertices)
        self.generation += 1
        self.channel = FrameChannel.create(n, b, self.generation)
        self._send_topology()
        self._publish()
        self.state()

    def _send_topology(self) -> None:
        d = self.drape
        from clothsim.scene.sources import DEFAULT_LEVELS

        offsets = np.asarray(d.offsets, dtype=np.int64)
        rest = np.full((int(offsets[-1]), 2), np.nan, np.float32)
        pins, seams, levels = [], [], []
        for i, g in enumerate(d.garments):
            a = int(offsets[i])
            if g.cloth.rest_uv is not None:
                rest[a:int(offsets[i + 1])] = g.cloth.rest_uv
            pins.append(np.asarray(g.cloth.pins, dtype=np.int64) + a)
            seams.append(np.asarray(g.cloth.seams, dtype=np.int64).reshape(-1, 2) + a)
            levels.append(g.level)
        has_pattern = all(s.pattern is not None for s in self.scene.garments)
        self.emit("topology", generation=self.generation, shm=self.channel.name, n=self.channel.n, b=self.channel.b,
                  scene_path=str(self.scene.path), scene_name=self.scene.name, level=self.level,
                  levels=list(DEFAULT_LEVELS) if has_pattern else [None],
                  edge_length=d.garments[0].edge_length,
                  triangles=np.asarray(d.sim.triangles, dtype=np.int32), garment_offsets=offsets,
                  garments=[g.name for g in d.garments], rest_uv=rest,
                  pins=np.concatenate(pins) if pins else np.zeros(0, np.int64),
                  seams=np.concatenate(seams) if seams else np.zeros((0, 2), np.int64),
                  body_triangles=np.asarray(d.body.triangles, dtype=np.int32), dt=float(d.sim.dt),
                  frame=self.frame, memory=d.sim.memory_report(),
                  fabrics=[_fabric_dict(f) for f in self.fabrics] if len(self.fabrics) == len(d.garments)
                  else [_fabric_dict(g.cloth.fabric) for g in d.garments],
                  penetration_tolerance=float(self.scene.simulation.checks.penetration))

    def _publish(self, step_ms: float | None = None, stats=None) -> None:
        """Write the current positions (and depths if asked) to the channel; without arguments the last
        step's timing and measurements go with them (a republish after a level switch or a view change)."""
        if step_ms is None:
            step_ms, stats = self._last_step_ms, self._last_stats
        d = self.drape
        x = d.positions()
        depth = None
        if self.penetration:
            from clothsim.collision.intersections import penetration_depths

            depth = np.zeros(len(x), np.float32)
            for i in range(len(d.garments)):
                a, b = int(d.offsets[i]), int(d.offsets[i + 1])
                depth[a:b] = penetration_depths(x[a:b], d.body.current_vertices, d.body.triangles, device="cpu")
        kw = {}
        if stats is not None:
            kw = dict(kinetic_energy=stats.kinetic_energy, residual=stats.residual, seam_gap=stats.seam_gap)
        self.channel.publish(self.frame, x, np.asarray(d.body.current_vertices, np.float32), depth, step_ms, **kw)

    # ------------------------------------------------------------------ commands
    def handle(self, cmd: tuple) -> bool:
        """Run one command; returns False on ``quit``. Errors become ``error`` events."""
        name, args = cmd[0], cmd[1:]
        self.handled += 1
        try:
            if name == "quit":
                return False
            if name == "load":
                level = args[1] if len(args) > 1 else None
                self.playing = False
                self.load(args[0], level)
                return True
            if self.drape is None:
                raise _user_error(f"{name}: no scene is loaded (load one first)")
            if name == "play":
                self.playing = True
            elif name == "pause":
                self.playing = False
                self.pending = 0
            elif name == "step":
                self.playing = False
                self.pending += int(args[0]) if args else 1
            elif name == "reset":
                self.playing = False
                self.pending = 0
                self._replace(self._build(self.scene, self.level), frame=0)
                self._apply_fabrics()
            elif name == "speed":
                s = float(args[0])
                if not (s >= 0.0 and np.isfinite(s)):
                    raise _user_error(f"speed must be >= 0 (0 = unlimited), got {args[0]!r}")
                self.speed = s
            elif name == "level":
                self.set_level(int(args[0]))
            elif name == "fabric":
                self.set_fabric(args[0], args[1] if len(args) > 1 else None)
            elif name == "fabric_param":
                self.set_fabric_param(args[0], float(args[1]), args[2] if len(args) > 2 else None)
            elif name == "penetration":
                self.penetration = bool(args[0])
                self._publish()
            elif name == "memory":
                self.emit("memory", report=self.drape.sim.memory_report())
            else:
                raise _user_error(f"unknown simulation command {name!r}")
        except Exception as e:  # noqa: BLE001 - every failure is reported, none ends the worker
            self.error(_describe(e))
        self.state()
        return True

    def set_level(self, k: int) -> None:
        """Switch to level ``k`` (:meth:`clothsim.MultiResSimulator.set_level`: positions and velocities
        mapped by the garment hierarchy's prolongation/restriction, seams closed, projected, relaxed)."""
        from clothsim.errors import InputError
        from clothsim.scene.sources import DEFAULT_LEVELS

        d = self.drape
        if not hasattr(d, "set_level"):
            meshes = [f"{g.name!r} ({g.mesh})" for g in self.scene.garments if g.pattern is None]
            raise InputError(f"{self.scene.path}: garment {', '.join(meshes)} is a mesh file with one resolution "
                             "level; only scenes whose garments are all patterns switch level")
        if not 0 <= k < len(DEFAULT_LEVELS):
            raise InputError(f"level {k} does not exist; levels are 0..{len(DEFAULT_LEVELS) - 1} "
                             f"({', '.join(f'{1e3 * e:g} mm' for e in DEFAULT_LEVELS)})")
        if k == self.level:
            return
        old_level = self.level
        rep = d.set_level(k)
        self._replace(d, frame=self.frame)
        self.emit("log", message=f"level {old_level} -> {k}: {d.sim.particle_count} vertices in {rep.seconds:.2f} s "
                                 f"(largest move after mapping {1e3 * rep.max_displacement_m:.1f} mm)")

    def set_fabric(self, fabric, garment=None) -> None:
        from clothsim.fabric import Fabric

        f = Fabric.resolve(fabric)
        for i in self._garment_indices(garment):
            self.fabrics[i] = f
        self._apply_fabrics()
        self.emit("log", message=f"fabric {f.name} on {self._garment_label(garment)}")

    def set_fabric_param(self, field: str, value: float, garment=None) -> None:
        from clothsim.errors import InputError
        from clothsim.fabric import preset_fields

        if field not in preset_fields() or field == "name":
            raise InputError(f"fabric parameter {field!r}: expected one of {', '.join(preset_fields())}")
        for i in self._garment_indices(garment):
            self.fabrics[i] = self.fabrics[i].replace(**{field: value})
        self._apply_fabrics()
        self.emit("log", message=f"fabric {field} = {value:g} on {self._garment_label(garment)}")

    def _apply_fabrics(self) -> None:
        """Put ``self.fabrics`` into the running simulation: in place when the simulator allows it (stiffness,
        bending, friction, ...); a change of areal density (vertex masses) rebuilds the scene at the same level
        with the current positions and velocities (``Simulator.set_fabric`` refuses it between steps)."""
        from clothsim.errors import InputError

        if len(self.fabrics) != len(self.drape.garments):
            self.fabrics = [g.cloth.fabric for g in self.drape.garments]
        try:
            for i, f in enumerate(self.fabrics):
                self.drape.sim.set_fabric(f, cloth=i)
        except InputError as e:
            if "density" not in str(e):
                raise
            self._rebuild_with_fabrics()
        self.emit("fabrics", generation=self.generation, fabrics=[_fabric_dict(f) for f in self.fabrics])

    def _rebuild_with_fabrics(self) -> None:
        import dataclasses

        d = self.drape
        x, v = d.positions(), d.sim.velocities()
        sim_frame = d.frame
        specs = tuple(dataclasses.replace(spec, fabric=f) for spec, f in zip(self.scene.garments, self.fabrics))
        scene = self.scene.replace(garments=specs)
        new = self._build(scene, self.level)
        try:
            new.sim.set_positions(x)
            new.sim.set_velocities(v)
            new.meter.v_prev = v.astype(np.float64)
            if hasattr(new.sim, "_frame"):   # MultiResSimulator keeps the frame count itself
                new.sim._frame = sim_frame
            else:
                new.sim.frame = sim_frame
        except BaseException:
            new.release()
            raise
        self.scene = scene     # reset and level switches keep the new fabrics
        self._replace(new, frame=self.frame)
        self.emit("log", message="fabric density changed: the scene was rebuilt with the current positions")

    def _garment_indices(self, garment) -> list[int]:
        from clothsim.errors import InputError

        n = len(self.drape.garments)
        if garment is None:
            return list(range(n))
        if isinstance(garment, str) and not garment.isdigit():
            names = [g.name for g in self.drape.garments]
            if garment not in names:
                raise InputError(f"no garment {garment!r}; expected one of {', '.join(names)}")
            return [names.index(garment)]
        g = int(garment)
        if not 0 <= g < n:
            raise InputError(f"garment index {g} out of range [0, {n})")
        return [g]

    def _garment_label(self, garment) -> str:
        return "all garments" if garment is None else f"garment {garment}"

    # ------------------------------------------------------------------ stepping
    def step_once(self) -> None:
        st = self.drape.step()
        self._last_step_ms = 1e3 * st.seconds
        self._last_stats = st
        self.frame += 1
        self._publish()
        now = time.perf_counter()
        if now - self._last_memory > MEMORY_EVERY_S:
            self._last_memory = now
            self.emit("memory", report=self.drape.sim.memory_report())

    def close(self) -> None:
        if self.drape is not None:
            self.drape.release()
            self.drape = None
        if self.channel is not None:
            self.channel.close()
            self.channel = None


def _fabric_dict(f) -> dict:
    import dataclasses

    return {k: (v if isinstance(v, str) else float(v)) for k, v in dataclasses.asdict(f).items()}


def _user_error(message: str):
    from clothsim.errors import InputError

    return InputError(message)


def _describe(e: BaseException) -> str:
    from clothsim.errors import ClothsimError

    if isinstance(e, ClothsimError):
        return str(e)
    tb = traceback.extract_tb(e.__traceback__)
    where = f" ({Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {e}{where}"


def worker_main(commands, events, scene_path, level=None, device=None, playing: bool = False) -> None:
    """Entry point of the worker process (spawn): load the scene, then serve commands and step."""
    os.environ.setdefault("WARP_QUIET", "1")
    try:
        import warp as wp

        wp.config.quiet = True
        wp.init()
    except Exception as e:  # noqa: BLE001
        events.put({"type": "error", "message": f"cannot start Warp: {e}"})
        return
    w = SimWorker(events, device=device)
    if scene_path is not None:
        try:
            w.load(scene_path, level)
            w.playing = playing
            w.state()
        except Exception as e:  # noqa: BLE001
            w.error(_describe(e))
    running = True
    next_due = 0.0
    try:
        while running:
            busy = w.drape is not None and (w.playing or w.pending > 0)
            timeout = 0.05 if not busy else max(0.0, next_due - time.perf_counter())
            try:
                cmd = commands.get(timeout=timeout) if timeout > 0 else commands.get_nowait()
            except queue.Empty:
                cmd = None
            if cmd is not None:
                running = w.handle(cmd)
                continue   # drain every queued command before the next step
            if not busy or time.perf_counter() < next_due:
                continue
            t_start = time.perf_counter()
            try:
                w.step_once()
            except Exception as e:  # noqa: BLE001 - e.g. SimulationError: report, pause, keep serving
                w.playing = False
                w.pending = 0
                w.error(_describe(e))
                w.state()
                continue
            if w.pending > 0:
                w.pending -= 1
                if w.pending == 0:
                    w.state()
            frame_s = w.drape.sim.dt / w.speed if w.speed > 0 else 0.0
            next_due = t_start + frame_s   # frame starts frame_s apart: s x real time at most
    finally:
        w.close()
        events.put({"type": "exit"})

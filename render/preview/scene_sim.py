"""A scene on :class:`clothsim.MultiResSimulator`: the preview worker's simulation when every garment is
a pattern (so it has a resolution hierarchy). Mesh-file garments have one level: the worker then uses
:class:`clothsim.scene.Drape` instead.

It builds what :class:`~clothsim.scene.Drape` builds (the body, each garment by
:func:`clothsim.scene.sources.build_garment` at every level it visits, the avatar collider, the pose
schedule, the scene's simulation settings) and measures each frame the same way (kinetic energy per
kilogram, the residual ``RMS |Δv| / (g Δt)`` over free vertices, the largest seam gap), so the
preview shows the numbers ``clothsim simulate`` reports. Switching level is the multires simulator's:
positions and velocities mapped by the hierarchy's prolongation/restriction, seams closed, projected
out of the body and relaxed (:meth:`clothsim.MultiResSimulator.set_level`). Runs in the worker
process; no GL.
"""

from __future__ import annotations

import time

import numpy as np


class LevelledScene:
    """Duck-types the parts of :class:`clothsim.scene.Drape` the worker uses, plus :meth:`set_level`.

    Attributes:
        sim: the :class:`clothsim.MultiResSimulator` (``particle_count``, ``triangles``, ``dt``,
            ``memory_report()``, ``set_fabric``, ``velocities()``).
        garments: the :class:`~clothsim.scene.sources.BuiltGarment` list of the active level.
        body: the avatar (:class:`~clothsim.scene.sources.Body`).
    """

    def __init__(self, scene, *, level=None, device: str | None = None) -> None:
        import warp as wp

        from clothsim import Collider, MultiResSimulator
        from clothsim.errors import InputError
        from clothsim.scene import sources

        t0 = time.perf_counter()
        if any(g.pattern is None for g in scene.garments):
            raise InputError(f"{scene.path}: LevelledScene needs pattern garments (mesh files have one level)")
        self.scene = scene
        self.body = sources.build_body(scene)
        levels = sources.DEFAULT_LEVELS
        self.levels, self._built = sources.scene_level_set(scene, self.body)
        k = sources._level_index(levels, scene.garments[0], level, f"{scene.path}: garments.{scene.garments[0].name}")
        s = scene.simulation
        dev = device or s.device
        self.device = str(wp.get_preferred_device()) if dev == "auto" else dev
        self.sim = MultiResSimulator(self.levels, level=k, device=self.device, dt=s.dt, substeps=s.substeps,
                                     iterations=s.iterations, ground=s.ground, self_collision=s.self_collision,
                                     contact_stiffness=s.contact_stiffness, contact_damping=s.contact_damping,
                                     drag=s.drag, air_damping=s.air_damping)
        try:
            self.collider_handle = self.sim.add_collider(
                Collider.mesh(self.body.collider_vertices, self.body.triangles, name="avatar"))
            self._pose_schedule = sources.pose_schedule(scene, self.body)
            self._after_level_change()
        except BaseException:
            self.sim.release()
            raise
        self.setup_s = time.perf_counter() - t0

    # ------------------------------------------------------------------ level
    @property
    def level(self) -> int:
        return self.sim.level

    @property
    def garments(self) -> list:
        return self._built[self.sim.level]

    @property
    def offsets(self) -> np.ndarray:
        return self.sim.cloth_offsets

    def set_level(self, k: int):
        """Switch the simulation to level ``k``; returns the :class:`clothsim.multires.SwitchReport`."""
        rep = self.sim.set_level(k)
        self._after_level_change()
        return rep

    def _after_level_change(self) -> None:
        from clothsim.scene.drape import FrameMeter

        off = self.offsets
        self.meter = FrameMeter(self.sim.simulator.model, [g.cloth.seams + off[i] for i, g in enumerate(self.garments)],
                                self.sim.velocities())

    # ------------------------------------------------------------------ stepping
    @property
    def frame(self) -> int:
        return self.sim.frame

    def positions(self) -> np.ndarray:
        return self.sim.positions()

    def step(self):
        """One frame (the avatar follows the pose schedule); returns a :class:`clothsim.scene.drape.FrameStats`."""
        target = self._pose_schedule(self.sim.frame + 1) if self._pose_schedule else None
        if target is not None:
            self.sim.set_collider_vertices(self.collider_handle, target)
        t = time.perf_counter()
        self.sim.step()
        seconds = time.perf_counter() - t
        return self.meter.measure(self.sim.frame, self.sim.positions(), self.sim.velocities(), self.sim.dt, seconds)

    def release(self) -> None:
        self.sim.release()

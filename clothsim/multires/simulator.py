"""MultiResSimulator: one simulation that runs at any level of a resolution hierarchy and switches level
between steps, with every device buffer owned by the level that is active (or kept warm).

    import clothsim as cs
    from clothsim.multires import LevelSet
    levels = LevelSet.grid(size=(1.0, 1.0), resolutions=((17, 17), (33, 33), (65, 65)))
    sim = cs.MultiResSimulator(levels, level=0, device="cpu", memory_budget=64 << 20)
    sim.add_collider(cs.Collider.sphere(center=(0.0, 0.4, 0.2), radius=0.2))
    sim.step(30)                 # drape at the coarse level
    sim.set_level(2)             # prolong positions and velocities, project out of the sphere, relax
    sim.step(10)
    print(sim.memory_report()["categories"])
    sim.release()

Ownership. A level is a :class:`clothsim.Simulator` whose model (constraints), state, solver scratch,
colliders and contact structures are the owners listed in :mod:`clothsim.multires.memory`. Activating a level
allocates them (from a host snapshot of the level's model after its first build); leaving it frees them
(``Simulator.release``), unless ``keep_warm=True`` keeps the level being left alive (category
``kept_levels``). Nothing is allocated inside :meth:`step` (the solver's contract); on CUDA each level's
solver captures its own graph, freed with the level. Zero-copy views handed out for a level (Warp arrays from
:meth:`positions_warp`, torch tensors) raise :class:`clothsim.StaleViewError` once that level is released.

Budget. With ``memory_budget`` [bytes], a level whose estimated bytes (computed from host data before
anything is allocated, see :func:`~clothsim.multires.memory.estimate_simulator_bytes`) would take the owned
total over the budget is refused with :class:`MemoryBudgetError`; the simulator stays at its level.

Switch. ``x_new = T·x_old`` and ``v_new = T·v_old`` with T the level transfer (prolongation going finer,
restriction going coarser; :class:`~clothsim.multires.levels.LevelSet`); pinned vertices of the new level
are pinned where the mapping puts them; colliders keep their pose (and a pending target); then the free
vertices are projected out of colliders/ground and relaxed (:mod:`clothsim.multires.transfer`) with the
carried velocities put back. :class:`SwitchReport` gives the largest displacement from ``T·x_old``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from ..colliders import Collider
from ..errors import ClothsimError, InputError, SimulationError
from ..fabric import Fabric
from ..simulator import Simulator
from .energy import mechanical_energy
from .levels import LevelSet
from .memory import CATEGORIES, estimate_simulator_bytes, independent_figures, simulator_owners
from .transfer import ModelSnapshot, project_out, relax


class MemoryBudgetError(ClothsimError, MemoryError):
    """A level does not fit in the simulator's memory budget; nothing was allocated, the level is unchanged."""


@dataclass
class SwitchReport:
    """What one :meth:`MultiResSimulator.set_level` did. Distances in metres, energies in joules, bytes."""

    from_level: int
    to_level: int
    seconds: float
    max_projection_m: float = 0.0  # largest move out of colliders/ground
    max_displacement_m: float = 0.0  # largest |x_after − T·x_old| (projection + relaxation)
    rms_displacement_m: float = 0.0
    energy_before: dict | None = None  # mechanical_energy at the old level (measure=True)
    energy_mapped: dict | None = None  # at the new level, right after the mapping (before projection/relax)
    energy_after: dict | None = None  # at the new level after projection and relaxation
    bytes_before: int = 0
    bytes_after: int = 0
    warm: bool = False  # the new level was kept warm (no allocation)


@dataclass
class _Level:
    index: int
    sim: Simulator
    tokens: list = field(default_factory=list)


@dataclass
class _ColliderSlot:
    triangles: np.ndarray
    name: str
    pose: np.ndarray  # (Nc, 3) pose at the start of the next frame [m]
    target: np.ndarray | None = None  # pose at the end of the next frame, if set
    proxies: dict = field(default_factory=dict)  # {level: ColliderProxy} stand-ins at single levels

    def at(self, level: int, pose=None) -> tuple:
        """(vertices, triangles) of this collider as level ``level`` sees it, for ``pose`` (default its pose)."""
        pose = self.pose if pose is None else pose
        p = self.proxies.get(level)
        return (pose, self.triangles) if p is None else (p.pose(pose), p.triangles)

    def collider(self, level: int) -> Collider:
        v, t = self.at(level)
        return Collider(v, t, name=self.name)


class MultiResSimulator:
    """A simulator over a :class:`LevelSet` (or a GarmentHierarchy / list of them) that switches level.

    Args:
        levels: a :class:`~clothsim.multires.LevelSet`, a :class:`~clothsim.garments.GarmentHierarchy` or a
            list of them (one per garment).
        level: the level to start at (0 = coarsest).
        device: "cpu", "cuda:0", ...
        memory_budget: bytes the owners may hold in all (active + kept levels), or None for no limit.
        relax_substeps, relax_iterations, relax_dt: the relaxation after a switch (steps, VBD iterations per
            step (default the sim's), step length [s] (default the sim's substep)); 0 steps = no relaxation.
        project: project out of colliders and ground after a switch.
        level_settings: {level: {Simulator setting: value}} overrides for single levels, e.g.
            ``{0: {"substeps": 5}}`` to draft the coarsest level with fewer substeps (dt must stay the same).
        level_thickness: {level: thickness [m]}: at those levels every garment keeps at least this distance
            from colliders and from itself (its fabric's ``thickness`` raised to it; the fabric is unchanged
            elsewhere). A coarse draft whose layers stay further apart than the finer level's interpolation
            error (the flat coarse triangles vs the fine mesh across a coarse fold) hands over a state whose
            prolongation has no cloth-cloth intersections; see :class:`clothsim.scene.Drape`.
        prolongation: how positions go to a finer level: "linear" (the level mapping T) or "curved" (PN
            triangles over the coarse vertex normals, :meth:`LevelSet.prolong_curved`: no corner cutting on
            curved drapes). Velocities always go through T.
        **sim_kwargs: the :class:`clothsim.Simulator` settings (dt, substeps, iterations, gravity, ground,
            self_collision, contact_stiffness, air_damping, ...), the same at every level unless overridden.
    """

    def __init__(self, levels, *, level: int = 0, device="cpu", memory_budget: int | None = None,
                 relax_substeps: int = 8, relax_iterations: int | None = None, relax_dt: float | None = None,
                 project: bool = True, level_settings: dict | None = None, prolongation: str = "linear",
                 level_thickness: dict | None = None, **sim_kwargs):
        if not isinstance(levels, LevelSet):
            levels = LevelSet.from_hierarchy(levels)
        self.levels = levels
        if "model" in sim_kwargs:
            raise InputError("MultiResSimulator: model= is managed per level; do not pass it")
        if memory_budget is not None and not (isinstance(memory_budget, (int, np.integer)) and memory_budget > 0):
            raise InputError(f"MultiResSimulator: memory_budget must be a positive number of bytes or None, "
                             f"got {memory_budget!r}")
        if int(relax_substeps) != relax_substeps or relax_substeps < 0:
            raise InputError(f"MultiResSimulator: relax_substeps must be an integer >= 0, got {relax_substeps!r}")
        try:
            self.device = wp.get_device(device)
        except Exception as e:  # noqa: BLE001
            raise InputError(f"MultiResSimulator: device {device!r} is not available ({e})") from None
        self.memory_budget = None if memory_budget is None else int(memory_budget)
        self.relax_substeps = int(relax_substeps)
        self.relax_iterations = relax_iterations
        self.relax_dt = relax_dt
        self.project = bool(project)
        if prolongation not in ("linear", "curved"):
            raise InputError(f"MultiResSimulator: prolongation must be 'linear' or 'curved', got {prolongation!r}")
        self.prolongation = prolongation
        self._sim_kwargs = dict(sim_kwargs)
        self._level_settings = {}
        self._level_thickness = {}
        for k, t in (level_thickness or {}).items():
            if not (isinstance(t, (int, float, np.floating)) and np.isfinite(t) and 0.0 < t <= 0.05):
                raise InputError(f"MultiResSimulator: level_thickness[{k!r}] must be a thickness in (0, 0.05] m, "
                                 f"got {t!r}")
            self._level_thickness[self.levels.index(k)] = float(t)
        for k, over in (level_settings or {}).items():
            over = dict(over)
            if "model" in over or "dt" in over:
                raise InputError(f"MultiResSimulator: level_settings[{k!r}] may not set model or dt (frames must "
                                 "have the same length at every level)")
            self._level_settings[self.levels.index(k)] = over
        self._colliders: list[_ColliderSlot] = []
        self._fabrics: dict[int, Fabric] = {}
        self._snapshots: dict[int, ModelSnapshot] = {}
        self._estimates: dict[tuple, dict] = {}
        self._capacities: dict[int, dict] = {}  # contact list capacities a level grew to, kept across activations
        self._warm: dict[int, _Level] = {}
        self._frame = 0
        self._released = False
        self.switches: list[SwitchReport] = []
        i = self.levels.index(level)
        self._check_budget(i, freeing=0)
        self._active = self._activate(i)

    # ------------------------------------------------------------------ properties
    @property
    def level(self) -> int:
        """The active level (0 = coarsest)."""
        return self._active.index

    @property
    def level_count(self) -> int:
        return self.levels.count

    @property
    def warm_levels(self) -> list:
        """Levels kept warm (allocated, not active)."""
        return sorted(self._warm)

    @property
    def simulator(self) -> Simulator:
        """The active level's :class:`clothsim.Simulator` (released when the level is left, unless kept warm)."""
        self._check_alive()
        return self._active.sim

    @property
    def particle_count(self) -> int:
        return self.simulator.particle_count

    @property
    def triangles(self) -> np.ndarray:
        return self.simulator.triangles

    @property
    def cloth_offsets(self) -> np.ndarray:
        return self.simulator.cloth_offsets

    @property
    def frame(self) -> int:
        return self._frame

    @property
    def dt(self) -> float:
        return self.simulator.dt

    @property
    def time(self) -> float:
        return self._frame * self.dt

    # ------------------------------------------------------------------ scene
    def add_collider(self, collider: Collider, *, proxy_cells: dict | None = None,
                     level_offsets: dict | None = None) -> int:
        """Add a collider to every allocated level (and to levels built later); returns its handle.

        ``proxy_cells``: {level: cell [m]}: at those levels the collider is replaced by a vertex-clustering
        proxy (:func:`~clothsim.multires.proxy.cluster_proxy`) whose poses follow the collider's; e.g.
        ``{0: 0.03}`` lets an 80 mm draft collide with a 3 cm body instead of the full one.
        ``level_offsets``: {level: offsets [m], a number or (Nc,) per collider vertex}: at those levels the
        collider is moved inward along its vertex normals by that much (:class:`~clothsim.multires.proxy.
        OffsetProxy`), e.g. :func:`~clothsim.multires.proxy.chord_offsets` so a coarse level wraps the body
        as tight as the fine one. A level may have a proxy cell or an offset, not both."""
        self._check_alive()
        if not isinstance(collider, Collider):
            raise InputError(f"add_collider: expected a clothsim.Collider, got {type(collider).__name__}")
        from .proxy import OffsetProxy, cluster_proxy

        proxies = {self.levels.index(k): cluster_proxy(collider.vertices, collider.triangles, float(c))
                   for k, c in (proxy_cells or {}).items()}
        nv = len(collider.vertices)
        for k, off in (level_offsets or {}).items():
            i = self.levels.index(k)
            if i in proxies:
                raise InputError(f"add_collider: level {i} has both a proxy cell and an offset; give one")
            try:
                o = np.broadcast_to(np.asarray(off, dtype=np.float64), (nv,)).copy()
            except (ValueError, TypeError):
                raise InputError(f"add_collider: level_offsets[{k!r}] must be a number or {nv} numbers [m] (one "
                                 f"per collider vertex), got shape {np.shape(off)}") from None
            if not np.all(np.isfinite(o)):
                raise InputError(f"add_collider: level_offsets[{k!r}] has non-finite values")
            proxies[i] = OffsetProxy(collider.triangles.copy(), o)
        slot = _ColliderSlot(collider.triangles.copy(), collider.name, collider.vertices.copy(), proxies=proxies)
        self._colliders.append(slot)
        self._estimates.clear()
        for lv in [self._active, *self._warm.values()]:
            lv.sim.add_collider(slot.collider(lv.index))
        return len(self._colliders) - 1

    def set_collider_vertices(self, handle: int, vertices) -> None:
        """Pose (Nc, 3) [m] of collider ``handle`` at the end of the next frame."""
        self._check_alive()
        if not (0 <= handle < len(self._colliders)):
            raise InputError(f"collider handle {handle} out of range [0, {len(self._colliders)})")
        slot = self._colliders[handle]
        target = np.asarray(vertices, dtype=np.float64).copy()
        self._active.sim.set_collider_vertices(handle, slot.at(self._active.index, target)[0])
        slot.target = target

    def set_fabric(self, fabric, cloth: int = 0) -> None:
        """Change garment ``cloth``'s fabric at every level (now for allocated levels, on build for others)."""
        self._check_alive()
        f = Fabric.resolve(fabric)
        for lv in [self._active, *self._warm.values()]:
            lv.sim.set_fabric(self._level_fabric(lv.index, f), cloth)
        self._fabrics[int(cloth)] = f

    def _level_fabric(self, level: int, fabric: Fabric) -> Fabric:
        """``fabric`` as level ``level`` simulates it (thickness raised to the level's level_thickness)."""
        t = self._level_thickness.get(level)
        return fabric if t is None or fabric.thickness >= t else fabric.replace(thickness=t)

    # ------------------------------------------------------------------ stepping
    def step(self, frames: int = 1) -> None:
        """Advance ``frames`` frames at the active level (no allocation)."""
        self._check_alive()
        if int(frames) != frames or frames < 0:
            raise InputError(f"step: frames must be a non-negative integer, got {frames!r}")
        sim = self._active.sim
        for _ in range(int(frames)):
            sim.frame = self._frame
            sim.step()
            self._frame += 1
            for slot in self._colliders:
                if slot.target is not None:
                    slot.pose, slot.target = slot.target, None

    # ------------------------------------------------------------------ state access
    def positions(self) -> np.ndarray:
        """Vertex positions (N, 3) float32 [m] of the active level, a copy."""
        return self.simulator.positions()

    def velocities(self) -> np.ndarray:
        """Vertex velocities (N, 3) float32 [m/s] of the active level, a copy."""
        return self.simulator.velocities()

    def set_positions(self, x) -> None:
        self.simulator.set_positions(x)

    def set_velocities(self, v) -> None:
        self.simulator.set_velocities(v)

    def positions_warp(self) -> wp.array:
        """The active level's positions as a zero-copy, non-owning Warp array (N,) vec3 [m]; raises
        StaleViewError once the level is released (switched away from without keep_warm, or release())."""
        return self._warp_view("x", "positions")

    def velocities_warp(self) -> wp.array:
        return self._warp_view("v", "velocities")

    def positions_torch(self):
        """Positions as a zero-copy torch tensor (N, 3); raises StaleViewError once the level is released."""
        return self._torch_view("x", "positions")

    def velocities_torch(self):
        return self._torch_view("v", "velocities")

    def _warp_view(self, attr, what):
        from ..views import guarded_warp_view

        lv = self._active
        self._check_alive()
        view, token = guarded_warp_view(getattr(lv.sim.state, attr), f"MultiResSimulator.{what}_warp() of level {lv.index}")
        lv.tokens.append(token)
        return view

    def _torch_view(self, attr, what):
        from ..views import guarded_torch_view, guarded_warp_view

        lv = self._active
        self._check_alive()
        label = f"MultiResSimulator.{what}_torch() of level {lv.index}"
        alias, tok_a = guarded_warp_view(getattr(lv.sim.state, attr), label)
        t, tok_t = guarded_torch_view(alias, label)
        lv.tokens += [tok_a, tok_t]
        return t

    def render_mesh(self, render_level: int):
        """An :class:`~clothsim.multires.render_embedding.EmbeddedRenderMesh` of level ``render_level`` driven
        by the active level: ``mesh.update(sim.positions_warp())`` each frame, then draw ``mesh.points``
        (``mesh.triangles``). It owns its arrays (``release()``); rebuild it after a level switch."""
        from .render_embedding import EmbeddedRenderMesh

        self._check_alive()
        return EmbeddedRenderMesh.from_levels(self.levels, self.level, self.levels.index(render_level), device=self.device)

    # ------------------------------------------------------------------ levels
    def estimate_level_bytes(self, level: int) -> dict:
        """Bytes level ``level`` would allocate, by category (computed from host data; nothing allocated)."""
        i = self.levels.index(level)
        caps = self._start_capacities(i)
        key = (i, len(self._colliders), i in self._snapshots, tuple(sorted(caps.items())))
        if key not in self._estimates:
            snap = self._snapshots.get(i)
            hosts = [s.collider(i) for s in self._colliders]
            settings = {**self._sim_kwargs, **self._level_settings.get(i, {})}
            self._estimates[key] = estimate_simulator_bytes(
                self.levels.cloths(i),
                self_collision=bool(settings.get("self_collision", False)), jacobi=settings.get("sweep") == "jacobi",
                colliders=hosts, model_bytes=snap.nbytes_device if snap else None,
                collider_capacities=caps.get("collider", (8, 4)), self_capacities=caps.get("self", (16, 16, 16)),
                device=self.device, cpu_threads=settings.get("cpu_threads"))
        return dict(self._estimates[key])

    def set_level(self, level: int, keep_warm: bool = False, *, measure: bool = False) -> SwitchReport:
        """Switch to ``level`` between steps (state carried over; see the module docstring).

        Args:
            keep_warm: keep the level being left allocated (category "kept_levels"), so switching back
                allocates nothing.
            measure: also compute the mechanical energy before, right after the mapping and after the
                relaxation (host work; off for speed).
        Raises:
            MemoryBudgetError: the level does not fit the budget (checked before anything is allocated; the
                simulator stays at its level).
        """
        self._check_alive()
        i = self.levels.index(level)
        a = self._active
        t0 = time.perf_counter()
        if i == a.index:
            return SwitchReport(i, i, 0.0)
        bytes_before = self._owned_total()
        a_bytes = sum(b for _, (_, b) in self._level_bytes(a.sim).items())
        self._record_capacities(a)  # the new level may start at these (_start_capacities): estimate with them
        self._check_budget(i, freeing=0 if keep_warm else a_bytes)
        old = a.sim
        x_old = old.positions().astype(np.float64)
        v_old = old.velocities().astype(np.float64)
        e_before = mechanical_energy(old, x_old, v_old) if measure else None
        if self.prolongation == "curved" and i > a.index:
            x_new = self.levels.prolong_curved(x_old, a.index, i)
        else:
            x_new = self.levels.map(x_old, a.index, i)
        v_new = self.levels.map(v_old, a.index, i)
        self._close_seams(i, x_new, v_new)
        if keep_warm:
            self._warm[a.index] = a
        else:
            self._drop(a)
        warm = i in self._warm
        try:
            b = self._warm.pop(i) if warm else self._activate(i)
        except BaseException:
            # nothing of the new level survives; put the old one back as it was
            if keep_warm:
                self._active = self._warm.pop(a.index)
            else:
                self._active = self._activate(a.index)
                self._place(self._active.sim, x_old, v_old, a.index)
            raise
        self._active = b
        sim = b.sim
        sim.frame = self._frame
        self._place(sim, x_new, v_new, i)
        e_mapped = mechanical_energy(sim, x_new, v_new) if measure else None
        moved = project_out(sim) if self.project else np.zeros(sim.particle_count)
        v_keep = sim.velocities()
        relax(sim, substeps=self.relax_substeps, iterations=self.relax_iterations, dt=self.relax_dt)
        sim.set_velocities(v_keep)
        wp.copy(sim.state.v_last, sim.state.v)
        for h, slot in enumerate(self._colliders):
            if slot.target is not None:
                sim.set_collider_vertices(h, slot.at(i, slot.target)[0])
        x_after = sim.positions().astype(np.float64)
        d = np.linalg.norm(x_after - x_new, axis=1)
        rep = SwitchReport(
            from_level=a.index, to_level=i, seconds=time.perf_counter() - t0,
            max_projection_m=float(moved.max(initial=0.0)), max_displacement_m=float(d.max(initial=0.0)),
            rms_displacement_m=float(np.sqrt(np.mean(d * d))) if d.size else 0.0,
            energy_before=e_before, energy_mapped=e_mapped,
            energy_after=mechanical_energy(sim, x_after, v_keep) if measure else None,
            bytes_before=bytes_before, bytes_after=self._owned_total(), warm=warm)
        self.switches.append(rep)
        return rep

    def release_level(self, level: int) -> None:
        """Free a level kept warm (its views become stale). The active level cannot be released this way."""
        self._check_alive()
        i = self.levels.index(level)
        if i == self._active.index:
            raise InputError(f"release_level: level {i} is the active level; switch away first or call release()")
        lv = self._warm.pop(i, None)
        if lv is None:
            raise InputError(f"release_level: level {i} is not kept warm (warm levels: {self.warm_levels})")
        self._drop(lv)

    # ------------------------------------------------------------------ memory
    def memory_report(self, independent: bool = False) -> dict:
        """Bytes in use by owner and category.

        Returns a dict: ``owners`` {"level<i>/<owner>": {"category", "bytes"}} (owners of the active level
        and of levels kept warm; the latter in category "kept_levels"), ``categories`` {state, constraints,
        collision, scratch, kept_levels: bytes}, ``total``, ``budget``, ``level``, ``warm_levels``,
        ``host_snapshot_bytes`` (host copies of built levels' models, not device memory) and, if
        ``independent``, ``independent``: :func:`~clothsim.multires.memory.independent_figures` (gc figure on
        every device, mempool and driver free memory on CUDA)."""
        self._check_alive()
        owners = {}
        cats = dict.fromkeys(CATEGORIES, 0)
        for lv, kept in [(self._active, False)] + [(w, True) for w in self._warm.values()]:
            for name, (cat, nb) in self._level_bytes(lv.sim).items():
                c = "kept_levels" if kept else cat
                owners[f"level{lv.index}/{name}"] = {"category": c, "bytes": nb}
                cats[c] += nb
        rep = {"device": str(self.device), "level": self._active.index, "warm_levels": self.warm_levels,
               "owners": owners, "categories": cats, "total": int(sum(cats.values())), "budget": self.memory_budget,
               "host_snapshot_bytes": int(sum(s.host_bytes() for s in self._snapshots.values()))}
        if independent:
            rep["independent"] = independent_figures(self.device)
        return rep

    def release(self) -> None:
        """Free every level's device buffers and the host snapshots; idempotent. Views become stale."""
        if self._released:
            return
        for lv in list(self._warm.values()):
            self._drop(lv)
        self._warm.clear()
        if self._active is not None:
            self._drop(self._active)
        self._active = None
        self._snapshots.clear()
        self._released = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    # ------------------------------------------------------------------ internals
    def _check_alive(self):
        if self._released:
            raise SimulationError("this MultiResSimulator has been released")

    @staticmethod
    def _level_bytes(sim) -> dict:
        return {name: (cat, int(sum(a.capacity for a in arrs))) for name, cat, arrs in simulator_owners(sim)}

    def _owned_total(self) -> int:
        lvs = ([self._active] if getattr(self, "_active", None) is not None else []) + list(self._warm.values())
        return int(sum(b for lv in lvs for _, (_, b) in self._level_bytes(lv.sim).items()))

    def _check_budget(self, i: int, freeing: int) -> None:
        if self.memory_budget is None or i in self._warm:
            return
        est = self.estimate_level_bytes(i)
        now = self._owned_total()
        if now - freeing + est["total"] > self.memory_budget:
            cur = getattr(self, "_active", None)
            where = f"the simulator stays at level {cur.index}" if cur is not None else "nothing was built"
            raise MemoryBudgetError(
                f"level {i} ({sum(self.levels.vertex_counts(i))} vertices) needs {est['total']:,} bytes "
                f"(state {est['state']:,}, constraints {est['constraints']:,}, collision {est['collision']:,}, "
                f"scratch {est['scratch']:,}); {now:,} bytes are in use of which {freeing:,} would be freed, and "
                f"the memory budget is {self.memory_budget:,} bytes; nothing was allocated, {where}. Raise "
                "memory_budget, release kept levels (release_level) or choose a coarser level")

    def _activate(self, i: int) -> _Level:
        cloths = self.levels.cloths(i)
        snap = self._snapshots.get(i)
        model = snap.restore(self.device) if snap is not None else None
        sim = Simulator(cloths, device=self.device, model=model, **{**self._sim_kwargs, **self._level_settings.get(i, {})})
        try:
            if snap is None:
                self._snapshots[i] = ModelSnapshot(sim.model)
            for g, c in enumerate(cloths):
                f = self._fabrics.get(g, c.fabric)
                lf = self._level_fabric(i, f)
                if g in self._fabrics or lf is not f:
                    sim.set_fabric(lf, g)
            for slot in self._colliders:
                sim.add_collider(slot.collider(i))
            self._restore_capacities(i, sim)
        except BaseException:
            sim.release()
            raise
        return _Level(i, sim)

    def _place(self, sim: Simulator, x: np.ndarray, v: np.ndarray, level: int) -> None:
        """Positions/velocities into ``sim``; its pins where ``x`` puts them; its colliders at rest in their pose."""
        sim.set_positions(x)
        sim.set_velocities(v)
        wp.copy(sim.state.v_last, sim.state.v)
        idx = sim.model.host_pin_indices
        if len(idx):
            t = np.asarray(x, dtype=np.float32)[idx]
            sim.state.pin_start.assign(t)
            sim.state.pin_end.assign(t)
        for buf, slot in zip(sim.solver.colliders, self._colliders):
            p = slot.at(level)[0].astype(np.float32)
            buf.start.assign(p)
            buf.end.assign(p)
            buf.points.assign(p)
            buf.velocities.zero_()
            buf.mesh.refit()

    def _start_capacities(self, i: int) -> dict:
        """Contact list capacities level ``i`` starts with: those it grew to before; on its first activation
        those of the nearest coarser level that has run, where there is one. A finer cloth triangle or edge
        has fewer collider features within the (fixed) query radius, so the coarser level's collider lists
        are long enough (the 20 mm T-shirt's relaxation after the switch overflowed its default triangle lists,
        4 -> 8, where 40 mm had grown to 16, and was run twice). Self-contact lists go the other way (more cloth
        within the radius per finer vertex): twice the coarser level's per level finer (the 5 mm T-shirt's
        relaxation overflowed its edge-edge lists, 16 -> 32, and was run twice: 21 s of a 45 s switch on the
        2-core CPU)."""
        if i in self._capacities:
            return self._capacities[i]
        coarser = [j for j in self._capacities if j < i]
        if not coarser:
            return {}
        j = max(coarser)
        caps = dict(self._capacities[j])
        if "self" in caps:
            caps["self"] = tuple(int(c) << (i - j) for c in caps["self"])
        return caps

    def _restore_capacities(self, i: int, sim: Simulator) -> None:
        """Contact lists start at :meth:`_start_capacities` (so re-activating a level allocates the same bytes
        every time, and its steps do not regrow them)."""
        caps = self._start_capacities(i)
        if not caps:
            return
        cc = sim.solver.collider_contacts
        if cc is not None and "collider" in caps and caps["collider"] != (cc.edge_capacity, cc.triangle_capacity):
            cc.edge_capacity, cc.triangle_capacity = caps["collider"]
            cc._allocate_lists()
        sc = sim.solver.self_contacts
        if sc is not None and "self" in caps:
            det = sc.detector
            if caps["self"] != (det.vt_capacity, det.tv_capacity, det.ee_capacity):
                det.vt_capacity, det.tv_capacity, det.ee_capacity = caps["self"]
                det._allocate_lists()

    def _record_capacities(self, lv: _Level) -> None:
        caps = {}
        cc = lv.sim.solver.collider_contacts
        if cc is not None:
            caps["collider"] = (cc.edge_capacity, cc.triangle_capacity)
        sc = lv.sim.solver.self_contacts
        if sc is not None:
            det = sc.detector
            caps["self"] = (det.vt_capacity, det.tv_capacity, det.ee_capacity)
        self._capacities[lv.index] = caps

    def _close_seams(self, i: int, x: np.ndarray, v: np.ndarray) -> None:
        """Each sewn pair of level ``i`` to the mean of its two mapped positions/velocities, in place: T maps
        each panel on its own, so along a curved outline a seam closed at the old level can open by the
        interpolation error; the springs would snap it shut in the first step."""
        cl = self.levels.cloths(i)
        off = np.concatenate([[0], np.cumsum([c.vertex_count for c in cl])])
        for c, o in zip(cl, off):
            if len(c.seams):
                a, b = c.seams[:, 0] + o, c.seams[:, 1] + o
                for arr in (x, v):
                    mid = 0.5 * (arr[a] + arr[b])
                    arr[a] = mid
                    arr[b] = mid

    def _drop(self, lv: _Level) -> None:
        if lv.sim.model is not None:
            self._record_capacities(lv)
        for t in lv.tokens:
            t.invalidate()
        lv.tokens.clear()
        lv.sim.release()


__all__ = ["MultiResSimulator", "MemoryBudgetError", "SwitchReport"]

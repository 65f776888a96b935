"""Run a scene headless and write its results (what ``clothsim simulate SCENE.toml`` does).

Files written to the output folder (each atomically, by clothsim.io / clothsim.exchange):

* ``{garment}.obj`` / ``{garment}.glb`` / ``{garment}.usda``: the draped garment (last frame; the
  GLB with the avatar as a second node; the USD animated, one time sample per cached frame, with the
  avatar), for the formats the scene's ``[output] formats`` lists;
* ``cache/``: the frame cache (:class:`clothsim.exchange.FrameCache`, positions quantised to 0.05 mm)
  of every ``cache_every``-th frame, with the triangles, garment offsets, the scene file's text and
  the settings as its metadata; ``frames.npz``: the same frames as float32 (what ``clothsim render``
  reads): ``positions`` (F, N, 3), ``frame`` (F,), ``triangles``, ``garment_offsets``, ``scene_toml``;
* ``report.json``: the checks (worst penetration, largest seam gap, kinetic energy, residual,
  intersections, settled or not and why), timings, counts, versions.
"""

from __future__ import annotations

import dataclasses
import platform
import time
from pathlib import Path

import numpy as np

from ..errors import InputError, SimulationError
from .schema import Scene


def with_overrides(scene: Scene, *, frames: int | None = None, device: str | None = None,
                   substeps: int | None = None, iterations: int | None = None) -> Scene:
    """A copy of ``scene`` with simulation settings replaced (None keeps the scene's)."""
    sim = scene.simulation
    changes = {}
    if frames is not None:
        changes["frame_cap"] = int(frames)
        changes["min_frames"] = min(sim.min_frames, int(frames))
    if device is not None:
        changes["device"] = device
    if substeps is not None:
        changes["substeps"] = int(substeps)
    if iterations is not None:
        changes["iterations"] = int(iterations)
    if sim.levels and ("substeps" in changes or "iterations" in changes):  # beats [simulation.levels] too
        changes["levels"] = {lv: {k: v for k, v in e.items() if k not in changes} for lv, e in sim.levels.items()}
    return scene.replace(simulation=dataclasses.replace(sim, **changes)) if changes else scene


def run_scene(scene: Scene, out: str | Path | None = None, *, level=None, progress: bool = True) -> tuple:
    """Drape ``scene`` and write its results to ``out`` (default: the scene's ``[output] folder``).

    Returns ``(result, files)``: the :class:`~clothsim.scene.drape.DrapeResult` and the written paths.
    A drape that fails its checks still writes everything (the report says what failed); a simulation
    that becomes non-finite writes nothing and raises :class:`clothsim.SimulationError`.
    """
    from ..io import ensure_output_dir, write_json, write_npz
    from .drape import Drape

    out = Path(out) if out is not None else scene.output.folder
    try:
        out = ensure_output_dir(out)
    except OSError as e:
        raise InputError(str(e)) from None
    every = scene.output.cache_every
    frames: list[np.ndarray] = []
    avatar_frames: list[np.ndarray] = []
    frame_ids: list[int] = []

    with Drape(scene, level=level) as drape:
        def keep(st, d):
            if st.frame % every == 0:
                frames.append(d.positions())
                avatar_frames.append(np.asarray(d.body.current_vertices, dtype=np.float32))
                frame_ids.append(st.frame)

        frames.append(drape.positions())
        avatar_frames.append(np.asarray(drape.body.current_vertices, dtype=np.float32))
        frame_ids.append(0)
        result = drape.run(progress=progress, on_frame=keep)
        x = drape.positions()
        if frame_ids[-1] != drape.frame:  # the last frame is always kept
            frames.append(x)
            avatar_frames.append(np.asarray(drape.body.current_vertices, dtype=np.float32))
            frame_ids.append(drape.frame)
        if not np.isfinite(x).all():
            raise SimulationError(f"{scene.path}: positions became non-finite; nothing was written")
        offsets = drape.offsets
        garments = drape.garments
        body_t = drape.body.triangles
        tris = [g.cloth.triangles for g in garments]

    t0 = time.perf_counter()
    stack = np.stack(frames).astype(np.float32)
    av_stack = np.stack(avatar_frames).astype(np.float32)
    if np.array_equal(av_stack.min(axis=0), av_stack.max(axis=0)):
        av_stack = av_stack[:1]  # a body that never moved is written once (static in the USD)
    files: dict[str, str] = {}
    fps = 1.0 / scene.simulation.dt
    from ..exchange.export import export_glb, export_obj
    from ..exchange.usd import export_usd

    for i, g in enumerate(garments):
        sl = slice(int(offsets[i]), int(offsets[i + 1]))
        fname = _safe(g.name)
        if "obj" in scene.output.formats:
            files[f"{g.name}.obj"] = str(export_obj(out / f"{fname}.obj", x[sl], tris[i], uv=g.uv, name=fname))
        if "glb" in scene.output.formats:
            files[f"{g.name}.glb"] = str(export_glb(out / f"{fname}.glb", x[sl], tris[i], uv=g.uv, name=fname,
                                                    avatar=(av_stack[-1], body_t)))
        if "usd" in scene.output.formats:
            files[f"{g.name}.usda"] = str(export_usd(out / f"{fname}.usda", stack[:, sl], tris[i], fps=fps / every,
                                                     uv=g.uv, name=_usd_name(fname), avatar=(av_stack, body_t)))
    all_tris = np.concatenate([t + offsets[i] for i, t in enumerate(tris)]).astype(np.int32)
    scene_text = scene.path.read_text(encoding="utf-8")
    # the frame cache (compact, crash-safe; clothsim.exchange.FrameCache), keyed by the scene and settings
    from ..exchange.framecache import FrameCache

    meta = {"scene_file": str(scene.path), "scene_toml": scene_text, "level": str(level),
            "settings": {k: v for k, v in dataclasses.asdict(scene.simulation).items() if k != "checks"},
            "frames": frame_ids, "garment_offsets": [int(o) for o in offsets],
            "garments": [g.name for g in garments]}
    topo = {"triangles": all_tris, "garment_offsets": np.asarray(offsets, dtype=np.int64),
            "vertex_count": int(offsets[-1])}
    with FrameCache(out / "cache", "w", topology=topo, metadata=meta, fps=fps / every) as cache:
        for f in stack:
            cache.append(f)
    files["cache"] = str(out / "cache")
    # the same frames as one npz (float32, exact), which `clothsim render` reads
    cache_path = out / "frames.npz"
    write_npz(cache_path, positions=stack, frame=np.asarray(frame_ids, dtype=np.int32), triangles=all_tris,
              garment_offsets=np.asarray(offsets, dtype=np.int64), dt=np.float64(scene.simulation.dt),
              scene_toml=np.asarray(scene_text))
    files["frames"] = str(cache_path)
    export_s = time.perf_counter() - t0

    report = report_dict(scene, result)
    report["timings_s"]["export"] = export_s
    report["files"] = {k: Path(v).name for k, v in files.items()}
    write_json(out / "report.json", report)
    files["report"] = str(out / "report.json")
    return result, files


def report_dict(scene: Scene, result) -> dict:
    import warp as wp

    from .. import __version__

    d = result.to_dict()
    hist = d.pop("history")
    d["scene_file"] = str(scene.path)
    d["settings"] = {k: v for k, v in dataclasses.asdict(scene.simulation).items() if k != "checks"}
    d["history"] = {k: [h[k] for h in hist] for k in ("frame", "kinetic_energy", "residual", "seam_gap", "seconds")}
    d["versions"] = {"clothsim": __version__, "warp": wp.config.version, "numpy": np.__version__,
                     "python": platform.python_version()}
    return d


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "garment"


def _usd_name(name: str) -> str:
    s = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return s if s and not s[0].isdigit() else f"G_{s}"

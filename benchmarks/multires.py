"""Multi-resolution benchmark: memory over level switches, coarse-to-fine draping, coarse correction.

Three parts (``--parts``, default all), one JSON + one markdown table under benchmarks/results/:

memory      a square cloth at n×n, (n/2)², (n/4)² vertices (``--grid n``) dropped on a sphere above a ground;
            ``--memory-settle`` frames of draping (half at each of the two finest levels), then
            ``--switches`` alternating switches between those two levels with one frame after each;
            after every switch: bytes by the owners' accounting, the independent figures (live owning
            wp.arrays found by the garbage collector; on CUDA Warp's mempool "used" figure and the driver's
            free memory). Reports start (after the first frame), peak, end and the growth from switch 2 to
            the last, for each figure.
settle      a shipped scene's garment (``--scene``) on its avatar at the pattern levels ``--levels`` (edge
            lengths [m], coarse to fine): fine-only (start and settle at the finest) versus coarse-to-fine
            (settle at the coarsest, switch, ``--refine-relax`` quasi-static steps from rest toward the
            finer level's own rest state, settle, ... to the finest). Settled = the scene's thresholds
            (kinetic energy, residual) held for its settle_frames frames (after min_frames at the start
            level). Quality at the end: residual, worst penetration of the body, largest seam gap, checked
            against the scene's thresholds. Time = simulation + switches (not the measuring).
correction  at the finest level from the placed garment, frames and time until the residual stays below
            ``--target-residual`` for the scene's settle_frames frames, with and without a coarse correction
            from the next coarser level (:class:`clothsim.multires.CoarseCorrection`, ``--every``,
            ``--coarse-frames``).

The same comparison through the user-facing path (clothsim.scene.Drape with refine_from: the scene's own
checks incl. intersections, coarse levels at half the substeps handing over at 4x the thresholds) is
``benchmarks/drape.py --refine-from 0 --compare``; ``--coarse-substeps 5 --coarse-slack 4 --refine-relax 0
--policy scene`` here reproduces those settings.

Settle times are wall and process CPU time (the machine may be shared; a Warp CPU run is one thread);
``--repeats`` alternates the two modes in one process and reports medians. ``--proxy-cell`` lets the levels
before the finest collide with a vertex-clustered proxy of the body (both modes get the same set-up).
correction modes: without, plain (:class:`clothsim.multires.CoarseCorrection`), fas
(:class:`clothsim.multires.FASCorrection`, ``--fas-*``).

    python benchmarks/multires.py --device cpu --tag cpu_2core
    python benchmarks/multires.py --parts settle --levels 0.08 0.04 --policy kinetic --proxy-cell 0.03 --repeats 3
    python benchmarks/multires.py --device cuda:0 --parts memory --grid 1024 --switches 100 --memory-settle 30 \
        --max-seconds 200 --json benchmarks/results/multires_h200_memory1024.json
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

G = 9.81


# ---------------------------------------------------------------------------------------------- memory
def memory_part(device: str, n: int, switches: int, settle_frames: int, max_seconds: float | None = None) -> dict:
    import clothsim as cs
    from clothsim.multires import LevelSet, MultiResSimulator, independent_figures

    res = [(max(n // 4, 3),) * 2, (max(n // 2, 4),) * 2, (n, n)]
    lv = LevelSet.grid(size=(1.0, 1.0), resolutions=res, plane="xz", center=(0.0, 0.5, 0.0), pin=None)
    base = independent_figures(device)
    t0 = time.perf_counter()
    sim = MultiResSimulator(lv, level=2, device=device, ground=0.0)
    sim.add_collider(cs.Collider.sphere(center=(0.0, 0.25, 0.0), radius=0.2))
    sim.step(1)
    build_s = time.perf_counter() - t0
    # drape first (contact lists grow while the cloth wraps the sphere, switching or not; the lists a level
    # grew to are kept for its next activation), then switch between the draped levels
    for k in range(settle_frames):
        sim.step(1)
        if k == settle_frames // 2:
            sim.set_level(1)
    sim.set_level(2)

    def sample(k, seconds):
        ind = independent_figures(device)
        rep = sim.memory_report()
        row = {"switch": k, "level": sim.level, "owners": rep["total"], "categories": rep["categories"],
               "gc_live_arrays": ind["live_warp_arrays"] - base["live_warp_arrays"], "switch_s": seconds}
        if "mempool_used" in ind:
            row["mempool_used"] = None if ind["mempool_used"] is None else ind["mempool_used"] - (base["mempool_used"] or 0)
            row["device_used"] = base["device_free"] - ind["device_free"]
        return row

    rows = [sample(0, build_s)]
    t_switch0 = time.perf_counter()
    for k in range(1, switches + 1):
        if max_seconds is not None and k % 2 == 1 and time.perf_counter() - t0 > max_seconds:
            print(f"  stopped after {k - 1} switches: {time.perf_counter() - t0:.0f} s > --max-seconds {max_seconds:g}",
                  flush=True)
            break
        t = time.perf_counter()
        sim.set_level(1 if sim.level == 2 else 2)
        sim.step(1)
        rows.append(sample(k, time.perf_counter() - t))
        if k % 10 == 0:
            print(f"  switch {k}: owners {rows[-1]['owners']:,} B, gc {rows[-1]['gc_live_arrays']:,} B", flush=True)
    switches_done = len(rows) - 1
    switching_s = time.perf_counter() - t_switch0
    cats = sim.memory_report()["categories"]
    sim.release()
    after = independent_figures(device)
    figures = {}
    for key in ("owners", "gc_live_arrays", "mempool_used", "device_used"):
        vals = [r.get(key) for r in rows if r.get(key) is not None]
        if not vals:
            continue
        same_level = [r[key] for r in rows[2:] if r.get(key) is not None and r["level"] == rows[-1]["level"]]
        figures[key] = {"start": vals[0], "peak": max(vals), "end": vals[-1],
                        "after_switch_2": rows[2][key] if len(rows) > 2 else None,
                        "growth_2_to_end": (vals[-1] - rows[2][key]) if len(rows) > 2 and len(rows) % 2 == 1 else
                        (vals[-1] - rows[3][key] if len(rows) > 3 else None),
                        "spread_same_level": (max(same_level) - min(same_level)) if same_level else None}
    released = {"gc_live_arrays": after["live_warp_arrays"] - base["live_warp_arrays"]}
    if "mempool_used" in after and after["mempool_used"] is not None:
        released["mempool_used"] = after["mempool_used"] - (base["mempool_used"] or 0)
        released["device_used"] = base["device_free"] - after["device_free"]
    return {"grid": res, "vertices": [r[0] * r[1] for r in res], "switches": switches_done,
            "switches_requested": switches, "switching_s": switching_s, "build_s": build_s,
            "settle_frames_before": settle_frames,
            "categories_at_end": cats, "figures": figures, "after_release": released,
            "switch_s_median": float(np.median([r["switch_s"] for r in rows[1:]])) if switches else None, "rows": rows}


# ---------------------------------------------------------------------------------------------- drape scenes
def _scene_levels(scene_name: str, edge_lengths):
    import clothsim as cs
    from clothsim.garments import load_pattern
    from clothsim.multires import LevelSet
    from clothsim.scene import sources

    scene = cs.load_scene(ROOT / "scenes" / f"{scene_name}.toml")
    body = sources.build_body(scene)
    g = scene.garments[0]
    h = load_pattern(g.pattern).hierarchy(tuple(edge_lengths))
    off = np.asarray(g.offset)

    def build(i):
        cloth = h.level(i).to_cloth(g.fabric, pin=True, name=g.name)
        cloth.vertices = cloth.vertices + off
        if len(cloth.pins):
            cloth.pin_targets = cloth.pin_targets + off
        return [cloth]

    lv = LevelSet(build, lambda s, d, gi: h.mapping(s, d), len(edge_lengths), edge_lengths, name=scene.name)
    s = scene.simulation
    kw = dict(dt=s.dt, substeps=s.substeps, iterations=s.iterations, ground=s.ground, self_collision=s.self_collision,
              contact_stiffness=s.contact_stiffness, contact_damping=s.contact_damping, drag=s.drag,
              air_damping=s.air_damping)
    return scene, body, lv, h, kw


class _Watch:
    """Per-frame kinetic energy [J/kg], residual (RMS |Δv|/(g·dt) over free vertices) and seam gap [m]."""

    def __init__(self, sim):
        self.reset(sim)

    def reset(self, sim):
        m = sim.simulator.model
        self.mass = m.host_mass.astype(np.float64)
        self.free = ~m.host_pinned
        self.seams = [c.seams for c in sim.levels.cloths(sim.level)]
        self.v_prev = sim.velocities().astype(np.float64)
        self.hist = []

    def frame(self, sim):
        x = sim.positions().astype(np.float64)
        v = sim.velocities().astype(np.float64)
        ke = float(0.5 * np.sum(self.mass * np.einsum("ij,ij->i", v, v)) / self.mass.sum())
        dv = np.linalg.norm(v - self.v_prev, axis=1)[self.free]
        res = float(np.sqrt(np.mean((dv / (G * sim.dt)) ** 2))) if dv.size else 0.0
        self.v_prev = v
        gap = max((float(np.linalg.norm(x[s[:, 0]] - x[s[:, 1]], axis=1).max()) for s in self.seams if len(s)), default=0.0)
        self.hist.append((ke, res, gap))
        return ke, res, gap


def _kinetic_damping(sim, w) -> None:
    """Dynamic relaxation's kinetic damping: when the kinetic energy has passed a peak (it fell since the
    last frame), set every velocity to zero; the state then descends the potential again from rest."""
    if len(w.hist) >= 2 and w.hist[-1][0] < w.hist[-2][0]:
        sim.set_velocities(np.zeros((sim.particle_count, 3), np.float32))
        sim.simulator.state.v_last.zero_()
        w.v_prev[:] = 0.0
        w.hist[-1] = (0.0,) + tuple(w.hist[-1][1:])


def _settle(sim, checks, step, *, min_frames: int, cap: int, policy: str = "scene") -> dict:
    """Step (``step()`` = one frame) until the scene's settle test holds or ``cap`` frames. ``policy``:
    "scene" (the scene's damping only) or "kinetic" (plus kinetic damping, :func:`_kinetic_damping`)."""
    w = _Watch(sim)
    sim_s, cpu_s, frames = 0.0, 0.0, 0
    settled = False
    while frames < cap:
        t, c = time.perf_counter(), time.process_time()
        step()
        sim_s += time.perf_counter() - t
        cpu_s += time.process_time() - c
        frames += 1
        w.frame(sim)
        if policy == "kinetic":
            t, c = time.perf_counter(), time.process_time()
            _kinetic_damping(sim, w)
            sim_s += time.perf_counter() - t
            cpu_s += time.process_time() - c
        last = w.hist[-checks.settle_frames:]
        if frames >= min_frames and len(last) == checks.settle_frames and all(
                ke <= checks.kinetic_energy and r <= checks.residual for ke, r, _ in last):
            settled = True
            break
    ke, res, gap = w.hist[-1]
    return {"level": sim.level, "vertices": sim.particle_count, "frames": frames, "settled": settled, "sim_s": sim_s,
            "cpu_s": cpu_s,
            "kinetic_energy": ke, "residual": res, "seam_gap_m": gap}


def _quality(sim, body, checks) -> dict:
    from clothsim.collision.intersections import penetration_depths

    x = sim.positions()
    depth = penetration_depths(x, body.current_vertices, body.triangles, device="cpu")
    gap = max((float(np.linalg.norm(x[c.seams[:, 0]] - x[c.seams[:, 1]], axis=1).max())
               for c in sim.levels.cloths(sim.level) if len(c.seams)), default=0.0)
    pen = float(depth.max()) if depth.size else 0.0
    return {"worst_penetration_m": pen, "largest_seam_gap_m": gap,
            "within_thresholds": bool(pen <= checks.penetration and gap <= checks.seam_gap)}


def _quasi_static(sim, steps: int, iterations: int, dt: float) -> None:
    """``steps`` implicit steps of length ``dt`` from rest (velocities zeroed before each): a proximal descent
    of the potential energy toward the new level's own rest state (clothsim.multires.transfer.relax)."""
    from clothsim.multires.transfer import relax

    for _ in range(steps):
        relax(sim.simulator, substeps=1, iterations=iterations, dt=dt)
        sim.simulator.state.v.zero_()
        sim.simulator.state.v_last.zero_()


def settle_part(device: str, scene_name: str, edge_lengths, cap: int, policy: str = "scene",
                refine_relax=(30, 20, 0.05), slack: float = 1.0, coarse_substeps: int | None = None,
                fas: dict | None = None, prolongation: str = "linear", repeats: int = 1,
                proxy_cell: float | None = None) -> dict:
    from clothsim.colliders import Collider
    from clothsim.multires import MultiResSimulator

    scene, body, lv, h, kw = _scene_levels(scene_name, edge_lengths)
    checks = scene.simulation.checks
    min_frames = scene.simulation.min_frames
    fine = lv.count - 1
    import dataclasses

    loose = dataclasses.replace(checks, kinetic_energy=slack * checks.kinetic_energy, residual=slack * checks.residual)
    out = {"scene": scene.name, "edge_lengths_m": list(edge_lengths), "policy": policy, "coarse_slack": slack,
           "fas_after_switch": fas, "prolongation": prolongation, "repeats": repeats, "proxy_cell_m": proxy_cell,
           "simulation": {k: v for k, v in kw.items()},
           "coarse_substeps": coarse_substeps or kw["substeps"],
           "refine_relax": {"steps": refine_relax[0], "iterations": refine_relax[1], "dt": refine_relax[2]}, "thresholds": {
        "kinetic_energy": checks.kinetic_energy, "residual": checks.residual, "seam_gap": checks.seam_gap,
        "penetration": checks.penetration, "settle_frames": checks.settle_frames, "min_frames": min_frames}}
    from clothsim.multires.fas import FASCorrection

    runs = {"fine_only": [], "coarse_to_fine": []}
    for rep_i in range(repeats):
        for mode in ("fine_only", "coarse_to_fine"):  # back to back in one process, alternating
            t0 = time.perf_counter()
            over = {i: {"substeps": coarse_substeps} for i in range(fine)} if coarse_substeps else None
            sim = MultiResSimulator(lv, level=fine if mode == "fine_only" else 0, device=device, level_settings=over,
                                    prolongation=prolongation, **kw)
            # the same collider set-up in both modes: the levels before the finest see the body's proxy
            sim.add_collider(Collider.mesh(body.collider_vertices, body.triangles, name="avatar"),
                             proxy_cells={i: proxy_cell for i in range(fine)} if proxy_cell else None)
            setup_s = time.perf_counter() - t0
            stages, switch_s, switch_cpu = [], 0.0, 0.0
            stages.append(_settle(sim, checks if sim.level == fine else loose, sim.step, min_frames=min_frames,
                                  cap=cap, policy=policy))
            print(f"  {mode} [{rep_i}]: {stages[-1]}", flush=True)
            while sim.level < fine:
                t, c = time.perf_counter(), time.process_time()
                rep = sim.set_level(sim.level + 1)
                if refine_relax[0]:
                    _quasi_static(sim, *refine_relax)
                corr = FASCorrection(sim, sim.level - 1, **fas) if fas else None
                switch_s += time.perf_counter() - t
                switch_cpu += time.process_time() - c
                stages[-1]["switch_max_displacement_m"] = rep.max_displacement_m
                stages.append(_settle(sim, checks if sim.level == fine else loose, corr.step if corr else sim.step,
                                      min_frames=checks.settle_frames, cap=cap, policy=policy))
                if corr:
                    stages[-1]["fas_corrections"] = corr.corrections
                    stages[-1]["fas_coarse_s"] = corr.coarse_seconds
                    corr.release()
                print(f"  {mode} [{rep_i}]: {stages[-1]}", flush=True)
            q = _quality(sim, body, checks)
            last = stages[-1]
            total = sum(s["sim_s"] for s in stages) + switch_s
            total_cpu = sum(s["cpu_s"] for s in stages) + switch_cpu
            runs[mode].append({"stages": stages, "switch_s": switch_s, "total_s": total, "setup_s": setup_s,
                               "switch_cpu_s": switch_cpu, "total_cpu_s": total_cpu,
                               "settled": all(s["settled"] for s in stages), "final_residual": last["residual"],
                               "final_kinetic_energy": last["kinetic_energy"], **q,
                               "equal_quality": bool(all(s["settled"] for s in stages) and q["within_thresholds"])})
            sim.release()
    for mode, rs in runs.items():
        med = sorted(rs, key=lambda r: r["total_s"])[len(rs) // 2]  # the median run (upper median)
        out[mode] = dict(med, runs=[{k: r[k] for k in ("total_s", "total_cpu_s", "settled", "equal_quality")} |
                                    {"frames": [s["frames"] for s in r["stages"]]} for r in rs])
    out["speedups"] = [a["total_s"] / b["total_s"] for a, b in zip(runs["fine_only"], runs["coarse_to_fine"])]
    out["speedups_cpu"] = [a["total_cpu_s"] / b["total_cpu_s"] for a, b in zip(runs["fine_only"], runs["coarse_to_fine"])]
    out["speedup"] = float(np.median(out["speedups"]))
    out["speedup_cpu"] = float(np.median(out["speedups_cpu"]))
    return out


def correction_part(device: str, scene_name: str, edge_lengths, cap: int, target: float, every: int,
                    coarse_frames: int, stop: float, modes=("without", "plain", "fas"), policy: str = "scene",
                    fas_velocities: str = "keep", start_frames: int = 0, fas_tau: str = "frame",
                    fas_post_relax: int = 0) -> dict:
    """At the finest level: frames and time until the residual stays below ``target`` for the scene's
    settle_frames frames, without a coarse correction, with the plain one (coarse level's own forces) and
    with FAS (τ-corrected). ``start_frames``: fine frames run first, shared by all modes (a common start
    state, not counted)."""
    from clothsim.colliders import Collider
    from clothsim.multires import CoarseCorrection, MultiResSimulator
    from clothsim.multires.fas import FASCorrection

    scene, body, lv, h, kw = _scene_levels(scene_name, edge_lengths)
    checks = scene.simulation.checks
    fine = lv.count - 1
    out = {"scene": scene.name, "edge_lengths_m": list(edge_lengths), "target_residual": target, "policy": policy,
           "every": every, "coarse_frames": coarse_frames, "stop_residual": stop, "coarse_level": fine - 1,
           "fas_velocities": fas_velocities, "fas_tau": fas_tau, "fas_post_relax": fas_post_relax,
           "start_frames": start_frames, "modes": list(modes)}
    start = None
    for mode in modes:
        sim = MultiResSimulator(lv, level=fine, device=device, **kw)
        sim.add_collider(Collider.mesh(body.collider_vertices, body.triangles, name="avatar"))
        if start_frames:
            if start is None:
                sim.step(start_frames)
                start = (sim.positions(), sim.velocities())
            sim.set_positions(start[0])
            sim.set_velocities(start[1])
        corr = None
        if mode == "plain":
            corr = CoarseCorrection(sim, fine - 1, every=every, coarse_frames=coarse_frames, stop_residual=stop)
        elif mode == "fas":
            corr = FASCorrection(sim, fine - 1, every=every, coarse_steps=coarse_frames, stop_residual=stop,
                                 velocities=fas_velocities, tau=fas_tau, coarse_kinetic=policy == "kinetic",
                                 post_relax=fas_post_relax)
        step = corr.step if corr else sim.step
        w = _Watch(sim)
        sim_s, frames, reached = 0.0, 0, None
        while frames < cap:
            t = time.perf_counter()
            step()
            sim_s += time.perf_counter() - t
            frames += 1
            ke, res, _ = w.frame(sim)
            if policy == "kinetic":
                t = time.perf_counter()
                _kinetic_damping(sim, w)
                sim_s += time.perf_counter() - t
            last = w.hist[-checks.settle_frames:]
            if len(last) == checks.settle_frames and all(r <= target for _, r, _ in last):
                reached = frames
                break
        q = _quality(sim, body, checks)
        out[mode] = {"frames": frames, "reached_at_frame": reached, "sim_s": sim_s, "final_residual": w.hist[-1][1],
                     "final_kinetic_energy": w.hist[-1][0], "corrections": corr.corrections if corr else 0,
                     "coarse_s": corr.coarse_seconds if corr else 0.0, **q,
                     "residual_history": [r for _, r, _ in w.hist],
                     "fine_iterations_per_frame": kw["substeps"] * kw["iterations"]}
        print(f"  correction {mode}: " + str({k: v for k, v in out[mode].items() if k != "residual_history"}), flush=True)
        if corr:
            corr.release()
        sim.release()
    return out


# ---------------------------------------------------------------------------------------------- report
def markdown(res: dict) -> str:
    lines = [f"# multires benchmark ({res['device']}, {res['host']})", ""]
    mem = res.get("memory")
    if mem:
        lines += [f"## Memory over {mem['switches']} switches (grid {mem['grid'][2][0]}² ↔ {mem['grid'][1][0]}², "
                  f"sphere collider, one frame after each switch; median switch + frame {mem['switch_s_median']:.3f} s)", "",
                  "| figure | start B | peak B | end B | after switch 2 B | growth 2→end B | after release B |",
                  "|---|---|---|---|---|---|---|"]
        for k, f in mem["figures"].items():
            rel = mem["after_release"].get(k, "")
            lines.append(f"| {k} | {f['start']:,} | {f['peak']:,} | {f['end']:,} | {f['after_switch_2']:,} | "
                         f"{f['growth_2_to_end']:,} | {rel if rel == '' else format(rel, ',')} |")
        lines.append("")
    st = res.get("settle")
    if st:
        lines += [f"## Settling ({st['policy']} damping) {st['scene']} at {', '.join(f'{1e3 * e:g}' for e in st['edge_lengths_m'])} mm "
                  f"(thresholds: KE {st['thresholds']['kinetic_energy']:g} J/kg, residual {st['thresholds']['residual']:g}, "
                  f"seam gap {1e3 * st['thresholds']['seam_gap']:g} mm, penetration {1e3 * st['thresholds']['penetration']:g} mm)", "",
                  "| mode | frames per level (wall / CPU s) | settled | total wall s | total CPU s | residual | KE J/kg | pen. mm | "
                  "seam gap mm | equal quality |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for mode in ("fine_only", "coarse_to_fine"):
            m = st[mode]
            fr = " → ".join(f"{s['frames']} @{s['vertices']}v ({s['sim_s']:.1f} / {s.get('cpu_s', float('nan')):.1f} s)"
                            for s in m["stages"])
            if mode == "coarse_to_fine":
                fr += f" + switches ({m['switch_s']:.1f} / {m.get('switch_cpu_s', float('nan')):.1f} s)"
            lines.append(f"| {mode} | {fr} | {'yes' if m['settled'] else 'no'} | {m['total_s']:.1f} | "
                         f"{m.get('total_cpu_s', float('nan')):.1f} | {m['final_residual']:.3f} | "
                         f"{m['final_kinetic_energy']:.1e} | {1e3 * m['worst_penetration_m']:.2f} | "
                         f"{1e3 * m['largest_seam_gap_m']:.2f} | {'yes' if m['equal_quality'] else 'no'} |")
        rr = st["refine_relax"]
        sp = ", ".join(f"{x:.2f}" for x in st.get("speedups", [st["speedup"]]))
        valid = st["fine_only"].get("equal_quality") and st["coarse_to_fine"].get("equal_quality")
        head = "Speed-up coarse-to-fine vs fine-only" if valid else (
            "NOT a speed-up (a mode did not reach the thresholds within the frame cap; time ratio at the cap)")
        lines += ["", f"{head}: {st['speedup']:.2f}× wall, "
                  f"{st.get('speedup_cpu', float('nan')):.2f}× process CPU time (median of {sp} wall; the table shows "
                  f"the median runs; prolongation {st.get('prolongation', 'linear')}; FAS after each switch: "
                  f"{st.get('fas_after_switch')}; body proxy before the finest level: {st.get('proxy_cell_m')} m; coarser levels settled at "
                  f"{st.get('coarse_slack', 1.0):g}× the thresholds with {st.get('coarse_substeps', '')} substeps; after "
                  f"each switch {rr['steps']} "
                  f"quasi-static steps of {rr['dt']:g} s, {rr['iterations']} iterations, counted in the switch time "
                  f"{st['coarse_to_fine']['switch_s']:.1f} s)", ""]
    co = res.get("correction")
    if co:
        lines += [f"## Hierarchy inside the solve at {1e3 * co['edge_lengths_m'][-1]:g} mm ({co['scene']}, "
                  f"{co.get('policy', 'scene')} damping; target residual {co['target_residual']:g} for the scene's "
                  f"settle frames; a correction every {co['every']} fine frames while the residual > "
                  f"{co['stop_residual']:g}, {co['coarse_frames']} coarse frames each; FAS fine velocities: "
                  f"{co.get('fas_velocities', '')}, τ from {co.get('fas_tau', 'forces')}, post-relaxation "
                  f"{co.get('fas_post_relax', 0)} substeps; common start after {co.get('start_frames', 0)} fine frames)", "",
                  "| mode | frames to target | fine VBD iterations | sim s (incl. coarse) | coarse s | corrections | "
                  "final residual | pen. mm | seam gap mm |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for mode in co.get("modes", ("without", "with", "with_zero_v")):
            m = co[mode]
            reached = m["reached_at_frame"] if m["reached_at_frame"] else f"not in {m['frames']}"
            lines.append(f"| {mode} | {reached} | {m['frames'] * m['fine_iterations_per_frame']:,} | "
                         f"{m['sim_s']:.1f} | {m['coarse_s']:.1f} | {m['corrections']} | {m['final_residual']:.3f} | "
                         f"{1e3 * m['worst_penetration_m']:.2f} | {1e3 * m['largest_seam_gap_m']:.2f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--parts", nargs="*", default=["memory", "settle", "correction"])
    ap.add_argument("--grid", type=int, default=64, help="finest grid resolution n (n×n vertices) for the memory part")
    ap.add_argument("--switches", type=int, default=100)
    ap.add_argument("--memory-settle", type=int, default=40, help="frames draped (half at each level) before switching")
    ap.add_argument("--scene", default="straight_skirt")
    ap.add_argument("--levels", nargs="*", type=float, default=[0.08, 0.04], help="edge lengths [m], coarse to fine")
    ap.add_argument("--cap", type=int, default=300, help="frame cap per settle stage")
    ap.add_argument("--policy", choices=["scene", "kinetic"], default="scene",
                    help="settling: the scene's damping, or plus kinetic damping (both modes alike)")
    ap.add_argument("--refine-relax", type=int, default=30,
                    help="coarse-to-fine: quasi-static steps from rest after each switch (0 = none)")
    ap.add_argument("--refine-iterations", type=int, default=20)
    ap.add_argument("--coarse-substeps", type=int, default=None,
                    help="coarse-to-fine: substeps per frame at the levels before the finest (default: the scene's)")
    ap.add_argument("--coarse-slack", type=float, default=1.0,
                    help="coarse-to-fine: levels before the finest count as settled at this multiple of the scene's "
                         "kinetic energy and residual thresholds (the finest always uses the scene's own)")
    ap.add_argument("--refine-dt", type=float, default=0.05, help="[s] length of each quasi-static step")
    ap.add_argument("--target-residual", type=float, default=0.05)
    ap.add_argument("--every", type=int, default=2)
    ap.add_argument("--coarse-frames", type=int, default=4)
    ap.add_argument("--stop-residual", type=float, default=0.5,
                    help="coarse corrections only while the fine residual is above this (the large-scale phase)")
    ap.add_argument("--repeats", type=int, default=1, help="settle: repeat both modes (alternating); medians")
    ap.add_argument("--proxy-cell", type=float, default=None,
                    help="settle: levels before the finest collide with a vertex-clustering proxy of the body at "
                         "this cell size [m] (clothsim.multires.proxy); the finest always with the full body")
    ap.add_argument("--prolongation", choices=["linear", "curved"], default="linear")
    ap.add_argument("--fas-every", type=int, default=0,
                    help="settle: FAS coarse corrections after each switch every this many fine frames (0 = none)")
    ap.add_argument("--fas-coarse-frames", type=int, default=10)
    ap.add_argument("--fas-tau", choices=["forces", "frame"], default="frame")
    ap.add_argument("--fas-post-relax", type=int, default=0,
                    help="FAS: quasi-static fine substeps after each correction (0 = none)")
    ap.add_argument("--fas-stop", type=float, default=0.0, help="FAS corrections only while the residual > this")
    ap.add_argument("--correction-modes", nargs="*", default=["without", "plain", "fas"])
    ap.add_argument("--fas-velocities", choices=["keep", "zero", "prolong"], default="keep")
    ap.add_argument("--start-frames", type=int, default=0,
                    help="correction: fine frames run once before the modes start from that common state")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="memory: stop switching (after an even number of switches) once this many seconds have "
                         "passed since the build started; the report says how many were done")
    ap.add_argument("--json", type=Path, default=None,
                    help="write the JSON here (and the markdown next to it, .md) instead of --out/multires_<tag>.json")
    ap.add_argument("--tag", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)

    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    wp.config.quiet = True
    wp.init()
    from clothsim.io import write_json, atomic_write

    res = {"benchmark": "multires", "device": args.device, "host": platform.node(), "python": platform.python_version(),
           "warp": wp.config.version, "argv": sys.argv[1:]}
    if "memory" in args.parts:
        print(f"memory: grid {args.grid}, {args.switches} switches on {args.device}", flush=True)
        res["memory"] = memory_part(args.device, args.grid, args.switches, args.memory_settle, args.max_seconds)
    if "settle" in args.parts:
        print(f"settle: {args.scene} at {args.levels}", flush=True)
        fas = None
        if args.fas_every:
            fas = {"every": args.fas_every, "coarse_steps": args.fas_coarse_frames, "tau": args.fas_tau,
                   "velocities": args.fas_velocities, "coarse_kinetic": args.policy == "kinetic",
                   "stop_residual": args.fas_stop}
        res["settle"] = settle_part(args.device, args.scene, args.levels, args.cap, args.policy,
                                    (args.refine_relax, args.refine_iterations, args.refine_dt), args.coarse_slack,
                                    args.coarse_substeps, fas, args.prolongation, args.repeats, args.proxy_cell)
    if "correction" in args.parts:
        print(f"correction: {args.scene} at {args.levels}", flush=True)
        res["correction"] = correction_part(args.device, args.scene, args.levels, args.cap, args.target_residual,
                                            args.every, args.coarse_frames, args.stop_residual,
                                            tuple(args.correction_modes), args.policy, args.fas_velocities,
                                            args.start_frames, args.fas_tau, args.fas_post_relax)
    tag = args.tag or args.device.replace(":", "")
    jpath = args.json or args.out / f"multires_{tag}.json"
    jpath.parent.mkdir(parents=True, exist_ok=True)
    write_json(jpath, res)
    md = markdown(res)
    with atomic_write(jpath.with_suffix(".md"), "w") as f:
        f.write(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

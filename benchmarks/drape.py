"""Drape benchmark: every shipped garment (scenes/*.toml) at every resolution level.

For each scene and level: vertex count, frames and wall time to settle (or the frame cap), time per
frame, worst penetration [mm], largest seam gap [mm], intersections, and whether the scene's checks
passed. Prints a table and writes JSON (and the table as markdown) to benchmarks/results/.

    python benchmarks/drape.py                                   # all scenes, all levels, CPU
    python benchmarks/drape.py --levels 0 --frames 150           # coarsest only (what CI checks)
    python benchmarks/drape.py --device cuda:0 --tag h200        # on a GPU
    python benchmarks/drape.py --levels 1 --max-seconds 900      # stop a case after 900 s of stepping
    python benchmarks/drape.py --device cuda:0 --levels 3 2 1 0 --max-seconds 60 --budget-seconds 500 --tag h200
    python benchmarks/drape.py --levels 1 --level-substeps 10 20 40 80   # substeps doubled per level
    python benchmarks/drape.py --levels 1 2 --refine-from 0 --tag cpu_c2f   # coarse-to-fine from 40 mm
    python benchmarks/drape.py --levels 1 --refine-from 0 --compare      # fine-only and coarse-to-fine, back to back

A case stops when the scene's checks say it has settled, at its frame cap (``--frames``, default the
scene's ``frame_cap``) or after ``--max-seconds`` of wall time; a case that stopped before settling is
reported as not settled ("time cap" or "frame cap"), with its numbers at that point. Levels run in
the order given, each over every scene; once ``--budget-seconds`` of wall time have passed no new case
starts (the rest are listed as not run). The JSON and markdown are rewritten after every case, so an
interrupted run keeps what it measured. A scene on the MakeHuman body needs the body in the cache
(``clothsim avatar fetch``; ``CLOTHSIM_CACHE`` moves the cache): without it that row records the error.

Levels are the pattern hierarchy's edge lengths: 0 = 40 mm, 1 = 20 mm, 2 = 10 mm, 3 = 5 mm.

``--refine-from R`` drapes coarse-to-fine (``clothsim.scene.Drape(scene, level=L, refine_from=R)``): sewn and
settled at level R, then each finer level up to L settles in turn (the frame cap applies to each level); the
row gives frames, stepping time and the switch time per level, and the checks at level L. ``--compare`` runs
each case fine-only first, then coarse-to-fine, one after the other in the same process (rows ``mode``
"fine" and "c2f"); ``--max-seconds`` caps each of them.
Before the timed runs, ``--warmup`` (on by default) drapes the first scene for 2 frames a level, fine-only and
coarse-to-fine, so that Warp's compiling and loading of kernel modules (on first use in a process) stays out of
the timings; without it the first scene includes them (session 14 and earlier ran without it). ``--sweep``,
``--final-sweep`` and ``--chebyshev-rho`` / ``--chebyshev-delay`` set the solver's sweep and acceleration
(the scene keys ``sweep`` and ``chebyshev_rho`` / ``chebyshev_delay``) for every case.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run_one(path: Path, level: int, device: str, frames: int | None, max_seconds: float | None = None,
            substeps: int | None = None, refine_from: int | None = None,
            contact_stiffness: float | None = None, save_state: Path | None = None, sweep: str | None = None,
            final_sweep: str | None = None, chebyshev: tuple[float, int] | None = None) -> dict:
    import clothsim as cs
    from clothsim.scene import Drape
    from clothsim.scene.run import with_overrides

    if frames == 0:  # build only: vertex counts and setup time of a level too large to step here
        scene = with_overrides(cs.load_scene(path), device=device)
        t0 = time.perf_counter()
        with Drape(scene, level=level) as d:
            setup_s = time.perf_counter() - t0
            g = d.garments[0]
            return {"scene": scene.name, "level": level, "edge_length_mm": 1e3 * g.edge_length if g.edge_length else None,
                    "vertices": int(d.sim.particle_count), "triangles": int(len(d.sim.triangles)), "device": d.device,
                    "frames": 0, "setup_s": setup_s, "built_only": True}
    scene = with_overrides(cs.load_scene(path), device=device, frames=frames, substeps=substeps)
    if contact_stiffness is not None:  # body contact stiffness [N/m] per vertex, instead of the scene's
        scene = scene.replace(simulation=dataclasses.replace(scene.simulation, contact_stiffness=float(contact_stiffness)))
    if sweep is not None:  # every level's sweep (clothsim.Simulator's), instead of the scene's
        scene = scene.replace(simulation=dataclasses.replace(scene.simulation, sweep=sweep))
    if chebyshev is not None:  # Chebyshev acceleration (rho, delay) instead of the scene's
        scene = scene.replace(simulation=dataclasses.replace(scene.simulation, chebyshev_rho=float(chebyshev[0]),
                                                             chebyshev_delay=int(chebyshev[1])))
    if final_sweep is not None:  # the garments' level's sweep, fine-only or the last level of coarse-to-fine
        lv = dict(scene.simulation.levels)
        lv[level] = {**lv.get(level, {}), "sweep": final_sweep}
        scene = scene.replace(simulation=dataclasses.replace(scene.simulation, levels=lv))
    if refine_from is None:  # fine-only, whatever the scene file says
        scene = scene.replace(simulation=dataclasses.replace(scene.simulation, refine_from=None))
    t0, c0 = time.perf_counter(), time.process_time()
    with Drape(scene, level=level, refine_from=refine_from) as d:
        setup_s = time.perf_counter() - t0
        r = d.run(max_seconds=max_seconds)  # until settled (each level), the frame cap or the time cap
        # process CPU time of set-up + stepping + switches (the end checks' wall time taken off)
        cpu_s = time.process_time() - c0 - r.timings_s.get("measure", 0.0)
        if save_state is not None:
            _save_state(save_state, f"{scene.name}_l{level}_{'c2f' if r.levels else 'fine'}", d)
    stop = r.stopped_by
    g = r.garments[0] if len(r.garments) == 1 else None
    steps = [h.seconds for h in r.history]
    return {
        "scene": scene.name, "level": level, "edge_length_mm": None if g is None or g.edge_length_m is None else 1e3 * g.edge_length_m,
        "vertices": sum(x.vertices for x in r.garments), "triangles": sum(x.triangles for x in r.garments),
        "device": r.device, "frames": r.frames, "frame_cap": scene.simulation.frame_cap,
        "settled": r.settled, "settle_frame": r.settle_frame, "stopped_by": stop, "max_seconds": max_seconds,
        # stepping time (+ the switches of a coarse-to-fine drape); a run stops once settled
        "time_to_settle_s": sum(steps) + sum(st["switch_s"] for st in r.levels) if r.settled else None,
        "sim_s": sum(steps) + sum(st["switch_s"] for st in r.levels),
        "ms_per_frame_median": 1e3 * sorted(steps)[len(steps) // 2] if steps else None,
        "setup_s": setup_s, "measure_s": r.timings_s.get("measure"),
        # what a user waits for: set-up (body, garments, the start level's model) + stepping + switches (each
        # switch builds the next level's model, which fine-only does in its set-up), wall and process CPU [s]
        "total_s": setup_s + sum(steps) + sum(st["switch_s"] for st in r.levels), "cpu_s": cpu_s,
        "worst_penetration_mm": 1e3 * r.worst_penetration_m, "largest_seam_gap_mm": 1e3 * r.largest_seam_gap_m,
        "body_intersections": sum(x.body_intersections for x in r.garments),
        "cloth_intersections": r.cloth_intersections, "kinetic_energy_J_per_kg": r.kinetic_energy,
        "residual": r.residual, "passed": r.passed, "failures": r.failures,
        "mode": "c2f" if r.levels else "fine", "refine_from": refine_from if r.levels else None,
        # coarse-to-fine: per level (coarsest first) frames, stepping and switch wall time [s], end state
        "per_level": [{k: st[k] for k in ("level", "edge_length_m", "vertices", "frames", "settled", "settle_frame",
                                          "step_s", "switch_s", "residual", "kinetic_energy", "seam_gap_m",
                                          "switch_max_displacement_m", "switch_intersections", "check_s",
                                          "untangle_counts", "untangle_max_move_m") if k in st}
                      for st in r.levels],
        "switch_s": sum(st["switch_s"] for st in r.levels),
        # per frame (compact): kinetic energy [J/kg], residual [-], largest seam gap [mm], step wall time [s]
        "history": {"kinetic_energy": [float(f"{h.kinetic_energy:.3e}") for h in r.history],
                    "residual": [round(h.residual, 4) for h in r.history],
                    "seam_gap_mm": [round(1e3 * h.seam_gap, 3) for h in r.history],
                    "seconds": [round(h.seconds, 4) for h in r.history]},
        "settings": {"substeps": scene.simulation.substeps, "iterations": scene.simulation.iterations,
                     "dt": scene.simulation.dt, "self_collision": scene.simulation.self_collision,
                     "contact_stiffness": scene.simulation.contact_stiffness,
                     "contact_damping": scene.simulation.contact_damping, "drag": scene.simulation.drag,
                     "air_damping": scene.simulation.air_damping, "checks": dataclasses.asdict(scene.simulation.checks)},
    }


def _save_state(folder: Path, stem: str, d) -> Path:
    """The drape's final state as ``folder/stem.npz``: positions (N, 3) and triangles of every garment
    (final level), seams (S, 2), the body's vertices and triangles, and per triangle the count of the
    cloth triangles it intersects (sewn pairs welded), to find where a failing case fails."""
    import numpy as np

    from clothsim.collision.intersections import self_intersection_counts
    from clothsim.io import write_npz
    from clothsim.scene.seams import weld_seams

    x, tri = d.positions(), d._triangles()
    seams = np.concatenate([g.cloth.seams + d.offsets[i] for i, g in enumerate(d.garments)])
    xw, tw, kept = weld_seams(x, tri, seams, return_kept=True)
    counts = np.zeros(len(tri), np.int32)
    counts[kept] = self_intersection_counts(xw, tw.astype(np.int32), device="cpu")
    folder.mkdir(parents=True, exist_ok=True)
    return write_npz(folder / f"{stem}.npz", positions=x, triangles=tri, seams=seams,
                     body_vertices=d.body.current_vertices, body_triangles=d.body.triangles, intersections=counts)


def table(rows: list[dict]) -> str:
    head = ["scene", "level", "edge mm", "vertices", "frames", "settled", "settle s", "ms/frame",
            "pen. mm", "seam gap mm", "body ∩", "cloth ∩", "passed"]
    c2f = any(r.get("per_level") for r in rows)
    if c2f:
        head.insert(2, "mode")
        head.insert(8, "per level: frames @ mm (step s; switch s; cloth ∩ after the switch if any → left after untangling)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['scene']} | {r['level']} |" + " |" * (len(head) - 3) + f" error: {r['error']} |")
            continue
        if r.get("built_only"):
            lines.append(f"| {r['scene']} | {r['level']} | {r['edge_length_mm']:g} | {r['vertices']} | 0 (built only, "
                         f"setup {r['setup_s']:.1f} s) | | | | | | | | |")
            continue
        cells = [r["scene"], str(r["level"]), f"{r['edge_length_mm']:g}" if r["edge_length_mm"] else "",
                 str(r["vertices"]), str(r["frames"]),
                 f"yes ({r['settle_frame']})" if r["settled"] else f"no ({r.get('stopped_by', 'frame cap')})",
                 f"{r['time_to_settle_s']:.1f}" if r["time_to_settle_s"] is not None else "",
                 f"{r['ms_per_frame_median']:.0f}", f"{r['worst_penetration_mm']:.2f}",
                 f"{r['largest_seam_gap_mm']:.2f}", str(r["body_intersections"]), str(r["cloth_intersections"]),
                 "yes" if r["passed"] else "no"]
        if c2f:
            cells.insert(2, r.get("mode", "fine"))
            cells.insert(8, ", ".join(f"{p['frames']} @{1e3 * p['edge_length_m']:g} ({p['step_s']:.1f}; {p['switch_s']:.1f}"
                                      + (f"; {p['switch_intersections']} ∩" if p.get("switch_intersections", -1) > 0 else "")
                                      + (f" → {p['untangle_counts'][-1]} untangled" if p.get("untangle_counts") else "")
                                      + ")" for p in r.get("per_level") or []))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def speedups(rows: list[dict]) -> list[dict]:
    """--compare: per (scene, level), fine-only vs coarse-to-fine over the repeats (pairs in run order):
    median total wall and CPU time (set-up + stepping + switches), their ratios (fine / c2f), frames and checks."""
    out = []
    keys = sorted({(r["scene"], r["level"]) for r in rows if "mode" in r}, key=lambda k: (k[1], k[0]))
    for key in keys:
        f = [r for r in rows if (r.get("scene"), r.get("level")) == key and r.get("mode") == "fine"]
        c = [r for r in rows if (r.get("scene"), r.get("level")) == key and r.get("mode") == "c2f"]
        n = min(len(f), len(c))
        if not n:
            continue
        med = lambda v: float(sorted(v)[len(v) // 2])  # noqa: E731 - upper median
        out.append({
            "scene": key[0], "level": key[1], "pairs": n,
            "fine_total_s": med([r["total_s"] for r in f]), "c2f_total_s": med([r["total_s"] for r in c]),
            "fine_cpu_s": med([r["cpu_s"] for r in f]), "c2f_cpu_s": med([r["cpu_s"] for r in c]),
            "speedup_wall": med([a["total_s"] / b["total_s"] for a, b in zip(f, c)]),
            "speedup_cpu": med([a["cpu_s"] / b["cpu_s"] for a, b in zip(f, c)]),
            "fine_frames": [r["frames"] for r in f], "c2f_frames": [[p["frames"] for p in r["per_level"]] for r in c],
            "fine_passed": [r["passed"] for r in f], "c2f_passed": [r["passed"] for r in c],
            "equal_quality": all(r["passed"] for r in f + c),
            "fine_worst": {"residual": max(r["residual"] for r in f), "pen_mm": max(r["worst_penetration_mm"] for r in f),
                           "gap_mm": max(r["largest_seam_gap_mm"] for r in f)},
            "c2f_worst": {"residual": max(r["residual"] for r in c), "pen_mm": max(r["worst_penetration_mm"] for r in c),
                          "gap_mm": max(r["largest_seam_gap_mm"] for r in c)}})
    return out


def speedup_table(sp: list[dict]) -> str:
    head = ["scene", "level", "pairs", "fine-only frames", "c2f frames per level", "fine s (CPU s)", "c2f s (CPU s)",
            "speed-up wall", "speed-up CPU", "passed fine / c2f", "worst residual, pen. mm, gap mm: fine; c2f"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sp:
        fw, cw = s["fine_worst"], s["c2f_worst"]
        lines.append("| " + " | ".join([
            s["scene"], str(s["level"]), str(s["pairs"]), ", ".join(map(str, s["fine_frames"])),
            ", ".join("→".join(map(str, x)) for x in s["c2f_frames"]),
            f"{s['fine_total_s']:.1f} ({s['fine_cpu_s']:.1f})", f"{s['c2f_total_s']:.1f} ({s['c2f_cpu_s']:.1f})",
            f"{s['speedup_wall']:.2f}×", f"{s['speedup_cpu']:.2f}×",
            f"{sum(s['fine_passed'])}/{len(s['fine_passed'])} / {sum(s['c2f_passed'])}/{len(s['c2f_passed'])}",
            f"{fw['residual']:.3f}, {fw['pen_mm']:.2f}, {fw['gap_mm']:.2f}; {cw['residual']:.3f}, {cw['pen_mm']:.2f}, "
            f"{cw['gap_mm']:.2f}"]) + " |")
    return "\n".join(lines)


def _write(out: Path, tag: str, result: dict) -> None:
    from clothsim.io import write_json

    if result.get("compare"):
        result["speedups"] = speedups(result["rows"])
    write_json(out / f"drape_{tag}.json", result)
    md = table(result["rows"]) + "\n"
    if result.get("speedups"):
        md += ("\nFine-only vs coarse-to-fine (medians over the pairs; time = set-up + stepping + switches; a speed-up "
               "counts only where both passed every check):\n\n" + speedup_table(result["speedups"]) + "\n")
    if result.get("note"):
        md = f"{result['note']}\n\n" + md
    tmp = out / f".drape_{tag}.md.tmp"
    tmp.write_text(md)
    tmp.replace(out / f"drape_{tag}.md")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenes", nargs="*", default=None, help="scene names (default: every scenes/*.toml)")
    ap.add_argument("--levels", nargs="*", type=int, default=[0, 1, 2, 3], help="levels (0 = 40 mm ... 3 = 5 mm)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--frames", type=int, default=None,
                    help="frame cap (default: each scene's frame_cap); 0: build only (vertex counts, setup time)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="wall-time cap per case [s] (stepping only); a case cut off is reported as not settled")
    ap.add_argument("--budget-seconds", type=float, default=None,
                    help="wall-time budget of the whole run [s]: no case starts after it (listed as not run)")
    ap.add_argument("--level-substeps", nargs="*", type=int, default=None, metavar="N",
                    help="substeps per frame for level 0, 1, 2, 3 (default: each scene's substeps at every level)")
    ap.add_argument("--refine-from", type=int, default=None, metavar="R",
                    help="coarse-to-fine: sew and settle at level R first, then refine level by level (levels <= R "
                         "run fine-only)")
    ap.add_argument("--compare", action="store_true",
                    help="with --refine-from: run each case fine-only, then coarse-to-fine, back to back")
    ap.add_argument("--repeats", type=int, default=1,
                    help="run each case this many times (with --compare: fine-only and coarse-to-fine alternating)")
    ap.add_argument("--contact-stiffness", type=float, default=None, metavar="K",
                    help="body contact stiffness [N/m] per vertex instead of each scene's (e.g. to test the residual "
                         "floor at fine levels: a vertex's contact frequency sqrt(k/m) doubles per level at fixed k)")
    ap.add_argument("--save-state", type=Path, default=None, metavar="DIR",
                    help="write each case's final state to DIR/<scene>_l<level>_<mode>.npz (positions, triangles, seams, "
                         "body, per-triangle cloth intersections)")
    ap.add_argument("--sweep", choices=["gauss-seidel", "jacobi"], default=None,
                    help="every level's sweep (clothsim.Simulator(sweep=...)) instead of the scene's")
    ap.add_argument("--final-sweep", choices=["gauss-seidel", "jacobi"], default=None,
                    help="the sweep at the requested level only (fine-only, and the last level of coarse-to-fine)")
    ap.add_argument("--chebyshev-rho", type=float, default=None,
                    help="Chebyshev acceleration rho of every level (the scene's chebyshev_rho; default the scene's)")
    ap.add_argument("--chebyshev-delay", type=int, default=0, help="plain iterations before it (with --chebyshev-rho)")
    ap.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=True,
                    help="first drape the first scene for 2 frames a level, fine-only and coarse-to-fine, untimed: "
                         "Warp compiles and loads each kernel module on first use, which would otherwise land in the "
                         "first timed run (default on)")
    ap.add_argument("--tag", default=None, help="results file tag (default: the device)")
    ap.add_argument("--note", default="", help="free text stored in the JSON and markdown (e.g. machine load)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)

    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    paths = sorted((ROOT / "scenes").glob("*.toml"))
    if args.scenes:
        paths = [p for p in paths if p.stem in set(args.scenes)]
    tag = args.tag or args.device.replace(":", "")
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"benchmark": "drape", "device": args.device, "host": platform.node(), "python": platform.python_version(),
              "warp": wp.config.version, "levels": args.levels, "frame_cap": args.frames,
              "max_seconds": args.max_seconds, "level_substeps": args.level_substeps, "budget_seconds": args.budget_seconds, "note": args.note,
              "contact_stiffness": args.contact_stiffness, "sweep": args.sweep, "final_sweep": args.final_sweep,
              "chebyshev": None if args.chebyshev_rho is None else [args.chebyshev_rho, args.chebyshev_delay],
              "warmup": args.warmup,
              "refine_from": args.refine_from, "compare": args.compare, "rows": []}
    rows = result["rows"]
    cheb = None if args.chebyshev_rho is None else (args.chebyshev_rho, args.chebyshev_delay)
    if args.warmup and paths and args.levels:
        lv = args.levels[0]
        rf = args.refine_from if args.refine_from is not None and args.refine_from < lv else None
        t0 = time.perf_counter()
        for mode_rf in [None, rf] if rf is not None else [None]:
            try:
                run_one(paths[0], lv, args.device, 2, None, None, mode_rf, args.contact_stiffness, None, args.sweep,
                        args.final_sweep, cheb)
            except Exception as e:  # noqa: BLE001 - the timed run reports it
                print(f"warm-up failed: {type(e).__name__}: {e}", flush=True)
        result["warmup_s"] = time.perf_counter() - t0
        print(f"warm-up ({paths[0].stem}, level {lv}, 2 frames a level): {result['warmup_s']:.1f} s", flush=True)
    start = time.perf_counter()
    for lv in args.levels:
        for p in paths:
            if args.budget_seconds is not None and time.perf_counter() - start > args.budget_seconds:
                rows.append({"scene": p.stem, "level": lv, "error": f"not run: the {args.budget_seconds:g} s budget was spent"})
                _write(args.out, tag, result)
                continue
            rf = args.refine_from if args.refine_from is not None and args.refine_from < lv else None
            for mode_rf in ([None, rf] if args.compare and rf is not None else [rf]) * max(1, args.repeats):
                if mode_rf is not None and args.budget_seconds is not None and time.perf_counter() - start > args.budget_seconds:
                    rows.append({"scene": p.stem, "level": lv, "error": f"c2f not run: the {args.budget_seconds:g} s budget was spent"})
                    continue
                mode = "fine" if mode_rf is None else f"coarse-to-fine from level {mode_rf}"
                print(f"{p.stem} level {lv} on {args.device} ({mode}) ...", flush=True)
                try:
                    sub = args.level_substeps[min(lv, len(args.level_substeps) - 1)] if args.level_substeps else None
                    row = run_one(p, lv, args.device, args.frames, args.max_seconds, sub, mode_rf,
                                  args.contact_stiffness, args.save_state, args.sweep, args.final_sweep, cheb)
                except Exception as e:  # noqa: BLE001 - one failing case must not stop the rest
                    row = {"scene": p.stem, "level": lv, "error": f"{type(e).__name__}: {e}"}
                rows.append(row)
                print("  " + json.dumps({k: v for k, v in row.items() if k not in ("settings", "failures", "history")}), flush=True)
                _write(args.out, tag, result)  # after every case: an interrupted run keeps its rows
    print(table(rows))
    if result.get("speedups"):
        print(speedup_table(result["speedups"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

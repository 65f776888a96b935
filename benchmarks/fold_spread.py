"""How far apart the fold's runs end when their start differs by a rounding: the noise under its errors.

sim_grid's comparison scores each solver by the RMS distance of its few-iteration run to a converged reference
after the same frames. In a buckling pile that distance holds two things: the iterations' truncation error and
the pile's chaos, which turns any difference (a rounding, the order of a sum) into a different fold. This script
measures the second one for clothsim at each iteration count: the run from the start, and ``--seeds`` runs from
the start moved by ``--perturbation`` (1e-6 m, RMS per axis, seeded normal) — their RMS distances to the first
run are the spread one gets from rounding alone. With ``--ref-iterations`` it also gives each run's error to the
converged run from the unmoved start (sim_grid's error) and that converged run's own spread.
An error difference between two sweep points smaller than their spread is not a difference in accuracy.

    python benchmarks/fold_spread.py --sizes 128 --iterations 1,2,4,8 --frames 12 --seeds 3 \\
        --ref-iterations 300 --json out/fold_spread.json -- --self-contact-bound 0.425

Options after ``--`` are sim_grid's (contact size, bound, device, ...). Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_grid as sg  # noqa: E402
from grid_scenes import Scene, count_intersections, folded_fraction  # noqa: E402


def run(runner, iterations: int, frames: int, perturb: float, seed: int):
    """Final positions after ``frames`` frames from the start, moved first by ``perturb`` × a normal of ``seed``."""
    return np.asarray(sg.trajectory(runner, iterations, frames, perturb=perturb, seed=seed), dtype=np.float64)


def spread_of(runner, scene, iterations, a, log, ref=None):
    """The run from the start and its spread: RMS distances of the perturbed runs to it, and their median; with
    ``ref`` (the converged run's positions) also every run's error to it, the unmoved run's first, and their mean
    (sim_grid --error-starts averages the same way)."""
    t0 = time.perf_counter()
    x = run(runner, iterations, a.frames, 0.0, 0)
    moved = [run(runner, iterations, a.frames, a.perturbation, 1 + s) for s in range(a.seeds)]
    dists = [sg.rms(xm, x) for xm in moved]
    row = {"iterations": iterations, "spread_m": dists, "spread_median_m": statistics.median(dists),
           "intersections": count_intersections(x, scene.triangles)[0],
           "folded": folded_fraction(x, scene.rest_uv, scene.edge),
           "folded_moved": [folded_fraction(xm, scene.rest_uv, scene.edge) for xm in moved]}
    if ref is not None:
        row["error_m"] = sg.rms(x, ref)
        row["errors_m"] = [row["error_m"]] + [sg.rms(xm, ref) for xm in moved]
        row["error_mean_m"] = statistics.fmean(row["errors_m"])
    log(f"  [{scene.kind} N={scene.n}] {iterations} it: spread "
        + ", ".join(f"{d:.3e}" for d in dists) + " m"
        + (f", errors {', '.join(f'{e:.3e}' for e in row['errors_m'])} m" if ref is not None else "")
        + f" ({time.perf_counter() - t0:.1f}s)")
    return x, row


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="fold", choices=["fold"])
    ap.add_argument("--sizes", default="64", help="comma list of N")
    ap.add_argument("--iterations", default="1,2,4,8", help="comma list of iteration counts")
    ap.add_argument("--frames", type=int, default=sg.FOLD_COMPARE_FRAMES, help="frames from the start (sim_grid's "
                    f"error frames, {sg.FOLD_COMPARE_FRAMES})")
    ap.add_argument("--seeds", type=int, default=3, help="perturbed runs per iteration count")
    ap.add_argument("--perturbation", type=float, default=sg.SENSITIVITY_M, help="RMS per axis of the start's move [m]")
    ap.add_argument("--ref-iterations", type=int, default=0,
                    help="also a converged run at this count (its spread too) and each run's error to it")
    ap.add_argument("--reference-npy", default=None,
                    help="with --ref-iterations: load the converged run's final positions from this .npy if it exists "
                    "(its spread is then not measured again), else store them there (one size only)")
    ap.add_argument("--json", default="out/fold_spread.json")
    a = ap.parse_args(argv)
    try:
        a.sizes = [int(s) for s in a.sizes.split(",") if s]
        a.iterations = [int(s) for s in a.iterations.split(",") if s]
    except ValueError as e:
        ap.error(f"--sizes / --iterations take comma lists of integers ({e})")
    if a.seeds < 1 or a.frames < 1 or a.perturbation <= 0.0 or min(a.iterations + a.sizes, default=0) < 1:
        ap.error("--seeds, --frames, --iterations and --sizes must be positive, --perturbation > 0")
    if a.reference_npy and (len(a.sizes) != 1 or not a.ref_iterations):
        ap.error("--reference-npy takes one size and --ref-iterations")
    sa = sg.parse_args(rest)
    sg.apply_launch_options(sa)
    import warp as wp

    wp.config.quiet = True
    wp.init()
    import clothsim as cs

    mat = sg.material_from(sa)
    out = {"device": str(wp.get_device(sa.device)), "frames": a.frames, "perturbation_m": a.perturbation,
           "seeds": a.seeds, "sim_grid_args": rest, "cases": []}

    def log(msg):
        print(msg, flush=True)

    for n in a.sizes:
        scene = Scene(cs, a.case, n, 1.0, mat)
        runner = sg.clothsim_runner(cs, scene, mat, sa)
        case = {"case": a.case, "N": n, "points": []}
        ref = None
        if a.ref_iterations and a.reference_npy and os.path.exists(a.reference_npy):
            ref = np.load(a.reference_npy)
            if ref.shape != (scene.vertices.shape[0], 3):
                raise SystemExit(f"--reference-npy {a.reference_npy}: positions of shape {ref.shape}, the N = {n} "
                                 f"fold has {scene.vertices.shape[0]} vertices")
            case["reference"] = {"iterations": a.ref_iterations, "loaded_from": a.reference_npy}
            log(f"  [{scene.kind} N={n}] converged run loaded from {a.reference_npy}")
        elif a.ref_iterations:
            ref, row = spread_of(runner, scene, a.ref_iterations, a, log)
            case["reference"] = row
            if a.reference_npy:
                sg.save_array(a.reference_npy, ref)
        for it in a.iterations:
            x, row = spread_of(runner, scene, it, a, log, ref)
            case["points"].append(row)
        out["cases"].append(case)
        if hasattr(runner.sim, "release"):
            runner.sim.release()
        print(f"\n### {a.case}, N = {n}: runs from starts {a.perturbation:g} m apart, {a.frames} frames, "
              f"{sa.device}\n")
        print("| iterations | error vs converged run [m] | mean over the starts [m] | spread: RMS to the unmoved "
              "run [m] (median; each) | intersections | folded |")
        print("|---:|---:|---:|---|---:|---:|")
        for r in ([case["reference"]] if "spread_m" in case.get("reference", {}) else []) + case["points"]:
            err = f"{r['error_m']:.3e}" if "error_m" in r else ("(reference)" if r is case.get("reference") else "-")
            mean = f"{r['error_mean_m']:.3e}" if "error_mean_m" in r else "-"
            print(f"| {r['iterations']} | {err} | {mean} | {r['spread_median_m']:.3e} ("
                  + ", ".join(f"{d:.2e}" for d in r["spread_m"]) + f") | {r['intersections']} | {r['folded']:.2f} |")
    sg.save_json(a.json, out)
    print(f"\nJSON: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

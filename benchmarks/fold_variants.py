"""clothsim's solver settings side by side against the references of a sim_grid comparison.

Which of clothsim's solver settings (Chebyshev, first guess, membrane Hessian block) gives the lowest error at
a few iterations, measured against the converged references `benchmarks/sim_grid.py --ref-cache DIR` stored
(clothsim's, and Newton's when present): none of these settings changes the converged solution, only how fast
it is approached. Each variant is one Simulator built with sim_grid's settings plus its own changes; each
point is an error run (its final positions against every reference, and the intersections at the end), then
one timed run of the same frames after one untimed warm-up frame, as sim_grid's sweep with --runs 1
--warmup-frames 1. Prints a table and writes JSON.

    python benchmarks/sim_grid.py --references-only --ref-cache out/refs ARGS        # first, once
    python benchmarks/fold_variants.py --variants base,no-chebyshev --sweep 1,2,4 --json out/v.json -- ARGS

ARGS are sim_grid's (the same ones, so that the cache names match), e.g. the N = 1024 fold of the README.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import sim_grid as sg
from grid_runners import timing, trajectory
from grid_scenes import Scene, count_intersections

# solver settings only: the converged fold is the same under each
VARIANTS = {
    "base": {},
    "no-chebyshev": {"chebyshev_rho": 0.0},
    "adaptive": {"initial_guess": "adaptive"},
    "extrapolate": {"initial_guess": "extrapolate"},
    "stvk-block": {"membrane_hessian": "stvk"},
    "delay-2": {"chebyshev_delay": 2},
    "rho-0.8": {"chebyshev_rho": 0.8},
    # Jacobi sweeps (one launch an iteration instead of one a colour) with sim_grid's pinned-sheet settings
    "jacobi": {"sweep": "jacobi", "jacobi_omega": sg.JACOBI_OMEGA, "chebyshev_rho": sg.JACOBI_RHO},
    "jacobi-plain": {"sweep": "jacobi", "jacobi_omega": sg.JACOBI_OMEGA, "chebyshev_rho": 0.0},
    "jacobi-0.9": {"sweep": "jacobi", "jacobi_omega": 0.9, "chebyshev_rho": 0.0},
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="base,no-chebyshev,adaptive",
                    help=f"comma list of {', '.join(VARIANTS)} (default base,no-chebyshev,adaptive)")
    ap.add_argument("--sweep", default="1,2,4", help="iteration counts (default 1,2,4)")
    ap.add_argument("--json", default="out/bench/fold_variants.json")
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    a = ap.parse_args(own)
    a.variants = [v for v in a.variants.split(",") if v]
    bad = [v for v in a.variants if v not in VARIANTS]
    if bad:
        ap.error(f"--variants: unknown {', '.join(bad)}; known: {', '.join(VARIANTS)}")
    a.sweep = [int(s) for s in a.sweep.split(",") if s]
    return a, sg.parse_args(rest + ["--only-self-collision"])


def main(argv=None):
    own, a = parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    import warp as wp

    wp.config.quiet = True
    wp.init()
    import clothsim as cs

    if a.ref_cache is None:
        sys.exit("fold_variants: give sim_grid's --ref-cache DIR after --: the references are read from it")
    mat = sg.material_from(a)
    n = a.sizes[0]
    scene = Scene(cs, "fold", n, a.size, mat)
    frames = a.compare_frames or min(sg.FOLD_COMPARE_FRAMES, a.fold_frames)
    refs = {}
    for name in ("clothsim", "newton"):
        path = sg.ref_cache_path(a, scene, name, frames)
        if path is not None and path.exists():
            refs[name] = np.load(path)
            log(f"{name} reference: {path}")
    if "clothsim" not in refs:
        sys.exit(f"fold_variants: no clothsim reference in {a.ref_cache} for these arguments; run sim_grid.py "
                 "--references-only with the same arguments first")
    out = {"n": n, "frames": frames, "ref_iterations": a.ref_iterations, "device": a.device,
           "references": sorted(refs), "points": []}
    if len(refs) == 2:
        out["rms_clothsim_ref_vs_newton_ref_m"] = sg.rms(refs["clothsim"], refs["newton"])
    sg.save_json(own.json, out)  # then again after every point: a run cut off by a time limit keeps what it measured
    for v in own.variants:
        r = sg.clothsim_runner(cs, scene, mat, a)
        for k, val in VARIANTS[v].items():
            setattr(r, k, val)
        t0 = time.perf_counter()
        r.build(own.sweep[0])
        log(f"[{v}] built in {time.perf_counter() - t0:.1f}s")
        for it in own.sweep:
            x = trajectory(r, it, frames)
            inter, _ = count_intersections(x, scene.triangles)
            t = timing(r, it, frames, runs=1, warmup=1)
            p = {"variant": v, "iterations": it, "ms_per_frame": t["ms_median"], "intersections": inter}
            p.update({f"error_vs_{k}_ref_m": sg.rms(x, ref) for k, ref in refs.items()})
            out["points"].append(p)
            sg.save_json(own.json, out)
            log(f"[{v}] it={it}: {p['ms_per_frame']:.1f} ms/frame, "
                + ", ".join(f"err vs {k} {p[f'error_vs_{k}_ref_m']:.3e} m" for k in refs) + f", intersections {inter}")
        if hasattr(r.sim, "release"):
            r.sim.release()
    cols = [k for k in ("clothsim", "newton") if k in refs]
    print(f"\n### fold N = {n}: clothsim solver settings ({frames} frames, {a.device})\n")
    if "rms_clothsim_ref_vs_newton_ref_m" in out:
        print(f"references {out['rms_clothsim_ref_vs_newton_ref_m']:.3e} m apart\n")
    print("| variant | iterations | ms/frame | " + " | ".join(f"error vs {k} ref [m]" for k in cols) + " | intersections |")
    print("|---|---:|---:|" + "---:|" * len(cols) + "---:|")
    for p in out["points"]:
        print(f"| {p['variant']} | {p['iterations']} | {p['ms_per_frame']:.1f} | "
              + " | ".join(f"{p[f'error_vs_{k}_ref_m']:.3e}" for k in cols) + f" | {p['intersections']} |")
    print(f"\nJSON: {own.json}")


if __name__ == "__main__":
    main()

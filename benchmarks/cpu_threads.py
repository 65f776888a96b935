"""CPU accuracy-versus-time at N = 64 against Newton, with clothsim's colours split over threads.

The issue's CPU target: every error level Newton 1.8's SolverVBD reaches at N = 64 (iterations 1..32,
10 substeps, error = RMS distance to clothsim's converged reference after the same simulated time),
clothsim reaches in at most a third of Newton's time per frame, on this 2-core machine.

This script measures, in one process and back to back: clothsim's error and time per frame at each
iteration count with ``cpu_threads`` = 1 and = the cores (the results are bit-identical, checked
here), and Newton's time per frame. Newton's errors are read from an earlier full run of
``benchmarks/sim_grid.py --compare newton`` with the same material, mesh, substeps, frames and
reference iterations (``--newton-errors JSON``; Newton on the CPU is deterministic and its code is
unchanged), because Newton's own 300-iteration reference takes about five minutes per run here.
The clothsim reference is recomputed, and its errors are compared with that run's, so a change in
clothsim's results would show.

    python benchmarks/cpu_threads.py --newton-errors benchmarks/results/sim_grid_cpu_2core_n64_newton.json \
        --json benchmarks/results/cpu_threads_n64.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reach import time_to_reach  # noqa: E402
from sim_grid import (  # noqa: E402
    ClothsimRunner, NewtonRunner, Scene, material_from, parse_args, rms, save_json, timing, trajectory,
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--newton-errors", required=True, help="JSON of an earlier sim_grid --compare newton run (CPU, N=64)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--timing-frames", type=int, default=5)
    ap.add_argument("--chebyshev-rho", type=float, default=None,
                    help="clothsim's Chebyshev rho (default: the earlier run's)")
    ap.add_argument("--chebyshev-delay", type=int, default=None,
                    help="clothsim's Chebyshev delay (default: the earlier run's)")
    ap.add_argument("--chebyshev-cap", action="store_true", help="clothsim's Chebyshev omega capped at its limit")
    ap.add_argument("--initial-guess", choices=["inertia", "adaptive", "extrapolate"], default=None,
                    help="clothsim's initial guess (default: the earlier run's)")
    ap.add_argument("--json", default="out/bench/cpu_threads_n64.json")
    a = ap.parse_args()
    old = json.load(open(a.newton_errors))
    comp = next(c for c in old["comparisons"] if c["case"] == "pinned")
    n, frames, ref_it = comp["N"], comp["frames"], comp["ref_iterations"]
    args = ["--device", "cpu"] + [f"--{k.replace('_', '-')}={v}" for k, v in old["material"].items()
                                   if k in ("stretch", "poisson", "bending", "density", "damping", "thickness",
                                            "friction", "contact_ke", "bend_calibration")]
    sa = parse_args(args)
    import warp as wp

    wp.config.quiet = True
    import clothsim as cs

    mat = material_from(sa)
    scene = Scene(cs, "pinned", n, sa.size, mat)
    cores = min(8, os.cpu_count() or 1)
    old_cheb = (old["chebyshev_rho"], old.get("chebyshev_delay", 0), old.get("chebyshev_cap", False))
    cheb = (old_cheb[0] if a.chebyshev_rho is None else a.chebyshev_rho,
            old_cheb[1] if a.chebyshev_delay is None else a.chebyshev_delay,
            a.chebyshev_cap or old_cheb[2])
    old_guess = old["initial_guess"]  # one name, or per scene kind (sim_grid since session 12)
    old_guess = old_guess["pinned"] if isinstance(old_guess, dict) else old_guess
    guess = a.initial_guess or old_guess
    mk = lambda t, c=cheb, g=guess: ClothsimRunner(cs, scene, mat, "cpu", old["substeps"], g,  # noqa: E731
                                                   c[0], old.get("membrane_hessian") or "neo-hookean", t, c[1], c[2])
    one, many = mk(1), mk(cores)
    t0 = time.perf_counter()
    ref = trajectory(many, ref_it, frames)
    print(f"clothsim reference ({ref_it} it, {frames} frames): {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    ref_shift = None
    if (cheb, guess) != (old_cheb, old_guess):
        # Newton's errors were measured against the earlier run's reference: how far apart the two are
        ref_shift = rms(ref, trajectory(mk(cores, old_cheb, old_guess), ref_it, frames))
        print(f"reference with Chebyshev {cheb}, guess {guess} vs the earlier run's {old_cheb}, {old_guess}: "
              f"RMS {ref_shift:.3e} m", file=sys.stderr)
    newton = NewtonRunner(scene, mat, "cpu", old["substeps"])
    its = [p["iterations"] for p in comp["sweep"]["clothsim"]]
    rows = []
    for k in its:
        x1 = trajectory(one, k, frames)
        xm = trajectory(many, k, frames)
        t1 = timing(one, k, a.timing_frames, a.runs)["ms_median"]
        tm = timing(many, k, a.timing_frames, a.runs)["ms_median"]
        tn = timing(newton, k, a.timing_frames, a.runs)["ms_median"]
        old_c = next(p for p in comp["sweep"]["clothsim"] if p["iterations"] == k)
        old_n = next(p for p in comp["sweep"]["newton"] if p["iterations"] == k)
        rows.append({"iterations": k, "identical": bool(np.array_equal(x1, xm)), "err": rms(xm, ref),
                     "err_earlier_run": old_c["err_vs_clothsim_ref"], "ms_1_thread": t1, f"ms_{cores}_threads": tm,
                     "newton_ms": tn, "newton_err_earlier_run": old_n["err_vs_clothsim_ref"]})
        print(f"it={k}: 1 thread {t1:.1f} ms, {cores} threads {tm:.1f} ms, Newton {tn:.1f} ms, err {rows[-1]['err']:.3e} "
              f"(earlier {old_c['err_vs_clothsim_ref']:.3e}), identical {rows[-1]['identical']}", file=sys.stderr, flush=True)
    res = {"N": n, "frames": frames, "ref_iterations": ref_it, "cores": cores, "runs": a.runs,
           "chebyshev_rho": cheb[0], "chebyshev_delay": cheb[1], "chebyshev_cap": cheb[2], "initial_guess": guess,
           "reference_shift_vs_earlier_run": ref_shift,
           "timing_frames": a.timing_frames, "rows": rows, "reach": []}
    for key in ("ms_1_thread", f"ms_{cores}_threads"):
        ts = [r[key] for r in rows]
        es = [r["err"] for r in rows]
        for r in rows:
            t, note = time_to_reach(r["newton_err_earlier_run"], ts, es)
            res["reach"].append({"clothsim": key, "newton_iterations": r["iterations"], "ratio": t / r["newton_ms"] if t else None,
                                 "note": note})
    save_json(a.json, res)
    print(f"\n## CPU, N = {n}, {old['substeps']} substeps, median of {a.runs} runs of {a.timing_frames} frames\n")
    print(f"| iterations | clothsim 1 thread ms | clothsim {cores} threads ms | speed-up | Newton ms | clothsim err | "
          f"Newton err (earlier run) | ratio 1 thread | ratio {cores} threads |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, r in enumerate(rows):
        r1 = res["reach"][i]
        rm = res["reach"][len(rows) + i]
        f = lambda q: ("≤ " if q["note"] == "<=" else "") + (f"{q['ratio']:.2f}" if q["ratio"] else "not reached")  # noqa: E731
        print(f"| {r['iterations']} | {r['ms_1_thread']:.1f} | {r[f'ms_{cores}_threads']:.1f} | "
              f"{r['ms_1_thread'] / r[f'ms_{cores}_threads']:.2f} | {r['newton_ms']:.1f} | {r['err']:.3e} | "
              f"{r['newton_err_earlier_run']:.3e} | {f(r1)} | {f(rm)} |")
    print(f"\nJSON: {a.json}")


if __name__ == "__main__":
    main()

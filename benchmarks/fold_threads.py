"""The fold on the CPU with one thread against several, side by side in one run.

With ``Simulator(cpu_threads >= 2)`` and self contact, the contact search is shared between the threads (a
worker updates the edge BVH beside the triangle BVH and the vertex–triangle search, then all take chunks of
the edge–edge search) and each colour of the sweep is split over them when it has at least
``2 * vbd.CPU_CONTACT_CHUNK_MIN`` vertices. This times sim_grid's fold at N vertices a side with
``cpu_threads`` = 1 and = --threads, alternating, each after an untimed run of its frames, and checks that
both end at the same positions.

    python benchmarks/fold_threads.py --n 64 --frames 12 --iterations 1,4 --reps 2 \\
        --json benchmarks/results/fold_threads_cpu_2core.json
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_grid import ClothsimRunner, Scene, initial_guess_for, material_from, parse_args, save_json, timing  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--frames", type=int, default=12, help="frames timed (after an untimed run of them)")
    ap.add_argument("--iterations", default="1,4")
    ap.add_argument("--reps", type=int, default=2, help="alternations of 1 and --threads threads")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", default="out/bench/fold_threads.json")
    a = ap.parse_args(argv)
    import warp as wp

    wp.config.quiet = True
    import clothsim as cs

    sa = parse_args(["--device", "cpu"])
    mat = material_from(sa)
    scene = Scene(cs, "fold", a.n, 1.0, mat)
    rows = []
    for it in [int(s) for s in a.iterations.split(",")]:
        ms = {1: [], a.threads: []}
        ends = {}
        for rep in range(a.reps):
            for th in (1, a.threads):
                r = ClothsimRunner(cs, scene, mat, "cpu", sa.substeps, initial_guess_for(sa, "fold"), sa.chebyshev_rho,
                                   sa.membrane_hessian, th, chebyshev_delay=sa.chebyshev_delay,
                                   chebyshev_cap=sa.chebyshev_cap)
                ms[th].append(timing(r, it, a.frames, 1)["ms_median"])
                ends.setdefault(th, np.asarray(r.positions()).copy())
                r.sim.release()
        same = bool(np.array_equal(ends[1], ends[a.threads]))
        row = {"iterations": it, "ms_1_thread": ms[1], f"ms_{a.threads}_threads": ms[a.threads],
               "median_ratio": float(np.median(ms[a.threads]) / np.median(ms[1])), "same_positions": same}
        rows.append(row)
        print(f"N = {a.n}, {it} iterations: {np.median(ms[1]):.1f} ms a frame with 1 thread, "
              f"{np.median(ms[a.threads]):.1f} with {a.threads} (ratio {row['median_ratio']:.2f}); "
              f"same positions: {same}", flush=True)
    save_json(a.json, {"n": a.n, "frames": a.frames, "threads": a.threads, "reps": a.reps, "rows": rows})


if __name__ == "__main__":
    main()

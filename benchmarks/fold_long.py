"""The fold of benchmarks/sim_grid.py stepped long after it has piled up: does the pile stay on the ground,
come to rest, and stay finite?

sim_grid.py times the fold's first 30 frames; a user watching a drape keeps it running. Session 24 found the
pile's bottom layer sinking under the ground at low iteration counts (N = 256, 2 iterations: 4.7 cm after
100 frames on the H200) until two vertices met and the state went non-finite at frame 103; the ground is a
floor since (clothsim/solver/kernels.py, above_floor). For each size and iteration count this steps
``--frames`` frames and prints, every ``--every`` frames: the fastest vertex and the 99th percentile of
speed [m/s], the kinetic energy [J], the lowest height [m] (the ground is at 0), how many vertices lie
more than 0.1 mm under it and the cloth's self-intersections; at the end, the error that stopped the run if one did.
``--keep-checkpoints DIR`` writes the last three frames' checkpoints there when a run fails
(Simulator.load_checkpoint restores them, to replay the failing frame).

    python benchmarks/fold_long.py --device cuda:0 --sizes 256 --iterations 1,2 --frames 150 \\
        --json out/fold_long.json
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time

import numpy as np
from clothsim.collision import count_self_intersections

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid_scenes import Scene  # noqa: E402
from sim_grid import ClothsimRunner, initial_guess_for, material_from, parse_args, save_json  # noqa: E402

UNDER = 1.0e-4  # [m] a vertex this far under the ground counts as under it


def stats(sim) -> dict:
    x = sim.positions()
    speed = np.linalg.norm(sim.velocities(), axis=1)
    mass = np.asarray(sim.model.host_mass, dtype=np.float64)
    return {"frame": sim.frame, "vmax": float(speed.max()), "v99": float(np.percentile(speed, 99)),
            "kinetic": float(0.5 * (mass * speed.astype(np.float64) ** 2).sum()),
            "lowest": float(x[:, 1].min()), "under": int((x[:, 1] < -UNDER).sum()),
            "self_intersections": int(count_self_intersections(x, sim.triangles))}


def run_case(cs, sa, mat, device, n, iterations, frames, every, keep, log):
    from tqdm import tqdm

    scene = Scene(cs, "fold", n, 1.0, mat)
    runner = ClothsimRunner(cs, scene, mat, device, sa.substeps, initial_guess_for(sa, "fold"), sa.chebyshev_rho,
                            sa.membrane_hessian, chebyshev_delay=sa.chebyshev_delay, chebyshev_cap=sa.chebyshev_cap,
                            self_contact_bound=sa.self_contact_bound)
    runner.build(iterations)
    runner.reset()
    sim = runner.sim
    rows, error = [], None
    ring = collections.deque(maxlen=3)
    scratch = tempfile.mkdtemp(prefix="fold_long.") if keep else None
    t0 = time.perf_counter()
    try:
        for _ in tqdm(range(frames), desc=f"fold N={n} it={iterations}", unit="frame", leave=False):
            if scratch:
                if len(ring) == ring.maxlen:
                    os.remove(ring[0])
                path = os.path.join(scratch, f"fold{n}_it{iterations}_frame{sim.frame}.npz")
                sim.save_checkpoint(path)
                ring.append(path)
            try:
                sim.step()
            except cs.SimulationError as e:
                error = str(e)
                break
            if sim.frame % every == 0 or sim.frame == frames:
                row = stats(sim)
                rows.append(row)
                log(f"  N={n} it={iterations} frame {row['frame']:4d}: vmax {row['vmax']:.3f} v99 {row['v99']:.3f} m/s, "
                    f"kinetic {row['kinetic']:.2e} J, lowest {row['lowest']:+.5f} m, under {row['under']}, "
                    f"self-intersections {row['self_intersections']}")
        seconds = time.perf_counter() - t0
        done = sim.frame
        crossings = None if error else int(count_self_intersections(sim.positions(), sim.triangles))
        if error and keep:
            os.makedirs(keep, exist_ok=True)
            for path in ring:
                shutil.copy(path, keep)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        sim.release()
    log(f"N={n} it={iterations}: {done} frames, "
        f"{seconds:.1f} s, " + (f"stopped: {error}" if error else f"self-intersections {crossings}"))
    return {"n": n, "iterations": iterations, "frames": frames, "frames_done": done, "seconds": seconds, "rows": rows, "error": error,
            "self_intersections": crossings}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", default="32", help="N of the N×N sheet, comma-separated (default 32)")
    ap.add_argument("--iterations", default="1,2,10", help="iteration counts, comma-separated")
    ap.add_argument("--frames", type=int, default=200)
    ap.add_argument("--every", type=int, default=50, help="print and record every this many frames")
    ap.add_argument("--keep-checkpoints", default=None, metavar="DIR",
                    help="on a failed run, write its last three checkpoints to DIR")
    ap.add_argument("--json", default="out/bench/fold_long.json")
    a, rest = ap.parse_known_args(argv)
    import warp as wp

    wp.config.quiet = True
    import clothsim as cs

    sa = parse_args(["--device", a.device, *rest])  # sim_grid's material and solver options
    mat = material_from(sa)
    from tqdm import tqdm

    results = []
    for n in (int(s) for s in a.sizes.split(",")):
        for it in (int(s) for s in a.iterations.split(",")):
            results.append(run_case(cs, sa, mat, a.device, n, it, a.frames, a.every, a.keep_checkpoints, tqdm.write))
    save_json(a.json, {"device": a.device, "substeps": sa.substeps, "under_m": UNDER, "cases": results})
    print(f"JSON: {a.json}")


if __name__ == "__main__":
    main()

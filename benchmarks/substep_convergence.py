"""How fast each solver's iterations converge within one substep of the fold's pile, free of the pile's chaos.

sim_grid's fold comparison scores a run by its distance to a converged run after 12 frames; in the buckling pile
that distance mixes the iterations' truncation error with chaos, which turns any difference into a different
fold. This script takes the chaos out: it runs clothsim's fold (sim_grid's scene and options) for ``--frames``
frames at ``--state-iterations`` iterations, takes that state (positions and velocities), and from that same state
advances one substep (the frame's dt / substeps) with each solver at every count of ``--iterations`` and at
``--converged`` iterations. A count's error is the RMS distance of its substep's end to the same solver's
converged end, relative to the RMS distance of that converged end from the inertial target x + h·v + h²·g (the
correction the iterations have to find: most of a substep's motion is inertia); with ``--states K`` the pile states of frames
``--frames``, ``--frames`` + 1, ... are all measured and the table gives their mean.

    python benchmarks/substep_convergence.py --size 64 --frames 10 --iterations 1,2,3,4,6,8 --converged 300 \\
        --json out/substep_convergence.json -- --self-contact-bound 0.425 --newton-topological-filter 1 \\
        --newton-self-contact-detection pre-init

Options after ``--`` are sim_grid's (contact size, bound, Chebyshev, Newton's filter and buffers, device).
Newton runs when ``newton`` imports (``.venv-newton/bin/python`` here). Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_grid as sg  # noqa: E402
from grid_scenes import Scene  # noqa: E402
from newton_side import FRAME_DT  # noqa: E402


def substep_end(runner, iterations: int, x, v) -> np.ndarray:
    """Positions after one substep of ``iterations`` iterations from positions ``x`` and velocities ``v``."""
    runner.build(iterations)
    runner.set_state(x, v)
    runner.step()
    runner.sync()
    return np.asarray(runner.positions(), dtype=np.float64)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=64, help="N of the N×N fold")
    ap.add_argument("--frames", type=int, default=10, help="frames of the fold before the first measured state")
    ap.add_argument("--states", type=int, default=1, help="pile states measured, one a frame from --frames on")
    ap.add_argument("--state-iterations", type=int, default=10, help="iterations of the run that makes the states")
    ap.add_argument("--iterations", default="1,2,3,4,6,8", help="comma list of iteration counts")
    ap.add_argument("--converged", type=int, default=300, help="iterations of each solver's converged substep")
    ap.add_argument("--solvers", default="clothsim,newton", help="comma list: clothsim, newton")
    ap.add_argument("--json", default="out/substep_convergence.json")
    a = ap.parse_args(argv)
    try:
        a.iterations = [int(s) for s in a.iterations.split(",") if s]
    except ValueError as e:
        ap.error(f"--iterations takes a comma list of integers ({e})")
    a.solvers = [s for s in a.solvers.split(",") if s]
    if min(a.iterations + [a.size, a.frames, a.states, a.state_iterations, a.converged]) < 1:
        ap.error("--size, --frames, --states, --state-iterations, --converged and --iterations must be positive")
    if bad := [s for s in a.solvers if s not in ("clothsim", "newton")]:
        ap.error(f"--solvers: unknown {', '.join(bad)} (clothsim, newton)")
    sa = sg.parse_args(rest)
    sg.apply_launch_options(sa)
    import warp as wp

    wp.config.quiet = True
    wp.init()
    import clothsim as cs

    if "newton" in a.solvers:
        try:
            import newton  # noqa: F401
        except ImportError:
            print("newton does not import: clothsim only", flush=True)
            a.solvers = [s for s in a.solvers if s != "newton"]
    mat = sg.material_from(sa)
    scene = Scene(cs, "fold", a.size, 1.0, mat)
    h = FRAME_DT / sa.substeps
    sa_gravity = (0.0, -9.81, 0.0)  # y up, as both runners set it

    # the pile states: clothsim's fold at --state-iterations, frame by frame
    t0 = time.perf_counter()
    maker = sg.clothsim_runner(cs, scene, mat, sa)
    maker.build(a.state_iterations)
    maker.reset()
    states = []
    for f in range(1, a.frames + a.states):
        maker.step()
        if f >= a.frames:
            maker.sync()
            states.append((f, np.asarray(maker.positions(), np.float64), np.asarray(maker.velocities(), np.float64)))
    if hasattr(maker.sim, "release"):
        maker.sim.release()
    print(f"  {len(states)} pile state(s) from frame {a.frames} at {a.state_iterations} iterations "
          f"({time.perf_counter() - t0:.1f}s)", flush=True)

    one = copy.copy(sa)
    one.substeps = 1  # one step() = one substep of the benchmark's length h
    runners = {}
    if "clothsim" in a.solvers:
        runners["clothsim"] = sg.clothsim_runner(cs, scene, mat, one, frame_dt=h)
    if "newton" in a.solvers:
        runners["newton"] = sg.newton_runner(scene, mat, one, frame_dt=h, graph=False)

    out = {"device": str(wp.get_device(sa.device)), "N": a.size, "substep_s": h, "frames": a.frames,
           "state_iterations": a.state_iterations, "converged": a.converged, "sim_grid_args": rest, "solvers": {}}
    for name, runner in runners.items():
        rows = {k: [] for k in a.iterations}
        motion, correction = [], []
        t0 = time.perf_counter()
        for f, x, v in states:
            conv = substep_end(runner, a.converged, x, v)
            motion.append(sg.rms(conv, x))
            correction.append(sg.rms(conv, x + h * v + h * h * np.asarray(sa_gravity)))
            for k in a.iterations:
                rows[k].append(sg.rms(substep_end(runner, k, x, v), conv) / correction[-1])
        out["solvers"][name] = {"motion_m": motion, "correction_m": correction, "points": [
            {"iterations": k, "relative_errors": rows[k], "relative_error_mean": statistics.fmean(rows[k])}
            for k in a.iterations]}
        print(f"  {name}: {time.perf_counter() - t0:.1f}s; substep motion {statistics.fmean(motion):.3e} m, "
              f"correction {statistics.fmean(correction):.3e} m", flush=True)
        if name == "clothsim" and hasattr(runner.sim, "release"):
            runner.sim.release()

    print(f"\n### fold N = {a.size}: one substep ({h * 1e3:.3f} ms) from {len(states)} pile state(s) of frame "
          f"{a.frames}+, error to each solver's {a.converged}-iteration substep / that substep's correction to the "
          f"inertial target, {sa.device}\n")
    names = list(out["solvers"])
    print("| iterations | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for i, k in enumerate(a.iterations):
        print(f"| {k} | " + " | ".join(f"{out['solvers'][s]['points'][i]['relative_error_mean']:.3e}" for s in names)
              + " |")
    sg.save_json(a.json, out)
    print(f"\nJSON: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

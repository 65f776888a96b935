"""How converged a comparison's reference is: clothsim's trajectory (the pinned sheet, or --case fold) at several
iteration counts and first guesses, each end state's RMS distance to the others.

sim_grid.py measures errors against 500- or 1000-iteration references. Whether such a reference is the converged
solution depends on the edge length far more than on N: the implicit step's mass term m/h^2 falls with the
squared edge while the membrane stiffness does not, so at 1 mm edges (N = 1024 on 1.05 m, or its small analogue
N = 64 on 6.56 cm) Gauss-Seidel sweeps converge slowly, and a reference started from the inertial guess (where
Newton's VBD starts) ends far from one started from the extrapolated one (session 36, this 2-core CPU, the
analogue: 500 iterations from the inertial guess 8.5 mm from 2000 from the extrapolated, 2000 from the inertial
still 5.8 mm, 500 from the extrapolated 0.78 mm, in 34 mm of motion). Every sim_grid option applies (size, N,
material, frames via --compare-frames); the runs are: --runs-spec "extrapolate:500,extrapolate:2000,inertia:500".

    python benchmarks/ref_convergence.py --runs-spec extrapolate:500,extrapolate:2000,inertia:500,inertia:2000 \\
        --sizes 64 --size 0.0656 --compare-frames 5 --json out/ref_convergence.json

--with NAME=PATH adds an end state saved as .npy, e.g. Newton's reference from sim_grid's --ref-cache: on the same
analogue Newton's 500- and 2000-iteration references lay 1.0-1.4 mm from clothsim's plain Gauss-Seidel runs from
the inertial guess (--chebyshev-rho 0) and 9 mm from the extrapolated run
(ref_convergence_cpu_2core_s36_n64_mm_plain.*). sim_grid.py --ref-initial-guess gives clothsim's reference its own
first guess.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import clothsim as cs  # noqa: E402
import sim_grid as sg  # noqa: E402
from grid_runners import trajectory  # noqa: E402
from grid_scenes import Scene  # noqa: E402


def parse_runs(spec: str, option: str = "--runs-spec",
               guesses: tuple[str, ...] = ("inertia", "extrapolate", "adaptive")) -> list[tuple[str, int]]:
    """"guess:iterations,..." -> [(guess, iterations), ...], with a clear error for a malformed entry."""
    runs = []
    for item in spec.split(",") if spec else []:
        guess, _, its = item.partition(":")
        if guess not in guesses or not its.isdigit() or int(its) < 1:
            raise SystemExit(f"{option}: {item!r} is not GUESS:ITERATIONS (GUESS {' or '.join(guesses)})")
        runs.append((guess, int(its)))
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(add_help=False, description=" ".join(__doc__.split("\n\n")[0].split()),
                                 epilog="Every other option is sim_grid.py's (below).")
    ap.add_argument("--runs-spec", default="extrapolate:500,extrapolate:2000,inertia:500",
                    help="comma list of FIRST_GUESS:ITERATIONS runs (first guess inertia, extrapolate or adaptive)")
    ap.add_argument("--newton-runs-spec", default="",
                    help="also Newton's SolverVBD (when importable): comma list of FIRST_GUESS:ITERATIONS, first guess "
                    "inertia (Newton's own) or extrapolate (clothsim's, newton_side.NewtonCloth.set_initial_guess); "
                    "named newton-GUESS:ITERATIONS")
    ap.add_argument("--case", choices=["pinned", "fold"], default="pinned", help="sim_grid's scene (default pinned)")
    ap.add_argument("--with", dest="extra", action="append", default=[], metavar="NAME=PATH",
                    help="also compare an end state saved as .npy (e.g. a Newton reference from sim_grid's "
                    "--ref-cache); repeatable")
    own, rest = ap.parse_known_args(argv)
    if {"-h", "--help"} & set(rest):
        ap.print_help()
        print()
    runs = parse_runs(own.runs_spec)
    newton_runs = parse_runs(own.newton_runs_spec, "--newton-runs-spec", ("inertia", "extrapolate"))
    if newton_runs and not sg.newton_available()[0]:
        raise SystemExit(f"--newton-runs-spec: Newton is not importable here ({sg.newton_available()[1]})")
    extra = {}
    for item in own.extra:
        name, _, path = item.partition("=")
        if not name or not Path(path).is_file():
            raise SystemExit(f"--with: {item!r} is not NAME=PATH of an existing .npy file")
        extra[name] = np.load(path)
    a = sg.parse_args(rest)
    mat = sg.material_from(a)
    n = a.sizes[0]
    frames = a.compare_frames or 5
    scene = Scene(cs, own.case, n, a.size, mat)
    ends, rows = {}, []
    for guess in dict.fromkeys(g for g, _ in runs):
        a.initial_guess = guess
        r = sg.clothsim_runner(cs, scene, mat, a)
        r.build(max(k for g, k in runs if g == guess))
        for g, k in runs:
            if g != guess:
                continue
            t0 = time.perf_counter()
            ends[(g, k)] = trajectory(r, k, frames)
            rows.append({"solver": "clothsim", "guess": g, "iterations": k, "seconds": time.perf_counter() - t0,
                         "rms_displacement_m": sg.rms(ends[(g, k)], scene.vertices)})
            print(f"{g} {k} it: {rows[-1]['seconds']:.1f} s, RMS displacement {rows[-1]['rms_displacement_m']:.4e} m",
                  flush=True)
    if newton_runs:
        r = sg.newton_runner(scene, mat, a)
        for g, k in newton_runs:
            r.set_initial_guess(g)
            t0 = time.perf_counter()
            ends[f"newton-{g}:{k}"] = trajectory(r, k, frames)
            rows.append({"solver": "newton", "guess": g, "iterations": k, "seconds": time.perf_counter() - t0,
                         "rms_displacement_m": sg.rms(ends[f"newton-{g}:{k}"], scene.vertices)})
            print(f"newton {g} {k} it: {rows[-1]['seconds']:.1f} s, RMS displacement "
                  f"{rows[-1]['rms_displacement_m']:.4e} m", flush=True)
    for name, x in extra.items():
        if x.shape != scene.vertices.shape:
            raise SystemExit(f"--with {name}: shape {x.shape} is not this scene's {scene.vertices.shape}")
        ends[name] = x
    names = [f"{k[0]}:{k[1]}" if isinstance(k, tuple) else k for k in ends]
    dist = [[sg.rms(ends[p], ends[q]) for q in ends] for p in ends]
    print(f"\n{own.case} N = {n}, {a.size:g} m ({a.size / (n - 1) * 1e3:.3f} mm edges), "
          f"{frames} frames on {a.device}: RMS distance between the end states [m]\n")
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for name, row in zip(names, dist):
        print(f"| {name} | " + " | ".join(f"{d:.3e}" for d in row) + " |")
    sg.save_json(a.json, {"case": own.case, "N": n, "size_m": a.size, "frames": frames, "device": a.device,
                          "runs": rows, "names": names, "rms_distance_m": dist})
    print(f"\nJSON: {a.json}")


if __name__ == "__main__":
    main()

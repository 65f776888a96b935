"""How many self-contact pairs Newton's SolverVBD drops in the benchmark fold (``sim_grid.py``'s fold scene).

Newton keeps fixed-length contact lists per vertex (32 by default) and per edge (64): its detection counts every
pair within the radius but stores only what fits, and drops the rest without a word. ``newton_side.NewtonCloth``
counts them after every substep; this runs the fold at the given iteration counts and prints, per run, each list's
longest count against its buffer, the pairs dropped over the run, and the intersections at the end. clothsim's
lists grow instead (the frame is redone), so it has nothing to report here.

    .venv-newton/bin/python benchmarks/newton_drops.py --n 128 --iterations 1,4 --frames 12   # ~4 min, 2-core CPU
    python benchmarks/newton_drops.py --device cuda:0 --n 256 --iterations 1,4 --frames 12

Material and contact as ``sim_grid.py`` (its options after ``--``, e.g. ``-- --thickness 0.00075``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid_scenes import Scene, count_intersections  # noqa: E402
from sim_grid import material_from, newton_runner, parse_args, save_json  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=128, help="vertices per side")
    ap.add_argument("--iterations", default="1,4", help="comma list of Newton iteration counts")
    ap.add_argument("--frames", type=int, default=12)
    ap.add_argument("--json", default="out/bench/newton_drops.json")
    ap.add_argument("sim_grid_args", nargs="*", help="sim_grid.py material/contact options, after --")
    a = ap.parse_args(argv)
    import warp as wp

    wp.config.quiet = True
    wp.init()
    import clothsim as cs

    sa = parse_args(["--device", a.device, "--sizes", str(a.n), "--only-self-collision", *a.sim_grid_args])
    mat = material_from(sa)
    scene = Scene(cs, "fold", a.n, sa.size, mat)
    runner = newton_runner(scene, mat, sa)
    out = {"N": a.n, "frames": a.frames, "device": str(wp.get_device(a.device)), "material": mat.__dict__, "runs": []}
    for k in [int(s) for s in a.iterations.split(",") if s]:
        t0 = time.perf_counter()
        runner.build(k)
        runner.reset()
        for _ in range(a.frames):
            runner.step()
        runner.sync()
        nint, _ = count_intersections(runner.positions(), scene.triangles)
        out["runs"].append({"iterations": k, "newton_contacts": runner.contact_report(), "intersections": nint,
                            "seconds": time.perf_counter() - t0})
        print(json.dumps(out["runs"][-1]), flush=True)
    save_json(a.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

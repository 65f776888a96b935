"""How long the self-contact lists grow in sim_grid's fold when the contact radius spans many mesh edges.

    python benchmarks/contact_lists.py --n 128 --size 0.127 --frames 5 --iterations 2

The fold scene with N vertices a side on a sheet of side L (edge L/(N − 1)) and the benchmark's contact
(3 mm thickness + 3 mm margin: a 6 mm radius; --thickness, --contact-margin change them). Every --every frames it prints the lists' capacities, the
longest list of each kind and the mean edge–edge list. N = 128 on 0.127 m has the 1 mm edges of the
1 m sheet at N = 1024, at a size this CPU can step.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_grid import ClothsimRunner, Scene, initial_guess_for, material_from, parse_args  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=128, help="vertices a side")
    ap.add_argument("--size", type=float, default=0.127, help="side L [m]")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--every", type=int, default=5, help="report every this many frames")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--thickness", type=float, default=None, help="contact thickness [m] (sim_grid's default: 3 mm)")
    ap.add_argument("--contact-margin", type=float, default=None, help="search distance beyond it [m] (3 mm)")
    a = ap.parse_args(argv)
    import warp as wp

    wp.config.quiet = True
    import clothsim as cs

    sa = parse_args(["--device", a.device]
                    + ([] if a.thickness is None else ["--thickness", str(a.thickness)])
                    + ([] if a.contact_margin is None else ["--contact-margin", str(a.contact_margin)]))
    mat = material_from(sa)
    scene = Scene(cs, "fold", a.n, a.size, mat)
    r = ClothsimRunner(cs, scene, mat, a.device, sa.substeps, initial_guess_for(sa, "fold"), sa.chebyshev_rho,
                       sa.membrane_hessian, chebyshev_delay=sa.chebyshev_delay, chebyshev_cap=sa.chebyshev_cap)
    r.build(a.iterations)
    det = r.sim.solver.self_contacts.detector
    print(f"N = {a.n}, L = {a.size} m: edge {a.size / (a.n - 1) * 1e3:.2f} mm, contact radius "
          f"{r.sim.solver.query_radius * 1e3:.1f} mm, {a.iterations} iterations, {a.device}", flush=True)
    t0 = time.perf_counter()
    for f in range(1, a.frames + 1):
        r.step()
        if f % a.every == 0 or f == a.frames:
            lists = det.lists_numpy()
            longest = {k: max((len(x) for x in lists[k]), default=0) for k in ("vt", "tv", "ee")}
            print(f"frame {f}: capacities {det.capacities}, longest lists {longest}, mean edge-edge list "
                  f"{np.mean([len(x) for x in lists['ee']]):.1f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    r.sim.release()


if __name__ == "__main__":
    main()

"""How fast the fold's standing sheet falls, frame by frame, in both solvers: the mean speed of its top row.

The small analogue of the N = 1024 fold with a contact under the triangle altitude: an N x N sheet with the same
edge length (0.978 mm by default) and contact (0.3 + 0.3 mm), so that self contact caps every vertex at
bound x radius a substep (0.153 m/s here) and the sheet falls at that cap until its bottom edge reaches the
floor (frame 4-5). What each solver does after landing is what separates their converged references (session
35, this 2-core CPU, N = 32: clothsim's top row 0.0375 / 0.0082 m/s over the two frames after landing at 1000
iterations, Newton's 0.1518 / 0.1508): at these edges Newton 1.8 computes no bending at all (its 1e-6 m^2
threshold on twice a triangle's area, newton_mapping.NEWTON_BEND_EPS; --edge 0.00103 is above it, and there
Newton's top row stops too, 0.0370 / 0.0077 m/s at 1000 iterations, but topples sooner: session 36). Prints a table
and writes JSON; Newton runs when the newton package is
importable (.venv-newton here).

    .venv-newton/bin/python benchmarks/landing_speed.py --size 32 --iterations 1,100,1000 --frames 8 \\
        --json out/landing_speed.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import clothsim as cs  # noqa: E402
import sim_grid as sg  # noqa: E402
from grid_scenes import Scene  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=32, help="N: vertices along a side (default 32)")
    ap.add_argument("--edge", type=float, default=0.000978, help="edge length [m] (default: N = 1024's on 1 m)")
    ap.add_argument("--thickness", type=float, default=0.0003)
    ap.add_argument("--contact-margin", type=float, default=0.0003)
    ap.add_argument("--iterations", default="1,100")
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--no-newton", action="store_true")
    ap.add_argument("--json", default="out/landing_speed.json")
    a = ap.parse_args(argv)
    n = a.size
    if n < 4 or a.frames < 1:
        ap.error("--size must be at least 4 and --frames at least 1")
    its = [int(k) for k in a.iterations.split(",") if k]
    g = sg.parse_args(["--sizes", str(n), "--size", str((n - 1) * a.edge), "--thickness", str(a.thickness),
                       "--contact-margin", str(a.contact_margin), "--self-contact-bound", "0.425",
                       "--newton-self-contact-detection", "pre-init", "--newton-topological-filter", "1",
                       "--newton-vertex-buffer", "128", "--newton-edge-buffer", "128"])
    mat = sg.material_from(g)
    scene = Scene(cs, "fold", n, g.size, mat)
    top = np.argsort(scene.vertices[:, 1])[-n:]
    y0 = float(scene.vertices[top, 1].mean())
    makers = [("clothsim", lambda: sg.clothsim_runner(cs, scene, mat, g))]
    if not a.no_newton:
        try:
            import newton  # noqa: F401

            makers.append(("newton", lambda: sg.newton_runner(scene, mat, g, graph=False)))
        except ImportError:
            print("newton not importable: clothsim only")
    cap = 0.425 * (a.thickness + a.contact_margin) * g.substeps / sg.FRAME_DT
    rows = []
    for name, make in makers:
        r = make()
        for it in its:
            r.build(it)
            r.reset()
            ys, floor = [], []
            for _ in range(a.frames):
                r.step()
                x = r.positions()
                ys.append(float(x[top, 1].mean()))
                floor.append(float(x[:, 1].min()))
            speed = (-np.diff(np.r_[y0, ys]) / sg.FRAME_DT).tolist()
            rows.append({"solver": name, "iterations": it, "top_speed_m_s": speed, "lowest_y_m": min(floor)})
            print(f"{name} {it}: " + " ".join(f"{v:.4f}" for v in speed), flush=True)
    print(f"\nN = {n}, edge {a.edge * 1e3:.3f} mm, contact {a.thickness * 1e3:.2f} + {a.contact_margin * 1e3:.2f} mm, "
          f"cap {cap:.4f} m/s; top row's mean fall speed per frame [m/s]\n")
    print("| solver | iterations | " + " | ".join(str(f + 1) for f in range(a.frames)) + " | lowest y [mm] |")
    print("|---|---:|" + "---:|" * a.frames + "---:|")
    for row in rows:
        print(f"| {row['solver']} | {row['iterations']} | " + " | ".join(f"{v:.4f}" for v in row["top_speed_m_s"])
              + f" | {row['lowest_y_m'] * 1e3:.3f} |")
    sg.save_json(a.json, {"size": n, "edge": a.edge, "thickness": a.thickness, "contact_margin": a.contact_margin,
                          "cap_m_s": cap, "frames": a.frames, "runs": rows})
    print(f"\nJSON: {a.json}")


if __name__ == "__main__":
    main()

"""Where the fold passes through itself, and why: sim_grid's fold stepped frame by frame for each contact size,
with the self-intersections after every frame and, at the end, each crossing pair of triangles with its distance
in the rest shape.

clothsim leaves out of self contact the pairs whose primitives lie closer in the rest shape than the search
radius (thickness + margin: ``SelfCollision.detect(rest_radius=query_radius)``): those are the flat cloth's own
neighbours, which would otherwise push each other apart at rest. Newton's SolverVBD is configured the same way
in the comparison (``particle_rest_shape_contact_exclusion_radius``, beside its own two-ring filter). A pair left
out neither pushes nor bounds the step (the conservative bound only sees pairs the search keeps), so a crease
sharper than that radius can fold a triangle through a rest neighbour. On a grid the nearest primitives that
share no vertex lie one triangle altitude apart (edge / √2), so the radius stays under it for every pair to be
kept. Session 30, this 2-core CPU, N = 256 (3.92 mm edges, 2.77 mm altitude), 1 iteration, 12 frames
(``results/intersection_pairs_cpu_2core_s30.*``): the benchmark's 6 mm search radius (1.53 edges) ended with 2899
crossings (2367 with a 1e-10 m tolerance), 2270 of those 2367 pairs closer than 6 mm at rest, the first at frame 5;
3 mm (0.77 edges) with 33 (22; 4 of them closer than 3 mm at rest, the others one edge apart, first touching at
frame 9); 2.5 mm (under the altitude) with none in any frame. Newton (``--solver newton``, pre-init, bound 0.425)
at 2.5 mm: 1088 crossings with its default two-ring topological filter, none closer than the radius at rest and
all within 1.41 edges (``_newton_ring2.*``), and none with one ring (``--newton-topological-filter 1``,
``_newton_ring1.*``).

    python benchmarks/intersection_pairs.py --size 256 --iterations 1 --frames 12 \\
        --contacts 0.003:0.003,0.0015:0.0015,0.00125:0.00125 --json out/intersection_pairs.json
    .venv-newton/bin/python benchmarks/intersection_pairs.py --solver newton --newton-topological-filter 1 \\
        --size 256 --contacts 0.00125:0.00125 --json out/intersection_pairs_newton.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _point_segment_2d(p, a, b):
    """Distances from points p to segments a-b, all (K, 2)."""
    ab = b - a
    t = np.clip(np.einsum("ij,ij->i", p - a, ab) / np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-30), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


def rest_distance(uv: np.ndarray, tris: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Distance [m] between the two triangles of each pair in the flat rest shape (2D, disjoint triangles: the
    nearest points lie on a vertex of one and an edge of the other)."""
    if len(pairs) == 0:
        return np.zeros(0)
    a, b = uv[tris[pairs[:, 0]]], uv[tris[pairs[:, 1]]]
    d = np.full(len(pairs), np.inf)
    for x, y in ((a, b), (b, a)):
        for i in range(3):
            for j, k in ((0, 1), (1, 2), (2, 0)):
                d = np.minimum(d, _point_segment_2d(x[:, i], y[:, j], y[:, k]))
    return d


def smallest_altitude(uv: np.ndarray, tris: np.ndarray) -> float:
    """The smallest triangle altitude [m] of the rest shape: the nearest a vertex comes to a primitive it is not
    part of, across one edge."""
    p = uv[tris]
    e = [np.linalg.norm(p[:, (i + 1) % 3] - p[:, i], axis=1) for i in range(3)]
    u, v = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
    area2 = np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])
    return float((area2 / np.maximum(np.maximum(e[0], e[1]), e[2])).min())


def run(a, thickness: float, margin: float) -> dict:
    for p in (os.path.dirname(HERE), HERE):  # here, not at import: tests load this file by path
        if p not in sys.path:
            sys.path.insert(0, p)
    import warp as wp

    wp.config.quiet = True
    import clothsim as cs
    from clothsim.collision import count_self_intersections, self_intersection_pairs
    from sim_grid import ClothsimRunner, Scene, initial_guess_for, material_from, newton_runner, parse_args

    sa = parse_args(["--device", a.device, "--thickness", str(thickness), "--contact-margin", str(margin),
                     "--newton-self-contact-detection", "pre-init"]
                    + (["--newton-topological-filter", str(a.newton_topological_filter)]
                       if a.newton_topological_filter is not None else []))
    mat = material_from(sa)
    sc = Scene(cs, "fold", a.size, 1.0, mat)
    if a.solver == "newton":  # one detection a substep and Newton's own bound (0.425), as in sim_grid's comparison
        r = newton_runner(sc, mat, sa)
    else:
        r = ClothsimRunner(cs, sc, mat, a.device, sa.substeps, initial_guess_for(sa, "fold"), sa.chebyshev_rho,
                           sa.membrane_hessian, None, sa.chebyshev_delay, sa.chebyshev_cap,
                           self_contact_bound=a.self_contact_bound)
    r.build(a.iterations)
    r.reset()
    tris = np.asarray(sc.triangles, dtype=np.int32)
    uv = np.asarray(sc.rest_uv, dtype=np.float64)
    frames = []
    for f in range(1, a.frames + 1):
        t0 = time.perf_counter()
        r.step()
        r.sync()
        ms = (time.perf_counter() - t0) * 1e3
        x = np.asarray(r.positions(), dtype=np.float32)
        frames.append({"frame": f, "ms": ms, "intersections": count_self_intersections(x, tris),
                       "intersections_1e-10": count_self_intersections(x, tris, eps=1e-10)})
        print(f"  contact {thickness * 1e3:g}+{margin * 1e3:g} mm frame {f}: {frames[-1]['intersections']} "
              f"({frames[-1]['intersections_1e-10']} at 1e-10 m)", flush=True)
    pairs = self_intersection_pairs(x, tris, eps=1e-10)
    d = rest_distance(uv, tris, pairs)
    radius = thickness + margin  # clothsim's search radius; Newton's rest exclusion radius is set to it
    edge = float(np.median(np.linalg.norm(uv[tris[:, 1]] - uv[tris[:, 0]], axis=1)))
    if a.solver == "clothsim":
        r.sim.release()
    return {"solver": a.solver, "thickness": thickness, "contact_margin": margin, "search_radius": radius, "edge": edge,
            "smallest_altitude": smallest_altitude(uv, tris), "frames": frames, "crossing_pairs": int(len(pairs)),
            "pairs_within_search_radius_at_rest": int((d < radius).sum()),
            "rest_distance_edges_quantiles": (np.quantile(d / edge, [0, 0.5, 0.9, 1]).tolist() if len(d) else [])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", type=int, default=256, help="N: the fold's N×N vertices")
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--frames", type=int, default=12)
    ap.add_argument("--self-contact-bound", type=float, default=0.425, help="clothsim's (Newton's is 0.425)")
    ap.add_argument("--solver", choices=["clothsim", "newton"], default="clothsim",
                    help="newton: Newton's SolverVBD as sim_grid's comparison sets it up (needs newton)")
    ap.add_argument("--newton-topological-filter", type=int, default=None,
                    help="Newton's topological filter in rings (default: its own, 2)")
    ap.add_argument("--contacts", default="0.003:0.003",
                    help="comma list of THICKNESS:MARGIN [m] (the search radius is their sum)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = []
    for spec in a.contacts.split(","):
        try:
            th, mg = (float(v) for v in spec.split(":"))
        except ValueError:
            ap.error(f"--contacts: {spec!r} is not THICKNESS:MARGIN")
        rows.append(run(a, th, mg))
    print(f"\n## fold N = {a.size}, {a.solver}, {a.iterations} iteration(s), {a.frames} frames, {a.device}\n")
    print("| search radius [mm] | in edges | smallest altitude [mm] | crossings at the end | at 1e-10 m | "
          "pairs closer than the radius at rest | rest distance in edges (min / median / max) |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for w in rows:
        q = w["rest_distance_edges_quantiles"]
        qs = f"{q[0]:.2f} / {q[1]:.2f} / {q[3]:.2f}" if q else "-"
        print(f"| {w['search_radius'] * 1e3:.2f} | {w['search_radius'] / w['edge']:.2f} | "
              f"{w['smallest_altitude'] * 1e3:.2f} | {w['frames'][-1]['intersections']} | "
              f"{w['frames'][-1]['intersections_1e-10']} | {w['pairs_within_search_radius_at_rest']} | {qs} |")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"args": vars(a), "runs": rows}, f, indent=1)
        os.replace(tmp, a.json)
        print(f"\nJSON: {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-kernel GPU time of one frame, clothsim against Newton's SolverVBD, on the sim_grid scenes.

For each case it prints the frame time with the CUDA graph (median of 5 runs of 30 frames) and, from
the same frame launched without a graph under Warp's CUDA activity timer (``wp.timing_begin``,
kernels only), each kernel's launches per frame and time per launch. The timer's events add a few
microseconds per launch, so the sums exceed the graph time; compare kernels with each other.

    python benchmarks/kernel_profile.py --cases pinned,fold --sizes 128,256 --iterations 1,10 \\
        --json benchmarks/results/kernel_profile_h200.json
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from newton_side import NewtonCloth  # noqa: E402
from sim_grid import Scene, apply_launch_options, clothsim_runner, material_from, newton_runner, parse_args, save_json  # noqa: E402


def profile(wp, fn, frames=3):
    wp.synchronize()
    wp.timing_begin(cuda_filter=wp.TIMING_KERNEL)
    for _ in range(frames):
        fn()
    wp.synchronize()
    agg = collections.defaultdict(lambda: [0, 0.0])
    for r in wp.timing_end():
        agg[r.name][0] += 1
        agg[r.name][1] += r.elapsed
    return {k: {"launches": v[0] / frames, "ms": v[1] / frames}
            for k, v in sorted(agg.items(), key=lambda kv: -kv[1][1])}


def graph_ms(runner, advance=0, frames=30, runs=5):
    """Median frame time with the CUDA graph: each run resets the scene, steps ``advance`` frames untimed, then
    times ``frames`` (one untimed run first captures the graph)."""
    ts = []
    for i in range(runs + 1):
        runner.reset()
        for _ in range(advance):
            runner.step()
        runner.sync()
        t0 = time.perf_counter()
        for _ in range(frames):
            runner.step()
        runner.sync()
        if i:
            ts.append((time.perf_counter() - t0) / frames * 1e3)
    return float(np.median(ts))


def show(tag, g, p, top=8):
    tot = sum(v["ms"] for v in p.values())
    cnt = sum(v["launches"] for v in p.values())
    print(f"[{tag}] graph {g:.2f} ms/frame; {cnt:.0f} kernels/frame, timed sum {tot:.2f} ms")
    for k, v in list(p.items())[:top]:
        print(f"    {k[:60]:60s} {v['launches']:6.0f}/frame {v['ms']:8.3f} ms {v['ms'] / max(v['launches'], 1) * 1e3:8.2f} us/launch")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Any other option is sim_grid.py's (e.g. --thickness, --contact-margin, "
                                        "--self-contact-bound, --newton-self-contact-detection, --newton-vertex-buffer) "
                                        "and configures both solvers as sim_grid.py does.")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--cases", default="pinned")
    ap.add_argument("--sizes", default="128,256")
    ap.add_argument("--iterations", default="1,10")
    ap.add_argument("--no-newton", action="store_true")
    ap.add_argument("--advance", type=int, default=0,
                    help="frames stepped by both solvers before their profile (the fold piles up over its first "
                         "30 frames)")
    ap.add_argument("--graph-frames", type=int, default=30, help="frames timed with the graph a run (after --advance)")
    ap.add_argument("--graph-runs", type=int, default=5, help="timed runs with the graph (median)")
    ap.add_argument("--json", default="out/bench/kernel_profile.json")
    a, rest = ap.parse_known_args()
    import warp as wp

    wp.config.quiet = True
    import clothsim as cs

    sa = parse_args(["--device", a.device] + rest)
    _vbd = apply_launch_options(sa)
    mat = material_from(sa)
    res = {}
    for kind in a.cases.split(","):
        for n in (int(s) for s in a.sizes.split(",")):
            sc = Scene(cs, kind, n, 1.0, mat)
            for it in (int(s) for s in a.iterations.split(",")):
                r = clothsim_runner(cs, sc, mat, sa)
                r.build(it)
                r.reset()
                for _ in range(a.advance):
                    r.step()
                sim = r.sim
                p = profile(wp, lambda: sim.solver._frame_launches(sim.state))
                g = graph_ms(r, a.advance, a.graph_frames, a.graph_runs)
                show(f"{kind} N={n} it={it} clothsim", g, p)
                res[f"clothsim/{kind}/{n}/{it}"] = {
                    "graph_ms": g, "kernels": p, "advance": a.advance,
                    "launch": {k: getattr(_vbd, k, None) for k in ("TILE_MAX_VERTICES", "TILE_MAX_CONTACT_VERTICES",
                                                                  "BLOCK_DIM", "CONTACT_LANES", "ELASTIC_LANES")}}
                sim.release()
                if a.no_newton:
                    continue
                nr = newton_runner(sc, mat, sa)
                nr.build(it)
                g = graph_ms(nr, a.advance, a.graph_frames, a.graph_runs)
                kw = dict(device=a.device, substeps=sa.substeps, iterations=it, ground=sc.ground,
                          self_collision=sc.self_collision, **nr.buffers)
                plain = NewtonCloth(sc.vertices, sc.triangles, sc.pins, mat, graph=False, **kw)
                for _ in range(max(a.advance, 2)):
                    plain.step()
                p = profile(wp, plain.step)
                show(f"{kind} N={n} it={it} newton", g, p)
                res[f"newton/{kind}/{n}/{it}"] = {"graph_ms": g, "graph_captured": nr.cloth.graph is not None,
                                                  "capture_error": getattr(nr.cloth, "capture_error", None),
                                                  "kernels": p, "advance": max(a.advance, 2)}
    save_json(a.json, res)
    print(f"JSON: {a.json}")


if __name__ == "__main__":
    main()

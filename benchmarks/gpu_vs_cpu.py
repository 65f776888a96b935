"""CUDA vs CPU agreement of the VBD solver on the same cloth (correctness check for the GPU path).

Runs a pinned cloth on both devices with the same settings and prints the largest position
difference; then, on CUDA, the error-versus-iterations curve against a 1000-iteration reference.
    python benchmarks/gpu_vs_cpu.py [--n 24] [--frames 10]
"""

import argparse
import json
import os

import numpy as np
import warp as wp

import clothsim as cs


def run(device, iterations, n, frames):
    c = cs.Cloth.grid(size=(1.0, 1.0), resolution=(n, n), fabric="cotton", center=(0, 1, 0), plane="xz")
    c.pin(c.boundary("top"))
    sim = cs.Simulator(c, device=device, iterations=iterations)
    sim.step(frames)
    x = sim.positions()
    sim.release()
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    out = {"n": a.n, "frames": a.frames}
    xc = run("cpu", 10, a.n, a.frames)
    xg = run("cuda:0", 10, a.n, a.frames)
    out["max_abs_diff_cpu_cuda_10it"] = float(np.abs(xc - xg).max())
    xg2 = run("cuda:0", 10, a.n, a.frames)
    out["cuda_run_to_run_max_diff"] = float(np.abs(xg - xg2).max())
    ref = run("cuda:0", 1000, a.n, a.frames)
    curve = {}
    for it in (1, 2, 4, 8, 16, 32, 100):
        curve[it] = float(np.sqrt(((run("cuda:0", it, a.n, a.frames) - ref) ** 2).sum(1).mean()))
    out["cuda_rms_error_vs_1000it"] = curve
    print(json.dumps(out, indent=1))
    if a.json:
        os.makedirs(os.path.dirname(a.json) or ".", exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    wp.config.quiet = True
    main()

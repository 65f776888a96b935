"""How fast Newton's SolverVBD lets a dropped sheet fall with self contact on, per self-contact detection schedule
and iteration count: its conservative bound truncates each vertex's move since the last detection, so the
schedule (NewtonCloth(self_contact_detection=): Newton's default "pre-post-init" detects twice a substep,
"pre-init" once, as clothsim does) sets the speed cap. A 6 x 6 sheet 0.2 m wide, no ground, the fold's N = 1024
contact (0.75 mm + 0.75 mm), 10 substeps; the speed is the mean fall over the 24th frame. Prints a table and
writes JSON. Needs the newton package (.venv-newton here, or the GPU machine).

    .venv-newton/bin/python benchmarks/newton_cap.py --json out/newton_cap.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import newton_side as ns


def dropped_sheet(n: int = 6, width: float = 0.2):
    g = np.linspace(0.0, width, n)
    verts = np.array([(x, 1.0, z) for z in g for x in g])
    tris = np.array([t for j in range(n - 1) for i in range(n - 1) for t in
                     ((j * n + i, j * n + i + 1, (j + 1) * n + i + 1), (j * n + i, (j + 1) * n + i + 1, (j + 1) * n + i))])
    return verts, tris


def fall_speed(mode: str, iterations: int, device: str = "cpu", frames: int = 24) -> tuple[float, float]:
    """(measured speed over the last frame, NewtonCloth.max_self_contact_speed()) [m/s]."""
    verts, tris = dropped_sheet()
    mat = ns.BenchMaterial(thickness=0.00075, contact_gap=0.00075)
    cloth = ns.NewtonCloth(verts, tris, np.array([], int), mat, device=device, substeps=10, iterations=iterations,
                           self_collision=True, graph=False, self_contact_detection=mode)
    cloth.step(frames - 1)
    y0 = cloth.positions()[:, 1].mean()
    cloth.step(1)
    return float((y0 - cloth.positions()[:, 1].mean()) / ns.FRAME_DT), float(cloth.max_self_contact_speed())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--iterations", default="1,2,4,10,30,100")
    ap.add_argument("--json", default="out/bench/newton_cap.json")
    a = ap.parse_args(argv)
    rows = []
    for mode in ns.SELF_CONTACT_DETECTION:
        for it in (int(s) for s in a.iterations.split(",")):
            v, cap = fall_speed(mode, it, a.device)
            rows.append({"self_contact_detection": mode, "iterations": it, "fall_speed_m_s": v, "max_m_s": cap})
            print(f"{mode} it={it}: {v:.4f} m/s (allowed {cap:.4f})", file=sys.stderr, flush=True)
    from clothsim.io import write_json

    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    write_json(a.json, {"device": a.device, "rows": rows})
    print("\n| detection | iterations | fall speed [m/s] | NewtonCloth.max_self_contact_speed() [m/s] |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['self_contact_detection']} | {r['iterations']} | {r['fall_speed_m_s']:.4f} | {r['max_m_s']:.4f} |")
    print(f"\nJSON: {a.json}")


if __name__ == "__main__":
    main()

"""Before/after frame time of two clothsim source trees, side by side in one run.

A speed change is measured against the code it replaces on the same machine in the same run:
``--a`` and ``--b`` are project roots (e.g. a ``git worktree`` of the old commit and this checkout).
Each round runs one worker process per tree, alternating A, B, A, B, ... so that drifts of the
machine hit both; a worker times sim_grid's pinned cloth (``Scene("pinned", N)``, the benchmark's
solver settings) for each size and iteration count: median of ``--runs`` runs of ``--frames`` frames
after a warm-up frame; with ``--folds 64`` sim_grid's fold (self contact, its first guess, ``--self-contact-bound``):
median of ``--runs`` runs of the first ``--frames`` frames from the start, after an untimed run of them (the
contact lists grow there); and with ``--drapes tshirt:1,...`` a shipped scene's drape at one level (the scene's
solver settings, from the start): ``--runs`` consecutive blocks of ``--frames`` frames after
``--warmup-frames``. The table gives the median over rounds for each tree and the ratio B/A.

    python benchmarks/ab_frame.py --a /tmp/base --b . --device cuda:0 --sizes 128,256 \\
        --iterations 1,2,4,10 --chebyshev-delay 0 --json out/bench/ab_frame.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(a) -> None:
    """Time the cases with the clothsim found at ``a.root`` and print one JSON line."""
    sys.path.insert(0, os.path.abspath(a.root))
    sys.path.insert(0, HERE)
    import warp as wp

    wp.config.quiet = True
    import clothsim as cs
    from newton_side import time_frames
    from sim_grid import ClothsimRunner, Scene, initial_guess_for, material_from, parse_args, timing

    from clothsim.scene import Drape

    assert os.path.dirname(os.path.abspath(cs.__file__)) == os.path.join(os.path.abspath(a.root), "clothsim"), cs.__file__
    sa = parse_args(["--device", a.device, "--chebyshev-rho", str(a.chebyshev_rho)]
                    + (["--chebyshev-delay", str(a.chebyshev_delay)] if a.chebyshev_delay is not None else [])
                    + (["--initial-guess", a.initial_guess] if a.initial_guess else [])
                    + (["--chebyshev-cap"] if a.chebyshev_cap else ["--no-chebyshev-cap"])
                    + ["--thickness", str(a.thickness), "--contact-margin", str(a.contact_margin)]
                    + a.launch.split())
    import sim_grid

    if hasattr(sim_grid, "apply_launch_options"):  # this tree's benchmarks set the launch constants of the tree timed
        sim_grid.apply_launch_options(sa)
    elif a.launch:
        raise SystemExit("--a-launch / --b-launch need sim_grid.apply_launch_options (session 31)")
    mat = material_from(sa)
    out = {}
    for spec in a.drapes:  # a shipped scene's garments on its avatar at one level, from the start
        name, level = spec.split(":")
        with Drape(cs.load_scene(os.path.join(a.root, "scenes", f"{name}.toml")), level=int(level),
                   refine_from=int(level), device=a.device) as d:
            # no reset: --runs consecutive blocks of the same drape, after --warmup-frames
            out[f"{name}/L{level}"] = time_frames(d.sim.step, lambda: wp.synchronize_device(a.device), a.frames,
                                                  runs=a.runs, warmup_frames=a.warmup_frames)["ms_median"]
    for n in a.sizes:
        sc = Scene(cs, "pinned", n, 1.0, mat)
        r = ClothsimRunner(cs, sc, mat, a.device, sa.substeps, initial_guess_for(sa, "pinned"), sa.chebyshev_rho,
                           sa.membrane_hessian, None, sa.chebyshev_delay, sa.chebyshev_cap)
        for it in a.iterations:
            out[f"{n}/{it}"] = timing(r, it, a.frames, a.runs)["ms_median"]
        r.sim.release()
    for n in a.folds:
        sc = Scene(cs, "fold", n, 1.0, mat)
        r = ClothsimRunner(cs, sc, mat, a.device, sa.substeps, initial_guess_for(sa, "fold"), sa.chebyshev_rho,
                           sa.membrane_hessian, None, sa.chebyshev_delay, sa.chebyshev_cap,
                           self_contact_bound=a.self_contact_bound, deterministic=False if a.no_deterministic else None)
        for it in a.iterations:
            out[f"fold{n}/{it}"] = timing(r, it, a.frames, a.runs)["ms_median"]
        r.sim.release()
    print("AB_RESULT " + json.dumps(out), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", help="project root of the 'before' tree")
    ap.add_argument("--b", help="project root of the 'after' tree")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", default="64", help="comma list of N (sim_grid's pinned cloth; empty: none)")
    ap.add_argument("--drapes", default="", help="comma list of SCENE:LEVEL (e.g. tshirt:1): the shipped scene's "
                    "garments on its avatar at that level, frames after --warmup-frames (e.g. 20, once sewn)")
    ap.add_argument("--warmup-frames", type=int, default=20, help="drapes: untimed frames first")
    ap.add_argument("--iterations", default="1,2,4,10", help="comma list of iterations per substep")
    ap.add_argument("--frames", type=int, default=20, help="frames per timed run")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per case in a worker (median)")
    ap.add_argument("--rounds", type=int, default=3, help="A/B worker pairs (median over rounds)")
    ap.add_argument("--chebyshev-rho", type=float, default=0.93)
    ap.add_argument("--chebyshev-delay", type=int, default=None,
                    help="default: sim_grid's per case (1 for the pinned sheet, 0 for the fold)")
    ap.add_argument("--chebyshev-cap", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--initial-guess", default=None, choices=["inertia", "adaptive", "extrapolate"],
                    help="clothsim's first guess (default: sim_grid's for each scene: extrapolate pinned, inertia fold)")
    ap.add_argument("--folds", default="", help="comma list of N: sim_grid's fold (self contact) at that size")
    ap.add_argument("--self-contact-bound", type=float, default=None,
                    help="folds: Simulator(self_contact_bound=) (default: clothsim's)")
    ap.add_argument("--thickness", type=float, default=3e-3, help="sim_grid's contact thickness [m] (folds)")
    ap.add_argument("--contact-margin", type=float, default=3e-3, help="sim_grid's contact margin [m] (folds)")
    for tag in ("a", "b"):
        ap.add_argument(f"--{tag}-launch", default="",
                        help=f"sim_grid.py launch options for tree {tag.upper()}'s worker only, one string (e.g. "
                        "\"--tile-max-contact-vertices 32768\"; with --a . --b . one tree in two launch shapes)")
    ap.add_argument("--launch", default="", help=argparse.SUPPRESS)
    ap.add_argument("--b-no-deterministic", action="store_true",
                    help="tree B runs with Simulator(deterministic=False) (e.g. --a . --b . to time the list ordering)")
    ap.add_argument("--no-deterministic", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--json", default="out/bench/ab_frame.json")
    a = ap.parse_args(argv)
    a.sizes = [int(s) for s in str(a.sizes).split(",") if s]
    a.iterations = [int(s) for s in str(a.iterations).split(",") if s]
    a.drapes = [s for s in str(a.drapes).split(",") if s]
    a.folds = [int(s) for s in str(a.folds).split(",") if s]
    if a.worker:
        worker(a)
        return 0
    for tag in ("a", "b"):
        root = getattr(a, tag)
        if root is None:
            ap.error(f"--{tag} is required (a project root)")
        if not os.path.isfile(os.path.join(root, "clothsim", "__init__.py")):
            ap.error(f"--{tag} {root!r}: no clothsim/__init__.py there (expected a project root)")
    common = ["--device", a.device, "--sizes", ",".join(map(str, a.sizes)), "--drapes", ",".join(a.drapes),
              "--warmup-frames", str(a.warmup_frames),
              "--iterations", ",".join(map(str, a.iterations)), "--frames", str(a.frames), "--runs", str(a.runs),
              "--chebyshev-rho", str(a.chebyshev_rho)]
    common += ["--chebyshev-delay", str(a.chebyshev_delay)] if a.chebyshev_delay is not None else []
    common += ["--chebyshev-cap" if a.chebyshev_cap else "--no-chebyshev-cap", "--folds", ",".join(map(str, a.folds))]
    common += ["--initial-guess", a.initial_guess] if a.initial_guess else []
    common += ["--self-contact-bound", str(a.self_contact_bound)] if a.self_contact_bound is not None else []
    common += ["--thickness", str(a.thickness), "--contact-margin", str(a.contact_margin)]
    rounds = {"a": [], "b": []}
    for k in range(a.rounds):
        for tag in ("a", "b"):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--root", getattr(a, tag), *common]
            cmd += ["--no-deterministic"] if tag == "b" and a.b_no_deterministic else []
            cmd += [f"--launch={getattr(a, tag + '_launch')}"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            line = next((s for s in p.stdout.splitlines() if s.startswith("AB_RESULT ")), None)
            if p.returncode != 0 or line is None:
                sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
                raise SystemExit(f"worker for --{tag} {getattr(a, tag)} failed (exit {p.returncode})")
            rounds[tag].append(json.loads(line[len("AB_RESULT "):]))
            print(f"round {k + 1} {tag}: " + ", ".join(f"{c} {v:.2f}" for c, v in rounds[tag][-1].items()),
                  file=sys.stderr, flush=True)
    rows = []
    for case in rounds["a"][0]:
        ma = statistics.median(r[case] for r in rounds["a"])
        mb = statistics.median(r[case] for r in rounds["b"])
        n, it = case.split("/")
        if it.startswith("L"):  # a drape: scene name and level
            it = f"level {it[1:]} (scene's)"
        elif n.startswith("fold"):
            n, it = n, int(it)
        else:
            n, it = int(n), int(it)
        rows.append({"N": n, "iterations": it, "a_ms": ma, "b_ms": mb, "ratio_b_over_a": mb / ma,
                     "a_rounds_ms": [r[case] for r in rounds["a"]], "b_rounds_ms": [r[case] for r in rounds["b"]]})
    res = {"a": os.path.abspath(a.a), "b": os.path.abspath(a.b), "device": a.device, "frames": a.frames,
           "runs": a.runs, "rounds": a.rounds, "chebyshev_rho": a.chebyshev_rho,
           "chebyshev_delay": a.chebyshev_delay, "chebyshev_cap": a.chebyshev_cap,
           "initial_guess": a.initial_guess, "b_no_deterministic": a.b_no_deterministic, "thickness": a.thickness,
           "contact_margin": a.contact_margin, "a_launch": a.a_launch, "b_launch": a.b_launch, "rows": rows}
    sys.path.insert(0, HERE)
    from sim_grid import save_json

    save_json(a.json, res)
    print("\n| N | iterations | A ms/frame | B ms/frame | B/A |\n|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['N']} | {r['iterations']} | {r['a_ms']:.3f} | {r['b_ms']:.3f} | {r['ratio_b_over_a']:.3f} |")
    print(f"\nJSON: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

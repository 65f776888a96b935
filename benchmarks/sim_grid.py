"""Simulation benchmark: a square cloth grid, 60 Hz frames, clothsim (and optionally Newton's SolverVBD).

Scenes (both use clothsim's ``Cloth.grid`` mesh, alternate diagonals, L = --size metres):

* ``pinned``: an n x n grid lying flat (plane "xz") at y = 1 m, pinned along its "top" edge
  (the +z row), swinging down under gravity. No ground, no self collision.
* ``fold`` (``--self-collision``): the same grid standing up (plane "xy", tilted 5 degrees about
  its bottom edge), its bottom edge 1 cm above a ground plane at y = 0, free: it drops, buckles
  and piles onto itself. Self collision and ground contact on. The table reports how much of the
  cloth ended up in layers (``folded``) and the triangle-triangle intersections at the end.
  Self-contact pairs closer than the search radius (thickness + contact margin) in the rest shape are
  the flat cloth's own neighbours, not contacts: clothsim always leaves them out, Newton through
  ``particle_rest_shape_contact_exclusion_radius`` (set to the same radius; its default two-ring
  topological filter stays on too).

Output: a markdown table (N, vertices, ms/frame median, p10/p90, substeps/s, ...) printed last,
and JSON (``--json``, default out/bench/sim_grid.json).

``--compare newton`` (needs ``import newton``; e.g. ``.venv-newton`` here, or the GPU machine)
runs Newton's SolverVBD on the same mesh, material, step size and device in the same process:

1. same physics: both solvers at ``--ref-iterations`` (1000) iterations per substep for
   ``--compare-frames`` frames; the RMS distance between the two converged solutions is printed
   (with the RMS displacement from the start, for scale);
2. accuracy vs time: each solver at iterations 1, 2, 4, ... 100 (substeps fixed); error = RMS
   distance to clothsim's converged solution (and to Newton's), time per frame = median of
   ``--runs`` runs; both curves are printed, and for each Newton point the clothsim time needed
   to reach Newton's error (log-log interpolation on clothsim's curve) and the ratio;
3. intersections at the end (``clothsim.collision.count_self_intersections``) for both;
4. with self contact, the pairs Newton's fixed-length lists dropped in each run (``newton_contacts``: longest list,
   buffer, pairs dropped; ``--newton-vertex-buffer`` / ``--newton-edge-buffer`` set its buffers). clothsim's lists
   grow instead (the frame is redone), so it drops none.

``--jacobi`` adds a second clothsim curve, ``Simulator(sweep="jacobi")`` (one launch an iteration
instead of one a colour; ``--jacobi-omega``, ``--jacobi-rho``), measured against the same references,
and prints the time-to-reach tables for each clothsim curve and for the faster of the two at each
Newton point.

The material is isotropic (Newton's membrane has only two Lame parameters); the mapping is in
benchmarks/newton_mapping.md and ``newton_mapping.newton_parameters``.

Examples::

    python benchmarks/sim_grid.py                                   # CPU: N = 32, 64
    python benchmarks/sim_grid.py --device cuda --sizes 64,128,256,512,1024 --self-collision
    .venv-newton/bin/python benchmarks/sim_grid.py --sizes 32 --compare newton
    python benchmarks/sim_grid.py --device cuda:0 --sizes 128,256 --frames 10 --compare newton \
        --jacobi --jacobi-rho 0.96 --ref-iterations 500          # session 15's H200 run
    python benchmarks/sim_grid.py --device cuda:0 --sizes 128 --only-self-collision --compare newton \
        --compare-cases fold --fold-frames 30 --runs 3 --ref-iterations 300 --jacobi --sensitivity \
        --skip-timing                                            # session 16's fold (errors after 12 frames)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reach import print_compare, reach_tables  # noqa: E402
from grid_scenes import Scene, count_intersections, folded_fraction  # noqa: E402
from newton_side import FRAME_DT, BenchMaterial, newton_available  # noqa: E402
from grid_runners import (  # noqa: E402,F401  (trajectory, timing, ...: the other benchmarks import them from here)
    ClothsimRunner,
    NewtonRunner,
    case_chebyshev_delay,
    contact_report,
    describe_contacts,
    timing,
    trajectory,
)

SWEEP = (1, 2, 4, 8, 16, 32, 64, 100)
# the Jacobi curve's settings (--jacobi): on the 2-core CPU, N = 64, 10 frames, error after 1 iteration
# 2.3e-2 m with omega 0.66, 4.3e-2 m with 0.75, 0.62 m with 1; after 8 iterations (omega 0.66) 1.5e-3 m with
# rho 0.93, 1.1e-3 m with 0.96 or 0.97; after 16, 7.9e-5 m with 0.96 and 1.9e-4 m with 0.98
JACOBI_OMEGA = 0.66
JACOBI_RHO = 0.96
# the sensitivity floor: the clothsim reference run again from start positions moved by this RMS-per-axis
# amount (seeded normal); its distance to the reference is how far apart two runs that differ only by
# rounding-sized changes end. No solver can be measured against a reference more finely than that.
SENSITIVITY_M = 1e-6
# the fold's errors are taken after this many frames (its timing still covers --fold-frames): a 1e-6 m change of
# the start grows to 5.6e-4 m by frame 12 and 5.0e-2 m by frame 30 (2-core CPU, N = 24); on the H200 the floor
# after 12 frames was 1.2e-4 m (N = 128) and 8.0e-5 m (N = 256), errors 0.4-1.4 cm
FOLD_COMPARE_FRAMES = 12
# clothsim's Simulator(self_contact_over_face=) for the fold (--over-face-cos). 0 (off): with 0.9 (H200, N = 256,
# session 17) the few-iteration frames were faster (1 / 2 / 4 iterations: 96 / 97 / 101 ms against 175 / 144 / 123,
# fewer tangles) but their errors after 12 frames larger (1.39e-2 / 1.54e-2 / 1.48e-2 m against 9.6e-3 / 9.2e-3 /
# 1.0e-2 m), so no Newton error was reached sooner (results/sim_grid_h200_s17_fold256_ofc09.md)
FOLD_OVER_FACE = 0.0
# clothsim's Simulator(self_contact_bound=) with self collision is its default, 0.4, unless --self-contact-bound.
# The bound caps every vertex's speed at bound × search radius a substep, and in the fold the still-falling part
# reaches that cap; Newton 1.8 caps at 0.5 × its dat_conservative_bound_relaxation (0.85) = 0.425, about 6 %
# faster (2-core CPU, N = 32 fold, 1.5 mm radius: top row 0.383 against 0.355 m/s; out of 0.060 m RMS motion
# after 12 frames the two 4-iteration runs ended 6.8e-3 m apart). NEWTON_SELF_CONTACT_BOUND gives both one bound
# per detection; Newton's default detects twice a substep (clothsim once), which --newton-self-contact-detection
# pre-init changes (benchmarks/newton_cap.py).
NEWTON_SELF_CONTACT_BOUND = 0.425


# --------------------------------------------------------------------------- runners (the classes: grid_runners.py)


def newton_runner(scene, mat, a, **kw) -> NewtonRunner:
    """Newton for one scene, with --newton-vertex-buffer / --newton-edge-buffer / --newton-self-contact-detection /
    --newton-topological-filter when given (else its defaults); ``kw``: NewtonRunner's frame_dt, graph."""
    return NewtonRunner(scene, mat, a.device, a.substeps, a.newton_vertex_buffer, a.newton_edge_buffer,
                        self_contact_detection=getattr(a, "newton_self_contact_detection", None) or "pre-post-init",
                        topological_filter=getattr(a, "newton_topological_filter", None), **kw)


JACOBI = "clothsim_jacobi"


def jacobi_runner(cs, scene, mat, a) -> "ClothsimRunner":
    """clothsim with Jacobi sweeps (``Simulator(sweep="jacobi")``): one launch an iteration instead of one a
    colour, each step scaled by --jacobi-omega, Chebyshev with --jacobi-rho."""
    return clothsim_runner(cs, scene, mat, a, chebyshev_rho=a.jacobi_rho, sweep="jacobi", jacobi_omega=a.jacobi_omega,
                           name=JACOBI)


def clothsim_runner(cs, scene, mat, a, chebyshev_rho: float | None = None, **kw) -> ClothsimRunner:
    """clothsim for one scene with the command line's settings (--over-face-cos and --self-contact-bound apply
    with self collision); ``kw``: the Jacobi curve's sweep, ω and name, or ClothsimRunner's frame_dt."""
    return ClothsimRunner(cs, scene, mat, a.device, a.substeps, initial_guess_for(a, scene.kind),
                          a.chebyshev_rho if chebyshev_rho is None else chebyshev_rho, a.membrane_hessian,
                          a.cpu_threads, chebyshev_delay_for(a, scene.kind), a.chebyshev_cap, over_face=a.over_face_cos,
                          self_contact_bound=a.self_contact_bound, deterministic=a.deterministic,
                          chebyshev_contacts=getattr(a, "chebyshev_contacts", None), **kw)


def chebyshev_delay_for(a, kind: str) -> int:
    """--chebyshev-delay if given, else the case's (grid_runners.case_chebyshev_delay)."""
    return case_chebyshev_delay(kind) if getattr(a, "chebyshev_delay", None) is None else a.chebyshev_delay


def initial_guess_for(a, kind: str) -> str:
    """clothsim's first guess for a scene: --initial-guess if given, else "extrapolate" for the pinned sheet
    (swinging free: 2-core CPU, N = 64, ρ 0.93 after one plain sweep, capped, error after 1 iteration 1.29e-2 m;
    session 10's run from the inertial target with ρ 0.8: 2.82e-2 m) and "inertia" for the fold (self contact feeds the last substep's acceleration back: CPU, N = 32,
    15 frames, error after 1/2/4 iterations 8.5e-2/7.5e-2/2.7e-2 m extrapolated against 2.9e-2/2.6e-2/2.1e-2 m,
    sim_grid_cpu_2core_fold32_s12_*.json)."""
    return a.initial_guess or ("inertia" if kind == "fold" else "extrapolate")


def save_json(path, data) -> None:
    """Write a benchmark's results, atomically (clothsim.io.write_json), creating the folder."""
    from clothsim.io import write_json

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data)


def save_array(path, x) -> None:
    """Write one .npy atomically (temporary name, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, np.asarray(x))
    os.replace(tmp, path)


def _solver_key(a, scene, solver: str, frames: int, reference: bool = False) -> dict:
    """What one solver's trajectories in one case depend on (case, N, size, substeps, reference iterations,
    frames, material, the solver's code: a hash of clothsim's sources, or Newton's version; and for clothsim
    its solver settings, for its Jacobi curve also ω and ρ). ``reference``: the key of clothsim's reference,
    whose first guess --ref-initial-guess may set apart from the sweep's."""
    import hashlib

    key = {"case": scene.kind, "N": scene.n, "size": scene.size, "substeps": a.substeps, "frame_dt": FRAME_DT,
           "ref_iterations": a.ref_iterations, "frames": frames, "material": material_from(a).__dict__,
           "device": a.device.split(":")[0]}
    if solver in ("clothsim", JACOBI):
        src = hashlib.sha256()
        for f in sorted(Path(scene.cs_root).rglob("*.py")):
            src.update(f.read_bytes())
        key |= {"initial_guess": initial_guess_for(a, scene.kind), "chebyshev": [a.chebyshev_rho,
                                                                                  chebyshev_delay_for(a, scene.kind),
                a.chebyshev_cap], "membrane_hessian": a.membrane_hessian, "code": src.hexdigest()}
        over_face = getattr(a, "over_face_cos", FOLD_OVER_FACE) if scene.self_collision else 0.0
        if over_face:  # only when set, so that earlier references keep their names
            key["over_face_cos"] = over_face
        bound = getattr(a, "self_contact_bound", None)
        if bound is not None and scene.self_collision:  # likewise
            key["self_contact_bound"] = bound
        if getattr(a, "chebyshev_contacts", None) is not None and scene.self_collision:  # likewise
            key["chebyshev_contacts"] = a.chebyshev_contacts
        if solver == JACOBI:
            key |= {"sweep": "jacobi", "jacobi": [a.jacobi_omega, a.jacobi_rho]}
        if reference and solver == "clothsim" and getattr(a, "ref_initial_guess", None):
            # only when set, so that earlier references keep their names
            key |= {"initial_guess": a.ref_initial_guess, "ref_initial_guess": True}
    else:
        key["code"] = newton_available()[1]
        for k in ("newton_vertex_buffer", "newton_edge_buffer", "newton_self_contact_detection",
                  "newton_topological_filter"):
            # only when set (earlier names stay valid)
            if getattr(a, k, None) is not None:
                key[k] = getattr(a, k)
        if reference and getattr(a, "newton_ref_initial_guess", None) not in (None, "inertia"):  # likewise
            key["ref_initial_guess"] = a.newton_ref_initial_guess
    return key


def _digest(key: dict) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def ref_cache_path(a, scene, solver: str, frames: int) -> Path | None:
    """Where --ref-cache keeps one solver's converged reference for one case, or None without it.

    The name holds a hash of what the trajectory depends on (``_solver_key``), so a changed setting or solver
    never reuses a stale reference. A long comparison can so be split over several runs (e.g. device calls
    with a time limit): the first computes and stores the references (--references-only), the next loads them."""
    if not a.ref_cache:
        return None
    digest = _digest(_solver_key(a, scene, solver, frames, reference=True))
    return Path(a.ref_cache) / f"ref_{scene.kind}_N{scene.n}_{solver}_it{a.ref_iterations}_f{frames}_{digest}.npy"


def point_cache_path(a, scene, solver: str, frames: int, timed: int, iterations: int) -> Path | None:
    """Where --ref-cache keeps one finished sweep point (its errors against both references, time per frame,
    intersections) as JSON, or None without it: a sweep cut off by a call's time limit resumes from the points
    it finished. The name hashes the solver's key, both references' keys, the iterations, frames, timed frames
    and runs. Points loaded from the cache were timed in an earlier run: the log says so."""
    if not a.ref_cache:
        return None
    key = {"solver": _solver_key(a, scene, solver, frames), "iterations": iterations, "frames": frames,
           "timed_frames": timed, "runs": a.runs,
           "refs": [_digest(_solver_key(a, scene, r, frames, reference=True)) for r in ("clothsim", "newton")]}
    if a.warmup_frames is not None:  # only when set, so that earlier points keep their names
        key["warmup_frames"] = a.warmup_frames
    if getattr(a, "error_starts", 1) > 1:  # likewise
        key["error_starts"] = a.error_starts
    if solver != "newton" and getattr(a, "deterministic", None) is not None:  # likewise; the references do not
        key["deterministic"] = a.deterministic  # depend on it (converged), the timed points do
    return Path(a.ref_cache) / f"point_{scene.kind}_N{scene.n}_{solver}_k{iterations}_f{frames}_{_digest(key)}.json"


def rms(a, b):
    return float(np.sqrt(np.mean(np.sum((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2, axis=1))))


# --------------------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--device", default="cpu", help="warp device: cpu, cuda, cuda:0 (default cpu)")
    ap.add_argument("--sizes", default=None, help="comma list of N (vertices per side); default 32,64 on CPU, "
                    "64,128,256,512,1024 on CUDA")
    ap.add_argument("--size", type=float, default=1.0, help="side length L [m] (default 1)")
    ap.add_argument("--frames", type=int, default=None, help="frames per timed run (default 10 CPU, 60 CUDA)")
    ap.add_argument("--fold-frames", type=int, default=60, help="frames of the self-collision (fold) case; the "
                    "cloth needs about 40 to pile up (default 60)")
    ap.add_argument("--substeps", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median; default 5)")
    ap.add_argument("--newton-vertex-buffer", type=int, default=None,
                    help="Newton's particle_vertex_contact_buffer_size (default: its own, 32); pairs past it are "
                    "dropped by Newton, and counted in the JSON's newton_contacts")
    ap.add_argument("--newton-edge-buffer", type=int, default=None,
                    help="Newton's particle_edge_contact_buffer_size (default: its own, 64)")
    ap.add_argument("--newton-topological-filter", type=int, default=None,
                    help="Newton's particle_topological_contact_filter_threshold: self-contact pairs within this many "
                    "edge rings are left out (default: its own, 2; clothsim filters by rest distance only, "
                    "benchmarks/intersection_pairs.py)")
    ap.add_argument("--newton-self-contact-detection", choices=["pre-post-init", "pre-init"], default=None,
                    help="when Newton detects self contact in a substep: its default pre-post-init detects at the start "
                    "and again at the truncated first guess (a vertex may then move two bounds a substep: twice the "
                    "speed cap); pre-init detects once, at the start, as clothsim does")
    ap.add_argument("--warmup-frames", type=int, default=None,
                    help="frames of the untimed run before each timed sweep point (default: all its timed frames "
                    "with self collision, 1 without); each point's error run has already grown the contact lists")
    ap.add_argument("--self-collision", action="store_true", help="also run the fold case (ground + self collision)")
    ap.add_argument("--only-self-collision", action="store_true", help="run only the fold case")
    ap.add_argument("--compare", choices=["newton"], default=None, help="side-by-side with Newton's SolverVBD")
    ap.add_argument("--compare-sizes", default=None, help="N for the accuracy comparison (default: --sizes)")
    ap.add_argument("--compare-cases", default=None,
                    help="cases for the accuracy comparison: pinned, fold (default pinned on CPU, both on CUDA)")
    ap.add_argument("--compare-frames", type=int, default=None,
                    help=f"simulated frames for the accuracy comparison (default 20 pinned, {FOLD_COMPARE_FRAMES} fold: "
                    "later the fold's buckling is chaotic, see --sensitivity)")
    ap.add_argument("--ref-iterations", type=int, default=1000, help="iterations of the converged reference")
    ap.add_argument("--sweep", default=",".join(map(str, SWEEP)), help="iteration counts of the accuracy sweep")
    ap.add_argument("--ref-cache", default=None, metavar="DIR",
                    help="keep the converged references (.npy) and each finished sweep point (.json) in DIR, named "
                    "by a hash of every setting they depend on, and load them from there when present: a comparison "
                    "too long for one call resumes where the last stopped")
    ap.add_argument("--skip-timing", action="store_true",
                    help="build the solvers but skip the timed table at --iterations (e.g. the second run of a "
                    "comparison split over two)")
    ap.add_argument("--sensitivity", action="store_true",
                    help=f"also run clothsim's reference from start positions moved by {SENSITIVITY_M:g} m (seeded) "
                    "and print how far from the reference it ends: the floor below which errors measure chaos, "
                    "not accuracy (the fold buckles: a small change grows)")
    ap.add_argument("--error-starts", type=int, default=1, metavar="K",
                    help="each sweep point's errors are the mean over K error runs of each solver: from the start and "
                    f"from K - 1 starts moved by {SENSITIVITY_M:g} m (seeds 1 ... K - 1), its intersections the most "
                    "any of them ends with. In the fold's pile a few-iteration run's end moves by millimetres under "
                    "such a rounding-sized change (benchmarks/fold_spread.py), more than the error differences "
                    "between sweep points; the mean is the error a run can be expected to have (default 1: the "
                    "unmoved start alone)")
    ap.add_argument("--references-only", action="store_true",
                    help="compute (or load) the references and the same-physics check, skip the sweep; with "
                    "--ref-cache this splits a long comparison over two runs")
    # material (isotropic); defaults: a cotton-like isotropic fabric
    ap.add_argument("--stretch", type=float, default=250.0, help="E*t [N/m]")
    ap.add_argument("--poisson", type=float, default=0.3)
    ap.add_argument("--bending", type=float, default=10e-6, help="bending rigidity B [N*m]")
    ap.add_argument("--density", type=float, default=0.13, help="areal density [kg/m^2]")
    ap.add_argument("--damping", type=float, default=2e-3, help="stiffness-proportional damping k_d [s]")
    ap.add_argument("--thickness", type=float, default=3e-3, help="contact thickness [m]")
    ap.add_argument("--friction", type=float, default=0.5)
    ap.add_argument("--contact-ke", type=float, default=1.0e4,
                    help="contact penalty stiffness [N/m] (clothsim contact_stiffness = Newton soft_contact_ke)")
    ap.add_argument("--contact-margin", type=float, default=0.003,
                    help="contact search distance beyond the thickness [m] (clothsim contact_margin = "
                    "Newton particle_self_contact_gap; default 3 mm = the thickness, the top of Newton's "
                    "recommended 0.5-1x its interaction distance)")
    ap.add_argument("--bend-calibration", type=float, default=None,
                    help="c in k_e = c B 3|e|^2/(A1+A2) (default: clothsim.model.BENDING_C)")
    ap.add_argument("--initial-guess", choices=["inertia", "adaptive", "extrapolate"], default=None,
                    help="clothsim Simulator(initial_guess=...): where each substep's iterations start (default: "
                    "extrapolate for the pinned sheet, inertia for the fold, see initial_guess_for; sessions "
                    "before 12 used inertia for both, where Newton starts)")
    ap.add_argument("--ref-initial-guess", choices=["inertia", "adaptive", "extrapolate"], default=None,
                    help="first guess of clothsim's reference only (default: the sweep's, --initial-guess): on 1 mm "
                    "edges the pinned sheet's reference from the inertial guess is far from converged after thousands of "
                    "iterations, one from the extrapolated guess much nearer; in the fold the guess changes the fall "
                    "under the self-contact speed bound (benchmarks/ref_convergence.py, session 36)")
    ap.add_argument("--newton-ref-initial-guess", choices=["inertia", "extrapolate"], default=None,
                    help="first guess of Newton's reference only (default inertia, Newton's own; its timed sweep "
                    "always starts there): extrapolate starts Newton's iterations at clothsim's extrapolated guess "
                    "(newton_side.NewtonCloth.set_initial_guess), to check that both solvers' kernels end at the "
                    "same solution when started alike")
    ap.add_argument("--chebyshev-rho", type=float, default=0.93,
                    help="clothsim Simulator(chebyshev_rho=...): Chebyshev acceleration of the iterations "
                    "(default 0.93; 0 = off; sessions before 11 used 0.8 with no delay)")
    ap.add_argument("--chebyshev-delay", type=int, default=None,
                    help="clothsim Simulator(chebyshev_delay=...): plain iterations before the acceleration starts "
                    "(default: 1 for the pinned sheet, 0 for the fold since session 34 (1 before), see "
                    "grid_runners.case_chebyshev_delay)")
    ap.add_argument("--chebyshev-cap", action=argparse.BooleanOptionalAction, default=True,
                    help="clothsim Simulator(chebyshev_cap=...): omega never above its limit 2/(1+sqrt(1-rho^2)) "
                    "(default on since session 12)")
    ap.add_argument("--chebyshev-contacts", choices=["skip", "extrapolate"], default=None,
                    help="clothsim Simulator(chebyshev_contacts=...) with self collision: whether the Chebyshev step "
                    "skips vertices near other cloth (default: the Simulator's, skip, since session 34)")
    ap.add_argument("--membrane-hessian", choices=["neo-hookean", "stvk"], default="neo-hookean",
                    help="clothsim Simulator(membrane_hessian=...) (default neo-hookean: the cloth here swings)")
    ap.add_argument("--jacobi", action="store_true",
                    help="also sweep clothsim with Jacobi iterations (Simulator(sweep='jacobi')) against the same "
                         "references; the tables then give each curve and the faster of the two at each point")
    ap.add_argument("--jacobi-omega", type=float, default=JACOBI_OMEGA,
                    help=f"Simulator(jacobi_omega=...) of the Jacobi curve (default {JACOBI_OMEGA})")
    ap.add_argument("--jacobi-rho", type=float, default=JACOBI_RHO,
                    help=f"Chebyshev rho of the Jacobi curve (default {JACOBI_RHO})")
    ap.add_argument("--tile-max-vertices", type=int, default=None,
                    help="CUDA: colours up to this size get a half warp per vertex (clothsim.solver.vbd."
                    "TILE_MAX_VERTICES)")
    ap.add_argument("--tile-max-contact-vertices", type=int, default=None,
                    help="CUDA: the same for the solve with contact pairs where the contact radius reaches "
                    "clothsim.solver.vbd.TILE_CONTACT_RADIUS_EDGES median edges (clothsim.solver.vbd."
                    "TILE_MAX_CONTACT_VERTICES; under that radius the solve with pairs follows --tile-max-vertices)")
    ap.add_argument("--block-dim", type=int, default=None,
                    help="CUDA: threads per block of the half-warp solve (clothsim.solver.vbd.BLOCK_DIM)")
    ap.add_argument("--cpu-threads", type=int, default=None,
                    help="CPU: threads per colour (Simulator(cpu_threads=); default: the cores, at most 8)")
    ap.add_argument("--contact-lanes", type=int, choices=[16, 32], default=None,
                    help="CUDA: threads per vertex of the solve with contact pairs (clothsim.solver.vbd.CONTACT_LANES)")
    ap.add_argument("--elastic-lanes", type=int, choices=[16, 32], default=None,
                    help="CUDA: threads per vertex of the solve without contact pairs (clothsim.solver.vbd.ELASTIC_LANES)")
    ap.add_argument("--vt-thread-min-vertices", type=int, default=None,
                    help="CUDA: meshes of at least this many vertices search vertex-triangle pairs with one thread a "
                    "vertex (clothsim.collision.self_contact.VT_THREAD_MIN_VERTICES; default 524288)")
    ap.add_argument("--ee-thread-min-edges", type=int, default=None,
                    help="CUDA: meshes of at least this many edges search edge-edge pairs with one thread an edge "
                    "(clothsim.collision.self_contact.EE_THREAD_MIN_EDGES; default 524288)")
    ap.add_argument("--self-contact-bound", type=float, default=None,
                    help="clothsim's Simulator(self_contact_bound=...) with self collision: the fraction of its distance "
                    "to the nearest primitive a vertex may move a substep, which also caps its speed (default: "
                    f"clothsim's, 0.4); {NEWTON_SELF_CONTACT_BOUND} is Newton 1.8's (0.5 x its default "
                    "dat_conservative_bound_relaxation 0.85), for a comparison in which both solvers have one cap")
    ap.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=None,
                    help="clothsim's Simulator(deterministic=...): --no-deterministic leaves the self-contact lists in "
                    "the order their atomic appends arrived in (CUDA: one pass less a list kind, runs not bit-identical "
                    "run to run); default: clothsim's (deterministic)")
    ap.add_argument("--over-face-cos", type=float, default=FOLD_OVER_FACE,
                    help="the fold's Simulator(self_contact_over_face=...): keep a rest-neighbour vertex-triangle pair "
                    "whose vertex has come over the face (cosine of the separation with the face normal at least "
                    f"this; default {FOLD_OVER_FACE} = off)")
    ap.add_argument("--json", default="out/bench/sim_grid.json")
    a = ap.parse_args(argv)
    if a.error_starts < 1:
        ap.error(f"--error-starts {a.error_starts}: at least 1 (the unmoved start)")
    cuda = a.device.startswith("cuda")
    a.sizes = [int(s) for s in (a.sizes or ("64,128,256,512,1024" if cuda else "32,64")).split(",") if s]
    a.compare_sizes = [int(s) for s in a.compare_sizes.split(",")] if a.compare_sizes else a.sizes
    a.frames = a.frames or (60 if cuda else 10)
    a.compare_cases = (a.compare_cases or ("pinned,fold" if cuda else "pinned")).split(",")
    a.sweep = [int(s) for s in a.sweep.split(",") if s]
    return a


def apply_launch_options(a):
    """Set clothsim's CUDA launch shape from --tile-max-vertices, --tile-max-contact-vertices, --block-dim,
    --contact-lanes, --elastic-lanes (module constants of clothsim.solver.vbd, read when a frame is captured);
    returns that module."""
    from clothsim.solver import vbd as _vbd

    from clothsim.collision import self_contact as _sc

    for opt, name in (("tile_max_vertices", "TILE_MAX_VERTICES"), ("tile_max_contact_vertices", "TILE_MAX_CONTACT_VERTICES"),
                      ("block_dim", "BLOCK_DIM"), ("contact_lanes", "CONTACT_LANES"), ("elastic_lanes", "ELASTIC_LANES")):
        if getattr(a, opt, None) is not None:
            setattr(_vbd, name, getattr(a, opt))
    for opt, name in (("vt_thread_min_vertices", "VT_THREAD_MIN_VERTICES"), ("ee_thread_min_edges", "EE_THREAD_MIN_EDGES")):
        if getattr(a, opt, None) is not None:
            setattr(_sc, name, getattr(a, opt))
    return _vbd


def material_from(a) -> BenchMaterial:
    c = a.bend_calibration
    if c is None:
        from clothsim.model import BENDING_C

        c = float(BENDING_C)
    return BenchMaterial(stretch=a.stretch, poisson=a.poisson, shear=None, bending=a.bending, density=a.density,
                         damping=a.damping, thickness=a.thickness, friction=a.friction, contact_ke=a.contact_ke,
                         contact_gap=a.contact_margin, bend_calibration=c)


def compare_case(cs, scene, mat, a, log, runners=None, progress=None):
    """Same-physics check, accuracy-vs-time sweep and intersections for one scene (``runners``: the
    timing phase's, reused so that Newton's model, slow to build at N = 1024, is built once; ``progress``
    is called with the partial result after the references and after each sweep point)."""
    frames = a.compare_frames or (min(FOLD_COMPARE_FRAMES, a.fold_frames) if scene.kind == "fold" else 20)
    runners = dict(runners or {
        "clothsim": clothsim_runner(cs, scene, mat, a),
        "newton": newton_runner(scene, mat, a)})
    if a.jacobi:  # clothsim's Jacobi sweep as a second curve, measured against the same references
        runners = {"clothsim": runners["clothsim"], JACOBI: jacobi_runner(cs, scene, mat, a), "newton": runners["newton"]}
    # time per frame over the whole case (the fold's --fold-frames, its pile-up included) even when the error
    # is taken earlier (--compare-frames)
    timed = max(frames, a.fold_frames) if scene.kind == "fold" else frames
    out = {"frames": frames, "timed_frames": min(timed, a.frames), "ref_iterations": a.ref_iterations, "sweep": {},
           "error_starts": a.error_starts,
           "reference_initial_guess": {
               "clothsim": getattr(a, "ref_initial_guess", None) or initial_guess_for(a, scene.kind),
               "newton": getattr(a, "newton_ref_initial_guess", None) or "inertia"}}
    progress = progress or (lambda _out: None)
    refs = {}
    ref_runners = dict(runners)
    if getattr(a, "ref_initial_guess", None) and a.ref_initial_guess != initial_guess_for(a, scene.kind):
        # clothsim's reference from its own first guess (--ref-initial-guess): at 1 mm edges sweeps from the
        # inertial guess converge slowly (benchmarks/ref_convergence.py), from the extrapolated one much faster
        ref_runners["clothsim"] = clothsim_runner(cs, scene, mat, argparse.Namespace(
            **(vars(a) | {"initial_guess": a.ref_initial_guess})))
    for name, r in ref_runners.items():
        if name not in ("clothsim", "newton"):  # a variant: the references are Gauss–Seidel's and Newton's
            continue
        path = ref_cache_path(a, scene, name, frames)
        if path is not None and path.exists():
            refs[name] = np.load(path)
            log(f"  [{scene.kind} N={scene.n}] {name} reference ({a.ref_iterations} it, {frames} frames) "
                f"loaded from {path}")
            out.setdefault("references_loaded", {})[name] = str(path)
            continue
        t0 = time.perf_counter()
        guess = getattr(a, "newton_ref_initial_guess", None) if name == "newton" else None
        if guess not in (None, "inertia"):
            r.set_initial_guess(guess)
        try:
            refs[name] = trajectory(r, a.ref_iterations, frames)
        finally:
            if guess not in (None, "inertia"):
                r.set_initial_guess("inertia")  # the timed sweep: Newton as it comes
        log(f"  [{scene.kind} N={scene.n}] {name} reference ({a.ref_iterations} it, {frames} frames) "
            f"{time.perf_counter() - t0:.1f}s")
        rep = contact_report(r)
        if rep is not None:
            out.setdefault("reference_newton_contacts", {})[name] = rep
            log(f"  [{scene.kind} N={scene.n}] {name} reference: {describe_contacts(rep)}")
        if path is not None:
            save_array(path, refs[name])
    disp = rms(refs["clothsim"], scene.vertices)
    agree = rms(refs["clothsim"], refs["newton"])
    out["same_physics"] = {"rms_clothsim_vs_newton_m": agree, "rms_displacement_m": disp,
                           "relative": agree / disp if disp > 0 else None}
    if a.sensitivity:
        t0 = time.perf_counter()
        xp = trajectory(ref_runners["clothsim"], a.ref_iterations, frames, perturb=SENSITIVITY_M)
        out["sensitivity"] = {"perturbation_m": SENSITIVITY_M, "rms_vs_clothsim_ref_m": rms(xp, refs["clothsim"])}
        log(f"  [{scene.kind} N={scene.n}] sensitivity: start moved by {SENSITIVITY_M:g} m ends "
            f"{out['sensitivity']['rms_vs_clothsim_ref_m']:.3e} m from the reference ({time.perf_counter() - t0:.1f}s)")
    out["reference_intersections"] = {k: count_intersections(v, scene.triangles)[0] for k, v in refs.items()}
    if "newton" in runners:
        from newton_mapping import newton_hinges_without_bending

        skipped, hinges = newton_hinges_without_bending(scene.vertices, scene.triangles)
        out["newton_hinges_without_bending"] = {"skipped": skipped, "hinges": hinges}
        if skipped:
            log(f"  [{scene.kind} N={scene.n}] WARNING: Newton's bending skips {skipped} of {hinges} hinges (triangles "
                f"under its 1e-6 m^2 normal threshold, newton_mapping.NEWTON_BEND_EPS): not the same bending")
    sim = getattr(runners["clothsim"], "sim", None)
    cap = getattr(sim, "max_self_contact_speed", None)
    if cap is not None:  # the conservative bound's cap on any vertex (both solvers bound the same kind of way)
        out["speed_cap"] = {"max_self_contact_speed_m_s": cap, "free_fall_reaches_it_s": cap / 9.81,
                            "simulated_s": frames * FRAME_DT, "bound": getattr(sim, "self_contact_bound", 0.4)}
        ncloth = getattr(runners.get("newton"), "cloth", None)
        if ncloth is not None and hasattr(ncloth, "max_self_contact_speed"):
            out["speed_cap"]["newton_max_self_contact_speed_m_s"] = ncloth.max_self_contact_speed()
    progress(out)
    if a.references_only:
        return out
    # point by point, every solver at each iteration count before the next: a run cut off by a time limit keeps
    # comparable points (its partial JSON and the --ref-cache point files)
    for k in a.sweep:
        for name, r in runners.items():
            pts = out["sweep"].setdefault(name, [])
            pcache = point_cache_path(a, scene, name, frames, min(timed, a.frames), k)
            if pcache is not None and pcache.exists():
                pts.append(json.loads(pcache.read_text()) | {"loaded_from": str(pcache)})
                log(f"  [{scene.kind} N={scene.n}] {name} it={k}: loaded from {pcache} (timed in an earlier run)")
            else:
                x = trajectory(r, k, frames)
                rep = contact_report(r)  # of the error run (timing() resets it)
                moved = [trajectory(r, k, frames, perturb=SENSITIVITY_M, seed=seed) for seed in range(1, a.error_starts)]
                tm = timing(r, k, min(timed, a.frames), a.runs, warmup=a.warmup_frames)
                nint, _ = count_intersections(x, scene.triangles)
                pts.append({"iterations": k, "ms_median": tm["ms_median"], "ms_p10": tm["ms_p10"],
                            "ms_p90": tm["ms_p90"], "err_vs_clothsim_ref": rms(x, refs["clothsim"]),
                            "err_vs_newton_ref": rms(x, refs["newton"]), "intersections": nint,
                            "folded": folded_fraction(x, scene.rest_uv, scene.edge)})
                if moved:  # the mean over every start, each run's figures kept beside it
                    runs = [x, *moved]
                    for ref in ("clothsim", "newton"):
                        errs = [rms(y, refs[ref]) for y in runs]
                        pts[-1][f"err_vs_{ref}_ref_runs"] = errs
                        pts[-1][f"err_vs_{ref}_ref"] = float(np.mean(errs))
                    ints = [nint] + [count_intersections(y, scene.triangles)[0] for y in moved]
                    pts[-1]["intersections_runs"] = ints
                    pts[-1]["intersections"] = max(ints)
                if rep is not None:
                    pts[-1]["newton_contacts"] = rep
                if pcache is not None:
                    save_json(pcache, pts[-1])
            nint = pts[-1]["intersections"]
            runs_err = pts[-1].get("err_vs_clothsim_ref_runs")
            log(f"  [{scene.kind} N={scene.n}] {name} it={k}: {pts[-1]['ms_median']:.1f} ms/frame, "
                f"err {pts[-1]['err_vs_clothsim_ref']:.3e} m"
                + (f" (mean of {len(runs_err)} starts: " + ", ".join(f"{e:.3e}" for e in runs_err) + ")"
                   if runs_err else "") + f", intersections {nint}"
                + (f"; {describe_contacts(pts[-1]['newton_contacts'])}" if "newton_contacts" in pts[-1] else ""))
            progress(out)
    out.update(reach_tables(out["sweep"]))
    return out


def main(argv=None):
    a = parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    import warp as wp

    wp.config.quiet = True
    wp.init()
    import clothsim as cs

    mat = material_from(a)
    _vbd = apply_launch_options(a)
    from clothsim.collision import self_contact as _sc
    have_newton, newton_info = newton_available()
    if a.compare == "newton" and not have_newton:
        print(f"--compare newton: the 'newton' package is not importable here ({newton_info}); install it "
              "(pip install newton==1.8.0 warp-lang==1.19.0, e.g. in .venv-newton) or run on the GPU machine. "
              "Running clothsim only.", file=sys.stderr)
    compare = a.compare == "newton" and have_newton
    kinds = ["fold"] if a.only_self_collision else (["pinned", "fold"] if a.self_collision else ["pinned"])
    results = {"device": str(wp.get_device(a.device)), "host": platform.node(), "warp": wp.config.version,
               "newton": newton_info if have_newton else None, "substeps": a.substeps, "iterations": a.iterations,
               "frame_dt": FRAME_DT, "material": mat.__dict__ | {"shear_modulus": mat.shear_modulus},
               "initial_guess": {k: initial_guess_for(a, k) for k in kinds}, "chebyshev_rho": a.chebyshev_rho,
               "chebyshev_delay": {k: chebyshev_delay_for(a, k) for k in kinds}, "chebyshev_cap": a.chebyshev_cap,
               "chebyshev_contacts": a.chebyshev_contacts or "skip",
               "membrane_hessian": a.membrane_hessian, "tile_max_vertices": _vbd.TILE_MAX_VERTICES,
               "tile_max_contact_vertices": _vbd.TILE_MAX_CONTACT_VERTICES,
               "tile_contact_radius_edges": _vbd.TILE_CONTACT_RADIUS_EDGES,
               "block_dim": _vbd.BLOCK_DIM, "cpu_threads": a.cpu_threads, "contact_lanes": _vbd.CONTACT_LANES,
               "elastic_lanes": _vbd.ELASTIC_LANES, "vt_thread_min_vertices": _sc.VT_THREAD_MIN_VERTICES,
               "ee_thread_min_edges": _sc.EE_THREAD_MIN_EDGES,
               "cases": [], "comparisons": []}
    out = Path(a.json)
    for kind in kinds:
        for n in a.sizes:
            scene = Scene(cs, kind, n, a.size, mat)
            frames = a.fold_frames if kind == "fold" else a.frames
            row = {"case": kind, "N": n, "vertices": n * n, "frames": frames}
            runners = [clothsim_runner(cs, scene, mat, a)]
            if compare:
                runners.append(newton_runner(scene, mat, a))
            for r in runners:
                t0 = time.perf_counter()
                try:
                    r.build(a.iterations)
                    build_s = time.perf_counter() - t0
                    if a.skip_timing:
                        row[r.name] = {"build_s": build_s, "skipped": "--skip-timing"}
                        log(f"[{kind} N={n}] {r.name}: built in {build_s:.1f}s (timing skipped)")
                        continue
                    tm = timing(r, a.iterations, frames, a.runs)
                except Exception as exc:  # a case one solver cannot run yet: say so, go on
                    row[r.name] = {"error": f"{type(exc).__name__}: {exc}"}
                    log(f"[{kind} N={n}] {r.name}: FAILED {row[r.name]['error']}")
                    continue
                x = r.positions()  # end of the last timed run
                nint, _ = count_intersections(x, scene.triangles)
                row[r.name] = {"build_s": build_s, **tm, "substeps_per_s": a.substeps * 1000.0 / tm["ms_median"],
                               "intersections": nint, "folded": folded_fraction(x, scene.rest_uv, scene.edge),
                               "finite": bool(np.isfinite(x).all())}
                if r.name == "newton":
                    row[r.name]["cuda_graph"] = r.cloth.graph is not None
                    rep = contact_report(r)  # the last timed run's
                    if rep is not None:
                        row[r.name]["newton_contacts"] = rep
                        log(f"[{kind} N={n}] newton: {describe_contacts(rep)}")
                    if r.cloth.graph is None and getattr(r.cloth, "capture_error", None):
                        row[r.name]["capture_error"] = r.cloth.capture_error
                        log(f"[{kind} N={n}] newton: no CUDA graph ({r.cloth.capture_error})")
                log(f"[{kind} N={n}] {r.name}: {tm['ms_median']:.1f} ms/frame (p10 {tm['ms_p10']:.1f}, "
                    f"p90 {tm['ms_p90']:.1f}), build {build_s:.1f}s, intersections {nint}")
            results["cases"].append(row)
            if compare and n in a.compare_sizes and kind in a.compare_cases and not any(
                    "error" in row.get(k, {}) for k in ("clothsim", "newton")):
                def progress(part, kind=kind, n=n):  # partial results survive a run cut off by a time limit
                    save_json(out, results | {"partial": True,
                                              "comparisons": results["comparisons"] + [part | {"case": kind, "N": n}]})

                res = compare_case(cs, scene, mat, a, log, runners={r.name: r for r in runners}, progress=progress)
                res.update(case=kind, N=n)
                results["comparisons"].append(res)
            save_json(out, results | {"partial": True})

    save_json(out, results)

    pr = print
    pr(f"\n## sim_grid: {results['device']}, {a.substeps} substeps x {a.iterations} iterations, 60 Hz frames, "
       f"median of {a.runs} runs\n")
    head = "| case | N | vertices | frames | clothsim ms/frame | p10 | p90 | substeps/s | intersections | folded |"
    sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    if compare:
        head += " Newton ms/frame | p10 | p90 | substeps/s | intersections | folded | clothsim/Newton |"
        sep += "---:|---:|---:|---:|---:|---:|---:|"
    pr(head)
    pr(sep)
    def cells(d):
        if "error" in d:
            return f" failed: {d['error'][:60]} | - | - | - | - | - |"
        if "skipped" in d:
            return " skipped | - | - | - | - | - |"
        return (f" {d['ms_median']:.1f} | {d['ms_p10']:.1f} | {d['ms_p90']:.1f} | {d['substeps_per_s']:.0f} | "
                f"{d['intersections']} | {d['folded']:.2f} |")

    for row in results["cases"]:
        c = row["clothsim"]
        line = f"| {row['case']} | {row['N']} | {row['vertices']} | {row['frames']} |" + cells(c)
        if compare:
            w = row["newton"]
            ratio = "-" if {"error", "skipped"} & (set(c) | set(w)) else f"{c['ms_median'] / w['ms_median']:.2f}"
            line += cells(w) + f" {ratio} |"
        pr(line)
    for res in results["comparisons"]:
        scene_stub = type("S", (), {"kind": res["case"], "n": res["N"]})
        print_compare(scene_stub, res, pr)
    pr(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

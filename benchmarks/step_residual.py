"""How converged one implicit step is, judged the same way for clothsim and for Newton's SolverVBD: both take one
substep of length h from one shared state (x_t, v_t) at several iteration counts, and each end point x is scored
by the residual of the step's equations, the gradient of the incremental potential

    G(x) = sum_i m_i/(2h^2) |x_i - y_i|^2 + E_membrane(x) + E_bending(x) + E_damping(x; x_t) (+ ground),
    y = x_t + h v_t + h^2 g,

evaluated with clothsim's own element code (kernels.vertex_local and vertex_elastic: the material both solvers are
configured for, benchmarks/newton_mapping.md). Per free vertex the force f_i = -dG/dx_i and its block step
H_i^-1 f_i (how far a Newton step on that vertex alone would move it); the table prints the RMS of |f_i| over the RMS
of the weights |m_i g| (0 at the exact solution, 1 = a force the size of gravity left unbalanced) and the RMS block
step in metres, and each end point's RMS distance to clothsim's end point at the largest iteration count.

Why: sim_grid.py measures errors against each solver's 500- or 1000-iteration reference, and at 1 mm edges those
references disagree by several mm (benchmarks/ref_convergence.py). Which of them solves the equations is a question
for the residual, not for either solver. The scene is sim_grid's (--case pinned or fold). The force residual
leaves out the self-contact pairs and does not vanish where the self-contact speed bound truncates a step (the
fold's fall), so a third column scores the end point as the solver's own fixed point: the projected step, one
Jacobi sweep of clothsim's solve kernel from x with the contacts, crossing planes and bound of a substep
(projected_step); it equals the block step where nothing binds, and is rounded to float32's spacing of the
positions (6e-8 m at 1 m) where it is smaller.
The shared state is clothsim's after --compare-frames frames at sim_grid's --iterations (pass e.g. --iterations 500
for a smooth one). With --trajectory there is no shared state: each solver runs the whole --compare-frames frames at
each iteration count (what sim_grid's references are) and its own last substep is scored, i.e. how far each
solver's reference is from solving its last step. Every other option is sim_grid.py's.

    python benchmarks/step_residual.py --iterations-list 1,4,16,64,256,1000 --sizes 64 --size 0.0656 \\
        --compare-frames 5 --json out/step_residual.json                     # clothsim only
    .venv-newton/bin/python benchmarks/step_residual.py --newton ...          # and Newton
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import warp as wp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import clothsim as cs  # noqa: E402
import sim_grid as sg  # noqa: E402
from clothsim.solver import kernels as K  # noqa: E402
from grid_scenes import Scene  # noqa: E402

wp.set_module_options({"enable_backward": False})


@wp.kernel
def step_residual_kernel(
    x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3),
    normals: wp.array(dtype=wp.vec3), theta_prev: wp.array(dtype=float),
    # SolverVBD.element_args
    mass: wp.array(dtype=float), vertex_area: wp.array(dtype=float), vertex_cloth: wp.array(dtype=wp.int32),
    tri: wp.array(dtype=wp.vec3i), tri_dm_inv: wp.array(dtype=wp.mat22), tri_area: wp.array(dtype=float),
    v_tri_offsets: wp.array(dtype=wp.int32), v_tri: wp.array(dtype=wp.int32),
    bend: wp.array(dtype=wp.vec4i), bend_k: wp.array(dtype=float), bend_rest: wp.array(dtype=float),
    v_bend_offsets: wp.array(dtype=wp.int32), v_bend: wp.array(dtype=wp.int32),
    spring: wp.array(dtype=wp.vec2i), spring_k: wp.array(dtype=float), v_spring_offsets: wp.array(dtype=wp.int32),
    v_spring: wp.array(dtype=wp.int32),
    mat_coef: wp.array(dtype=wp.vec4), mat_damping: wp.array(dtype=float), mat_friction: wp.array(dtype=float),
    mat_thickness: wp.array(dtype=float),
    h: float, drag: float, wind: wp.vec3, ground_enabled: int, ground_height: float,
    contact_stiffness: float, contact_damping: float, friction_eps: float, nh_block: int,
    c_point: wp.array(dtype=wp.vec3), c_normal: wp.array(dtype=wp.vec3), c_vel: wp.array(dtype=wp.vec3),
    c_active: wp.array(dtype=wp.int32), slots: int,
    inv_mass: wp.array(dtype=float), force: wp.array(dtype=wp.vec3), step: wp.array(dtype=wp.vec3),
):
    """f_i = −∂G/∂x_i at x and the block step H_i⁻¹f_i, as the solve kernel forms them (no contact pairs)."""
    i = wp.tid()
    if inv_mass[i] == 0.0:
        force[i] = wp.vec3(0.0)
        step[i] = wp.vec3(0.0)
        return
    ci = vertex_cloth[i]
    fe, He = K.vertex_elastic(i, 0, 1, x, x_prev, theta_prev, tri, tri_dm_inv, tri_area, v_tri_offsets, v_tri, bend,
                              bend_k, bend_rest, v_bend_offsets, v_bend, mat_coef[ci], mat_damping[ci] / h, nh_block)
    fl, Hl = K.vertex_local(i, x, x_prev, y, normals, mass, vertex_area, spring, spring_k, v_spring_offsets, v_spring,
                            h, drag, wind, ground_enabled, ground_height, mat_thickness[ci], contact_stiffness,
                            mat_friction[ci], friction_eps, contact_stiffness * contact_damping, c_point, c_normal,
                            c_vel, c_active, slots)
    f = fe + fl
    dx, ok = K.block_step(He + Hl, f)
    force[i] = f
    step[i] = dx


def _substep(sim, x_t, v_t, x):
    """The substep (x_t, v_t) -> x of ``sim``'s cloth as predict_kernel sets it up: (h, free-vertex mask, gravity,
    x_t, x as float32 (N, 3), the inertial target y = x_t + h·v_t + h²·g, pinned vertices held at x_t)."""
    m = sim.solver.model
    n = m.particle_count
    h = sim.dt / sim.substeps
    free = m.inv_mass.numpy() > 0.0
    x_t, v_t, x = (np.asarray(a, dtype=np.float32).reshape(n, 3) for a in (x_t, v_t, x))
    g = np.asarray(sim.gravity, dtype=np.float32)
    y = np.where(free[:, None], x_t + h * v_t + (h * h) * g, x_t).astype(np.float32)
    return h, free, g, x_t, x, y


def step_residual(sim, x_t, v_t, x) -> dict:
    """The residual of the substep (x_t, v_t) -> x of ``sim``'s cloth (a clothsim Simulator: its model, material and
    step length h = dt / substeps): {"force_rel": RMS |f_i| / RMS |m_i g|, "step_m": RMS |H_i⁻¹ f_i|,
    "step_max_m": max |H_i⁻¹ f_i|, "boundary_rel" / "interior_rel": RMS of |f_i| / (m_i g) on the mesh's boundary /
    inside it, "boundary_share": the boundary's share of Σ|f_i|²} over the free vertices."""
    solver, m = sim.solver, sim.solver.model
    dev = m.device
    n = m.particle_count
    h, free, g, x_t, x, y = _substep(sim, x_t, v_t, x)
    xa, xpa, ya = (wp.array(a, dtype=wp.vec3, device=dev) for a in (x, x_t, y))
    theta = wp.zeros(len(m.host_bend), dtype=float, device=dev)
    normals = wp.zeros(n, dtype=wp.vec3, device=dev)
    if len(m.host_bend):
        wp.launch(K.edge_angles_kernel, len(m.host_bend), inputs=[len(m.host_bend), 1, xpa, m.bend, theta], device=dev)
    wp.launch(K.vertex_normals_kernel, n, inputs=[xpa, m.tri, m.v_tri_offsets, m.v_tri], outputs=[normals], device=dev)
    force = wp.zeros(n, dtype=wp.vec3, device=dev)
    stepv = wp.zeros(n, dtype=wp.vec3, device=dev)
    elements = solver.element_args(h, len(solver.colliders))
    wp.launch(step_residual_kernel, n, inputs=[xa, xpa, ya, normals, theta, *elements, m.inv_mass],
              outputs=[force, stepv], device=dev)
    f, d = force.numpy()[free].astype(np.float64), stepv.numpy()[free].astype(np.float64)
    weight = m.mass.numpy()[free].astype(np.float64) * float(np.linalg.norm(g))
    fl, dl = np.linalg.norm(f, axis=1), np.linalg.norm(d, axis=1)
    # where the residual sits: on the mesh's boundary (vertices of edges with one triangle) or inside, each vertex's
    # |f_i| over its own weight (boundary vertices carry half or a quarter of an inner one's)
    tri = m.tri.numpy()
    e = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1)
    uniq, count = np.unique(e, axis=0, return_counts=True)
    rim = np.zeros(n, dtype=bool)
    rim[uniq[count == 1].ravel()] = True
    rim = rim[free]
    per = fl / weight
    return {"force_rel": float(np.sqrt(np.mean(fl ** 2)) / np.sqrt(np.mean(weight ** 2))),
            "step_m": float(np.sqrt(np.mean(dl ** 2))), "step_max_m": float(dl.max()),
            "boundary_rel": float(np.sqrt(np.mean(per[rim] ** 2))) if rim.any() else 0.0,
            "interior_rel": float(np.sqrt(np.mean(per[~rim] ** 2))) if (~rim).any() else 0.0,
            "boundary_share": float(np.sum(fl[rim] ** 2) / max(np.sum(fl ** 2), 1e-300))}


def projected_step(sim, x_t, v_t, x) -> dict:
    """The step's residual as the solver's own projected block step: one Jacobi sweep of clothsim's solve kernel
    from x (every free vertex x_i ← bounded(x_i + H_i⁻¹ f_i) against the old x, with the contact pairs found by a
    detection at x_t, the crossing planes and the self-contact bound, as in a substep), written to a scratch array
    and compared with x: {"projected_m": RMS |x_out − x|, "projected_max_m": max} over the free vertices. 0 at a
    fixed point of the bounded iteration, which is what a truncated step (the fold's speed bound) converges to:
    there the force residual does not vanish by design. Needs a scene without colliders (sim_grid's); overwrites
    ``sim``'s per-substep scratch (first guess, targets, angles, contact lists), which its next step() rebuilds."""
    solver, m = sim.solver, sim.solver.model
    if solver.colliders:
        raise ValueError("projected_step: a simulator with colliders (their contact planes are not refreshed here)")
    if float(sim.jacobi_omega) != 1.0:
        raise ValueError(f"projected_step: jacobi_omega {sim.jacobi_omega} scales the step; build the judge with 1")
    dev = m.device
    n = m.particle_count
    h, free, _g, x_t, x, y = _substep(sim, x_t, v_t, x)
    solver.x_prev.assign(x_t)
    solver.y.assign(y)
    nbend = len(m.host_bend)
    if nbend:
        wp.launch(K.edge_angles_kernel, nbend, inputs=[nbend, 1, solver.x_prev, m.bend, solver.theta_prev], device=dev)
    wp.launch(K.vertex_normals_kernel, n, inputs=[solver.x_prev, m.tri, m.v_tri_offsets, m.v_tri],
              outputs=[solver.normals], device=dev)
    sc = solver.self_contacts
    if sc is not None:
        sc.detect(solver.x_prev, rebuild=True)
        while sc.detector.overflowed():
            sc.detector.grow()
            sc.detect(solver.x_prev, rebuild=True)
    xin = wp.array(x, dtype=wp.vec3, device=dev)
    xout = wp.zeros_like(xin)
    jac = (xin, xout, 1.0)
    if dev.is_cpu:
        solver._solve_cpu(solver._solve_args(sim.state, h, 0, jac), 0, solver._free_count, solver._cpu_threads(),
                          split=True, site="residual")
    else:
        solver._solve_color(sim.state, 0, solver._free_count, h, 0, jacobi=jac)
    dl = np.linalg.norm((xout.numpy() - x)[free].astype(np.float64), axis=1)
    return {"projected_m": float(np.sqrt(np.mean(dl ** 2))), "projected_max_m": float(dl.max())}


def parse_counts(text: str) -> list[int]:
    try:
        counts = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise SystemExit(f"--iterations-list: {text!r} is not a comma list of positive iteration counts")
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(add_help=False, description=" ".join(__doc__.split("\n\n")[0].split()),
                                 epilog="Every other option is sim_grid.py's (below).")
    ap.add_argument("--iterations-list", default="1,4,16,64,256,1000",
                    help="comma list of iteration counts for the one substep (default 1,4,16,64,256,1000)")
    ap.add_argument("--newton", action="store_true", help="also Newton's SolverVBD (needs newton importable)")
    ap.add_argument("--trajectory", action="store_true",
                    help="score each solver's own last substep after --compare-frames frames at each count (a "
                    "reference's residual) instead of one substep from a shared state")
    ap.add_argument("--case", choices=["pinned", "fold"], default="pinned", help="sim_grid's scene (default pinned)")
    own, rest = ap.parse_known_args(argv)
    if {"-h", "--help"} & set(rest):
        ap.print_help()
        print()
    counts = parse_counts(own.iterations_list)
    if own.newton and not sg.newton_available()[0]:
        raise SystemExit(f"--newton: Newton is not importable here ({sg.newton_available()[1]})")
    a = sg.parse_args(rest)
    mat = sg.material_from(a)
    n = a.sizes[0]
    frames = a.compare_frames or 5
    scene = Scene(cs, own.case, n, a.size, mat)
    h = sg.FRAME_DT / a.substeps
    x_t = v_t = None
    if not own.trajectory:  # the shared start: clothsim's state after ``frames`` frames at --iterations
        t0 = time.perf_counter()
        start = sg.clothsim_runner(cs, scene, mat, a)
        start.build(a.iterations)
        start.reset()
        for _ in range(frames):
            start.step()
        x_t, v_t = start.positions(), start.velocities()
        print(f"start: clothsim after {frames} frames at {a.iterations} iterations "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
    # one substep of length h per step() call
    one = argparse.Namespace(**(vars(a) | {"substeps": 1}))
    runners = {"clothsim": sg.clothsim_runner(cs, scene, mat, one, frame_dt=h)}
    if own.newton:
        runners["newton"] = sg.newton_runner(scene, mat, one, frame_dt=h)
    ends, rows = {}, []
    judge = None
    for name, r in runners.items():
        for k in counts:
            r.build(k)
            r.reset()
            t0 = time.perf_counter()
            if own.trajectory:  # the solver's own trajectory up to its last substep (frames x substeps steps of h)
                for _ in range(frames * a.substeps - 1):
                    r.step()
                xs, vs = r.positions(), r.velocities()
            else:
                xs, vs = x_t, v_t
                r.set_state(x_t, v_t)
            r.step()
            r.sync()
            secs = time.perf_counter() - t0
            ends[(name, k)] = x = r.positions()
            if judge is None:
                judge = runners["clothsim"].sim  # clothsim's model and material score every end point
            res = step_residual(judge, xs, vs, x) | projected_step(judge, xs, vs, x)
            rows.append({"solver": name, "iterations": k, "seconds": secs,
                         "rms_move_m": sg.rms(x, xs), **res})
            print(f"{name} {k} it: force residual {res['force_rel']:.3e} of the weight, block step "
                  f"{res['step_m']:.3e} m (max {res['step_max_m']:.3e}), projected step {res['projected_m']:.3e} m",
                  flush=True)
    best = ends[("clothsim", max(counts))]
    for row in rows:
        row["rms_to_clothsim_best_m"] = sg.rms(ends[(row["solver"], row["iterations"])], best)
    what = (f"each solver's own last substep of {h * 1e3:.3f} ms after {frames} frames" if own.trajectory else
            f"one substep of {h * 1e3:.3f} ms from clothsim's state after {frames} frames at {a.iterations} iterations")
    print(f"\n{own.case} N = {n}, {a.size:g} m ({a.size / (n - 1) * 1e3:.3f} mm edges), {what}, on {a.device}\n")
    print("| solver | iterations | force residual / weight | on the boundary / inside (per vertex) | boundary's share "
          "| RMS block step [m] | max block step [m] | RMS projected step [m] | "
          f"RMS distance to clothsim at {max(counts)} it [m] | RMS move in the substep [m] |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['solver']} | {row['iterations']} | {row['force_rel']:.3e} | {row['boundary_rel']:.3g} / "
              f"{row['interior_rel']:.3g} | {row['boundary_share']:.2f} | {row['step_m']:.3e} | "
              f"{row['step_max_m']:.3e} | {row['projected_m']:.3e} | {row['rms_to_clothsim_best_m']:.3e} | "
              f"{row['rms_move_m']:.3e} |")
    sg.save_json(a.json, {"case": own.case, "N": n, "size_m": a.size, "frames": frames, "device": a.device,
                          "substep_s": h, "trajectory": own.trajectory,
                          "start_iterations": None if own.trajectory else a.iterations, "rows": rows})
    print(f"\nJSON: {a.json}")


if __name__ == "__main__":
    main()

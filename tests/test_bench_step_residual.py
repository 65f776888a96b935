"""benchmarks/step_residual.py: the residual of one implicit substep, scored with clothsim's element code.

- exactness: a sheet in its rest shape carried rigidly to the inertial target y = x_t + h·v_t + h²·g (no strain,
  no strain change, no bend) leaves no force: the residual is 0 to float32 rounding (2.5e-3 of the weight); moved
  by 1 mm off y it is m/h²·1 mm per vertex, 0.37 of the weight at h = 1/600 s (m/h²·d / (m·g) = d/(h²·g)), on
  the mesh's rim as inside, the rim's share of Σ|f|² being its share of Σm².
- convergence: from a shared moving state, clothsim's substep leaves a residual that falls as the iterations grow
  (12 x 12 sheet of 0.3 m; on this CPU 1.9 of the weight after 1 iteration, 7.5e-3 from 64 on, the float32 floor).
- the projected step (one Jacobi sweep of the solve kernel from the end point, bound and contacts included) is the
  block step H⁻¹f where nothing binds (the pinned sheet, 1 iteration: the same to 1 %); on the fold (ground, self
  contact, speed bound; each solver's own last substep, --trajectory) it falls with the iterations too.
- a malformed --iterations-list is refused and nothing is written.
"""

import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..")


def test_rigid_motion_to_the_inertial_target_leaves_no_residual(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    import clothsim as cs
    from step_residual import step_residual

    cloth = cs.Cloth.grid(size=(0.3, 0.3), resolution=(8, 8), fabric="cotton", center=(0.0, 0.0, 0.0), plane="xz")
    sim = cs.Simulator(cloth, device="cpu", substeps=10, iterations=4)
    try:
        h = sim.dt / sim.substeps
        x_t = sim.positions().astype(np.float64)
        v_t = np.tile([0.3, -0.5, 0.2], (len(x_t), 1))
        y = x_t + h * v_t + h * h * np.asarray(sim.gravity)
        exact = step_residual(sim, x_t, v_t, y)
        # what is left is rounding: float32 strains of a sheet at rest are 0 to ~1e-7 (|F|² = 1 rounded), times
        # cotton's stiffness; on this CPU 2.5e-3 of the weight, at the origin as at 1 m (so not the positions')
        assert exact["force_rel"] < 1e-2, exact
        off = step_residual(sim, x_t, v_t, y + [0.0, 0.0, 1e-3])
        want = 1e-3 / (h * h * float(np.linalg.norm(sim.gravity)))  # 0.367
        assert abs(off["force_rel"] - want) < 0.02 * want, (off, want)
        # a uniform miss: f_i = m_i·d/h², the same 0.367 of its own weight on the rim as inside, and the rim's share
        # of Σ|f_i|² is its share of Σm_i² (rim vertices of the 8 x 8 grid carry a half or a quarter of the mass)
        assert abs(off["boundary_rel"] - want) < 0.02 * want and abs(off["interior_rel"] - want) < 0.02 * want, off
        rim = np.zeros((8, 8), dtype=bool)
        rim[0, :] = rim[-1, :] = rim[:, 0] = rim[:, -1] = True
        mass = sim.solver.model.mass.numpy().astype(np.float64)
        share = np.sum(mass[rim.ravel()] ** 2) / np.sum(mass ** 2)
        assert abs(off["boundary_share"] - share) < 1e-3, (off, share)
    finally:
        sim.release()


def _run(tmp_path, *args):
    out = tmp_path / "residual.json"
    cmd = [sys.executable, os.path.join(ROOT, "benchmarks", "step_residual.py"), "--json", str(out), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600), out


def test_residual_falls_with_iterations(tmp_path):
    r, out = _run(tmp_path, "--iterations-list", "1,4,64", "--sizes", "12", "--size", "0.3", "--compare-frames", "3")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = {row["iterations"]: row for row in json.loads(out.read_text())["rows"]}
    assert rows[1]["force_rel"] > 0.5, rows  # one sweep leaves a force of the order of the weight ...
    assert rows[4]["force_rel"] < 0.6 * rows[1]["force_rel"], rows
    assert rows[64]["force_rel"] < 0.02, rows  # ... 64 leave rounding
    assert rows[64]["rms_to_clothsim_best_m"] == 0.0 and rows[1]["rms_to_clothsim_best_m"] > 1e-6
    assert abs(rows[1]["projected_m"] - rows[1]["step_m"]) < 0.01 * rows[1]["step_m"], rows[1]


def test_projected_step_on_the_fold(tmp_path):
    # 16 x 16 fold (1 m, 6 frames, bound 0.425): on this CPU 1.15e-6 m after 4 iterations, 2.5e-9 m after 32
    r, out = _run(tmp_path, "--case", "fold", "--trajectory", "--iterations-list", "4,32", "--sizes", "16",
                  "--compare-frames", "6", "--self-contact-bound", "0.425")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = {row["iterations"]: row for row in json.loads(out.read_text())["rows"]}
    assert rows[32]["projected_m"] < 0.05 * rows[4]["projected_m"], rows


def test_malformed_iteration_list_is_refused(tmp_path):
    r, out = _run(tmp_path, "--iterations-list", "4,x", "--sizes", "12")
    assert r.returncode != 0 and "--iterations-list" in r.stderr
    assert not out.exists()

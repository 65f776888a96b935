"""What a drape measures, against references: the residual and kinetic energy of a free fall, the
penetration depth of points inside a sphere, intersections, seam welding, and the files
`clothsim simulate SCENE.toml` writes (checked against each other).

Small meshes only (a 64-vertex tube and an icosphere body): these check the measuring and the
plumbing, not the physics of garments (tests/test_scenes.py drapes the shipped scenes).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import trimesh
from click.testing import CliRunner

import clothsim as cs
from clothsim.collision import count_self_intersections
from clothsim.scene import Drape, load_scene
from clothsim.scene.drape import G
from clothsim.scene.seams import weld_seams
from clothsim.scene.run import with_overrides

from test_scenes_validation import tube, write_obj

R_BODY = 0.2
BODY_C = (0.0, 0.9, 0.0)


def make_scene(tmp_path, *, tube_radius: float, y0: float = 0.8, frames: int = 5, extra: str = "") -> "cs.scene.Scene":
    body = trimesh.creation.icosphere(subdivisions=3, radius=R_BODY)
    body.apply_translation(BODY_C)
    write_obj(tmp_path / "body.obj", body.vertices, body.faces)
    v, f = tube(radius=tube_radius, height=0.3)
    v[:, 1] += y0 - 0.8
    write_obj(tmp_path / "tube.obj", v, f)
    (tmp_path / "s.toml").write_text(f"""
[avatar]
file = "body.obj"
[[garments]]
name = "tube"
mesh = "tube.obj"
[simulation]
device = "cpu"
substeps = 4
iterations = 4
frame_cap = {frames}
min_frames = 1
skin_thickness = 0.0
{extra}
""")
    return load_scene(tmp_path / "s.toml")


def test_free_fall_residual_and_energy(tmp_path, device):
    """A tube far above the body falls freely.

    Definitions, recomputed here from the simulator's own state: kinetic energy per kg
    ``Σ½m|v|²/Σm`` and residual ``RMS(|Δv|/(gΔt))`` over a frame (float64 sums of float32 state: rel 1e-6).
    Physics anchor: in free fall the implicit step adds g·Δt to every velocity per frame, so the
    residual is 1 (a vertex in free fall reads 1, a vertex at rest 0). VBD reaches that only as its
    iterations converge: the first frame starts from rest and lags (0.95 at 10 iterations, measured);
    from the second frame the adaptive initial guess carries the previous frame's motion and the
    residual is within 2e-3 of 1 (measured 0.9986..0.9995 at 10 iterations; 2e-3 leaves room for the
    colouring order on other devices)."""
    scene = with_overrides(make_scene(tmp_path, tube_radius=0.25, y0=3.0, frames=6), device=device, iterations=10)
    with Drape(scene) as d:
        m = d.sim.model.host_mass
        dt = scene.simulation.dt
        v_prev = d.sim.velocities().astype(np.float64)
        for k in range(1, 7):
            st = d.step()
            v = d.sim.velocities().astype(np.float64)
            ke = 0.5 * np.sum(m * np.sum(v * v, axis=1)) / m.sum()
            res = np.sqrt(np.mean((np.linalg.norm(v - v_prev, axis=1) / (G * dt)) ** 2))
            assert st.kinetic_energy == pytest.approx(ke, rel=1e-6)
            assert st.residual == pytest.approx(res, rel=1e-6)
            if k >= 2:
                assert st.residual == pytest.approx(1.0, abs=2e-3)
            assert st.seam_gap == 0.0  # a mesh without UVs has no seams
            v_prev = v
    # after 6 frames the speed is at most g·6Δt (free fall from rest; VBD lags, never leads, in this test)
    assert st.kinetic_energy <= 0.5 * (G * 6 * dt) ** 2 * (1 + 1e-4)
    assert st.kinetic_energy >= 0.5 * (G * 5.9 * dt) ** 2  # lagging by less than a tenth of a frame


def test_penetration_depth_inside_a_sphere(tmp_path):
    """A tube of radius 0.1 m inside the body sphere (r = 0.2 m), 0.75..1.05 m high around its centre
    (y = 0.9 m; the rims are 0.18 m from the centre, inside): a vertex at height y is inside by R − √(0.1² + (y − 0.9)²) for the exact sphere. The
    icosphere's flat facets lie inside the sphere, by at most the sagitta R(1 − cos φ) at a facet's
    centre, φ = its circumradius angle ≈ a/√3 with the edge angle a = 1.107 rad / 2³ (icosahedron
    subdivided 3 times): 0.2·(1 − cos 0.080) = 6.4e-4 m. So the measured depth lies in
    [exact − 6.5e-4, exact + 1e-6] (1e-6: float32 of coordinates ~1 m)."""
    scene = make_scene(tmp_path, tube_radius=0.1, y0=0.75)
    with Drape(scene) as d:
        r = d.measure()
        x = d.positions()
    expected = (R_BODY - np.sqrt(0.1 ** 2 + (x[:, 1] - BODY_C[1]) ** 2)).max()
    g = r.garments[0]
    assert expected - 6.5e-4 <= g.worst_penetration_m <= expected + 1e-6
    assert r.failures and any("inside the body" in f for f in r.failures)
    assert g.body_intersections == 0  # entirely inside: no triangle crosses the surface


def test_cloth_crossing_the_body_counts_intersections(tmp_path):
    """A tube of radius 0.19 m, 0.8..1.1 m high, crosses the sphere (r = 0.2 m around y = 0.9 m) where
    √(0.19² + (y−0.9)²) = 0.2, i.e. at y ≈ 0.962: a ring of tube triangles must intersect the body."""
    scene = make_scene(tmp_path, tube_radius=0.19, y0=0.8)
    with Drape(scene) as d:
        r = d.measure()
    assert r.garments[0].body_intersections > 0
    assert any("cloth-body triangle intersections" in f for f in r.failures)


def test_weld_seams_removes_touching_panels():
    """Two flat panels sharing a border line (vertices duplicated, sewn) touch along it: the raw mesh
    counts touching triangle pairs as intersections; welded through the seam pairs it counts none."""
    left = cs.Cloth.grid(size=(0.2, 0.2), resolution=(5, 5), center=(-0.1, 1.0, 0.0))
    right = cs.Cloth.grid(size=(0.2, 0.2), resolution=(5, 5), center=(0.1, 1.0, 0.0))
    x = np.vstack([left.vertices, right.vertices])
    t = np.vstack([left.triangles, right.triangles + 25])
    a, b = left.boundary("right"), right.boundary("left") + 25
    np.testing.assert_allclose(x[a], x[b], atol=1e-12)
    assert count_self_intersections(x, t, device="cpu") > 0
    xw, tw = weld_seams(x, t, np.stack([a, b], axis=1))
    assert len(xw) == 50 - 5 and len(tw) == len(t)
    assert count_self_intersections(xw, tw, device="cpu") == 0


def test_cli_scene_writes_consistent_files(tmp_path, device):
    """`clothsim simulate SCENE -o DIR`: meshes, cache, frames.npz and report agree with each other."""
    from clothsim.cli import main
    from clothsim.exchange import FrameCache, import_mesh

    make_scene(tmp_path, tube_radius=0.3, frames=4)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["simulate", str(tmp_path / "s.toml"), "-o", str(out), "--device", device,
                                    "--frames", "3", "--no-progress"])
    assert res.exit_code == 1, res.output  # 3 frames of free fall: ran, but did not settle
    assert "did not settle" in res.output
    assert set(os.listdir(out)) == {"tube.obj", "tube.glb", "tube.usda", "cache", "frames.npz", "report.json"}
    with np.load(out / "frames.npz") as z:
        pos, frame = z["positions"], z["frame"]
        assert "[[garments]]" in str(z["scene_toml"])
    assert pos.shape == (4, 64, 3) and frame.tolist() == [0, 1, 2, 3]
    obj = import_mesh(out / "tube.obj")
    np.testing.assert_allclose(np.sort(obj.vertices, axis=0), np.sort(pos[-1], axis=0), atol=1e-6)
    with FrameCache(out / "cache", "r") as cache:
        assert len(cache) == 4
        np.testing.assert_allclose(cache.read_all(), pos, atol=cache.error_bound)
    rep = json.loads((out / "report.json").read_text())
    assert rep["frames"] == 3 and rep["settled"] is False and rep["passed"] is False
    assert rep["history"]["residual"][1:] == pytest.approx([1.0] * 2, abs=0.02)  # free fall (4 iterations), see above
    assert rep["settings"]["device"] == device
    for key in ("worst_penetration_m", "largest_seam_gap_m", "kinetic_energy", "residual", "cloth_intersections"):
        assert key in rep
    assert rep["timings_s"]["run"] > 0


def test_cli_rejects_grid_options_with_a_scene(tmp_path):
    from clothsim.cli import main

    make_scene(tmp_path, tube_radius=0.3)
    res = CliRunner().invoke(main, ["simulate", str(tmp_path / "s.toml"), "--resolution", "8"])
    assert res.exit_code == 2 and "--resolution" in res.output
    res = CliRunner().invoke(main, ["simulate", str(tmp_path / "s.toml"), "--level", "fine"])
    assert res.exit_code == 2 and "--level" in res.output


def test_pose_blends_the_mannequin_and_stops(tmp_path, device):
    """[pose]: the body turns from its rest pose into the scene's pose over blend_frames frames (each
    joint's rotation vector scaled by f / blend_frames), then stays: after blend_frames + 1 frames the
    collider holds the posed body offset by the skin thickness, and its vertex velocities are zero
    (a collider rests after each frame unless moved again, and the final pose is fed twice). Compared with Avatar.pose / offset_vertices directly (float32
    device copy of float64 host values: 1e-6 m at ~1 m coordinates)."""
    from clothsim.avatar import mannequin

    v, f = tube(radius=0.3, height=0.3)
    v[:, 1] += 2.5  # far above the head: the cloth plays no part
    write_obj(tmp_path / "tube.obj", v, f)
    (tmp_path / "p.toml").write_text("""
[avatar]
kind = "mannequin"
[[garments]]
mesh = "tube.obj"
[pose]
blend_frames = 3
[pose.joints]
shoulder_l = [0.0, 0.0, 30.0]
elbow_r = [0.0, 20.0, 0.0]
[simulation]
device = "cpu"
substeps = 2
iterations = 2
skin_thickness = 0.004
""")
    scene = with_overrides(load_scene(tmp_path / "p.toml"), device=device)
    av = mannequin()
    rot = {"shoulder_l": np.radians([0.0, 0.0, 30.0]), "elbow_r": np.radians([0.0, 20.0, 0.0])}
    with Drape(scene) as d:
        buf = d.sim.solver.collider(d.collider_handle)
        rest = buf.start.numpy().copy()
        d.step()
        third = {k: r / 3.0 for k, r in rot.items()}
        np.testing.assert_allclose(d.body.current_vertices, av.pose(third), atol=1e-9)
        moving = np.linalg.norm(buf.start.numpy() - rest, axis=1).max()  # the collider moved in frame 1
        for _ in range(3):
            d.step()
        posed = av.pose(rot)
        np.testing.assert_allclose(d.body.current_vertices, posed, atol=1e-9)
        np.testing.assert_allclose(buf.end.numpy(), av.offset_vertices(0.004, posed), atol=1e-6)
        assert np.abs(buf.velocities.numpy()).max() == 0.0
        assert moving > 0.0
        assert not d.settled()  # min_frames (30) not reached: settling is never judged mid-pose

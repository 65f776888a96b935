"""Scene validation: bad scene files fail on load with a message naming the file, the key and what was
expected; nothing is built or simulated. No Warp work happens here (load_scene is host-side only),
except the one CLI test, which checks that a bad scene exits 2 before any output is written.

Each case starts from a valid scene (a body mesh file and an open garment mesh, written to tmp_path)
and breaks one thing.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh
from click.testing import CliRunner

import clothsim as cs
from clothsim.scene import AvatarKind, View, load_scene, parse_scene
from clothsim.scene.meshcheck import check_mesh

BASE = """\
[scene]
name = "base"

[avatar]
file = "body.obj"

[[garments]]
name = "tube"
mesh = "tube.obj"
fabric = "cotton"

[simulation]
device = "cpu"
substeps = 4
iterations = 4
frame_cap = 20
skin_thickness = 0.003

[simulation.checks]
seam_gap = 0.004

[[cameras]]
name = "front"
view = "front"

[[lights]]
kind = "directional"
direction = [0.0, -1.0, -0.5]

[output]
folder = "out"
"""


def write_obj(path: Path, v, f) -> None:
    lines = [f"v {x:.9g} {y:.9g} {z:.9g}" for x, y, z in np.asarray(v, dtype=float)]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in np.asarray(f)]
    path.write_text("\n".join(lines) + "\n")


def tube(radius=0.25, height=0.3, n=16, rows=4):
    """An open cylinder (a skirt-like tube) around the y axis: a manifold mesh with two boundary loops."""
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ys = np.linspace(0.8, 0.8 + height, rows)
    v = np.array([(radius * np.sin(t), y, radius * np.cos(t)) for y in ys for t in a])
    f = []
    for r in range(rows - 1):
        for k in range(n):
            i0, i1 = r * n + k, r * n + (k + 1) % n
            j0, j1 = i0 + n, i1 + n
            f += [(i0, i1, j1), (i0, j1, j0)]
    return v, np.array(f)


@pytest.fixture
def scene_dir(tmp_path):
    body = trimesh.creation.icosphere(subdivisions=2, radius=0.2)
    body.apply_translation([0, 0.9, 0])
    write_obj(tmp_path / "body.obj", body.vertices, body.faces)
    write_obj(tmp_path / "tube.obj", *tube())
    (tmp_path / "scene.toml").write_text(BASE)
    return tmp_path


def edit(scene_dir: Path, old: str, new: str) -> Path:
    p = scene_dir / "scene.toml"
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new, 1))
    return p


def expect_error(path: Path, *fragments: str) -> str:
    with pytest.raises(cs.InputError) as e:
        load_scene(path)
    msg = str(e.value)
    assert str(path.name) in msg or str(path) in msg, msg  # names the file
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in: {msg}"
    return msg


# ------------------------------------------------------------------------------------------------ valid scene
def test_valid_scene_loads_with_resolved_paths_and_types(scene_dir):
    s = load_scene(scene_dir / "scene.toml")
    assert s.name == "base"
    assert s.avatar.kind is AvatarKind.FILE and s.avatar.file == (scene_dir / "body.obj").resolve()
    g = s.garments[0]
    assert g.mesh == (scene_dir / "tube.obj").resolve() and g.pattern is None
    assert g.fabric == cs.Fabric.preset("cotton")  # given in the file; None when left out (the pattern's)
    assert s.simulation.substeps == 4 and s.simulation.frame_cap == 20
    assert s.simulation.checks.seam_gap == 0.004
    assert s.cameras[0].view is View.FRONT
    assert s.output.folder == (scene_dir / "out").resolve()
    with pytest.raises(Exception):  # frozen
        s.name = "other"  # type: ignore[misc]


def test_inline_fabric_uses_lab_units(scene_dir):
    p = edit(scene_dir, 'fabric = "cotton"', 'fabric = { preset = "denim", density = 300.0, bend_warp = 20.0, thickness = 0.5 }')
    f = load_scene(p).garments[0].fabric
    denim = cs.Fabric.preset("denim")
    # g/m² -> kg/m², µN·m -> N·m, mm -> m (the units of clothsim/data/fabrics.toml)
    assert f.density == pytest.approx(0.300, rel=1e-12)
    assert f.bend_warp == pytest.approx(20e-6, rel=1e-12)
    assert f.thickness == pytest.approx(0.5e-3, rel=1e-12)
    assert f.stretch_warp == denim.stretch_warp  # not given: the preset's


# ------------------------------------------------------------------------------------------------ ten+ kinds of bad input
def test_missing_scene_file(tmp_path):
    with pytest.raises(cs.InputError, match="scene file not found"):
        load_scene(tmp_path / "nope.toml")


def test_missing_referenced_file(scene_dir):
    p = edit(scene_dir, 'mesh = "tube.obj"', 'mesh = "shirt.obj"')
    expect_error(p, "garments[0].mesh", "file not found", "shirt.obj", "relative to the scene file")


def test_wrong_type(scene_dir):
    p = edit(scene_dir, "substeps = 4", 'substeps = "four"')
    expect_error(p, "simulation.substeps", "expected an integer", "a string")
    p = edit(scene_dir, 'substeps = "four"', "substeps = 4.5")
    expect_error(p, "simulation.substeps", "expected an integer")
    p = edit(scene_dir, 'direction = [0.0, -1.0, -0.5]', 'direction = [0.0, -1.0]')
    expect_error(p, "lights[0].direction", "3 numbers")


def test_unknown_key_is_an_error_with_a_suggestion(scene_dir):
    p = edit(scene_dir, "iterations = 4", "iteratons = 4")
    expect_error(p, "simulation.iteratons", "unknown key", "did you mean 'iterations'")


def test_unknown_top_level_section(scene_dir):
    p = scene_dir / "scene.toml"
    p.write_text(p.read_text() + "\n[render]\nsamples = 4\n")
    expect_error(p, "render", "unknown key")


def test_unknown_fabric(scene_dir):
    p = edit(scene_dir, 'fabric = "cotton"', 'fabric = "coton"')
    expect_error(p, "garments[0].fabric", "unknown fabric 'coton'", "did you mean 'cotton'", "denim")
    p = edit(scene_dir, 'fabric = "coton"', 'fabric = { preset = "cotton", stiffness = 3.0 }')
    expect_error(p, "garments[0].fabric.stiffness", "unknown key")


def test_negative_sizes(scene_dir):
    p = edit(scene_dir, "skin_thickness = 0.003", "skin_thickness = -0.001")
    expect_error(p, "simulation.skin_thickness", "[0, 0.05]", "-0.001")
    p = edit(scene_dir, "skin_thickness = -0.001", "skin_thickness = 0.003")
    p = edit(scene_dir, 'fabric = "cotton"', 'fabric = { preset = "cotton", density = -130.0 }')
    expect_error(p, "garments[0].fabric.density", "> 0", "g/m^2")
    p = edit(scene_dir, 'fabric = { preset = "cotton", density = -130.0 }', 'fabric = "cotton"\nedge_length = -0.02')
    expect_error(p, "garments[0].edge_length", "[m]")
    p = edit(scene_dir, "view = \"front\"", "view = \"front\"\nfocal_length_mm = 0")
    p = edit(scene_dir, "edge_length = -0.02", "edge_length = 0.02")
    expect_error(p, "cameras[0].focal_length_mm", "[mm]")


def test_negative_measurement_on_the_mannequin(scene_dir):
    p = edit(scene_dir, 'file = "body.obj"', 'kind = "mannequin"\nmeasurements = { height = -1.7 }')
    expect_error(p, "avatar.measurements.height", "[0.1, 3]")
    p = edit(scene_dir, "height = -1.7", "height = 170")  # centimetres
    expect_error(p, "avatar.measurements.height", "[0.1, 3]", "170")


def test_non_manifold_mesh(scene_dir):
    v, f = tube()
    v = np.vstack([v, [[0.0, 2.0, 0.0]]])
    f = np.vstack([f, [[f[0][0], f[0][2], len(v) - 1]]])  # a third triangle on the inner edge f[0][0]-f[0][2]
    write_obj(scene_dir / "tube.obj", v, f)
    expect_error(scene_dir / "scene.toml", "garments[0].mesh", "tube.obj", "non-manifold")


def test_body_must_be_closed(scene_dir):
    body = trimesh.creation.icosphere(subdivisions=2, radius=0.2)
    write_obj(scene_dir / "body.obj", body.vertices, body.faces[1:])  # one triangle missing: a hole
    expect_error(scene_dir / "scene.toml", "avatar.file", "not closed", "watertight")


def test_empty_mesh(scene_dir):
    (scene_dir / "tube.obj").write_text("# nothing here\nv 0 0 0\n")
    expect_error(scene_dir / "scene.toml", "garments[0].mesh", "empty")


def test_huge_counts(scene_dir):
    p = edit(scene_dir, "frame_cap = 20", "frame_cap = 1000000000")
    expect_error(p, "simulation.frame_cap", "[1, 100000]")
    p = edit(scene_dir, "frame_cap = 1000000000", "frame_cap = 20")
    p = edit(scene_dir, "iterations = 4", "iterations = 50000")
    expect_error(p, "simulation.iterations", "[1, 1000]")
    p = edit(scene_dir, "iterations = 50000", "iterations = 4")
    text = p.read_text()
    many = "".join(f'\n[[garments]]\nname = "g{i}"\nmesh = "tube.obj"\n' for i in range(40))
    p.write_text(text.replace("[simulation]", many + "\n[simulation]"))
    expect_error(p, "garments", "at most 32 entries, got 41")


def test_huge_mesh(scene_dir):
    v, f = tube()
    with pytest.raises(cs.InputError, match="more than the limit"):
        check_mesh(v, f, where="x.obj", closed=False, max_vertices=10)


def test_nan_in_the_scene_file(scene_dir):
    p = edit(scene_dir, "skin_thickness = 0.003", "skin_thickness = nan")  # TOML allows nan and inf
    expect_error(p, "simulation.skin_thickness", "finite", "nan")
    p = edit(scene_dir, "skin_thickness = nan", "skin_thickness = 0.003\ndt = inf")
    expect_error(p, "simulation.dt", "finite", "inf")


def test_nan_in_a_mesh_file(scene_dir):
    text = (scene_dir / "tube.obj").read_text().splitlines()
    text[3] = "v nan 0.8 0.25"
    (scene_dir / "tube.obj").write_text("\n".join(text) + "\n")
    expect_error(scene_dir / "scene.toml", "garments[0].mesh", "non-finite")


def test_invalid_toml(scene_dir):
    p = edit(scene_dir, "substeps = 4", "substeps = = 4")
    expect_error(p, "not valid TOML", "line")


def test_pattern_and_mesh_together(scene_dir):
    (scene_dir / "p.json").write_text("{}")
    p = edit(scene_dir, 'mesh = "tube.obj"', 'mesh = "tube.obj"\npattern = "p.json"')
    expect_error(p, "garments[0]", "exactly one of 'pattern'", "got both")


def test_camera_view_or_position(scene_dir):
    p = edit(scene_dir, 'view = "front"', 'view = "top"')
    expect_error(p, "cameras[0].view", "front, back, left, right, three_quarter")
    p = edit(scene_dir, 'view = "top"', "position = [0.0, 1.5, 3.0]\ntarget = [0.0, 1.5, 3.0]")
    expect_error(p, "cameras[0].target", "away from position")


def test_unknown_output_format(scene_dir):
    p = edit(scene_dir, 'folder = "out"', 'folder = "out"\nformats = ["obj", "fbx"]')
    expect_error(p, "output.formats", "'fbx'", "obj, glb, usd")


def test_min_frames_above_cap(scene_dir):
    p = edit(scene_dir, "frame_cap = 20", "frame_cap = 20\nmin_frames = 30")
    expect_error(p, "simulation.min_frames", "at most frame_cap = 20")


def test_pose_on_a_mesh_body(scene_dir):
    p = scene_dir / "scene.toml"
    p.write_text(p.read_text() + "\n[pose]\njoints = { left_shoulder = [0.0, 0.0, -30.0] }\n")
    expect_error(p, "pose.joints", "no skeleton")


def test_parse_is_pure_data(scene_dir):
    """parse_scene reads only the TOML (no mesh files): a missing mesh is caught by path checks, but the
    numbers come out as plain Python floats/ints/enums."""
    s = parse_scene(scene_dir / "scene.toml")
    assert isinstance(s.simulation.dt, float) and math.isclose(s.simulation.dt, 1 / 60)
    assert isinstance(s.simulation.substeps, int)


def test_cli_bad_scene_exits_2_and_writes_nothing(scene_dir):
    from clothsim.cli import main

    p = edit(scene_dir, "iterations = 4", "iteratons = 4")
    out = scene_dir / "cli_out"
    result = CliRunner().invoke(main, ["simulate", str(p), "-o", str(out), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "simulation.iteratons" in result.output and "Traceback" not in result.output
    assert not out.exists()


PATTERN = """\
name = "tube"
fabric = "cotton"

[[panels]]
name = "front"
placement = {{ translation = [0.0, 0.8, 0.25] }}
  [[panels.edges]]
  name = "hem"
  points = [[-0.2, 0.0], [0.2, 0.0]]
  [[panels.edges]]
  name = "left"
  points = [[0.2, 0.0], [0.2, {front_h}]]
  [[panels.edges]]
  name = "top"
  points = [[0.2, {front_h}], [-0.2, {front_h}]]
  [[panels.edges]]
  name = "right"
  points = [[-0.2, {front_h}], [-0.2, 0.0]]

[[panels]]
name = "back"
placement = {{ rotation = [0.0, 180.0, 0.0], translation = [0.0, 0.8, -0.25] }}
  [[panels.edges]]
  name = "hem"
  points = [[-0.2, 0.0], [0.2, 0.0]]
  [[panels.edges]]
  name = "right"
  points = [[0.2, 0.0], [0.2, 0.3]]
  [[panels.edges]]
  name = "top"
  points = [[0.2, 0.3], [-0.2, 0.3]]
  [[panels.edges]]
  name = "left"
  points = [[-0.2, 0.3], [-0.2, 0.0]]

[[seams]]
a = "front.left"
b = "back.left"
orientation = "reversed"

[[seams]]
a = "front.right"
b = "back.right"
orientation = "reversed"
"""


def test_pattern_garment_loads(scene_dir):
    (scene_dir / "tube.toml").write_text(PATTERN.format(front_h=0.3))
    p = edit(scene_dir, 'mesh = "tube.obj"', 'pattern = "tube.toml"')
    g = load_scene(p).garments[0]
    assert g.pattern == (scene_dir / "tube.toml").resolve() and g.mesh is None and g.fabric is not None


def test_seam_joining_edges_of_different_lengths(scene_dir):
    (scene_dir / "tube.toml").write_text(PATTERN.format(front_h=0.25))  # front sides 0.25 m, back sides 0.3 m
    p = edit(scene_dir, 'mesh = "tube.obj"', 'pattern = "tube.toml"')
    expect_error(p, "garments[0].pattern", "tube.toml", "different lengths")


def test_makehuman_without_its_cache_says_how_to_get_it(scene_dir, monkeypatch, tmp_path):
    """kind = "makehuman" needs the converted body in its cache; without it the error names the scene
    file and key and says how to fetch the body (the mannequin needs nothing)."""
    from clothsim.avatar import makehuman

    monkeypatch.setattr(makehuman, "cache_dir", lambda cache=None: tmp_path / "empty_cache")
    p = edit(scene_dir, 'file = "body.obj"', 'kind = "makehuman"')
    msg = expect_error(p, "avatar", "MakeHuman")
    assert "fetch" in msg.lower() or "pip" in msg.lower(), msg
    p = edit(scene_dir, 'kind = "makehuman"', 'kind = "makehuman"\nmeasurements = { height = 1.8 }')
    expect_error(p, "avatar.measurements", "kind = 'mannequin'")

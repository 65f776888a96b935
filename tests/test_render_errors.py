"""Bad input to the renderer and `clothsim render` gets clear errors; a scene without cameras gets
the default views; a missing GL driver names the Debian packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import clothsim as cs
from render import Material, MeshItem, RenderSettings, Renderer, standard_view
from render.catalog import parse_colourway, parse_size, render_catalog
from render.reference_images import DATA, cloth_mesh

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cloth():
    v, t, uv = cloth_mesh()
    return MeshItem(v, t, Material.fabric("navy"), uvs=uv, name="cloth")


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


@pytest.fixture(scope="module")
def drape_npz(tmp_path_factory, cloth):
    path = tmp_path_factory.mktemp("drape") / "drape.npz"
    np.savez(path, positions=cloth.vertices[None], triangles=cloth.triangles)
    return path


def _cli(*args):
    from clothsim.cli import main

    return CliRunner().invoke(main, ["render", *map(str, args)])


def test_no_cameras_gets_the_five_standard_views(tmp_path, cloth, renderer):
    summary = render_catalog([cloth], tmp_path, size=(48, 32), renderer=renderer)
    names = sorted(p.stem for p in tmp_path.glob("*.png") if p.stem != "contact_sheet")
    assert names == sorted(["front", "three_quarter", "left", "back", "right"])
    assert [c["name"] for c in summary["cameras"]] == ["front", "three_quarter", "left", "back", "right"]
    assert json.loads((tmp_path / "catalog.json").read_text())["image"]["width"] == 48


@pytest.mark.parametrize("view", ["side", "Front", ""])
def test_unknown_view_name(tmp_path, cloth, view):
    with pytest.raises(cs.InputError, match=r"unknown view .*expected one of front, three_quarter, left, back, right"):
        render_catalog([cloth], tmp_path, views=[view], size=(32, 32))
    with pytest.raises(cs.InputError, match="unknown view"):
        standard_view(view, np.zeros(3), np.ones(3), aspect=1.0)


def test_unknown_view_from_the_cli_before_any_work(drape_npz, tmp_path):
    res = _cli(drape_npz, "-o", tmp_path / "o", "--views", "front,sideways")
    assert res.exit_code == 2, res.output
    assert "unknown view 'sideways'" in res.output
    assert not (tmp_path / "o" / "front.png").exists()


@pytest.mark.parametrize("size, what", [("0x100", "width"), ("100x0", "height"), ("9000x100", "width"),
                                        ("100x100000", "height"), ("100", "WIDTHxHEIGHT"), ("axb", "WIDTHxHEIGHT")])
def test_zero_or_huge_or_malformed_size(size, what):
    with pytest.raises(cs.InputError, match=what):
        parse_size(size)


@pytest.mark.parametrize("w, h", [(0, 10), (10, -1), (8193, 10)])
def test_render_settings_reject_bad_sizes(w, h):
    with pytest.raises(cs.InputError, match=r"must be an integer in \[1, 8192\] px"):
        RenderSettings(width=w, height=h)


def test_cli_size_error(drape_npz, tmp_path):
    res = _cli(drape_npz, "-o", tmp_path, "--size", "0x0")
    assert res.exit_code == 2 and "width must lie in [1, 8192] px, got 0" in res.output, res.output


@pytest.mark.parametrize("level, message", [("fine", "expected coarsest, finest or a level index, got 'fine'"),
                                            ("-1", "expected a level index >= 0, got -1")])
def test_cli_bad_level(tmp_path, level, message):
    scene = Path(__file__).resolve().parents[1] / "scenes" / "tshirt.toml"
    res = _cli(scene, "-o", tmp_path / "o", "--level", level)
    assert res.exit_code == 2 and message in res.output, res.output
    assert not (tmp_path / "o").exists()


def test_cli_level_needs_a_scene_file(drape_npz, tmp_path):
    res = _cli(drape_npz, "-o", tmp_path / "o", "--level", "1")
    assert res.exit_code == 2 and "applies to scene files (.toml) only" in res.output, res.output


def test_unwritable_output_folder(tmp_path, cloth, drape_npz):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(cs.InputError, match=f"cannot write to output folder '{blocker / 'out'}'"):
        render_catalog([cloth], blocker / "out", size=(32, 32))
    res = _cli(drape_npz, "-o", blocker / "out")
    assert res.exit_code == 2 and "cannot write to output folder" in res.output, res.output


def test_missing_texture_file(tmp_path, cloth, renderer):
    missing = tmp_path / "no_such_weave.png"
    m = cloth.with_material(Material.fabric("red").replace(base_texture=missing))
    cam = standard_view("front", cloth.vertices.min(0), cloth.vertices.max(0), aspect=1.0)
    with pytest.raises(cs.InputError, match=f"base_texture file not found: {missing}"):
        renderer.render([m], cam, width=32, height=32)
    with pytest.raises(cs.InputError, match="texture file not found"):
        parse_colourway(f"weave={missing}")


def test_missing_texture_from_the_cli(drape_npz, tmp_path):
    res = _cli(drape_npz, "-o", tmp_path, "--colourways", f"w={tmp_path / 'gone.png'}")
    assert res.exit_code == 2 and "texture file not found" in res.output, res.output


def test_textured_material_needs_uvs(cloth, renderer):
    m = MeshItem(cloth.vertices, cloth.triangles, Material.fabric().replace(base_texture=DATA / "twill_base.png"))
    cam = standard_view("front", cloth.vertices.min(0), cloth.vertices.max(0), aspect=1.0)
    with pytest.raises(cs.InputError, match="has textures but the mesh has no uvs"):
        renderer.render([m], cam, width=16, height=16)


def test_bad_colour_and_bad_mesh():
    with pytest.raises(cs.InputError, match="expected '#rrggbb' or one of"):
        parse_colourway("chartreuse-ish")
    with pytest.raises(cs.InputError, match=r"triangle indices must lie in \[0, 3\)"):
        MeshItem(np.zeros((3, 3)), [[0, 1, 3]])


def test_missing_scene_file(tmp_path):
    res = _cli(tmp_path / "nope.toml", "-o", tmp_path)
    assert res.exit_code == 2 and "nope.toml" in res.output, res.output


def _without_gl_driver(env_key: str, value: str) -> subprocess.CompletedProcess:
    code = "from render import Renderer\nRenderer()\n"
    env = {**os.environ, env_key: value}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=60)


@pytest.mark.parametrize("env_key, value", [
    ("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent/50_mesa.json"),   # libegl1 present, no EGL driver
    ("GLCONTEXT_LINUX_LIBEGL", "/nonexistent/libEGL.so.1"),             # no libEGL at all
])
def test_missing_gl_driver_names_the_debian_packages(env_key, value):
    res = _without_gl_driver(env_key, value)
    assert res.returncode != 0
    assert "GLUnavailableError" in res.stderr and "apt-get install libegl1 libgl1" in res.stderr, res.stderr
